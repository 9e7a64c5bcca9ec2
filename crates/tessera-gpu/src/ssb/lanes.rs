//! The lane layout: a resident copy of a FOR column in which each lane of a warp owns the
//! packed bits of the rows it holds, so a query kernel unpacks a value with a shift, a mask and
//! an add, no shuffles (`ssb_load_for_lanes` in `kernels/ssb/ops.cuh`; docs/gpu/ssb.md, "The
//! lane layout").
//!
//! A chunk of `n` values, `T = ceil(n / 512)` tiles, in u32 words:
//!
//! - the tile table, `2 T` words: per tile `t`, word `2t` its reference (the minimum of its real
//!   values) and word `2t + 1` = `start << 6 | bit_width`, where `start` is where the tile's
//!   bits begin in every lane's stream, in units of 16 bits;
//! - zero words up to the next multiple of 32 words (the data area starts on a 128-byte edge
//!   when the chunk does);
//! - the data area: word `k` of lane `l`'s stream at data word `32 k + l`. Tile `t`'s 16 values
//!   of lane `l` (rows `32 i + l`, `i = 0..16`, of the tile) lie at bits
//!   `16 start + i * bit_width ..` of the lane's stream, low bits first, each `value - reference`
//!   in `bit_width` bits. Rows past `n` in the last tile are packed as 0.
//!
//! Every tile takes `16 * bit_width` bits of each lane's stream, a multiple of 16, so a tile
//! starts on a word edge or half-way into a word: nothing is padded but the stream's last word.
//! One bit_width a tile (not one a miniblock of 32 values, as FOR has) is what lets the kernel
//! unpack with compile-time shifts.
//!
//! The run-start layout ([`encode_runs`]) is the resident copy of an RFOR column, for the
//! probes that look a key up once per run (`SsbProbeRunStarts`): per tile, which rows start a
//! run (a bit a row) and the runs' values in order, so a warp finds a row's run with a
//! popcount and never expands run lengths. A chunk of `n` values, `T` tiles:
//!
//! - the tile table, `2 T` words: per tile, its reference (the minimum of its runs' values) and
//!   `start << 6 | bit_width`, `start` the word where the tile's data begins in the data area;
//! - zero words up to the next multiple of 32 words;
//! - per tile, at its `start`: 16 flag words (bit `l` of word `i` set iff row `32 i + l` starts
//!   a run; row 0 always does, rows past `n` never), then the `r` runs' values (`r` the flags
//!   set), run `j`'s `value - reference` at bits `j * bit_width ..` of these words, low bits
//!   first, in `ceil(r * bit_width / 32)` words.
//!
//! A run that crosses a tile edge is counted in both tiles. Row `p` of a tile is run
//! `popcount(flag bits of rows 0..=p) - 1`.

use tessera_format::{Error, Result};

/// Values a tile holds (a warp's 32 lanes, 16 rows each).
pub const TILE_VALUES: usize = 512;
/// Rows a lane holds in a tile.
const LANE_ROWS: usize = 16;
/// The largest `start` the tile table's word holds (26 bits).
const MAX_START: u64 = (1 << 26) - 1;

/// One chunk in the lane layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneChunk {
    /// The chunk's words: tile table, padding, data area.
    pub words: Vec<u32>,
    /// The smallest and largest bit_width of its tiles (`(0, 0)` for no tiles).
    pub widths: (u32, u32),
}

/// Where the data area of a chunk of `tiles` tiles starts, in words.
pub fn data_start(tiles: usize) -> usize {
    (2 * tiles).next_multiple_of(32)
}

