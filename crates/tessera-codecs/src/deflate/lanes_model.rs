//! A CPU model of lane-parallel Huffman block decoding by self-synchronisation, as a GPU warp
//! would do it (the kernel `codag_deflate_sync` built on it was measured slower than the
//! warp-wide loop and not kept: docs/decisions/0030-deflate-lane-parallel-blocks.md,
//! docs/gpu/codag.md "Lane-parallel blocks"): the same split into 32 subsequences, checkpointed synchronisation passes (all lanes at once, each from its
//! predecessor's end of the previous pass), the reference-capacity cut, the scan, literal writes
//! and back-reference resolution 32 at a time in output order. It checks that the result equals
//! the sequential decode and counts passes and discarded lanes, so the algorithm is debugged
//! here rather than on the device.

use super::*;

const LANES: usize = 32;
/// Back-references a round may hold (the kernel's per-warp shared-memory list).
const REFS: u32 = 672;
/// A subsequence length whose references always fit for one lane: a reference takes at least
/// 2 bits and a lane's last token ends at most 48 bits past its limit.
const SAFE_BITS: u64 = 2 * REFS as u64 - 64;
/// Checkpoints: the first token boundary at or past the subsequence's start plus each offset.
const CHECKS: [u64; 3] = [64, 160, 400];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Lit(u8),
    Copy(u32, u32),
    End,
    Bad,
}

/// The token at `b` (a wrong start may give anything; reads past the input are `Bad`).
fn token(c: &Codes, b: &mut Bits<'_>) -> Tok {
    let r = (|| -> Result<Tok> {
        let sym = c.lit.decode(b)?;
        if sym < 256 {
            return Ok(Tok::Lit(sym as u8));
        }
        if sym == 256 {
            return Ok(Tok::End);
        }
        let k = sym as usize - 257;
        if k >= LEN_BASE.len() {
            return Ok(Tok::Bad);
        }
        let len = LEN_BASE[k] as u32 + b.take(LEN_EXTRA[k] as u32)?;
        let Some(d) = c.dist.as_ref() else {
            return Ok(Tok::Bad);
        };
        let ds = d.decode(b)? as usize;
        if ds >= DIST_BASE.len() {
            return Ok(Tok::Bad);
        }
        Ok(Tok::Copy(
            len,
            DIST_BASE[ds] as u32 + b.take(DIST_EXTRA[ds] as u32)?,
        ))
    })();
    r.unwrap_or(Tok::Bad)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    Limit,
    End,
    Bad,
}

/// One lane's decode of its subsequence: from `start` to the first boundary at or past
/// `limit` (or end of block / a bad token).
#[derive(Clone, Copy, Debug)]
struct Lane {
    start: u64,
    end: u64,
    out: u64,
    refs: u32,
    stop: Stop,
    /// (boundary, out, refs) at each checkpoint reached; `checks` of them valid.
    cps: [(u64, u64, u32); 3],
    checks: usize,
}

/// Decodes a lane's subsequence from `start`; with `old` (an earlier decode of the same
/// subsequence), stops as soon as a checkpoint boundary equals the old one, the rest then being
/// the old decode's. Returns the lane and the tokens decoded.
fn decode(
    c: &Codes,
    data: &[u8],
    base: u64,
    limit: u64,
    start: u64,
    old: Option<&Lane>,
) -> (Lane, u64) {
    let mut b = Bits::new(data, start);
    let mut l = Lane {
        start,
        end: start,
        out: 0,
        refs: 0,
        stop: Stop::Limit,
        cps: [(0, 0, 0); 3],
        checks: 0,
    };
    let mut tokens = 0;
    loop {
        while l.checks < CHECKS.len() && b.pos >= base + CHECKS[l.checks] {
            let k = l.checks;
            if let Some(o) = old {
                if o.checks > k && o.cps[k].0 == b.pos {
                    // Later checkpoints are the old decode's, its counts moved to this start.
                    let mut cps = o.cps;
                    for cp in &mut cps[k..o.checks] {
                        cp.1 = cp.1 - o.cps[k].1 + l.out;
                        cp.2 = cp.2 - o.cps[k].2 + l.refs;
                    }
                    cps[..k].copy_from_slice(&l.cps[..k]);
                    let r = Lane {
                        start,
                        end: o.end,
                        out: l.out + o.out - o.cps[k].1,
                        refs: l.refs + o.refs - o.cps[k].2,
                        stop: o.stop,
                        cps,
                        checks: o.checks,
                    };
                    return (r, tokens);
                }
            }
            l.cps[k] = (b.pos, l.out, l.refs);
            l.checks += 1;
        }
        if b.pos >= limit {
            break;
        }
        tokens += 1;
        match token(c, &mut b) {
            Tok::Lit(_) => l.out += 1,
            Tok::Copy(n, _) => {
                l.out += n as u64;
                l.refs += 1;
            }
            Tok::End => {
                l.stop = Stop::End;
                break;
            }
            Tok::Bad => {
                l.stop = Stop::Bad;
                break;
            }
        }
    }
    l.end = b.pos;
    (l, tokens)
}

