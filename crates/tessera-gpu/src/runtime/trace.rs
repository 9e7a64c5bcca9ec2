//! Counts of the runtime's fixed-cost operations (kernel launches, host waits, device
//! allocations, copies between host and device and on the device, fills), process-wide: what a
//! read of a small table costs apart from its bytes. Counting is a relaxed atomic add, always
//! on; nothing is printed (callers such as `tessera-bench tables` print them on request).
//! With [`set_op_timing`] on, the host time of each counted operation (the driver call) is
//! summed too ([`OpTimes`]), and a read can mark its device-side span with events: what tells
//! per-operation host cost from device work when a small table's read is cut down.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// One kind of counted operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Launch,
    Wait,
    Alloc,
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
    Fill,
}

static COUNTS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
/// Host nanoseconds of each kind of operation, summed while [`TIMING`] is on.
static NANOS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
/// Device nanoseconds between the event pairs recorded ([`crate::Gpu::trace_mark`]).
static SPAN_NANOS: AtomicU64 = AtomicU64::new(0);
static SPANS: AtomicU64 = AtomicU64::new(0);
static TIMING: AtomicBool = AtomicBool::new(false);
/// Whether each counted operation is also logged, in order ([`start_op_log`]).
static LOGGING: AtomicBool = AtomicBool::new(false);
static LOG: Mutex<Vec<LoggedOp>> = Mutex::new(Vec::new());
static LOG_EPOCH: OnceLock<Instant> = OnceLock::new();

thread_local! {
    /// The kernel this thread looked up last: the name a logged launch carries.
    static KERNEL: Cell<&'static str> = const { Cell::new("") };
}

/// One entry of the operation log: a counted operation (or a caller's mark) in the order the
/// host did it, with when it started (nanoseconds after the log started) and its host time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedOp {
    /// `launch`, `wait`, `alloc`, `h2d`, `d2h`, `d2d`, `fill`, or a mark's label.
    pub what: &'static str,
    /// For a launch, the kernel looked up last on the launching thread.
    pub kernel: &'static str,
    /// Start, nanoseconds after [`start_op_log`].
    pub start_ns: u64,
    /// Host time of the driver call (0 for a mark).
    pub host_ns: u64,
}

/// Starts logging every counted operation, process-wide, in order, with its host time (until
/// [`take_op_log`]): what shows where a small table's read spends its host time operation by
/// operation. Off by default; a diagnostic, not for timed runs.
pub fn start_op_log() {
    LOG_EPOCH.get_or_init(Instant::now);
    if let Ok(mut log) = LOG.lock() {
        log.clear();
    }
    LOGGING.store(true, Ordering::Relaxed);
}

/// Stops the log and returns its entries, start times relative to the first.
pub fn take_op_log() -> Vec<LoggedOp> {
    LOGGING.store(false, Ordering::Relaxed);
    let mut v = LOG
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    let first = v.first().map_or(0, |e| e.start_ns);
    for e in &mut v {
        e.start_ns -= first;
    }
    v
}

/// Adds a caller's mark (a phase boundary) to the log while it runs.
pub fn log_mark(label: &'static str) {
    if LOGGING.load(Ordering::Relaxed) {
        push(label, "", Instant::now(), 0);
    }
}

/// Names the kernel the next logged launch on this thread runs.
pub(crate) fn note_kernel(name: &'static str) {
    if LOGGING.load(Ordering::Relaxed) {
        KERNEL.with(|k| k.set(name));
    }
}

fn push(what: &'static str, kernel: &'static str, start: Instant, host_ns: u64) {
    let epoch = *LOG_EPOCH.get_or_init(Instant::now);
    let start_ns = u64::try_from(start.saturating_duration_since(epoch).as_nanos()).unwrap_or(0);
    if let Ok(mut log) = LOG.lock() {
        log.push(LoggedOp {
            what,
            kernel,
            start_ns,
            host_ns,
        });
    }
}

/// Turns the timing of counted operations (and the marking of device spans) on or off,
/// process-wide. Off by default: timed reads then pay only the counts.
pub fn set_op_timing(on: bool) {
    TIMING.store(on, Ordering::Relaxed);
}

/// Whether operations are timed ([`set_op_timing`]).
pub fn op_timing() -> bool {
    TIMING.load(Ordering::Relaxed)
}

/// One counted operation; while timing is on, its host time (until this drops) is summed.
pub(crate) struct Counted(Option<(Op, Instant)>);

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some((op, start)) = self.0 {
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            NANOS[op as usize].fetch_add(ns, Ordering::Relaxed);
            if LOGGING.load(Ordering::Relaxed) {
                let kernel = match op {
                    Op::Launch => KERNEL.with(|k| k.get()),
                    _ => "",
                };
                push(op.name(), kernel, start, ns);
            }
        }
    }
}

