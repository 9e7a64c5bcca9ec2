//! Integer decodes deferred and sent together: several decodes (any codec, any logical type) in
//! one launch of `int_decode_jobs` (`kernels/int/jobs.cu`), and the device copies queued beside
//! them in one copy list after it.
//!
//! Why: a small table's read queues one decode per codec and logical type (weather: FOR and
//! RFOR into `u32`, DFOR and RFOR into two 64-bit batches, DFOR utf8 offsets), each over a few
//! slabs, with a copy of plain or CPU-decoded chunks between them. Each is a few microseconds of
//! host time and a kernel's fixed latency on the device, far more than its work. While a
//! [`DeferredDecodes`] guard is open, [`Gpu::enqueue_decode`] records its launches as jobs and
//! [`Gpu::copy_list`] its copies; the first other operation on the stream (a launch, copy, fill,
//! wait or read-back), or the guard's flush, sends them: every job first (one launch when their
//! thread blocks fit one wave of the GPU, else each as its own kernel as before), then every
//! copy.
//!
//! What makes the reordering safe (jobs deferred past copies queued before them): a decode job
//! reads only its own uploaded words, chunk table and status words, and writes only its output
//! range and status words; the copies deferred with it write chunks' places in other ranges (a
//! column's places, disjoint from the chunks its decoders write) and read uploads or the jobs'
//! outputs (which run first). Nothing else may be queued into a deferral.

use cudarc::driver::DeviceRepr;
use tessera_format::{Error, Result};

use super::decode::kind_kernel;
use super::layout;
use crate::kernels::Module;
use crate::primitives::copy::DeviceCopy;
use crate::runtime::Gpu;
use std::sync::atomic::Ordering;

/// Jobs one launch takes (`TS_INT_JOBS_MAX`).
pub(crate) const JOBS_MAX: usize = 16;
/// Thread blocks per SM a merged launch may fill (one wave of `int_decode_jobs`, whose bound is
/// RFOR's 12 blocks an SM): larger decodes keep their own kernels, tuned for their codec.
const BLOCKS_PER_SM: u32 = 12;

/// One decode of a [`crate::DeviceColumn`] batch: the arguments of `<codec>_decode_<out>`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntJob {
    /// Which decode ([`super::decode::decode_kind`]; `jobs.cu`'s kinds).
    pub kind: u32,
    pub words: u64,
    pub chunks: u64,
    pub n_chunks: u32,
    pub total_slabs: u32,
    pub out: u64,
    pub flip: u64,
    pub status: u64,
}

/// `struct TsIntJobs` of the kernel, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
struct IntJobs {
    words: [u64; JOBS_MAX],
    chunks: [u64; JOBS_MAX],
    out: [u64; JOBS_MAX],
    status: [u64; JOBS_MAX],
    flip: [u64; JOBS_MAX],
    n_chunks: [u32; JOBS_MAX],
    total_slabs: [u32; JOBS_MAX],
    first_block: [u32; JOBS_MAX + 1],
    kind: [u32; JOBS_MAX],
    n: u32,
}

// SAFETY: plain `#[repr(C)]` data laid out as `struct TsIntJobs` (u64 arrays, then u32 arrays
// and a u32; no padding between them).
unsafe impl DeviceRepr for IntJobs {}

/// What a deferral holds until it is sent.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    jobs: Vec<IntJob>,
    copies: Vec<DeviceCopy>,
}

/// While alive, integer decodes and device copies queued on its handle wait and are sent
/// together (module docs) when any other operation is queued on the stream, or by
/// [`Self::flush`]; dropping the guard sends them too. Whatever a deferred decode or copy reads
/// or writes must live until the deferral is sent and the stream has passed it.
#[derive(Debug)]
pub struct DeferredDecodes<'g> {
    gpu: &'g Gpu,
}

impl DeferredDecodes<'_> {
    /// Queues every deferred decode and copy and ends the deferral.
    pub fn flush(self) -> Result<()> {
        self.gpu.flush_deferred()
    }
}

impl Drop for DeferredDecodes<'_> {
    fn drop(&mut self) {
        // Errors surface at the handle's next operation, which reports its own.
        let _ = self.gpu.flush_deferred();
    }
}

