//! `tessera-bench lll`: the LLL byte codec (`docs/format/lll.md`) on real bytes, against CPU
//! peers and the GPU copy ceiling, and the paper's loading scenarios.
//!
//! Data sets: the files of `--input`, else those in `bench/data/` (gathered by
//! `scripts/bench-data.sh`: 8-bit grayscale images, text, XML), else synthetic image-like
//! bytes. Each file is one set: it is encoded once (16 MiB LLL chunks) and the set is as many
//! whole copies of it as fit in `--bytes` (at least one), chunk payloads repeated; strips are
//! independent, so the repetition does not help LLL, and every copy of the payload is its own
//! memory on the GPU.
//!
//! Per set:
//! - compression ratio (input / compressed) of LLL, and of lz4_flex, libdeflate (level 6) and
//!   zstd (level 3) on independent 64 KiB blocks of one copy of the file (the block size
//!   nvCOMP's batched API uses; repetition cannot inflate them);
//! - CPU decode throughput: LLL reference decoder on one core, LLL fast decoder on one core and
//!   on all cores, the peers on one core (over up to 64 MiB);
//! - GPU decode throughput, device-resident, per kernel variant: output GB/s and (payload +
//!   output) / time against the device-to-device copy ceiling measured in the same run;
//! - the paper's loading scenarios, wall time from pinned host memory: (A) upload the
//!   uncompressed bytes, (B) decode on the CPU (all cores) then upload, (C) upload the payload
//!   then decode on the GPU.
//!
//! Every GPU decode is checked byte for byte against the input (output poisoned first);
//! numbers are printed and saved, never asserted. Without a GPU the CPU columns are measured
//! and the GPU columns say "no GPU". `--dump DIR` writes each set's file bytes as
//! `DIR/<set>.bin` for `bench/peers/nvcomp_bytes.py`.

use super::common::{gbps, io, slug, today, wall_and_thread_cpu_ms, wall_ms, write_results};
use super::host;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tessera::codecs::lll as cpu;
use tessera::format::{Error, Result, MAX_CHUNK_VALUES};
use tessera::gpu::bench_hooks::lll::{self as hooks, Variant};
use tessera::gpu::lll::{self as glll, DeviceLll};
use tessera::gpu::Gpu;

use super::svg::{line_chart, Series};
use super::BenchArgs;

const POISON: u8 = 0xA5;
const CHUNK: usize = MAX_CHUNK_VALUES as usize;
const PEER_BLOCK: usize = 64 << 10;
/// Bytes the single-core decoders are timed over (`--quick`: a quarter).
const ONE_CORE_BYTES: usize = 64 << 20;
/// Runs of each single-core decode, LLL's and the peers' (median): the GPU machine's shared host
/// moves single figures by up to 2x between runs.
const ONE_CORE_RUNS: usize = 5;
/// `--bytes` under `--quick`.
const QUICK_BYTES: usize = 128 << 20;

/// One peer codec on one set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerResult {
    pub codec: String,
    pub ratio: f64,
    /// One core, GB/s of output.
    pub decode_gbps_1core: f64,
}

/// One GPU kernel variant on one set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuResult {
    pub variant: String,
    pub decode_ms: f64,
    pub decode_gbps: f64,
    /// (payload + output bytes) / time / copy ceiling.
    pub frac_of_copy: f64,
    pub verified: bool,
}

/// The paper's loading scenarios, wall milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenarios {
    /// Upload the uncompressed bytes from pinned memory.
    pub a_upload_raw_ms: f64,
    /// Decode on the CPU (all cores) into pinned memory, then upload.
    pub b_cpu_decode_upload_ms: f64,
    /// Upload the payload from pinned memory, then decode on the GPU.
    pub c_upload_gpu_decode_ms: f64,
}