/// Counts one operation of kind `op`; keep the returned guard alive across the driver call so
/// that its time is summed when timing is on.
#[must_use = "the guard times the operation until it drops"]
pub(crate) fn count(op: Op) -> Counted {
    COUNTS[op as usize].fetch_add(1, Ordering::Relaxed);
    let timed = op_timing() || LOGGING.load(Ordering::Relaxed);
    Counted(timed.then(|| (op, Instant::now())))
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Launch => "launch",
            Op::Wait => "wait",
            Op::Alloc => "alloc",
            Op::HostToDevice => "h2d",
            Op::DeviceToHost => "d2h",
            Op::DeviceToDevice => "d2d",
            Op::Fill => "fill",
        }
    }
}

/// Adds one device span of `ns` nanoseconds.
pub(crate) fn add_span(ns: u64) {
    SPAN_NANOS.fetch_add(ns, Ordering::Relaxed);
    SPANS.fetch_add(1, Ordering::Relaxed);
}

/// Host time of the counted operations, by kind, and the device spans marked, in nanoseconds,
/// since the process started or the last [`OpTimes::take`] (while [`set_op_timing`] was on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpTimes {
    /// Kernel launches.
    pub launch_ns: u64,
    /// Host waits for the device.
    pub wait_ns: u64,
    /// Device allocations.
    pub alloc_ns: u64,
    /// Host-to-device copies queued.
    pub host_to_device_ns: u64,
    /// Device-to-host copies queued.
    pub device_to_host_ns: u64,
    /// Device-to-device copies queued.
    pub device_to_device_ns: u64,
    /// Fills queued.
    pub fill_ns: u64,
    /// Device time between the marked events, summed.
    pub span_ns: u64,
    /// Spans marked.
    pub spans: u64,
}

impl OpTimes {
    /// The sums so far, resetting them to zero.
    pub fn take() -> OpTimes {
        let t = |op: Op| NANOS[op as usize].swap(0, Ordering::Relaxed);
        OpTimes {
            launch_ns: t(Op::Launch),
            wait_ns: t(Op::Wait),
            alloc_ns: t(Op::Alloc),
            host_to_device_ns: t(Op::HostToDevice),
            device_to_host_ns: t(Op::DeviceToHost),
            device_to_device_ns: t(Op::DeviceToDevice),
            fill_ns: t(Op::Fill),
            span_ns: SPAN_NANOS.swap(0, Ordering::Relaxed),
            spans: SPANS.swap(0, Ordering::Relaxed),
        }
    }
}

/// The operations counted since the process started (or since the last [`TraceCounts::take`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Kernel launches.
    pub launches: u64,
    /// Host waits for the device (stream synchronizations, including those of downloads).
    pub waits: u64,
    /// Device allocations (stream-ordered, from the device's pool).
    pub allocs: u64,
    /// Host-to-device copies.
    pub host_to_device: u64,
    /// Device-to-host copies.
    pub device_to_host: u64,
    /// Device-to-device copies.
    pub device_to_device: u64,
    /// Device memory fills.
    pub fills: u64,
}

impl TraceCounts {
    /// The counts so far, without resetting them.
    pub fn now() -> TraceCounts {
        Self::read(|c| c.load(Ordering::Relaxed))
    }

    /// The counts so far, resetting them to zero. Counters are process-wide: work on other
    /// threads in between counts too.
    pub fn take() -> TraceCounts {
        Self::read(|c| c.swap(0, Ordering::Relaxed))
    }

    /// Every counter, each read by `get`.
    fn read(get: impl Fn(&AtomicU64) -> u64) -> TraceCounts {
        let c = |op: Op| get(&COUNTS[op as usize]);
        TraceCounts {
            launches: c(Op::Launch),
            waits: c(Op::Wait),
            allocs: c(Op::Alloc),
            host_to_device: c(Op::HostToDevice),
            device_to_host: c(Op::DeviceToHost),
            device_to_device: c(Op::DeviceToDevice),
            fills: c(Op::Fill),
        }
    }
}

impl std::fmt::Display for TraceCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} launches, {} waits, {} allocations, {} host-to-device, {} device-to-host, \
             {} device-to-device copies, {} fills",
            self.launches,
            self.waits,
            self.allocs,
            self.host_to_device,
            self.device_to_host,
            self.device_to_device,
            self.fills
        )
    }
}
