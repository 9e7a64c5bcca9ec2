//! LLL (`docs/format/lll.md`): round trips at the segment and strip edges and on several data
//! shapes, every code type emitted, stored strips (format 1.1), fill strips (1.2), fast ==
//! reference == the
//! word-at-a-time oracle (bytes, and errors field for field), must-fail payloads with their
//! specific errors, random corruption that must not panic, compression ratios, golden payloads
//! (version 1 ones kept decode-only).

use std::path::PathBuf;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_codecs::lll::{
    self, CodeCounts, FILL_STRIP, HEADER_BYTES, MAX_SEGMENT_BYTES, SEGMENT_SIZES, STORED_STRIP,
    STRIP_BYTES, STRIP_OFFSET_MASK,
};
use tessera_format::Error;

fn enc(data: &[u8]) -> (Vec<u8>, CodeCounts) {
    enc_with(data, lll::DEFAULT_SEGMENT_BYTES)
}

/// [`enc`] with segments of `segment_bytes` (§2, §3).
fn enc_with(data: &[u8], segment_bytes: usize) -> (Vec<u8>, CodeCounts) {
    let mut p = vec![0xEE; 3];
    let counts = lll::encode_with_segment_bytes(data, &mut p, segment_bytes).expect("encode");
    assert!(
        p.len() <= lll::max_encoded_len(data.len()),
        "bound exceeded at {}",
        data.len()
    );
    (p, counts)
}

/// The three decoders' outcomes on `p` for `n` output bytes (fast, reference, oracle): the bytes
/// or the error's Debug text (every field).
fn outcomes(p: &[u8], n: usize) -> [Result<Vec<u8>, String>; 3] {
    let run = |f: fn(&[u8], &mut [u8]) -> tessera_format::Result<()>, poison: u8| {
        let mut out = vec![poison; n];
        f(p, &mut out).map(|()| out).map_err(|e| format!("{e:?}"))
    };
    [
        run(lll::decode, 0xA5),
        run(lll::decode_reference, 0x5A),
        run(lll::decode_simple, 0x3C),
    ]
}

/// The three decoders agree exactly (bytes, or the error with every field); returns the outcome.
fn agree(p: &[u8], n: usize) -> Result<Vec<u8>, String> {
    let [fast, reference, simple] = outcomes(p, n);
    assert!(
        reference == simple,
        "reference and oracle disagree: {:?} vs {:?}",
        reference.as_ref().err(),
        simple.as_ref().err()
    );
    assert!(
        fast == reference,
        "fast and reference disagree: {:?} vs {:?}",
        fast.as_ref().err(),
        reference.as_ref().err()
    );
    reference
}

/// Decodes with every decoder, checks they agree, returns the bytes.
fn dec(p: &[u8], n: usize) -> Vec<u8> {
    agree(p, n).unwrap_or_else(|e| panic!("decode failed: {e}"))
}

fn round_trip(data: &[u8]) -> (usize, CodeCounts) {
    let (p, counts) = enc(data);
    assert!(
        dec(&p, data.len()) == data,
        "round trip of {} bytes",
        data.len()
    );
    (p.len(), counts)
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

/// A 256 x 256 grayscale image: a diagonal gradient with a little noise and a bright square.
fn gradient_image() -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(7);
    let mut img = Vec::with_capacity(256 * 256);
    for y in 0..256usize {
        for x in 0..256usize {
            let v = if (96..160).contains(&x) && (96..160).contains(&y) {
                250
            } else {
                ((x + y) / 2) as u8 & 0xFC | (rng.random::<u8>() % 4 == 0) as u8
            };
            img.push(v);
        }
    }
    img
}

/// English-like text from a small vocabulary, seeded.
fn text(n: usize, seed: u64) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "strip",
        "segment",
        "word",
        "dictionary",
        "decoder",
        "of",
        "and",
        "a",
        "bytes",
        "offset",
        "length",
        "copies",
        "previous",
        "character",
        "run",
        "GPU",
        "is",
        "to",
        "in",
    ];
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        out.extend_from_slice(WORDS[rng.random_range(0..WORDS.len())].as_bytes());
        out.push(if rng.random_range(0..12) == 0 {
            b'\n'
        } else {
            b' '
        });
    }
    out.truncate(n);
    out
}

/// Exercises every code type: runs in the non-dictionary subsegment (RL), literals (SC), text
/// repeated from the previous segment (SI, LI) and runs of a byte fresh to each segment (SRL, LRL).
fn every_code_input() -> Vec<u8> {
    let mut d = Vec::new();
    d.extend(std::iter::repeat_n(b'r', 40));
    d.extend(random_bytes(472, 1));
    let t = text(4000, 2);
    let mut k = 0u8;
    while d.len() < 3 * STRIP_BYTES / 2 {
        d.extend_from_slice(&t[..(t.len() - d.len() % 97)]);
        d.push(200 + k % 50);
        d.extend(std::iter::repeat_n(200 + k % 50, 5 + (k as usize % 3) * 60));
        k = k.wrapping_add(1);
    }
    d
}

