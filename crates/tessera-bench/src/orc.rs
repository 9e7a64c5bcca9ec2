//! `tessera-bench orc --input FILE.orc`: a real ORC file read by tessera into GPU-resident
//! decoded streams (`tessera_orc::gpu`: the file uploaded once, ZLIB chunks, PRESENT and integer
//! streams cut into pieces at run boundaries, all through the CODAG decoders on device buffers),
//! the same to Arrow batches on the host, and tessera's CPU path on all cores; the median of
//! each GPU phase (upload, inflate, walk, present, rle, download, assemble), and the link's
//! host-to-device speed from pageable and from pinned memory for the file's bytes; and the file
//! to GPU-resident Arrow arrays (`read_device`: Arrow's layout built on the device), its file
//! uploaded from pageable memory and from pinned memory it was copied into once.
//! pyarrow's ORC reader, the peer, is timed by the Python step that wrote the file (the device
//! has pyarrow; this binary does not call Python).
//!
//! The GPU batches are checked equal to the CPU batches before anything is timed. Figures are
//! the median of `--runs` runs after a warm-up; GB/s = bytes of the Arrow arrays / time.

use super::common::{gbps, today, wall_ms, write_results};
use super::BenchArgs;

use serde::Serialize;
use tessera::format::{Error, Result};
use tessera::gpu::Gpu;
use tessera_orc::{OrcFile, OrcReader};

#[derive(Debug, Serialize)]
struct Report {
    date: String,
    device: String,
    cpu_threads: usize,
    file: String,
    file_bytes: usize,
    rows: u64,
    stripes: usize,
    compression: String,
    arrow_bytes: usize,
    gpu_chunks: Option<[usize; 5]>,
    /// Compression chunks stored as they are, streams cut into pieces.
    gpu_original_chunks: Option<usize>,
    gpu_rle_streams: Option<usize>,
    /// Bytes copied back for the walk, resident after the RLE launches, copied back for Arrow.
    gpu_walk_download_bytes: Option<usize>,
    gpu_resident_bytes: Option<usize>,
    gpu_arrow_download_bytes: Option<usize>,
    /// Median ms of each phase, in order.
    gpu_phase_ms: Vec<(String, f64)>,
    /// The file's bytes to the device: GB/s from pageable memory (`Gpu::upload`) and from
    /// pinned memory (one queued copy), medians.
    upload_pageable_gbps: Option<f64>,
    upload_pinned_gbps: Option<f64>,
    /// File bytes in host memory to every stream decoded on the GPU, ms.
    gpu_resident_ms: Option<f64>,
    /// The same to Arrow batches on the host, ms.
    gpu_to_arrow_ms: Option<f64>,
    /// File bytes in host memory to GPU-resident Arrow arrays (`read_device`), ms: the file
    /// uploaded from its pageable bytes, and from pinned memory it was copied into once
    /// before timing (`read_device_staged`).
    gpu_device_arrow_ms: Option<f64>,
    gpu_device_arrow_pinned_ms: Option<f64>,
    /// Median ms of each phase of the pinned `read_device_staged` runs.
    gpu_device_phase_ms: Vec<(String, f64)>,
    /// Bytes of the device arrays (validity, offsets, values).
    gpu_device_arrow_bytes: Option<usize>,
    /// tessera's CPU path on all cores, ms.
    cpu_ms: f64,
}

