//! GPU-only LLL decode timings for quick A/B runs of kernel variants on the GPU machine.
//! `tessera-bench lll` is the full benchmark (ratios, CPU decoders, peers, loading scenarios,
//! JSON and plots); this skips everything but the GPU decode, so a set takes a second or two.
//!
//! Usage: `lll_gpu_speed [--segment-bytes 512] [--bytes N] [--runs 7] [--variants 128,128v]
//! FILE...`. Each file is encoded once (one payload per file) and the set is as many copies of
//! its payload as fit in `--bytes` (default 1 GiB), each its own memory on the device, as in the
//! bench. Every variant's output is first checked byte for byte against the file (output
//! poisoned first); a mismatch is printed and makes the exit status 1. Figures are the median of
//! `--runs` CUDA-event timings after a warm-up, in GB/s of output, next to a device copy ceiling
//! (bytes read + written per second) measured in the same run.

use tessera_codecs::lll;
use tessera_gpu::bench_hooks::lll::{self as hooks, Variant};
use tessera_gpu::lll::{self as glll, DeviceLll};
use tessera_gpu::Gpu;

const POISON: u8 = 0xA5;

fn main() {
    let mut files = Vec::new();
    let (mut segment_bytes, mut bytes, mut runs) = (lll::DEFAULT_SEGMENT_BYTES, 1usize << 30, 7);
    let mut only: Option<Vec<String>> = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut num = |what: &str| -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{what} N"))
        };
        match a.as_str() {
            "--segment-bytes" => segment_bytes = num("--segment-bytes"),
            "--bytes" => bytes = num("--bytes"),
            "--runs" => runs = num("--runs").max(1),
            "--variants" => {
                only = Some(
                    it.next()
                        .expect("--variants a,b")
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            _ => files.push(a),
        }
    }
    let variants: Vec<Variant> = Variant::ALL
        .into_iter()
        .filter(|v| {
            only.as_ref()
                .is_none_or(|o| o.iter().any(|n| n == v.name()))
        })
        .collect();
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            println!("no GPU ({e}): nothing to time");
            return;
        }
    };
    let ceiling = {
        let src = gpu.alloc::<u8>(bytes).expect("device buffer");
        let mut dst = gpu.alloc::<u8>(bytes).expect("device buffer");
        gpu.copy_ceiling_gbps(&src, &mut dst, runs)
            .expect("copy ceiling")
    };
    println!(
        "segments {segment_bytes}, {} MiB a set, copy ceiling {ceiling:.0} GB/s (read + write)",
        bytes >> 20
    );
    print!("{:<28} {:>7}", "set", "ratio");
    for v in &variants {
        print!(" {:>8}", v.name());
    }
    println!();
    let mut failed = false;
    for f in &files {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let mut payload = Vec::new();
        lll::encode_with_segment_bytes(&data, &mut payload, segment_bytes).expect("encode");
        let copies = (bytes / data.len().max(1)).max(1);
        let refs = vec![(payload.as_slice(), data.len()); copies];
        let input = DeviceLll::upload(&gpu, &refs).expect("upload");
        let n = data.len() * copies;
        let mut d_out = gpu.alloc::<u8>(n + 64).expect("output buffer");
        let mut back = vec![0u8; n + 64];
        let name = std::path::Path::new(f)
            .file_name()
            .map_or(f.clone(), |s| s.to_string_lossy().into_owned());
        print!(
            "{:<28} {:>7.3}",
            name,
            data.len() as f64 / payload.len() as f64
        );
        for &v in &variants {
            gpu.fill_bytes(&mut d_out, POISON).expect("fill");
            hooks::enqueue_decode(&gpu, &input, &mut d_out, v).expect("decode");
            let ok = glll::finish_decode(&gpu, &input).is_ok() && {
                gpu.download(&d_out, &mut back).expect("download");
                back[..n].chunks(data.len()).all(|c| c == data)
                    && back[n..].iter().all(|&b| b == POISON)
            };
            let ms = gpu
                .median_ms(runs, || hooks::enqueue_decode(&gpu, &input, &mut d_out, v))
                .expect("timed decode");
            glll::finish_decode(&gpu, &input).expect("decode status");
            if ok {
                print!(" {:>8.1}", n as f64 / ms / 1e6);
            } else {
                failed = true;
                print!(" {:>8}", "WRONG");
            }
        }
        println!();
    }
    if failed {
        std::process::exit(1);
    }
}