/// Figures of one data set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetResult {
    pub name: String,
    pub file_bytes: usize,
    pub bytes: usize,
    pub lll_compressed_bytes: usize,
    pub lll_ratio: f64,
    pub code_counts: [u64; 6],
    /// Strips of the file written as stored (`lll.md` §4a) and as fill strips (§4b).
    #[serde(default)]
    pub stored_fill_strips: [u64; 2],
    /// LLL encoder, all cores, GB/s of input.
    pub encode_gbps: f64,
    pub cpu_reference_gbps_1core: f64,
    /// The same runs timed by the thread's CPU time (`None`: not reported by the OS). Wall time
    /// is the figure; this one leaves out the time a shared host gave the core to others.
    #[serde(default)]
    pub cpu_reference_gbps_1core_cpu_time: Option<f64>,
    /// The core's clock (GHz) and the integer additions a cycle the bench's thread got, right
    /// before and right after the reference decoder's one-core runs (`host.rs`; `None` off
    /// x86-64 and in results written before the probes existed). About 4.4-4.7 additions a cycle on a
    /// whole core of the GPU machine's host, about 2.5 when another tenant's thread shares it:
    /// a one-core figure with a low share was measured on part of a core.
    #[serde(default)]
    pub core_ghz: Option<f64>,
    #[serde(default)]
    pub core_adds_per_cycle: Option<[f64; 2]>,
    pub cpu_fast_gbps_1core: f64,
    pub cpu_fast_gbps_all: f64,
    pub peers: Vec<PeerResult>,
    /// Empty without a GPU.
    pub gpu: Vec<GpuResult>,
    pub scenarios: Option<Scenarios>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    pub date: String,
    pub device: String,
    pub cpu_threads: usize,
    pub runs: usize,
    pub copy_ceiling_gbps: Option<f64>,
    pub h2d_gbps: Option<f64>,
    /// LLL `segment_bytes` the sets were encoded with (`lll.md` §2; absent in results written
    /// before format 1.3, which were all 4096).
    #[serde(default)]
    pub segment_bytes: Option<usize>,
    /// What the LLL encoder's parse minimized (`lll.md` §9: `smallest` or `fast-decode`;
    /// absent in results written before the choice existed, which were all `smallest`).
    #[serde(default)]
    pub parse: Option<String>,
    pub sets: Vec<SetResult>,
}

/// 8-bit grayscale, 2048 x 2048: smooth gradients plus noise, flat areas (the fallback set).
fn synthetic_image() -> Vec<u8> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let (w, h) = (2048usize, 2048usize);
    let mut v = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let base = 128.0 + 70.0 * (x as f64 / 180.0).sin() * (y as f64 / 230.0).cos();
            let px = if (x / 256 + y / 256) % 5 == 0 {
                200.0
            } else {
                base + (state % 7) as f64 - 3.0
            };
            v.push(px.clamp(0.0, 255.0) as u8);
        }
    }
    v
}

/// (name, file bytes) of every data set.
fn inputs(args: &BenchArgs) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files: Vec<PathBuf> = args.input.clone();
    if files.is_empty() {
        let dir = Path::new("bench/data");
        if let Ok(rd) = std::fs::read_dir(dir) {
            files = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.retain(|p| p.is_file());
            files.sort();
        }
    }
    let mut sets = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .map_or("input".into(), |n| n.to_string_lossy().into_owned());
        if !args.selects(&name) {
            continue;
        }
        let bytes = std::fs::read(&f).map_err(io(&f))?;
        if !bytes.is_empty() {
            sets.push((name, bytes));
        }
    }
    if sets.is_empty() {
        eprintln!("no --input and no bench/data: using a synthetic 2048x2048 image");
        sets.push(("synthetic-image-2048x2048.gray".into(), synthetic_image()));
    }
    Ok(sets)
}

/// `file` repeated up to `n` bytes (or cut to it).
fn repeat_to(file: &[u8], n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let k = (n - v.len()).min(file.len());
        v.extend_from_slice(&file[..k]);
    }
    v
}