fn orc_err(e: tessera_orc::OrcError) -> Error {
    Error::InvalidArgument(e.to_string())
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let Some(path) = args.input.first() else {
        return Err(Error::InvalidArgument(
            "orc: give the ORC file with --input FILE.orc".into(),
        ));
    };
    let f = OrcFile::open(path).map_err(orc_err)?;
    let r = OrcReader::new(&f, None).map_err(orc_err)?;
    let runs = args.runs.max(3);
    let cpu = r.read_all().map_err(orc_err)?;
    let arrow_bytes: usize = cpu.iter().map(|b| b.get_array_memory_size()).sum();
    let cpu_ms = wall_ms(runs, || r.read_all().map_err(orc_err))?;
    println!(
        "{}: {} bytes, {} rows, {} stripes, {}, {} bytes of Arrow arrays",
        path.display(),
        f.bytes().len(),
        f.rows(),
        f.stripes().len(),
        f.compression().name(),
        arrow_bytes
    );
    println!(
        "tessera CPU ({} threads): {cpu_ms:.1} ms, {:.2} GB/s",
        rayon::current_num_threads(),
        gbps(arrow_bytes, cpu_ms)
    );
    let (mut device, mut chunks, mut res_ms, mut arrow_ms) =
        ("no GPU".to_string(), None, None, None);
    let mut last = None;
    let mut phase_ms = Vec::new();
    let (mut pageable, mut pinned) = (None, None);
    let (mut dev_ms, mut dev_pinned_ms, mut dev_bytes) = (None, None, None);
    let mut dev_phase_ms = Vec::new();
    match Gpu::new() {
        Err(e) => println!("GPU: skipped ({e})"),
        Ok(g) => {
            device = g.info().name.clone();
            let (gb, rep) = tessera_orc::gpu::read_batches(&g, &r).map_err(orc_err)?;
            if gb != cpu {
                return Err(Error::Gpu("GPU batches differ from the CPU batches".into()));
            }
            chunks = Some([
                rep.deflate_chunks,
                rep.present_chunks,
                rep.byte_rle_chunks,
                rep.rle_v1_chunks,
                rep.rle_v2_chunks,
            ]);
            let mut res = Vec::new();
            let mut tot = Vec::new();
            let mut phases: Vec<Vec<f64>> = vec![Vec::new(); 8];
            for _ in 0..runs {
                let (_, rep) = tessera_orc::gpu::read_batches(&g, &r).map_err(orc_err)?;
                res.push(rep.seconds_to_resident * 1e3);
                tot.push(rep.seconds_total * 1e3);
                for (i, (_, sec)) in rep.phases.pairs().iter().enumerate() {
                    phases[i].push(sec * 1e3);
                }
                last = Some(rep);
            }
            let names = tessera_orc::gpu::Phases::default().pairs().map(|p| p.0);
            for (name, v) in names.iter().zip(phases) {
                let m = super::common::median(v);
                println!("  phase {name}: {m:.1} ms");
                phase_ms.push((name.to_string(), m));
            }
            let (a, b) = (super::common::median(res), super::common::median(tot));
            // The link, for the file's bytes: pageable (what the reader does) and pinned.
            let fb = f.bytes();
            let mut pg = Vec::new();
            for _ in 0..runs {
                let t = std::time::Instant::now();
                let d = g.upload(fb)?;
                g.synchronize()?;
                pg.push(t.elapsed().as_secs_f64() * 1e3);
                drop(d);
            }
            let mut host = g.alloc_pinned(fb.len())?;
            host.as_mut_slice()?.copy_from_slice(fb);
            let mut dst = g.alloc::<u8>(fb.len())?;
            let mut pn = Vec::new();
            for _ in 0..runs {
                let t = std::time::Instant::now();
                g.enqueue_upload(&host, fb.len(), &mut dst)?;
                g.synchronize()?;
                pn.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let (pg, pn) = (super::common::median(pg), super::common::median(pn));
            println!(
                "link, file bytes to the device: pageable {pg:.1} ms ({:.1} GB/s), pinned {pn:.1} \
                 ms ({:.1} GB/s)",
                gbps(fb.len(), pg),
                gbps(fb.len(), pn)
            );
            pageable = Some(gbps(fb.len(), pg));
            pinned = Some(gbps(fb.len(), pn));
            println!(
                "tessera GPU to resident streams: {a:.1} ms, {:.2} GB/s",
                gbps(arrow_bytes, a)
            );
            println!(
                "tessera GPU to Arrow on the host: {b:.1} ms, {:.2} GB/s",
                gbps(arrow_bytes, b)
            );
            println!("chunks [deflate, present, byte-rle, rle-v1, rle-v2]: {chunks:?}");
            if let Some(r) = &last {
                println!("last run: {r:?}");
            }
            res_ms = Some(a);
            arrow_ms = Some(b);

            // To GPU-resident Arrow arrays: checked against the CPU batches first.
            let (cols, _) = tessera_orc::gpu::read_device(&g, &r).map_err(orc_err)?;
            let mut bytes = 0usize;
            for (k, c) in cols.iter().enumerate() {
                let a = &c.array;
                bytes += a.values.len()
                    + a.validity.as_ref().map_or(0, |v| v.len())
                    + a.offsets.as_ref().map_or(0, |v| v.len());
                let host = tessera_orc::gpu::download_array(&g, a).map_err(orc_err)?;
                let mut at = 0;
                for b in &cpu {
                    let want = b.column(k);
                    if host.slice(at, want.len()).to_data() != want.to_data() {
                        return Err(Error::Gpu(format!(
                            "device array of column {} differs from the CPU batches",
                            c.name
                        )));
                    }
                    at += want.len();
                }
            }
            drop(cols);
            let mut pageable_ms = Vec::new();
            for _ in 0..runs {
                let (cols, rep) = tessera_orc::gpu::read_device(&g, &r).map_err(orc_err)?;
                pageable_ms.push(rep.seconds_total * 1e3);
                drop(cols);
            }
            let mut pinned_ms = Vec::new();
            let mut dphases: Vec<Vec<f64>> = vec![Vec::new(); 8];
            for _ in 0..runs {
                let (cols, rep) =
                    tessera_orc::gpu::read_device_staged(&g, &r, &host).map_err(orc_err)?;
                pinned_ms.push(rep.seconds_total * 1e3);
                for (i, (_, sec)) in rep.phases.pairs().iter().enumerate() {
                    dphases[i].push(sec * 1e3);
                }
                drop(cols);
            }
            for (name, v) in names.iter().zip(dphases) {
                let m = super::common::median(v);
                println!("  device phase {name}: {m:.1} ms");
                dev_phase_ms.push((name.to_string(), m));
            }
            let (pm, nm) = (
                super::common::median(pageable_ms),
                super::common::median(pinned_ms),
            );
            println!(
                "tessera GPU to GPU-resident Arrow arrays ({bytes} bytes): pageable upload \
                 {pm:.1} ms ({:.2} GB/s), pinned upload {nm:.1} ms ({:.2} GB/s)",
                gbps(arrow_bytes, pm),
                gbps(arrow_bytes, nm)
            );
            dev_ms = Some(pm);
            dev_pinned_ms = Some(nm);
            dev_bytes = Some(bytes);
        }
    }
    let rep = Report {
        date: today(),
        device: device.clone(),
        cpu_threads: rayon::current_num_threads(),
        file: path.display().to_string(),
        file_bytes: f.bytes().len(),
        rows: f.rows(),
        stripes: f.stripes().len(),
        compression: f.compression().name().into(),
        arrow_bytes,
        gpu_chunks: chunks,
        gpu_original_chunks: last.as_ref().map(|r| r.original_chunks),
        gpu_rle_streams: last.as_ref().map(|r| r.rle_streams),
        gpu_walk_download_bytes: last.as_ref().map(|r| r.walk_download_bytes),
        gpu_resident_bytes: last.as_ref().map(|r| r.resident_bytes),
        gpu_arrow_download_bytes: last.as_ref().map(|r| r.arrow_download_bytes),
        gpu_phase_ms: phase_ms,
        upload_pageable_gbps: pageable,
        upload_pinned_gbps: pinned,
        gpu_resident_ms: res_ms,
        gpu_to_arrow_ms: arrow_ms,
        gpu_device_arrow_ms: dev_ms,
        gpu_device_arrow_pinned_ms: dev_pinned_ms,
        gpu_device_phase_ms: dev_phase_ms,
        gpu_device_arrow_bytes: dev_bytes,
        cpu_ms,
    };
    write_results(&args.out, &rep.date, &device, "orc", &rep, &[])
}
