//! `tessera-bench gpu`: the tile-based codecs on the GPU, per data set of the papers
//! (`datasets.rs`, the same generators and names as `datasets::bench_sets`, made one at a time
//! so that 250 M values per set fit in memory).
//!
//! Per data set, all on one device in one run:
//! - bits per value of FOR, DFOR, RFOR and auto (per chunk, `column::auto_choice`);
//! - decode throughput of each column: output GB/s, and bytes moved (payload read + values
//!   written) per second as a fraction of the device-to-device copy ceiling measured at the
//!   start (bytes read + written);
//! - the fused `SUM(x) WHERE x BETWEEN lo AND hi` on each compressed column against the same
//!   query over the uncompressed column;
//! - GPU encode throughput (GB/s of input values);
//! - host-to-GPU: copying the payload from pinned memory and decoding it, against copying the
//!   uncompressed column from pinned memory.
//!
//! Timing: CUDA events around the queued work, a warm-up, the median of `--runs` (>= 5) runs.
//! Correctness: every decoded column is poisoned first and compared with the input values; every
//! query result with the CPU's; the GPU encoders' first chunk with the CPU encoder's bytes (the
//! payloads the decoders read are the GPU encoders', byte-identical to the CPU's by the tests).
//! Numbers are printed and saved, never asserted.

use super::common::{gbps, io, median, today, write_results};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tessera::codecs::int;
use tessera::format::{CodecId, Error, LogicalType, Result};
use tessera::gpu::{ChunkRef, CudaSlice, Gpu};

use super::svg::{line_chart, Series};
use super::BenchArgs;
use tessera::datasets::{self, Dataset};

const CODECS: [CodecId; 3] = [CodecId::For, CodecId::Dfor, CodecId::Rfor];
const POISON: u8 = 0xA5;

/// One data set: its name and how to make it.
struct SetSpec {
    name: String,
    make: Box<dyn Fn(usize) -> Dataset>,
}

fn spec(name: String, make: impl Fn(usize) -> Dataset + 'static) -> SetSpec {
    SetSpec {
        name,
        make: Box::new(make),
    }
}

/// `datasets::bench_sets`, lazily (or its `--quick` subset).
fn set_specs(quick: bool) -> Vec<SetSpec> {
    let bits: Vec<u32> = if quick {
        vec![1, 2, 4, 8, 12, 16, 20, 24, 28, 31, 32]
    } else {
        (1..=32).collect()
    };
    let mut v: Vec<SetSpec> = bits
        .into_iter()
        .map(|b| spec(format!("uniform-b{b}"), move |n| datasets::uniform(n, b)))
        .collect();
    let d1: Vec<u32> = if quick {
        vec![2, 6, 10, 14]
    } else {
        (1..=14).collect()
    };
    v.extend(d1.into_iter().map(|k| {
        spec(format!("d1-sorted-2^{}", 2 * k), move |n| {
            datasets::sorted(n, 1u64 << (2 * k))
        })
    }));
    let d2: Vec<u32> = if quick {
        vec![10, 22]
    } else {
        vec![6, 10, 14, 18, 22, 26, 30]
    };
    v.extend(
        d2.into_iter()
            .map(|m| spec(format!("d2-normal-2^{m}"), move |n| datasets::normal(n, m))),
    );
    let d3: Vec<f64> = if quick {
        vec![1.0, 3.0]
    } else {
        vec![1.0, 2.0, 3.0, 4.0, 5.0]
    };
    v.extend(
        d3.into_iter()
            .map(|e| spec(format!("d3-zipf-{e}"), move |n| datasets::zipf(n, e))),
    );
    v.push(spec("runs-32-b20".into(), |n| datasets::runs(n, 32, 20)));
    v.push(spec("sorted-0..n".into(), datasets::sequence));
    v
}

