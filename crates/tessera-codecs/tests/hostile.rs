//! Must-fail tests: corrupted payloads return the specific `Error` variant the specs name, from
//! both the fast and the reference decoder, and random corruption never panics (both decoders
//! then agree: same values, or the same error variant).

mod common;

use common::{gen32, gen64, Shape, INT_CODECS};
use proptest::prelude::*;
use tessera_codecs::{column, int};
use tessera_format::{CodecId, Error, LogicalType};

fn enc32(codec: CodecId, v: &[u32]) -> Vec<u8> {
    let mut p = Vec::new();
    int::encode(codec, v, &mut p).expect("encode");
    p
}

fn enc64(codec: CodecId, v: &[u64]) -> Vec<u8> {
    let mut p = Vec::new();
    int::encode(codec, v, &mut p).expect("encode");
    p
}

fn word(p: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]])
}

fn set_word(p: &mut [u8], i: usize, w: u32) {
    p[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
}

/// Decodes `p` as `n` lane-32 values with both decoders; both must fail the same way.
fn fail32(codec: CodecId, p: &[u8], n: usize) -> Error {
    let mut out = vec![0u32; n];
    let fast = int::decode(codec, p, &mut out).expect_err("fast decoder accepted a bad payload");
    let reference = int::decode_reference(codec, p, &mut out)
        .expect_err("reference decoder accepted a bad payload");
    assert_eq!(
        std::mem::discriminant(&fast),
        std::mem::discriminant(&reference),
        "fast {fast:?} vs reference {reference:?}"
    );
    fast
}

fn fail64(codec: CodecId, p: &[u8], n: usize) -> Error {
    let mut out = vec![0u64; n];
    let fast = int::decode(codec, p, &mut out).expect_err("fast decoder accepted a bad payload");
    let reference = int::decode_reference(codec, p, &mut out)
        .expect_err("reference decoder accepted a bad payload");
    assert_eq!(
        std::mem::discriminant(&fast),
        std::mem::discriminant(&reference)
    );
    fast
}

const N: usize = 1000;

/// Word index of the data area: header 4 + block_starts (block_count + 1).
fn data_word(codec: CodecId, n: usize) -> usize {
    let bs = if codec == CodecId::Rfor { 512 } else { 128 };
    4 + n.div_ceil(bs) + 1
}

#[test]
fn truncated_payload() {
    for codec in INT_CODECS {
        let p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        // Cut inside the data area, inside block_starts, inside the header, and empty.
        for len in [p.len() - 4, 20, 12, 0] {
            let e = fail32(codec, &p[..len], N);
            assert!(
                matches!(e, Error::Truncated { .. }),
                "{codec:?} len {len}: {e:?}"
            );
        }
    }
}

#[test]
fn misaligned_length() {
    for codec in INT_CODECS {
        let mut p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        p.push(0);
        assert!(
            matches!(fail32(codec, &p, N), Error::Misaligned { len } if len as usize == p.len())
        );
        assert!(matches!(
            fail32(codec, &p[..3], N),
            Error::Misaligned { len: 3 }
        ));
    }
}

#[test]
fn bad_header_constants() {
    for codec in INT_CODECS {
        let p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        for (field_word, name) in [
            (0, "block_size"),
            (1, "miniblock_count"),
            (3, "tile_blocks"),
        ] {
            let mut q = p.clone();
            set_word(&mut q, field_word, word(&p, field_word) + 1);
            let e = fail32(codec, &q, N);
            assert!(
                matches!(e, Error::InvalidHeader { field, .. } if field == name),
                "{e:?}"
            );
        }
        // total_count above the per-chunk limit.
        let mut q = p.clone();
        set_word(&mut q, 2, (1 << 24) + 1);
        let e = fail32(codec, &q, N);
        assert!(
            matches!(
                e,
                Error::InvalidHeader {
                    field: "total_count",
                    ..
                }
            ),
            "{e:?}"
        );
    }
}

#[test]
fn total_count_mismatch() {
    for codec in INT_CODECS {
        let p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        for n in [N - 1, N + 1, 0] {
            let e = fail32(codec, &p, n);
            assert!(
                matches!(e, Error::CountMismatch { expected, found, .. } if expected == n as u64 && found == N as u64),
                "{e:?}"
            );
        }
    }
}

#[test]
fn trailing_bytes() {
    for codec in INT_CODECS {
        let mut p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        p.extend_from_slice(&[0; 8]);
        assert!(matches!(
            fail32(codec, &p, N),
            Error::TrailingBytes { count: 8, .. }
        ));
        let mut p = enc32(codec, &[]);
        p.extend_from_slice(&[0; 4]);
        assert!(matches!(
            fail32(codec, &p, 0),
            Error::TrailingBytes { count: 4, .. }
        ));
    }
}

#[test]
fn block_starts_past_the_end_or_decreasing() {
    for codec in INT_CODECS {
        let p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        let bc = (data_word(codec, N) - 5) as u32;
        let end = word(&p, 4 + bc as usize);
        // block_starts[1] past the end of the data area.
        let mut q = p.clone();
        set_word(&mut q, 5, end + 1);
        let e = fail32(codec, &q, N);
        assert!(
            matches!(e, Error::BlockStartOutOfRange { block: 1, .. }),
            "{codec:?} {e:?}"
        );
        // block_starts[1] below block_starts[0].
        let mut q = p.clone();
        set_word(&mut q, 4, word(&p, 5) + 1);
        let e = fail32(codec, &q, N);
        assert!(
            matches!(e, Error::BlockStartOutOfRange { block: 1, .. }),
            "{codec:?} {e:?}"
        );
    }
    // DFOR: block 0 must leave room for the first tile's first_value before it.
    let mut q = enc32(CodecId::Dfor, &gen32(Shape::Sorted, N, 4, 1));
    set_word(&mut q, 4, 0);
    let e = fail32(CodecId::Dfor, &q, N);
    assert!(
        matches!(
            e,
            Error::BlockStartOutOfRange {
                block: 0,
                min: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let mut q = enc64(CodecId::Dfor, &gen64(Shape::Sorted, N, 4, 1));
    set_word(&mut q, 4, 1);
    let e = fail64(CodecId::Dfor, &q, N);
    assert!(
        matches!(
            e,
            Error::BlockStartOutOfRange {
                block: 0,
                min: 2,
                ..
            }
        ),
        "{e:?}"
    );
}

/// A block whose bit widths announce more words than its `block_starts` range holds.
#[test]
fn block_metadata_reads_past_its_range() {
    for codec in [CodecId::For, CodecId::Dfor] {
        let p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        let d = data_word(codec, N);
        // Block 0's bit-width word: after the reference (and DFOR's first_value).
        let lead = usize::from(codec == CodecId::Dfor);
        let bw_at = d + lead + word(&p, 4) as usize - lead + 1;
        let mut q = p.clone();
        set_word(&mut q, bw_at, word(&p, bw_at) + 1);
        let e = fail32(codec, &q, N);
        assert!(matches!(e, Error::Truncated { .. }), "{codec:?} {e:?}");
        // A block range shorter than its reference and bit-width word: block 0 ends where it
        // starts (block 1 starts early), so block 0 is truncated.
        let mut q = p.clone();
        set_word(&mut q, 5, word(&p, 4));
        let e = fail32(codec, &q, N);
        assert!(matches!(e, Error::Truncated { .. }), "{codec:?} {e:?}");
    }
    // DFOR: the next tile's first_value is taken off block 3's range: a block_starts[4] that
    // leaves no room for it truncates block 3.
    let p = enc32(CodecId::Dfor, &gen32(Shape::Uniform, N, 12, 1));
    let mut q = p.clone();
    set_word(&mut q, 4 + 4, word(&p, 4 + 4) - 1);
    let e = fail32(CodecId::Dfor, &q, N);
    assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
    // RFOR: a value bit width one larger.
    let p = enc32(CodecId::Rfor, &gen32(Shape::Runs(4), N, 12, 1));
    let d = data_word(CodecId::Rfor, N);
    let mut q = p.clone();
    q[4 * (d + 2)] += 1;
    let e = fail32(CodecId::Rfor, &q, N);
    assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
}

#[test]
fn bit_width_over_the_lane() {
    for codec in [CodecId::For, CodecId::Dfor] {
        let lead = usize::from(codec == CodecId::Dfor);
        let p = enc32(codec, &gen32(Shape::Uniform, N, 12, 1));
        let bw_at = data_word(codec, N) + lead + 1;
        for (byte, bw) in [(0, 33u8), (3, 255)] {
            let mut q = p.clone();
            q[4 * bw_at + byte] = bw;
            let e = fail32(codec, &q, N);
            assert!(
                matches!(e, Error::BitWidthTooLarge { block: 0, miniblock, found, max: 32 }
                    if miniblock == byte as u32 && found == bw as u32),
                "{codec:?} {e:?}"
            );
        }
        let p = enc64(codec, &gen64(Shape::Uniform, N, 40, 1));
        let bw_at = data_word(codec, N) + 2 * lead + 2;
        let mut q = p.clone();
        q[4 * bw_at + 1] = 65;
        let e = fail64(codec, &q, N);
        assert!(
            matches!(
                e,
                Error::BitWidthTooLarge {
                    block: 0,
                    miniblock: 1,
                    found: 65,
                    max: 64
                }
            ),
            "{e:?}"
        );
    }
    // RFOR: value width over the lane; run-length width over 10.
    let p = enc32(CodecId::Rfor, &gen32(Shape::Runs(40), N, 12, 1));
    let bw_at = data_word(CodecId::Rfor, N) + 2;
    let mut q = p.clone();
    q[4 * bw_at] = 33;
    assert!(matches!(
        fail32(CodecId::Rfor, &q, N),
        Error::BitWidthTooLarge {
            max: 32,
            found: 33,
            ..
        }
    ));
    let m = (word(&p, data_word(CodecId::Rfor, N) + 1) & 0xffff).div_ceil(32) as usize;
    let mut q = p.clone();
    q[4 * bw_at + m] = 11;
    assert!(matches!(
        fail32(CodecId::Rfor, &q, N),
        Error::BitWidthTooLarge {
            max: 10,
            found: 11,
            ..
        }
    ));
}

#[test]
fn rfor_run_counts_and_lengths() {
    // Runs of exactly 32: 16 runs per block, every length 32 (length width 0).
    let v: Vec<u32> = (0..1024u32).map(|i| (i / 32) * 7 % 1000).collect();
    let p = enc32(CodecId::Rfor, &v);
    let run_at = data_word(CodecId::Rfor, v.len()) + 1;
    assert_eq!(word(&p, run_at), 16 | 32 << 16);
    for (r, field) in [(0u32, "rfor run count"), (513, "rfor run count")] {
        let mut q = p.clone();
        set_word(&mut q, run_at, r | 32 << 16);
        let e = fail32(CodecId::Rfor, &q, v.len());
        assert!(
            matches!(e, Error::InvalidHeader { field: f, found, .. } if f == field && found == r as u64),
            "{e:?}"
        );
    }
    for lref in [0u32, 513] {
        let mut q = p.clone();
        set_word(&mut q, run_at, 16 | lref << 16);
        let e = fail32(CodecId::Rfor, &q, v.len());
        assert!(
            matches!(
                e,
                Error::InvalidHeader {
                    field: "rfor length_reference",
                    ..
                }
            ),
            "{e:?}"
        );
    }
    // Lengths 33 each: 16 * 33 = 528, not the block's 512 values.
    let mut q = p.clone();
    set_word(&mut q, run_at, 16 | 33 << 16);
    let e = fail32(CodecId::Rfor, &q, v.len());
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 512,
                found: 528,
                ..
            }
        ),
        "{e:?}"
    );
    // Fewer runs than encoded (15 of 32): the lengths sum to 480.
    let mut q = p.clone();
    set_word(&mut q, run_at, 15 | 32 << 16);
    let e = fail32(CodecId::Rfor, &q, v.len());
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 512,
                found: 480,
                ..
            }
        ),
        "{e:?}"
    );
    // A single run length over 512: reference 512 plus a packed 1.
    let v: Vec<u32> = std::iter::repeat_n(1, 300)
        .chain(std::iter::repeat_n(2, 212))
        .collect();
    let p = enc32(CodecId::Rfor, &v);
    let run_at = data_word(CodecId::Rfor, v.len()) + 1;
    assert_eq!(word(&p, run_at), 2 | 212 << 16);
    let mut q = p.clone();
    set_word(&mut q, run_at, 2 | 512 << 16);
    let e = fail32(CodecId::Rfor, &q, v.len());
    assert!(
        matches!(
            e,
            Error::InvalidHeader {
                field: "rfor run length",
                found: 600,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn u8_column_rejects_values_over_255() {
    for (ty, bad) in [
        (LogicalType::U8, 256u32),
        (LogicalType::I8, 300),
        (LogicalType::U16, 65_536),
        (LogicalType::I16, u32::MAX),
    ] {
        let lanes = [0u32, 1, bad, 3];
        for codec in INT_CODECS {
            let p = enc32(codec, &lanes);
            let mut out = vec![0u8; lanes.len() * ty.width()];
            for e in [
                column::decode_chunk(ty, codec, &p, &mut out).expect_err("fast accepted"),
                column::decode_chunk_reference(ty, codec, &p, &mut out)
                    .expect_err("reference accepted"),
            ] {
                assert!(
                    matches!(e, Error::ValueOutOfRange { index: 2, .. }),
                    "{ty:?} {codec:?} {e:?}"
                );
            }
        }
    }
}

#[test]
fn plain_length_is_checked() {
    let raw = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let mut out = [0u8; 8];
    let e = column::decode_chunk(LogicalType::U16, CodecId::Plain, &raw[..6], &mut out)
        .expect_err("short");
    assert!(matches!(e, Error::Truncated { .. }));
    let mut out = [0u8; 6];
    let e =
        column::decode_chunk(LogicalType::U16, CodecId::Plain, &raw, &mut out).expect_err("long");
    assert!(matches!(e, Error::TrailingBytes { count: 2, .. }));
    let mut out = [0u8; 7];
    let e =
        column::decode_chunk(LogicalType::U16, CodecId::Plain, &raw, &mut out).expect_err("odd");
    assert!(matches!(e, Error::InvalidArgument(_)));
    let mut p = Vec::new();
    let e = column::encode_chunk(LogicalType::U32, None, &raw[..7], &mut p).expect_err("odd raw");
    assert!(matches!(e, Error::InvalidArgument(_)));
}

#[test]
fn plain_is_not_an_int_codec() {
    let mut p = Vec::new();
    assert!(matches!(
        int::encode(CodecId::Plain, &[1u32], &mut p),
        Err(Error::InvalidArgument(_))
    ));
    let mut out = [0u32; 1];
    assert!(matches!(
        int::decode(CodecId::Plain, &[0; 4], &mut out),
        Err(Error::InvalidArgument(_))
    ));
}

/// Runs both decoders on a possibly corrupt payload: neither may panic, and they must agree.
fn agree32(codec: CodecId, p: &[u8], n: usize) {
    let mut a = vec![0u32; n];
    let mut b = vec![0u32; n];
    let mut c = vec![0u32; n];
    let portable = int::portable::decode(codec, p, &mut c);
    let fast = int::decode(codec, p, &mut a);
    match (&fast, &portable) {
        (Ok(()), Ok(())) => assert!(a == c, "portable and dispatched decoders disagree"),
        (Err(x), Err(y)) => assert_eq!(std::mem::discriminant(x), std::mem::discriminant(y)),
        (x, y) => panic!("dispatched {x:?} vs portable {y:?}"),
    }
    match (fast, int::decode_reference(codec, p, &mut b)) {
        (Ok(()), Ok(())) => assert!(a == b, "{codec:?}: decoders disagree on values"),
        (Err(x), Err(y)) => assert_eq!(
            std::mem::discriminant(&x),
            std::mem::discriminant(&y),
            "{x:?} vs {y:?}"
        ),
        (x, y) => panic!("{codec:?}: fast {x:?} vs reference {y:?}"),
    }
}

fn agree64(codec: CodecId, p: &[u8], n: usize) {
    let mut a = vec![0u64; n];
    let mut b = vec![0u64; n];
    let mut c = vec![0u64; n];
    let portable = int::portable::decode(codec, p, &mut c);
    let fast = int::decode(codec, p, &mut a);
    match (&fast, &portable) {
        (Ok(()), Ok(())) => assert!(a == c, "portable and dispatched decoders disagree"),
        (Err(x), Err(y)) => assert_eq!(std::mem::discriminant(x), std::mem::discriminant(y)),
        (x, y) => panic!("dispatched {x:?} vs portable {y:?}"),
    }
    match (fast, int::decode_reference(codec, p, &mut b)) {
        (Ok(()), Ok(())) => assert!(a == b, "{codec:?}: decoders disagree on values"),
        (Err(x), Err(y)) => assert_eq!(
            std::mem::discriminant(&x),
            std::mem::discriminant(&y),
            "{x:?} vs {y:?}"
        ),
        (x, y) => panic!("{codec:?}: fast {x:?} vs reference {y:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// Random word overwrites, bit flips and cuts of valid payloads.
    #[test]
    fn corruption_never_panics_and_decoders_agree(
        codec in proptest::sample::select(INT_CODECS.to_vec()),
        shape in proptest::sample::select(common::SHAPES.to_vec()),
        n in 0usize..2100,
        bits in 0u32..=64,
        seed: u64,
        lane64: bool,
        edits in proptest::collection::vec((any::<u32>(), any::<u32>(), 0u8..4), 1..4),
    ) {
        let mut p = if lane64 {
            enc64(codec, &gen64(shape, n, bits, seed))
        } else {
            enc32(codec, &gen32(shape, n, bits.min(32), seed))
        };
        for (at, val, kind) in edits {
            let words = p.len() / 4;
            if words == 0 { break; }
            let i = at as usize % words;
            match kind {
                0 => set_word(&mut p, i, val),
                1 => { let w = word(&p, i) ^ (1 << (val % 32)); set_word(&mut p, i, w) }
                2 => { let w = word(&p, i).wrapping_add(val % 5).wrapping_sub(2); set_word(&mut p, i, w) }
                _ => p.truncate(4 * i + (val as usize % 2) * 2),
            }
        }
        // Also decode at a wrong count now and then: the header check must catch it.
        let count = if seed % 7 == 0 { n + 1 } else { n };
        if lane64 { agree64(codec, &p, count) } else { agree32(codec, &p, count) }
    }
}
