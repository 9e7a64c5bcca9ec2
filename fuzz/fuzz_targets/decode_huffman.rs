//! Fuzzes the Huffman decoders (reference and fast; raw, mode 1 and mode 2 payloads) on hostile
//! payloads, through `tessera_fuzz::decode_bytes_both`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::huffman;
use tessera_fuzz::ByteCodec;

const CODEC: ByteCodec = ByteCodec {
    decode: huffman::decode,
    decode_reference: huffman::decode_reference,
    encode: |data, out| huffman::encode(data, out).map(|_| ()),
};

fuzz_target!(|data: &[u8]| tessera_fuzz::decode_bytes_both(&CODEC, data));
