//! What the GPU speed examples (`bitmap_gpu_speed`, `lll_gpu_speed`) share: CUDA-event timings
//! (a warm-up, then the median of the runs) and the device copy ceiling they are set beside.

use tessera_format::Result;
use tessera_gpu::Gpu;

/// The middle value of `v` (the upper one of the two middle ones for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median GPU milliseconds of `work` (which queues work on the main stream) over `runs` runs
/// after a warm-up.
pub fn gpu_ms<R>(gpu: &Gpu, runs: usize, work: impl FnMut() -> Result<R>) -> Result<f64> {
    gpu_ms_then(gpu, runs, work, |_| Ok(()))
}

/// [`gpu_ms`] where each run's result goes to `after` outside the timed region (finishing a
/// queued compression, so the timing holds its GPU work and not the host's wait).
pub fn gpu_ms_then<R>(
    gpu: &Gpu,
    runs: usize,
    mut work: impl FnMut() -> Result<R>,
    mut after: impl FnMut(R) -> Result<()>,
) -> Result<f64> {
    after(gpu.timed(&mut work)?.0)?;
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (r, ms) = gpu.timed(&mut work)?;
        after(r)?;
        t.push(f64::from(ms));
    }
    Ok(median(t))
}

/// The device-to-device copy ceiling over `bytes` bytes in GB/s, bytes read + bytes written:
/// the median of `runs` timed copies after a warm-up.
pub fn copy_ceiling_gbps(gpu: &Gpu, bytes: usize, runs: usize) -> Result<f64> {
    let src = gpu.alloc::<u8>(bytes)?;
    let mut dst = gpu.alloc::<u8>(bytes)?;
    gpu.time_copy(&src, &mut dst)?;
    let copy = median(
        (0..runs)
            .map(|_| gpu.time_copy(&src, &mut dst).map(f64::from))
            .collect::<Result<Vec<_>>>()?,
    );
    Ok(2.0 * bytes as f64 / copy / 1e6)
}
