//! Tile-at-a-time CPU decoding of lane-32 GPU-FOR, GPU-DFOR and GPU-RFOR chunks
//! (`docs/format/{int-common,for,dfor,rfor}.md`), the CPU twin of the GPU's `LoadBitPack`,
//! `LoadDBitPack` and `LoadRBitPack`: each call of [`TileReader::next_tile`] fills a caller's
//! 512-value buffer with the next tile (FOR: 4 blocks; DFOR: one delta tile; RFOR: one block).
//!
//! Invariants: [`TileReader::new`] checks the header and every `block_starts` entry (non-
//! decreasing, inside the data area, ending exactly at it), so afterwards each block's word range
//! is in bounds; a block's metadata (bit widths, sizes, run counts) is checked before any of its
//! bits is read, and every read goes through `Words::bits`, which is bounds-checked.

use tessera_format::{CodecId, Error, Result, MAX_CHUNK_VALUES};

/// Values per tile, for every codec.
pub const TILE_VALUES: usize = 512;

/// One chunk of a column.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    pub codec: CodecId,
    pub payload: &'a [u8],
    pub value_count: u32,
}

/// A payload seen as little-endian words.
#[derive(Debug, Clone, Copy)]
struct Words<'a>(&'a [u8]);

impl Words<'_> {
    fn len(&self) -> usize {
        self.0.len() / 4
    }
    fn get(&self, i: usize) -> u32 {
        let b = &self.0[4 * i..4 * i + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    /// `bw` bits at bit `bit` of words `[start, start + len)` (bits past the range read as 0;
    /// callers have checked the range holds them).
    fn bits(&self, start: usize, len: usize, bit: usize, bw: u32) -> u32 {
        if bw == 0 {
            return 0;
        }
        let i = bit / 32;
        let s = bit % 32;
        let w = |k: usize| {
            if k < len {
                self.get(start + k) as u64
            } else {
                0
            }
        };
        let v = (w(i) | (w(i + 1) << 32)) >> s;
        (v & ((1u64 << bw) - 1)) as u32
    }
}

/// Reads a chunk tile by tile.
#[derive(Debug)]
pub struct TileReader<'a> {
    codec: CodecId,
    words: Words<'a>,
    total: usize,
    block_count: usize,
    /// Word index of the data area.
    data: usize,
    next: usize,
}

