//! Opens arbitrary bytes as a `.tsr` container and, if the directory is accepted, decodes every
//! chunk of every column: nothing may panic, and each chunk either fails or decodes to exactly
//! its directory value count.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::column::decode_chunk;
use tessera_format::container::Container;

fuzz_target!(|data: &[u8]| {
    let Ok(container) = Container::from_bytes(data.to_vec()) else {
        return;
    };
    for (c, column) in container.columns().iter().enumerate() {
        for (k, chunk) in column.chunks.iter().enumerate() {
            let Ok(payload) = container.chunk_payload(c, k) else {
                continue;
            };
            let mut out = vec![0u8; chunk.value_count as usize * column.logical_type.width()];
            let _ = decode_chunk(column.logical_type, chunk.codec, payload, &mut out);
        }
    }
});