fn bit_width(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// The frame of reference of `values`: their minimum and the bit_width of their range.
fn frame(values: &[u32]) -> (u32, u32) {
    let min = values.iter().copied().min().unwrap_or(0);
    let max = values.iter().copied().max().unwrap_or(0);
    (min, bit_width(max - min))
}

/// A tile table's second word, `start << 6 | bit_width`; `layout` names the layout in the
/// error for a start that does not fit.
fn table_word(start: u64, w: u32, layout: &str) -> Result<u32> {
    if start > MAX_START {
        return Err(Error::InvalidArgument(format!(
            "chunk too large for the {layout}"
        )));
    }
    Ok(((start as u32) << 6) | w)
}

/// The smallest and largest of the tiles' bit_widths (`(0, 0)` for none).
fn width_range(ws: impl Iterator<Item = u32>) -> (u32, u32) {
    ws.fold(None, |acc: Option<(u32, u32)>, w| {
        Some(acc.map_or((w, w), |(lo, hi)| (lo.min(w), hi.max(w))))
    })
    .unwrap_or((0, 0))
}

/// Ors `v` (at most `w` bits) into a bit stream at bit `bit`, low bits first; word `k` of the
/// stream is `words[at(k)]`.
fn put_bits(words: &mut [u32], at: impl Fn(usize) -> usize, bit: u64, v: u32, w: u32) {
    let (k, sh) = ((bit / 32) as usize, bit % 32);
    let both = (v as u64) << sh;
    words[at(k)] |= both as u32;
    if sh + w as u64 > 32 {
        words[at(k + 1)] |= (both >> 32) as u32;
    }
}

/// The `w` bits of a bit stream at bit `bit`; `word(k)` is word `k` of the stream.
fn get_bits(word: impl Fn(usize) -> u64, bit: u64, w: u32) -> u32 {
    let k = (bit / 32) as usize;
    let both = (word(k) | word(k + 1) << 32) >> (bit % 32);
    let mask = if w == 32 { u32::MAX } else { (1u32 << w) - 1 };
    both as u32 & mask
}

/// A chunk of `n` values' tile count and data start, the tile table checked to lie inside
/// `words`; `bad` makes the layout's error.
fn tile_table(words: &[u32], n: usize, bad: impl Fn(&str) -> Error) -> Result<(usize, usize)> {
    let tiles = n.div_ceil(TILE_VALUES);
    let data = data_start(tiles);
    if words.len() < data {
        return Err(bad("tile table past the chunk"));
    }
    Ok((tiles, data))
}

/// Tile `t`'s table entry: (reference, bit_width, start).
fn tile_entry(words: &[u32], t: usize) -> (u32, u32, usize) {
    let m = words[2 * t + 1];
    (words[2 * t], m & 63, (m >> 6) as usize)
}

/// Lays `values` out in the lane layout.
pub fn encode(values: &[u32]) -> Result<LaneChunk> {
    let tiles = values.len().div_ceil(TILE_VALUES);
    let mut meta = Vec::with_capacity(tiles);
    let mut start = 0u64; // in 16-bit units
    for tile in values.chunks(TILE_VALUES) {
        let (min, w) = frame(tile);
        meta.push((min, table_word(start, w, "lane layout")?, start, w));
        start += w as u64;
    }
    // Every lane's stream holds `16 * start` bits.
    let lane_words = (start * 16).div_ceil(32) as usize;
    let data = data_start(tiles);
    let mut words = vec![0u32; data + 32 * lane_words];
    for (t, &(reference, entry, s, w)) in meta.iter().enumerate() {
        words[2 * t] = reference;
        words[2 * t + 1] = entry;
        if w == 0 {
            continue;
        }
        let tile = &values[t * TILE_VALUES..((t + 1) * TILE_VALUES).min(values.len())];
        for lane in 0..32 {
            for i in 0..LANE_ROWS {
                let packed = tile.get(32 * i + lane).map_or(0, |&v| v - reference);
                let bit = 16 * s + (i as u64) * w as u64;
                put_bits(&mut words, |k| data + 32 * k + lane, bit, packed, w);
            }
        }
    }
    Ok(LaneChunk {
        words,
        widths: width_range(meta.iter().map(|m| m.3)),
    })
}

/// Reads a chunk of `n` values back from the lane layout, with the checks the kernel makes
/// (the reference for tests and for the layout's spec).
pub fn decode(words: &[u32], n: usize) -> Result<Vec<u32>> {
    let bad = |what: &str| Error::InvalidArgument(format!("lane layout: {what}"));
    let (tiles, data) = tile_table(words, n, bad)?;
    let mut out = Vec::with_capacity(n);
    for t in 0..tiles {
        let (reference, w, start) = tile_entry(words, t);
        if w > 32 {
            return Err(bad("bit_width over 32"));
        }
        let (first, half) = (start / 2, start % 2 == 1);
        let need = (16 * half as usize + 16 * w as usize).div_ceil(32);
        if data + 32 * (first + need) > words.len() {
            return Err(bad("tile past the chunk"));
        }
        let rows = (n - t * TILE_VALUES).min(TILE_VALUES);
        let mut tile = vec![0u32; TILE_VALUES];
        for lane in 0..32 {
            let word = |k: usize| -> u64 {
                if k < need {
                    words[data + 32 * (first + k) + lane] as u64
                } else {
                    0
                }
            };
            for i in 0..LANE_ROWS {
                let bit = 16 * half as u64 + (i as u64) * w as u64;
                tile[32 * i + lane] = reference.wrapping_add(get_bits(word, bit, w));
            }
        }
        out.extend_from_slice(&tile[..rows]);
    }
    Ok(out)
}

/// Words of a tile's run-start data before its values (the flag words).
pub const FLAG_WORDS: usize = TILE_VALUES / 32;

/// Lays `values` out in the run-start layout.
pub fn encode_runs(values: &[u32]) -> Result<LaneChunk> {
    let tiles = values.len().div_ceil(TILE_VALUES);
    let data = data_start(tiles);
    let mut words = vec![0u32; data];
    let mut ws = Vec::with_capacity(tiles);
    for (t, tile) in values.chunks(TILE_VALUES).enumerate() {
        let mut flags = [0u32; FLAG_WORDS];
        let mut runs = Vec::new();
        for (p, &v) in tile.iter().enumerate() {
            if p == 0 || tile[p - 1] != v {
                flags[p / 32] |= 1 << (p % 32);
                runs.push(v);
            }
        }
        let (min, w) = frame(&runs);
        words[2 * t] = min;
        words[2 * t + 1] = table_word((words.len() - data) as u64, w, "run-start layout")?;
        ws.push(w);
        words.extend_from_slice(&flags);
        let at = words.len();
        words.resize(at + (runs.len() * w as usize).div_ceil(32), 0);
        for (j, &v) in runs.iter().enumerate().filter(|_| w > 0) {
            put_bits(&mut words, |k| at + k, (j * w as usize) as u64, v - min, w);
        }
    }
    Ok(LaneChunk {
        words,
        widths: width_range(ws.into_iter()),
    })
}

/// Reads a chunk of `n` values back from the run-start layout, with the kernel's checks.
pub fn decode_runs(words: &[u32], n: usize) -> Result<Vec<u32>> {
    let bad = |what: &str| Error::InvalidArgument(format!("run-start layout: {what}"));
    let (tiles, data) = tile_table(words, n, bad)?;
    let mut out = Vec::with_capacity(n);
    for t in 0..tiles {
        let (reference, w, start) = tile_entry(words, t);
        let at = data + start;
        if w > 32 || at + FLAG_WORDS > words.len() {
            return Err(bad("bit_width over 32 or flags past the chunk"));
        }
        let flags = &words[at..at + FLAG_WORDS];
        let r: usize = flags.iter().map(|f| f.count_ones() as usize).sum();
        let vals = at + FLAG_WORDS;
        let nw = (r * w as usize).div_ceil(32);
        if flags[0] & 1 == 0 || vals + nw > words.len() {
            return Err(bad("row 0 starts no run, or values past the chunk"));
        }
        let rows = (n - t * TILE_VALUES).min(TILE_VALUES);
        let word = |i: usize| words[vals + i.min(nw.max(1) - 1)] as u64;
        let mut run = 0usize;
        for p in 0..rows {
            run += (flags[p / 32] >> (p % 32) & 1) as usize;
            let raw = if w == 0 {
                0
            } else {
                get_bits(word, ((run - 1) * w as usize) as u64, w)
            };
            out.push(reference.wrapping_add(raw));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as u32
    }

    /// Tiles of every bit_width 0..=32 in a row (so tiles start on word edges and half-way),
    /// and a last tile that is partial.
    #[test]
    fn every_bit_width_round_trips() {
        let mut seed = 7u64;
        let mut values = Vec::new();
        for w in (0..=32u32).chain([5, 17, 32, 0, 1]) {
            let base = lcg(&mut seed) >> 4;
            for j in 0..TILE_VALUES {
                let r = if w == 0 {
                    0
                } else if w == 32 {
                    lcg(&mut seed) | (lcg(&mut seed) << 31)
                } else {
                    lcg(&mut seed) & ((1u32 << w) - 1)
                };
                // Force the tile's range to exactly w bits.
                let r = match (w, j) {
                    (0, _) => 0,
                    (32, 0) => 0,
                    (32, 1) => u32::MAX,
                    (_, 0) => 0,
                    (_, 1) => (1u32 << w) - 1,
                    _ => r,
                };
                values.push(if w == 32 { r } else { base.wrapping_add(r) });
            }
        }
        values.truncate(values.len() - 300);
        let c = encode(&values).expect("round trip");
        assert_eq!(c.widths, (0, 32));
        let tiles = values.len().div_ceil(TILE_VALUES);
        let ws: Vec<u32> = (0..tiles).map(|t| c.words[2 * t + 1] & 63).collect();
        assert_eq!(&ws[..33], &(0..=32).collect::<Vec<_>>()[..]);
        // Some tile starts half-way into a word.
        assert!((0..tiles).any(|t| (c.words[2 * t + 1] >> 6) % 2 == 1));
        assert_eq!(decode(&c.words, values.len()).expect("round trip"), values);
    }

    #[test]
    fn lane_owns_rows_32i_plus_l() {
        // One tile of width 4: lane 3's stream holds rows 3, 35, 67, ... in order.
        let values: Vec<u32> = (0..TILE_VALUES as u32).map(|r| 100 + (r % 16)).collect();
        let c = encode(&values).expect("round trip");
        assert_eq!(c.words[0], 100);
        assert_eq!(c.words[1], 4);
        let data = data_start(1);
        let lane3 = c.words[data + 3] as u64 | (c.words[data + 32 + 3] as u64) << 32;
        for i in 0..16 {
            assert_eq!((lane3 >> (4 * i)) & 15, ((32 * i + 3) % 16) as u64);
        }
        assert_eq!(c.words.len(), data + 32 * 2);
    }

    #[test]
    fn empty_and_hostile_chunks() {
        let c = encode(&[]).expect("round trip");
        assert!(c.words.is_empty());
        assert_eq!(decode(&c.words, 0).expect("round trip"), Vec::<u32>::new());
        let values: Vec<u32> = (0..1000).collect();
        let c = encode(&values).expect("round trip");
        // A width over 32, a start past the data, a chunk cut short: errors, never a panic.
        let mut w = c.words.clone();
        w[1] = (w[1] & !63) | 33;
        assert!(decode(&w, 1000).is_err());
        let mut w = c.words.clone();
        w[3] = (1000 << 6) | (w[3] & 63);
        assert!(decode(&w, 1000).is_err());
        assert!(decode(&c.words[..c.words.len() - 1], 1000).is_err());
        assert!(decode(&c.words[..10], 1000).is_err());
    }

    /// Runs of 1 to 9 rows (some crossing tile edges), tiles of one run, of no repeats, of
    /// width 0 and 32, and a partial last tile.
    #[test]
    fn runs_round_trip() {
        let mut seed = 11u64;
        let mut values = Vec::new();
        while values.len() < 5 * TILE_VALUES {
            let v = lcg(&mut seed) % 70_000;
            let len = 1 + lcg(&mut seed) as usize % 9;
            values.extend(std::iter::repeat_n(19_920_101 + v, len));
        }
        values.truncate(5 * TILE_VALUES);
        values.extend(std::iter::repeat_n(7u32, TILE_VALUES)); // one run, width 0
        values.extend((0..TILE_VALUES as u32).map(|r| r * 3)); // no repeats
        values.extend((0..TILE_VALUES as u32).map(|r| if r % 2 == 0 { 0 } else { u32::MAX }));
        values.extend([5, 5, 6]);
        let c = encode_runs(&values).expect("round trip");
        assert_eq!(c.widths.0, 0);
        assert_eq!(c.widths.1, 32);
        assert_eq!(
            decode_runs(&c.words, values.len()).expect("round trip"),
            values
        );
        // The one-run tile: one flag, no value words.
        let t = 5;
        let data = data_start(values.len().div_ceil(TILE_VALUES));
        let at = data + (c.words[2 * t + 1] >> 6) as usize;
        assert_eq!(c.words[2 * t + 1] & 63, 0);
        assert_eq!(c.words[at], 1);
        assert!(c.words[at + 1..at + FLAG_WORDS].iter().all(|&f| f == 0));
        // A hostile table: errors, never a panic.
        let mut w = c.words.clone();
        w[1] = (w[1] & !63) | 33;
        assert!(decode_runs(&w, values.len()).is_err());
        let mut w = c.words.clone();
        w[data] = 0; // tile 0's row 0 starts no run
        assert!(decode_runs(&w, values.len()).is_err());
        assert!(decode_runs(&c.words[..c.words.len() - 1], values.len()).is_err());
    }

    #[test]
    fn footprint_is_the_bits_and_two_words_a_tile() {
        // Widths 10 and 7: 16 * 17 bits a lane = 8.5 words, rounded up to 9.
        let mut values: Vec<u32> = (0..TILE_VALUES as u32).map(|r| 2 * r).collect();
        values.extend((0..TILE_VALUES as u32).map(|r| r % 128));
        let c = encode(&values).expect("round trip");
        assert_eq!(c.words.len(), data_start(2) + 32 * 9);
        assert_eq!(decode(&c.words, values.len()).expect("round trip"), values);
    }
}