impl Gpu {
    /// Starts deferring integer decodes and device copies (the guard's docs): what a caller
    /// that queues many small decoders back to back opens around them.
    /// `TESSERA_DEFER_DECODES=0` turns deferral off (every decode and copy queued at once, as
    /// without a guard): what the tables bench compares against.
    pub fn defer_decodes(&self) -> Result<DeferredDecodes<'_>> {
        self.flush_deferred()?;
        static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if crate::runtime::switched_off(&OFF, "TESSERA_DEFER_DECODES") {
            return Ok(DeferredDecodes { gpu: self });
        }
        self.with_state::<Deferred, _>(|d| {
            *d = Some(Deferred::default());
            Ok(())
        })?;
        self.deferring.store(true, Ordering::Relaxed);
        Ok(DeferredDecodes { gpu: self })
    }

    /// Queues `job`, or records it while a deferral is open.
    pub(crate) fn queue_int_job(&self, job: IntJob) -> Result<()> {
        if self.defer_with(|d| d.jobs.push(job))? {
            return Ok(());
        }
        self.launch_int_job(&job)
    }

    /// Records `copies` while a deferral is open (`true`); `false`: the caller queues them.
    pub(crate) fn defer_copies(&self, copies: &[DeviceCopy]) -> Result<bool> {
        self.defer_with(|d| d.copies.extend_from_slice(copies))
    }

    /// Adds to an open deferral with `add` (`true`); nothing when none is open (`false`).
    fn defer_with(&self, add: impl FnOnce(&mut Deferred)) -> Result<bool> {
        if !self.deferring.load(Ordering::Relaxed) {
            return Ok(false);
        }
        self.with_state::<Deferred, _>(|d| Ok(d.as_mut().map(add).is_some()))
    }

    /// Sends what an open deferral holds and ends it (nothing when none is open): what every
    /// operation that queues work on the stream does first.
    pub(crate) fn flush_deferred(&self) -> Result<()> {
        if !self.deferring.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let Some(d) = self.with_state::<Deferred, _>(|d| Ok(d.take()))? else {
            return Ok(());
        };
        let blocks: u64 = d
            .jobs
            .iter()
            .map(|j| u64::from(self.tile_grid(j.total_slabs)))
            .sum();
        let one_wave = u64::from(self.info.sm_count.max(1)) * u64::from(BLOCKS_PER_SM);
        if d.jobs.len() > 1 && blocks <= one_wave {
            for group in d.jobs.chunks(JOBS_MAX) {
                self.launch_int_jobs(group)?;
            }
        } else {
            for j in &d.jobs {
                self.launch_int_job(j)?;
            }
        }
        // SAFETY: the callers of `copy_list` that deferred these copies upheld its contract
        // (ranges live until the stream has passed them, destinations disjoint).
        unsafe { self.copy_list_now(&d.copies) }
    }

    /// One job as its own kernel.
    fn launch_int_job(&self, j: &IntJob) -> Result<()> {
        let (module, kernel) = kind_kernel(j.kind)?;
        let f = self.function(module, kernel)?;
        // SAFETY: matches `<codec>_decode_<out>(g, chunks, n_chunks, total_slabs, out, flip,
        // status)`; the job's maker checked that `words` holds every payload the table names,
        // the table has n_chunks rows, `out` holds the decoded column and `status` n_chunks
        // slots, all live until the stream has passed the launch.
        unsafe {
            self.launch(
                &f,
                self.tile_grid(j.total_slabs),
                layout::THREADS,
                &[
                    &j.words,
                    &j.chunks,
                    &j.n_chunks,
                    &j.total_slabs,
                    &j.out,
                    &j.flip,
                    &j.status,
                ],
            )
        }
    }

    /// Up to [`JOBS_MAX`] jobs in one launch of `int_decode_jobs`.
    fn launch_int_jobs(&self, jobs: &[IntJob]) -> Result<()> {
        if jobs.len() == 1 {
            return self.launch_int_job(&jobs[0]);
        }
        let mut p = IntJobs {
            words: [0; JOBS_MAX],
            chunks: [0; JOBS_MAX],
            out: [0; JOBS_MAX],
            status: [0; JOBS_MAX],
            flip: [0; JOBS_MAX],
            n_chunks: [0; JOBS_MAX],
            total_slabs: [0; JOBS_MAX],
            first_block: [0; JOBS_MAX + 1],
            kind: [0; JOBS_MAX],
            n: jobs.len().min(JOBS_MAX) as u32,
        };
        let mut at = 0u32;
        for (i, j) in jobs.iter().take(JOBS_MAX).enumerate() {
            p.words[i] = j.words;
            p.chunks[i] = j.chunks;
            p.out[i] = j.out;
            p.status[i] = j.status;
            p.flip[i] = j.flip;
            p.n_chunks[i] = j.n_chunks;
            p.total_slabs[i] = j.total_slabs;
            p.kind[i] = j.kind;
            p.first_block[i] = at;
            at = at
                .checked_add(self.tile_grid(j.total_slabs))
                .ok_or_else(|| Error::InvalidArgument("too many thread blocks".into()))?;
        }
        p.first_block[p.n as usize] = at;
        let f = self.function(Module::IntJobs, "int_decode_jobs")?;
        // SAFETY: matches `int_decode_jobs(TsIntJobs)` by value; job i's blocks are
        // [first_block[i], first_block[i + 1]) of a grid of `at` blocks and each job's pointers
        // obey `launch_int_job`'s contract.
        unsafe { self.launch(&f, at, layout::THREADS, &[&p]) }
    }
}
