//! WAH / PLWAH compressed bitmaps on the GPU (`kernels/bitmap/`, `docs/format/wah.md` "GPU
//! notes"), word for word what `tessera_codecs::bitmap` writes on the CPU. By operation:
//! `compress.rs`, `decompress.rs`, `convert.rs`, `ops.rs` (binary operations, cardinality), over
//! `writer.rs` (the canonical writer the conversions and the merge-path operations share) and
//! this module (device bitmaps, upload with validation, download).
//!
//! - [`compress`]: the paper's Algorithms 1, 2 and 4 by *heads*: each group decides from itself
//!   and the group before it whether it starts a word; a tile reduce, a one-block scan (word
//!   offsets, and by suffix-min where every fill run ends), and an apply that reads only the
//!   units of 32 groups that are not one fill (`kernels/bitmap/compress.cuh`, "compression by
//!   heads").
//!   The former path through the general canonical writer is kept as a cross-check
//!   (`bench_hooks::bitmap::compress_device_writer`).
//! - [`decompress`]: Algorithm 5, output-partitioned: each decode tile stages the words covering
//!   its groups in shared memory, found from its *tile start* (the word covering its first group),
//!   and each thread expands 32 groups (`kernels/bitmap/decompress.cuh`, "decompression"). A
//!   bitmap the GPU compressed carries its tile starts ([`DeviceBitmap::tile_starts`]: the
//!   compressor writes them on the way), so its decompression reads the compressed words once. [`upload`] and
//!   [`upload_payload`] compute them once, from chunk sums of the group counts (one more read of
//!   the words, where the PCIe transfer costs far more); a bitmap without them (the merge path's
//!   results) gets them the same way before each decompression.
//! - [`to_wah`] / [`convert`]: Algorithm 6, through the same writer, so fills longer than the
//!   PLWAH counter merge into one WAH fill_word as on the CPU.
//! - [`binary`]: AND / OR / XOR / AND-NOT on the compressed words: merge path over the two
//!   slot-ends sequences, each merged item one element of the result, then the writer (better
//!   than Algorithm 7, which materializes merged, pair and counter arrays and scans them three
//!   more times). Two launches and one wait ([`binary_device`]): both operands' slot ends, then
//!   the merge and the writer, each a single pass with a decoupled look-back; PLWAH results
//!   with fills longer than the counter add a fix-up launch.
//!   Operands with at least one word per 6 groups take the fused path instead
//!   (`bench_hooks::bitmap::binary_device_fused` alone): one block per tile decodes both
//!   operands' tile from their tile
//!   starts, operates on the plain words in registers and shared memory, and compresses the
//!   result with the compressor's tile code; nothing plain reaches global memory.
//! - [`count_ones`], and `*_device` variants that keep everything on the GPU.
//!
//! Hostile input: a payload's header is checked on the CPU ([`bitmap::payload_bit_len`]); the
//! words go
//! to the GPU, where `bm_slots_reduce_*` flags the first fill_word with counter 0 and sums the
//! group counts in u64; the host compares the sum with `ceil(bit_len / 31)` and checks the last
//! group's padding (one word). On any failure the CPU decoder is run on the payload and its
//! exact `Error` returned. Only validated streams become a [`DeviceBitmap`], and only those reach
//! the decoders and writers (which still bound every read by the lengths they are given).
//!
//! Why merged items are the result's elements: let `ea`, `eb` be the inclusive sums of the slot
//! counts (sorted; a value repeats only for PLWAH's empty position slots). Merging them (a first
//! on ties) gives the union of run boundaries; item k with value e_k and predecessor e_{k-1}
//! spans groups [e_{k-1}, e_k). If that span is not empty, the next unmerged slot of a (index
//! ia) is the one covering it: every merged slot of a ends at or before e_{k-1} < e_k, and
//! `ea[ia] >= e_k` (it is e_k itself when item k comes from a; else b's item e_k won the comparison
//! strictly). The same holds for b. So item k is the element (op(va, vb), e_k - e_{k-1}).

