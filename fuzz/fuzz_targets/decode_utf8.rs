//! Fuzzes utf8 chunk decoding (`docs/format/utf8.md`): any bytes as a payload, with the codec
//! and string count taken from the first bytes. The fast and reference decoders must agree (same
//! strings, or the same error variant), never panic, and whatever decodes must re-encode to a
//! payload that decodes to the same strings.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::text;
use tessera_format::CodecId;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let codec = [CodecId::Plain, CodecId::Huffman, CodecId::Lll][data[0] as usize % 3];
    let count = u16::from_le_bytes([data[1], data[2]]) as u32;
    let payload = &data[3..];
    let fast = text::decode_utf8_chunk(codec, payload, count);
    let reference = text::decode_utf8_chunk_reference(codec, payload, count);
    match (&fast, &reference) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "fast and reference decoders differ");
            if a.iter().all(|s| std::str::from_utf8(s).is_ok()) {
                let mut again = Vec::new();
                let used = text::encode_utf8_chunk(a, Some(codec), &mut again).expect("re-encode");
                let back = text::decode_utf8_chunk(used, &again, count).expect("decode re-encoded");
                assert_eq!(&back, a);
            }
        }
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(a),
            std::mem::discriminant(b),
            "decoders disagree: {a} / {b}"
        ),
        _ => panic!("one decoder failed: {fast:?} / {reference:?}"),
    }
});