fn peers(file: &[u8]) -> Result<Vec<PeerResult>> {
    let sample = &file[..file.len().min(ONE_CORE_BYTES)];
    let blocks: Vec<&[u8]> = sample.chunks(PEER_BLOCK).collect();
    let mut out = Vec::new();
    // lz4_flex
    let enc: Vec<Vec<u8>> = blocks
        .par_iter()
        .map(|b| lz4_flex::block::compress(b))
        .collect();
    let mut buf = vec![0u8; PEER_BLOCK];
    let ms = wall_ms(ONE_CORE_RUNS, || {
        for (c, b) in enc.iter().zip(&blocks) {
            lz4_flex::block::decompress_into(c, &mut buf[..b.len()])
                .map_err(|e| Error::InvalidArgument(format!("lz4: {e}")))?;
        }
        Ok(())
    })?;
    out.push(peer("lz4_flex", sample.len(), &enc, ms));
    // libdeflate, level 6
    let enc: Vec<Vec<u8>> = blocks
        .par_iter()
        .map(|b| {
            let mut c = libdeflater::Compressor::new(
                libdeflater::CompressionLvl::new(6).unwrap_or_default(),
            );
            let mut o = vec![0u8; c.deflate_compress_bound(b.len())];
            let n = c.deflate_compress(b, &mut o).unwrap_or(0);
            o.truncate(n);
            o
        })
        .collect();
    let mut d = libdeflater::Decompressor::new();
    let ms = wall_ms(ONE_CORE_RUNS, || {
        for (c, b) in enc.iter().zip(&blocks) {
            d.deflate_decompress(c, &mut buf[..b.len()])
                .map_err(|e| Error::InvalidArgument(format!("deflate: {e}")))?;
        }
        Ok(())
    })?;
    out.push(peer("libdeflate-6", sample.len(), &enc, ms));
    // zstd, level 3
    let enc: Vec<Vec<u8>> = blocks
        .par_iter()
        .map(|b| zstd::bulk::compress(b, 3).unwrap_or_default())
        .collect();
    let mut z = zstd::bulk::Decompressor::new().map_err(|e| Error::io("zstd", e))?;
    let ms = wall_ms(ONE_CORE_RUNS, || {
        for (c, b) in enc.iter().zip(&blocks) {
            z.decompress_to_buffer(c, &mut buf[..b.len()])
                .map_err(|e| Error::io("zstd", e))?;
        }
        Ok(())
    })?;
    out.push(peer("zstd-3", sample.len(), &enc, ms));
    Ok(out)
}

fn peer(codec: &str, bytes: usize, enc: &[Vec<u8>], ms: f64) -> PeerResult {
    let comp: usize = enc.iter().map(|c| c.len()).sum();
    PeerResult {
        codec: codec.into(),
        ratio: bytes as f64 / comp.max(1) as f64,
        decode_gbps_1core: gbps(bytes, ms),
    }
}

/// The GPU side of a run: the handle, the ceilings, the output buffer.
struct GpuSide {
    gpu: Gpu,
    ceiling: f64,
}

