//! Counts of the runtime's fixed-cost operations (kernel launches, host waits, device
//! allocations, copies between host and device and on the device, fills), process-wide: what a
//! read of a small table costs apart from its bytes. Counting is a relaxed atomic add, always
//! on; nothing is printed (callers such as `tessera-bench tables` print them on request).

use std::sync::atomic::{AtomicU64, Ordering};

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

/// Counts one operation of kind `op`.
pub(crate) fn count(op: Op) {
    COUNTS[op as usize].fetch_add(1, Ordering::Relaxed);
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
