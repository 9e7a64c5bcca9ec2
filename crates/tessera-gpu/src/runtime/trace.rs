//! Counts of the runtime's fixed-cost operations (kernel launches, host waits, device
//! allocations, copies between host and device and on the device, fills), process-wide: what a
//! read of a small table costs apart from its bytes. Counting is a relaxed atomic add, always
//! on; nothing is printed (callers such as `tessera-bench tables` print them on request).
//! With [`set_op_timing`] on, the host time of each counted operation (the driver call) is
//! summed too ([`OpTimes`]), and a read can mark its device-side span with events: what tells
//! per-operation host cost from device work when a small table's read is cut down.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
        }
    }
}

/// Counts one operation of kind `op`; keep the returned guard alive across the driver call so
/// that its time is summed when timing is on.
#[must_use = "the guard times the operation until it drops"]
pub(crate) fn count(op: Op) -> Counted {
    COUNTS[op as usize].fetch_add(1, Ordering::Relaxed);
    Counted(op_timing().then(|| (op, Instant::now())))
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