impl<'a> TileReader<'a> {
    /// Checks the chunk's header and block_starts (int-common §1, §3, §4).
    pub fn new(chunk: &Chunk<'a>) -> Result<TileReader<'a>> {
        let p = chunk.payload;
        // These matches stay rather than go through the codec registry: a tile reader is a
        // decoder of its own, one per block layout (the CPU twin of the GPU's tile loaders),
        // and only the three FOR-family layouts have one.
        let (block_size, miniblocks, tile_blocks, lead) = match chunk.codec {
            CodecId::For => (128, 4, 1, 0),
            CodecId::Dfor => (128, 4, 4, 1),
            CodecId::Rfor => (512, 16, 1, 0),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "{} has no tile reader",
                    other.name()
                )))
            }
        };
        if p.len() % 4 != 0 {
            return Err(Error::Misaligned {
                len: p.len() as u64,
            });
        }
        if p.len() < 16 {
            return Err(Error::truncated("chunk header", 0, 16, p.len()));
        }
        let words = Words(p);
        for (i, name, expected) in [
            (0, "block_size", block_size),
            (1, "miniblock_count", miniblocks),
            (3, "tile_blocks", tile_blocks),
        ] {
            let found = words.get(i);
            if found != expected {
                return Err(Error::InvalidHeader {
                    field: name,
                    offset: 4 * i as u64,
                    expected: expected.to_string(),
                    found: found as u64,
                });
            }
        }
        let total = words.get(2);
        if total > MAX_CHUNK_VALUES {
            return Err(Error::InvalidHeader {
                field: "total_count",
                offset: 8,
                expected: format!("<= {MAX_CHUNK_VALUES}"),
                found: total as u64,
            });
        }
        if total != chunk.value_count {
            return Err(Error::CountMismatch {
                what: "chunk header total_count vs directory value count",
                expected: chunk.value_count as u64,
                found: total as u64,
            });
        }
        let block_count = (total as usize).div_ceil(block_size as usize);
        let data = 4 + block_count + 1;
        if words.len() < data {
            return Err(Error::truncated(
                "block_starts",
                16,
                4 * (block_count + 1),
                p.len() - 16,
            ));
        }
        let data_len = (words.len() - data) as u64;
        // block_starts[block_count] against the data area first, then every entry.
        let end = words.get(4 + block_count) as u64;
        if end > data_len {
            return Err(Error::Truncated {
                what: "data area (block_starts[block_count])",
                offset: 4 * data as u64,
                needed: 4 * end,
                available: 4 * data_len,
            });
        }
        if end < data_len {
            return Err(Error::TrailingBytes {
                what: "data area (block_starts[block_count])",
                offset: 4 * (data as u64 + end),
                count: 4 * (data_len - end),
            });
        }
        let mut prev = if block_count > 0 { lead } else { 0 };
        for k in 0..=block_count {
            let found = words.get(4 + k) as u64;
            if found < prev || found > end {
                return Err(Error::BlockStartOutOfRange {
                    block: k as u64,
                    found,
                    min: prev,
                    max: end,
                });
            }
            prev = found;
        }
        Ok(TileReader {
            codec: chunk.codec,
            words,
            total: total as usize,
            block_count,
            data,
            next: 0,
        })
    }

    /// Block k's word range in the payload.
    fn block(&self, k: usize) -> (usize, usize) {
        (
            self.data + self.words.get(4 + k) as usize,
            self.data + self.words.get(4 + k + 1) as usize,
        )
    }

    /// Decodes the next tile into `out`; returns its value count, or `None` at the end.
    pub fn next_tile(&mut self, out: &mut [u32; TILE_VALUES]) -> Result<Option<usize>> {
        let first = self.next * TILE_VALUES;
        if first >= self.total {
            return Ok(None);
        }
        let n = (self.total - first).min(TILE_VALUES);
        match self.codec {
            CodecId::Rfor => self.rfor_block(self.next, n, out)?,
            codec => {
                let k0 = 4 * self.next;
                let mut acc = 0u32;
                if codec == CodecId::Dfor {
                    let (s, _) = self.block(k0);
                    acc = self.words.get(s - 1); // block_starts >= 1 was checked
                }
                for j in 0..n.div_ceil(128) {
                    let k = k0 + j;
                    let (s, mut e) = self.block(k);
                    if codec == CodecId::Dfor && j == 3 && k + 1 < self.block_count {
                        e = s.max(e.saturating_sub(1)); // the next tile's first_value
                    }
                    let vals = &mut out[128 * j..(128 * j + 128).min(n)];
                    self.for_block(codec, k, s, e, vals)?;
                    if codec == CodecId::Dfor {
                        for v in vals.iter_mut() {
                            acc = acc.wrapping_add(*v);
                            *v = acc;
                        }
                    }
                }
            }
        }
        self.next += 1;
        Ok(Some(n))
    }

    fn truncated(&self, codec: CodecId, s: usize, needed: usize, e: usize) -> Error {
        let what = match codec {
            CodecId::Dfor => "dfor block",
            CodecId::Rfor => "rfor block",
            _ => "for block",
        };
        Error::truncated(what, 4 * s, 4 * needed, 4 * (e - s))
    }

    /// for.md: reference, bit-width word, 4 miniblocks; `out` gets the block's real values.
    fn for_block(
        &self,
        codec: CodecId,
        k: usize,
        s: usize,
        e: usize,
        out: &mut [u32],
    ) -> Result<()> {
        if e - s < 2 {
            return Err(self.truncated(codec, s, 2, e));
        }
        let reference = self.words.get(s);
        let bw_word = self.words.get(s + 1);
        let mut size = 2;
        for j in 0..4 {
            let bw = (bw_word >> (8 * j)) & 0xff;
            if bw > 32 {
                return Err(Error::BitWidthTooLarge {
                    block: k as u64,
                    miniblock: j as u32,
                    found: bw,
                    max: 32,
                });
            }
            size += bw as usize;
        }
        if e - s < size {
            return Err(self.truncated(codec, s, size, e));
        }
        let mut at = s + 2;
        for (j, mb) in out.chunks_mut(32).enumerate() {
            let bw = (bw_word >> (8 * j)) & 0xff;
            for (i, v) in mb.iter_mut().enumerate() {
                *v = reference.wrapping_add(self.words.bits(at, bw as usize, i * bw as usize, bw));
            }
            at += bw as usize;
        }
        Ok(())
    }

    /// rfor.md: one block of `n` values.
    fn rfor_block(&self, k: usize, n: usize, out: &mut [u32; TILE_VALUES]) -> Result<()> {
        let (s, e) = self.block(k);
        if e - s < 2 {
            return Err(self.truncated(CodecId::Rfor, s, 2, e));
        }
        let value_ref = self.words.get(s);
        let run_word = self.words.get(s + 1);
        let (r, length_ref) = ((run_word & 0xffff) as usize, run_word >> 16);
        let bad = |field, found: u64| Error::InvalidHeader {
            field,
            offset: 4 * (s as u64 + 1),
            expected: "1..=512".into(),
            found,
        };
        if r == 0 || r > 512 {
            return Err(bad("rfor run count", r as u64));
        }
        if length_ref == 0 || length_ref > 512 {
            return Err(bad("rfor length_reference", length_ref as u64));
        }
        let m = r.div_ceil(32);
        let head = 2 + (2 * m).div_ceil(4);
        if e - s < head {
            return Err(self.truncated(CodecId::Rfor, s, head, e));
        }
        let last = r - 32 * (m - 1);
        let mut widths = [0u32; 32];
        let mut starts = [0usize; 32];
        let mut size = head;
        for (i, w) in widths.iter_mut().enumerate().take(2 * m) {
            *w = (self.words.get(s + 2 + i / 4) >> (8 * (i % 4))) & 0xff;
            let max = if i < m { 32 } else { 10 };
            if *w > max {
                return Err(Error::BitWidthTooLarge {
                    block: k as u64,
                    miniblock: i as u32,
                    found: *w,
                    max,
                });
            }
            starts[i] = s + size;
            let entries = if i % m + 1 == m { last } else { 32 };
            size += (entries * *w as usize).div_ceil(32);
        }
        if e - s < size {
            return Err(self.truncated(CodecId::Rfor, s, size, e));
        }
        let entry = |array: usize, i: usize| {
            let mb = array * m + i / 32;
            let bw = widths[mb];
            let entries = if mb % m + 1 == m { last } else { 32 };
            self.words.bits(
                starts[mb],
                (entries * bw as usize).div_ceil(32),
                (i % 32) * bw as usize,
                bw,
            )
        };
        let mut pos = 0usize;
        let mut lengths = [0u32; 512];
        for (i, len) in lengths.iter_mut().enumerate().take(r) {
            *len = length_ref.wrapping_add(entry(1, i));
            if *len == 0 || *len > 512 {
                return Err(Error::InvalidHeader {
                    field: "rfor run length",
                    offset: 4 * s as u64,
                    expected: "1..=512".into(),
                    found: *len as u64,
                });
            }
            pos += *len as usize;
        }
        if pos != n {
            return Err(Error::CountMismatch {
                what: "rfor run lengths sum vs block value count",
                expected: n as u64,
                found: pos as u64,
            });
        }
        let mut at = 0;
        for (i, &len) in lengths.iter().enumerate().take(r) {
            let v = value_ref.wrapping_add(entry(0, i));
            out[at..at + len as usize].fill(v);
            at += len as usize;
        }
        Ok(())
    }
}
