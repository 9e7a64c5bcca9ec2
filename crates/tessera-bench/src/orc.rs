//! `tessera-bench orc --input FILE.orc`: a real ORC file read by tessera into GPU-resident
//! decoded streams (`tessera_orc::gpu`: ZLIB chunks, PRESENT and integer streams through the
//! CODAG decoders), the same to Arrow batches on the host, and tessera's CPU path on all cores.
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
    /// File bytes in host memory to every stream decoded on the GPU, ms.
    gpu_resident_ms: Option<f64>,
    /// The same to Arrow batches on the host, ms.
    gpu_to_arrow_ms: Option<f64>,
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
            for _ in 0..runs {
                let (_, rep) = tessera_orc::gpu::read_batches(&g, &r).map_err(orc_err)?;
                res.push(rep.seconds_to_resident * 1e3);
                tot.push(rep.seconds_total * 1e3);
            }
            let (a, b) = (super::common::median(res), super::common::median(tot));
            println!(
                "tessera GPU to resident streams: {a:.1} ms, {:.2} GB/s",
                gbps(arrow_bytes, a)
            );
            println!(
                "tessera GPU to Arrow on the host: {b:.1} ms, {:.2} GB/s",
                gbps(arrow_bytes, b)
            );
            println!("chunks [deflate, present, byte-rle, rle-v1, rle-v2]: {chunks:?}");
            res_ms = Some(a);
            arrow_ms = Some(b);
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
        gpu_resident_ms: res_ms,
        gpu_to_arrow_ms: arrow_ms,
        cpu_ms,
    };
    write_results(&args.out, &rep.date, &device, "orc", &rep, &[])
}
