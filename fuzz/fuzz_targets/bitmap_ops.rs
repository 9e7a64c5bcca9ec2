//! Fuzzes the bitwise operations on compressed bitmaps (`docs/format/wah.md` §7): AND, OR, XOR,
//! AND-NOT and NOT of two valid (possibly non-canonical) WAH or PLWAH bitmaps must equal the
//! canonical compression of the same operation on the plain bits.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tessera_fuzz::ops_match_plain(data));