#[test]
fn round_trip_at_segment_and_strip_edges() {
    let data = text(2 * STRIP_BYTES + 10, 3);
    for n in [
        0,
        1,
        2,
        511,
        512,
        513,
        1024,
        2048,
        MAX_SEGMENT_BYTES - 1,
        MAX_SEGMENT_BYTES,
        MAX_SEGMENT_BYTES + 1,
        STRIP_BYTES - 1,
        STRIP_BYTES,
        STRIP_BYTES + 1,
        2 * STRIP_BYTES + 10,
    ] {
        round_trip(&data[..n]);
        round_trip(&random_bytes(n, n as u64));
        // Every segment size, on text (coded strips) at each edge of its own segments too.
        for &sb in &SEGMENT_SIZES {
            for m in [n, sb - 1, sb + 1, 3 * sb] {
                let m = m.min(data.len());
                let (p, _) = enc_with(&data[..m], sb);
                assert_eq!(p[..4], (sb as u32).to_le_bytes(), "segment_bytes word");
                assert!(dec(&p, m) == data[..m], "{m} bytes, segments of {sb}");
            }
        }
    }
}

/// An image 512 pixels wide whose odd rows repeat the row above, in the same 4 KiB (the shape
/// of scikit-image's `moon`): segments of 4096 bytes cannot reach the row above (their
/// dictionary is the segment before, §3); segments of 512 bytes can (theirs is the 4096 bytes
/// right before them), so the default codes it far smaller.
#[test]
fn small_segments_reach_the_row_above() {
    let mut rng = StdRng::seed_from_u64(77);
    let (w, h) = (512usize, 192usize);
    let mut img = vec![0u8; w * h];
    for y in 0..h {
        for x in 0..w {
            img[y * w + x] = if y % 2 == 1 {
                img[(y - 1) * w + x]
            } else {
                ((x / 7 + y / 5) as u8).wrapping_add(rng.random::<u8>() & 15)
            };
        }
    }
    let mut sizes = Vec::new();
    for &sb in &SEGMENT_SIZES {
        let (p, c) = enc_with(&img, sb);
        assert!(dec(&p, img.len()) == img, "segments of {sb}");
        sizes.push((sb, p.len(), c));
    }
    let at = |sb: usize| sizes.iter().find(|s| s.0 == sb).expect("size").1;
    assert!(
        at(512) * 10 < at(4096) * 7,
        "segments of 512 should code the repeated rows as copies: {sizes:?}"
    );
    assert_eq!(lll::DEFAULT_SEGMENT_BYTES, 512);
}

#[test]
fn empty_is_a_bare_header() {
    let (p, _) = enc(&[]);
    assert_eq!(p.len(), HEADER_BYTES);
    assert_eq!(dec(&p, 0), Vec::<u8>::new());
}

#[test]
fn all_one_byte_is_fill_strips() {
    // Format 1.2 (lll.md §4b): every strip of one repeated byte is that byte, bit 30 set.
    let data = vec![b'x'; 3 * STRIP_BYTES + 5];
    let (len, counts) = round_trip(&data);
    assert_eq!(len, HEADER_BYTES + 4 * 4 + 4, "{counts:?}");
    assert_eq!(counts.fill, 4, "{counts:?}");
    assert_eq!(
        counts,
        CodeCounts {
            fill: 4,
            ..CodeCounts::default()
        }
    );
    let (p, _) = enc(&data);
    for k in 0..4 {
        assert_eq!(
            entry(&p, k) & (FILL_STRIP | STORED_STRIP),
            FILL_STRIP,
            "strip {k}"
        );
    }
    // A 1-byte strip is stored (1 byte either way); 2 equal bytes fill.
    assert_eq!(enc(&[7]).1.stored, 1);
    assert_eq!(enc(&[7, 7]).1.fill, 1);
    assert_eq!(dec(&enc(&[7, 7]).0, 2), vec![7, 7]);
}

#[test]
fn long_runs_that_are_not_a_whole_strip_compress_to_run_codes() {
    // One odd byte per strip keeps every strip coded, so the run codes carry the rest.
    let mut data = vec![b'x'; 3 * STRIP_BYTES + 2000];
    for k in 0..4 {
        data[k * STRIP_BYTES + 1000] = b'y';
    }
    let (len, counts) = round_trip(&data);
    // Segments of 512 bytes restart the previous character and cost a word count each, about
    // 10 bytes per 512 (a ratio near 48); segments of 4096 about 3 bytes per 273.
    assert!(
        len * 40 < data.len(),
        "{len} bytes for {} nearly equal bytes",
        data.len()
    );
    let (len4096, _) = enc_with(&data, MAX_SEGMENT_BYTES);
    assert!(len4096.len() * 50 < data.len(), "{}", len4096.len());
    assert!(
        counts.rl > 0 && counts.lrl > 0 && counts.fill == 0,
        "{counts:?}"
    );
}

#[test]
fn random_bytes_are_stored() {
    // Every strip of random bytes codes longer than itself: all stored, the payload is the
    // header, the directory and the bytes.
    let data = random_bytes(100_000, 11);
    let (len, counts) = round_trip(&data);
    let strips = data.len().div_ceil(STRIP_BYTES);
    assert_eq!(len, HEADER_BYTES + 4 * strips + data.len());
    assert_eq!(len, lll::max_encoded_len(data.len()));
    assert_eq!(counts.stored, strips as u64, "{counts:?}");
    assert_eq!(counts.sc + counts.si + counts.rl, 0, "{counts:?}");
    let (p, _) = enc(&data);
    for k in 0..strips {
        assert_ne!(
            entry(&p, k) & STORED_STRIP,
            0,
            "strip {k} not flagged stored"
        );
    }
}

/// `strip_starts[k]` of payload `p` (§2).
fn entry(p: &[u8], k: usize) -> u32 {
    u32::from_le_bytes(p[16 + 4 * k..20 + 4 * k].try_into().expect("4 bytes"))
}

