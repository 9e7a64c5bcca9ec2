//! `tessera-bench huffman`: canonical Huffman (`docs/format/huffman.md`) on the GPU and on all
//! CPU cores, per data set:
//! - real text / XML: each `--input` file repeated up to `--bytes`; without `--input`, the text
//!   files found under /usr/share (common-licenses, doc/*/copyright, *.xml) concatenated;
//! - synthetic skewed bytes: geometric (symbol k with probability 2^-(k+1)) and Zipf(1.2) over
//!   256 byte values.
//!
//! Figures: compressed size against the optimal unrestricted Huffman size of the same chunks
//! (sum of freq * length of an unrestricted Huffman code, rounded up to bytes, plus a 256-byte
//! table per chunk: the baseline does not move with the format) and the gap's breakdown
//! (block_info, the 13-bit length limit, header and word padding, raw chunks); the compression
//! ratio; GPU histogram, encode and decode throughput on device-resident data (CUDA events,
//! median of `--runs` after a warm-up; encode is end to end, its host round trip for the code
//! tables included, and is then broken down by phase: histogram launch, host step with its
//! transfers, packing launches); the host's code construction per chunk (CPU, measured with or
//! without a GPU); against the device-to-device copy ceiling measured in the same run; CPU
//! encode and decode on all cores (rayon over 16 MiB chunks with the `tessera::codecs` API).
//! Every GPU payload is compared with the CPU encoder's and every decoded output with the
//! input. `--dump DIR` writes each set's bytes to `DIR/<set>.bin` for the nvCOMP peer script
//! (ANS and GDeflate entropy-only on the same bytes). Numbers are printed and saved, never
//! asserted.

use super::common::{gbps, io, median, slug, today, wall_ms, write_results};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tessera::codecs::huffman as cpu;
use tessera::format::{Error, Result};
use tessera::gpu::huffman as ghuff;
use tessera::gpu::Gpu;

use super::BenchArgs;

/// Bytes per chunk: the format's largest (best ratio, fewest tables).
const CHUNK_BYTES: usize = 1 << 24;
const QUICK_BYTES: usize = 256 << 20;

/// GPU figures of one data set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuFigures {
    pub histogram_ms: f64,
    pub histogram_gbps: f64,
    /// Histogram, host planning, packing: input bytes per second, end to end.
    pub encode_ms: f64,
    pub encode_gbps: f64,
    /// Phases of the encode (medians of separate runs with CUDA events between the phases).
    pub encode_histogram_ms: f64,
    /// Histogram download, code construction, table upload, output allocation.
    pub encode_host_ms: f64,
    /// Of `encode_host_ms`: the code construction on the host (wall clock).
    pub encode_plan_ms: f64,
    /// Strip bits, packing, headers and block_info.
    pub encode_pack_ms: f64,
    /// Input bytes / `encode_pack_ms`.
    pub pack_gbps: f64,
    /// Output bytes per second.
    pub decode_ms: f64,
    pub decode_gbps: f64,
    /// (payload + output bytes) / decode time / copy ceiling.
    pub decode_frac_of_copy: f64,
    /// Every GPU payload equals the CPU encoder's.
    pub encode_matches_cpu: bool,
    /// The GPU decoder's output equals the input.
    pub decode_verified: bool,
}

