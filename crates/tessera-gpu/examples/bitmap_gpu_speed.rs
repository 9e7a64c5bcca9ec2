//! GPU-only bitmap timings for quick A/B runs on the GPU machine: compression, decompression and
//! AND / OR on compressed bitmaps at densities 2^-k, next to a device copy ceiling measured in
//! the same run. `tessera-bench bitmap` is the full benchmark (CPU figures, roaring, the query
//! variants, JSON and plots); this skips everything but the GPU kernels, so one variant takes
//! seconds instead of minutes.
//!
//! Usage: `bitmap_gpu_speed [--densities 1,4,8,12,16] [--flavors wah,plwah] [--runs 7]
//! [--bits N] [--only comp,dec,and,or,fop]` (fop: each operation by path, merge / fused /
//! decompress-operate, not in the default set). Every figure is the median of `--runs` CUDA-event
//! timings after a warm-up. Each result is first checked against the CPU codec (compression
//! word for word, decompression byte for byte, AND / OR word for word); a mismatch is printed
//! and makes the exit status 1. Decompression is timed twice: on the GPU compressor's bitmap,
//! which carries its tile starts (`DeviceBitmap::tile_starts`), and on the CPU's words put on
//! the device without them, so that it computes them first. The `fop` table's "fused uploaded"
//! column is the fused operation on such bare operands.

use std::time::Instant;

use tessera_codecs::bitmap::{Bitmap, Flavor};
use tessera_gpu::bench_hooks::bitmap as hooks;
use tessera_gpu::bitmap as gb;
use tessera_gpu::Gpu;

struct Args {
    densities: Vec<u32>,
    flavors: Vec<Flavor>,
    runs: usize,
    bits: u64,
    only: Vec<String>,
}

fn parse() -> Args {
    let mut a = Args {
        densities: vec![1, 4, 8, 12, 16],
        flavors: vec![Flavor::Wah, Flavor::Plwah],
        runs: 7,
        bits: 1_677_721_600,
        only: vec!["comp".into(), "dec".into(), "and".into(), "or".into()],
    };
    let mut it = std::env::args().skip(1);
    let list = |v: Option<String>| -> Vec<String> {
        v.expect("a comma-separated list")
            .split(',')
            .map(str::to_string)
            .collect()
    };
    while let Some(x) = it.next() {
        match x.as_str() {
            "--densities" => {
                a.densities = list(it.next())
                    .iter()
                    .map(|k| k.parse().expect("--densities k,k,..."))
                    .collect()
            }
            "--flavors" => {
                a.flavors = list(it.next())
                    .iter()
                    .map(|f| match f.as_str() {
                        "wah" => Flavor::Wah,
                        "plwah" => Flavor::Plwah,
                        _ => panic!("--flavors wah,plwah"),
                    })
                    .collect()
            }
            "--runs" => a.runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--bits" => a.bits = it.next().and_then(|v| v.parse().ok()).expect("--bits N"),
            "--only" => a.only = list(it.next()),
            _ => panic!("unknown argument {x}"),
        }
    }
    a
}

/// Uniform random bits, each set with probability 2^-k (the AND of k xorshift words).
fn random_bits(bit_len: u64, k: u32, seed: u64) -> Vec<u8> {
    let n = bit_len.div_ceil(8) as usize;
    let mut out = vec![0u8; n];
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for c in out.chunks_mut(8) {
        let mut x = u64::MAX;
        for _ in 0..k.max(1) {
            x &= next();
        }
        c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
    }
    if bit_len % 8 != 0 {
        out[n - 1] &= (1u8 << (bit_len % 8)) - 1;
    }
    out
}