fn set_entry(p: &mut [u8], k: usize, v: u32) {
    p[16 + 4 * k..20 + 4 * k].copy_from_slice(&v.to_le_bytes())
}

/// Random, text, random: a stored strip, a coded one, a short stored last strip.
fn mixed_stored_input() -> Vec<u8> {
    let mut d = random_bytes(STRIP_BYTES, 31);
    d.extend(text(STRIP_BYTES, 32));
    d.extend(random_bytes(5000, 33));
    d
}

#[test]
fn stored_and_coded_strips_mix() {
    let data = mixed_stored_input();
    let (p, counts) = enc(&data);
    assert_eq!(counts.stored, 2, "{counts:?}");
    assert!(counts.si > 0, "{counts:?}");
    assert_ne!(entry(&p, 0) & STORED_STRIP, 0);
    assert_eq!(entry(&p, 1) & STORED_STRIP, 0);
    assert_ne!(entry(&p, 2) & STORED_STRIP, 0);
    assert_eq!(dec(&p, data.len()), data);
    // A strip of one byte codes to 4 bytes: stored. An all-equal strip: a fill strip.
    let (one, c) = enc(&[9]);
    assert_eq!(c.stored, 1);
    assert_eq!(one.len(), HEADER_BYTES + 4 + 1);
    let (_, c) = enc(&[9; 600]);
    assert_eq!((c.stored, c.fill), (0, 1));
}

#[test]
fn stored_strip_errors() {
    let data = mixed_stored_input();
    let n = data.len();
    let (good, _) = enc(&data);
    // The last (stored) strip one byte short, one byte long.
    assert!(matches!(
        fail(&good[..good.len() - 1], n),
        Error::Truncated {
            what: "LLL stored strip",
            needed: 5000,
            available: 4999,
            ..
        }
    ));
    let mut p = good.clone();
    p.push(0);
    assert!(matches!(
        fail(&p, n),
        Error::TrailingBytes {
            what: "LLL stored strip",
            count: 1,
            ..
        }
    ));
    // The first stored strip made one byte shorter by moving strip 1's start back.
    let mut p = good.clone();
    let e1 = entry(&p, 1);
    set_entry(&mut p, 1, e1 - 1);
    assert!(matches!(
        fail(&p, n),
        Error::Truncated {
            what: "LLL stored strip",
            offset: 28,
            ..
        }
    ));
    // The stored flag on the coded strip: its length is not L.
    let mut p = good.clone();
    set_entry(&mut p, 1, e1 | STORED_STRIP);
    assert!(matches!(
        fail(&p, n),
        Error::Truncated {
            what: "LLL stored strip",
            ..
        }
    ));
    // The flag cleared on the first stored strip: its random bytes read as word counts.
    let mut p = good.clone();
    set_entry(&mut p, 0, entry(&good, 0) & !STORED_STRIP);
    fail(&p, n);
    // The flag does not widen the offset range: a flagged offset still has to be in range.
    let mut p = good.clone();
    let past = p.len() as u32 + 1;
    set_entry(&mut p, 2, past | STORED_STRIP);
    assert!(matches!(
        fail(&p, n),
        Error::BlockStartOutOfRange { block: 2, .. }
    ));
}

/// Text, one repeated byte, random, a short run of another byte: coded, fill, stored, fill.
fn mixed_fill_input() -> Vec<u8> {
    let mut d = text(STRIP_BYTES, 41);
    d.extend(std::iter::repeat_n(0u8, STRIP_BYTES));
    d.extend(random_bytes(STRIP_BYTES, 42));
    d.extend(std::iter::repeat_n(0xA5u8, 777));
    d
}

#[test]
fn fill_strips_mix_with_coded_and_stored_ones() {
    let data = mixed_fill_input();
    let (p, counts) = enc(&data);
    assert_eq!((counts.fill, counts.stored), (2, 1), "{counts:?}");
    let kinds: Vec<u32> = (0..4).map(|k| entry(&p, k) >> 30).collect();
    assert_eq!(kinds, [0, 1, 2, 1]);
    // Each fill strip is its one byte: strip 1 one byte before strip 2, strip 3 the last byte.
    assert_eq!(
        entry(&p, 2) & STRIP_OFFSET_MASK,
        (entry(&p, 1) & STRIP_OFFSET_MASK) + 1
    );
    assert_eq!(p[(entry(&p, 1) & STRIP_OFFSET_MASK) as usize], 0);
    assert_eq!(p.len(), (entry(&p, 3) & STRIP_OFFSET_MASK) as usize + 1);
    assert_eq!(p[p.len() - 1], 0xA5);
    assert_eq!(dec(&p, data.len()), data);
}