/// Figures of one data set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetResult {
    pub name: String,
    pub source: String,
    pub bytes: usize,
    pub chunks: usize,
    pub huffman_chunks: usize,
    pub compressed_bytes: u64,
    /// compressed / input.
    pub ratio: f64,
    /// Optimal unrestricted Huffman stream of every chunk, rounded up to bytes, plus a
    /// 256-byte table per chunk.
    pub optimal_bytes: u64,
    /// compressed / optimal - 1.
    pub over_optimal: f64,
    /// The gap compressed - optimal, in bytes, by cause: block_info entries; the length limit
    /// (limited minus unrestricted stream bits, / 8); header, word padding and rounding; raw
    /// chunks (their payload minus their optimum).
    pub gap_block_info: f64,
    pub gap_length_limit: f64,
    pub gap_header_padding: f64,
    pub gap_raw: f64,
    /// Host code construction ([`cpu::plan_chunks`] on this set's chunk histograms, all
    /// cores), microseconds per chunk and in all.
    pub plan_us_per_chunk: f64,
    pub plan_ms: f64,
    pub gpu: Option<GpuFigures>,
    pub cpu_encode_ms: f64,
    pub cpu_encode_gbps: f64,
    pub cpu_decode_ms: f64,
    pub cpu_decode_gbps: f64,
    /// The CPU round trip gave the input back.
    pub cpu_verified: bool,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    pub date: String,
    pub device: String,
    pub driver: String,
    /// Device-to-device copy, (bytes read + written) per second, GB/s; `None` without a GPU.
    pub copy_ceiling_gbps: Option<f64>,
    pub bytes_per_set: usize,
    pub chunk_bytes: usize,
    pub runs: usize,
    pub cpu_threads: usize,
    pub notes: Vec<String>,
    pub sets: Vec<SetResult>,
}

/// `seed` repeated up to `n` bytes.
fn repeat_to(seed: &[u8], n: usize) -> Vec<u8> {
    if seed.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let take = (n - out.len()).min(seed.len());
        out.extend_from_slice(&seed[..take]);
    }
    out
}

/// Text files under /usr/share, concatenated (the fallback when no --input is given).
fn usr_share_text(limit: usize) -> (Vec<u8>, usize) {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut push_dir = |dir: &Path, pick: &dyn Fn(&Path) -> bool, depth: usize| {
        let mut stack = vec![(dir.to_path_buf(), 0usize)];
        while let Some((d, lvl)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            entries.sort();
            for p in entries {
                if p.is_symlink() {
                    continue;
                }
                if p.is_dir() {
                    if lvl < depth {
                        stack.push((p, lvl + 1));
                    }
                } else if pick(&p) {
                    files.push(p);
                }
            }
        }
    };
    push_dir(Path::new("/usr/share/common-licenses"), &|_| true, 0);
    push_dir(
        Path::new("/usr/share/doc"),
        &|p| p.file_name().is_some_and(|n| n == "copyright"),
        1,
    );
    push_dir(
        Path::new("/usr/share"),
        &|p| p.extension().is_some_and(|e| e == "xml"),
        6,
    );
    files.sort();
    files.dedup();
    let mut out = Vec::new();
    let mut used = 0;
    for f in files {
        if out.len() >= limit {
            break;
        }
        if let Ok(b) = std::fs::read(&f) {
            // Text only: skip files with NUL bytes (compressed or binary).
            if !b.is_empty() && !b.contains(&0) {
                out.extend_from_slice(&b);
                used += 1;
            }
        }
    }
    (out, used)
}

/// Skewed synthetic bytes, generated in parallel from per-piece seeds.
fn synthetic(n: usize, kind: &str) -> Vec<u8> {
    let mut out = vec![0u8; n];
    out.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, piece)| {
            let mut r = StdRng::seed_from_u64(0x5EED ^ i as u64);
            match kind {
                "geometric" => {
                    for b in piece.iter_mut() {
                        *b = (r.random::<u64>().trailing_zeros() as u8).min(39) + b'a';
                    }
                }
                _ => {
                    let z = Zipf::new(256.0, 1.2).expect("valid Zipf parameters");
                    for b in piece.iter_mut() {
                        *b = (z.sample(&mut r) as u64 - 1) as u8;
                    }
                }
            }
        });
    out
}

/// A data set, made when it is measured (sets are up to `--bytes` each).
struct SetSpec {
    name: String,
    source: String,
    make: Box<dyn Fn() -> Result<Vec<u8>>>,
}