use cudarc::driver::CudaSlice;
use tessera_codecs::bitmap::{self, group_count, last_group_mask, Bitmap, Flavor};
use tessera_format::{Error, Result};

use crate::kernels::Module;
use crate::primitives::scan;
use crate::runtime::{cuda, Gpu};

pub(crate) mod compress;
pub(crate) mod convert;
pub(crate) mod decompress;
pub(crate) mod ops;
mod writer;

pub use compress::{
    compress, compress_device, compress_device_queued, extend_device, PendingBitmap,
};
pub use convert::{convert, convert_device, to_wah};
pub use decompress::{decompress, decompress_bitmap, decompress_device, decompress_device_into};
pub use ops::{binary, binary_device, count_ones, count_ones_device, plain_op_device};

/// Groups of 31 bits (`wah.md` §2); `BM_GROUP_BITS`.
pub const GROUP_BITS: u64 = 31;
/// `BM_WRITER_THREADS` x `BM_WRITER_ITEMS`: elements per writer tile.
pub const WRITER_THREADS: u32 = 128;
pub const WRITER_ITEMS: u64 = 16;
pub const WRITER_TILE: u64 = WRITER_THREADS as u64 * WRITER_ITEMS;
/// `BM_DECODE_THREADS` x `BM_DECODE_GROUPS`: groups per decompression tile.
pub const DECODE_THREADS: u32 = 128;
pub const DECODE_GROUPS: u64 = 32;
pub const DECODE_TILE: u64 = DECODE_THREADS as u64 * DECODE_GROUPS;
/// `BM_DEC_CHUNK`: words per decompression chunk; `BM_DEC_SUM_THREADS` x `BM_DEC_SUM_CHUNKS`:
/// the chunk-sum pass's thread block and the chunks it sums.
pub const DEC_CHUNK: u64 = 128;
pub const DEC_SUM_THREADS: u32 = 256;
pub const DEC_SUM_CHUNKS: u64 = 32;
/// Compression by heads (`BM_CMP_*`): a tile of `CMP_THREADS` units of 32 groups.
pub const CMP_THREADS: u32 = 128;
/// The compression kernel's block: the tile's `CMP_THREADS` unit threads and its look-back warp
/// (`BM_CMP_BLOCK`).
const CMP_BLOCK: u32 = CMP_THREADS + 32;
pub const CMP_TILE: u64 = CMP_THREADS as u64 * 32;
pub const CMP_TILE_WORDS: u64 = CMP_TILE / 32 * GROUP_BITS;
/// `BM_FIXUP_CAP`: most overflowing blocks `bm_overflow_fixup` takes (the list it sorts).
pub const FIXUP_CAP: u32 = 1024;
/// `BM_FIXUP_THREADS`.
pub const FIXUP_THREADS: u32 = 256;
/// Word layout constants of `wah.cuh` (checked against `tessera_codecs` and the header).
pub const FILL_FLAG: u32 = 0x8000_0000;
pub const FILL_BIT: u32 = 0x4000_0000;
pub const WAH_COUNTER_MASK: u32 = 0x3FFF_FFFF;
pub const PLWAH_COUNTER_MASK: u32 = 0x01FF_FFFF;
pub const PLWAH_POSITION_SHIFT: u32 = 25;
/// Threads of the grid-stride kernels (`bm_extend`, `bm_scatter_fills`, `bm_plain_op`) and of
/// `bm_dec_tile_starts` (8 warps, one per tile).
const STRIDE_THREADS: u32 = 256;

const STATUS_OK: u64 = u64::MAX;

/// A plain bitmap on the device: `bit_len` bits packed into u32 words (bit i = bit i % 32 of
/// word i / 32), `ceil(bit_len / 32)` words used.
#[derive(Debug)]
pub struct DevicePlain {
    pub words: CudaSlice<u32>,
    pub bit_len: u64,
}