#[test]
fn fill_strip_errors() {
    let data = mixed_fill_input();
    let n = data.len();
    let (good, _) = enc(&data);
    // The last (fill) strip with no byte, with one byte too many.
    assert!(matches!(
        fail(&good[..good.len() - 1], n),
        Error::Truncated {
            what: "LLL fill strip",
            needed: 1,
            available: 0,
            ..
        }
    ));
    let mut p = good.clone();
    p.push(0xA5);
    assert!(matches!(
        fail(&p, n),
        Error::TrailingBytes {
            what: "LLL fill strip",
            count: 1,
            ..
        }
    ));
    // The fill flag on the coded strip: it is far longer than one byte.
    let mut p = good.clone();
    set_entry(&mut p, 0, entry(&good, 0) | FILL_STRIP);
    assert!(matches!(
        fail(&p, n),
        Error::TrailingBytes {
            what: "LLL fill strip",
            ..
        }
    ));
    // The flag moved from fill to stored: one byte is not a stored strip of 32768.
    let mut p = good.clone();
    set_entry(
        &mut p,
        1,
        (entry(&good, 1) & STRIP_OFFSET_MASK) | STORED_STRIP,
    );
    assert!(matches!(
        fail(&p, n),
        Error::Truncated {
            what: "LLL stored strip",
            ..
        }
    ));
    // Both kind bits: rejected at the directory, before any strip is decoded.
    let mut p = good.clone();
    set_entry(&mut p, 3, entry(&good, 3) | STORED_STRIP);
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            offset: 28,
            found,
            ..
        } if found as u32 == entry(&good, 3) | STORED_STRIP
    ));
    // The fill flag does not widen the offset range.
    let mut p = good.clone();
    let past = p.len() as u32 + 1;
    set_entry(&mut p, 2, past | FILL_STRIP);
    assert!(matches!(
        fail(&p, n),
        Error::BlockStartOutOfRange { block: 2, .. }
    ));
}

#[test]
fn a_version_1_1_reading_of_a_fill_entry_is_out_of_range() {
    // What a 1.1 decoder does with bit 30 (lll.md §2): it masks only bit 31 off, so a fill
    // entry's offset reads as at least 2^30, past the end of every payload: BlockStartOutOfRange.
    let (p, _) = enc(&mixed_fill_input());
    for k in 0..4 {
        let raw = entry(&p, k);
        let as_1_1 = (raw & !STORED_STRIP) as usize;
        assert_eq!(
            raw & FILL_STRIP != 0,
            as_1_1 > p.len(),
            "strip {k}: {raw:#x}"
        );
    }
}

#[test]
fn a_version_1_reading_of_a_stored_entry_is_out_of_range() {
    // What a version 1 decoder does with bit 31 (lll.md §2): it takes the whole word as the
    // offset and checks it against [previous offset, data start] (strip 0) or [previous offset,
    // payload length]. Every flagged entry of a fresh payload must fall outside those bounds
    // (so a version 1 decoder fails with BlockStartOutOfRange), every other one inside.
    let (p, _) = enc(&mixed_stored_input());
    let strips = 3;
    let data_start = HEADER_BYTES + 4 * strips;
    for k in 0..strips {
        let raw = entry(&p, k) as usize;
        let max = if k == 0 { data_start } else { p.len() };
        let stored = raw & STORED_STRIP as usize != 0;
        assert_eq!(
            stored,
            raw > max,
            "strip {k}: raw entry {raw:#x}, max {max}"
        );
        assert!(raw & !(STORED_STRIP as usize) < 1 << 25);
    }
}

#[test]
fn structured_inputs_compress() {
    for (name, data) in [
        ("gradient", gradient_image()),
        ("text", text(200_000, 5)),
        ("every_code", every_code_input()),
    ] {
        let (len, counts) = round_trip(&data);
        eprintln!(
            "lll {name}: {} -> {len} bytes, ratio {:.2}, {counts:?}",
            data.len(),
            data.len() as f64 / len as f64
        );
        assert!(len < data.len(), "{name} did not compress");
    }
}

#[test]
fn every_code_type_is_emitted() {
    let (_, c) = round_trip(&every_code_input());
    assert!(
        c.sc > 0 && c.rl > 0 && c.si > 0 && c.li > 0 && c.srl > 0 && c.lrl > 0,
        "{c:?}"
    );
}

/// The output lengths of every short code (RL, SI, SRL: a 2-byte word that is not a long code's
/// head) of a valid payload with 512-byte segments (§3: a strip of `L` bytes has `ceil(L / 512)`
/// segments, segment 0 the non-dictionary one), read straight from its words (§4, §5).
fn short_code_lengths(p: &[u8]) -> Vec<usize> {
    let word = |at: usize| u32::from_le_bytes(p[at..at + 4].try_into().expect("4 bytes")) as usize;
    assert_eq!(word(0), 512, "a payload with 512-byte segments");
    let (n, strips) = (word(8), word(12));
    let mut lengths = Vec::new();
    for k in 0..strips {
        let e = word(HEADER_BYTES + 4 * k) as u32;
        if e & (STORED_STRIP | FILL_STRIP) != 0 {
            continue;
        }
        let at = (e & STRIP_OFFSET_MASK) as usize;
        let len = (n - k * STRIP_BYTES).min(STRIP_BYTES);
        let segs = len.div_ceil(512);
        let counts: Vec<usize> = (0..segs)
            .map(|j| usize::from(u16::from_le_bytes([p[at + 2 * j], p[at + 2 * j + 1]])))
            .collect();
        let m: usize = counts.iter().sum();
        let ids = &p[at + 2 * segs..at + 2 * segs + m.div_ceil(8)];
        let array = &p[at + 2 * segs + m.div_ceil(8)..];
        let (mut i, mut j) = (0, 0);
        while i < m {
            if ids[i / 8] >> (i % 8) & 1 == 1 {
                let b1 = array[j + 1];
                if i < counts[0] {
                    lengths.push(usize::from(b1) + 2); // RL
                } else if b1 >> 4 == 15 {
                    (i, j) = (i + 1, j + 1); // a long code: its c word follows
                } else {
                    lengths.push(usize::from(b1 >> 4) + 2); // SI or SRL
                }
                j += 2;
            } else {
                j += 1;
            }
            i += 1;
        }
    }
    lengths
}

