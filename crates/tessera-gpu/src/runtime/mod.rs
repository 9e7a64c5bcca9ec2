//! The runtime: the device handle (opening device 0 without panicking when there is no driver),
//! the NVRTC module cache, kernel launches and their arguments, streams, pinned host memory
//! ([`pinned`]), CUDA-event timing ([`timing`]) and small buffer helpers. It knows kernels only
//! as [`Module`]s and names; nothing here knows a codec. A codec that keeps buffers between calls
//! keeps them in the handle's per-codec state ([`Gpu::with_state`]).
//!
//! Invariants:
//! - `Gpu::new` touches cudarc only after `is_culib_present()` said the driver (and NVRTC) can
//!   be loaded: cudarc panics otherwise.
//! - Event tracking is off (set before the first allocation): every operation of this crate is
//!   ordered on `self.stream`, or on streams of its own with explicit events (the integer
//!   codecs' coprocessor path, `int/coproc.rs`), so cudarc's per-buffer events would only cost
//!   time.
//! - Kernel arguments are raw device pointers (`u64`) into buffers that outlive the launch's
//!   completion: every public operation synchronizes before it returns or hands out the buffer.
//! - No managed memory: buffers come from `cuMemAllocAsync` (the device's default pool, which
//!   keeps freed memory mapped: `keep_pool_memory`) and pinned host memory from `cuMemHostAlloc`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    DriverError, LaunchConfig, PushKernelArg,
};
use tessera_format::{Error, Result};

use crate::kernels::{self, Module};

pub mod buffer;
pub mod pinned;
pub mod staging;
pub mod timing;
pub mod trace;
pub(crate) mod upload;

use trace::{count, Op};

/// Per-codec state kept in a handle, one value per type.
type StateMap = HashMap<TypeId, Box<dyn Any + Send>>;

/// What the device is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// L2 cache bytes.
    pub l2_bytes: u64,
    /// Device memory bytes.
    pub memory_bytes: u64,
    /// Driver version as CUDA encodes it (13000 = 13.0).
    pub driver_version: u32,
    /// The NVRTC target, e.g. `sm_90`.
    pub arch: String,
}

/// A handle on CUDA device 0: context, stream, compiled modules.
pub struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) info: DeviceInfo,
    modules: Mutex<HashMap<Module, Arc<CudaModule>>>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    /// Most thread blocks a tile kernel is launched with; 0 = one per slab of tiles.
    grid_limit: AtomicU32,
    /// Buffers codecs keep between calls (e.g. the integer coprocessor path's pinned staging),
    /// by type: the runtime holds them without knowing what they are.
    state: Mutex<StateMap>,
    /// Live [`staging::StagedUploads`] guards: while above 0, uploads are staged.
    staged: AtomicU32,
    /// Whether an upload group is open ([`Gpu::begin_upload_group`]): its packs' bytes are
    /// not on the device until it is flushed, which any stream operation does first.
    grouped: AtomicBool,
    /// Whether integer decodes and copies are being deferred ([`Gpu::defer_decodes`]): they
    /// are not queued until any other stream operation, or the deferral's flush, sends them.
    pub(crate) deferring: AtomicBool,
    /// Copies queued from the staging buffer so far (counted once queued), and the most of
    /// them that a completed wait for the stream had begun after: when the two are equal,
    /// every copy from the buffer has completed and the next staged upload may start it over
    /// ([`staging`] module docs).
    pub(crate) staging_queued: AtomicU64,
    pub(crate) staging_waited: AtomicU64,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The handle's page-locked buffer for small read-backs ([`Gpu::download_pinned`]).
struct ReadBack {
    host: cudarc::driver::PinnedHostSlice<u8>,
}

/// The smallest read-back buffer.
const READ_BACK_MIN_BYTES: usize = 64 << 10;

/// Whether the environment variable `var` is `0`, read once into `cell`: the switches that
/// turn a runtime optimisation off for an A/B measurement.
pub(crate) fn switched_off(cell: &'static std::sync::OnceLock<bool>, var: &str) -> bool {
    *cell.get_or_init(|| std::env::var(var).is_ok_and(|v| v.trim() == "0"))
}

