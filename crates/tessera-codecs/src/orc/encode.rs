//! Encoders that make ORC streams for tests and benchmarks: every RLE v2 sub-encoding at every
//! width code on demand, plus simple greedy whole-stream encoders. They follow the
//! specification's layouts byte for byte but not ORC's writer heuristics.

use super::{closest_fixed_bits, decode_width, zigzag, RLE_V2_MAX_RUN};

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn svarint(out: &mut Vec<u8>, v: i64, signed: bool) {
    varint(out, if signed { zigzag(v) } else { v as u64 });
}

/// Packs `vals` at `width` bits each, most significant bit first, padded to a byte.
fn pack(out: &mut Vec<u8>, vals: &[u64], width: u32) {
    let (mut acc, mut bits) = (0u128, 0u32);
    for &v in vals {
        let v = if width == 64 {
            v
        } else {
            v & ((1u64 << width) - 1)
        };
        acc = (acc << width) | v as u128;
        bits += width;
        while bits >= 8 {
            out.push((acc >> (bits - 8)) as u8);
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push((acc << (8 - bits)) as u8);
    }
}

/// Bits needed for `v` (0 for 0).
fn bits_of(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// The smallest width code whose width holds `bits` bits.
pub fn width_code(bits: u32) -> u32 {
    (0..32)
        .find(|&c| decode_width(c) >= bits.max(1))
        .unwrap_or(31)
}

/// Byte RLE: runs of 3..=130 equal bytes, literals of up to 128.
pub fn byte_rle(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut lit: Vec<u8> = Vec::new();
    let flush = |out: &mut Vec<u8>, lit: &mut Vec<u8>| {
        for part in lit.chunks(128) {
            out.push((-(part.len() as i32)) as u8);
            out.extend_from_slice(part);
        }
        lit.clear();
    };
    while i < data.len() {
        let mut r = 1;
        while i + r < data.len() && data[i + r] == data[i] && r < 130 {
            r += 1;
        }
        if r >= 3 {
            flush(&mut out, &mut lit);
            out.push((r - 3) as u8);
            out.push(data[i]);
            i += r;
        } else {
            lit.push(data[i]);
            i += 1;
        }
    }
    flush(&mut out, &mut lit);
    out
}

/// A boolean stream: bits most significant first, then byte RLE.
pub fn bools(bits: &[bool]) -> Vec<u8> {
    let mut bytes = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            bytes[i / 8] |= 0x80 >> (i % 8);
        }
    }
    byte_rle(&bytes)
}

/// RLE v1: runs of 3..=130 values with a constant delta in -128..=127, literals of up to 128.
pub fn rle_v1(vals: &[i64], signed: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut lit: Vec<i64> = Vec::new();
    let flush = |out: &mut Vec<u8>, lit: &mut Vec<i64>| {
        for part in lit.chunks(128) {
            out.push((-(part.len() as i32)) as u8);
            for &v in part {
                svarint(out, v, signed);
            }
        }
        lit.clear();
    };
    let mut i = 0;
    while i < vals.len() {
        let mut r = 1;
        let d = if i + 1 < vals.len() {
            vals[i + 1].wrapping_sub(vals[i])
        } else {
            0
        };
        if (-128..=127).contains(&d) {
            while i + r < vals.len() && vals[i + r].wrapping_sub(vals[i + r - 1]) == d && r < 130 {
                r += 1;
            }
        }
        if r >= 3 {
            flush(&mut out, &mut lit);
            out.push((r - 3) as u8);
            out.push(d as i8 as u8);
            svarint(&mut out, vals[i], signed);
            i += r;
        } else {
            lit.push(vals[i]);
            i += 1;
        }
    }
    flush(&mut out, &mut lit);
    out
}

/// One SHORT_REPEAT run of `count` (3..=10) copies of `v`.
pub fn short_repeat(out: &mut Vec<u8>, v: i64, count: usize, signed: bool) {
    assert!((3..=10).contains(&count));
    let u = if signed { zigzag(v) } else { v as u64 };
    let w = (bits_of(u).max(1) as usize).div_ceil(8);
    out.push(((w - 1) << 3) as u8 | (count - 3) as u8);
    out.extend_from_slice(&u.to_be_bytes()[8 - w..]);
}

/// One DIRECT run of `vals` (1..=512) at width code `code` (which must hold every value).
pub fn direct(out: &mut Vec<u8>, vals: &[i64], code: u32, signed: bool) {
    assert!((1..=RLE_V2_MAX_RUN).contains(&vals.len()) && code < 32);
    let l = vals.len() - 1;
    out.push(0x40 | (code << 1) as u8 | (l >> 8) as u8);
    out.push(l as u8);
    let us: Vec<u64> = vals
        .iter()
        .map(|&v| if signed { zigzag(v) } else { v as u64 })
        .collect();
    pack(out, &us, decode_width(code));
}

/// One DELTA run of `vals` (1..=512; monotone, or 1-2 values, or a constant step). A constant
/// step becomes width code 0; otherwise the deltas are packed at the smallest width code.
pub fn delta(out: &mut Vec<u8>, vals: &[i64], signed: bool) {
    assert!((1..=RLE_V2_MAX_RUN).contains(&vals.len()));
    let l = vals.len() - 1;
    let d0 = if vals.len() > 1 {
        vals[1].wrapping_sub(vals[0])
    } else {
        0
    };
    let mags: Vec<u64> = vals
        .windows(2)
        .skip(1)
        .map(|p| p[1].wrapping_sub(p[0]).unsigned_abs())
        .collect();
    let fixed = vals.windows(2).all(|p| p[1].wrapping_sub(p[0]) == d0);
    // ORC's writer packs deltas at aligned widths (1, 2, 4, 8, 16, 24, ...); 1 bit would be
    // code 0, which DELTA reads as "fixed step", so it becomes 2.
    let code = if fixed {
        0
    } else {
        let b = bits_of(mags.iter().copied().max().unwrap_or(0));
        let aligned = match b {
            0..=2 => 2,
            3..=4 => 4,
            5..=8 => 8,
            9..=16 => 16,
            _ => closest_fixed_bits(b).max(b.next_multiple_of(8)),
        };
        width_code(aligned)
    };
    out.push(0xC0 | (code << 1) as u8 | (l >> 8) as u8);
    out.push(l as u8);
    svarint(out, vals[0], signed);
    varint(out, zigzag(d0));
    if !fixed {
        pack(out, &mags, decode_width(code));
    }
}