impl DevicePlain {
    /// Words used: `ceil(bit_len / 32)`.
    pub fn word_count(&self) -> usize {
        self.bit_len.div_ceil(32) as usize
    }
}

/// A valid compressed bitmap on the device (validated on upload, or written by a GPU writer).
#[derive(Debug)]
pub struct DeviceBitmap {
    pub flavor: Flavor,
    pub bit_len: u64,
    /// The words; `len` of them are used.
    pub words: CudaSlice<u32>,
    pub len: usize,
    /// Decompression's directory (written by a GPU compressor or fused operation, computed by
    /// the uploads): for each decode tile b of
    /// [`DECODE_TILE`] groups, entry `2b` = the index of the word covering group `b * DECODE_TILE`
    /// and entry `2b + 1` = the group that word starts at; then the end entry `(len, groups)`
    /// (`2 * (tiles + 1)` u32s). `None`: [`decompress_device`] computes them (one more pass over
    /// the words). Wrong entries only give wrong output (flagged by
    /// [`crate::bench_hooks::bitmap::decompress_device_checked`]), never an access out of bounds.
    pub tile_starts: Option<CudaSlice<u32>>,
}

impl DeviceBitmap {
    fn slots(&self) -> u64 {
        match self.flavor {
            Flavor::Wah => self.len as u64,
            Flavor::Plwah => 2 * self.len as u64,
        }
    }
    /// Payload bytes on the CPU (`wah.md` §3).
    pub fn payload_bytes(&self) -> u64 {
        bitmap::HEADER_BYTES as u64 + 4 * self.len as u64
    }
}

fn flavor_name(f: Flavor) -> &'static str {
    match f {
        Flavor::Wah => "wah",
        Flavor::Plwah => "plwah",
    }
}

fn grid(n: u64, per_block: u64) -> Result<u32> {
    u32::try_from(n.div_ceil(per_block).max(1))
        .map_err(|_| Error::InvalidArgument("bitmap too large for one GPU launch".into()))
}

/// Copies `n` u32 words starting at word `at` of `src` to the host (synchronizes).
fn read_words(gpu: &Gpu, src: &CudaSlice<u32>, at: usize, n: usize) -> Result<Vec<u32>> {
    let mut out = vec![0u32; n];
    if n == 0 {
        return Ok(out);
    }
    let view = src.slice(at..at + n);
    let op = crate::runtime::trace::count(crate::runtime::trace::Op::DeviceToHost);
    gpu.stream
        .memcpy_dtoh(&view, &mut out)
        .map_err(cuda("copying from the device"))?;
    drop(op);
    gpu.synchronize()?;
    Ok(out)
}

fn read_u64(gpu: &Gpu, src: &CudaSlice<u64>, at: usize) -> Result<u64> {
    let mut out = [0u64];
    let view = src.slice(at..at + 1);
    let op = crate::runtime::trace::count(crate::runtime::trace::Op::DeviceToHost);
    gpu.stream
        .memcpy_dtoh(&view, &mut out)
        .map_err(cuda("copying from the device"))?;
    drop(op);
    gpu.synchronize()?;
    Ok(out[0])
}

/// The plain bitmap on the device, after the CPU's input checks (`Bitmap::compress`).
pub fn upload_plain(gpu: &Gpu, bits: &[u8], bit_len: u64) -> Result<DevicePlain> {
    if bit_len > bitmap::MAX_BITS || bits.len() as u64 != bit_len.div_ceil(8) {
        // The CPU's exact error (it checks before doing anything).
        return Err(Bitmap::compress(Flavor::Wah, bits, bit_len)
            .err()
            .unwrap_or_else(|| Error::InvalidArgument("bad bitmap input".into())));
    }
    let words = pack_words(bits, bit_len);
    Ok(DevicePlain {
        words: gpu.upload(&words)?,
        bit_len,
    })
}

