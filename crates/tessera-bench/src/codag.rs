//! `tessera-bench codag`: the CODAG decoders (ORC RLE v1 / v2, Deflate; one warp per chunk) on
//! data sets like the CODAG paper's, in chunks of 128 KiB of output, against the device copy
//! ceiling of the same run and the CPU on all cores (libdeflate for Deflate, tessera's ORC
//! reference decoders for RLE).
//!
//! Sets (generated, seeded): integer columns with long runs (mortgage-like), power-law values
//! (click-log-like), TPC-H-like lineitem columns (quantity 1..50, sorted order keys, dates),
//! as RLE v1 and RLE v2 of `i64`; byte sets for Deflate (libdeflate level 12; the paper used zlib 9): genome-like
//! text over ACGTN, TPC-H-like text rows, word text, and the files of `--input` (real text).
//! Each set is about `--bytes` of output (`--quick`: 256 MiB). `--sets` keeps the sets whose
//! name or decoder (`orc-rle-v1`, `orc-rle-v2`, `deflate`) matches. `--dump DIR` writes each
//! Deflate set for `bench/peers/nvcomp_deflate.py`: `DIR/<set>.bin` (the data),
//! `DIR/<set>.deflate` (the raw Deflate chunks this bench decodes, back to back) and
//! `DIR/<set>.sizes` (per chunk, little-endian u32 compressed bytes then output bytes).
//!
//! `--input FILE.gz` (a single-member gzip file) is instead decoded on the GPU in spans
//! (`codag::gunzip_single`) at several span sizes, each phase timed.
//!
//! Every GPU decode is checked against the original data before it is timed; the timed figure
//! is the median of `--runs` launches (CUDA events), output GB/s = decoded bytes / time. Numbers
//! are printed and saved, never asserted. Without a GPU the CPU columns are measured and the GPU
//! columns say so.

use super::common::{gbps, today, wall_ms, write_results};
use super::BenchArgs;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use tessera::codecs::orc::{self, encode};
use tessera::format::{Error, Result};
use tessera::gpu::codag::{self, Chunk, Decoder, DeviceBatch};
use tessera::gpu::Gpu;

/// Output bytes per chunk (the paper's 128 KiB).
const CHUNK_BYTES: usize = 128 << 10;
const QUICK_BYTES: usize = 256 << 20;

/// One measured set.
#[derive(Debug, Clone, Serialize)]
pub struct SetResult {
    pub set: String,
    pub decoder: String,
    pub chunks: usize,
    pub output_bytes: usize,
    pub compressed_bytes: usize,
    pub ratio: f64,
    /// GPU decode, GB/s of output (None without a GPU).
    pub gpu_gbps: Option<f64>,
    /// Device-to-device copy of the output size, GB/s of bytes written (read + write / 2).
    pub copy_gbps: Option<f64>,
    /// CPU decode on all cores, GB/s of output.
    pub cpu_gbps: f64,
    pub cpu_decoder: String,
    /// Deflate: one stream of the set's first `ONE_STREAM_BYTES` on one warp (what a gzip file
    /// of one member gets), MB/s of output.
    pub one_warp_mbps: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Report {
    date: String,
    device: String,
    cpu_threads: usize,
    chunk_bytes: usize,
    sets: Vec<SetResult>,
}

fn int_sets(rng: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<i64>)> {
    let mut runs = Vec::with_capacity(n);
    while runs.len() < n {
        let v = rng.random_range(0i64..1_000_000);
        let len = rng.random_range(100..5000);
        runs.extend(std::iter::repeat_n(v, len));
    }
    runs.truncate(n);
    // Power law (Zipf-like, exponent ~1.2) over ids up to 2^24: click-log user / page ids.
    let power: Vec<i64> = (0..n)
        .map(|_| {
            let u: f64 = rng.random_range(1e-9..1.0);
            (u.powf(-1.0 / 0.2) as i64).min(1 << 24)
        })
        .collect();
    let quantity: Vec<i64> = (0..n).map(|_| rng.random_range(1..=50)).collect();
    let mut key = 1i64;
    let orderkey: Vec<i64> = (0..n)
        .map(|_| {
            if rng.random_range(0..4) == 0 {
                key += rng.random_range(1..8);
            }
            key
        })
        .collect();
    // Ship dates: days since 1992-01-01 over 7 years, clustered by order.
    let mut d = 0i64;
    let shipdate: Vec<i64> = (0..n)
        .map(|_| {
            d = (d + rng.random_range(-3..4)).clamp(0, 2555);
            d + 8035
        })
        .collect();
    vec![
        ("long-runs", runs),
        ("power-law", power),
        ("tpch-quantity", quantity),
        ("tpch-orderkey", orderkey),
        ("tpch-shipdate", shipdate),
    ]
}

/// Genome-like text: ACGT at random, runs of N, lines of 60.
fn acgtn(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        if rng.random_range(0..50) == 0 {
            v.extend(std::iter::repeat_n(b'N', rng.random_range(10..500)));
        } else {
            v.push(b"ACGT"[rng.random_range(0..4)]);
        }
        if v.len() % 61 == 60 {
            v.push(b'\n');
        }
    }
    v.truncate(n);
    v
}