#[allow(clippy::too_many_arguments)]
fn bench_set(
    args: &BenchArgs,
    g: Option<&GpuSide>,
    name: &str,
    file: &[u8],
    bytes: usize,
    one_core: &rayon::ThreadPool,
) -> Result<SetResult> {
    let runs = args.runs;
    let one_core_bytes = if args.quick {
        ONE_CORE_BYTES / 4
    } else {
        ONE_CORE_BYTES
    };
    // Encode the file once, in 16 MiB chunks (strips in parallel inside each); the set is whole
    // copies of the file, so its payload is the file's chunks' payloads, repeated.
    let t0 = Instant::now();
    let mut file_payloads = Vec::new();
    let mut counts = cpu::CodeCounts::default();
    for c in file.chunks(CHUNK) {
        let mut p = Vec::new();
        let k = cpu::encode_with(c, &mut p, &encode_options(args))?;
        counts.sc += k.sc;
        counts.rl += k.rl;
        counts.si += k.si;
        counts.li += k.li;
        counts.srl += k.srl;
        counts.lrl += k.lrl;
        counts.stored += k.stored;
        counts.fill += k.fill;
        file_payloads.push((p, c.len()));
    }
    let encode_gbps = gbps(file.len(), t0.elapsed().as_secs_f64() * 1e3);
    let copies = (bytes / file.len()).max(1);
    let data = repeat_to(file, copies * file.len());
    let refs: Vec<(&[u8], usize)> = (0..copies)
        .flat_map(|_| file_payloads.iter().map(|(p, n)| (p.as_slice(), *n)))
        .collect();
    let payloads: Vec<&[u8]> = refs.iter().map(|r| r.0).collect();
    let lens: Vec<usize> = refs.iter().map(|r| r.1).collect();
    let compressed: usize = payloads.iter().map(|p| p.len()).sum();

    // CPU decoders.
    let mut out = vec![0u8; data.len()];
    let sample_chunks = lens
        .iter()
        .scan(0usize, |acc, &n| {
            *acc += n;
            Some(*acc)
        })
        .take_while(|&acc| acc < one_core_bytes)
        .count()
        .clamp(1, lens.len());
    let sample_bytes: usize = lens[..sample_chunks].iter().sum();
    let ghz = host::core_ghz();
    let adds_before = ghz.and_then(host::core_adds_per_cycle);
    let (ms, cpu_ms) = wall_and_thread_cpu_ms(ONE_CORE_RUNS, || {
        let mut at = 0;
        for (p, &n) in payloads[..sample_chunks].iter().zip(&lens) {
            cpu::decode_reference(p, &mut out[at..at + n])?;
            at += n;
        }
        Ok(())
    })?;
    let core_adds_per_cycle = adds_before
        .zip(ghz.and_then(host::core_adds_per_cycle))
        .map(|(a, b)| [a, b]);
    let cpu_reference_gbps_1core = gbps(sample_bytes, ms);
    let cpu_reference_gbps_1core_cpu_time = cpu_ms.map(|c| gbps(sample_bytes, c));
    let ms = one_core.install(|| {
        wall_ms(ONE_CORE_RUNS, || {
            let mut at = 0;
            for (p, &n) in payloads[..sample_chunks].iter().zip(&lens) {
                cpu::decode(p, &mut out[at..at + n])?;
                at += n;
            }
            Ok(())
        })
    })?;
    let cpu_fast_gbps_1core = gbps(sample_bytes, ms);
    let decode_all = |out: &mut [u8]| -> Result<()> {
        let mut parts: Vec<&mut [u8]> = Vec::with_capacity(lens.len());
        let mut rest = out;
        for &n in &lens {
            let (a, b) = rest.split_at_mut(n);
            parts.push(a);
            rest = b;
        }
        parts
            .into_par_iter()
            .zip(payloads.par_iter())
            .try_for_each(|(o, p)| cpu::decode(p, o))
    };
    let ms = wall_ms(runs, || decode_all(&mut out))?;
    let cpu_fast_gbps_all = gbps(data.len(), ms);
    if out != data {
        return Err(Error::InvalidArgument(format!(
            "{name}: the CPU decoder's output differs from the input"
        )));
    }
    drop(out);
    let peers = peers(file)?;

    let mut gpu_results = Vec::new();
    let mut scenarios = None;
    if let Some(g) = g {
        let gpu = &g.gpu;
        let mut input = DeviceLll::upload(gpu, &refs)?;
        let mut d_out = gpu.alloc::<u8>(data.len() + 64)?;
        let mut back = vec![0u8; data.len() + 64];
        for v in Variant::ALL {
            gpu.fill_bytes(&mut d_out, POISON)?;
            hooks::enqueue_decode(gpu, &input, &mut d_out, v)?;
            glll::finish_decode(gpu, &input)?;
            gpu.download(&d_out, &mut back)?;
            let verified =
                back[..data.len()] == data[..] && back[data.len()..].iter().all(|&b| b == POISON);
            if !verified {
                eprintln!(
                    "  {name} GPU {}: DECODED BYTES DIFFER FROM THE INPUT",
                    v.name()
                );
            }
            let ms = gpu.median_ms(runs, || hooks::enqueue_decode(gpu, &input, &mut d_out, v))?;
            glll::finish_decode(gpu, &input)?;
            gpu_results.push(GpuResult {
                variant: v.name().into(),
                decode_ms: ms,
                decode_gbps: gbps(data.len(), ms),
                frac_of_copy: gbps(data.len() + compressed, ms) / g.ceiling,
                verified,
            });
        }
        drop(back);
        // Loading scenarios, from pinned host memory.
        let mut pinned_raw = gpu.alloc_pinned(data.len())?;
        pinned_raw.as_mut_slice()?.copy_from_slice(&data);
        let a = wall_ms(runs, || {
            gpu.enqueue_upload(&pinned_raw, data.len(), &mut d_out)?;
            gpu.synchronize()
        })?;
        let b = wall_ms(runs, || {
            decode_all(pinned_raw.as_mut_slice()?)?;
            gpu.enqueue_upload(&pinned_raw, data.len(), &mut d_out)?;
            gpu.synchronize()
        })?;
        drop(pinned_raw);
        let pinned_payload = input.pin(gpu)?;
        let c = wall_ms(runs, || {
            input.enqueue_reupload(gpu, &pinned_payload)?;
            hooks::enqueue_decode(gpu, &input, &mut d_out, Variant::default())?;
            glll::finish_decode(gpu, &input)
        })?;
        scenarios = Some(Scenarios {
            a_upload_raw_ms: a,
            b_cpu_decode_upload_ms: b,
            c_upload_gpu_decode_ms: c,
        });
    }
    Ok(SetResult {
        name: name.into(),
        file_bytes: file.len(),
        bytes: data.len(),
        lll_compressed_bytes: compressed,
        lll_ratio: data.len() as f64 / compressed.max(1) as f64,
        code_counts: [
            counts.sc, counts.rl, counts.si, counts.li, counts.srl, counts.lrl,
        ],
        stored_fill_strips: [counts.stored, counts.fill],
        encode_gbps,
        cpu_reference_gbps_1core,
        cpu_reference_gbps_1core_cpu_time,
        core_ghz: ghz,
        core_adds_per_cycle,
        cpu_fast_gbps_1core,
        cpu_fast_gbps_all,
        peers,
        gpu: gpu_results,
        scenarios,
    })
}