/// Packed bytes to u32 words (little-endian), `ceil(bit_len / 32)` of them.
pub fn pack_words(bits: &[u8], bit_len: u64) -> Vec<u32> {
    let n = bit_len.div_ceil(32) as usize;
    let mut words = vec![0u32; n];
    for (w, c) in words.iter_mut().zip(bits.chunks(4)) {
        let mut b = [0u8; 4];
        b[..c.len()].copy_from_slice(c);
        *w = u32::from_le_bytes(b);
    }
    words
}

/// The plain bitmap back on the host: `ceil(bit_len / 8)` bytes.
pub fn download_plain(gpu: &Gpu, plain: &DevicePlain) -> Result<Vec<u8>> {
    let words = read_words(gpu, &plain.words, 0, plain.word_count())?;
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.truncate(plain.bit_len.div_ceil(8) as usize);
    Ok(out)
}

/// A valid CPU bitmap on the device (no validation needed), with its tile starts (queued).
pub fn upload(gpu: &Gpu, b: &Bitmap) -> Result<DeviceBitmap> {
    let mut d = DeviceBitmap {
        flavor: b.flavor(),
        bit_len: b.bit_len(),
        words: gpu.upload(b.words())?,
        len: b.words().len(),
        tile_starts: None,
    };
    attach_tile_starts(gpu, &mut d)?;
    Ok(d)
}

/// Gives a valid bitmap its tile starts (queued, not waited for): every later decompression
/// and fused operation on it then reads its words once. An upload pays this pass once (its
/// PCIe transfer costs far more) instead of every use paying it.
fn attach_tile_starts(gpu: &Gpu, d: &mut DeviceBitmap) -> Result<()> {
    if d.tile_starts.is_none() && group_count(d.bit_len) > 0 {
        d.tile_starts = Some(decompress::tile_starts_queue(gpu, d)?);
    }
    Ok(())
}

/// The words back on the host as a [`Bitmap`] (checked by `Bitmap::from_payload`: a GPU writer
/// that broke the format would show up as `Error::Gpu`).
pub fn download(gpu: &Gpu, d: &DeviceBitmap) -> Result<Bitmap> {
    let words = read_words(gpu, &d.words, 0, d.len)?;
    let mut payload = Vec::with_capacity(16 + 4 * words.len());
    payload.extend_from_slice(&d.bit_len.to_le_bytes());
    payload.extend_from_slice(&(words.len() as u32).to_le_bytes());
    payload.extend_from_slice(&0u32.to_le_bytes());
    for w in &words {
        payload.extend_from_slice(&w.to_le_bytes());
    }
    Bitmap::from_payload(d.flavor, &payload).map_err(|e| {
        Error::Gpu(format!(
            "GPU wrote an invalid {} stream: {e}",
            flavor_name(d.flavor)
        ))
    })
}

/// Slot ends of a stream on the device, its u64 group total and the first zero counter.
struct Ends {
    ends: CudaSlice<u32>,
    partials: CudaSlice<u64>,
    tiles: usize,
    status: CudaSlice<u64>,
}