#[test]
fn fast_decode_parse_writes_no_2_byte_code() {
    let fast = lll::EncodeOptions {
        parse: lll::Parse::FastDecode,
        ..lll::EncodeOptions::default()
    };
    for (name, data) in [
        ("gradient", gradient_image()),
        ("text", text(200_000, 5)),
        ("every_code", every_code_input()),
    ] {
        let (small, _) = enc(&data);
        let mut quick = Vec::new();
        let counts = lll::encode_with(&data, &mut quick, &fast).expect("encode");
        assert!(dec(&quick, data.len()) == data, "{name}: round trip");
        // The smallest parse does use 2-byte codes here, so the charge changes the words.
        let lengths = short_code_lengths(&small);
        assert!(lengths.contains(&2), "{name}: no 2-byte code to remove");
        let lengths = short_code_lengths(&quick);
        assert!(!lengths.is_empty(), "{name}: {counts:?}");
        assert!(lengths.iter().all(|&l| l >= 3), "{name}: a 2-byte code");
        // The smallest parse has the fewest bits per segment; bytes differ from bits / 8 by at
        // most the identifier block's rounding, one byte per strip.
        let strips = data.len().div_ceil(STRIP_BYTES);
        assert!(
            quick.len() + strips >= small.len(),
            "{name}: {} < {}",
            quick.len(),
            small.len()
        );
        eprintln!(
            "lll {name}: smallest {} bytes, fast-decode {} bytes",
            small.len(),
            quick.len()
        );
    }
}

// ---- must-fail payloads ------------------------------------------------------------------

/// Every decoder must fail with the same error (every field); returns the reference's error.
fn fail(p: &[u8], n: usize) -> Error {
    assert!(agree(p, n).is_err(), "the decoders accepted a bad payload");
    let mut b = vec![0u8; n];
    lll::decode_reference(p, &mut b).expect_err("reference accepted a bad payload")
}

/// A word of a hand-built strip: identifier bit and bytes.
type W = (bool, Vec<u8>);

fn sc(b: u8) -> W {
    (false, vec![b])
}
fn two(t: u16, l: u16) -> W {
    (true, (t | l << 12).to_le_bytes().to_vec())
}

/// A one-strip payload of `n` bytes from hand-picked words per segment (§2, §4).
fn build(n: usize, segments: &[Vec<W>]) -> Vec<u8> {
    let mut p = Vec::new();
    for w in [
        MAX_SEGMENT_BYTES as u32,
        8,
        n as u32,
        1,
        (HEADER_BYTES + 4) as u32,
    ] {
        p.extend_from_slice(&w.to_le_bytes());
    }
    let words: Vec<&W> = segments.iter().flatten().collect();
    for s in segments {
        p.extend_from_slice(&(s.len() as u16).to_le_bytes());
    }
    let mut ids = vec![0u8; words.len().div_ceil(8)];
    for (i, w) in words.iter().enumerate() {
        ids[i / 8] |= (w.0 as u8) << (i % 8);
    }
    p.extend_from_slice(&ids);
    for w in &words {
        p.extend_from_slice(&w.1);
    }
    p
}

/// Subsegment 0 of a 514-byte strip: 512 x 'a' as two RL words.
fn seg0() -> Vec<W> {
    vec![(true, vec![b'a', 255]), (true, vec![b'a', 253])]
}

#[test]
fn hand_built_payload_decodes() {
    // SI of 2 bytes from offset 3 of subsegment 1's dictionary (the first 512 bytes).
    let p = build(514, &[seg0(), vec![two(3, 0)]]);
    assert_eq!(dec(&p, 514), vec![b'a'; 514]);
    // SC then SRL: 'q' and two more copies of it.
    let p = build(515, &[seg0(), vec![sc(b'q'), two(4095, 0)]]);
    let mut want = vec![b'a'; 512];
    want.extend_from_slice(b"qqq");
    assert_eq!(dec(&p, 515), want);
}

