//! What the benches measure about the core they run on: this thread's CPU time, the core's
//! clock, and the share of the core this thread gets. On a shared host (the GPU machine is a
//! virtual machine whose CPUs are hyperthreads of a bigger host) a one-core figure moves with
//! other tenants' load, and these say how much of a core a figure had.
//!
//! One file, two users: `tessera-bench` (this crate) and the codec examples
//! (`tessera-codecs/examples/common`, which include it by path), so that both measure the same
//! way. Everything here is `pub` for the examples and allowed to be unused by either user.
#![allow(
    dead_code,
    reason = "included by the bench and by the codec examples, each using a part"
)]

/// Nanoseconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`), so that a busy shared
/// machine's other work does not count; `None` where the clock is missing (callers fall back to
/// wall-clock time). Exact to the call, unlike `/proc/thread-self/schedstat`, which moves in
/// scheduler ticks (4 ms on the development machine and on the GPU machine's host: a 30 ms run
/// read as 7, 8 or 9 ticks).
pub fn cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Wall-clock seconds of `runs` runs of `run(iters)` (after one untimed `run(iters / 4)`),
/// fastest first.
#[cfg(target_arch = "x86_64")]
fn wall_secs(run: impl Fn(u64), iters: u64, runs: usize) -> Vec<f64> {
    run(iters / 4);
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t0 = std::time::Instant::now();
            run(iters);
            t0.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// The core's clock in GHz right now, from a chain of dependent 64-bit multiplies (3 cycles each
/// on current Intel and AMD cores; a chain of `add reg, imm` does not do: Intel's Golden Cove
/// renamer folds those, and measured 6-12 "GHz"), the fastest of 3 runs of 24-48 ms by the wall
/// clock; `None` off x86-64. A shared host changes its cores' clocks with its load, so the
/// bench and the examples record this next to their figures: GHz / (GB/s) is a decoder's cycles
/// per byte, which does not move with the clock.
pub fn core_ghz() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        // 8 dependent multiplies a loop iteration: 24 cycles; the loop counter is a chain of its
        // own.
        let chain = |iters: u64| {
            let mut x = 3u64;
            let y = std::hint::black_box(5u64);
            let mut n = iters;
            // SAFETY: register arithmetic only; no memory, no stack, flags clobbered.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}",
                    "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    y = in(reg) y,
                    options(nomem, nostack),
                );
            }
            std::hint::black_box((x, n));
        };
        // The warm-up lets the clock ramp up; 96 M cycles a run: 24-48 ms at 2-4 GHz. The
        // fastest of 3 runs: a latency-bound chain that another thread slowed is rare.
        let iters = 4_000_000;
        Some(24.0 * iters as f64 / wall_secs(chain, iters, 3)[0] / 1e9)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Integer additions per cycle this thread gets right now: a loop of 8 independent chains of
/// register-to-register `add` (which no renamer folds), the middle of 5 runs of 4-8 ms by the wall
/// clock, over the clock `ghz` ([`core_ghz`]); `None` off x86-64. A core running this alone
/// retires close to its ALU count a cycle (4.4-4.7 measured on the GPU machine's host, 3.7-3.8 on
/// the development machine's AMD core); a virtual CPU whose
/// physical core another tenant's thread shares (SMT) gets a part of that, and so does every
/// throughput-bound loop, a decoder's included. Printed next to the decoder's figures, it tells
/// a slow decoder from a shared core.
pub fn core_adds_per_cycle(ghz: f64) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let run = |iters: u64| {
            let y = std::hint::black_box(1u64);
            let (mut a, mut b, mut c, mut d) = (0u64, 1u64, 2u64, 3u64);
            let (mut e, mut f, mut g, mut h) = (4u64, 5u64, 6u64, 7u64);
            let mut n = iters;
            // SAFETY: register arithmetic only; no memory, no stack, flags clobbered.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "add {a}, {y}", "add {b}, {y}", "add {c}, {y}", "add {d}, {y}",
                    "add {e}, {y}", "add {f}, {y}", "add {g}, {y}", "add {h}, {y}",
                    "add {a}, {y}", "add {b}, {y}", "add {c}, {y}", "add {d}, {y}",
                    "add {e}, {y}", "add {f}, {y}", "add {g}, {y}", "add {h}, {y}",
                    "dec {n}",
                    "jnz 2b",
                    a = inout(reg) a, b = inout(reg) b, c = inout(reg) c, d = inout(reg) d,
                    e = inout(reg) e, f = inout(reg) f, g = inout(reg) g, h = inout(reg) h,
                    n = inout(reg) n,
                    y = in(reg) y,
                    options(nomem, nostack),
                );
            }
            std::hint::black_box((a, b, c, d, e, f, g, h, n));
        };
        // 16 adds and a loop branch an iteration: about 4 cycles alone, so 4 M iterations take
        // 4-8 ms; the middle of 5 runs is the share the thread typically got.
        let iters = 4_000_000;
        Some(16.0 * iters as f64 / wall_secs(run, iters, 5)[2] / (ghz * 1e9))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ghz;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_counts_this_threads_work() {
        let Some(c0) = cpu_ns() else {
            eprintln!("skipped: CLOCK_THREAD_CPUTIME_ID is not available here");
            return;
        };
        // Spin until at least 2 ms of CPU time have passed, or give up after 2 s of wall time.
        let t0 = std::time::Instant::now();
        let mut x = 1u64;
        let mut spent = 0;
        while spent < 2_000_000 && t0.elapsed().as_secs() < 2 {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            spent = cpu_ns().expect("the clock worked once") - c0;
        }
        // Not a tick counter: the CPU time it reports is never more than the wall time passed.
        assert!(
            spent >= 2_000_000,
            "{spent} ns of CPU time in 2 s of spinning"
        );
        assert!(spent as f64 <= t0.elapsed().as_secs_f64() * 1e9 + 1e6);
    }

    #[test]
    fn probes_report_plausible_figures() {
        let Some(ghz) = core_ghz() else {
            eprintln!("skipped: the core probes run on x86-64 only");
            return;
        };
        // Any x86-64 core of the last 20 years, slowed by a loaded machine or not.
        assert!((0.05..10.0).contains(&ghz), "clock {ghz} GHz");
        let adds = core_adds_per_cycle(ghz).expect("x86-64");
        assert!(adds > 0.0 && adds.is_finite(), "{adds} additions a cycle");
    }
}