/// TPC-H-like lineitem rows.
fn tpch_text(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut tpch = Vec::with_capacity(n + 200);
    let mut ok = 1u64;
    while tpch.len() < n {
        ok += rng.random_range(0..3);
        let line = format!(
            "{ok}|{}|{}|{}|{}.00|0.0{}|0.0{}|{}|{}|1995-{:02}-{:02}|DELIVER IN PERSON|TRUCK|carefully final deposits\n",
            rng.random_range(1..200000),
            rng.random_range(1..10000),
            rng.random_range(1..8),
            rng.random_range(1..50000),
            rng.random_range(0..9),
            rng.random_range(0..9),
            ["N", "R", "A"][rng.random_range(0..3)],
            ["O", "F"][rng.random_range(0..2)],
            rng.random_range(1..13),
            rng.random_range(1..29)
        );
        tpch.extend_from_slice(line.as_bytes());
    }
    tpch.truncate(n);
    tpch
}

/// Words of a small vocabulary, a few much more frequent, in sentences.
fn word_text(rng: &mut StdRng, n: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "the ", "of ", "and ", "a ", "to ", "in ", "is ", "you ", "that ", "it ", "he ", "was ",
        "for ", "on ", "are ", "as ",
    ];
    let mut words = Vec::with_capacity(n + 8);
    while words.len() < n {
        let w = WORDS[(rng.random_range(0.0f64..1.0).powi(3) * 16.0) as usize % 16];
        words.extend_from_slice(w.as_bytes());
        if rng.random_range(0..12) == 0 {
            words.extend_from_slice(b".\n");
        }
    }
    words.truncate(n);
    words
}

/// Makes `n` bytes of one byte set.
type ByteSetGen = fn(&mut StdRng, usize) -> Vec<u8>;

fn byte_sets(
    n: usize,
    inputs: &[std::path::PathBuf],
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<(String, Vec<u8>)>> {
    // One generator per set, seeded by its place: a set's data does not depend on which
    // others --sets keeps, and a set not kept costs nothing.
    let gen: [(&str, ByteSetGen); 3] = [
        ("acgtn", acgtn),
        ("tpch-lineitem-text", tpch_text),
        ("word-text", word_text),
    ];
    let mut sets = Vec::new();
    for (k, (name, f)) in gen.iter().enumerate() {
        if keep(name) {
            sets.push((
                name.to_string(),
                f(&mut StdRng::seed_from_u64(37 + k as u64), n),
            ));
        }
    }
    for p in inputs {
        let bytes = std::fs::read(p).map_err(|e| Error::io(p.display().to_string(), e))?;
        if bytes.is_empty() {
            continue;
        }
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            v.extend_from_slice(&bytes[..bytes.len().min(n - v.len())]);
        }
        let name = p
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let name = format!("file-{name}");
        if keep(&name) {
            sets.push((name, v));
        }
    }
    Ok(sets)
}