#[test]
fn header_errors() {
    let (good, _) = enc(&text(5000, 9));
    let n = 5000;
    assert!(matches!(fail(&good[..10], n), Error::Truncated { .. }));
    let mut p = good.clone();
    p[1] = 0;
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "segment_bytes",
            ..
        }
    ));
    // Sizes format 1.3 does not define (§2): not a power of two, too small, too large.
    for bad in [256u32, 1000, 8192, 32768] {
        let mut p = good.clone();
        p[..4].copy_from_slice(&bad.to_le_bytes());
        assert!(matches!(
            fail(&p, n),
            Error::InvalidHeader {
                field: "segment_bytes",
                ..
            }
        ));
    }
    let mut p = good.clone();
    p[4] = 9;
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "segments_per_strip",
            ..
        }
    ));
    // segments_per_strip must follow segment_bytes (32768 / segment_bytes): 8 was right for
    // 4096 only.
    let mut p = good.clone();
    p[4..8].copy_from_slice(&8u32.to_le_bytes());
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "segments_per_strip",
            ..
        }
    ));
    // Both words changed consistently: the strips were coded with other segments, and every
    // decoder rejects them alike (here the word counts no longer fit the segments).
    for sb in [1024u32, 2048, 4096] {
        let mut p = good.clone();
        p[..4].copy_from_slice(&sb.to_le_bytes());
        p[4..8].copy_from_slice(&(32768 / sb).to_le_bytes());
        fail(&p, n);
    }
    let mut p = good.clone();
    p[8..12].copy_from_slice(&(u32::MAX).to_le_bytes());
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "total_count",
            ..
        }
    ));
    assert!(matches!(fail(&good, n + 1), Error::CountMismatch { .. }));
    let mut p = good.clone();
    p[12] = 2;
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "strip_count",
            ..
        }
    ));
    assert!(matches!(fail(&good[..18], n), Error::Truncated { .. }));
    let mut p = good.clone();
    p[16] = 21;
    assert!(matches!(
        fail(&p, n),
        Error::BlockStartOutOfRange { block: 0, .. }
    ));
    let (mut e, _) = enc(&[]);
    e.push(0);
    assert!(matches!(fail(&e, 0), Error::TrailingBytes { .. }));
    // A second strip's start before the first's.
    let (mut two_strips, _) = enc(&text(STRIP_BYTES + 5, 9));
    two_strips[20..24].copy_from_slice(&3u32.to_le_bytes());
    assert!(matches!(
        fail(&two_strips, STRIP_BYTES + 5),
        Error::BlockStartOutOfRange { block: 1, .. }
    ));
    // Not reading the output buffer size from the header: a huge total_count is refused.
    let mut p = good.clone();
    p[8..12].copy_from_slice(&(1u32 << 24).to_le_bytes());
    assert!(matches!(fail(&p, n), Error::CountMismatch { .. }));
}

#[test]
fn strip_errors() {
    // A 5000-byte strip has 5 segments of at most 4096 bytes, 10 of at most 512.
    for (sb, segs) in [(MAX_SEGMENT_BYTES, 5), (512, 10)] {
        strip_errors_with(sb, segs);
    }
}

fn strip_errors_with(sb: usize, segs: usize) {
    let (good, _) = enc_with(&text(5000, 9), sb);
    let n = 5000;
    let len = good.len();
    assert!(matches!(
        fail(&good[..len - 1], n),
        Error::Truncated {
            what: "LLL word array",
            ..
        }
    ));
    let mut p = good.clone();
    p.push(0);
    assert!(matches!(fail(&p, n), Error::TrailingBytes { .. }));
    // Word counts start at byte 20, identifiers at 20 + 2 * segs.
    let mut p = good.clone();
    p[20..22].copy_from_slice(&0u16.to_le_bytes());
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "segment word_count",
            ..
        }
    ));
    let mut p = good.clone();
    p[20..22].copy_from_slice(&513u16.to_le_bytes());
    assert!(matches!(
        fail(&p, n),
        Error::InvalidHeader {
            field: "segment word_count",
            ..
        }
    ));
    assert!(matches!(
        fail(&good[..20 + 2 * segs - 1], n),
        Error::Truncated {
            what: "LLL strip word counts",
            ..
        }
    ));
    assert!(matches!(
        fail(&good[..20 + 2 * segs + 1], n),
        Error::Truncated {
            what: "LLL word identifiers",
            ..
        }
    ));
}

#[test]
fn identifier_padding_errors() {
    // Identifier padding: 3 words, bit 3 set.
    let mut p = build(514, &[seg0(), vec![two(3, 0)]]);
    p[24] |= 1 << 3;
    assert!(matches!(
        fail(&p, 514),
        Error::InvalidHeader {
            field: "word identifier padding bits",
            ..
        }
    ));
}

#[test]
fn word_errors() {
    let f = |segs: &[Vec<W>], n: usize| fail(&build(n, segs), n);
    // RL longer than the subsegment.
    let mut s0 = seg0();
    s0.push((true, vec![b'a', 0]));
    assert!(matches!(
        f(&[s0], 512),
        Error::InvalidHeader {
            field: "RL length",
            ..
        }
    ));
    // SC past the segment end.
    assert!(matches!(
        f(&[seg0(), vec![two(0, 0), sc(3)]], 514),
        Error::InvalidHeader {
            field: "code length",
            ..
        }
    ));
    // SI past the dictionary (512 bytes before subsegment 1).
    assert!(matches!(
        f(&[seg0(), vec![two(511, 0)]], 514),
        Error::InvalidHeader {
            field: "SI/LI offset t + length",
            ..
        }
    ));
    // SI longer than the bytes left.
    assert!(matches!(
        f(&[seg0(), vec![two(0, 1)]], 514),
        Error::InvalidHeader {
            field: "code length",
            ..
        }
    ));
    // A run first in a segment: the previous character is unset.
    assert!(matches!(
        f(&[seg0(), vec![two(4095, 0)]], 514),
        Error::InvalidHeader {
            field: "SRL/LRL previous character",
            ..
        }
    ));
    // Two runs in a row.
    assert!(matches!(
        f(&[seg0(), vec![sc(1), two(4095, 0), two(4095, 0)]], 517),
        Error::InvalidHeader {
            field: "SRL/LRL previous character",
            ..
        }
    ));
    // LI with no c word, and with a c word flagged as 2-byte.
    assert!(matches!(
        f(&[seg0(), vec![two(0, 15)]], 530),
        Error::InvalidHeader {
            field: "long code's c word",
            ..
        }
    ));
    assert!(matches!(
        f(&[seg0(), vec![two(0, 15), two(0, 0)]], 530),
        Error::InvalidHeader {
            field: "long code's c word identifier",
            ..
        }
    ));
    // Words that end before the segment does.
    assert!(matches!(
        f(&[seg0(), vec![sc(1)]], 514),
        Error::CountMismatch { .. }
    ));
}

