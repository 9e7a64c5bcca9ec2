//! `tessera-bench bitmap`: WAH / PLWAH on the CPU and the GPU, the paper's setup (GPU-PLWAH,
//! section 5): bitmaps of 1,677,721,600 bits (`--quick`: 1/16 of that) with uniform random bits
//! of density 2^-k, k = 1..=16 (`--quick`: odd k and 16; `--densities 1,4,8` picks k).
//!
//! Per density: sizes (WAH, PLWAH, roaring); compression and decompression on the CPU (one
//! core: the sequential reference functions; all cores: the multi-core paths of
//! `tessera::codecs::bitmap`) and on the GPU (device-resident, and with the PCIe transfers:
//! pageable host memory in, result out, wall clock); GPU throughput as (bytes read + written) /
//! time against the device-to-device copy ceiling measured in the same run; AND / OR of two
//! independent bitmaps of that density on the compressed words: GPU, CPU on all cores, roaring
//! (`RoaringBitmap`, one core) on the same bitmaps, and GPU decompress-operate (decompress both,
//! AND / OR the words, compress). GPU results are checked against the CPU's words (compression,
//! operations) and bytes (decompression) outside the timed runs.
//!
//! The paper's five query variants (section 5) on the first 1,006,632,960 bits (120 MiB plain;
//! `--quick`: 1/16) of the same two bitmaps, end to end, AND and OR, both flavors (PLWAH is
//! operated on directly, on the GPU too: `binary_device` takes PLWAH words, no conversion):
//! V1 upload both compressed, GPU decompress both, GPU op on the plain words, download the plain
//! result; V2 upload, GPU op on the compressed words, GPU decompress the result, download it; V3
//! upload, GPU op, download the compressed result, CPU decompress (all cores); V4 CPU decompress
//! both, CPU op on the plain bytes (all cores); V5 CPU op on the compressed words, CPU decompress
//! the result (all cores). GPU variants move data from and to page-locked host buffers (the
//! driver takes the DMA path for them; they go through `Gpu::upload` / `Gpu::download` as
//! slices of a `PinnedBuffer`); device and host output buffers are allocated before the timed
//! runs, the compressed inputs' device buffers and the GPU operations' own scratch inside them.
//! Every variant's plain result is compared with the plain AND / OR computed on the CPU.
//!
//! Timing: GPU work between CUDA events, CPU work and the variants by wall clock; a warm-up then
//! the median of `--runs` runs (CPU: at most 3). One-core figures on bitmaps of 2^30 bits or
//! more are one run without warm-up (they take seconds each; the report says so).

use super::common::{gbps, today, wall_ms, write_results};
use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use tessera::codecs::bitmap::{ops, ops::Op, Bitmap, Flavor};
use tessera::format::{Error, Result};
use tessera::gpu::bitmap as gb;
use tessera::gpu::{Gpu, PinnedBuffer};

use super::svg::{line_chart, Series};
use super::BenchArgs;

const FULL_BITS: u64 = 1_677_721_600;
/// The paper's bitmaps for the query variants: 120 MiB plain.
const VARIANT_BITS: u64 = 1_006_632_960;
/// One-core figures on bitmaps at least this long are one run, no warm-up.
const ONE_RUN_BITS: u64 = 1 << 30;

/// Figures of one flavor at one density.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlavorResult {
    pub flavor: String,
    pub payload_bytes: u64,
    /// `Bitmap::compress_serial` (the sequential reference), `Report::one_core_runs` runs.
    pub cpu_compress_1core_ms: f64,
    /// `Bitmap::compress` on all cores.
    pub cpu_compress_all_ms: f64,
    /// `Bitmap::decompress_serial`, `Report::one_core_runs` runs.
    pub cpu_decompress_1core_ms: f64,
    /// `Bitmap::decompress` on all cores.
    pub cpu_decompress_all_ms: f64,
    /// `ops::binary` (compressed in, compressed out) on all cores.
    pub cpu_and_ms: f64,
    pub cpu_or_ms: f64,
    /// The compression's GPU time, queued (`compress_device_queued`; its word count is read
    /// after the timed region, as a caller that queues several compressions does).
    pub gpu_compress_ms: Option<f64>,
    /// (plain bytes read + payload written) / `gpu_compress_ms` / copy ceiling.
    pub gpu_compress_frac_of_copy: Option<f64>,
    /// `compress_device`: the same, plus the host's wait for the word count.
    pub gpu_compress_sync_ms: Option<f64>,
    pub gpu_compress_pcie_ms: Option<f64>,
    pub gpu_decompress_ms: Option<f64>,
    pub gpu_decompress_frac_of_copy: Option<f64>,
    pub gpu_decompress_pcie_ms: Option<f64>,
    pub gpu_and_ms: Option<f64>,
    pub gpu_or_ms: Option<f64>,
    /// Decompress both, AND the plain words, compress the result.
    pub gpu_decompress_and_ms: Option<f64>,
    pub gpu_decompress_or_ms: Option<f64>,
    /// GPU words / bytes equal the CPU's.
    pub verified: Option<bool>,
}

