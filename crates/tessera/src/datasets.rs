//! The papers' data sets, generated in-process from a fixed seed (`../shared/design/benchmarking.md`
//! is where they are described; the definitions here are the project's own).
//!
//! Every generator is deterministic for a given `(n, seed)`, so `demo`, `bench` and the nvCOMP
//! peer script see the same bytes. Values are u32 unless the set says otherwise.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Zipf};

/// A named data set of u32 values.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Short name used in tables and file names, e.g. `uniform-b16`, `d1-sorted-2^20`.
    pub name: String,
    /// The values.
    pub values: Vec<u32>,
}

/// Seed shared by every generator (so reruns and peers see identical data).
pub const SEED: u64 = 0x7e55e7a;

/// Bit-width sweep (tile-based paper §9.2): `n` values uniform in `[0, 2^bits)`, `1 <= bits <= 32`.
pub fn uniform(n: usize, bits: u32) -> Dataset {
    let mut rng = StdRng::seed_from_u64(SEED ^ bits as u64);
    let values = if bits >= 32 {
        (0..n).map(|_| rng.random::<u32>()).collect()
    } else {
        let hi = 1u32 << bits;
        (0..n).map(|_| rng.random_range(0..hi)).collect()
    };
    Dataset {
        name: format!("uniform-b{bits}"),
        values,
    }
}

/// D1 (§9.3): `n` sorted values drawn from `distinct` distinct values (`distinct` a power of two,
/// `2^2 ..= 2^28`): value `i` is `i * distinct / n`, so each distinct value is repeated `n / distinct`
/// times (or the sequence steps by `distinct / n` when there are more distinct values than `n`).
pub fn sorted(n: usize, distinct: u64) -> Dataset {
    let values = (0..n as u64)
        .map(|i| ((i as u128 * distinct as u128) / n.max(1) as u128) as u32)
        .collect();
    Dataset {
        name: format!("d1-sorted-2^{}", 63 - distinct.max(1).leading_zeros()),
        values,
    }
}

/// Sorted `0..n` (the DFOR target in the foundation issue).
pub fn sequence(n: usize) -> Dataset {
    Dataset {
        name: "sorted-0..n".into(),
        values: (0..n as u32).collect(),
    }
}

/// D2 (§9.3): normal with standard deviation 20 and mean `2^mean_log2`, clamped into u32.
pub fn normal(n: usize, mean_log2: u32) -> Dataset {
    let mut rng = StdRng::seed_from_u64(SEED ^ (0x200 + mean_log2 as u64));
    let mean = (1u64 << mean_log2) as f64;
    let dist = Normal::new(mean, 20.0).expect("finite mean and positive deviation");
    let values = (0..n)
        .map(|_| dist.sample(&mut rng).round().clamp(0.0, u32::MAX as f64) as u32)
        .collect();
    Dataset {
        name: format!("d2-normal-2^{mean_log2}"),
        values,
    }
}

/// D3 (§9.3): Zipf over `1..=2^20` ranks with the given exponent (1 ..= 5).
pub fn zipf(n: usize, exponent: f64) -> Dataset {
    let mut rng = StdRng::seed_from_u64(SEED ^ (0x300 + exponent.to_bits()));
    let dist = Zipf::new((1u64 << 20) as f64, exponent).expect("valid Zipf parameters");
    let values = (0..n).map(|_| dist.sample(&mut rng) as u32).collect();
    Dataset {
        name: format!("d3-zipf-{exponent}"),
        values,
    }
}

/// Runs of exactly `run` equal values, each run's value uniform below `2^value_bits` (the RFOR
/// target: runs of 32 with values below 2^20).
pub fn runs(n: usize, run: usize, value_bits: u32) -> Dataset {
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x400);
    let hi = 1u32 << value_bits.min(31);
    let mut values = Vec::with_capacity(n);
    while values.len() < n {
        let v = rng.random_range(0..hi);
        let take = run.min(n - values.len());
        values.extend(std::iter::repeat_n(v, take));
    }
    Dataset {
        name: format!("runs-{run}-b{value_bits}"),
        values,
    }
}

/// The demo's selection: one or two of each family, small enough for two cores in seconds.
pub fn demo_sets(n: usize) -> Vec<Dataset> {
    vec![
        uniform(n, 4),
        uniform(n, 16),
        uniform(n, 30),
        sequence(n),
        sorted(n, 1 << 12),
        normal(n, 20),
        zipf(n, 1.5),
        runs(n, 32, 20),
    ]
}

