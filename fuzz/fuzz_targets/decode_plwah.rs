//! Fuzzes the PLWAH reference decoder on hostile payloads (`docs/format/plwah.md`): decoding any
//! bytes fails with an error or yields a valid bitmap whose re-encoding, conversion, NOT and
//! cardinality agree with its plain bits; nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::bitmap::Flavor;

fuzz_target!(|data: &[u8]| tessera_fuzz::decode_bitmap(Flavor::Plwah, data));