/// A full strip of `b'a'` from hand-picked words: every segment SC words, except segment 4
/// (strip bytes 4096..8192): `lead` words (SC and 2-byte SI alternating), then `tail` (writing
/// `tail_bytes`), then SC words to the segment's end (`None`: to 300 bytes short of it). Bad
/// words placed there are met by the fast windows (far from the array's and the strip's
/// ends), at every position relative to a window's 56 words.
fn strip_with(lead: usize, tail: &[W], tail_bytes: Option<usize>) -> Vec<u8> {
    let mut segs: Vec<Vec<W>> = vec![seg0()];
    for len in [512usize, 1024, 2048] {
        segs.push((0..len).map(|_| sc(b'a')).collect());
    }
    let mut s4 = Vec::new();
    let mut bytes = 0;
    for i in 0..lead {
        if i % 2 == 0 {
            s4.push(sc(b'a'));
            bytes += 1;
        } else {
            s4.push(two(0, 0));
            bytes += 2;
        }
    }
    s4.extend_from_slice(tail);
    let end = match tail_bytes {
        Some(b) => MAX_SEGMENT_BYTES - b,
        None => MAX_SEGMENT_BYTES - 300,
    };
    while bytes < end {
        s4.push(sc(b'a'));
        bytes += 1;
    }
    segs.push(s4);
    for _ in 5..11 {
        segs.push((0..MAX_SEGMENT_BYTES).map(|_| sc(b'a')).collect());
    }
    build(STRIP_BYTES, &segs)
}

#[test]
fn word_errors_inside_fast_windows() {
    let field = |e: Error| match e {
        Error::InvalidHeader { field, .. } => field,
        Error::CountMismatch { .. } => "count mismatch",
        other => panic!("unexpected {other:?}"),
    };
    // A valid strip first: the builder is right.
    for lead in [0, 55, 100] {
        let tail = [sc(b'a'), two(4095, 3), two(7, 14), two(0, 15), sc(40)];
        let p = strip_with(lead, &tail, Some(1 + 5 + 16 + 58));
        assert_eq!(dec(&p, STRIP_BYTES), vec![b'a'; STRIP_BYTES]);
    }
    let cases: [(&[W], &str); 6] = [
        (
            &[sc(b'a'), two(4095, 0), two(4095, 0)],
            "SRL/LRL previous character",
        ),
        (
            &[two(0, 0), two(4095, 0), two(4095, 15), sc(3)],
            "SRL/LRL previous character",
        ),
        (&[two(4090, 14)], "SI/LI offset t + length"),
        (&[two(0, 15), two(0, 0)], "long code's c word identifier"),
        (&[two(3900, 15), sc(255)], "SI/LI offset t + length"),
        // A segment of 4096 bytes: the SC filler stops 300 short, then too few words.
        (&[], "count mismatch"),
    ];
    for lead in (0..8).chain(50..60).chain(105..116) {
        for (tail, want) in &cases {
            let p = strip_with(lead, tail, None);
            assert_eq!(field(fail(&p, STRIP_BYTES)), *want, "lead {lead}, {tail:?}");
        }
    }
}

#[test]
fn random_corruption_never_panics_and_decoders_agree() {
    let mut rng = StdRng::seed_from_u64(99);
    let inputs = [
        text(9000, 1),
        every_code_input()[..40_000].to_vec(),
        {
            // Runs (RL, SRL, LRL): one odd byte keeps the strip coded, not a fill strip.
            let mut d = vec![7u8; 5000];
            d[2500] = 8;
            d
        },
        gradient_image(),
        mixed_stored_input(),
        mixed_fill_input(),
    ];
    for data in &inputs {
        let (good, _) = enc(data);
        for _ in 0..400 {
            let mut p = good.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..p.len());
                p[i] = rng.random();
            }
            if rng.random_range(0..8) == 0 {
                p.truncate(rng.random_range(0..p.len()));
            }
            let _ = agree(&p, data.len());
        }
    }
}

// ---- golden payloads -----------------------------------------------------------------------

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/lll")
}

#[test]
fn version_1_golden_payloads_still_decode() {
    // Written by the version 1 encoder, which coded every strip (no stored strips): a 1.1
    // decoder must read them unchanged. Never regenerated.
    let (name, data) = ("edges", random_bytes(STRIP_BYTES + 1, 4));
    {
        let path = golden_dir().join(format!("{name}.lll"));
        let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            stored.len() > data.len() + 16,
            "{name}: not the version 1 (coded) payload"
        );
        assert!(
            dec(&stored, data.len()) == data,
            "{name}: golden payload decodes wrongly"
        );
        let (fresh, c) = enc(&data);
        assert!(fresh.len() < stored.len() && c.stored == 2, "{c:?}");
    }
}

