//! CUDA-event timing on the main stream: one region ([`Gpu::timed`]), the median of repeated
//! runs ([`Gpu::median_ms`]) and the device copy ceiling every decoder is compared with
//! ([`Gpu::copy_ceiling_gbps`]). Measurement, not codec work: the demo and the benchmarks use
//! it, and nothing else in the crate does.

use cudarc::driver::CudaSlice;
use tessera_format::Result;

use super::{cuda, Gpu};

impl Gpu {
    /// Runs `work` (which queues GPU work on the main stream) between two CUDA events and
    /// returns its result with the elapsed GPU time in milliseconds.
    pub fn timed<R>(&self, work: impl FnOnce() -> Result<R>) -> Result<(R, f32)> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .ctx
            .new_event(flags)
            .map_err(cuda("creating an event"))?;
        let stop = self
            .ctx
            .new_event(flags)
            .map_err(cuda("creating an event"))?;
        start
            .record(&self.stream)
            .map_err(cuda("recording an event"))?;
        let r = work()?;
        stop.record(&self.stream)
            .map_err(cuda("recording an event"))?;
        stop.synchronize().map_err(cuda("waiting for an event"))?;
        let ms = start
            .elapsed_ms(&stop)
            .map_err(cuda("reading an event timer"))?;
        Ok((r, ms))
    }

    /// Device-to-device copy of `bytes` bytes, timed: the memory-bandwidth ceiling every
    /// decoder is measured against (bytes read + bytes written per second = 2 * bytes / time).
    pub fn time_copy(&self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>) -> Result<f32> {
        let bytes = src.len().min(dst.len());
        let (s, d) = (self.ptr(src), self.ptr(dst));
        let ((), ms) = self.timed(|| {
            // SAFETY: both buffers hold at least `bytes` bytes and live past the wait in `timed`.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(d, s, bytes, self.stream.cu_stream())
            }
            .map_err(cuda("copying on the device"))
        })?;
        Ok(ms)
    }

    /// Median GPU milliseconds of `work` (which queues GPU work on the main stream) over `runs`
    /// runs after an untimed warm-up; NaN for no runs.
    pub fn median_ms<R>(&self, runs: usize, work: impl FnMut() -> Result<R>) -> Result<f64> {
        self.median_ms_then(runs, work, |_| Ok(()))
    }

    /// [`Gpu::median_ms`] where each run's result is handed to `after` outside the timed region
    /// (e.g. to finish a queued GPU call, so the timing holds its GPU work and not the host's
    /// wait).
    pub fn median_ms_then<R>(
        &self,
        runs: usize,
        mut work: impl FnMut() -> Result<R>,
        mut after: impl FnMut(R) -> Result<()>,
    ) -> Result<f64> {
        after(self.timed(&mut work)?.0)?;
        let mut t = Vec::with_capacity(runs);
        for _ in 0..runs {
            let (r, ms) = self.timed(&mut work)?;
            after(r)?;
            t.push(f64::from(ms));
        }
        Ok(median(t))
    }

    /// The copy ceiling in GB/s (bytes read + bytes written per second) of [`Gpu::time_copy`]
    /// from `src` to `dst`: the median of `runs` copies after a warm-up.
    pub fn copy_ceiling_gbps(
        &self,
        src: &CudaSlice<u8>,
        dst: &mut CudaSlice<u8>,
        runs: usize,
    ) -> Result<f64> {
        let bytes = src.len().min(dst.len());
        self.time_copy(src, dst)?;
        let mut t = Vec::with_capacity(runs);
        for _ in 0..runs {
            t.push(f64::from(self.time_copy(src, dst)?));
        }
        Ok(2.0 * bytes as f64 / median(t) / 1e6)
    }
}

/// The median (the upper one of the two middle values for an even count); NaN for none.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Two events around a stretch of queued work, recorded only while operation timing is on
/// ([`super::trace::set_op_timing`]): the device time of that stretch, summed into
/// [`super::trace::OpTimes::span_ns`].
#[derive(Debug)]
pub struct TraceSpan {
    start: cudarc::driver::CudaEvent,
    end: cudarc::driver::CudaEvent,
}

impl Gpu {
    /// Records a span's start on the main stream when operation timing is on (`None` else).
    pub fn trace_span_start(&self) -> Result<Option<TraceSpan>> {
        if !super::trace::op_timing() {
            return Ok(None);
        }
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = || self.ctx.new_event(flags).map_err(cuda("creating an event"));
        let (start, end) = (event()?, event()?);
        start
            .record(&self.stream)
            .map_err(cuda("recording an event"))?;
        Ok(Some(TraceSpan { start, end }))
    }

    /// Records the span's end after the work queued so far.
    pub fn trace_span_end(&self, span: &Option<TraceSpan>) -> Result<()> {
        if let Some(s) = span {
            s.end
                .record(&self.stream)
                .map_err(cuda("recording an event"))?;
        }
        Ok(())
    }

    /// Adds the span's device time to the trace (call after the stream has passed its end).
    pub fn trace_span_add(&self, span: Option<TraceSpan>) -> Result<()> {
        if let Some(s) = span {
            let ms = s
                .start
                .elapsed_ms(&s.end)
                .map_err(cuda("reading an event timer"))?;
            super::trace::add_span((f64::from(ms) * 1e6) as u64);
        }
        Ok(())
    }
}