/// One PATCHED_BASE run of `vals` (1..=512) with data width code `code`: base = the minimum,
/// values above `decode_width(code)` bits patched. `None` when the patches need more than 31
/// list entries or more than 64 bits of gap + patch.
pub fn patched_base(out: &mut Vec<u8>, vals: &[i64], code: u32) -> Option<()> {
    assert!((1..=RLE_V2_MAX_RUN).contains(&vals.len()) && code < 32);
    let w = decode_width(code);
    let base = *vals.iter().min()?;
    let adj: Vec<u64> = vals.iter().map(|&v| v.wrapping_sub(base) as u64).collect();
    let mut entries: Vec<(u64, u64)> = Vec::new();
    let mut prev = 0usize;
    let mut max_patch = 0u64;
    for (i, &a) in adj.iter().enumerate() {
        let p = if w >= 64 { 0 } else { a >> w };
        if p == 0 {
            continue;
        }
        let mut gap = i - prev;
        while gap > 255 {
            entries.push((255, 0));
            gap -= 255;
        }
        entries.push((gap as u64, p));
        max_patch = max_patch.max(p);
        prev = i;
    }
    let pw = decode_width(width_code(bits_of(max_patch)));
    let pgw = bits_of(entries.iter().map(|e| e.0).max().unwrap_or(0)).max(1);
    if entries.len() > 31 || pw + pgw > 64 {
        return None;
    }
    let mag = base.unsigned_abs();
    let bw = (bits_of(mag) as usize + 1).div_ceil(8).max(1);
    if bw > 8 || (bw == 8 && mag >> 63 != 0) {
        return None;
    }
    let raw = if base < 0 {
        mag | 1u64 << (bw * 8 - 1)
    } else {
        mag
    };
    let l = vals.len() - 1;
    out.push(0x80 | (code << 1) as u8 | (l >> 8) as u8);
    out.push(l as u8);
    out.push(((bw - 1) << 5) as u8 | width_code(pw) as u8);
    out.push(((pgw - 1) << 5) as u8 | entries.len() as u8);
    out.extend_from_slice(&raw.to_be_bytes()[8 - bw..]);
    let masked: Vec<u64> = adj
        .iter()
        .map(|&a| if w >= 64 { a } else { a & ((1u64 << w) - 1) })
        .collect();
    pack(out, &masked, w);
    let packed: Vec<u64> = entries.iter().map(|&(g, p)| (g << pw) | p).collect();
    pack(out, &packed, closest_fixed_bits(pw + pgw));
    Some(())
}

/// A whole RLE v2 stream, greedily: SHORT_REPEAT for 3..=10 equal values, DELTA with step 0 for
/// longer runs of one value and for monotone stretches of 3 or more (equal neighbours allowed
/// after the first step), DIRECT (closest width) for the rest, in runs of up to 512.
pub fn rle_v2(vals: &[i64], signed: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < vals.len() {
        let mut eq = 1;
        while i + eq < vals.len() && vals[i + eq] == vals[i] && eq < 10 {
            eq += 1;
        }
        if eq >= 3 && (i + eq == vals.len() || vals[i + eq] != vals[i]) {
            short_repeat(&mut out, vals[i], eq, signed);
            i += eq;
            continue;
        }
        if eq == 10 {
            // Longer runs of one value: DELTA with a fixed step of 0, as ORC's writer does.
            let mut r = eq;
            while i + r < vals.len() && vals[i + r] == vals[i] && r < RLE_V2_MAX_RUN {
                r += 1;
            }
            delta(&mut out, &vals[i..i + r], signed);
            i += r;
            continue;
        }
        let mut m = 1;
        if i + 1 < vals.len() && vals[i + 1] != vals[i] {
            let up = vals[i + 1] > vals[i];
            m = 2;
            while i + m < vals.len()
                && m < RLE_V2_MAX_RUN
                && (vals[i + m] == vals[i + m - 1] || (vals[i + m] > vals[i + m - 1]) == up)
                && vals[i + m].checked_sub(vals[i + m - 1]).is_some()
            {
                m += 1;
            }
        }
        if m >= 3 && vals[i + 1].checked_sub(vals[i]).is_some() {
            delta(&mut out, &vals[i..i + m], signed);
            i += m;
            continue;
        }
        let end = (i + RLE_V2_MAX_RUN).min(vals.len());
        let mut j = i + 1;
        while j < end && !(j + 2 < vals.len() && vals[j] == vals[j + 1] && vals[j] == vals[j + 2]) {
            j += 1;
        }
        let run = &vals[i..j];
        let maxbits = run
            .iter()
            .map(|&v| bits_of(if signed { zigzag(v) } else { v as u64 }))
            .max()
            .unwrap_or(1);
        direct(
            &mut out,
            run,
            width_code(closest_fixed_bits(maxbits)),
            signed,
        );
        i = j;
    }
    out
}
