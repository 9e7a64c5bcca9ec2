//! WAH / PLWAH compressed bitmaps on the GPU (`kernels/bitmap.cu`, `docs/format/wah.md` "GPU
//! notes"), word for word what `tessera_codecs::bitmap` writes on the CPU.
//!
//! - [`compress`]: the paper's Algorithms 1, 2 and 4 by *heads*: each group decides from itself
//!   and the group before it whether it starts a word; a tile reduce, a one-block scan (word
//!   offsets, and by suffix-min where every fill run ends), and an apply that reads only the
//!   units of 32 groups that are not one fill (`kernels/bitmap.cu`, "compression by heads").
//!   [`compress_device_writer`] is the former path through the general canonical writer.
//! - [`decompress`]: Algorithm 5, output-partitioned: each decode tile stages the words covering
//!   its groups in shared memory, found from its *tile start* (the word covering its first group),
//!   and each thread expands 32 groups (`kernels/bitmap.cu`, "decompression"). A bitmap the GPU
//!   compressed carries its tile starts ([`DeviceBitmap::tile_starts`]: the compressor writes them
//!   on the way), so its decompression reads the compressed words once. [`upload`] and
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
//!   ([`binary_device_fused`]): one block per tile decodes both operands' tile from their tile
//!   starts, operates on the plain words in registers and shared memory, and compresses the
//!   result with the compressor's tile code; nothing plain reaches global memory.
//! - [`count_ones`], and `*_device` variants that keep everything on the GPU (the bench).
//!
//! Hostile input: a payload's header is checked on the CPU ([`bitmap::payload_bit_len`]); the words go
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
use tessera_codecs::bitmap::{self, group_count, last_group_mask, ops::Op, Bitmap, Flavor};
use tessera_format::{Error, Result};

use crate::kernels::Module;
use crate::runtime::{cuda, Gpu, KernelArg};

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
/// `DS_THREADS` x `DS_ITEMS`: items per tile of the sum scans; `DS_PARTIAL_THREADS`.
pub const DS_THREADS: u32 = 256;
pub const DS_ITEMS: u64 = 8;
pub const DS_TILE: u64 = DS_THREADS as u64 * DS_ITEMS;
pub const DS_PARTIAL_THREADS: u32 = 1024;
/// `BM_FIXUP_CAP`: most overflowing blocks `bm_overflow_fixup` takes (the list it sorts).
pub const FIXUP_CAP: u32 = 1024;
/// `BM_FIXUP_THREADS`.
pub const FIXUP_THREADS: u32 = 256;
/// `DS_MERGE_ITEMS`: merged items per thread of the merge test kernel.
pub const DS_MERGE_ITEMS: u64 = 8;
/// Word layout constants of `wah.cuh` (checked against `tessera_codecs` and the header).
pub const FILL_FLAG: u32 = 0x8000_0000;
pub const FILL_BIT: u32 = 0x4000_0000;
pub const WAH_COUNTER_MASK: u32 = 0x3FFF_FFFF;
pub const PLWAH_COUNTER_MASK: u32 = 0x01FF_FFFF;
pub const PLWAH_POSITION_SHIFT: u32 = 25;

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
    /// [`decompress_device_checked`]), never an access out of bounds.
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

fn op_code(op: Op) -> u32 {
    match op {
        Op::And => 0,
        Op::Or => 1,
        Op::Xor => 2,
        Op::AndNot => 3,
    }
}

/// The kernels of `op` on flavor `f` (`BM_OP_ALL_KERNELS` in bitmap.cu): the three-launch
/// writer's reduce and apply, and the one-pass form.
struct OpKernels {
    reduce: &'static str,
    apply: &'static str,
    one_pass: &'static str,
    fused: &'static str,
}