fn main() -> tessera_format::Result<()> {
    let args = parse();
    let gpu = Gpu::new()?;
    let t0 = Instant::now();
    let plain_bytes = args.bits.div_ceil(8) as usize;
    let ceiling = {
        let src = gpu.alloc::<u8>(plain_bytes)?;
        let mut dst = gpu.alloc::<u8>(plain_bytes)?;
        gpu.copy_ceiling_gbps(&src, &mut dst, 5)? // GB/s, read + write
    };
    println!(
        "{} bits, copy ceiling {ceiling:.0} GB/s, median of {} runs",
        args.bits, args.runs
    );
    println!(
        "| k | flavor | words | comp ms | comp % | comp queued ms | % | dec ms | dec % | dec, no tile starts ms | % | and ms | or ms | ok |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut all_ok = true;
    let has = |s: &str| args.only.iter().any(|o| o == s);
    for &k in &args.densities {
        let a_bits = random_bits(args.bits, k, 1 + u64::from(k));
        let b_bits = random_bits(args.bits, k, 1000 + u64::from(k));
        for &flavor in &args.flavors {
            let a = Bitmap::compress(flavor, &a_bits, args.bits)?;
            let b = Bitmap::compress(flavor, &b_bits, args.bits)?;
            let pa = gb::upload_plain(&gpu, &a_bits, args.bits)?;
            let frac = |ms: f64, payload: usize| {
                (plain_bytes + 4 * payload) as f64 / ms / 1e6 / ceiling * 100.0
            };
            let mut ok = true;
            let mut cells = vec![String::from("-"); 10];
            if has("comp") {
                let c = gb::compress_device(&gpu, flavor, &pa)?;
                ok &= gb::download(&gpu, &c)? == a;
                let q = gb::compress_device_queued(&gpu, flavor, &pa)?.finish(&gpu)?;
                ok &= gb::download(&gpu, &q)? == a;
                // With the host's wait for the word count, then the GPU's work alone (the
                // count is read after the timed region).
                let ms = gpu.median_ms(args.runs, || gb::compress_device(&gpu, flavor, &pa))?;
                cells[0] = format!("{ms:.3}");
                cells[1] = format!("{:.0}%", frac(ms, a.words().len()));
                let ms = gpu.median_ms_then(
                    args.runs,
                    || gb::compress_device_queued(&gpu, flavor, &pa),
                    |p| {
                        ok &= p.finish(&gpu)?.len == a.words().len();
                        Ok(())
                    },
                )?;
                cells[2] = format!("{ms:.3}");
                cells[3] = format!("{:.0}%", frac(ms, a.words().len()));
            }
            // The CPU's words on the device without tile starts (`gb::upload` would compute
            // them): the path of bitmaps that have none, e.g. the merge path's results.
            let bare = |x: &Bitmap| -> tessera_format::Result<gb::DeviceBitmap> {
                Ok(gb::DeviceBitmap {
                    flavor,
                    bit_len: args.bits,
                    words: gpu.upload(x.words())?,
                    len: x.words().len(),
                    tile_starts: None,
                })
            };
            let da = bare(&a)?;
            let db = bare(&b)?;
            if has("dec") {
                // The GPU compressor's bitmap, which carries its tile starts, then the uploaded
                // CPU one, whose tile starts decompression computes first.
                let dc = gb::compress_device(&gpu, flavor, &pa)?;
                for (i, d) in [(0, &dc), (1, &da)] {
                    let mut out = gb::decompress_device(&gpu, d)?;
                    ok &= gb::download_plain(&gpu, &out)? == a_bits;
                    let ms = gpu.median_ms(args.runs, || {
                        gb::decompress_device_into(&gpu, d, &mut out.words)
                    })?;
                    cells[4 + 2 * i] = format!("{ms:.3}");
                    cells[5 + 2 * i] = format!("{:.0}%", frac(ms, a.words().len()));
                }
            }
            for (i, (name, op)) in [
                ("and", tessera_codecs::bitmap::ops::Op::And),
                ("or", tessera_codecs::bitmap::ops::Op::Or),
            ]
            .into_iter()
            .enumerate()
            {
                if !has(name) {
                    continue;
                }
                let r = gb::binary_device(&gpu, op, &da, &db)?;
                ok &= gb::download(&gpu, &r)? == tessera_codecs::bitmap::ops::binary(op, &a, &b)?;
                let ms = gpu.median_ms(args.runs, || gb::binary_device(&gpu, op, &da, &db))?;
                cells[8 + i] = format!("{ms:.4}");
            }
            all_ok &= ok;
            println!(
                "| 2^-{k} | {flavor:?} | {} | {} | {} |",
                a.words().len(),
                cells.join(" | "),
                if ok { "yes" } else { "MISMATCH" }
            );
            if has("fop") {
                // Operations by path: merge, fused on GPU-compressed operands (tile starts
                // carried), fused on uploaded ones (computed first), and decompress-operate
                // (decompress both, plain op, compress), each checked against the CPU.
                let pb = gb::upload_plain(&gpu, &b_bits, args.bits)?;
                let (ca, cb) = (
                    gb::compress_device(&gpu, flavor, &pa)?,
                    gb::compress_device(&gpu, flavor, &pb)?,
                );
                let mut xa = gb::decompress_device(&gpu, &ca)?;
                let mut xb = gb::decompress_device(&gpu, &cb)?;
                let mut xr = gb::decompress_device(&gpu, &ca)?;
                for op in [
                    tessera_codecs::bitmap::ops::Op::And,
                    tessera_codecs::bitmap::ops::Op::Or,
                ] {
                    let want = tessera_codecs::bitmap::ops::binary(op, &a, &b)?;
                    let mut fok =
                        gb::download(&gpu, &hooks::binary_device_merge(&gpu, op, &ca, &cb)?)?
                            == want;
                    fok &= gb::download(&gpu, &hooks::binary_device_fused(&gpu, op, &ca, &cb)?)?
                        == want;
                    fok &= gb::download(&gpu, &hooks::binary_device_fused(&gpu, op, &da, &db)?)?
                        == want;
                    let merge = gpu
                        .median_ms(args.runs, || hooks::binary_device_merge(&gpu, op, &ca, &cb))?;
                    let fused = gpu
                        .median_ms(args.runs, || hooks::binary_device_fused(&gpu, op, &ca, &cb))?;
                    let fused_up = gpu
                        .median_ms(args.runs, || hooks::binary_device_fused(&gpu, op, &da, &db))?;
                    let dop = gpu.median_ms(args.runs, || {
                        gb::decompress_device_into(&gpu, &ca, &mut xa.words)?;
                        gb::decompress_device_into(&gpu, &cb, &mut xb.words)?;
                        gb::plain_op_device(&gpu, op, &xa, &xb, &mut xr)?;
                        gb::compress_device(&gpu, flavor, &xr)
                    })?;
                    all_ok &= fok;
                    println!(
                        "| fop 2^-{k} | {flavor:?} | {op:?} | words {} | merge {merge:.4} | fused {fused:.4} | fused uploaded {fused_up:.4} | decompress-operate {dop:.4} | {} |",
                        a.words().len() + b.words().len(),
                        if fok { "yes" } else { "MISMATCH" }
                    );
                }
            }
        }
    }
    println!("({:.1} s)", t0.elapsed().as_secs_f64());
    if !all_ok {
        std::process::exit(1);
    }
    Ok(())
}
