//! `tessera bench bitmap`: WAH / PLWAH on the CPU and the GPU, the paper's setup (GPU-PLWAH,
//! section 5): bitmaps of 1,677,721,600 bits (`--quick`: 1/16 of that) with uniform random bits
//! of density 2^-k, k = 1..=16 (`--quick`: odd k and 16).
//!
//! Per density: sizes (WAH, PLWAH, roaring); compression and decompression on the CPU (one
//! core; all cores where the codec has a multi-core path: compression) and on the GPU
//! (device-resident, and with the PCIe transfers: pageable host memory in, result out, wall
//! clock); GPU throughput as (bytes read + written) / time against the device-to-device copy
//! ceiling measured in the same run; AND / OR of two independent bitmaps of that density on the
//! compressed words on the GPU, against roaring (`RoaringBitmap`, one core) on the same
//! bitmaps and against GPU decompress-operate (decompress both, AND / OR the words, compress).
//! GPU results are checked against the CPU's words (compression, operations) and bytes
//! (decompression) outside the timed runs.
//!
//! Not done: the paper's five query variants on 120 MB bitmaps (only the two GPU variants that
//! matter here, compressed operation vs decompress-operate, are measured).
//!
//! Timing: GPU work between CUDA events, CPU work by wall clock; a warm-up then the median of
//! `--runs` runs (CPU: at most 3 runs per figure, the CPU codecs being 100x slower).

use super::common::{gbps, gpu_ms, median, today, wall_ms, write_results};
use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use tessera_codecs::bitmap::{ops::Op, Bitmap, Flavor};
use tessera_format::{Error, Result};
use tessera_gpu::bitmap as gb;
use tessera_gpu::Gpu;

use super::svg::{line_chart, Series};
use super::BenchArgs;

const FULL_BITS: u64 = 1_677_721_600;

/// Figures of one flavor at one density.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlavorResult {
    pub flavor: String,
    pub payload_bytes: u64,
    pub cpu_compress_1core_ms: f64,
    pub cpu_compress_all_ms: f64,
    pub cpu_decompress_ms: f64,
    pub gpu_compress_ms: Option<f64>,
    /// (plain bytes read + payload written) / time / copy ceiling.
    pub gpu_compress_frac_of_copy: Option<f64>,
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

/// Figures of one density.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DensityResult {
    pub k: u32,
    pub set_bits: u64,
    pub roaring_bytes: u64,
    pub roaring_and_ms: f64,
    pub roaring_or_ms: f64,
    pub flavors: Vec<FlavorResult>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    pub date: String,
    pub device: String,
    pub bit_len: u64,
    pub runs: usize,
    pub cpu_threads: usize,
    pub copy_ceiling_gbps: Option<f64>,
    pub notes: Vec<String>,
    pub densities: Vec<DensityResult>,
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

