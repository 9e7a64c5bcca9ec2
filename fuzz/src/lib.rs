//! Shared driver for the decoder fuzz targets: the first bytes of the input choose the logical
//! type and the value count, the rest is the payload. Both decoders (reference and fast) must
//! either fail or agree exactly; neither may panic.

use tessera_codecs::column::{decode_chunk, decode_chunk_reference};
use tessera_format::{CodecId, LogicalType};

/// Decodes `data` as a chunk of `codec` with both decoders and checks they agree.
pub fn decode_both(codec: CodecId, data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let ty = LogicalType::INTEGERS[data[0] as usize % LogicalType::INTEGERS.len()];
    // Value counts up to 2^16 keep each run fast; the decoders check the count against the
    // payload's own header, so larger claims are exercised through the header instead.
    let count = u16::from_le_bytes([data[1], data[2]]) as usize;
    let payload = &data[3..];
    let mut fast = vec![0xA5u8; count * ty.width()];
    let mut reference = vec![0x5Au8; count * ty.width()];
    let a = decode_chunk(ty, codec, payload, &mut fast);
    let b = decode_chunk_reference(ty, codec, payload, &mut reference);
    match (a, b) {
        (Ok(()), Ok(())) => assert_eq!(fast, reference, "fast and reference decoders disagree"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("decoders disagree on validity: fast {a:?}, reference {b:?}"),
    }
}

/// Bitmaps longer than this are checked through their runs only (count, NOT, conversion), not
/// expanded, so a single input stays fast; the decoders bound them by `MAX_BITS` themselves.
pub const EXPAND_MAX_BITS: u64 = 1 << 22;

/// Decodes `data` as a WAH or PLWAH payload (`docs/format/wah.md`). It must fail or decode; a
/// payload that decodes must re-encode canonically to the same bitmap, and the run-based
/// cardinality, NOT and conversions must agree with the plain bits.
pub fn decode_bitmap(flavor: tessera_codecs::bitmap::Flavor, data: &[u8]) {
    use tessera_codecs::bitmap::{self, plwah, Bitmap, Flavor};
    let Ok(bm) = Bitmap::from_payload(flavor, data) else {
        return;
    };
    let bit_len = bm.bit_len();
    assert_eq!(
        bitmap::payload_bit_len(flavor, data).expect("header of a valid payload"),
        bit_len
    );
    let canonical = plwah::convert(&bm, flavor);
    let other = plwah::convert(
        &bm,
        match flavor {
            Flavor::Wah => Flavor::Plwah,
            Flavor::Plwah => Flavor::Wah,
        },
    );
    assert_eq!(
        plwah::convert(&other, flavor),
        canonical,
        "conversion round trip"
    );
    let ones = bm.count_ones();
    assert_eq!(canonical.count_ones(), ones);
    assert_eq!(
        bm.not().count_ones(),
        bit_len - ones,
        "NOT complements within bit_len"
    );
    if bit_len > EXPAND_MAX_BITS {
        return;
    }
    let plain = bm.decompress_to_vec();
    let again = Bitmap::compress(flavor, &plain, bit_len).expect("compress decoded bits");
    assert_eq!(
        again, canonical,
        "compress(decompress(x)) is the canonical form of x"
    );
    let positions: Vec<u64> = bm.ones().collect();
    assert_eq!(positions.len() as u64, ones);
    for &p in &positions {
        assert!(p < bit_len && plain[(p / 8) as usize] >> (p % 8) & 1 == 1);
    }
}

/// Builds two bitmaps of the same length from `data` (byte 0: flavor and the fill split, bytes
/// 1-2: `bit_len`, then the bits of `a` and of `b`), possibly non-canonical, and checks every
/// compressed operation against the plain one.
pub fn ops_match_plain(data: &[u8]) {
    use tessera_codecs::bitmap::{ops::Op, Bitmap, Flavor};
    if data.len() < 3 {
        return;
    }
    let flavor = if data[0] & 1 == 0 {
        Flavor::Wah
    } else {
        Flavor::Plwah
    };
    let max_counter = match data[0] >> 1 & 3 {
        0 => flavor.max_counter(),
        k => u64::from(k),
    };
    let bit_len = u64::from(u16::from_le_bytes([data[1], data[2]]));
    let bytes = bit_len.div_ceil(8) as usize;
    let rest = &data[3..];
    let take = |from: usize| -> Vec<u8> {
        let mut v: Vec<u8> = rest.iter().skip(from).take(bytes).copied().collect();
        v.resize(bytes, 0);
        if bit_len % 8 != 0 {
            if let Some(last) = v.last_mut() {
                *last &= (1u8 << (bit_len % 8)) - 1;
            }
        }
        v
    };
    let (pa, pb) = (take(0), take(bytes));
    let make = |p: &[u8]| {
        Bitmap::compress_with_max_counter(flavor, p, bit_len, max_counter).expect("compress")
    };
    let (a, b) = (make(&pa), make(&pb));
    for op in [Op::And, Op::Or, Op::Xor, Op::AndNot] {
        let plain: Vec<u8> = pa
            .iter()
            .zip(&pb)
            .map(|(&x, &y)| match op {
                Op::And => x & y,
                Op::Or => x | y,
                Op::Xor => x ^ y,
                Op::AndNot => x & !y,
            })
            .collect();
        let want = Bitmap::compress(flavor, &plain, bit_len).expect("compress");
        assert_eq!(a.op(op, &b).expect("same length"), want, "{op:?}");
    }
    let mut not: Vec<u8> = pa.iter().map(|x| !x).collect();
    if bit_len % 8 != 0 {
        if let Some(last) = not.last_mut() {
            *last &= (1u8 << (bit_len % 8)) - 1;
        }
    }
    assert_eq!(
        a.not(),
        Bitmap::compress(flavor, &not, bit_len).expect("compress"),
        "not"
    );
}

/// The byte codecs' entry points (`huffman`, `lll`): fast decoder, reference decoder, encoder.
pub struct ByteCodec {
    pub decode: fn(&[u8], &mut [u8]) -> tessera_format::Result<()>,
    pub decode_reference: fn(&[u8], &mut [u8]) -> tessera_format::Result<()>,
    pub encode: fn(&[u8], &mut Vec<u8>) -> tessera_format::Result<()>,
}

/// Decodes hostile bytes with both decoders of a byte codec: the first two bytes give the
/// expected byte count, the rest is the payload. Both must agree exactly, or both fail with the
/// same error variant; neither may panic. A valid payload's bytes must survive a re-encode.
pub fn decode_bytes_both(codec: &ByteCodec, data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let count = u16::from_le_bytes([data[0], data[1]]) as usize;
    let payload = &data[2..];
    let mut fast = vec![0xA5u8; count];
    let mut reference = vec![0x5Au8; count];
    let a = (codec.decode)(payload, &mut fast);
    let b = (codec.decode_reference)(payload, &mut reference);
    match (a, b) {
        (Ok(()), Ok(())) => assert_eq!(fast, reference, "fast and reference decoders disagree"),
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(&a),
            std::mem::discriminant(&b),
            "fast {a:?} vs reference {b:?}"
        ),
        (a, b) => panic!("decoders disagree on validity: fast {a:?}, reference {b:?}"),
    }
    if (codec.decode)(payload, &mut fast).is_ok() {
        let mut again = Vec::new();
        (codec.encode)(&fast, &mut again).expect("encode");
        let mut back = vec![0u8; count];
        (codec.decode)(&again, &mut back).expect("decode of a fresh encoding");
        assert_eq!(back, fast);
    }
}
