//! Fuzzes the LLL decoders (reference and fast) on hostile payloads: the first two bytes
//! give the expected byte count, the rest is the payload. Both decoders must agree exactly, or
//! both fail with the same error variant; neither may panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::lll;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let count = u16::from_le_bytes([data[0], data[1]]) as usize;
    let payload = &data[2..];
    let mut fast = vec![0xA5u8; count];
    let mut reference = vec![0x5Au8; count];
    let a = lll::decode(payload, &mut fast);
    let b = lll::decode_reference(payload, &mut reference);
    match (a, b) {
        (Ok(()), Ok(())) => assert_eq!(fast, reference, "fast and reference decoders disagree"),
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(&a),
            std::mem::discriminant(&b),
            "fast {a:?} vs reference {b:?}"
        ),
        (a, b) => panic!("decoders disagree on validity: fast {a:?}, reference {b:?}"),
    }
    // Valid payloads re-encode to something that decodes to the same bytes.
    if let Ok(()) = lll::decode(payload, &mut fast) {
        let mut again = Vec::new();
        lll::encode(&fast, &mut again).expect("encode");
        let mut back = vec![0u8; count];
        lll::decode(&again, &mut back).expect("decode of a fresh encoding");
        assert_eq!(back, fast);
    }
});