/// Maps a driver error to [`Error::Gpu`], saying what was being done.
pub(crate) fn cuda(what: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Gpu(format!("{what}: {e}"))
}

impl Gpu {
    /// Opens device 0. Fails with [`Error::Gpu`] saying why (no driver, no device, no NVRTC),
    /// never panics.
    pub fn new() -> Result<Gpu> {
        Gpu::open(0)
    }

    /// Number of CUDA devices the driver sees (0 without a driver).
    pub fn device_count() -> usize {
        // SAFETY: only probes whether libcuda can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return 0;
        }
        CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
    }

    /// Opens device `ordinal`. Each handle has its own stream, kernel modules and state;
    /// handles to one device share its primary context. Errors as [`Gpu::new`], and when there
    /// is no such device.
    pub fn open(ordinal: usize) -> Result<Gpu> {
        // SAFETY: only probes whether libcuda can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::Gpu(
                "no CUDA driver found (libcuda.so.1 could not be loaded)".into(),
            ));
        }
        kernels::nvrtc_available()?;
        let count = CudaContext::device_count().map_err(cuda("initialising the CUDA driver"))?;
        if count < 1 {
            return Err(Error::Gpu("no CUDA device found".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::Gpu(format!(
                "no CUDA device {ordinal} ({count} found)"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(cuda("opening a CUDA device"))?;
        // SAFETY: called before any buffer exists; this crate orders all work itself (module
        // docs), so no buffer relies on cudarc's event tracking.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda("creating a stream"))?;
        let attr = |a: Attr| {
            ctx.attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(cuda("reading a device attribute"))
        };
        if attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? > 0 {
            keep_pool_memory(&ctx)?;
        }
        let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let mut driver_version = 0i32;
        // SAFETY: writes one int through a valid pointer; the driver library is loaded.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(cuda("reading the driver version"))?;
        let info = DeviceInfo {
            name: ctx.name().map_err(cuda("reading the device name"))?,
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            compute_capability: (major, minor),
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            memory_bytes: ctx.total_mem().map_err(cuda("reading the memory size"))? as u64,
            driver_version: driver_version.max(0) as u32,
            arch: format!("sm_{major}{minor}"),
        };
        Ok(Gpu {
            ctx,
            stream,
            info,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            grid_limit: AtomicU32::new(0),
            state: Mutex::new(HashMap::new()),
            staged: AtomicU32::new(0),
            grouped: AtomicBool::new(false),
            deferring: AtomicBool::new(false),
            staging_queued: AtomicU64::new(0),
            staging_waited: AtomicU64::new(0),
        })
    }

    /// The device's name, SM count, compute capability, L2 and memory sizes.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Caps the thread blocks of every tile kernel (`None`: one thread block per slab of tiles;
    /// with a cap, each thread block loops over slabs). A tuning knob, public only through
    /// [`crate::bench_hooks::set_grid_limit`].
    pub(crate) fn set_grid_limit(&self, limit: Option<u32>) {
        self.grid_limit.store(limit.unwrap_or(0), Ordering::Relaxed);
    }

    /// Runs `f` on this handle's state of type `T` (`None` until a call stores one), holding
    /// the state's lock for the duration: calls that share a `T` are serialized.
    pub(crate) fn with_state<T: Any + Send, R>(
        &self,
        f: impl FnOnce(&mut Option<T>) -> Result<R>,
    ) -> Result<R> {
        let mut map = self
            .state
            .lock()
            .map_err(|_| Error::Gpu("GPU handle state lock poisoned".into()))?;
        let key = TypeId::of::<T>();
        let mut slot: Option<T> = map
            .remove(&key)
            .and_then(|b| b.downcast::<T>().ok())
            .map(|b| *b);
        let r = f(&mut slot);
        if let Some(v) = slot {
            map.insert(key, Box::new(v));
        }
        r
    }

    /// Compiles (once per process) and loads (once per handle) every kernel module, so that
    /// timed work never includes NVRTC.
    pub fn warm_up(&self) -> Result<()> {
        for m in Module::ALL {
            self.module(m)?;
        }
        Ok(())
    }

    fn module(&self, m: Module) -> Result<Arc<CudaModule>> {
        let mut mods = self.modules.lock().map_err(|_| poisoned())?;
        if let Some(module) = mods.get(&m) {
            return Ok(module.clone());
        }
        let ptx = kernels::compile(m, &self.info.arch)?;
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(cuda("loading a kernel module"))?;
        mods.insert(m, module.clone());
        Ok(module)
    }

    pub(crate) fn function(&self, m: Module, name: &'static str) -> Result<CudaFunction> {
        trace::note_kernel(name);
        if let Some(f) = self.functions.lock().map_err(|_| poisoned())?.get(name) {
            return Ok(f.clone());
        }
        let f = self
            .module(m)?
            .load_function(name)
            .map_err(|e| Error::Gpu(format!("kernel {name} missing from {}: {e}", m.file())))?;
        self.functions
            .lock()
            .map_err(|_| poisoned())?
            .insert(name, f.clone());
        Ok(f)
    }

    /// Grid size for a tile kernel over `slabs` slabs of tiles.
    pub(crate) fn tile_grid(&self, slabs: u32) -> u32 {
        match self.grid_limit.load(Ordering::Relaxed) {
            0 => slabs.max(1),
            cap => slabs.clamp(1, cap),
        }
    }

    /// Launches `f` on `stream` with `grid` blocks of `block` threads and the given arguments.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type, and every
    /// pointer among them must address a device buffer large enough for what the kernel
    /// accesses, alive until the launch completes.
    pub(crate) unsafe fn launch_on(
        &self,
        stream: &Arc<CudaStream>,
        f: &CudaFunction,
        grid: u32,
        block: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        // An open upload group's copy is queued on the main stream: a kernel on another stream
        // that reads its packs must be ordered after the main stream by the caller.
        self.flush_pending()?;
        let mut b = stream.launch_builder(f);
        for a in args {
            a.push(&mut b);
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.max(1), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let _op = count(Op::Launch);
        // SAFETY: upheld by the caller (see above).
        unsafe { b.launch(cfg) }.map_err(cuda("launching a kernel"))?;
        Ok(())
    }

    /// [`Self::launch`] with a two-dimensional grid of `grid.0 x grid.1` blocks.
    ///
    /// # Safety
    /// As for [`Self::launch_on`].
    pub(crate) unsafe fn launch_2d(
        &self,
        f: &CudaFunction,
        grid: (u32, u32),
        block: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.flush_pending()?;
        let mut b = self.stream.launch_builder(f);
        for a in args {
            a.push(&mut b);
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.0.max(1), grid.1.max(1), 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let _op = count(Op::Launch);
        // SAFETY: upheld by the caller (see above).
        unsafe { b.launch(cfg) }.map_err(cuda("launching a kernel"))?;
        Ok(())
    }

    /// [`Self::launch_on`] on the main stream.
    ///
    /// # Safety
    /// As for [`Self::launch_on`].
    pub(crate) unsafe fn launch(
        &self,
        f: &CudaFunction,
        grid: u32,
        block: u32,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        // SAFETY: forwarded.
        unsafe { self.launch_on(&self.stream, f, grid, block, args) }
    }

    /// Waits for all work queued on the main stream.
    pub fn synchronize(&self) -> Result<()> {
        self.flush_pending()?;
        // Copies queued before this load complete within the wait below.
        let queued = self.staging_queued.load(Ordering::Acquire);
        {
            let _op = count(Op::Wait);
            self.stream
                .synchronize()
                .map_err(cuda("waiting for the GPU"))?;
        }
        self.staging_waited.fetch_max(queued, Ordering::AcqRel);
        Ok(())
    }

    /// Device memory for `len` values of `T`, contents undefined.
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>> {
        let _op = count(Op::Alloc);
        // SAFETY: the buffer is uninitialised device memory; every user writes before reading.
        unsafe { self.stream.alloc::<T>(len.max(1)) }.map_err(cuda("allocating device memory"))
    }

    /// Copies `src` to a new device buffer (queued from page-locked memory while a
    /// [`staging::StagedUploads`] guard is alive).
    pub fn upload<T: DeviceRepr>(&self, src: &[T]) -> Result<CudaSlice<T>> {
        let mut dst = self.alloc::<T>(src.len())?;
        if self.stages(std::mem::size_of_val(src)) {
            self.upload_staged(src, &mut dst)?;
        } else if !src.is_empty() {
            let mut view = dst.slice_mut(..src.len());
            let _op = count(Op::HostToDevice);
            self.stream
                .memcpy_htod(src, &mut view)
                .map_err(cuda("copying to the device"))?;
        }
        Ok(dst)
    }

    /// Copies the first `dst.len()` values of `src` to the host.
    pub fn download<T: DeviceRepr>(&self, src: &CudaSlice<T>, dst: &mut [T]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        if dst.len() > src.len() {
            return Err(Error::InvalidArgument(
                "download longer than the device buffer".into(),
            ));
        }
        self.flush_pending()?;
        let view = src.slice(..dst.len());
        let op = count(Op::DeviceToHost);
        self.stream
            .memcpy_dtoh(&view, dst)
            .map_err(cuda("copying from the device"))?;
        drop(op);
        self.synchronize()
    }

    /// Copies `len` bytes of `src` from `src_at` into `dst` at `dst_at`, on the main stream
    /// (queued, not waited for).
    pub fn copy_within_device(
        &self,
        src: &CudaSlice<u8>,
        src_at: usize,
        dst: &mut CudaSlice<u8>,
        dst_at: usize,
        len: usize,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let from = src
            .try_slice(src_at..src_at.saturating_add(len))
            .ok_or_else(|| Error::Gpu("device copy source too short".into()))?;
        let mut to = dst
            .try_slice_mut(dst_at..dst_at.saturating_add(len))
            .ok_or_else(|| Error::Gpu("device copy destination too short".into()))?;
        self.flush_pending()?;
        let _op = count(Op::DeviceToDevice);
        self.stream
            .memcpy_dtod(&from, &mut to)
            .map_err(cuda("copying on the device"))
    }

    /// Waits once for all work queued on the main stream and reads back `parts` (device
    /// addresses and byte lengths of status words that live until this returns), gathered on
    /// the device into one buffer so that one copy brings them all: what lets many queued
    /// decoders cost one wait instead of one each. Returns each part's bytes.
    pub fn read_back_parts(&self, parts: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        let total: usize = parts.iter().map(|&(_, n)| n).sum();
        if total == 0 {
            self.synchronize()?;
            return Ok(parts.iter().map(|_| Vec::new()).collect());
        }
        let gather = self.alloc::<u8>(total)?;
        let base = self.ptr(&gather);
        let mut copies = Vec::with_capacity(parts.len());
        let mut at = 0usize;
        for &(src, len) in parts {
            copies.push(crate::primitives::copy::DeviceCopy {
                dst: base + at as u64,
                src,
                len,
            });
            at += len;
        }
        // SAFETY: each `src` addresses its `len` live device bytes (the caller's contract) and
        // `gather` holds `total` bytes, each part its own `at .. at + len` of them.
        unsafe { self.copy_list(&copies)? };
        let host = self.download_pinned(&gather, total)?;
        let mut out = Vec::with_capacity(parts.len());
        let mut at = 0usize;
        for &(_, n) in parts {
            out.push(host[at..at + n].to_vec());
            at += n;
        }
        Ok(out)
    }

    /// The first `len` bytes of `src`, read back through a page-locked buffer the handle keeps
    /// (grown as needed): the copy is queued like any other and the host waits once, for the
    /// stream, where a copy into pageable memory makes the driver wait for the stream and then
    /// stage the bytes itself. For small read-backs on the critical path of a read.
    pub(crate) fn download_pinned(&self, src: &CudaSlice<u8>, len: usize) -> Result<Vec<u8>> {
        if len > src.len() {
            return Err(Error::InvalidArgument(
                "download longer than the device buffer".into(),
            ));
        }
        if len == 0 {
            self.synchronize()?;
            return Ok(Vec::new());
        }
        self.flush_pending()?;
        let from = self.ptr(src);
        self.with_state::<ReadBack, _>(|rb| {
            if rb.as_ref().is_none_or(|r| r.host.len() < len) {
                // Dropped first: the old buffer is not read by any queued copy (each read-back
                // waits for its copy before it returns).
                *rb = None;
                let bytes = len.next_power_of_two().max(READ_BACK_MIN_BYTES);
                // SAFETY: page-locked memory the host reads only after the stream has passed
                // the copy that writes it.
                let host = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }
                    .map_err(cuda("allocating pinned host memory"))?;
                *rb = Some(ReadBack { host });
            }
            let Some(r) = rb.as_mut() else {
                return Err(Error::Gpu("read-back buffer missing".into()));
            };
            let host = r
                .host
                .as_mut_slice()
                .map_err(cuda("reading pinned memory"))?;
            let part = &mut host[..len];
            let op = count(Op::DeviceToHost);
            // SAFETY: `from` addresses at least `len` live device bytes (checked above) and
            // `part` is `len` bytes of page-locked memory; the host reads it only after the
            // wait below, and nothing else writes it (the state's lock is held).
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(part, from, self.stream.cu_stream())
            }
            .map_err(cuda("copying from the device"))?;
            drop(op);
            self.synchronize()?;
            Ok(part.to_vec())
        })
    }

    /// Fills a device buffer with the byte `value` (poisoning outputs before a run).
    pub fn fill_bytes<T>(&self, buf: &mut CudaSlice<T>, value: u8) -> Result<()> {
        let bytes = buf.len() * std::mem::size_of::<T>();
        self.flush_pending()?;
        let ptr = self.ptr(buf);
        let _op = count(Op::Fill);
        // SAFETY: `ptr` addresses `bytes` bytes of a live device buffer; ordered on our stream.
        unsafe {
            cudarc::driver::result::memset_d8_async(ptr, value, bytes, self.stream.cu_stream())
        }
        .map_err(cuda("filling device memory"))
    }

    /// The raw device address of a buffer (kernel arguments).
    pub(crate) fn ptr<T>(&self, buf: &CudaSlice<T>) -> u64 {
        let (p, _sync) = buf.device_ptr(&self.stream);
        p
    }
}

/// Raises the release threshold of device 0's default memory pool to "never": memory freed
/// back to the pool stays mapped for the next `cuMemAllocAsync` instead of being returned to
/// the driver at every synchronization (the pool's default threshold is 0). Without it every
/// call that allocates a large buffer after a host read (a compression's output, a decode's
/// column) pays for mapping its pages again. The memory is released with the context.
fn keep_pool_memory(ctx: &Arc<CudaContext>) -> Result<()> {
    use cudarc::driver::{result::mem_pool, sys};
    // SAFETY: cu_device() is the context's valid device; the threshold attribute takes a
    // cuuint64_t, which `keep` is, and the driver only reads it during the call.
    unsafe {
        let pool = cudarc::driver::result::device::get_default_mem_pool(ctx.cu_device())
            .map_err(cuda("reading the default memory pool"))?;
        let mut keep: u64 = u64::MAX;
        mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        )
        .map_err(cuda("setting the memory pool's release threshold"))?;
    }
    Ok(())
}

fn poisoned() -> Error {
    Error::Gpu("GPU handle lock poisoned".into())
}

/// A kernel argument: anything cudarc can pass by value.
pub(crate) trait KernelArg {
    fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>);
}

impl<T: DeviceRepr> KernelArg for T {
    fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>) {
        b.arg(self);
    }
}