pub fn run(args: &BenchArgs) -> Result<()> {
    if args.runs < 5 {
        return Err(Error::InvalidArgument("--runs must be at least 5".into()));
    }
    let started = Instant::now();
    let bit_len = if args.quick {
        FULL_BITS / 16
    } else {
        FULL_BITS
    };
    let ks: Vec<u32> = if args.quick {
        vec![1, 3, 5, 7, 9, 11, 13, 16]
    } else {
        (1..=16).collect()
    };
    let runs = args.runs;
    let cpu_runs = runs.min(3);
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
            g.time_copy(&src, &mut dst)?;
            let mut t = Vec::new();
            for _ in 0..runs {
                t.push(g.time_copy(&src, &mut dst)? as f64);
            }
            Some(gbps(2 * plain_bytes, median(t)))
        }
        None => None,
    };
    let device = gpu
        .as_ref()
        .map_or("no GPU".to_string(), |g| g.info().name.clone());
    eprintln!(
        "{device}; {bit_len} bits per bitmap; copy ceiling {} GB/s",
        copy_ceiling_gbps.map_or("-".into(), |c| format!("{c:.0}"))
    );
    let mut report = Report {
        suite: "bitmap".into(),
        date: today(),
        device: device.clone(),
        bit_len,
        runs,
        cpu_threads: rayon::current_num_threads(),
        copy_ceiling_gbps,
        notes: vec![
            "CPU decompression is single-threaded (the codec has no multi-core decoder).".into(),
            "GPU with PCIe: pageable host buffers, wall clock (upload + GPU + download).".into(),
            "The paper's five query variants on 120 MB bitmaps were not run.".into(),
        ],
        densities: Vec::new(),
    };
    for &k in &ks {
        let a_bits = random_bits(bit_len, k, 0x5EED_0001);
        let b_bits = random_bits(bit_len, k, 0x5EED_0002);
        let (ra, rb) = (roaring_of(&a_bits), roaring_of(&b_bits));
        let roaring_and_ms = wall_ms(cpu_runs, || Ok(&ra & &rb))?;
        let roaring_or_ms = wall_ms(cpu_runs, || Ok(&ra | &rb))?;
        let mut d = DensityResult {
            k,
            set_bits: ra.len(),
            roaring_bytes: ra.serialized_size() as u64,
            roaring_and_ms,
            roaring_or_ms,
            flavors: Vec::new(),
        };
        for flavor in [Flavor::Wah, Flavor::Plwah] {
            d.flavors.push(bench_flavor(
                gpu.as_ref(),
                &one_core,
                flavor,
                &a_bits,
                &b_bits,
                bit_len,
                runs,
                cpu_runs,
                copy_ceiling_gbps,
            )?);
        }
        print_density(&d);
        report.densities.push(d);
    }
    write_outputs(&args.out, &report)?;
    println!("{}", summary_table(&report));
    eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn bench_flavor(
    gpu: Option<&Gpu>,
    one_core: &rayon::ThreadPool,
    flavor: Flavor,
    a_bits: &[u8],
    b_bits: &[u8],
    bit_len: u64,
    runs: usize,
    cpu_runs: usize,
    ceiling: Option<f64>,
) -> Result<FlavorResult> {
    let a = Bitmap::compress(flavor, a_bits, bit_len)?;
    let b = Bitmap::compress(flavor, b_bits, bit_len)?;
    let cpu_compress_1core_ms =
        one_core.install(|| wall_ms(cpu_runs, || Bitmap::compress(flavor, a_bits, bit_len)))?;
    let cpu_compress_all_ms = wall_ms(cpu_runs, || Bitmap::compress(flavor, a_bits, bit_len))?;
    let mut plain = vec![0u8; a_bits.len()];
    let cpu_decompress_ms = wall_ms(cpu_runs, || a.decompress(&mut plain))?;
    let payload_bytes = a.to_payload().len() as u64;
    let mut r = FlavorResult {
        flavor: format!("{flavor:?}").to_lowercase(),
        payload_bytes,
        cpu_compress_1core_ms,
        cpu_compress_all_ms,
        cpu_decompress_ms,
        gpu_compress_ms: None,
        gpu_compress_frac_of_copy: None,
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

    let ms = gpu_ms(gpu, runs, || gb::compress_device(gpu, flavor, &da_plain))?;
    r.gpu_compress_ms = Some(ms);
    r.gpu_compress_frac_of_copy = Some(gbps(plain_bytes + payload_bytes, ms) / ceiling);
    r.gpu_compress_pcie_ms = Some(wall_ms(runs, || {
        let d = gpu.upload(&words)?;
        let p = gb::DevicePlain { words: d, bit_len };
        let c = gb::compress_device(gpu, flavor, &p)?;
        let mut host = vec![0u32; c.len];
        gpu.download(&c.words, &mut host)?;
        Ok(host)
    })?);
    let ms = gpu_ms(gpu, runs, || {
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
        };
        gb::decompress_device_into(gpu, &d, &mut d_out.words)?;
        let mut host = vec![0u32; d_out.word_count()];
        gpu.download(&d_out.words, &mut host)?;
        Ok(host)
    })?);
    r.gpu_and_ms = Some(gpu_ms(gpu, runs, || {
        gb::binary_device(gpu, Op::And, &dca, &dcb)
    })?);
    r.gpu_or_ms = Some(gpu_ms(gpu, runs, || {
        gb::binary_device(gpu, Op::Or, &dca, &dcb)
    })?);
    let mut pa = gb::decompress_device(gpu, &dca)?;
    let mut pb = gb::decompress_device(gpu, &dcb)?;
    let mut pr = gb::decompress_device(gpu, &dca)?;
    for (op, slot) in [
        (Op::And, &mut r.gpu_decompress_and_ms),
        (Op::Or, &mut r.gpu_decompress_or_ms),
    ] {
        *slot = Some(gpu_ms(gpu, runs, || {
            gb::decompress_device_into(gpu, &dca, &mut pa.words)?;
            gb::decompress_device_into(gpu, &dcb, &mut pb.words)?;
            gb::plain_op_device(gpu, op, &pa, &pb, &mut pr)?;
            gb::compress_device(gpu, flavor, &pr)
        })?);
    }
    Ok(r)
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or("no GPU".into(), f)
}

fn print_density(d: &DensityResult) {
    for f in &d.flavors {
        eprintln!(
            "2^-{:<2} {:5} {:>12} B | CPU comp {:.1} ms (1 core) {:.1} ms (all), dec {:.1} ms | GPU comp {} ({}), dec {} ({}) | AND GPU {} vs roaring {:.2} ms{}",
            d.k,
            f.flavor,
            f.payload_bytes,
            f.cpu_compress_1core_ms,
            f.cpu_compress_all_ms,
            f.cpu_decompress_ms,
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
}

fn summary_table(r: &Report) -> String {
    let mut s = String::from(
        "| density | flavor | bytes | roaring bytes | CPU comp 1 core ms | CPU comp all ms | CPU dec ms | GPU comp ms | comp % copy | comp+PCIe ms | GPU dec ms | dec % copy | dec+PCIe ms | GPU AND ms | roaring AND ms | AND speedup | dec-AND-comp ms | GPU OR ms | roaring OR ms | OR speedup | ok |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let ms = |v: Option<f64>| opt(v, |x| format!("{x:.3}"));
    let pct = |v: Option<f64>| opt(v, |x| format!("{:.0}%", 100.0 * x));
    for d in &r.densities {
        for f in &d.flavors {
            s.push_str(&format!(
                "| 2^-{} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {:.3} | {} | {} |\n",
                d.k,
                f.flavor,
                f.payload_bytes,
                d.roaring_bytes,
                f.cpu_compress_1core_ms,
                f.cpu_compress_all_ms,
                f.cpu_decompress_ms,
                ms(f.gpu_compress_ms),
                pct(f.gpu_compress_frac_of_copy),
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

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# tessera bitmap benchmark, {}\n\n{}; bitmaps of {} bits with uniform random bits of density 2^-k; \
         median of {} runs after a warm-up (CPU: at most 3); {} CPU threads. Copy ceiling (device-to-device, \
         read + write): {}. % copy = (plain bytes + payload bytes) / time / ceiling. AND / OR: two independent \
         bitmaps of the same density; roaring on one core.\n\n",
        r.date,
        r.device,
        r.bit_len,
        r.runs,
        r.cpu_threads,
        r.copy_ceiling_gbps.map_or("no GPU".into(), |c| format!("{c:.0} GB/s"))
    );
    for n in &r.notes {
        s.push_str(&format!("- {n}\n"));
    }
    s.push('\n');
    s.push_str(&summary_table(r));
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