/// Every data set: the inputs (or the /usr/share fallback), then the synthetic ones.
fn data_sets(args: &BenchArgs, n: usize) -> Vec<SetSpec> {
    let mut sets = Vec::new();
    if args.input.is_empty() {
        sets.push(SetSpec {
            name: "usr-share-text".into(),
            source: "text files under /usr/share (common-licenses, doc/*/copyright, *.xml), concatenated and repeated".into(),
            make: Box::new(move || {
                let (seed, files) = usr_share_text(n);
                eprintln!("usr-share-text: {files} files, {} bytes", seed.len());
                Ok(repeat_to(&seed, n))
            }),
        });
    }
    for path in &args.input {
        let name = path
            .file_name()
            .map_or("input".into(), |s| slug(&s.to_string_lossy()));
        let p = path.clone();
        sets.push(SetSpec {
            name,
            source: format!("{}, repeated", path.display()),
            make: Box::new(move || {
                let seed = std::fs::read(&p).map_err(io(&p))?;
                Ok(repeat_to(&seed, n))
            }),
        });
    }
    sets.push(SetSpec {
        name: "geometric-40".into(),
        source: "synthetic: byte 'a'+k with probability 2^-(k+1), 40 symbols".into(),
        make: Box::new(move || Ok(synthetic(n, "geometric"))),
    });
    sets.push(SetSpec {
        name: "zipf-1.2".into(),
        source: "synthetic: Zipf(1.2) over 256 byte values".into(),
        make: Box::new(move || Ok(synthetic(n, "zipf"))),
    });
    sets
}

/// Per chunk: the histogram and the unrestricted optimum (stream bits).
fn chunk_optima(data: &[u8]) -> Result<Vec<([u64; 256], u64)>> {
    data.par_chunks(CHUNK_BYTES)
        .map(|c| {
            let h = cpu::histogram(c);
            let l = cpu::code_lengths(&h, 255)?;
            let bits: u64 = h.iter().zip(&l).map(|(&f, &l)| f * l as u64).sum();
            Ok((h, bits))
        })
        .collect()
}

/// Optimal unrestricted Huffman size of every chunk (rounded up to bytes), plus a 256-byte
/// table each.
fn optimal_bytes(optima: &[([u64; 256], u64)]) -> u64 {
    optima
        .iter()
        .map(|(_, bits)| bits.div_ceil(8) + cpu::CODE_LENGTHS_BYTES as u64)
        .sum()
}

/// The gap between the payloads and the optimum, by cause: (block_info, length limit, header
/// and padding, raw chunks), in bytes; they add up to compressed - optimal.
fn gap_breakdown(payloads: &[Vec<u8>], optima: &[([u64; 256], u64)]) -> (f64, f64, f64, f64) {
    let (mut info, mut limit, mut header, mut raw) = (0.0, 0.0, 0.0, 0.0);
    for (p, (_, free)) in payloads.iter().zip(optima) {
        let optimum = (free.div_ceil(8) + cpu::CODE_LENGTHS_BYTES as u64) as f64;
        let w = |i: usize| u32::from_le_bytes([p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]]);
        let mode = w(0);
        if mode == cpu::MODE_RAW {
            raw += p.len() as f64 - optimum;
            continue;
        }
        let sb = w(3) as u64;
        let i = cpu::block_info_bytes(mode, sb.div_ceil(cpu::BLOCK_BITS as u64)) as f64;
        let l = (sb as f64 - *free as f64) / 8.0;
        info += i;
        limit += l;
        header += p.len() as f64 - optimum - i - l;
    }
    (info, limit, header, raw)
}

fn cpu_encode_all(data: &[u8]) -> Result<Vec<Vec<u8>>> {
    data.par_chunks(CHUNK_BYTES)
        .map(|c| {
            let mut p = Vec::with_capacity(cpu::max_encoded_len(c.len()));
            cpu::encode(c, &mut p)?;
            Ok(p)
        })
        .collect()
}

fn cpu_decode_all(payloads: &[Vec<u8>], out: &mut [u8]) -> Result<()> {
    out.par_chunks_mut(CHUNK_BYTES)
        .zip(payloads.par_iter())
        .try_for_each(|(o, p)| cpu::decode(p, o))
}