#[derive(Default, Debug)]
struct Stats {
    blocks: u64,
    rounds: u64,
    passes: u64,
    max_passes: u64,
    lanes_used: u64,
    tokens_first: u64,
    tokens_sync: u64,
    cut_by_refs: u64,
    resolve_steps: u64,
    refs: u64,
}

/// One Huffman block's symbols from bit `pos` on, lane-parallel; returns where the block ends.
fn block_lanes(
    c: &Codes,
    data: &[u8],
    mut pos: u64,
    out: &mut Vec<u8>,
    limit: usize,
    est: &mut u64,
    st: &mut Stats,
) -> Result<u64> {
    let lim = data.len() as u64 * 8;
    loop {
        let rem = lim.saturating_sub(pos);
        let bits = (*est).min(rem.div_ceil(LANES as u64)).max(1);
        let base = |i: usize| pos + i as u64 * bits;
        let mut lanes: Vec<Lane> = (0..LANES)
            .map(|i| {
                let (l, t) = decode(c, data, base(i), base(i) + bits, base(i), None);
                st.tokens_first += t;
                l
            })
            .collect();
        let mut passes = 1;
        for _ in 1..LANES {
            let prev = lanes.clone();
            let mut changed = false;
            for i in 1..LANES {
                let s = prev[i - 1].end;
                if s != prev[i].start {
                    let (l, t) = decode(c, data, base(i), base(i) + bits, s, Some(&prev[i]));
                    st.tokens_sync += t;
                    lanes[i] = l;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
            passes += 1;
        }
        st.rounds += 1;
        st.passes += passes;
        st.max_passes = st.max_passes.max(passes);
        // Lanes up to the first that stopped otherwise than at its limit; then as many as the
        // references fit.
        let mut used = lanes
            .iter()
            .position(|l| l.stop != Stop::Limit)
            .map_or(LANES, |e| e + 1);
        let mut sum = 0;
        let fit = lanes.iter().take_while(|l| {
            sum += l.refs;
            sum <= REFS
        });
        let fit = fit.count();
        if fit == 0 {
            *est = SAFE_BITS;
            continue;
        }
        if fit < used {
            used = fit;
            st.cut_by_refs += 1;
            *est = (bits * fit as u64 / LANES as u64).max(64);
        } else if sum < REFS / 2 {
            *est = est.saturating_mul(3) / 2;
        }
        st.lanes_used += used as u64;
        // Write: literals at each lane's offset (the exclusive scan), references listed in
        // output order.
        let first = out.len() as u64;
        let mut at = first;
        let mut refs = Vec::new();
        for l in &lanes[..used] {
            let mut b = Bits::new(data, l.start);
            let mut o = at;
            while b.pos < l.end {
                match token(c, &mut b) {
                    Tok::Lit(v) => {
                        if o >= limit as u64 {
                            return Err(over(limit));
                        }
                        out.resize(o as usize + 1, 0);
                        out[o as usize] = v;
                        o += 1;
                    }
                    Tok::Copy(n, d) => {
                        if o + n as u64 > limit as u64 {
                            return Err(over(limit));
                        }
                        if d as u64 > o {
                            return Err(bad("a distance inside the output", b.pos));
                        }
                        refs.push((o, d as u64, n as u64));
                        o += n as u64;
                        out.resize(o as usize, 0);
                    }
                    Tok::End | Tok::Bad => break,
                }
            }
            assert_eq!(
                o - at,
                l.out,
                "a lane's write pass disagrees with its count"
            );
            at = o;
        }
        st.refs += refs.len() as u64;
        // Resolve 32 at a time: a reference whose source ends before the first unresolved
        // destination copies at once, the first unresolved one byte by byte.
        for batch in refs.chunks(LANES) {
            let mut done = vec![false; batch.len()];
            while let Some(f) = done.iter().position(|d| !d) {
                st.resolve_steps += 1;
                let front = batch[f].0;
                let ready: Vec<usize> = (f..batch.len())
                    .filter(|&j| {
                        !done[j] && (j == f || batch[j].0 - batch[j].1 + batch[j].2 <= front)
                    })
                    .collect();
                for j in ready {
                    let (o, d, n) = batch[j];
                    for k in 0..n {
                        out[(o + k) as usize] = out[(o + k - d) as usize];
                    }
                    done[j] = true;
                }
            }
        }
        let last = &lanes[used - 1];
        match last.stop {
            Stop::End => return Ok(last.end),
            Stop::Bad => return Err(bad("a Huffman code of the block", last.end)),
            Stop::Limit => pos = last.end,
        }
    }
}

/// A raw Deflate stream through the model (stored blocks by the sequential code).
fn inflate_lanes(data: &[u8], limit: usize, st: &mut Stats) -> Result<Vec<u8>> {
    let mut b = Bits::new(data, 0);
    let mut out = Vec::new();
    let mut est = u64::MAX;
    loop {
        let at = b.pos;
        let last = b.take(1)? == 1;
        let codes = match b.take(2)? {
            1 => fixed_codes(),
            2 => dynamic_codes(&mut b)?,
            _ => {
                b.seek(at);
                let mut syms = Vec::new();
                block(&mut b, &mut syms, false, limit - out.len())?;
                out.extend(syms.iter().map(|&s| s as u8));
                if last {
                    return Ok(out);
                }
                continue;
            }
        };
        let start = b.pos;
        st.blocks += 1;
        let end = block_lanes(&codes, data, start, &mut out, limit, &mut est, st)?;
        est = (end - start).div_ceil(LANES as u64).max(64);
        b.seek(end);
        if last {
            return Ok(out);
        }
    }
}

fn model(data: &[u8], z: &[u8]) -> Stats {
    let mut st = Stats::default();
    let got = inflate_lanes(z, data.len() + 64, &mut st).expect("model decode");
    assert!(
        got == data,
        "model output differs ({} bytes, {} expected)",
        got.len(),
        data.len()
    );
    st
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.blocks += o.blocks;
        self.rounds += o.rounds;
        self.passes += o.passes;
        self.max_passes = self.max_passes.max(o.max_passes);
        self.lanes_used += o.lanes_used;
        self.tokens_first += o.tokens_first;
        self.tokens_sync += o.tokens_sync;
        self.cut_by_refs += o.cut_by_refs;
        self.refs += o.refs;
        self.resolve_steps += o.resolve_steps;
    }

    fn line(&self) -> String {
        format!(
            "{} blocks, {:.1} rounds a block, {:.2} passes a round ({} at most), {:.1} of 32 \
             lanes kept a round, {:.1} tokens a lane in the first pass, synchronisation tokens \
             {:.1}% of the first pass's, {} rounds cut by references, {:.2} resolve steps per 32 \
             references",
            self.blocks,
            self.rounds as f64 / self.blocks.max(1) as f64,
            self.passes as f64 / self.rounds.max(1) as f64,
            self.max_passes,
            self.lanes_used as f64 / self.rounds.max(1) as f64,
            self.tokens_first as f64 / (32 * self.rounds).max(1) as f64,
            100.0 * self.tokens_sync as f64 / self.tokens_first.max(1) as f64,
            self.cut_by_refs,
            self.resolve_steps as f64 / (self.refs as f64 / 32.0).max(1.0),
        )
    }
}

#[test]
fn lane_parallel_model_equals_the_sequential_decode() {
    let mut all = Stats::default();
    for (n, seed) in [
        (0usize, 1u64),
        (1, 2),
        (40, 3),
        (5_000, 4),
        (131_072, 5),
        (300_000, 6),
    ] {
        let data = super::tests::text(n, seed);
        for level in [1u8, 6, 9] {
            let z = miniz_oxide::deflate::compress_to_vec(&data, level);
            let st = model(&data, &z);
            assert!(st.max_passes <= LANES as u64);
            all.add(&st);
        }
    }
    eprintln!("model: {}", all.line());
    assert!(all.rounds > 0);
}

/// The model over the chunks `tessera-bench codag --dump DIR` writes (DIR/<set>.deflate,
/// .sizes, .bin), for the passes, kept lanes and resolve steps of the bench's own streams:
/// `TESSERA_LANES_MODEL_DUMP=DIR cargo test -p tessera-codecs --release --lib lanes_model -- --ignored --nocapture`.
#[test]
#[ignore = "needs a dump of the bench's Deflate chunks (TESSERA_LANES_MODEL_DUMP)"]
fn lane_parallel_model_over_the_bench_chunks() {
    let dir = std::path::PathBuf::from(
        std::env::var("TESSERA_LANES_MODEL_DUMP").expect("TESSERA_LANES_MODEL_DUMP"),
    );
    let mut sets = 0;
    for set in ["acgtn", "tpch-lineitem-text", "word-text"] {
        let Ok(z) = std::fs::read(dir.join(format!("{set}.deflate"))) else {
            continue;
        };
        let sizes = std::fs::read(dir.join(format!("{set}.sizes"))).expect("sizes");
        let data = std::fs::read(dir.join(format!("{set}.bin"))).expect("data");
        let (mut at, mut out) = (0usize, 0usize);
        let mut st = Stats::default();
        for s in sizes.chunks_exact(8) {
            let c = u32::from_le_bytes(s[..4].try_into().expect("4")) as usize;
            let o = u32::from_le_bytes(s[4..].try_into().expect("4")) as usize;
            st.add(&model(&data[out..out + o], &z[at..at + c]));
            at += c;
            out += o;
        }
        eprintln!("{set}: {} chunks: {}", sizes.len() / 8, st.line());
        sets += 1;
    }
    assert!(sets > 0, "no set in {}", dir.display());
}

/// Literals with codes of one length (7 bits, bytes 0..128 at random, no repeats): a wrong
/// start stays misaligned until it meets a longer code, so synchronisation takes many passes;
/// the result must still equal the sequential decode.
#[test]
fn a_late_synchronising_stream_still_decodes() {
    let mut x = 7u64;
    let data: Vec<u8> = (0..60_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 & 127
        })
        .collect();
    let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
    let st = model(&data, &z);
    eprintln!(
        "late sync: {} rounds, {} passes at most",
        st.rounds, st.max_passes
    );
    assert!(st.max_passes > 2, "{st:?}");
}