/// Runs the suite.
/// The LLL segment size of `--segment-bytes`, else the encoder's default.
fn segment_bytes(args: &BenchArgs) -> usize {
    args.segment_bytes.unwrap_or(cpu::DEFAULT_SEGMENT_BYTES)
}

/// The encoder options of `--segment-bytes` and `--lll-parse`.
fn encode_options(args: &BenchArgs) -> cpu::EncodeOptions {
    cpu::EncodeOptions {
        segment_bytes: segment_bytes(args),
        parse: args
            .lll_parse
            .map_or(cpu::Parse::Smallest, crate::ParseArg::parse),
    }
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if args.runs < 5 {
        return Err(Error::InvalidArgument("--runs must be at least 5".into()));
    }
    if !cpu::valid_segment_bytes(segment_bytes(args)) {
        return Err(Error::InvalidArgument(format!(
            "--segment-bytes must be one of {:?}",
            cpu::SEGMENT_SIZES
        )));
    }
    let started = Instant::now();
    let bytes = if args.quick {
        args.bytes.min(QUICK_BYTES)
    } else {
        args.bytes
    }
    .max(1);
    let g = match Gpu::new() {
        Ok(gpu) => {
            gpu.warm_up()?;
            // The copy ceiling and the pinned upload rate over `bytes`.
            let src = gpu.alloc::<u8>(bytes)?;
            let mut dst = gpu.alloc::<u8>(bytes)?;
            let ceiling = gpu.copy_ceiling_gbps(&src, &mut dst, args.runs)?;
            let pinned = gpu.alloc_pinned(bytes)?;
            let h2d = gpu.median_ms(args.runs, || gpu.enqueue_upload(&pinned, bytes, &mut dst))?;
            eprintln!(
                "{}: copy ceiling {ceiling:.0} GB/s (read + write), pinned H2D {:.1} GB/s",
                gpu.info().name,
                gbps(bytes, h2d)
            );
            Some((GpuSide { gpu, ceiling }, gbps(bytes, h2d)))
        }
        Err(e) => {
            eprintln!("no GPU ({e}): CPU columns only");
            None
        }
    };
    let one_core = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Error::InvalidArgument(format!("thread pool: {e}")))?;
    let mut report = Report {
        suite: "lll".into(),
        date: today(),
        device: g
            .as_ref()
            .map_or("no GPU".into(), |(s, _)| s.gpu.info().name.clone()),
        cpu_threads: rayon::current_num_threads(),
        runs: args.runs,
        copy_ceiling_gbps: g.as_ref().map(|(s, _)| s.ceiling),
        h2d_gbps: g.as_ref().map(|(_, h)| *h),
        segment_bytes: Some(segment_bytes(args)),
        parse: Some(encode_options(args).parse.name().into()),
        sets: Vec::new(),
    };
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    for (name, file) in inputs(args)? {
        let t0 = Instant::now();
        if let Some(dir) = &args.dump {
            let p = dir.join(format!("{}.bin", slug(&name)));
            std::fs::write(&p, &file).map_err(io(&p))?;
        }
        let r = bench_set(
            args,
            g.as_ref().map(|(s, _)| s),
            &name,
            &file,
            bytes,
            &one_core,
        )?;
        eprintln!("{}  ({:.1} s)", set_line(&r), t0.elapsed().as_secs_f64());
        report.sets.push(r);
        write_outputs(&args.out, &report)?;
    }
    println!("\n{}", summary(&report));
    eprintln!("bench lll done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn set_line(r: &SetResult) -> String {
    let mut s = format!(
        "{:<28} LLL {:.2}x, CPU ref {:.2} GB/s, fast 1 core {:.2}, all {:.1}",
        r.name, r.lll_ratio, r.cpu_reference_gbps_1core, r.cpu_fast_gbps_1core, r.cpu_fast_gbps_all
    );
    if let Some([a, b]) = r.core_adds_per_cycle {
        s.push_str(&format!(" (core {a:.1}/{b:.1} add/c)"));
    }
    for g in &r.gpu {
        s.push_str(&format!(
            " | GPU{} {:.0} GB/s {:.0}%{}",
            g.variant,
            g.decode_gbps,
            100.0 * g.frac_of_copy,
            if g.verified { "" } else { " WRONG" }
        ));
    }
    s
}