fn bench_set(
    gpu: Option<&Gpu>,
    args: &BenchArgs,
    name: &str,
    source: &str,
    data: &[u8],
    copy_ceiling: Option<f64>,
) -> Result<SetResult> {
    let n = data.len();
    // CPU, all cores.
    let payloads = cpu_encode_all(data)?;
    let cpu_encode_ms = wall_ms(args.runs, || cpu_encode_all(data).map(|_| ()))?;
    let mut out = vec![0u8; n];
    let cpu_decode_ms = wall_ms(args.runs, || cpu_decode_all(&payloads, &mut out))?;
    let cpu_verified = out == data;
    let compressed: u64 = payloads.iter().map(|p| p.len() as u64).sum();
    let huffman_chunks = payloads
        .iter()
        .filter(|p| p.len() >= 4 && p[..4] == cpu::MODE_HUFFMAN.to_le_bytes())
        .count();
    let optima = chunk_optima(data)?;
    let optimal = optimal_bytes(&optima);
    let (gap_block_info, gap_length_limit, gap_header_padding, gap_raw) =
        gap_breakdown(&payloads, &optima);
    // The host step of the GPU encoder, on the CPU: plan every chunk from its histogram.
    let hists: Vec<u32> = optima
        .iter()
        .flat_map(|(h, _)| h.iter().map(|&x| x as u32))
        .collect();
    let plan_ms = wall_ms(args.runs, || {
        std::hint::black_box(cpu::plan_chunks(std::hint::black_box(&hists)));
        Ok(())
    })?;

    let gpu_figs = match gpu {
        None => None,
        Some(g) => Some(bench_gpu(
            g,
            args,
            data,
            &payloads,
            copy_ceiling,
            compressed,
        )?),
    };
    Ok(SetResult {
        name: name.into(),
        source: source.into(),
        bytes: n,
        chunks: payloads.len(),
        huffman_chunks,
        compressed_bytes: compressed,
        ratio: compressed as f64 / n.max(1) as f64,
        optimal_bytes: optimal,
        over_optimal: compressed as f64 / optimal.max(1) as f64 - 1.0,
        gap_block_info,
        gap_length_limit,
        gap_header_padding,
        gap_raw,
        plan_us_per_chunk: 1e3 * plan_ms / optima.len().max(1) as f64,
        plan_ms,
        gpu: gpu_figs,
        cpu_encode_ms,
        cpu_encode_gbps: gbps(n as u64, cpu_encode_ms),
        cpu_decode_ms,
        cpu_decode_gbps: gbps(n as u64, cpu_decode_ms),
        cpu_verified,
    })
}

