//! Round trip: any values, any codec, any logical type: encode then decode (both decoders) must
//! give back the input bytes exactly.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::column::{decode_chunk, decode_chunk_reference, encode_chunk};
use tessera_format::{CodecId, LogicalType};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let ty = LogicalType::INTEGERS[data[0] as usize % LogicalType::INTEGERS.len()];
    let requested = match data[1] % 5 {
        4 => None,
        i => Some(CodecId::INTEGERS[i as usize]),
    };
    let raw = &data[2..data.len() - (data.len() - 2) % ty.width()];
    let mut payload = Vec::new();
    let codec = encode_chunk(ty, requested, raw, &mut payload).expect("encoding valid values");
    let mut out = vec![0u8; raw.len()];
    decode_chunk(ty, codec, &payload, &mut out).expect("decoding our own output");
    assert_eq!(out, raw);
    decode_chunk_reference(ty, codec, &payload, &mut out)
        .expect("reference decoding our own output");
    assert_eq!(out, raw);
});