fn slot_ends(gpu: &Gpu, d: &DeviceBitmap) -> Result<Ends> {
    let m = d.len as u64;
    let n = d.slots();
    let tiles = scan::tiles(n);
    let ends = gpu.alloc::<u32>(n as usize)?;
    let partials = gpu.alloc::<u64>(tiles as usize + 1)?;
    let status = gpu.alloc::<u64>(1)?;
    let (pw, pe, pp, ps) = (
        gpu.ptr(&d.words),
        gpu.ptr(&ends),
        gpu.ptr(&partials),
        gpu.ptr(&status),
    );
    gpu.fill_bytes_raw(ps, 0xFF, 8)?;
    let (reduce, apply) = match d.flavor {
        Flavor::Wah => ("bm_slots_reduce_wah", "bm_slots_apply_wah"),
        Flavor::Plwah => ("bm_slots_reduce_plwah", "bm_slots_apply_plwah"),
    };
    let f_r = gpu.function(Module::Bitmap, reduce)?;
    let f_a = gpu.function(Module::Bitmap, apply)?;
    let g = grid(n, scan::TILE)?;
    let count = tiles as u32;
    // SAFETY: matches bm_slots_reduce_<f>(words, m, partials, status) and bm_slots_apply_<f>(words,
    // m, partials, ends): `words` holds m words, `ends` the n = m or 2m slots, `partials` tiles +
    // 1 u64s, `status` one u64.
    unsafe {
        if n > 0 {
            gpu.launch(&f_r, g, scan::THREADS, &[&pw, &m, &pp, &ps])?;
        } else {
            gpu.fill_bytes_raw(pp, 0, 8)?;
        }
    }
    scan::partials(gpu, scan::Item::U64, pp, count)?;
    if n > 0 {
        // SAFETY: as above; the partials now hold each tile's prefix.
        unsafe { gpu.launch(&f_a, g, scan::THREADS, &[&pw, &m, &pp, &pe])? };
    }
    Ok(Ends {
        ends,
        partials,
        tiles: tiles as usize,
        status,
    })
}

/// The group the last word of a stream ends with (`wah.md` §5 step 6 looks at it).
fn last_group(flavor: Flavor, w: u32) -> u32 {
    match flavor.decode_word(w) {
        bitmap::Word::Literal(g) => g,
        bitmap::Word::Fill {
            fill_bit, position, ..
        } => {
            let fg = if fill_bit { bitmap::GROUP_ONES } else { 0 };
            if position != 0 {
                fg ^ (1 << (position - 1))
            } else {
                fg
            }
        }
    }
}

/// The CPU reference's error for a payload the GPU found bad.
fn cpu_error(flavor: Flavor, payload: &[u8]) -> Error {
    match Bitmap::from_payload(flavor, payload) {
        Err(e) => e,
        Ok(_) => Error::Gpu("GPU validation rejected a payload the CPU accepts".into()),
    }
}