fn bench_gpu(
    gpu: &Gpu,
    args: &BenchArgs,
    data: &[u8],
    cpu_payloads: &[Vec<u8>],
    copy_ceiling: Option<f64>,
    compressed: u64,
) -> Result<GpuFigures> {
    let n = data.len();
    let d_in = gpu.upload(data)?;
    let histogram_ms = gpu.median_ms(args.runs, || {
        ghuff::histogram_device(gpu, &d_in, n).map(|_| ())
    })?;
    let mut scratch = ghuff::EncodeScratch::default();
    let mut enc = ghuff::encode_device(gpu, &d_in, n, CHUNK_BYTES, &mut scratch)?;
    let encode_ms = gpu.median_ms(args.runs, || {
        enc = ghuff::encode_device(gpu, &d_in, n, CHUNK_BYTES, &mut scratch)?;
        Ok(())
    })?;
    // The same encode, timed by phase (CUDA events between the phases).
    let mut phases: [Vec<f64>; 4] = Default::default();
    for _ in 0..args.runs {
        let t;
        (enc, t) = tessera::gpu::bench_hooks::huffman::encode_device_timed(
            gpu,
            &d_in,
            n,
            CHUNK_BYTES,
            &mut scratch,
        )?;
        for (v, x) in phases
            .iter_mut()
            .zip([t.histogram_ms, t.host_ms, t.plan_ms, t.pack_ms])
        {
            v.push(x);
        }
    }
    let [h_ms, host_ms, plan_ms, pack_ms] = phases.map(median);
    let got = ghuff::download_encoded(gpu, &enc)?;
    let encode_matches_cpu =
        got.len() == cpu_payloads.len() && got.iter().zip(cpu_payloads).all(|(a, b)| a == b);
    drop(got);
    let mut plan = ghuff::plan_decode(gpu, &enc)?;
    let mut d_out = gpu.alloc::<u8>(n)?;
    gpu.fill_bytes(&mut d_out, 0xA5)?;
    let decode_ms = gpu.median_ms(args.runs, || {
        ghuff::decode_planned(gpu, &enc, &mut plan, &mut d_out)
    })?;
    let mut back = vec![0u8; n];
    gpu.download(&d_out, &mut back)?;
    let decode_verified = back == data;
    let moved = compressed + n as u64;
    Ok(GpuFigures {
        histogram_ms,
        histogram_gbps: gbps(n as u64, histogram_ms),
        encode_ms,
        encode_gbps: gbps(n as u64, encode_ms),
        encode_histogram_ms: h_ms,
        encode_host_ms: host_ms,
        encode_plan_ms: plan_ms,
        encode_pack_ms: pack_ms,
        pack_gbps: gbps(n as u64, pack_ms),
        decode_ms,
        decode_gbps: gbps(n as u64, decode_ms),
        decode_frac_of_copy: copy_ceiling.map_or(f64::NAN, |c| gbps(moved, decode_ms) / c),
        encode_matches_cpu,
        decode_verified,
    })
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if args.runs < 5 {
        return Err(Error::InvalidArgument("--runs must be at least 5".into()));
    }
    let started = Instant::now();
    let n = if args.quick {
        args.bytes.min(QUICK_BYTES)
    } else {
        args.bytes
    };
    let gpu = match Gpu::new().and_then(|g| g.warm_up().map(|()| g)) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("no GPU ({e}): CPU columns only");
            None
        }
    };
    let cpu_threads = rayon::current_num_threads();
    let (device, driver) = match &gpu {
        Some(g) => {
            let i = g.info();
            (
                i.name.clone(),
                format!(
                    "{}.{}",
                    i.driver_version / 1000,
                    i.driver_version % 1000 / 10
                ),
            )
        }
        None => ("no GPU".to_string(), "-".to_string()),
    };
    eprintln!("{device}; {cpu_threads} CPU threads; {n} bytes per set, chunks of {CHUNK_BYTES}");

    let copy_ceiling_gbps = match &gpu {
        Some(g) => {
            let src = g.alloc::<u8>(n.max(1))?;
            let mut dst = g.alloc::<u8>(n.max(1))?;
            let c = g.copy_ceiling_gbps(&src, &mut dst, args.runs)?;
            eprintln!("copy ceiling {c:.0} GB/s (read + write)");
            Some(c)
        }
        None => None,
    };
    let mut report = Report {
        suite: "huffman".into(),
        date: today(),
        device,
        driver,
        copy_ceiling_gbps,
        bytes_per_set: n,
        chunk_bytes: CHUNK_BYTES,
        runs: args.runs,
        cpu_threads,
        notes: vec![
            "GPU encode GB/s is end to end: input bytes / time from device-resident input to device-resident payloads, including the histogram launch, the one download of all chunk histograms, code construction on the host (all cores), the one upload of all code tables and the packing launches".into(),
            "GPU encode breakdown (ms): histogram launch / host step (download, code construction, upload, output allocation; the GPU idles) / of which code construction alone / packing launches (strip bits, pack, block_info); medians of separate runs with CUDA events between the phases".into(),
            "vs optimal: payload bytes against the optimal unrestricted Huffman stream of each 16 MiB chunk (rounded up to bytes) plus a 256-byte table per chunk; the gap is split into block_info, the 13-bit length limit, header + word padding, and raw chunks (percent of the optimum)".into(),
            "host plan: cpu::plan_chunks (package-merge at 13 bits, canonical codes, raw or huffman) on the set's chunk histograms, all cores, per chunk".into(),
            "decode_frac_of_copy: (payload + output bytes) / time / copy ceiling".into(),
        ],
        sets: Vec::new(),
    };
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    for spec in data_sets(args, n) {
        let name = spec.name.as_str();
        if !args.selects(name) {
            continue;
        }
        let t0 = Instant::now();
        let data = (spec.make)()?;
        if data.is_empty() {
            eprintln!("{name}: no bytes, skipped");
            continue;
        }
        let source = spec.source.as_str();
        if let Some(dir) = &args.dump {
            let path = dir.join(format!("{name}.bin"));
            std::fs::write(&path, &data).map_err(io(&path))?;
        }
        let r = bench_set(gpu.as_ref(), args, name, source, &data, copy_ceiling_gbps)?;
        eprintln!("{}  ({:.1} s)", row(&r), t0.elapsed().as_secs_f64());
        report.sets.push(r);
        write_outputs(&args.out, &report)?;
    }
    write_outputs(&args.out, &report)?;
    println!("\n{}", table(&report));
    eprintln!(
        "bench huffman done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn f1(v: f64) -> String {
    if v.is_finite() && v >= 10.0 {
        format!("{v:.1}")
    } else if v.is_finite() {
        format!("{v:.2}")
    } else {
        "-".into()
    }
}