/// Figures of one column (one codec, or auto) of a data set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnResult {
    pub codec: String,
    pub compressed_bytes: u64,
    pub bits_per_value: f64,
    /// Chunks per codec (auto only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mix: Vec<(String, usize)>,
    pub decode_ms: f64,
    pub decode_gbps: f64,
    /// (payload + output bytes) / time / copy ceiling.
    pub decode_frac_of_copy: f64,
    pub sum_ms: f64,
    pub encode_ms: Option<f64>,
    pub encode_gbps: Option<f64>,
    /// The GPU encoder's first chunk equals the CPU encoder's bytes.
    pub encode_matches_cpu: Option<bool>,
    /// Pinned payload to the device, then decode.
    pub upload_decode_ms: f64,
    /// (grid, ms) of decode with other launch shapes (`--tune`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tuning: Vec<(String, f64)>,
    pub verified: bool,
}

/// Figures of one data set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetResult {
    pub name: String,
    pub values: usize,
    pub sum_lo: u32,
    pub sum_hi: u32,
    /// SUM over the uncompressed column in device memory.
    pub plain_sum_ms: f64,
    /// The uncompressed column from pinned memory to the device.
    pub upload_raw_ms: f64,
    pub columns: Vec<ColumnResult>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    pub date: String,
    pub device: String,
    pub driver: String,
    pub compute_capability: String,
    pub sm_count: u32,
    pub l2_mib: f64,
    pub values_per_set: usize,
    pub chunk_values: usize,
    pub runs: usize,
    /// Device-to-device copy: (bytes read + bytes written) per second, GB/s.
    pub copy_ceiling_gbps: f64,
    /// Host-to-device copy from pinned memory, GB/s.
    pub h2d_gbps: f64,
    /// Where merged sets came from (earlier runs and their ceilings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub sets: Vec<SetResult>,
}