#[test]
fn golden_payloads_decode_and_reencode() {
    // `<name>.lll`: segments of 4096 (what formats 1.1 and 1.2 wrote, still written by
    // `encode_with_segment_bytes(.., 4096)` byte for byte); `<name>-s512.lll`: the default
    // segments of 512 (format 1.3).
    let regen = std::env::var_os("TESSERA_REGEN_GOLDEN").is_some();
    let sets = [
        ("text", text(40_000, 21)),
        ("gradient", gradient_image()),
        ("every_code", every_code_input()),
        ("stored", mixed_stored_input()),
        ("fill", mixed_fill_input()),
    ];
    for (name, data) in &sets {
        for (file, sb) in [
            (format!("{name}.lll"), MAX_SEGMENT_BYTES),
            (format!("{name}-s512.lll"), 512),
        ] {
            if sb == 512 && !matches!(*name, "text" | "gradient" | "every_code") {
                continue;
            }
            let path = golden_dir().join(&file);
            let (fresh, _) = enc_with(data, sb);
            if regen {
                std::fs::create_dir_all(golden_dir()).expect("mkdir");
                std::fs::write(&path, &fresh).expect("write golden");
            }
            let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                stored[..4],
                (sb as u32).to_le_bytes(),
                "{file}: segment_bytes"
            );
            assert!(
                dec(&stored, data.len()) == *data,
                "{file}: golden payload decodes wrongly"
            );
            assert!(
                stored == fresh,
                "{file}: encoder no longer reproduces the golden payload"
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Small alphabets make runs and repeats, so every code type turns up across cases.
    #[test]
    fn round_trip_small_alphabets(
        data in proptest::collection::vec(0u8..4, 0..40_000),
        shift in 0u8..=252,
    ) {
        let data: Vec<u8> = data.into_iter().map(|b| b + shift).collect();
        round_trip(&data);
    }
}

/// Photo-like bytes (`shape` 0: a noisy gradient, mostly SC and short SI, the mix the fast
/// windows are tuned for), text (1: long SI / LI) or runs of a few values (2: SRL / LRL, RL),
/// `n` bytes from `seed`.
fn shaped(shape: u8, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    match shape {
        0 => (0..n)
            .map(|i| ((i % 509) / 3 + (i / 509) / 2) as u8 ^ (rng.random::<u8>() & 3))
            .collect(),
        1 => text(n, seed),
        _ => {
            let mut d = Vec::with_capacity(n + 300);
            while d.len() < n {
                let b = rng.random_range(0..4u8);
                let len = rng.random_range(1..300usize);
                d.extend(std::iter::repeat_n(b, len));
            }
            d.truncate(n);
            d
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
    /// Reference == fast == the word-at-a-time oracle (bytes, or the error with every field) on
    /// fresh encodings of every shape and on mutations of them: bytes overwritten inside the
    /// strips (word counts, identifier bits, words), so the fast windows stop at every kind of
    /// failing step and near every limit (window, segment and strip ends).
    #[test]
    fn decoders_agree_on_mutated_encodings(
        shape in 0u8..3,
        n in 1usize..(2 * STRIP_BYTES + 5000),
        seed in proptest::prelude::any::<u64>(),
        edits in proptest::collection::vec(
            (proptest::prelude::any::<u32>(), proptest::prelude::any::<u8>(), 0u8..3),
            1..6,
        ),
    ) {
        let data = shaped(shape, n, seed);
        let (good, _) = enc(&data);
        proptest::prop_assert!(dec(&good, n) == data);
        let body = HEADER_BYTES + 4 * n.div_ceil(STRIP_BYTES);
        let mut p = good.clone();
        for &(at, v, how) in &edits {
            if p.len() <= body {
                break;
            }
            let i = body + at as usize % (p.len() - body);
            match how {
                0 => p[i] = v,
                1 => p[i] ^= 1 << (v % 8),
                _ => p[i] = p[i].wrapping_add(v | 1),
            }
        }
        let _ = agree(&p, n);
    }
}

/// Single-thread decode throughput on the files of `TESSERA_LLL_BENCH` (comma-separated), for
/// a quick look without the CLI: `TESSERA_LLL_BENCH=bench/data/camera-512x512.gray cargo test
/// --release -p tessera-codecs --test lll -- --ignored --nocapture decode_throughput`.
#[test]
#[ignore]
fn decode_throughput() {
    let Ok(files) = std::env::var("TESSERA_LLL_BENCH") else {
        eprintln!("skipped: TESSERA_LLL_BENCH is not set");
        return;
    };
    let time = |f: &dyn Fn()| {
        let mut best = f64::MAX;
        for _ in 0..7 {
            let t0 = std::time::Instant::now();
            f();
            best = best.min(t0.elapsed().as_secs_f64());
        }
        best
    };
    for file in files.split(',') {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let (p, c) = enc(&data);
        let mut out = vec![0u8; data.len()];
        let gbs = |s: f64| data.len() as f64 / s / 1e9;
        let o = std::cell::RefCell::new(vec![0u8; data.len()]);
        let r = time(&|| {
            lll::decode_reference(&p, &mut o.borrow_mut()).expect("decodes");
            std::hint::black_box(&o);
        });
        let s = time(&|| {
            lll::decode_simple(&p, &mut o.borrow_mut()).expect("decodes");
            std::hint::black_box(&o);
        });
        lll::decode_reference(&p, &mut out).expect("decodes");
        assert!(out == data);
        if let Ok(k) = std::env::var("TESSERA_LLL_REPEAT") {
            // Many decodes into one buffer, for a profiler.
            for _ in 0..k.parse::<usize>().expect("a count") {
                lll::decode_reference(&p, &mut out).expect("decodes");
            }
        }
        eprintln!(
            "{file}: ratio {:.3}, reference {:.2} GB/s, word-at-a-time oracle {:.2} GB/s, {c:?}",
            data.len() as f64 / p.len() as f64,
            gbs(r),
            gbs(s)
        );
    }
}
