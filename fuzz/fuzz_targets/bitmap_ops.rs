//! Fuzzes the bitwise operations on compressed bitmaps (`docs/format/wah.md` §7, §8): AND, OR,
//! XOR, AND-NOT and NOT of two valid (possibly non-canonical) WAH or PLWAH bitmaps must equal the
//! canonical compression of the same operation on the plain bits; and the multi-core paths
//! (compression, decompression, the operations, with seams every few groups chosen by the input
//! and runs split at a small counter) must equal the one-core references word for word.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::bitmap::{ops, ops::Op, Bitmap, Flavor};

fn pieces_match_serial(data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let flavor = if data[0] & 1 == 0 {
        Flavor::Wah
    } else {
        Flavor::Plwah
    };
    let small = |k: u8| match k & 3 {
        0 => flavor.max_counter(),
        k => u64::from(k),
    };
    let (max_a, max_b, max_out) = (
        small(data[0] >> 1),
        small(data[0] >> 3),
        small(data[0] >> 5),
    );
    let piece = u64::from(data[1] % 48) + 1;
    let bit_len = u64::from(u16::from_le_bytes([data[2], data[3]]) % 8192);
    let bytes = bit_len.div_ceil(8) as usize;
    let rest = &data[4..];
    let take = |from: usize| -> Vec<u8> {
        // Short inputs repeat, which makes long fills and repeated literals.
        let mut v: Vec<u8> = if rest.is_empty() {
            vec![0; bytes]
        } else {
            rest.iter()
                .cycle()
                .skip(from)
                .take(bytes)
                .copied()
                .collect()
        };
        if bit_len % 8 != 0 {
            if let Some(last) = v.last_mut() {
                *last &= (1u8 << (bit_len % 8)) - 1;
            }
        }
        v
    };
    let (pa, pb) = (take(0), take(rest.len() / 2 + 1));
    let a = Bitmap::compress_with_max_counter(flavor, &pa, bit_len, max_a).expect("compress");
    let b = Bitmap::compress_with_max_counter(flavor, &pb, bit_len, max_b).expect("compress");
    assert_eq!(
        Bitmap::compress_pieces(flavor, &pa, bit_len, piece, max_a).expect("compress"),
        a,
        "compress pieces"
    );
    let mut serial = vec![0u8; bytes];
    a.decompress_serial(&mut serial).expect("decompress");
    assert_eq!(serial, pa);
    let mut par = vec![0xFFu8; bytes];
    a.decompress_pieces(&mut par, piece).expect("decompress");
    assert_eq!(par, serial, "decompress pieces");
    for op in [Op::And, Op::Or, Op::Xor, Op::AndNot] {
        assert_eq!(
            ops::binary_with(op, &a, &b, piece, max_out).expect("op"),
            ops::binary_with(op, &a, &b, 0, max_out).expect("op"),
            "{op:?} pieces"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    tessera_fuzz::ops_match_plain(data);
    pieces_match_serial(data);
});