/// The paper's five query variants for one flavor and operation (wall ms, end to end).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantResult {
    pub flavor: String,
    pub op: String,
    pub v1_ms: Option<f64>,
    pub v2_ms: Option<f64>,
    pub v3_ms: Option<f64>,
    pub v4_ms: f64,
    pub v5_ms: f64,
    /// Every variant's plain result equals the plain operation on the CPU.
    pub verified: bool,
}

/// Figures of one density.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DensityResult {
    pub k: u32,
    pub set_bits: u64,
    pub roaring_bytes: u64,
    pub roaring_and_ms: f64,
    pub roaring_or_ms: f64,
    pub flavors: Vec<FlavorResult>,
    pub variants: Vec<VariantResult>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    pub date: String,
    pub device: String,
    pub bit_len: u64,
    /// Bits per bitmap of the query variants.
    pub variant_bit_len: u64,
    pub runs: usize,
    /// Runs of the CPU figures on all cores and of roaring (median; after a warm-up).
    pub cpu_runs: usize,
    /// Runs of the one-core compression / decompression figures (1: no warm-up, one run).
    pub one_core_runs: usize,
    pub cpu_threads: usize,
    pub copy_ceiling_gbps: Option<f64>,
    pub notes: Vec<String>,
    pub densities: Vec<DensityResult>,
    pub seconds: f64,
}

/// Uniform random bits, each set with probability 2^-k (the AND of k random words).
fn random_bits(bit_len: u64, k: u32, seed: u64) -> Vec<u8> {
    let n = bit_len.div_ceil(8) as usize;
    let mut out = vec![0u8; n];
    out.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = StdRng::seed_from_u64(seed ^ ((i as u64) << 20) ^ u64::from(k));
            for c in chunk.chunks_mut(8) {
                let mut x = u64::MAX;
                for _ in 0..k {
                    x &= rng.random::<u64>();
                }
                c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
            }
        });
    if bit_len % 8 != 0 {
        out[n - 1] &= (1u8 << (bit_len % 8)) - 1;
    }
    out
}

fn roaring_of(bits: &[u8]) -> RoaringBitmap {
    let parts: Vec<RoaringBitmap> = bits
        .par_chunks(1 << 20)
        .enumerate()
        .map(|(c, chunk)| {
            let base = (c as u64) << 23;
            let ones = chunk.iter().enumerate().flat_map(move |(i, &b)| {
                (0..8)
                    .filter(move |j| b >> j & 1 == 1)
                    .map(move |j| (base + 8 * i as u64 + j) as u32)
            });
            RoaringBitmap::from_sorted_iter(ones).unwrap_or_default()
        })
        .collect();
    let mut r = RoaringBitmap::new();
    for p in parts {
        r |= p;
    }
    r
}

/// The plain `op(a, b)`, byte by byte on all cores (padding stays 0: every op maps 0, 0 to 0).
fn plain_op(op: Op, a: &[u8], b: &[u8], out: &mut [u8]) {
    out.par_chunks_mut(1 << 16)
        .zip(a.par_chunks(1 << 16).zip(b.par_chunks(1 << 16)))
        .for_each(|(o, (x, y))| {
            for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                *o = op.apply(u32::from(x), u32::from(y)) as u8;
            }
        });
}