fn to_bytes(values: &[u32]) -> Vec<u8> {
    let mut out = vec![0u8; values.len() * 4];
    for (o, v) in out.chunks_exact_mut(4).zip(values) {
        o.copy_from_slice(&v.to_le_bytes());
    }
    out
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if args.runs < 5 {
        return Err(Error::InvalidArgument("--runs must be at least 5".into()));
    }
    let started = Instant::now();
    if args.dump_only {
        return dump_only(args);
    }
    let gpu = Gpu::new()?;
    gpu.warm_up()?;
    let info = gpu.info().clone();
    let n = args.values;
    eprintln!(
        "{} (sm_{}{}, {} SMs, {:.0} MiB L2), driver {}.{}; {n} values per set",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.sm_count,
        info.l2_bytes as f64 / 1048576.0,
        info.driver_version / 1000,
        info.driver_version % 1000 / 10
    );

    // The copy ceiling: a device-to-device copy of one column's bytes.
    let bytes = n * 4;
    let (copy_ceiling_gbps, h2d_gbps) = {
        let src = gpu.alloc::<u8>(bytes)?;
        let mut dst = gpu.alloc::<u8>(bytes)?;
        let ceiling = gpu.copy_ceiling_gbps(&src, &mut dst, args.runs)?;
        let pinned = gpu.alloc_pinned(bytes)?;
        let h2d = gpu.median_ms(args.runs, || gpu.enqueue_upload(&pinned, bytes, &mut dst))?;
        (ceiling, gbps(bytes as u64, h2d))
    };
    eprintln!("copy ceiling {copy_ceiling_gbps:.0} GB/s (read + write); host to device {h2d_gbps:.1} GB/s");

    let mut report = Report {
        suite: "gpu".into(),
        date: today(),
        device: info.name.clone(),
        driver: format!(
            "{}.{}",
            info.driver_version / 1000,
            info.driver_version % 1000 / 10
        ),
        compute_capability: format!(
            "{}.{}",
            info.compute_capability.0, info.compute_capability.1
        ),
        sm_count: info.sm_count,
        l2_mib: info.l2_bytes as f64 / 1048576.0,
        values_per_set: n,
        chunk_values: args.chunk_values,
        runs: args.runs,
        copy_ceiling_gbps,
        h2d_gbps,
        notes: Vec::new(),
        sets: Vec::new(),
    };
    if let Some(path) = &args.merge {
        let old: Report = serde_json::from_slice(&std::fs::read(path).map_err(io(path))?)
            .map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
        let names: Vec<&str> = old.sets.iter().map(|s| s.name.as_str()).collect();
        report.notes = old.notes.clone();
        report.notes.push(format!(
            "{} set(s) ({} .. {}) from an earlier run on {} ({}, driver {}): copy ceiling {:.0} GB/s, pinned H2D {:.1} GB/s; their % columns use that ceiling",
            names.len(),
            names.first().unwrap_or(&"-"),
            names.last().unwrap_or(&"-"),
            old.device,
            old.date,
            old.driver,
            old.copy_ceiling_gbps,
            old.h2d_gbps
        ));
        report.sets = old.sets;
    }
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }

    let mut pinned_raw = gpu.alloc_pinned(bytes)?;
    let mut d_raw = gpu.alloc::<u8>(bytes)?;
    let mut d_out = gpu.alloc::<u8>(bytes + 64)?;
    let mut pinned_col = None;
    for s in set_specs(args.quick) {
        if !args.selects(&s.name) {
            continue;
        }
        let t0 = Instant::now();
        let data = (s.make)(n);
        let raw = to_bytes(&data.values);
        let dump_this = args.dump_sets.is_empty() || args.dump_sets.contains(&data.name);
        if let Some(dir) = args.dump.as_ref().filter(|_| dump_this) {
            write_dump(dir, &data.name, &raw)?;
        }
        let r = bench_set(
            &gpu,
            args,
            &data,
            &raw,
            &mut pinned_raw,
            &mut d_raw,
            &mut d_out,
            &mut pinned_col,
            copy_ceiling_gbps,
        )?;
        print_set(&r);
        eprintln!("  ({:.1} s)", t0.elapsed().as_secs_f64());
        report.sets.retain(|x| x.name != r.name);
        report.sets.push(r);
        write_outputs(&args.out, &report)?;
    }
    write_outputs(&args.out, &report)?;
    println!("\n{}", summary_table(&report));
    eprintln!("bench gpu done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Writes one set's values (raw little-endian u32) to `dir/<name>.u32` through a temporary
/// name and a rename, so the nvCOMP script never reads a half-written file.
fn write_dump(dir: &Path, name: &str, raw: &[u8]) -> Result<PathBuf> {
    let path = dir.join(format!("{name}.u32"));
    let tmp = dir.join(format!(".{name}.u32.tmp"));
    std::fs::write(&tmp, raw).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

/// `--dump-only`: each selected set's values to `--dump` ([`write_dump`]), with no GPU work.
fn dump_only(args: &BenchArgs) -> Result<()> {
    let dir = args
        .dump
        .as_ref()
        .ok_or_else(|| Error::InvalidArgument("--dump-only needs --dump DIR".into()))?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut written = 0;
    for s in set_specs(args.quick) {
        if !args.selects(&s.name) {
            continue;
        }
        let data = (s.make)(args.values);
        let path = write_dump(dir, &data.name, &to_bytes(&data.values))?;
        eprintln!("{} ({} values)", path.display(), data.values.len());
        written += 1;
    }
    if written == 0 {
        return Err(Error::InvalidArgument("--sets selects no data set".into()));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn bench_set(
    gpu: &Gpu,
    args: &BenchArgs,
    data: &Dataset,
    raw: &[u8],
    pinned_raw: &mut tessera::gpu::PinnedBuffer,
    d_raw: &mut CudaSlice<u8>,
    d_out: &mut CudaSlice<u8>,
    pinned_col: &mut Option<tessera::gpu::PinnedBuffer>,
    ceiling: f64,
) -> Result<SetResult> {
    let values = &data.values;
    let n = values.len();
    let runs = args.runs;
    let ty = LogicalType::U32;
    let (mn, mx) = values
        .iter()
        .fold((u32::MAX, 0u32), |(a, b), &v| (a.min(v), b.max(v)));
    let (lo, hi) = if n == 0 {
        (0, 0)
    } else {
        (mn + (mx - mn) / 4, mn + (mx - mn) / 4 * 3)
    };
    let want_sum = tessera::query::sum_between_values(values, lo, hi);

    // The uncompressed column: upload from pinned memory, and the query over it.
    pinned_raw.as_mut_slice()?[..raw.len()].copy_from_slice(raw);
    let upload_raw_ms = gpu.median_ms(runs, || gpu.enqueue_upload(pinned_raw, raw.len(), d_raw))?;
    let d_values = gpu.upload(values)?;
    let mut res = gpu.alloc::<u64>(1)?;
    let plain_sum_ms = gpu.median_ms(runs, || {
        gpu.enqueue_sum_between_values(&d_values, n, lo, hi, &mut res)
    })?;
    let mut got = [0u64];
    gpu.download(&res, &mut got)?;
    if got[0] != want_sum {
        return Err(Error::Gpu(format!(
            "{}: plain SUM {} != CPU {}",
            data.name, got[0], want_sum
        )));
    }

    // Encode with each codec on the GPU.
    let mut encoded: Vec<(CodecId, Vec<Vec<u8>>, f64, bool)> = Vec::new();
    for codec in CODECS {
        let mut scratch = gpu.encode_scratch(codec, n)?;
        let mut last: Option<tessera::gpu::DeviceEncoded> = None;
        let mut t = Vec::new();
        for i in 0..=runs {
            let reuse = last.take().map(|e| e.words);
            let (enc, ms) = gpu.timed(|| {
                gpu.encode_device(codec, &d_values, n, args.chunk_values, &mut scratch, reuse)
            })?;
            if i > 0 {
                t.push(ms as f64);
            }
            last = Some(enc);
        }
        let enc = last.ok_or_else(|| Error::Gpu("no encode ran".into()))?;
        let chunks = gpu.download_encoded(&enc)?;
        let mut cpu = Vec::new();
        int::encode(codec, &values[..n.min(args.chunk_values)], &mut cpu)?;
        let matches = chunks.first().is_some_and(|c| *c == cpu);
        encoded.push((codec, chunks, median(t), matches));
    }
    drop(d_values);

    // The columns: one per codec, and auto (per chunk, the library's choice: column::auto_choice).
    let chunk_count = encoded[0].1.len();
    let mut columns: Vec<(String, Vec<ChunkRef<'_>>, Option<usize>)> = Vec::new();
    for (i, (codec, chunks, _, _)) in encoded.iter().enumerate() {
        let refs = chunks
            .iter()
            .enumerate()
            .map(|(c, p)| ChunkRef {
                codec: *codec,
                payload: p,
                value_count: chunk_len(n, args.chunk_values, c),
            })
            .collect();
        columns.push((codec.name().into(), refs, Some(i)));
    }
    let mut auto = Vec::with_capacity(chunk_count);
    for c in 0..chunk_count {
        let len = chunk_len(n, args.chunk_values, c);
        let plain = &raw[4 * c * args.chunk_values..4 * (c * args.chunk_values + len as usize)];
        let payload = |codec: CodecId| -> &[u8] {
            if codec == CodecId::Plain {
                return plain;
            }
            encoded
                .iter()
                .find(|e| e.0 == codec)
                .map_or(plain, |e| &e.1[c][..])
        };
        let sizes = tessera::codecs::column::AUTO_ORDER.map(|k| payload(k).len());
        let codec = tessera::codecs::column::auto_choice(sizes);
        auto.push(ChunkRef {
            codec,
            payload: payload(codec),
            value_count: len,
        });
    }
    columns.push(("auto".into(), auto, None));

    let mut results = Vec::new();
    for (label, refs, enc_index) in &columns {
        let col = gpu.upload_column(ty, refs)?;
        // Poison, decode, verify.
        gpu.fill_bytes(d_out, POISON)?;
        gpu.decode_into(&col, d_out)?;
        let mut back = vec![0u8; raw.len() + 64];
        gpu.download(d_out, &mut back)?;
        let verified = back[..raw.len()] == *raw && back[raw.len()..].iter().all(|&b| b == POISON);
        if !verified {
            eprintln!(
                "  {} {label}: DECODED COLUMN DIFFERS FROM THE INPUT",
                data.name
            );
        }
        let decode_ms = gpu.median_ms(runs, || gpu.enqueue_decode(&col, d_out))?;
        gpu.finish_decode(&col, Some(refs))?;
        let mut tuning = Vec::new();
        if args.tune {
            let sms = gpu.info().sm_count;
            for k in [4u32, 8, 16, 32] {
                tessera::gpu::bench_hooks::set_grid_limit(gpu, Some(sms * k));
                let ms = gpu.median_ms(runs, || gpu.enqueue_decode(&col, d_out))?;
                tuning.push((format!("{k}x{sms}"), ms));
            }
            tessera::gpu::bench_hooks::set_grid_limit(gpu, None);
        }
        let sum_ms = gpu.median_ms(runs, || gpu.enqueue_sum_between(&col, lo, hi, &mut res))?;
        gpu.finish_decode(&col, Some(refs))?;
        gpu.download(&res, &mut got)?;
        if got[0] != want_sum {
            return Err(Error::Gpu(format!(
                "{} {label}: fused SUM {} != CPU {}",
                data.name, got[0], want_sum
            )));
        }
        let need = (col.compressed_bytes() as usize).max(1);
        if pinned_col.as_ref().is_none_or(|p| p.len() < need) {
            *pinned_col = None;
            *pinned_col = Some(gpu.alloc_pinned(need + need / 8)?);
        }
        let pinned = pinned_col
            .as_mut()
            .ok_or_else(|| Error::Gpu("no pinned buffer".into()))?;
        gpu.pin_column_into(&col, pinned)?;
        let pinned = &*pinned;
        let upload_decode_ms = gpu.median_ms(runs, || {
            gpu.enqueue_reupload(&col, pinned)?;
            gpu.enqueue_decode(&col, d_out)
        })?;
        let compressed = col.compressed_bytes();
        let mut mix = Vec::new();
        if enc_index.is_none() {
            for c in CodecId::INTEGERS {
                let k = refs.iter().filter(|r| r.codec == c).count();
                if k > 0 {
                    mix.push((c.name().to_string(), k));
                }
            }
        }
        let enc = enc_index.map(|i| &encoded[i]);
        results.push(ColumnResult {
            codec: label.clone(),
            compressed_bytes: compressed,
            bits_per_value: compressed as f64 * 8.0 / n.max(1) as f64,
            mix,
            decode_ms,
            decode_gbps: gbps(raw.len() as u64, decode_ms),
            decode_frac_of_copy: gbps(raw.len() as u64 + compressed, decode_ms) / ceiling,
            sum_ms,
            encode_ms: enc.map(|e| e.2),
            encode_gbps: enc.map(|e| gbps(raw.len() as u64, e.2)),
            encode_matches_cpu: enc.map(|e| e.3),
            upload_decode_ms,
            tuning,
            verified,
        });
    }
    Ok(SetResult {
        name: data.name.clone(),
        values: n,
        sum_lo: lo,
        sum_hi: hi,
        plain_sum_ms,
        upload_raw_ms,
        columns: results,
    })
}

fn chunk_len(n: usize, chunk_values: usize, c: usize) -> u32 {
    n.saturating_sub(c * chunk_values).min(chunk_values) as u32
}

fn col<'a>(s: &'a SetResult, codec: &str) -> Option<&'a ColumnResult> {
    s.columns.iter().find(|c| c.codec == codec)
}

fn print_set(s: &SetResult) {
    let mut line = format!("{:<18}", s.name);
    for c in &s.columns {
        line.push_str(&format!(
            " | {} {:.2} b/v {:.0} GB/s {:.0}%{}",
            c.codec,
            c.bits_per_value,
            c.decode_gbps,
            100.0 * c.decode_frac_of_copy,
            if c.verified { "" } else { " WRONG" }
        ));
    }
    eprintln!("{line}");
}

fn f2(v: f64) -> String {
    format!("{v:.2}")
}
fn pct(v: f64) -> String {
    format!("{:.0}%", 100.0 * v)
}

/// The short table printed last.
fn summary_table(r: &Report) -> String {
    let headers = [
        "set",
        "auto",
        "b/v",
        "FOR GB/s",
        "FOR %",
        "DFOR GB/s",
        "DFOR %",
        "RFOR GB/s",
        "RFOR %",
        "sum FOR/plain",
        "enc FOR GB/s",
        "ok",
    ];
    let rows: Vec<Vec<String>> = r
        .sets
        .iter()
        .map(|s| {
            let g = |c: &str, f: fn(&ColumnResult) -> String| col(s, c).map_or("-".into(), f);
            let ok = s
                .columns
                .iter()
                .all(|c| c.verified && c.encode_matches_cpu != Some(false));
            vec![
                s.name.clone(),
                g("auto", |c| {
                    c.mix
                        .iter()
                        .map(|(k, n)| format!("{k}:{n}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }),
                g("auto", |c| f2(c.bits_per_value)),
                g("for", |c| format!("{:.0}", c.decode_gbps)),
                g("for", |c| pct(c.decode_frac_of_copy)),
                g("dfor", |c| format!("{:.0}", c.decode_gbps)),
                g("dfor", |c| pct(c.decode_frac_of_copy)),
                g("rfor", |c| format!("{:.0}", c.decode_gbps)),
                g("rfor", |c| pct(c.decode_frac_of_copy)),
                col(s, "for").map_or("-".into(), |c| format!("{:.2}", c.sum_ms / s.plain_sum_ms)),
                g("for", |c| {
                    c.encode_gbps.map_or("-".into(), |v| format!("{v:.0}"))
                }),
                if ok { "yes".into() } else { "NO".into() },
            ]
        })
        .collect();
    let right: Vec<&str> = headers[2..11].to_vec();
    format!(
        "{} ({} SMs, driver {}), {}, {} values per set; copy ceiling {:.0} GB/s, pinned H2D {:.1} GB/s\n{}",
        r.device,
        r.sm_count,
        r.driver,
        r.date,
        r.values_per_set,
        r.copy_ceiling_gbps,
        r.h2d_gbps,
        tessera::report::table(&headers, &right, &rows)
    )
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# tessera GPU benchmark, {date}\n\n{dev} (compute capability {cc}, {sms} SMs, {l2:.0} MiB L2), driver {drv}. \
         {n} u32 values per data set, chunks of {cv} values, median of {runs} runs after a warm-up, CUDA events.\n\n\
         Ceilings measured in this run: device-to-device copy **{copy:.0} GB/s** (bytes read + bytes written); \
         host-to-device from pinned memory **{h2d:.1} GB/s**.\n\n\
         `% copy` = (payload bytes read + value bytes written) per second / copy ceiling. \
         Fused SUM = `SUM(x) WHERE x BETWEEN lo AND hi` decoded in registers, never written; `plain` = the same query over the \
         uncompressed column. Upload+decode = payload from pinned host memory to the device, then decode; `raw upload` = the \
         uncompressed column from pinned memory.\n\n",
        date = r.date,
        dev = r.device,
        cc = r.compute_capability,
        sms = r.sm_count,
        l2 = r.l2_mib,
        drv = r.driver,
        n = r.values_per_set,
        cv = r.chunk_values,
        runs = r.runs,
        copy = r.copy_ceiling_gbps,
        h2d = r.h2d_gbps
    );
    for note in &r.notes {
        s.push_str(&format!("Note: {note}.\n\n"));
    }
    s.push_str("## Bits per value and decode throughput (GB/s of output, % of copy ceiling)\n\n");
    s.push_str("| set | auto (chunks) | auto b/v | FOR b/v | DFOR b/v | RFOR b/v | FOR | DFOR | RFOR | auto | verified |\n");
    s.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for set in &r.sets {
        let b = |c: &str| col(set, c).map_or("-".into(), |c| f2(c.bits_per_value));
        let d = |c: &str| {
            col(set, c).map_or("-".into(), |c| {
                format!("{:.0} ({})", c.decode_gbps, pct(c.decode_frac_of_copy))
            })
        };
        let mix = col(set, "auto").map_or(String::new(), |c| {
            c.mix
                .iter()
                .map(|(k, n)| format!("{k}:{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        });
        let ok = set.columns.iter().all(|c| c.verified);
        s.push_str(&format!(
            "| {} | {mix} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            set.name,
            b("auto"),
            b("for"),
            b("dfor"),
            b("rfor"),
            d("for"),
            d("dfor"),
            d("rfor"),
            d("auto"),
            if ok { "yes" } else { "NO" }
        ));
    }
    s.push_str("\n## Fused SUM, encode, host to GPU (ms unless noted)\n\n");
    s.push_str("| set | plain SUM | FOR SUM | DFOR SUM | RFOR SUM | auto SUM | enc FOR GB/s | enc DFOR GB/s | enc RFOR GB/s | enc = CPU bytes | raw upload | auto upload+decode |\n");
    s.push_str(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n",
    );
    for set in &r.sets {
        let q = |c: &str| col(set, c).map_or("-".into(), |c| format!("{:.3}", c.sum_ms));
        let e = |c: &str| {
            col(set, c)
                .and_then(|c| c.encode_gbps)
                .map_or("-".into(), |v| format!("{v:.0}"))
        };
        let same = CODECS.iter().all(|c| {
            col(set, c.name())
                .and_then(|c| c.encode_matches_cpu)
                .unwrap_or(false)
        });
        s.push_str(&format!(
            "| {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            set.name,
            set.plain_sum_ms,
            q("for"),
            q("dfor"),
            q("rfor"),
            q("auto"),
            e("for"),
            e("dfor"),
            e("rfor"),
            if same { "yes" } else { "NO" },
            f2(set.upload_raw_ms),
            col(set, "auto").map_or("-".into(), |c| f2(c.upload_decode_ms))
        ));
    }
    if r.sets
        .iter()
        .any(|s| s.columns.iter().any(|c| !c.tuning.is_empty()))
    {
        s.push_str("\n## Decode time (ms) by grid: one thread block per tile vs persistent grids\n\n| set | codec | per tile | others |\n| --- | --- | ---: | --- |\n");
        for set in &r.sets {
            for c in set.columns.iter().filter(|c| !c.tuning.is_empty()) {
                let others: Vec<String> = c
                    .tuning
                    .iter()
                    .map(|(g, ms)| format!("{g}: {ms:.3}"))
                    .collect();
                s.push_str(&format!(
                    "| {} | {} | {:.3} | {} |\n",
                    set.name,
                    c.codec,
                    c.decode_ms,
                    others.join(", ")
                ));
            }
        }
    }
    s
}

/// Throughput and bits per value against bit width (the uniform sets).
fn charts(r: &Report) -> (String, String) {
    let uniform: Vec<(f64, &SetResult)> = r
        .sets
        .iter()
        .filter_map(|s| {
            s.name
                .strip_prefix("uniform-b")
                .and_then(|b| b.parse::<f64>().ok())
                .map(|b| (b, s))
        })
        .collect();
    let mut sorted = uniform.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let series = |codec: &str, f: fn(&ColumnResult) -> f64| Series {
        name: codec.to_uppercase(),
        points: sorted
            .iter()
            .filter_map(|(b, s)| col(s, codec).map(|c| (*b, f(c))))
            .collect(),
        dashed: false,
    };
    let mut tput: Vec<Series> = CODECS
        .iter()
        .map(|c| series(c.name(), |c| c.decode_frac_of_copy * 100.0))
        .collect();
    tput.push(Series {
        name: "copy ceiling".into(),
        points: sorted.iter().map(|(b, _)| (*b, 100.0)).collect(),
        dashed: true,
    });
    let bits: Vec<Series> = CODECS
        .iter()
        .map(|c| series(c.name(), |c| c.bits_per_value))
        .collect();
    (
        line_chart(
            &format!(
                "Decode, bytes moved as % of the copy ceiling ({:.0} GB/s), {}",
                r.copy_ceiling_gbps, r.device
            ),
            "bit width of uniform data",
            "% of copy ceiling",
            &tput,
        ),
        line_chart(
            "Bits per value, uniform data",
            "bit width of uniform data",
            "bits per value",
            &bits,
        ),
    )
}

fn write_outputs(dir: &Path, r: &Report) -> Result<()> {
    let (tput, bits) = charts(r);
    let extra = [
        (".md", markdown(r)),
        ("-throughput.svg", tput),
        ("-bits.svg", bits),
    ];
    write_results(dir, &r.date, &r.device, "gpu", r, &extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lazy_set_list_names_match_bench_sets() {
        let lazy: Vec<String> = set_specs(false).iter().map(|s| s.name.clone()).collect();
        let eager: Vec<String> = datasets::bench_sets(64)
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(lazy, eager);
        for s in set_specs(false) {
            assert_eq!((s.make)(8).name, s.name);
        }
    }
}