/// Validates a payload (`wah.md` §5: header on the CPU, the words on the GPU) and leaves the
/// bitmap on the device. A bad payload gives the CPU decoder's exact error.
pub fn upload_payload(gpu: &Gpu, flavor: Flavor, payload: &[u8]) -> Result<DeviceBitmap> {
    let bit_len = bitmap::payload_bit_len(flavor, payload)?;
    let words: Vec<u32> = payload[bitmap::HEADER_BYTES..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let groups = group_count(bit_len);
    if words.is_empty() {
        return if groups == 0 {
            upload(gpu, &Bitmap::from_payload(flavor, payload)?)
        } else {
            Err(cpu_error(flavor, payload))
        };
    }
    let d = DeviceBitmap {
        flavor,
        bit_len,
        words: gpu.upload(&words)?,
        len: words.len(),
        tile_starts: None,
    };
    let e = slot_ends(gpu, &d)?;
    let status = read_u64(gpu, &e.status, 0)?;
    let total = read_u64(gpu, &e.partials, e.tiles)?;
    let last = last_group(flavor, words[words.len() - 1]);
    let padding_ok = groups == 0 || last & !last_group_mask(bit_len) == 0;
    if status != STATUS_OK || total != groups || !padding_ok {
        return Err(cpu_error(flavor, payload));
    }
    let mut d = d;
    attach_tile_starts(gpu, &mut d)?; // only once the words are known valid
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines() -> std::collections::HashMap<String, String> {
        let mut m = std::collections::HashMap::new();
        for h in [
            "bitmap/wah.cuh",
            "primitives/scan.cuh",
            "primitives/merge.cuh",
        ] {
            for line in crate::kernels::header(h).expect("embedded").lines() {
                let mut it = line.split_whitespace();
                if it.next() == Some("#define") {
                    if let (Some(k), Some(v)) = (it.next(), it.next()) {
                        m.insert(k.to_string(), v.to_string());
                    }
                }
            }
        }
        m
    }

    fn num(m: &std::collections::HashMap<String, String>, k: &str) -> u64 {
        let v = m.get(k).unwrap_or_else(|| panic!("{k} not defined"));
        let v = v.trim_end_matches('u');
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).expect("hex"),
            None => v.parse().expect("decimal"),
        }
    }

    #[test]
    fn host_constants_match_the_kernel_headers_and_the_cpu_codec() {
        let m = defines();
        assert_eq!(num(&m, "BM_GROUP_BITS"), GROUP_BITS);
        assert_eq!(num(&m, "BM_GROUP_ONES"), u64::from(bitmap::GROUP_ONES));
        assert_eq!(num(&m, "BM_FILL_FLAG"), u64::from(FILL_FLAG));
        assert_eq!(num(&m, "BM_FILL_BIT"), u64::from(FILL_BIT));
        assert_eq!(num(&m, "BM_WAH_COUNTER_MASK"), u64::from(WAH_COUNTER_MASK));
        assert_eq!(
            num(&m, "BM_PLWAH_COUNTER_MASK"),
            u64::from(PLWAH_COUNTER_MASK)
        );
        assert_eq!(
            num(&m, "BM_PLWAH_POSITION_SHIFT"),
            u64::from(PLWAH_POSITION_SHIFT)
        );
        assert_eq!(num(&m, "BM_WRITER_THREADS"), u64::from(WRITER_THREADS));
        assert_eq!(num(&m, "BM_WRITER_ITEMS"), WRITER_ITEMS);
        assert_eq!(num(&m, "BM_DECODE_THREADS"), u64::from(DECODE_THREADS));
        assert_eq!(num(&m, "BM_DECODE_GROUPS"), DECODE_GROUPS);
        assert_eq!(num(&m, "BM_DEC_CHUNK"), DEC_CHUNK);
        assert_eq!(num(&m, "BM_DEC_SUM_THREADS"), u64::from(DEC_SUM_THREADS));
        assert_eq!(num(&m, "BM_DEC_SUM_CHUNKS"), DEC_SUM_CHUNKS);
        // One 16-byte load per lane per chunk; each warp of the sum pass sums whole chunks.
        assert_eq!(DEC_CHUNK, 128);
        assert_eq!(DEC_SUM_CHUNKS % u64::from(DEC_SUM_THREADS / 32), 0);
        assert_eq!(
            DEC_SUM_CHUNKS, 32,
            "one warp scans a pass-1 block's chunk sums"
        );
        assert_eq!(num(&m, "BM_CMP_THREADS"), u64::from(CMP_THREADS));
        assert_eq!(num(&m, "BM_CMP_TILE"), CMP_TILE);
        assert_eq!(num(&m, "BM_CMP_TILE_WORDS"), CMP_TILE_WORDS);
        // The staged output (padded) and the staged input share one buffer.
        const { assert!(CMP_TILE_WORDS <= CMP_TILE + CMP_TILE / 32) };
        // A tile starts on a 16-byte boundary of the packed words (16-byte staging loads).
        assert_eq!((CMP_TILE_WORDS * 4) % 16, 0);
        assert_eq!(num(&m, "BM_FIXUP_CAP"), u64::from(FIXUP_CAP));
        assert_eq!(num(&m, "BM_FIXUP_THREADS"), u64::from(FIXUP_THREADS));
        assert_eq!(FILL_FLAG, bitmap::wah::FILL_FLAG);
        assert_eq!(FILL_BIT, bitmap::plwah::FILL_BIT);
        assert_eq!(WAH_COUNTER_MASK, bitmap::wah::COUNTER_MASK);
        assert_eq!(PLWAH_COUNTER_MASK, bitmap::plwah::COUNTER_MASK);
        assert_eq!(PLWAH_POSITION_SHIFT, bitmap::plwah::POSITION_SHIFT);
        // A writer tile of groups starts on a word: 32 groups are 31 words.
        assert_eq!(WRITER_TILE % 32, 0);
        assert_eq!(DECODE_GROUPS, 32);
    }

    #[test]
    fn pack_words_is_little_endian_and_zero_padded() {
        assert_eq!(pack_words(&[1, 2, 3, 4, 5], 33), vec![0x0403_0201, 5]);
        assert_eq!(pack_words(&[], 0), Vec::<u32>::new());
    }
}