fn row(s: &SetResult) -> String {
    let g = |f: &dyn Fn(&GpuFigures) -> String| s.gpu.as_ref().map_or("no GPU".into(), f);
    format!(
        "| {} | {:.2} MB | {:.4} | {:+.2}% | {} | {} | {} | {} | {} | {} |",
        s.name,
        s.bytes as f64 / 1e6,
        s.ratio,
        100.0 * s.over_optimal,
        g(&|x| f1(x.histogram_gbps)),
        g(&|x| f1(x.encode_gbps)),
        g(&|x| format!(
            "{} ({}%)",
            f1(x.decode_gbps),
            f1(100.0 * x.decode_frac_of_copy)
        )),
        f1(s.cpu_encode_gbps),
        f1(s.cpu_decode_gbps),
        match &s.gpu {
            Some(x) => format!(
                "{}{}{}",
                if x.encode_matches_cpu {
                    "enc=cpu "
                } else {
                    "ENC DIFFERS "
                },
                if x.decode_verified {
                    "dec ok"
                } else {
                    "DEC WRONG"
                },
                if s.cpu_verified { "" } else { " CPU WRONG" }
            ),
            None => if s.cpu_verified {
                "cpu ok"
            } else {
                "CPU WRONG"
            }
            .into(),
        },
    )
}