/// Times a batch on the GPU after checking its output against `expect`; (decode GB/s, copy GB/s).
fn gpu_time(
    gpu: &Gpu,
    decoder: Decoder,
    chunks: &[Chunk<'_>],
    expect: &[u8],
    runs: usize,
) -> Result<(f64, f64)> {
    let batch = DeviceBatch::upload(gpu, decoder, chunks)?;
    let mut out = gpu.alloc::<u8>(batch.out_bytes())?;
    gpu.fill_bytes(&mut out, 0xA5)?;
    codag::enqueue(gpu, &batch, &mut out)?;
    for (c, r) in codag::results(gpu, &batch)?.iter().enumerate() {
        if r.status != 0 {
            return Err(codag::cpu_error(decoder, &chunks[c], c, r.status));
        }
    }
    let mut host = vec![0u8; batch.out_bytes()];
    gpu.download(&out, &mut host)?;
    if host != expect {
        return Err(Error::Gpu(format!(
            "CODAG {decoder:?}: GPU output differs from the data"
        )));
    }
    let ms = gpu.median_ms(runs, || codag::enqueue(gpu, &batch, &mut out))?;
    let src = gpu.alloc::<u8>(batch.out_bytes())?;
    let mut dst = gpu.alloc::<u8>(batch.out_bytes())?;
    let copy = gpu.copy_ceiling_gbps(&src, &mut dst, runs)? / 2.0;
    Ok((gbps(batch.out_bytes(), ms), copy))
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let bytes = if args.quick { QUICK_BYTES } else { args.bytes };
    let runs = args.runs.max(5);
    let gpu = Gpu::new();
    let device = match &gpu {
        Ok(g) => g.info().name.clone(),
        Err(e) => {
            eprintln!("GPU columns skipped: {e}");
            "no GPU".to_string()
        }
    };
    let mut results = Vec::new();
    let per_chunk = CHUNK_BYTES / 8;
    let n = (bytes / 8).next_multiple_of(per_chunk);
    let keep = |set: &str, label: &str| args.selects(set) || args.selects(label);
    const INT_SETS: [&str; 5] = [
        "long-runs",
        "power-law",
        "tpch-quantity",
        "tpch-orderkey",
        "tpch-shipdate",
    ];
    let int_labels = ["orc-rle-v1", "orc-rle-v2"];
    let any_int = INT_SETS
        .iter()
        .any(|s| int_labels.iter().any(|l| keep(s, l)));
    let sets = if any_int {
        int_sets(&mut StdRng::seed_from_u64(36), n)
    } else {
        Vec::new()
    };
    for (name, vals) in sets {
        let expect: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        for (dec, label) in [
            (Decoder::OrcRleV1, "orc-rle-v1"),
            (Decoder::OrcRleV2, "orc-rle-v2"),
        ] {
            if !keep(name, label) {
                continue;
            }
            let streams: Vec<Vec<u8>> = vals
                .par_chunks(per_chunk)
                .map(|c| {
                    if dec == Decoder::OrcRleV1 {
                        encode::rle_v1(c, true)
                    } else {
                        encode::rle_v2(c, true)
                    }
                })
                .collect();
            let chunks: Vec<Chunk<'_>> = streams
                .iter()
                .zip(vals.chunks(per_chunk))
                .map(|(s, c)| Chunk {
                    input: s,
                    out_cap: c.len(),
                    signed: true,
                })
                .collect();
            let cpu_ms = wall_ms(runs.min(5), || {
                chunks.par_iter().try_for_each(|c| {
                    let mut o = vec![0i64; c.out_cap];
                    let r = if dec == Decoder::OrcRleV1 {
                        orc::decode_rle_v1(c.input, true, &mut o)
                    } else {
                        orc::decode_rle_v2(c.input, true, &mut o)
                    };
                    r.map(|_| ())
                })
            })?;
            results.push(measure(
                &gpu,
                name,
                label,
                dec,
                &chunks,
                &expect,
                runs,
                cpu_ms,
                "tessera ORC reference, all cores",
            )?);
        }
    }
    let (gz, inputs): (Vec<_>, Vec<_>) = args
        .input
        .iter()
        .cloned()
        .partition(|p| p.extension().is_some_and(|e| e == "gz"));
    for p in &gz {
        gzip_spans(&gpu, p, runs)?;
    }
    let byte_data = byte_sets(bytes.next_multiple_of(CHUNK_BYTES), &inputs, |set| {
        keep(set, "deflate")
    })?;
    for (name, data) in byte_data {
        let streams: Vec<Vec<u8>> = data
            .par_chunks(CHUNK_BYTES)
            .map(|c| {
                let mut z = libdeflater::Compressor::new(libdeflater::CompressionLvl::best());
                let mut out = vec![0u8; z.deflate_compress_bound(c.len())];
                let k = z.deflate_compress(c, &mut out).unwrap_or(0);
                out.truncate(k);
                out
            })
            .collect();
        let chunks: Vec<Chunk<'_>> = streams
            .iter()
            .zip(data.chunks(CHUNK_BYTES))
            .map(|(s, c)| Chunk {
                input: s,
                out_cap: c.len(),
                signed: false,
            })
            .collect();
        if let Some(dir) = &args.dump {
            dump_deflate(dir, &name, &data, &streams)?;
        }
        let cpu_ms = wall_ms(runs.min(5), || {
            chunks.par_iter().try_for_each(|c| {
                let mut d = libdeflater::Decompressor::new();
                let mut o = vec![0u8; c.out_cap];
                d.deflate_decompress(c.input, &mut o)
                    .map(|_| ())
                    .map_err(|e| Error::InvalidArgument(format!("libdeflate: {e}")))
            })
        })?;
        let mut r = measure(
            &gpu,
            &name,
            "deflate",
            Decoder::Deflate,
            &chunks,
            &data,
            runs,
            cpu_ms,
            "libdeflate, all cores",
        )?;
        if let Ok(g) = &gpu {
            r.one_warp_mbps = Some(one_warp_mbps(
                g,
                &data[..data.len().min(ONE_STREAM_BYTES)],
                runs,
            )?);
            eprintln!(
                "{name} deflate, one stream on one warp: {:.0} MB/s",
                r.one_warp_mbps.unwrap_or(0.0)
            );
        }
        results.push(r);
    }
    let report = Report {
        date: today(),
        device: device.clone(),
        cpu_threads: rayon::current_num_threads(),
        chunk_bytes: CHUNK_BYTES,
        sets: results,
    };
    let md = markdown(&report);
    println!("{md}");
    write_results(
        &args.out,
        &report.date,
        &device,
        "codag",
        &report,
        &[(".md", md)],
    )
}

/// Span sizes the single-member gzip sweep times.
const GZIP_SPAN_SIZES: [usize; 6] = [16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20];

/// A single-member gzip file (`--input FILE.gz`) decoded on the GPU in spans
/// (`codag::gunzip_single`) at each of [`GZIP_SPAN_SIZES`]: every output checked against the
/// CPU's, then the phases of `runs` decodes printed (host clock; the kernels were compiled by
/// the checked run).
fn gzip_spans(
    gpu: &std::result::Result<Gpu, Error>,
    path: &std::path::Path,
    runs: usize,
) -> Result<()> {
    let Ok(gpu) = gpu else {
        eprintln!("{}: the GPU span decoder needs a GPU", path.display());
        return Ok(());
    };
    let file = std::fs::read(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    let t = std::time::Instant::now();
    let want = tessera::codecs::deflate::gzip_decompress(&file, usize::MAX)?;
    println!(
        "{}: {} bytes, {} output bytes; CPU gzip_decompress ({} threads) {:.1} ms",
        path.display(),
        file.len(),
        want.len(),
        rayon::current_num_threads(),
        t.elapsed().as_secs_f64() * 1e3
    );
    println!("| span bytes | candidates | chain | launches | find ms | upload ms | decode ms | resolve ms | download ms | total ms |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for span in GZIP_SPAN_SIZES {
        for run in 0..=runs.min(3) {
            let t = std::time::Instant::now();
            let Some((out, r)) = codag::gunzip_single(gpu, &file, span)? else {
                println!("| {span} | declined |");
                break;
            };
            let total = t.elapsed().as_secs_f64() * 1e3;
            if out != want {
                return Err(Error::Gpu(format!(
                    "{}: spans of {span}: output differs",
                    path.display()
                )));
            }
            if run == 0 {
                continue;
            }
            println!(
                "| {span} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                r.candidates,
                r.chain,
                r.launches,
                r.find_ms,
                r.upload_ms,
                r.decode_ms,
                r.resolve_ms,
                r.download_ms,
                total
            );
        }
    }
    Ok(())
}

/// Output bytes of the single stream timed on one warp.
const ONE_STREAM_BYTES: usize = 8 << 20;

/// One raw Deflate stream of `data` decoded by one warp (checked, then timed): MB/s of output.
fn one_warp_mbps(gpu: &Gpu, data: &[u8], runs: usize) -> Result<f64> {
    let mut z = libdeflater::Compressor::new(libdeflater::CompressionLvl::best());
    let mut s = vec![0u8; z.deflate_compress_bound(data.len())];
    let k = z
        .deflate_compress(data, &mut s)
        .map_err(|e| Error::InvalidArgument(format!("libdeflate: {e}")))?;
    s.truncate(k);
    let chunk = [Chunk {
        input: &s,
        out_cap: data.len(),
        signed: false,
    }];
    let (gbps, _) = gpu_time(gpu, Decoder::Deflate, &chunk, data, runs.min(3))?;
    Ok(gbps * 1e3)
}

/// Writes one Deflate set for the nvCOMP peer (see the module's documentation), each file
/// through a temporary name and a rename so the script never reads a half-written one.
fn dump_deflate(dir: &std::path::Path, set: &str, data: &[u8], streams: &[Vec<u8>]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    let mut sizes = Vec::with_capacity(streams.len() * 8);
    for (s, c) in streams.iter().zip(data.chunks(CHUNK_BYTES)) {
        sizes.extend_from_slice(&(s.len() as u32).to_le_bytes());
        sizes.extend_from_slice(&(c.len() as u32).to_le_bytes());
    }
    let write = |ext: &str, bytes: &[u8]| -> Result<()> {
        let path = dir.join(format!("{set}.{ext}"));
        let tmp = dir.join(format!(".{set}.{ext}.tmp"));
        std::fs::write(&tmp, bytes).map_err(|e| Error::io(tmp.display().to_string(), e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(path.display().to_string(), e))
    };
    write("bin", data)?;
    write("deflate", &streams.concat())?;
    write("sizes", &sizes)
}

#[allow(clippy::too_many_arguments)]
fn measure(
    gpu: &Result<Gpu>,
    set: &str,
    label: &str,
    dec: Decoder,
    chunks: &[Chunk<'_>],
    expect: &[u8],
    runs: usize,
    cpu_ms: f64,
    cpu_decoder: &str,
) -> Result<SetResult> {
    let compressed: usize = chunks.iter().map(|c| c.input.len()).sum();
    let (gpu_gbps, copy_gbps) = match gpu {
        Ok(g) => {
            let (d, c) = gpu_time(g, dec, chunks, expect, runs)?;
            (Some(d), Some(c))
        }
        Err(_) => (None, None),
    };
    let r = SetResult {
        set: set.to_string(),
        decoder: label.to_string(),
        chunks: chunks.len(),
        output_bytes: expect.len(),
        compressed_bytes: compressed,
        ratio: expect.len() as f64 / compressed.max(1) as f64,
        gpu_gbps,
        copy_gbps,
        cpu_gbps: gbps(expect.len(), cpu_ms),
        cpu_decoder: cpu_decoder.to_string(),
        one_warp_mbps: None,
    };
    eprintln!(
        "{set} {label}: ratio {:.2}, GPU {:?} GB/s, copy {:?} GB/s, CPU {:.2} GB/s",
        r.ratio, r.gpu_gbps, r.copy_gbps, r.cpu_gbps
    );
    Ok(r)
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# CODAG decode, {} ({}), {} CPU threads, {} KiB chunks\n\n| set | decoder | output MiB | ratio | GPU GB/s | copy GB/s | CPU GB/s (all cores) | one stream, one warp MB/s |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        r.device,
        r.date,
        r.cpu_threads,
        r.chunk_bytes >> 10
    );
    let f = |x: Option<f64>| x.map_or("no GPU".to_string(), |v| format!("{v:.1}"));
    for x in &r.sets {
        s += &format!(
            "| {} | {} | {} | {:.2} | {} | {} | {:.2} | {} |\n",
            x.set,
            x.decoder,
            x.output_bytes >> 20,
            x.ratio,
            f(x.gpu_gbps),
            f(x.copy_gbps),
            x.cpu_gbps,
            x.one_warp_mbps
                .map_or("-".to_string(), |v| format!("{v:.0}"))
        );
    }
    for dec in ["orc-rle-v1", "orc-rle-v2", "deflate"] {
        let v: Vec<f64> = r
            .sets
            .iter()
            .filter(|x| x.decoder == dec)
            .filter_map(|x| x.gpu_gbps)
            .collect();
        if !v.is_empty() {
            let g = (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
            s += &format!(
                "\nGPU geometric mean, {dec}: {g:.1} GB/s over {} sets",
                v.len()
            );
        }
    }
    s.push('\n');
    s
}
