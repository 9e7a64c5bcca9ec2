//! Fuzzes the GPU-RFOR decoders (reference and fast) on hostile payloads.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_format::CodecId;

fuzz_target!(|data: &[u8]| tessera_fuzz::decode_both(CodecId::Rfor, data));