fn op_kernels(op: Op, f: Flavor) -> OpKernels {
    macro_rules! k {
        ($n:literal) => {
            OpKernels {
                reduce: concat!("bm_op_reduce_", $n),
                apply: concat!("bm_op_apply_", $n),
                one_pass: concat!("bm_op1_", $n),
                fused: concat!("bm_fop_", $n),
            }
        };
    }
    match (op, f) {
        (Op::And, Flavor::Wah) => k!("and_wah"),
        (Op::Or, Flavor::Wah) => k!("or_wah"),
        (Op::Xor, Flavor::Wah) => k!("xor_wah"),
        (Op::AndNot, Flavor::Wah) => k!("andnot_wah"),
        (Op::And, Flavor::Plwah) => k!("and_plwah"),
        (Op::Or, Flavor::Plwah) => k!("or_plwah"),
        (Op::Xor, Flavor::Plwah) => k!("xor_plwah"),
        (Op::AndNot, Flavor::Plwah) => k!("andnot_plwah"),
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
    gpu.stream
        .memcpy_dtoh(&view, &mut out)
        .map_err(cuda("copying from the device"))?;
    gpu.synchronize()?;
    Ok(out)
}

fn read_u64(gpu: &Gpu, src: &CudaSlice<u64>, at: usize) -> Result<u64> {
    let mut out = [0u64];
    let view = src.slice(at..at + 1);
    gpu.stream
        .memcpy_dtoh(&view, &mut out)
        .map_err(cuda("copying from the device"))?;
    gpu.synchronize()?;
    Ok(out[0])
}

/// Device-wide sum scan of `n` items of `T` (`u32` or `u64`) at `input` into `output`; returns
/// the partials buffer, whose entry `tiles` is the total. Queued, not waited for.
fn sum_scan(
    gpu: &Gpu,
    ty: &str,
    input: u64,
    n: u64,
    output: u64,
    inclusive: bool,
) -> Result<(CudaSlice<u64>, usize)> {
    let tiles = n.div_ceil(DS_TILE).max(1);
    // u64 storage serves both types (a u32 partials array is the first half).
    let partials = gpu.alloc::<u64>(tiles as usize + 1)?;
    let p = gpu.ptr(&partials);
    let (reduce, partial, apply) = match ty {
        "u32" => ("ds_reduce_u32", "ds_partials_u32", "ds_apply_u32"),
        _ => ("ds_reduce_u64", "ds_partials_u64", "ds_apply_u64"),
    };
    let f_r = gpu.function(Module::Bitmap, reduce)?;
    let f_p = gpu.function(Module::Bitmap, partial)?;
    let f_a = gpu.function(Module::Bitmap, apply)?;
    let g = grid(n, DS_TILE)?;
    let count = tiles as u32;
    let inc = u32::from(inclusive);
    // SAFETY: matches ds_reduce_T(in, n, partials), ds_partials_T(partials, count),
    // ds_apply_T(in, n, partials, out, inclusive) (device_scan.cuh); `input` and `output` hold n
    // items (callers' contract), `partials` tiles + 1 entries of at most 8 bytes.
    unsafe {
        if n > 0 {
            gpu.launch(&f_r, g, DS_THREADS, &[&input, &n, &p])?;
        } else {
            gpu.fill_bytes_raw(p, 0, 8)?;
        }
        gpu.launch(&f_p, 1, DS_PARTIAL_THREADS, &[&p, &count])?;
        if n > 0 {
            gpu.launch(&f_a, g, DS_THREADS, &[&input, &n, &p, &output, &inc])?;
        }
    }
    Ok((partials, tiles as usize))
}

/// Exclusive (or inclusive) sum scan of u32 values on the GPU, modulo 2^32 (the primitive's
/// test hook; `device_scan.cuh`).
#[doc(hidden)]
pub fn scan_u32(gpu: &Gpu, values: &[u32], inclusive: bool) -> Result<Vec<u32>> {
    let d_in = gpu.upload(values)?;
    let d_out = gpu.alloc::<u32>(values.len())?;
    let (_p, _) = sum_scan(
        gpu,
        "u32",
        gpu.ptr(&d_in),
        values.len() as u64,
        gpu.ptr(&d_out),
        inclusive,
    )?;
    read_words(gpu, &d_out, 0, values.len())
}

/// [`scan_u32`] for u64 values (modulo 2^64).
#[doc(hidden)]
pub fn scan_u64(gpu: &Gpu, values: &[u64], inclusive: bool) -> Result<Vec<u64>> {
    let d_in = gpu.upload(values)?;
    let d_out = gpu.alloc::<u64>(values.len())?;
    let (_p, _) = sum_scan(
        gpu,
        "u64",
        gpu.ptr(&d_in),
        values.len() as u64,
        gpu.ptr(&d_out),
        inclusive,
    )?;
    let mut out = vec![0u64; values.len()];
    gpu.download(&d_out, &mut out)?;
    Ok(out)
}

/// Merge path over two sorted u32 sequences (the primitive's test hook; `merge.cuh`): the
/// merged items and, per item, whether it came from `b`.
#[doc(hidden)]
pub fn merge_u32(gpu: &Gpu, a: &[u32], b: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = a.len() + b.len();
    let (d_a, d_b) = (gpu.upload(a)?, gpu.upload(b)?);
    let (d_out, d_from) = (gpu.alloc::<u32>(n)?, gpu.alloc::<u32>(n)?);
    if n > 0 {
        let f = gpu.function(Module::Bitmap, "ds_merge_u32")?;
        let (pa, pb, po, pf) = (
            gpu.ptr(&d_a),
            gpu.ptr(&d_b),
            gpu.ptr(&d_out),
            gpu.ptr(&d_from),
        );
        let (na, nb) = (a.len() as u32, b.len() as u32);
        // SAFETY: matches ds_merge_u32(a, na, b, nb, out, from_b); out and from_b hold na + nb.
        unsafe {
            gpu.launch(
                &f,
                grid(n as u64, 128 * DS_MERGE_ITEMS)?,
                128,
                &[&pa, &na, &pb, &nb, &po, &pf],
            )?;
        }
    }
    Ok((
        read_words(gpu, &d_out, 0, n)?,
        read_words(gpu, &d_from, 0, n)?,
    ))
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

/// The arguments every writer launch gets after its source's.
struct WriterRun<'a> {
    flavor: Flavor,
    bit_len: u64,
    elements: u64,
    reduce: &'static str,
    apply: &'static str,
    src: Vec<&'a dyn KernelArg>,
    max_counter: u32,
}

/// Runs the canonical writer (module docs of `wah.cuh`): reduce, partials, apply; then, only if
/// some run needs full fill_words, the overflow path. Waits for the word count.
/// Results of at most this many blocks take the overflow path's one-launch form
/// (`bm_overflow_fills`: one thread block loops over them, 4096 a step).
const OVERFLOW_ONE_BLOCK: usize = 1 << 16;

fn run_writer(gpu: &Gpu, w: WriterRun<'_>) -> Result<DeviceBitmap> {
    if w.elements == 0 {
        return Ok(DeviceBitmap {
            flavor: w.flavor,
            bit_len: w.bit_len,
            words: gpu.alloc::<u32>(1)?,
            len: 0,
            tile_starts: None,
        });
    }
    let tiles = w.elements.div_ceil(WRITER_TILE);
    let g = grid(w.elements, WRITER_TILE)?;
    // The partials (tiles + 1 BmAggs of 3 words) and, right after them, the overflow flag: one
    // read brings back the total and the flag (each read is a copy and a wait, a large share of
    // the time of an operation on small bitmaps).
    let flag_at = 3 * (tiles as usize + 1);
    let partials = gpu.alloc::<u32>(flag_at + 1)?;
    let out = gpu.alloc::<u32>(w.elements as usize)?;
    let (p, o) = (gpu.ptr(&partials), gpu.ptr(&out));
    let fl = p + 4 * flag_at as u64;
    gpu.fill_bytes_raw(fl, 0, 4)?;
    let f_r = gpu.function(Module::Bitmap, w.reduce)?;
    let f_p = gpu.function(Module::Bitmap, "bm_agg_partials")?;
    let f_a = gpu.function(Module::Bitmap, w.apply)?;
    let count = tiles as u32;
    let mode0 = 0u32;
    let mut r_args = w.src.clone();
    r_args.push(&p);
    let mut a_args = w.src.clone();
    a_args.extend_from_slice(&[&p as &dyn KernelArg, &w.max_counter, &mode0, &o, &o, &fl]);
    // SAFETY: `w.src` are the source's leading parameters of both kernels (set by the callers
    // below, which own the buffers they point to); then partials (tiles + 1 BmAggs), and for the
    // apply max_counter, mode, out (elements words: mode 0 writes one word per block, at most
    // one block per element), ex_out (unused in mode 0) and flags (the one word after the partials).
    unsafe {
        gpu.launch(&f_r, g, WRITER_THREADS, &r_args)?;
        gpu.launch(&f_p, 1, DS_PARTIAL_THREADS, &[&p, &count])?;
        gpu.launch(&f_a, g, WRITER_THREADS, &a_args)?;
    }
    // The last BmAgg (the total) and the flag after it.
    let tail = read_words(gpu, &partials, 3 * tiles as usize, 4)?;
    let (blocks, flag) = (tail[1] as usize, tail[3]);
    if flag == 0 {
        return Ok(DeviceBitmap {
            flavor: w.flavor,
            bit_len: w.bit_len,
            words: out,
            len: blocks,
            tile_starts: None,
        });
    }
    // Overflow: (word, ex) per block, a scan of ex, then the scatter.
    let last = gpu.alloc::<u32>(blocks)?;
    let ex = gpu.alloc::<u32>(blocks)?;
    let (pl, pe) = (gpu.ptr(&last), gpu.ptr(&ex));
    let mode1 = 1u32;
    let mut a_args = w.src.clone();
    a_args.extend_from_slice(&[&p as &dyn KernelArg, &w.max_counter, &mode1, &pl, &pe, &fl]);
    // SAFETY: as above; in mode 1 the apply writes words[b] and ex[b] for every block b <
    // blocks, both arrays holding `blocks` words.
    unsafe { gpu.launch(&f_a, g, WRITER_THREADS, &a_args)? };
    if blocks <= OVERFLOW_ONE_BLOCK {
        // sum(ex) <= floor(groups / max_counter): every ex word holds max_counter groups.
        let room = blocks + (group_count(w.bit_len) / u64::from(w.max_counter.max(1))) as usize;
        let words = gpu.alloc::<u32>(room)?;
        let len = gpu.alloc::<u32>(1)?;
        let (pw, pn) = (gpu.ptr(&words), gpu.ptr(&len));
        let f_o = gpu.function(Module::Bitmap, "bm_overflow_fills")?;
        let (nb, room64) = (blocks as u32, room as u64);
        // SAFETY: matches bm_overflow_fills(words, ex, blocks, max_counter, out, room, out_len):
        // `last` and `ex` hold `blocks` words, `words` room words (the kernel writes below
        // room), `len` one.
        unsafe {
            gpu.launch(
                &f_o,
                1,
                DS_PARTIAL_THREADS,
                &[&pl, &pe, &nb, &w.max_counter, &pw, &room64, &pn],
            )?;
        }
        let total = read_words(gpu, &len, 0, 1)?[0] as usize;
        if total > room {
            return Err(Error::Gpu(format!(
                "bitmap writer: {total} words after splitting fills, room for {room}"
            )));
        }
        return Ok(DeviceBitmap {
            flavor: w.flavor,
            bit_len: w.bit_len,
            words,
            len: total,
            tile_starts: None,
        });
    }
    let ex_prefix = gpu.alloc::<u32>(blocks)?;
    let pep = gpu.ptr(&ex_prefix);
    let (ex_partials, ex_tiles) = sum_scan(gpu, "u32", pe, blocks as u64, pep, false)?;
    // The u32 partials live in the u64 buffer: u32 entry `ex_tiles` is the low (even) or high
    // (odd) half of u64 entry ex_tiles / 2.
    let whole = read_u64(gpu, &ex_partials, ex_tiles / 2)?;
    let ex_total = if ex_tiles % 2 == 0 {
        whole as u32
    } else {
        (whole >> 32) as u32
    } as usize;
    let words = gpu.alloc::<u32>(blocks + ex_total)?;
    let pw = gpu.ptr(&words);
    let f_s = gpu.function(Module::Bitmap, "bm_scatter_fills")?;
    let nb = blocks as u32;
    // SAFETY: matches bm_scatter_fills(words, ex, ex_prefix, blocks, max_counter, out); block i
    // writes words i + ex_prefix[i] ..= i + ex_prefix[i] + ex[i] < blocks + ex_total.
    unsafe {
        gpu.launch(
            &f_s,
            grid(blocks as u64, 256)?.min(65_535),
            256,
            &[&pl, &pe, &pep, &nb, &w.max_counter, &pw],
        )?;
    }
    gpu.synchronize()?;
    Ok(DeviceBitmap {
        flavor: w.flavor,
        bit_len: w.bit_len,
        words,
        len: blocks + ex_total,
        tile_starts: None,
    })
}

/// Compresses a plain bitmap on the device, canonically (`wah.md` §4).
pub fn compress_device(gpu: &Gpu, flavor: Flavor, plain: &DevicePlain) -> Result<DeviceBitmap> {
    compress_device_with_max_counter(gpu, flavor, plain, flavor.max_counter())
}

/// [`compress_device`] with fill runs split at `max_counter` groups: the GPU twin of
/// `Bitmap::compress_with_max_counter`, which makes the overflow path (the paper's
/// Algorithm 4) reachable with small bitmaps.
#[doc(hidden)]
pub fn compress_device_with_max_counter(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
    max_counter: u64,
) -> Result<DeviceBitmap> {
    queue_compress(gpu, flavor, plain, max_counter)?.finish(gpu)
}

/// A compression queued on the GPU's stream and not waited for: [`PendingBitmap::finish`]
/// reads its word count (the one host wait) and gives the [`DeviceBitmap`]. Queue several
/// before finishing the first to keep the GPU busy between them.
pub fn compress_device_queued(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
) -> Result<PendingBitmap> {
    queue_compress(gpu, flavor, plain, flavor.max_counter())
}

/// A GPU compression whose words are being written on the stream; its word count is not on the
/// host yet. Dropping it without [`finish`](Self::finish) frees its buffers stream-ordered.
#[derive(Debug)]
pub struct PendingBitmap {
    flavor: Flavor,
    bit_len: u64,
    groups: u64,
    words: CudaSlice<u32>,
    tile_starts: Option<CudaSlice<u32>>,
    /// The look-back state and the index of the word total in it; `None` for an empty bitmap.
    state: Option<(CudaSlice<u32>, usize)>,
}

impl PendingBitmap {
    /// Waits for the compression and reads its word count (checked against the group count:
    /// every word covers at least one group).
    pub fn finish(self, gpu: &Gpu) -> Result<DeviceBitmap> {
        let len = match &self.state {
            None => 0,
            Some((state, at)) => read_words(gpu, state, *at, 1)?[0] as usize,
        };
        if len as u64 > self.groups {
            return Err(Error::Gpu(format!(
                "GPU compression counted {len} words for {} groups",
                self.groups
            )));
        }
        Ok(DeviceBitmap {
            flavor: self.flavor,
            bit_len: self.bit_len,
            words: self.words,
            len,
            tile_starts: self.tile_starts,
        })
    }
}

/// Compression by heads (`kernels/bitmap.cu`, "compression by heads"): one launch of
/// `bm_cmp_*`, one block per tile of [`CMP_TILE`] groups, the tiles' word offsets and the fill
/// runs that cross tiles found by a decoupled look-back. Queued, not waited for.
fn queue_compress(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
    max_counter: u64,
) -> Result<PendingBitmap> {
    let groups = check_compress_args(flavor, plain, max_counter)?;
    if groups == 0 {
        return Ok(PendingBitmap {
            flavor,
            bit_len: plain.bit_len,
            groups,
            words: gpu.alloc::<u32>(1)?,
            tile_starts: None,
            state: None,
        });
    }
    let bits = gpu.ptr(&plain.words);
    let n_words = plain.word_count() as u64;
    let mask = last_group_mask(plain.bit_len);
    let max = max_counter as u32;
    // groups <= ceil(MAX_BITS / 31), so tiles < 2^16 and every count below fits u32.
    let tiles = groups.div_ceil(CMP_TILE);
    let t = tiles as usize;
    // The look-back state: a 16-byte status word per tile (zero: nothing published yet), then
    // the word total; one buffer, so one memset.
    let mut state = gpu.alloc::<u32>(4 * t + 1)?;
    gpu.fill_bytes(&mut state, 0)?;
    // Every word covers at least one group: at most `groups` words.
    let out = gpu.alloc::<u32>(groups as usize)?;
    // A compression tile is a decode tile (`BM_CMP_TILE == BM_DECODE_TILE`): tile t writes its
    // tile start, the last tile also the end entry.
    let tile_starts = gpu.alloc::<u32>(2 * (t + 1))?;
    let (ps, pout, pts) = (gpu.ptr(&state), gpu.ptr(&out), gpu.ptr(&tile_starts));
    let pc = ps + 16 * tiles;
    let name = match flavor {
        Flavor::Wah => "bm_cmp_wah",
        Flavor::Plwah => "bm_cmp_plwah",
    };
    let f = gpu.function(Module::Bitmap, name)?;
    let g = grid(groups, CMP_TILE)?;
    let nt = tiles as u32;
    let cap = groups;
    // SAFETY: matches bm_cmp_<f>(bits, n_words, groups, last_mask, max_counter, status,
    // counters, tiles, out, out_cap, tile_starts): `bits` holds >= n_words words (checked);
    // `state` holds 4 * tiles + 1 zeroed words: `status` (16-byte aligned, as every allocation
    // is) the tiles' status words, `counters` the total; one block per tile (g == tiles), each
    // writing only its own status word and tile_starts[2t], [2t + 1] (the last tile also
    // [2 tiles], [2 tiles + 1]: 2 (tiles + 1) entries); out[< out_cap = groups] only. The
    // buffers live in the PendingBitmap, so past the kernel (drops are stream-ordered).
    unsafe {
        gpu.launch(
            &f,
            g,
            CMP_BLOCK,
            &[
                &bits, &n_words, &groups, &mask, &max, &ps, &pc, &nt, &pout, &cap, &pts,
            ],
        )?;
    }
    Ok(PendingBitmap {
        flavor,
        bit_len: plain.bit_len,
        groups,
        words: out,
        tile_starts: Some(tile_starts),
        state: Some((state, 4 * t)),
    })
}

/// The arguments' checks shared by both compressors; returns the group count.
fn check_compress_args(flavor: Flavor, plain: &DevicePlain, max_counter: u64) -> Result<u64> {
    if max_counter == 0 || max_counter > flavor.max_counter() {
        return Err(Error::InvalidArgument(format!(
            "max_counter {max_counter} outside 1..={}",
            flavor.max_counter()
        )));
    }
    if plain.bit_len > bitmap::MAX_BITS || plain.words.len() < plain.word_count() {
        return Err(Error::InvalidArgument(
            "plain bitmap larger than its buffer or MAX_BITS".into(),
        ));
    }
    Ok(group_count(plain.bit_len))
}

/// Compression through the general canonical writer (`bm_compress_*`: reduce + partials +
/// apply over the groups, `wah.cuh`), the path [`compress_device_with_max_counter`] replaced;
/// kept so tests can check the two GPU compressors against each other and the CPU.
#[doc(hidden)]
pub fn compress_device_writer(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
    max_counter: u64,
) -> Result<DeviceBitmap> {
    let groups = check_compress_args(flavor, plain, max_counter)?;
    let bits = gpu.ptr(&plain.words);
    let n_words = plain.word_count() as u64;
    let mask = last_group_mask(plain.bit_len);
    let (reduce, apply) = match flavor {
        Flavor::Wah => ("bm_compress_reduce_wah", "bm_compress_apply_wah"),
        Flavor::Plwah => ("bm_compress_reduce_plwah", "bm_compress_apply_plwah"),
    };
    run_writer(
        gpu,
        WriterRun {
            flavor,
            bit_len: plain.bit_len,
            elements: groups,
            reduce,
            apply,
            src: vec![&bits, &n_words, &groups, &mask],
            max_counter: max_counter as u32,
        },
    )
}

/// Compresses `bit_len` packed bits (`Bitmap::compress`'s contract) on the GPU.
pub fn compress(gpu: &Gpu, flavor: Flavor, bits: &[u8], bit_len: u64) -> Result<Bitmap> {
    let plain = upload_plain(gpu, bits, bit_len)?;
    download(gpu, &compress_device(gpu, flavor, &plain)?)
}

/// [`compress`] with an artificial maximum counter (`Bitmap::compress_with_max_counter`).
#[doc(hidden)]
pub fn compress_with_max_counter(
    gpu: &Gpu,
    flavor: Flavor,
    bits: &[u8],
    bit_len: u64,
    max_counter: u64,
) -> Result<Bitmap> {
    if max_counter == 0 || max_counter > flavor.max_counter() {
        return Bitmap::compress_with_max_counter(flavor, bits, bit_len, max_counter);
    }
    let plain = upload_plain(gpu, bits, bit_len)?;
    download(
        gpu,
        &compress_device_with_max_counter(gpu, flavor, &plain, max_counter)?,
    )
}

/// The paper's Algorithm 1 alone: one word per group (31 bits and a 0), the extended bitmap.
pub fn extend_device(gpu: &Gpu, plain: &DevicePlain) -> Result<CudaSlice<u32>> {
    let groups = group_count(plain.bit_len);
    let out = gpu.alloc::<u32>(groups as usize)?;
    if groups > 0 {
        let f = gpu.function(Module::Bitmap, "bm_extend")?;
        let (bits, po) = (gpu.ptr(&plain.words), gpu.ptr(&out));
        let n_words = plain.word_count() as u64;
        let mask = last_group_mask(plain.bit_len);
        // SAFETY: matches bm_extend(bits, n_words, groups, last_mask, out); reads < n_words words
        // of `plain`, writes `groups` words of `out`.
        unsafe {
            gpu.launch(
                &f,
                grid(groups, 256)?.min(1 << 16),
                256,
                &[&bits, &n_words, &groups, &mask, &po],
            )?;
        }
    }
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
        d.tile_starts = Some(tile_starts_queue(gpu, d)?);
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
    let tiles = n.div_ceil(DS_TILE).max(1);
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
    let f_p = gpu.function(Module::Bitmap, "ds_partials_u64")?;
    let f_a = gpu.function(Module::Bitmap, apply)?;
    let g = grid(n, DS_TILE)?;
    let count = tiles as u32;
    // SAFETY: matches bm_slots_reduce_<f>(words, m, partials, status), ds_partials_u64(partials,
    // count), bm_slots_apply_<f>(words, m, partials, ends): `words` holds m words, `ends` the
    // n = m or 2m slots, `partials` tiles + 1 u64s, `status` one u64.
    unsafe {
        if n > 0 {
            gpu.launch(&f_r, g, DS_THREADS, &[&pw, &m, &pp, &ps])?;
        } else {
            gpu.fill_bytes_raw(pp, 0, 8)?;
        }
        gpu.launch(&f_p, 1, DS_PARTIAL_THREADS, &[&pp, &count])?;
        if n > 0 {
            gpu.launch(&f_a, g, DS_THREADS, &[&pw, &m, &pp, &pe])?;
        }
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

/// Decompresses into `out` (at least `ceil(bit_len / 32)` words). Queued, not waited for.
pub fn decompress_device_into(gpu: &Gpu, d: &DeviceBitmap, out: &mut CudaSlice<u32>) -> Result<()> {
    decompress_queue(gpu, d, out, 0)
}

/// The decompression (`bitmap.cu`, "decompression"): the tile starts (the bitmap's own, or
/// computed by [`tile_starts_queue`]), then the tiles. `status` is 0 or the address of one u32
/// that the tiles OR 1 into when a tile's words do not cover its groups (an invalid
/// `DeviceBitmap`). Queued, not waited for.
fn decompress_queue(
    gpu: &Gpu,
    d: &DeviceBitmap,
    out: &mut CudaSlice<u32>,
    status: u64,
) -> Result<()> {
    let Some(m) = decode_args(d)? else {
        return Ok(());
    };
    let groups = group_count(d.bit_len);
    let out_words = d.bit_len.div_ceil(32);
    if (out.len() as u64) < out_words {
        return Err(Error::InvalidArgument(
            "decompression output buffer too small".into(),
        ));
    }
    let tiles = groups.div_ceil(DECODE_TILE);
    let computed;
    let starts = match &d.tile_starts {
        Some(ts) if ts.len() as u64 >= 2 * (tiles + 1) => ts,
        Some(_) => {
            return Err(Error::InvalidArgument(
                "tile_starts shorter than 2 * (tiles + 1) entries".into(),
            ))
        }
        None => {
            computed = tile_starts_queue(gpu, d)?;
            &computed
        }
    };
    let expand = match d.flavor {
        Flavor::Wah => "bm_dec_expand_wah",
        Flavor::Plwah => "bm_dec_expand_plwah",
    };
    let f_e = gpu.function(Module::Bitmap, expand)?;
    let (pw, pts, po) = (gpu.ptr(&d.words), gpu.ptr(starts), gpu.ptr(out));
    // SAFETY: matches bm_dec_expand_<f>(words, m, tile_starts, groups, out, out_words, status):
    // `words` holds >= m words (decode_args), tile_starts 2 * (tiles + 1) entries (one block
    // per tile b reads entries 2b .. 2b + 2), out >= out_words words (checked above), status is
    // 0 or one u32; reads are clamped to those lengths. `computed` is dropped after the launch:
    // cudarc frees device memory stream-ordered, so only after the kernel ran.
    unsafe {
        gpu.launch(
            &f_e,
            grid(groups, DECODE_TILE)?,
            DECODE_THREADS,
            &[&pw, &m, &pts, &groups, &po, &out_words, &status],
        )?;
    }
    Ok(())
}

/// The checks of a bitmap about to be decoded; `None` when it has no groups, else its word
/// count `m` (> 0, < 2^32).
fn decode_args(d: &DeviceBitmap) -> Result<Option<u32>> {
    if d.bit_len > bitmap::MAX_BITS || d.len > d.words.len() {
        return Err(Error::InvalidArgument(
            "bitmap longer than MAX_BITS or than its word buffer".into(),
        ));
    }
    if group_count(d.bit_len) == 0 {
        return Ok(None);
    }
    if d.len == 0 {
        return Err(Error::InvalidArgument(
            "a compressed bitmap of no words cannot hold any bits".into(),
        ));
    }
    u32::try_from(d.len)
        .map(Some)
        .map_err(|_| Error::InvalidArgument("too many words for one GPU bitmap".into()))
}

/// The tile starts of any valid stream (`bitmap.cu`, "decompression", the three passes: chunk
/// sums, their scan, one warp per tile), in a new buffer of `2 * (tiles + 1)` u32s. Queued,
/// not waited for.
fn tile_starts_queue(gpu: &Gpu, d: &DeviceBitmap) -> Result<CudaSlice<u32>> {
    let groups = group_count(d.bit_len);
    let tiles = groups.div_ceil(DECODE_TILE);
    let mut ts = gpu.alloc::<u32>(2 * (tiles as usize + 1))?;
    let Some(m) = decode_args(d)? else {
        gpu.fill_bytes(&mut ts, 0)?;
        return Ok(ts);
    };
    let n_chunks = u64::from(m).div_ceil(DEC_CHUNK);
    let n_sums = n_chunks.div_ceil(DEC_SUM_CHUNKS);
    let chunk_incl = gpu.alloc::<u32>(n_chunks as usize)?;
    let partials = gpu.alloc::<u32>(n_sums as usize + 1)?;
    let (sums, starts) = match d.flavor {
        Flavor::Wah => ("bm_dec_sums_wah", "bm_dec_tile_starts_wah"),
        Flavor::Plwah => ("bm_dec_sums_plwah", "bm_dec_tile_starts_plwah"),
    };
    let f_s = gpu.function(Module::Bitmap, sums)?;
    let f_p = gpu.function(Module::Bitmap, "ds_partials_u32")?;
    let f_t = gpu.function(Module::Bitmap, starts)?;
    let (pw, pc, pp, pt) = (
        gpu.ptr(&d.words),
        gpu.ptr(&chunk_incl),
        gpu.ptr(&partials),
        gpu.ptr(&ts),
    );
    // All < 2^32: m is, n_chunks <= m, tiles <= MAX_BITS / 31 / DECODE_TILE.
    let (nc, ns, nt) = (n_chunks as u32, n_sums as u32, tiles as u32);
    // SAFETY: matches bm_dec_sums_<f>(words, m, chunk_incl, partials): `words` holds >= m words
    // (decode_args), chunk_incl n_chunks entries, partials n_sums + 1 (the grid is n_sums
    // blocks, block p writing partials[p] and chunk_incl of its chunks < n_chunks);
    // ds_partials_u32(partials, n_sums); bm_dec_tile_starts_<f>(words, m, chunk_incl, partials,
    // n_chunks, n_sums, tiles, groups, tile_starts): one warp per tile b <= tiles (8 a block of
    // 256), writing entries 2b and 2b + 1 of the 2 (tiles + 1). The temporaries are dropped after
    // the launches: cudarc frees device memory stream-ordered.
    unsafe {
        gpu.launch(
            &f_s,
            grid(n_sums, 1)?,
            DEC_SUM_THREADS,
            &[&pw, &m, &pc, &pp],
        )?;
        gpu.launch(&f_p, 1, DS_PARTIAL_THREADS, &[&pp, &ns])?;
        gpu.launch(
            &f_t,
            grid(tiles + 1, 8)?,
            256,
            &[&pw, &m, &pc, &pp, &nc, &ns, &nt, &groups, &pt],
        )?;
    }
    drop((chunk_incl, partials));
    Ok(ts)
}

/// [`DeviceBitmap::tile_starts`] as decompression computes them for a bitmap without them (the
/// tests compare them with the compressor's). `2 * (tiles + 1)` u32s; waits.
#[doc(hidden)]
pub fn compute_tile_starts(gpu: &Gpu, d: &DeviceBitmap) -> Result<Vec<u32>> {
    let ts = tile_starts_queue(gpu, d)?;
    read_words(gpu, &ts, 0, ts.len())
}

/// Decompresses on the device into a new plain bitmap.
pub fn decompress_device(gpu: &Gpu, d: &DeviceBitmap) -> Result<DevicePlain> {
    let mut words = gpu.alloc::<u32>(d.bit_len.div_ceil(32) as usize)?;
    decompress_device_into(gpu, d, &mut words)?;
    Ok(DevicePlain {
        words,
        bit_len: d.bit_len,
    })
}

/// [`decompress_device`], then waits and says whether a decode tile found its words (from its
/// tile start to the next) not covering its groups (never for a valid [`DeviceBitmap`] with
/// right or no tile starts; the hook that lets tests feed the kernels invalid streams).
#[doc(hidden)]
pub fn decompress_device_checked(gpu: &Gpu, d: &DeviceBitmap) -> Result<(DevicePlain, bool)> {
    let mut words = gpu.alloc::<u32>(d.bit_len.div_ceil(32) as usize)?;
    let status = gpu.alloc::<u32>(1)?;
    let ps = gpu.ptr(&status);
    gpu.fill_bytes_raw(ps, 0, 4)?;
    decompress_queue(gpu, d, &mut words, ps)?;
    let flagged = read_words(gpu, &status, 0, 1)?[0] != 0;
    Ok((
        DevicePlain {
            words,
            bit_len: d.bit_len,
        },
        flagged,
    ))
}

/// Validates a payload and decompresses it on the GPU: `ceil(bit_len / 8)` bytes, or the CPU
/// decoder's error.
pub fn decompress(gpu: &Gpu, flavor: Flavor, payload: &[u8]) -> Result<Vec<u8>> {
    let d = upload_payload(gpu, flavor, payload)?;
    let (plain, flagged) = decompress_device_checked(gpu, &d)?;
    if flagged {
        return Err(Error::Gpu(
            "GPU decompression found a validated stream inconsistent".into(),
        ));
    }
    download_plain(gpu, &plain)
}

/// Decompresses a (valid) CPU bitmap on the GPU.
pub fn decompress_bitmap(gpu: &Gpu, b: &Bitmap) -> Result<Vec<u8>> {
    download_plain(gpu, &decompress_device(gpu, &upload(gpu, b)?)?)
}

/// Re-encodes in `to`, canonically (`plwah::convert`; PLWAH to WAH is Algorithm 6).
pub fn convert_device(gpu: &Gpu, d: &DeviceBitmap, to: Flavor) -> Result<DeviceBitmap> {
    let (reduce, apply) = match (d.flavor, to) {
        (Flavor::Plwah, Flavor::Wah) => (
            "bm_convert_reduce_plwah_to_wah",
            "bm_convert_apply_plwah_to_wah",
        ),
        (Flavor::Wah, Flavor::Plwah) => (
            "bm_convert_reduce_wah_to_plwah",
            "bm_convert_apply_wah_to_plwah",
        ),
        _ => {
            // Same flavor: the canonical re-encoding is the op-free writer over the slots of a
            // stream, which the conversions are; go through the other flavor's reader.
            let tmp = convert_device(gpu, d, other(to))?;
            return convert_device(gpu, &tmp, to);
        }
    };
    let pw = gpu.ptr(&d.words);
    let n = d.slots();
    run_writer(
        gpu,
        WriterRun {
            flavor: to,
            bit_len: d.bit_len,
            elements: n,
            reduce,
            apply,
            src: vec![&pw, &n],
            max_counter: to.max_counter() as u32,
        },
    )
}

fn other(f: Flavor) -> Flavor {
    match f {
        Flavor::Wah => Flavor::Plwah,
        Flavor::Plwah => Flavor::Wah,
    }
}

/// [`convert_device`] for a CPU bitmap.
pub fn convert(gpu: &Gpu, b: &Bitmap, to: Flavor) -> Result<Bitmap> {
    download(gpu, &convert_device(gpu, &upload(gpu, b)?, to)?)
}

/// PLWAH payload in, WAH payload out (`plwah::to_wah`), validating the input.
pub fn to_wah(gpu: &Gpu, plwah_payload: &[u8]) -> Result<Vec<u8>> {
    let d = upload_payload(gpu, Flavor::Plwah, plwah_payload)?;
    Ok(download(gpu, &convert_device(gpu, &d, Flavor::Wah)?)?.to_payload())
}

/// `op(a, b)` on the compressed words, on the device (module docs), by one of two paths:
/// - operands with at least one word per 6 groups together (`FUSED_WORDS_PER_GROUP_INV`): the
///   fused path ([`binary_device_fused`]: decode both tiles, operate, compress, one launch);
/// - sparser ones: the merge path ([`binary_device_merge`]): both operands' slot ends in one
///   launch (`bm_slots_pair_*`), the merge and the writer in one more (`bm_op1_*`, tile
///   prefixes by decoupled look-back), and, where a result run can exceed the counter (PLWAH,
///   more than `2^25 - 1` groups), the overflow fix-up (`bm_overflow_fixup`), queued before the
///   one read of the result's size when the inputs are short. A result with more than
///   [`FIXUP_CAP`] overflowing blocks takes the three-launch writer's overflow path instead.
pub fn binary_device(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    let groups = group_count(a.bit_len);
    if FUSED_WORDS_PER_GROUP_INV.saturating_mul(a.len as u64 + b.len as u64) >= groups {
        binary_device_fused(gpu, op, a, b)
    } else {
        binary_device_merge(gpu, op, a, b)
    }
}

/// [`binary_device`] takes the fused path (cost ~ groups) when the operands hold at least one
/// word per this many groups together, else the merge path (cost ~ words). H100, 1,677,721,600
/// bits (`bitmap_gpu_speed --only fop`, 2026-11-22): the fused path takes 0.44-0.70 ms from
/// 2^-1 to 2^-8, about 0.3-0.5 ms below; the merge path about 0.05 ms per million operand words
/// (2^-8: 13-23 M words, 0.55-0.76 ms; 2^-10: 3.3-6.4 M words, 0.18-0.23 ms). They cross near
/// 9 M words for 54 M groups: one word per 6 groups.
const FUSED_WORDS_PER_GROUP_INV: u64 = 6;

/// `op(a, b)` by the merge path (`bm_slots_pair_*` + `bm_op1_*`, overflow fix-up as needed).
#[doc(hidden)]
pub fn binary_device_merge(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    binary_device_with(gpu, op, a, b, FIXUP_CAP, EAGER_FIXUP_ELEMENTS)
}

/// Operations on at most this many slots in all queue the overflow fix-up before reading the
/// result's size (so a short PLWAH operation waits once); longer ones launch it only when the
/// read shows an overflow (its output buffer is as large as the inputs).
const EAGER_FIXUP_ELEMENTS: u64 = 1 << 20;

fn check_operands(a: &DeviceBitmap, b: &DeviceBitmap) -> Result<()> {
    if a.flavor != b.flavor || a.bit_len != b.bit_len {
        return Err(Error::InvalidArgument(format!(
            "bitmap operands differ: {:?} of {} bits and {:?} of {} bits",
            a.flavor, a.bit_len, b.flavor, b.bit_len
        )));
    }
    Ok(())
}

fn empty_result(gpu: &Gpu, a: &DeviceBitmap) -> Result<DeviceBitmap> {
    Ok(DeviceBitmap {
        flavor: a.flavor,
        bit_len: a.bit_len,
        words: gpu.alloc::<u32>(1)?,
        len: 0,
        tile_starts: None,
    })
}

/// [`binary_device`] with its overflow list capacity (at most [`FIXUP_CAP`]; 0 sends every
/// overflow to the general path) and the input size up to which the fix-up is queued before
/// the read: test hooks, so that every overflow path runs in the tests.
#[doc(hidden)]
pub fn binary_device_with(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
    cap: u32,
    eager_elements: u64,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    let groups = group_count(a.bit_len);
    if groups == 0 {
        return empty_result(gpu, a);
    }
    let cap = cap.min(FIXUP_CAP);
    let too_large = || Error::InvalidArgument("bitmap too large".into());
    let (na, nb) = (
        u32::try_from(a.slots()).map_err(|_| too_large())?,
        u32::try_from(b.slots()).map_err(|_| too_large())?,
    );
    let elements = u64::from(na) + u64::from(nb);
    let (ta, tb) = (
        u64::from(na).div_ceil(DS_TILE).max(1),
        u64::from(nb).div_ceil(DS_TILE).max(1),
    );
    let wt = elements.div_ceil(WRITER_TILE);
    // One zeroed buffer: the look-back status words (16 bytes per tile) of a's slots, b's
    // slots and the writer, then the writer's four counters.
    let status_words = 4 * (ta + tb + wt) as usize;
    let scratch = gpu.alloc::<u32>(status_words + 4)?;
    let ends = gpu.alloc::<u32>(elements as usize)?;
    let out = gpu.alloc::<u32>(elements as usize)?;
    let ovf = gpu.alloc::<u32>(2 * cap.max(1) as usize)?;
    let (ps, pe, po, pv) = (
        gpu.ptr(&scratch),
        gpu.ptr(&ends),
        gpu.ptr(&out),
        gpu.ptr(&ovf),
    );
    gpu.fill_bytes_raw(ps, 0, 4 * (status_words + 4))?;
    let (ps_w, pc) = (ps + 16 * (ta + tb), ps + 4 * status_words as u64);
    let (pwa, pwb, pea, peb) = (
        gpu.ptr(&a.words),
        gpu.ptr(&b.words),
        pe,
        pe + 4 * u64::from(na),
    );
    let pair = gpu.function(
        Module::Bitmap,
        match a.flavor {
            Flavor::Wah => "bm_slots_pair_wah",
            Flavor::Plwah => "bm_slots_pair_plwah",
        },
    )?;
    let f_op = gpu.function(Module::Bitmap, op_kernels(op, a.flavor).one_pass)?;
    let (ma, mb, ta32) = (a.len as u64, b.len as u64, ta as u32);
    let (wt32, max_counter, out_cap) = (
        u32::try_from(wt).map_err(|_| too_large())?,
        a.flavor.max_counter() as u32,
        elements,
    );
    let grid_pair = u32::try_from(ta + tb).map_err(|_| too_large())?;
    // SAFETY: bm_slots_pair_<f>(wa, ma, ea, wb, mb, eb, status, tiles_a): a's and b's words
    // hold ma and mb words (valid DeviceBitmaps), ea and eb na and nb u32 (ends), status ta +
    // tb zeroed 16-byte words. bm_op1_<op>_<f>(wa, ea, na, wb, eb, nb, status, tiles,
    // max_counter, out, out_cap, counters, ovf, cap): status wt zeroed words, out
    // `elements` words (at most one block per element), counters 4 zeroed words, ovf 2 * cap
    // words. Every buffer outlives the read below, which waits for the launches.
    unsafe {
        gpu.launch(
            &pair,
            grid_pair,
            DS_THREADS,
            &[&pwa, &ma, &pea, &pwb, &mb, &peb, &ps, &ta32],
        )?;
        gpu.launch(
            &f_op,
            wt32,
            WRITER_THREADS,
            &[
                &pwa,
                &pea,
                &na,
                &pwb,
                &peb,
                &nb,
                &ps_w,
                &wt32,
                &max_counter,
                &po,
                &out_cap,
                &pc,
                &pv,
                &cap,
            ],
        )?;
    }
    // A run longer than the counter exists only in PLWAH results of more than 2^25 - 1 groups.
    let may_overflow = groups > u64::from(max_counter);
    // sum(ex) <= floor(groups / max_counter): every full fill_word holds max_counter groups.
    let room = elements + groups / u64::from(max_counter.max(1));
    let fixup = |words: &CudaSlice<u32>| -> Result<()> {
        let f = gpu.function(Module::Bitmap, "bm_overflow_fixup")?;
        let pw = gpu.ptr(words);
        let g = grid(elements, u64::from(FIXUP_THREADS))?.min(1024);
        // SAFETY: bm_overflow_fixup(out, out_cap, counters, ovf, cap, max_counter, words,
        // room): out holds out_cap words, counters 4, ovf 2 * cap, words room (every store is
        // checked against room).
        unsafe {
            gpu.launch(
                &f,
                g,
                FIXUP_THREADS,
                &[&po, &out_cap, &pc, &pv, &cap, &max_counter, &pw, &room],
            )
        }
    };
    let eager = may_overflow && elements <= eager_elements;
    let mut fixed = None;
    if eager {
        let words = gpu.alloc::<u32>(room as usize)?;
        fixup(&words)?;
        fixed = Some(words);
    }
    let c = read_words(gpu, &scratch, status_words, 4)?;
    let (blocks, overflow, listed, total) = (c[0] as usize, c[1] != 0, c[2], c[3] as usize);
    if !overflow {
        if blocks as u64 > elements {
            return Err(Error::Gpu(format!(
                "bitmap operation: {blocks} blocks from {elements} elements"
            )));
        }
        return Ok(DeviceBitmap {
            flavor: a.flavor,
            bit_len: a.bit_len,
            words: out,
            len: blocks,
            tile_starts: None,
        });
    }
    if listed > cap {
        return binary_device_staged(gpu, op, a, b);
    }
    let (words, total) = match fixed {
        Some(w) => (w, total),
        None => {
            let w = gpu.alloc::<u32>(room as usize)?;
            fixup(&w)?;
            let t = read_words(gpu, &scratch, status_words + 3, 1)?[0] as usize;
            (w, t)
        }
    };
    if total as u64 > room {
        return Err(Error::Gpu(format!(
            "bitmap operation: {total} words after splitting fills, room for {room}"
        )));
    }
    Ok(DeviceBitmap {
        flavor: a.flavor,
        bit_len: a.bit_len,
        words,
        len: total,
        tile_starts: None,
    })
}

/// `op(a, b)` by tiles (`bm_fop_*`, `kernels/bitmap.cu`, "fused operations"): one block per
/// tile of [`CMP_TILE`] groups decodes both operands' tile from their tile starts, applies `op`
/// to the plain words and compresses the result with the compressor's tile code, so the result
/// is what [`compress_device`] makes of the plain `op(a, b)`, tile starts included. Nothing
/// plain reaches global memory; the cost follows the groups rather than the words, which is
/// why [`binary_device`] keeps the merge path for sparse operands. Operands without tile
/// starts get them computed first. Waits for one read (word total and decode status); a tile
/// start that does not cover its tile is an error.
#[doc(hidden)]
pub fn binary_device_fused(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    binary_device_fused_with_max_counter(gpu, op, a, b, a.flavor.max_counter())
}

/// [`binary_device_fused`] with the result's fill runs split at `max_counter` groups (the
/// compressor's test hook: the overflow path with small bitmaps).
#[doc(hidden)]
pub fn binary_device_fused_with_max_counter(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
    max_counter: u64,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    if max_counter == 0 || max_counter > a.flavor.max_counter() {
        return Err(Error::InvalidArgument(format!(
            "max_counter {max_counter} outside 1..={}",
            a.flavor.max_counter()
        )));
    }
    let groups = group_count(a.bit_len);
    let (Some(ma), Some(mb)) = (decode_args(a)?, decode_args(b)?) else {
        return empty_result(gpu, a);
    };
    let tiles = groups.div_ceil(CMP_TILE);
    let t = tiles as usize;
    let starts = |d: &DeviceBitmap| -> Result<Option<CudaSlice<u32>>> {
        match &d.tile_starts {
            Some(ts) if ts.len() >= 2 * (t + 1) => Ok(None),
            Some(_) => Err(Error::InvalidArgument(
                "tile_starts shorter than 2 * (tiles + 1) entries".into(),
            )),
            None => tile_starts_queue(gpu, d).map(Some),
        }
    };
    let (ca, cb) = (starts(a)?, starts(b)?);
    let tsa = ca
        .as_ref()
        .or(a.tile_starts.as_ref())
        .expect("checked above");
    let tsb = cb
        .as_ref()
        .or(b.tile_starts.as_ref())
        .expect("checked above");
    // The look-back state: a 16-byte status word per tile, then the word total and the decode
    // status; one zeroed buffer.
    let mut state = gpu.alloc::<u32>(4 * t + 2)?;
    gpu.fill_bytes(&mut state, 0)?;
    let out = gpu.alloc::<u32>(groups as usize)?;
    let tile_starts = gpu.alloc::<u32>(2 * (t + 1))?;
    let (ps, pout, pts) = (gpu.ptr(&state), gpu.ptr(&out), gpu.ptr(&tile_starts));
    let pc = ps + 16 * tiles;
    let (pwa, pwb, ptsa, ptsb) = (
        gpu.ptr(&a.words),
        gpu.ptr(&b.words),
        gpu.ptr(tsa),
        gpu.ptr(tsb),
    );
    let f = gpu.function(Module::Bitmap, op_kernels(op, a.flavor).fused)?;
    let mask = last_group_mask(a.bit_len);
    let max = max_counter as u32;
    let nt = tiles as u32;
    let cap = groups;
    // SAFETY: matches bm_fop_<op>_<f>(wa, ma, tsa, wb, mb, tsb, groups, last_mask,
    // max_counter, status, counters, tiles, out, out_cap, tile_starts): a's and b's words hold
    // ma, mb >= 1 words (decode_args), their tile starts >= 2 * (tiles + 1) entries (checked or
    // just computed); `state` holds 4 * tiles + 2 zeroed words: the tiles' status words, then
    // counters[0] (total) and [1] (decode status); one block per tile, each writing its own
    // status word and tile_starts[2t], [2t + 1] (the last tile also the end entry), out[<
    // groups] only. Temporaries are freed stream-ordered, after the kernel.
    unsafe {
        gpu.launch(
            &f,
            grid(groups, CMP_TILE)?,
            CMP_THREADS,
            &[
                &pwa, &ma, &ptsa, &pwb, &mb, &ptsb, &groups, &mask, &max, &ps, &pc, &nt, &pout,
                &cap, &pts,
            ],
        )?;
    }
    let c = read_words(gpu, &state, 4 * t, 2)?;
    drop((state, ca, cb));
    let (len, bad) = (c[0] as usize, c[1] != 0);
    if bad {
        return Err(Error::InvalidArgument(
            "bitmap operand's tile_starts do not cover its tiles".into(),
        ));
    }
    if len as u64 > groups {
        return Err(Error::Gpu(format!(
            "fused bitmap operation counted {len} words for {groups} groups"
        )));
    }
    Ok(DeviceBitmap {
        flavor: a.flavor,
        bit_len: a.bit_len,
        words: out,
        len,
        tile_starts: Some(tile_starts),
    })
}

/// `op(a, b)` through the three-launch writer (slot ends per operand, then reduce, partials,
/// apply, and the general overflow path): the path of results with many overflowing blocks,
/// and a cross-check for the tests.
#[doc(hidden)]
pub fn binary_device_staged(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    if group_count(a.bit_len) == 0 {
        return empty_result(gpu, a);
    }
    let (ea, eb) = (slot_ends(gpu, a)?, slot_ends(gpu, b)?);
    let (na, nb) = (
        u32::try_from(a.slots()).map_err(|_| Error::InvalidArgument("bitmap too large".into()))?,
        u32::try_from(b.slots()).map_err(|_| Error::InvalidArgument("bitmap too large".into()))?,
    );
    let (pwa, pea, pwb, peb) = (
        gpu.ptr(&a.words),
        gpu.ptr(&ea.ends),
        gpu.ptr(&b.words),
        gpu.ptr(&eb.ends),
    );
    let OpKernels { reduce, apply, .. } = op_kernels(op, a.flavor);
    run_writer(
        gpu,
        WriterRun {
            flavor: a.flavor,
            bit_len: a.bit_len,
            elements: u64::from(na) + u64::from(nb),
            reduce,
            apply,
            src: vec![&pwa, &pea, &na, &pwb, &peb, &nb],
            max_counter: a.flavor.max_counter() as u32,
        },
    )
}

/// `op(a, b)` of two CPU bitmaps on the GPU: `ops::binary`'s result, word for word.
pub fn binary(gpu: &Gpu, op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    if a.flavor() != b.flavor() || a.bit_len() != b.bit_len() {
        return bitmap::ops::binary(op, a, b);
    }
    let (da, db) = (upload(gpu, a)?, upload(gpu, b)?);
    download(gpu, &binary_device(gpu, op, &da, &db)?)
}

/// The number of set bits, on the device (waits for it).
pub fn count_ones_device(gpu: &Gpu, d: &DeviceBitmap) -> Result<u64> {
    let n = d.slots();
    if n == 0 {
        return Ok(0);
    }
    let tiles = n.div_ceil(DS_TILE);
    let partials = gpu.alloc::<u64>(tiles as usize + 1)?;
    let (pw, pp) = (gpu.ptr(&d.words), gpu.ptr(&partials));
    let m = d.len as u64;
    let name = match d.flavor {
        Flavor::Wah => "bm_count_ones_wah",
        Flavor::Plwah => "bm_count_ones_plwah",
    };
    let f = gpu.function(Module::Bitmap, name)?;
    let f_p = gpu.function(Module::Bitmap, "ds_partials_u64")?;
    let count = tiles as u32;
    // SAFETY: matches bm_count_ones_<f>(words, m, partials) and ds_partials_u64(partials, count).
    unsafe {
        gpu.launch(&f, grid(n, DS_TILE)?, DS_THREADS, &[&pw, &m, &pp])?;
        gpu.launch(&f_p, 1, DS_PARTIAL_THREADS, &[&pp, &count])?;
    }
    read_u64(gpu, &partials, tiles as usize)
}

/// [`count_ones_device`] for a CPU bitmap.
pub fn count_ones(gpu: &Gpu, b: &Bitmap) -> Result<u64> {
    count_ones_device(gpu, &upload(gpu, b)?)
}

/// `op(a, b)` word by word on plain device bitmaps of one length (the decompress-operate
/// baseline). Queued, not waited for.
pub fn plain_op_device(
    gpu: &Gpu,
    op: Op,
    a: &DevicePlain,
    b: &DevicePlain,
    out: &mut DevicePlain,
) -> Result<()> {
    let n = a.word_count();
    if a.bit_len != b.bit_len
        || out.bit_len != a.bit_len
        || b.words.len() < n
        || out.words.len() < n
    {
        return Err(Error::InvalidArgument(
            "plain bitmaps of different lengths".into(),
        ));
    }
    if n == 0 {
        return Ok(());
    }
    let f = gpu.function(Module::Bitmap, "bm_plain_op")?;
    let (pa, pb, po) = (gpu.ptr(&a.words), gpu.ptr(&b.words), gpu.ptr(&out.words));
    let n64 = n as u64;
    let code = op_code(op);
    let blocks = (gpu.info().sm_count.max(1) * 8).min(grid(n64, 1024)?);
    // SAFETY: matches bm_plain_op(a, b, out, n, op); all three hold >= n words (checked) and are
    // 16-byte aligned (device allocations).
    unsafe { gpu.launch(&f, blocks, 256, &[&pa, &pb, &po, &n64, &code]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines() -> std::collections::HashMap<String, String> {
        let mut m = std::collections::HashMap::new();
        for h in ["wah.cuh", "device_scan.cuh", "merge.cuh"] {
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
        assert_eq!(num(&m, "DS_THREADS"), u64::from(DS_THREADS));
        assert_eq!(num(&m, "DS_ITEMS"), DS_ITEMS);
        assert_eq!(num(&m, "DS_PARTIAL_THREADS"), u64::from(DS_PARTIAL_THREADS));
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