/// WAH and PLWAH chunks of bits columns: each chunk decompressed by its own launch sequence,
/// then copied into the column's place as bytes.
#[derive(Debug)]
pub struct BitmapDecoder;

struct BitmapBatch {
    /// Per chunk: its words on the device, the buffer it decompresses into, its decoded bytes.
    chunks: Vec<(DeviceBitmap, CudaSlice<u32>, usize)>,
    total: usize,
}

impl crate::codec::GpuDecoder for BitmapDecoder {
    fn name(&self) -> &'static str {
        "bitmap"
    }

    fn serves(&self, codec: tessera_format::CodecId, ty: tessera_format::LogicalType) -> bool {
        ty == tessera_format::LogicalType::Bits && Flavor::of_codec(codec).is_some()
    }

    fn upload<'a>(
        &self,
        gpu: &Gpu,
        _ty: tessera_format::LogicalType,
        chunks: &[crate::ChunkRef<'a>],
    ) -> Result<Box<dyn crate::codec::GpuBatch + 'a>> {
        let mut out = Vec::with_capacity(chunks.len());
        let mut total = 0usize;
        for c in chunks {
            let flavor = Flavor::of_codec(c.codec)
                .ok_or_else(|| Error::InvalidArgument(format!("{:?} is no bitmap", c.codec)))?;
            crate::codec::check_bit_len(flavor, c.payload, c.value_count)?;
            let d = upload_payload(gpu, flavor, c.payload)?;
            let words = gpu.alloc::<u32>(d.bit_len.div_ceil(32) as usize)?;
            let bytes = d.bit_len.div_ceil(8) as usize;
            total += bytes;
            out.push((d, words, bytes));
        }
        Ok(Box::new(BitmapBatch { chunks: out, total }))
    }
}

impl crate::codec::GpuBatch for BitmapBatch {
    fn decoded_bytes(&self) -> usize {
        self.total
    }

    fn decode(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<()> {
        crate::codec::GpuBatch::enqueue(self, gpu, out)?;
        gpu.synchronize()
    }

    fn enqueue(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<Option<(u64, usize)>> {
        // Upload validated every chunk's words: the decompression has nothing to report.
        let mut at = 0usize;
        for (d, words, bytes) in &mut self.chunks {
            decompress_device_into(gpu, d, words)?;
            if *bytes == 0 {
                continue;
            }
            // SAFETY: u8 has no invalid bit patterns and alignment 1; the view covers `bytes` =
            // ceil(bit_len / 8) bytes of the ceil(bit_len / 32) words allocated.
            let src = unsafe { words.transmute::<u8>(*bytes) }
                .ok_or_else(|| Error::Gpu("bitmap words shorter than its bytes".into()))?;
            let mut to = out
                .try_slice_mut(at..at + *bytes)
                .ok_or_else(|| Error::Gpu("device copy destination too short".into()))?;
            let _op = crate::runtime::trace::count(crate::runtime::trace::Op::DeviceToDevice);
            gpu.stream
                .memcpy_dtod(&src, &mut to)
                .map_err(cuda("copying a decompressed bitmap"))?;
            at += *bytes;
        }
        Ok(None)
    }
}