/// Median wall ms of `work`, or one run without warm-up when `runs == 1`.
fn one_core_ms<R>(runs: usize, mut work: impl FnMut() -> Result<R>) -> Result<f64> {
    if runs > 1 {
        return wall_ms(runs, work);
    }
    let t0 = Instant::now();
    std::hint::black_box(work()?);
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

fn flavor_name(f: Flavor) -> String {
    format!("{f:?}").to_lowercase()
}

fn op_name(op: Op) -> String {
    format!("{op:?}").to_lowercase()
}

/// The densities to run: `--densities`, else the quick or full sweep.
fn densities(args: &BenchArgs) -> Result<Vec<u32>> {
    if !args.densities.is_empty() {
        if let Some(k) = args.densities.iter().find(|&&k| !(1..=16).contains(&k)) {
            return Err(Error::InvalidArgument(format!(
                "--densities takes k in 1..=16 (density 2^-k), got {k}"
            )));
        }
        let mut ks = args.densities.clone();
        ks.sort_unstable();
        ks.dedup();
        return Ok(ks);
    }
    Ok(if args.quick {
        vec![1, 3, 5, 7, 9, 11, 13, 16]
    } else {
        (1..=16).collect()
    })
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if args.runs < 5 {
        return Err(Error::InvalidArgument("--runs must be at least 5".into()));
    }
    let started = Instant::now();
    let (bit_len, variant_bit_len) = if args.quick {
        (FULL_BITS / 16, VARIANT_BITS / 16)
    } else {
        (FULL_BITS, VARIANT_BITS)
    };
    let ks = densities(args)?;
    let runs = args.runs;
    let cpu_runs = runs.min(3);
    let one_core_runs = if bit_len >= ONE_RUN_BITS { 1 } else { cpu_runs };
    let gpu = match Gpu::new() {
        Ok(g) => {
            g.warm_up()?;
            Some(g)
        }
        Err(e) => {
            eprintln!("no GPU ({e}): CPU columns only");
            None
        }
    };
    let one_core = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let plain_bytes = bit_len.div_ceil(8);
    let copy_ceiling_gbps = match &gpu {
        Some(g) => {
            let src = g.alloc::<u8>(plain_bytes as usize)?;
            let mut dst = g.alloc::<u8>(plain_bytes as usize)?;
            Some(g.copy_ceiling_gbps(&src, &mut dst, runs)?)
        }
        None => None,
    };
    let device = gpu
        .as_ref()
        .map_or("no GPU".to_string(), |g| g.info().name.clone());
    let cpu_threads = rayon::current_num_threads();
    eprintln!(
        "{device}; {bit_len} bits per bitmap ({variant_bit_len} for the query variants); {cpu_threads} CPU threads; copy ceiling {} GB/s",
        copy_ceiling_gbps.map_or("-".into(), |c| format!("{c:.0}"))
    );
    // Page-locked host buffers for the GPU variants, sized for the worst case (one word per
    // group), allocated once.
    let mut pinned = match &gpu {
        Some(g) => {
            let bytes = 4 * (variant_bit_len.div_ceil(31) as usize + 1);
            Some([
                g.alloc_pinned(bytes)?,
                g.alloc_pinned(bytes)?,
                g.alloc_pinned(bytes)?,
            ])
        }
        None => None,
    };
    let mut report = Report {
        suite: "bitmap".into(),
        date: today(),
        device: device.clone(),
        bit_len,
        variant_bit_len,
        runs,
        cpu_runs,
        one_core_runs,
        cpu_threads,
        copy_ceiling_gbps,
        notes: vec![
            format!(
                "CPU 1 core: the sequential reference functions (`compress_serial`, `decompress_serial`), {}. CPU all cores: `compress`, `decompress`, `ops::binary` on {cpu_threads} threads, median of {cpu_runs} runs after a warm-up; roaring likewise, on one core.",
                if one_core_runs == 1 {
                    "one run without warm-up per figure".to_string()
                } else {
                    format!("median of {one_core_runs} runs after a warm-up")
                }
            ),
            "GPU comp: the compression's GPU time (CUDA events) with `compress_device_queued`, whose word count is read after the timed region (a caller that queues several compressions waits once); comp + host wait: `compress_device`, which also waits for the word count on the host. GPU dec, AND, OR: their whole calls.".into(),
            "GPU with PCIe: pageable host buffers, wall clock (upload + GPU + download).".into(),
            format!(
                "Query variants (paper section 5) on {variant_bit_len}-bit prefixes of the same bitmaps, wall clock, median of {runs} runs (GPU variants) or {cpu_runs} runs (CPU variants) after a warm-up; GPU variants move data through page-locked host buffers; CPU variants use all cores; PLWAH is operated on directly (no conversion to WAH). V1: upload compressed, GPU decompress both, GPU op, download plain. V2: upload, GPU op on compressed, GPU decompress, download plain. V3: upload, GPU op, download compressed, CPU decompress. V4: CPU decompress both, CPU op on plain. V5: CPU op on compressed, CPU decompress."
            ),
        ],
        densities: Vec::new(),
        seconds: 0.0,
    };
    for &k in &ks {
        let t_density = Instant::now();
        let a_bits = random_bits(bit_len, k, 0x5EED_0001);
        let b_bits = random_bits(bit_len, k, 0x5EED_0002);
        let (ra, rb) = rayon::join(|| roaring_of(&a_bits), || roaring_of(&b_bits));
        let roaring_and_ms = wall_ms(cpu_runs, || Ok(&ra & &rb))?;
        let roaring_or_ms = wall_ms(cpu_runs, || Ok(&ra | &rb))?;
        let mut d = DensityResult {
            k,
            set_bits: ra.len(),
            roaring_bytes: ra.serialized_size() as u64,
            roaring_and_ms,
            roaring_or_ms,
            flavors: Vec::new(),
            variants: Vec::new(),
        };
        drop((ra, rb));
        let sizes = Sizes {
            bit_len,
            runs,
            cpu_runs,
            one_core_runs,
        };
        for flavor in [Flavor::Wah, Flavor::Plwah] {
            d.flavors.push(bench_flavor(
                gpu.as_ref(),
                &one_core,
                flavor,
                &a_bits,
                &b_bits,
                sizes,
                copy_ceiling_gbps,
            )?);
        }
        let vbytes = variant_bit_len.div_ceil(8) as usize;
        d.variants = bench_variants(
            gpu.as_ref(),
            pinned.as_mut(),
            &a_bits[..vbytes],
            &b_bits[..vbytes],
            variant_bit_len,
            runs,
            cpu_runs,
        )?;
        print_density(&d);
        eprintln!(
            "  (2^-{k}: {:.1} s; {:.1} s so far)",
            t_density.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        report.densities.push(d);
        // Written after every density, so a run stopped by a time limit keeps what it measured.
        report.seconds = started.elapsed().as_secs_f64();
        write_outputs(&args.out, &report)?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    write_outputs(&args.out, &report)?;
    println!("{}", summary_table(&report));
    println!("{}", variants_table(&report));
    eprintln!("done in {:.1} s", report.seconds);
    Ok(())
}

#[derive(Debug, Clone, Copy)]
struct Sizes {
    bit_len: u64,
    runs: usize,
    cpu_runs: usize,
    one_core_runs: usize,
}

fn bench_flavor(
    gpu: Option<&Gpu>,
    one_core: &rayon::ThreadPool,
    flavor: Flavor,
    a_bits: &[u8],
    b_bits: &[u8],
    sizes: Sizes,
    ceiling: Option<f64>,
) -> Result<FlavorResult> {
    let Sizes {
        bit_len,
        runs,
        cpu_runs,
        one_core_runs,
    } = sizes;
    let a = Bitmap::compress(flavor, a_bits, bit_len)?;
    let b = Bitmap::compress(flavor, b_bits, bit_len)?;
    let cpu_compress_1core_ms = one_core.install(|| {
        one_core_ms(one_core_runs, || {
            Bitmap::compress_serial(flavor, a_bits, bit_len)
        })
    })?;
    let cpu_compress_all_ms = wall_ms(cpu_runs, || Bitmap::compress(flavor, a_bits, bit_len))?;
    let mut plain = vec![0u8; a_bits.len()];
    let cpu_decompress_1core_ms =
        one_core.install(|| one_core_ms(one_core_runs, || a.decompress_serial(&mut plain)))?;
    let cpu_decompress_all_ms = wall_ms(cpu_runs, || a.decompress(&mut plain))?;
    let cpu_and_ms = wall_ms(cpu_runs, || ops::binary(Op::And, &a, &b))?;
    let cpu_or_ms = wall_ms(cpu_runs, || ops::binary(Op::Or, &a, &b))?;
    drop(plain);
    let payload_bytes = a.to_payload().len() as u64;
    let mut r = FlavorResult {
        flavor: flavor_name(flavor),
        payload_bytes,
        cpu_compress_1core_ms,
        cpu_compress_all_ms,
        cpu_decompress_1core_ms,
        cpu_decompress_all_ms,
        cpu_and_ms,
        cpu_or_ms,
        gpu_compress_ms: None,
        gpu_compress_frac_of_copy: None,
        gpu_compress_sync_ms: None,
        gpu_compress_pcie_ms: None,
        gpu_decompress_ms: None,
        gpu_decompress_frac_of_copy: None,
        gpu_decompress_pcie_ms: None,
        gpu_and_ms: None,
        gpu_or_ms: None,
        gpu_decompress_and_ms: None,
        gpu_decompress_or_ms: None,
        verified: None,
    };
    let (Some(gpu), Some(ceiling)) = (gpu, ceiling) else {
        return Ok(r);
    };
    let words = gb::pack_words(a_bits, bit_len);
    let da_plain = gb::upload_plain(gpu, a_bits, bit_len)?;
    let db_plain = gb::upload_plain(gpu, b_bits, bit_len)?;
    let plain_bytes = a_bits.len() as u64;
    // Correctness first, outside the timed runs.
    let dca = gb::compress_device(gpu, flavor, &da_plain)?;
    let dcb = gb::compress_device(gpu, flavor, &db_plain)?;
    let mut ok = gb::download(gpu, &dca)? == a && gb::download(gpu, &dcb)? == b;
    ok &= gb::download(
        gpu,
        &gb::compress_device_queued(gpu, flavor, &da_plain)?.finish(gpu)?,
    )? == a;
    let mut d_out = gb::decompress_device(gpu, &dca)?;
    ok &= gb::download_plain(gpu, &d_out)? == a_bits;
    let and_gpu = gb::binary_device(gpu, Op::And, &dca, &dcb)?;
    ok &= gb::download(gpu, &and_gpu)? == a.and(&b)?;
    let or_gpu = gb::binary_device(gpu, Op::Or, &dca, &dcb)?;
    ok &= gb::download(gpu, &or_gpu)? == a.or(&b)?;
    if !ok {
        eprintln!("  {flavor:?}: GPU RESULT DIFFERS FROM THE CPU");
    }
    r.verified = Some(ok);

    let ms = gpu.median_ms_then(
        runs,
        || gb::compress_device_queued(gpu, flavor, &da_plain),
        |p| p.finish(gpu).map(drop),
    )?;
    r.gpu_compress_ms = Some(ms);
    r.gpu_compress_frac_of_copy = Some(gbps(plain_bytes + payload_bytes, ms) / ceiling);
    r.gpu_compress_sync_ms =
        Some(gpu.median_ms(runs, || gb::compress_device(gpu, flavor, &da_plain))?);
    r.gpu_compress_pcie_ms = Some(wall_ms(runs, || {
        let d = gpu.upload(&words)?;
        let p = gb::DevicePlain { words: d, bit_len };
        let c = gb::compress_device(gpu, flavor, &p)?;
        let mut host = vec![0u32; c.len];
        gpu.download(&c.words, &mut host)?;
        Ok(host)
    })?);
    let ms = gpu.median_ms(runs, || {
        gb::decompress_device_into(gpu, &dca, &mut d_out.words)
    })?;
    r.gpu_decompress_ms = Some(ms);
    r.gpu_decompress_frac_of_copy = Some(gbps(plain_bytes + payload_bytes, ms) / ceiling);
    let cwords = a.words().to_vec();
    r.gpu_decompress_pcie_ms = Some(wall_ms(runs, || {
        let d = gb::DeviceBitmap {
            flavor,
            bit_len,
            words: gpu.upload(&cwords)?,
            len: cwords.len(),
            tile_starts: None,
        };
        gb::decompress_device_into(gpu, &d, &mut d_out.words)?;
        let mut host = vec![0u32; d_out.word_count()];
        gpu.download(&d_out.words, &mut host)?;
        Ok(host)
    })?);
    r.gpu_and_ms = Some(gpu.median_ms(runs, || gb::binary_device(gpu, Op::And, &dca, &dcb))?);
    r.gpu_or_ms = Some(gpu.median_ms(runs, || gb::binary_device(gpu, Op::Or, &dca, &dcb))?);
    let mut pa = gb::decompress_device(gpu, &dca)?;
    let mut pb = gb::decompress_device(gpu, &dcb)?;
    let mut pr = gb::decompress_device(gpu, &dca)?;
    for (op, slot) in [
        (Op::And, &mut r.gpu_decompress_and_ms),
        (Op::Or, &mut r.gpu_decompress_or_ms),
    ] {
        *slot = Some(gpu.median_ms(runs, || {
            gb::decompress_device_into(gpu, &dca, &mut pa.words)?;
            gb::decompress_device_into(gpu, &dcb, &mut pb.words)?;
            gb::plain_op_device(gpu, op, &pa, &pb, &mut pr)?;
            gb::compress_device(gpu, flavor, &pr)
        })?);
    }
    Ok(r)
}

/// A page-locked buffer seen as u32 words (allocations are page-aligned).
fn pinned_words(p: &mut PinnedBuffer) -> Result<&mut [u32]> {
    let bytes = p.as_mut_slice()?;
    // SAFETY: every bit pattern is a valid u32 and u8 memory may be viewed as u32 where aligned;
    // `align_to_mut` only gives the aligned middle, and an unaligned start is refused below.
    let (head, words, _) = unsafe { bytes.align_to_mut::<u32>() };
    if !head.is_empty() {
        return Err(Error::InvalidArgument(
            "page-locked buffer not 4-byte aligned".into(),
        ));
    }
    Ok(words)
}

/// The words of a u32 slice as packed LSB-first bytes (little-endian words).
fn words_equal_bytes(words: &[u32], bytes: &[u8]) -> bool {
    words.len() == bytes.len().div_ceil(4)
        && words
            .par_iter()
            .zip(bytes.par_chunks(4))
            .all(|(w, c)| &w.to_le_bytes()[..c.len()] == c)
}

/// The paper's five variants (module docs) for both flavors, AND and OR.
fn bench_variants(
    gpu: Option<&Gpu>,
    mut pinned: Option<&mut [PinnedBuffer; 3]>,
    a_bits: &[u8],
    b_bits: &[u8],
    bit_len: u64,
    runs: usize,
    cpu_runs: usize,
) -> Result<Vec<VariantResult>> {
    let n = a_bits.len();
    let mut want = vec![0u8; n];
    let mut got = vec![0u8; n];
    let (mut pa, mut pb) = (vec![0u8; n], vec![0u8; n]);
    let mut out = Vec::new();
    for flavor in [Flavor::Wah, Flavor::Plwah] {
        let a = Bitmap::compress(flavor, a_bits, bit_len)?;
        let b = Bitmap::compress(flavor, b_bits, bit_len)?;
        for op in [Op::And, Op::Or] {
            plain_op(op, a_bits, b_bits, &mut want);
            // V4: CPU decompress both, CPU op on the plain bytes.
            got.fill(0xA5);
            let v4_ms = wall_ms(cpu_runs, || {
                a.decompress(&mut pa)?;
                b.decompress(&mut pb)?;
                plain_op(op, &pa, &pb, &mut got);
                Ok(())
            })?;
            let mut ok = got == want;
            // V5: CPU op on the compressed words, CPU decompress the result.
            got.fill(0xA5);
            let v5_ms = wall_ms(cpu_runs, || ops::binary(op, &a, &b)?.decompress(&mut got))?;
            ok &= got == want;
            let mut v = VariantResult {
                flavor: flavor_name(flavor),
                op: op_name(op),
                v1_ms: None,
                v2_ms: None,
                v3_ms: None,
                v4_ms,
                v5_ms,
                verified: ok,
            };
            if let (Some(gpu), Some(p)) = (gpu, pinned.as_deref_mut()) {
                let (ok_gpu, times) = gpu_variants(gpu, p, &a, &b, op, &want, &mut got, runs)?;
                v.v1_ms = Some(times[0]);
                v.v2_ms = Some(times[1]);
                v.v3_ms = Some(times[2]);
                v.verified &= ok_gpu;
            }
            if !v.verified {
                eprintln!(
                    "  {flavor:?} {op:?}: A QUERY VARIANT'S RESULT DIFFERS FROM THE PLAIN OP"
                );
            }
            out.push(v);
        }
    }
    Ok(out)
}

/// V1, V2, V3 on the GPU: whether all three results equal `want`, and their median wall ms.
#[allow(clippy::too_many_arguments)]
fn gpu_variants(
    gpu: &Gpu,
    pinned: &mut [PinnedBuffer; 3],
    a: &Bitmap,
    b: &Bitmap,
    op: Op,
    want: &[u8],
    got: &mut [u8],
    runs: usize,
) -> Result<(bool, [f64; 3])> {
    let (flavor, bit_len) = (a.flavor(), a.bit_len());
    let [pin_a, pin_b, pin_out] = pinned;
    let (na, nb) = (a.words().len(), b.words().len());
    pinned_words(pin_a)?[..na].copy_from_slice(a.words());
    pinned_words(pin_b)?[..nb].copy_from_slice(b.words());
    let (ha, hb) = (&pinned_words(pin_a)?[..na], &pinned_words(pin_b)?[..nb]);
    let host_out = pinned_words(pin_out)?;
    let plain_words = bit_len.div_ceil(32) as usize;
    let mut pa = gb::DevicePlain {
        words: gpu.alloc::<u32>(plain_words)?,
        bit_len,
    };
    let mut pb = gb::DevicePlain {
        words: gpu.alloc::<u32>(plain_words)?,
        bit_len,
    };
    let mut pr = gb::DevicePlain {
        words: gpu.alloc::<u32>(plain_words)?,
        bit_len,
    };
    let upload = |h: &[u32]| -> Result<gb::DeviceBitmap> {
        Ok(gb::DeviceBitmap {
            flavor,
            bit_len,
            words: gpu.upload(h)?,
            len: h.len(),
            tile_starts: None,
        })
    };
    let mut ok = true;
    // V1: upload both, decompress both, op on the plain words, download the plain result.
    host_out[..plain_words].fill(0xA5A5_A5A5);
    let v1 = wall_ms(runs, || {
        let (da, db) = (upload(ha)?, upload(hb)?);
        gb::decompress_device_into(gpu, &da, &mut pa.words)?;
        gb::decompress_device_into(gpu, &db, &mut pb.words)?;
        gb::plain_op_device(gpu, op, &pa, &pb, &mut pr)?;
        gpu.download(&pr.words, &mut host_out[..plain_words])
    })?;
    ok &= words_equal_bytes(&host_out[..plain_words], want);
    // V2: upload both, op on the compressed words, decompress the result, download it.
    host_out[..plain_words].fill(0xA5A5_A5A5);
    let v2 = wall_ms(runs, || {
        let (da, db) = (upload(ha)?, upload(hb)?);
        let dr = gb::binary_device(gpu, op, &da, &db)?;
        gb::decompress_device_into(gpu, &dr, &mut pr.words)?;
        gpu.download(&pr.words, &mut host_out[..plain_words])
    })?;
    ok &= words_equal_bytes(&host_out[..plain_words], want);
    // V3: upload both, op on the compressed words, download the compressed result, decompress
    // it on the CPU (all cores).
    got.fill(0xA5);
    let v3 = wall_ms(runs, || {
        let (da, db) = (upload(ha)?, upload(hb)?);
        let dr = gb::binary_device(gpu, op, &da, &db)?;
        if dr.len > host_out.len() {
            return Err(Error::Gpu("result longer than one word per group".into()));
        }
        gpu.download(&dr.words, &mut host_out[..dr.len])?;
        let r = Bitmap::from_words(flavor, bit_len, host_out[..dr.len].to_vec())?;
        r.decompress(got)
    })?;
    ok &= got == want;
    Ok((ok, [v1, v2, v3]))
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or("no GPU".into(), f)
}

fn print_density(d: &DensityResult) {
    for f in &d.flavors {
        eprintln!(
            "2^-{:<2} {:5} {:>12} B | CPU comp {:.1} ms (1 core) {:.1} ms (all), dec {:.1} / {:.1} ms, AND {:.2} ms | GPU comp {} ({}), dec {} ({}) | AND GPU {} vs roaring {:.2} ms{}",
            d.k,
            f.flavor,
            f.payload_bytes,
            f.cpu_compress_1core_ms,
            f.cpu_compress_all_ms,
            f.cpu_decompress_1core_ms,
            f.cpu_decompress_all_ms,
            f.cpu_and_ms,
            opt(f.gpu_compress_ms, |v| format!("{v:.3} ms")),
            opt(f.gpu_compress_frac_of_copy, |v| format!("{:.0}%", 100.0 * v)),
            opt(f.gpu_decompress_ms, |v| format!("{v:.3} ms")),
            opt(f.gpu_decompress_frac_of_copy, |v| format!("{:.0}%", 100.0 * v)),
            opt(f.gpu_and_ms, |v| format!("{v:.3} ms")),
            d.roaring_and_ms,
            match f.verified {
                Some(false) => " WRONG",
                _ => "",
            }
        );
    }
    for v in &d.variants {
        eprintln!(
            "2^-{:<2} {:5} {:3} variants ms: V1 {} V2 {} V3 {} V4 {:.2} V5 {:.2}{}",
            d.k,
            v.flavor,
            v.op,
            opt(v.v1_ms, |x| format!("{x:.2}")),
            opt(v.v2_ms, |x| format!("{x:.2}")),
            opt(v.v3_ms, |x| format!("{x:.2}")),
            v.v4_ms,
            v.v5_ms,
            if v.verified { "" } else { " WRONG" }
        );
    }
}

fn summary_table(r: &Report) -> String {
    let one = if r.one_core_runs == 1 { " (1 run)" } else { "" };
    let mut s = format!(
        "| density | flavor | bytes | roaring bytes | CPU comp 1 core ms{one} | CPU comp all ms | CPU dec 1 core ms{one} | CPU dec all ms | CPU AND all ms | CPU OR all ms | GPU comp ms | comp % copy | comp + host wait ms | comp+PCIe ms | GPU dec ms | dec % copy | dec+PCIe ms | GPU AND ms | roaring AND ms | AND speedup | dec-AND-comp ms | GPU OR ms | roaring OR ms | OR speedup | dec-OR-comp ms | ok |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let ms = |v: Option<f64>| opt(v, |x| format!("{x:.3}"));
    let pct = |v: Option<f64>| opt(v, |x| format!("{:.0}%", 100.0 * x));
    for d in &r.densities {
        for f in &d.flavors {
            s.push_str(&format!(
                "| 2^-{} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {:.3} | {} | {} | {} |\n",
                d.k,
                f.flavor,
                f.payload_bytes,
                d.roaring_bytes,
                f.cpu_compress_1core_ms,
                f.cpu_compress_all_ms,
                f.cpu_decompress_1core_ms,
                f.cpu_decompress_all_ms,
                f.cpu_and_ms,
                f.cpu_or_ms,
                ms(f.gpu_compress_ms),
                pct(f.gpu_compress_frac_of_copy),
                ms(f.gpu_compress_sync_ms),
                ms(f.gpu_compress_pcie_ms),
                ms(f.gpu_decompress_ms),
                pct(f.gpu_decompress_frac_of_copy),
                ms(f.gpu_decompress_pcie_ms),
                ms(f.gpu_and_ms),
                d.roaring_and_ms,
                opt(f.gpu_and_ms, |g| format!("{:.1}x", d.roaring_and_ms / g)),
                ms(f.gpu_decompress_and_ms),
                ms(f.gpu_or_ms),
                d.roaring_or_ms,
                opt(f.gpu_or_ms, |g| format!("{:.1}x", d.roaring_or_ms / g)),
                ms(f.gpu_decompress_or_ms),
                match f.verified {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                }
            ));
        }
    }
    s
}

fn variants_table(r: &Report) -> String {
    let mut s = format!(
        "Query variants on {}-bit bitmaps (wall ms, end to end):\n\n| density | flavor | op | V1 GPU dec+op | V2 GPU op+dec | V3 GPU op, CPU dec | V4 CPU dec+op | V5 CPU op+dec | fastest | ok |\n|---|---|---|---|---|---|---|---|---|---|\n",
        r.variant_bit_len
    );
    let ms = |v: Option<f64>| opt(v, |x| format!("{x:.2}"));
    for d in &r.densities {
        for v in &d.variants {
            let all = [
                ("V1", v.v1_ms),
                ("V2", v.v2_ms),
                ("V3", v.v3_ms),
                ("V4", Some(v.v4_ms)),
                ("V5", Some(v.v5_ms)),
            ];
            let best = all
                .iter()
                .filter_map(|(n, t)| t.map(|t| (*n, t)))
                .min_by(|x, y| x.1.total_cmp(&y.1))
                .map_or("-", |(n, _)| n);
            s.push_str(&format!(
                "| 2^-{} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} |\n",
                d.k,
                v.flavor,
                v.op,
                ms(v.v1_ms),
                ms(v.v2_ms),
                ms(v.v3_ms),
                v.v4_ms,
                v.v5_ms,
                best,
                if v.verified { "yes" } else { "NO" }
            ));
        }
    }
    s
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# tessera bitmap benchmark, {}\n\n{}; bitmaps of {} bits with uniform random bits of density 2^-k; \
         GPU: median of {} runs after a warm-up; {} CPU threads. Copy ceiling (device-to-device, \
         read + write): {}. % copy = (plain bytes + payload bytes) / time / ceiling. AND / OR: two independent \
         bitmaps of the same density; roaring on one core. Whole run: {:.0} s.\n\n",
        r.date,
        r.device,
        r.bit_len,
        r.runs,
        r.cpu_threads,
        r.copy_ceiling_gbps.map_or("no GPU".into(), |c| format!("{c:.0} GB/s")),
        r.seconds
    );
    for n in &r.notes {
        s.push_str(&format!("- {n}\n"));
    }
    s.push('\n');
    s.push_str(&summary_table(r));
    s.push('\n');
    s.push_str(&variants_table(r));
    s
}

fn chart(r: &Report) -> String {
    let mut series = Vec::new();
    for flavor in ["wah", "plwah"] {
        let pick = |f: &dyn Fn(&FlavorResult) -> Option<f64>| -> Vec<(f64, f64)> {
            r.densities
                .iter()
                .filter_map(|d| {
                    let fr = d.flavors.iter().find(|x| x.flavor == flavor)?;
                    f(fr).map(|v| (f64::from(d.k), v))
                })
                .collect()
        };
        let plain = r.bit_len.div_ceil(8);
        series.push(Series {
            name: format!("{flavor} GPU compress"),
            points: pick(&|f| {
                f.gpu_compress_ms
                    .map(|ms| gbps(plain + f.payload_bytes, ms))
            }),
            dashed: false,
        });
        series.push(Series {
            name: format!("{flavor} GPU decompress"),
            points: pick(&|f| {
                f.gpu_decompress_ms
                    .map(|ms| gbps(plain + f.payload_bytes, ms))
            }),
            dashed: false,
        });
    }
    if let Some(c) = r.copy_ceiling_gbps {
        series.push(Series {
            name: "copy ceiling".into(),
            points: r.densities.iter().map(|d| (f64::from(d.k), c)).collect(),
            dashed: true,
        });
    }
    line_chart(
        "GPU WAH / PLWAH throughput (read + written)",
        "density 2^-k: k",
        "GB/s",
        &series,
    )
}

fn write_outputs(dir: &Path, r: &Report) -> Result<()> {
    let extra = [(".md", markdown(r)), ("-throughput.svg", chart(r))];
    write_results(dir, &r.date, &r.device, "bitmap", r, &extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_op_matches_the_op_on_every_bit() {
        let (a, b) = (random_bits(70_001, 1, 1), random_bits(70_001, 2, 2));
        for op in [Op::And, Op::Or, Op::Xor, Op::AndNot] {
            let mut out = vec![0u8; a.len()];
            plain_op(op, &a, &b, &mut out);
            for i in 0..70_001 {
                let bit = |v: &[u8]| u32::from(v[i / 8] >> (i % 8) & 1);
                assert_eq!(bit(&out), op.apply(bit(&a), bit(&b)), "{op:?} bit {i}");
            }
        }
        assert!(words_equal_bytes(&[0x0403_0201, 5], &[1, 2, 3, 4, 5]));
        assert!(!words_equal_bytes(&[0x0403_0201, 6], &[1, 2, 3, 4, 5]));
    }

    #[test]
    fn random_bits_have_the_asked_density_and_no_bit_past_the_end() {
        let bits = random_bits(1_000_003, 3, 7);
        let ones: u32 = bits.iter().map(|b| b.count_ones()).sum();
        let expect = 1_000_003.0 / 8.0;
        assert!((f64::from(ones) - expect).abs() < expect * 0.05, "{ones}");
        assert_eq!(bits[bits.len() - 1] >> 3, 0);
        let r = roaring_of(&bits);
        assert_eq!(r.len(), u64::from(ones));
    }
}