fn peer_of<'a>(r: &'a SetResult, codec: &str) -> Option<&'a PeerResult> {
    r.peers.iter().find(|p| p.codec == codec)
}

fn best_gpu(r: &SetResult) -> Option<&GpuResult> {
    r.gpu
        .iter()
        .filter(|g| g.verified)
        .max_by(|a, b| a.decode_gbps.total_cmp(&b.decode_gbps))
}

fn summary(r: &Report) -> String {
    let headers = [
        "set", "LLL x", "lz4 x", "defl x", "zstd x", "ref 1c", "add/c", "fast 1c", "fast all",
        "lz4 1c", "GPU GB/s", "% copy", "A ms", "B ms", "C ms", "ok",
    ];
    let f = |v: Option<f64>, d: usize| v.map_or("-".into(), |v| format!("{v:.d$}"));
    let rows: Vec<Vec<String>> = r
        .sets
        .iter()
        .map(|s| {
            let g = best_gpu(s);
            let sc = s.scenarios.as_ref();
            vec![
                s.name.clone(),
                format!("{:.2}", s.lll_ratio),
                f(peer_of(s, "lz4_flex").map(|p| p.ratio), 2),
                f(peer_of(s, "libdeflate-6").map(|p| p.ratio), 2),
                f(peer_of(s, "zstd-3").map(|p| p.ratio), 2),
                format!("{:.2}", s.cpu_reference_gbps_1core),
                s.core_adds_per_cycle
                    .map_or("-".into(), |[a, b]| format!("{a:.1}/{b:.1}")),
                format!("{:.2}", s.cpu_fast_gbps_1core),
                format!("{:.1}", s.cpu_fast_gbps_all),
                f(peer_of(s, "lz4_flex").map(|p| p.decode_gbps_1core), 2),
                if s.gpu.is_empty() {
                    "no GPU".into()
                } else {
                    f(g.map(|g| g.decode_gbps), 0)
                },
                f(g.map(|g| 100.0 * g.frac_of_copy), 0),
                f(sc.map(|c| c.a_upload_raw_ms), 1),
                f(sc.map(|c| c.b_cpu_decode_upload_ms), 1),
                f(sc.map(|c| c.c_upload_gpu_decode_ms), 1),
                if s.gpu.iter().all(|g| g.verified) {
                    "yes".into()
                } else {
                    "NO".into()
                },
            ]
        })
        .collect();
    format!(
        "LLL (segments of {} bytes, parse {}) on {} ({} CPU threads), {}; copy ceiling {}, pinned H2D {}\n{}",
        r.segment_bytes.unwrap_or(4096),
        r.parse.as_deref().unwrap_or("smallest"),
        r.device,
        r.cpu_threads,
        r.date,
        r.copy_ceiling_gbps
            .map_or("-".into(), |c| format!("{c:.0} GB/s")),
        r.h2d_gbps.map_or("-".into(), |c| format!("{c:.1} GB/s")),
        tessera::report::table(&headers, &headers[1..15], &rows)
    )
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# tessera LLL benchmark, {}\n\nLLL segments of {} bytes (`lll.md` §2), parse `{}` (§9). {}, {} CPU threads; median of {} runs after a warm-up. \
         Copy ceiling (device-to-device, bytes read + written): {}. Pinned host-to-device: {}.\n\n\
         Ratios: input / compressed. LLL over the whole set (16 MiB chunks, independent 32 KiB \
         strips); peers over independent 64 KiB blocks of one copy of the file (up to 64 MiB). \
         CPU decode GB/s of output: LLL reference decoder and fast decoder on one core, fast \
         decoder on all cores, peers on one core (single-core figures: median of 5 runs, over up \
         to 64 MiB, 16 MiB under --quick). GPU: device-resident decode, CUDA events, \
         GB/s of output and (payload + output) / time as % of the copy ceiling, per kernel \
         variant (threads per strip). Scenarios (wall ms, pinned host memory): A = upload the \
         uncompressed bytes; B = CPU decode (all cores) + upload; C = upload the payload + GPU \
         decode.\n\n",
        r.date,
        r.segment_bytes.unwrap_or(4096),
        r.parse.as_deref().unwrap_or("smallest"),
        r.device,
        r.cpu_threads,
        r.runs,
        r.copy_ceiling_gbps
            .map_or("no GPU".into(), |c| format!("**{c:.0} GB/s**")),
        r.h2d_gbps.map_or("-".into(), |c| format!("{c:.1} GB/s")),
    );
    s.push_str("## Compression ratio\n\n| set | file bytes | LLL | lz4_flex | libdeflate-6 | zstd-3 | LLL codes (SC RL SI LI SRL LRL) | stored / fill strips | LLL encode GB/s (all cores) |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |\n");
    for set in &r.sets {
        let p = |c: &str| peer_of(set, c).map_or("-".into(), |p| format!("{:.2}", p.ratio));
        let cc: Vec<String> = set.code_counts.iter().map(|c| c.to_string()).collect();
        s.push_str(&format!(
            "| {} | {} | {:.2} | {} | {} | {} | {} | {} / {} | {:.2} |\n",
            set.name,
            set.file_bytes,
            set.lll_ratio,
            p("lz4_flex"),
            p("libdeflate-6"),
            p("zstd-3"),
            cc.join(" "),
            set.stored_fill_strips[0],
            set.stored_fill_strips[1],
            set.encode_gbps
        ));
    }
    s.push_str("\n## Decode throughput (GB/s of output)\n\n`LLL ref 1 core (CPU time)`: the same runs timed by the decoding thread's CPU time, which leaves out the time a shared host gave the core to others. `core`: the core's clock, and the integer additions a cycle the thread got right before and after those runs (about 4.5 on a whole core of the GPU machine's host, about 2.5 when another tenant's thread shares the core).\n\n| set | bytes | LLL ref 1 core | LLL ref 1 core (CPU time) | core (GHz, add/c) | LLL fast 1 core | LLL fast all cores | lz4 1 core | deflate 1 core | zstd 1 core | GPU (variant: GB/s, % copy) |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for set in &r.sets {
        let p =
            |c: &str| peer_of(set, c).map_or("-".into(), |p| format!("{:.2}", p.decode_gbps_1core));
        let core = match (set.core_ghz, set.core_adds_per_cycle) {
            (Some(g), Some([a, b])) => format!("{g:.2}, {a:.1}/{b:.1}"),
            _ => "-".into(),
        };
        let gpu = if set.gpu.is_empty() {
            "no GPU".to_string()
        } else {
            set.gpu
                .iter()
                .map(|g| {
                    format!(
                        "{}: {:.0} ({:.0}%){}",
                        g.variant,
                        g.decode_gbps,
                        100.0 * g.frac_of_copy,
                        if g.verified { "" } else { " WRONG" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "| {} | {} | {:.2} | {} | {} | {:.2} | {:.1} | {} | {} | {} | {} |\n",
            set.name,
            set.bytes,
            set.cpu_reference_gbps_1core,
            set.cpu_reference_gbps_1core_cpu_time
                .map_or("-".into(), |v| format!("{v:.2}")),
            core,
            set.cpu_fast_gbps_1core,
            set.cpu_fast_gbps_all,
            p("lz4_flex"),
            p("libdeflate-6"),
            p("zstd-3"),
            gpu
        ));
    }
    s.push_str("\n## Loading scenarios (wall ms)\n\n| set | bytes | A: upload raw | B: CPU decode + upload | C: upload + GPU decode | C vs A |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for set in &r.sets {
        match &set.scenarios {
            Some(c) => s.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2}x |\n",
                set.name,
                set.bytes,
                c.a_upload_raw_ms,
                c.b_cpu_decode_upload_ms,
                c.c_upload_gpu_decode_ms,
                c.a_upload_raw_ms / c.c_upload_gpu_decode_ms
            )),
            None => s.push_str(&format!(
                "| {} | {} | no GPU | | | |\n",
                set.name, set.bytes
            )),
        }
    }
    s
}