fn table(r: &Report) -> String {
    let mut s = String::new();
    s.push_str("| set | bytes | ratio | vs optimal | GPU histogram GB/s | GPU encode GB/s | GPU decode GB/s (% of copy) | CPU encode GB/s | CPU decode GB/s | checks |\n");
    s.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for set in &r.sets {
        s.push_str(&row(set));
        s.push('\n');
    }
    s.push_str("\n| set | vs optimal | block_info | length limit | header + padding | raw chunks | host plan us/chunk | GPU encode ms: histogram / host (plan) / pack | pack GB/s |\n");
    s.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for set in &r.sets {
        let pct = |x: f64| format!("{:+.3}%", 100.0 * x / set.optimal_bytes.max(1) as f64);
        s.push_str(&format!(
            "| {} | {:+.3}% | {} | {} | {} | {} | {} | {} | {} |\n",
            set.name,
            100.0 * set.over_optimal,
            pct(set.gap_block_info),
            pct(set.gap_length_limit),
            pct(set.gap_header_padding),
            pct(set.gap_raw),
            f1(set.plan_us_per_chunk),
            set.gpu.as_ref().map_or("no GPU".into(), |g| format!(
                "{:.3} / {:.3} ({:.3}) / {:.3}",
                g.encode_histogram_ms, g.encode_host_ms, g.encode_plan_ms, g.encode_pack_ms
            )),
            set.gpu
                .as_ref()
                .map_or("no GPU".into(), |g| f1(g.pack_gbps)),
        ));
    }
    s
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# tessera-bench huffman: {} ({})\n\nDriver {}; {} CPU threads; {} bytes per set in chunks of {} bytes; median of {} runs after a warm-up. Copy ceiling: {}.\n\n",
        r.device,
        r.date,
        r.driver,
        r.cpu_threads,
        r.bytes_per_set,
        r.chunk_bytes,
        r.runs,
        r.copy_ceiling_gbps
            .map_or("no GPU".into(), |c| format!("{c:.0} GB/s (read + write)"))
    );
    s.push_str("Throughput: GPU and CPU encode = input bytes / time (GPU: end to end, the host round trip for the code tables included); decode = output bytes / time. ratio = compressed / input; vs optimal = compressed against the optimal unrestricted Huffman stream of the same chunks plus a 256-byte table per chunk, then split by cause (percent of the optimum). The second table breaks the GPU encode down by phase.\n\n");
    s.push_str(&table(r));
    s.push_str("\n## Data sets\n\n| set | source | chunks (huffman) | compressed bytes | optimal bytes |\n| --- | --- | --- | --- | --- |\n");
    for set in &r.sets {
        s.push_str(&format!(
            "| {} | {} | {} ({}) | {} | {} |\n",
            set.name,
            set.source,
            set.chunks,
            set.huffman_chunks,
            set.compressed_bytes,
            set.optimal_bytes
        ));
    }
    s.push_str("\n## Notes\n\n");
    for note in &r.notes {
        s.push_str(&format!("- {note}\n"));
    }
    s
}

fn write_outputs(dir: &Path, r: &Report) -> Result<()> {
    write_results(
        dir,
        &r.date,
        &r.device,
        "huffman",
        r,
        &[(".md", markdown(r))],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_and_synthetic_sets_have_the_asked_size() {
        assert_eq!(repeat_to(b"abc", 8), b"abcabcab");
        assert!(repeat_to(b"", 8).is_empty());
        for kind in ["geometric", "zipf"] {
            let d = synthetic(3 << 20, kind);
            assert_eq!(d.len(), 3 << 20);
            let h = cpu::histogram(&d);
            // Skewed: the most frequent byte holds well over 1/256 of the data.
            assert!(
                *h.iter().max().expect("256 bins") > (d.len() as u64) / 16,
                "{kind}"
            );
        }
    }

    #[test]
    fn optimal_size_is_below_the_payload() {
        let d = synthetic(1 << 20, "geometric");
        let payloads = cpu_encode_all(&d).expect("encodes");
        let size: u64 = payloads.iter().map(|p| p.len() as u64).sum();
        let opt = optimal_bytes(&chunk_optima(&d).expect("optima"));
        assert!(opt < size && size < opt + opt / 50, "{opt} {size}");
    }

    #[test]
    fn the_gap_breakdown_adds_up() {
        // A huffman chunk and a raw one (uniform bytes).
        let mut d = synthetic(CHUNK_BYTES, "geometric");
        let mut r = StdRng::seed_from_u64(3);
        d.extend((0..100_000).map(|_| r.random::<u8>()));
        let payloads: Vec<Vec<u8>> = d
            .chunks(CHUNK_BYTES)
            .map(|c| {
                let mut p = Vec::new();
                cpu::encode(c, &mut p).expect("encodes");
                p
            })
            .collect();
        let optima = chunk_optima(&d).expect("optima");
        let size: u64 = payloads.iter().map(|p| p.len() as u64).sum();
        let opt = optimal_bytes(&chunk_optima(&d).expect("optima"));
        let (info, limit, header, raw) = gap_breakdown(&payloads, &optima);
        assert!((info + limit + header + raw - (size as f64 - opt as f64)).abs() < 1e-6);
        assert!(info > 0.0 && limit >= 0.0 && header > 0.0);
        assert!(raw != 0.0, "the uniform chunk is stored raw");
    }
}
