//! Fuzzes the LLL decoders (reference and fast) on hostile payloads, through
//! `tessera_fuzz::decode_bytes_both`; the reference's side also runs the word-at-a-time oracle
//! (`lll::decode_simple`) and requires the same bytes or the same error, every field.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::lll;
use tessera_fuzz::ByteCodec;

const CODEC: ByteCodec = ByteCodec {
    decode: lll::decode,
    decode_reference: |payload, out| {
        let mut oracle = vec![0u8; out.len()];
        let want = lll::decode_simple(payload, &mut oracle);
        let got = lll::decode_reference(payload, out);
        match (&got, &want) {
            (Ok(()), Ok(())) => assert!(*out == oracle[..], "reference and oracle bytes differ"),
            _ => assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "reference vs oracle"
            ),
        }
        got
    },
    encode: |data, out| lll::encode(data, out).map(|_| ()),
};

fuzz_target!(|data: &[u8]| tessera_fuzz::decode_bytes_both(&CODEC, data));