/// Decode GB/s against the LLL compression ratio, one point per set.
fn chart(r: &Report) -> String {
    let mut sets: Vec<&SetResult> = r.sets.iter().collect();
    sets.sort_by(|a, b| a.lll_ratio.total_cmp(&b.lll_ratio));
    let mut series: Vec<Series> = Variant::ALL
        .iter()
        .map(|v| Series {
            name: format!("GPU, {} threads", v.name()),
            points: sets
                .iter()
                .filter_map(|s| {
                    s.gpu
                        .iter()
                        .find(|g| g.variant == v.name())
                        .map(|g| (s.lll_ratio, g.decode_gbps))
                })
                .collect(),
            dashed: false,
        })
        .collect();
    series.retain(|s| !s.points.is_empty());
    series.push(Series {
        name: "CPU, all cores".into(),
        points: sets
            .iter()
            .map(|s| (s.lll_ratio, s.cpu_fast_gbps_all))
            .collect(),
        dashed: false,
    });
    if let Some(c) = r.copy_ceiling_gbps {
        series.push(Series {
            name: "copy ceiling / 2".into(),
            points: sets.iter().map(|s| (s.lll_ratio, c / 2.0)).collect(),
            dashed: true,
        });
    }
    line_chart(
        &format!("LLL decode throughput, {}", r.device),
        "LLL compression ratio of the data set",
        "GB/s of output",
        &series,
    )
}

fn write_outputs(dir: &Path, r: &Report) -> Result<()> {
    let extra = [(".md", markdown(r)), ("-throughput.svg", chart(r))];
    write_results(dir, &r.date, &r.device, "lll", r, &extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_to_cuts_and_repeats() {
        assert_eq!(repeat_to(b"abc", 7), b"abcabca");
        assert_eq!(repeat_to(b"abcdef", 4), b"abcd");
    }

    #[test]
    fn the_synthetic_image_compresses_and_round_trips() {
        let img = synthetic_image();
        let mut p = Vec::new();
        cpu::encode(&img[..1 << 20], &mut p).expect("encodes");
        assert!(p.len() < 1 << 20, "{} bytes", p.len());
        let mut out = vec![0u8; 1 << 20];
        cpu::decode(&p, &mut out).expect("decodes");
        assert!(out[..] == img[..1 << 20]);
    }
}
