//! Fuzzes the LLL decoders (reference and fast) on hostile payloads, through
//! `tessera_fuzz::decode_bytes_both`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::lll;
use tessera_fuzz::ByteCodec;

const CODEC: ByteCodec = ByteCodec {
    decode: lll::decode,
    decode_reference: lll::decode_reference,
    encode: |data, out| lll::encode(data, out).map(|_| ()),
};

fuzz_target!(|data: &[u8]| tessera_fuzz::decode_bytes_both(&CODEC, data));