/// Words the text generators draw from (a log-like vocabulary).
const WORDS: [&str; 24] = [
    "GET",
    "POST",
    "/api/v1/orders",
    "/api/v1/users",
    "/static/app.js",
    "200",
    "404",
    "500",
    "user",
    "session",
    "ok",
    "timeout",
    "retry",
    "cache",
    "hit",
    "miss",
    "eu-west",
    "us-east",
    "shard",
    "replica",
    "INFO",
    "WARN",
    "ERROR",
    "latency_ms",
];

/// `n` bytes of log-like text: lines of words from a small vocabulary, Zipf-distributed, with
/// numbers (what LLL and Huffman meet in table text).
pub fn text(n: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x500);
    let dist = Zipf::new(WORDS.len() as f64, 1.2).expect("valid Zipf parameters");
    let mut out = Vec::with_capacity(n + 64);
    while out.len() < n {
        let words = rng.random_range(4..12);
        out.extend_from_slice(format!("{:08} ", rng.random_range(0..100_000_000u32)).as_bytes());
        for _ in 0..words {
            out.extend_from_slice(WORDS[dist.sample(&mut rng) as usize - 1].as_bytes());
            out.push(b' ');
        }
        out.push(b'\n');
    }
    out.truncate(n);
    out
}

/// `n` strings like a table's text column: a short prefix, a Zipf-distributed word and a number
/// (lengths vary from about 10 to 40 bytes).
pub fn strings(n: usize) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x600);
    let dist = Zipf::new(WORDS.len() as f64, 1.5).expect("valid Zipf parameters");
    (0..n)
        .map(|i| {
            let w = WORDS[dist.sample(&mut rng) as usize - 1];
            match i % 3 {
                0 => format!("customer#{:09}", rng.random_range(0..1_000_000u32)),
                1 => format!("{w} {}", rng.random_range(0..10_000u32)),
                _ => format!("{w}-{w}/{}", rng.random_range(0..100u32)),
            }
        })
        .collect()
}

/// A bitmap of `n` bits, packed least significant bit first: runs of set and clear bits with
/// lengths drawn from 1..2^12, clear runs four times as long (what a predicate over sorted or
/// clustered data gives: WAH and PLWAH territory).
pub fn bitmap(n: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(SEED ^ 0x700);
    let mut out = vec![0u8; n.div_ceil(8) as usize];
    let mut at = 0u64;
    let mut set = false;
    while at < n {
        let len = rng.random_range(1..1u64 << 12) * if set { 1 } else { 4 };
        let end = (at + len).min(n);
        if set {
            for i in at..end {
                out[(i / 8) as usize] |= 1 << (i % 8);
            }
        }
        at = end;
        set = !set;
    }
    out
}

/// The full benchmark selection: bit-width sweep 1..=32, D1 2^2..2^28 (even powers), D2 2^6..2^30
/// (every 4th power), D3 exponents 1..5, and runs of 32.
pub fn bench_sets(n: usize) -> Vec<Dataset> {
    let mut sets: Vec<Dataset> = (1..=32).map(|b| uniform(n, b)).collect();
    sets.extend((1..=14).map(|k| sorted(n, 1u64 << (2 * k))));
    sets.extend(
        [6, 10, 14, 18, 22, 26, 30]
            .into_iter()
            .map(|m| normal(n, m)),
    );
    sets.extend([1.0, 2.0, 3.0, 4.0, 5.0].into_iter().map(|e| zipf(n, e)));
    sets.push(runs(n, 32, 20));
    sets.push(sequence(n));
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_are_deterministic_and_in_range() {
        assert_eq!(uniform(1000, 7).values, uniform(1000, 7).values);
        assert!(uniform(1000, 7).values.iter().all(|&v| v < 128));
        let s = sorted(1 << 12, 1 << 4).values;
        assert!(s.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*s.last().unwrap_or(&0), 15);
        let r = runs(100, 32, 20).values;
        assert_eq!(r.len(), 100);
        assert!(r[..32].iter().all(|&v| v == r[0]));
        assert!(zipf(100, 2.0)
            .values
            .iter()
            .all(|&v| (1..=1 << 20).contains(&v)));
    }
}
