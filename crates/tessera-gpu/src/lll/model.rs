//! A thread-by-thread model of `kernels/lll/lll.cu` (same phases, same shared-memory layout, same
//! index arithmetic, threads of a phase run one after another), checked against the CPU decoder
//! where no GPU is at hand: it catches mistakes in the algorithm (word offsets, the replay of
//! earlier words, ring indices, step shares), not CUDA ones, which `tests/gpu_lll.rs` catches.

use super::*;

/// A little-endian 32-bit word at `at` (the model reads the padded input with it).
fn word(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

pub(super) const WPT: u32 = 8;
const MASK: u32 = 8191;
pub(super) const STAGE_BEFORE: usize = 4;
const P_UNSET: u32 = 0x4000_0000;
pub(super) const MAP_BYTES: u32 = 4096;
/// `LLL_D_FILL`, `LLL_D_RUN_AT`: flags of the 16-bit descriptions stage 2 reads, which
/// the parse's packed codes (`len << 16 | low half`) carry in their low half.
pub(super) const D_FILL: u32 = 0x8000;
pub(super) const D_RUN_AT: u32 = 0x4000;

/// `LllShared::MAP_BYTES`: the longest step output that gets a map, which lives in the
/// step's stage buffer (`stage4(w_step)` 16-byte pieces, one 16-bit entry per 4 bytes and
/// one spare).
pub(super) fn map_bytes(w_step: u32) -> u32 {
    (4 * (stage4(w_step) as u32 * 8 - 1)).min(MAP_BYTES)
}
const RL_MIN: u32 = cpu::RL_MIN as u32;

/// 16-byte pieces of the staged word-array window (`LllShared::STAGE4`).
fn stage4(w_step: u32) -> usize {
    (STAGE_BEFORE + 2 * w_step as usize + 2).div_ceil(16) + 1
}

/// The parse state carried from word to word (`lll_dict_word`): whether the word before
/// was a long code's head (so this one is its c word), and p: `D_FILL | ch`, a ring position
/// (the last byte of a copy), or `P_UNSET`.
struct PState {
    pend: bool,
    p: u32,
}

/// `lll_dict_word`: one word of a dictionary segment at staged offset `x`; returns the
/// packed code (`len << 16 | D_FILL | ch`, or `len << 16 | source ring position`).
#[allow(clippy::too_many_arguments)]
fn dict_word(
    sb: &impl Fn(i64) -> u32,
    x: i64,
    two: u32,
    has_c: impl Fn() -> bool,
    ds: u32,
    dict_len: u32,
    ps: &mut PState,
    err: &mut bool,
) -> u32 {
    let (b0, b1) = (sb(x), sb(x + 1));
    let (t, l) = (b0 | (b1 & 15) << 8, b1 >> 4);
    if two == 1 && (l == 15 || t == 4095) {
        // LI, SRL, LRL.
        *err |= ps.pend;
        let mut n = l + 2;
        if l == 15 {
            *err |= !has_c();
            n = sb(x + 2) + 18;
        }
        ps.pend = l == 15;
        if t == 4095 {
            *err |= ps.p == P_UNSET;
            let code = if ps.p & D_FILL != 0 {
                ps.p & 0xFFFF
            } else {
                D_RUN_AT | (ps.p & MASK)
            };
            ps.p = P_UNSET;
            return code | n << 16;
        }
        *err |= t + n > dict_len;
        ps.p = (ds + t + n - 1) & MASK;
        return (ds + t) & MASK | n << 16;
    }
    // SI, SC, or the c word of the long code before.
    let n = l + 2;
    *err |= two == 1 && (ps.pend || t + n > dict_len);
    let code = if two == 1 {
        (ds + t) & MASK | n << 16
    } else if ps.pend {
        0
    } else {
        D_FILL | b0 | 1 << 16
    };
    ps.p = if two == 1 {
        (ds + t + n - 1) & MASK
    } else if ps.pend {
        ps.p
    } else {
        D_FILL | b0
    };
    ps.pend = false;
    code
}

/// `lll_replay`: the state before word `i0` of a dictionary segment whose words start at
/// `w0 < i0` (`x0`: word i0's staged offset), from words i0 - 1 and i0 - 2 only.
fn replay(sb: &impl Fn(i64) -> u32, x0: i64, ids: &[u32], i0: u32, w0: u32, ds: u32) -> PState {
    let back2 = i0 >= w0 + 2;
    let id1 = id(ids, i0 - 1);
    let id2 = if back2 { id(ids, i0 - 2) } else { 0 };
    let x1 = x0 - 1 - id1 as i64;
    let (a, b) = (sb(x1), sb(x1 + 1));
    if id1 == 1 {
        // A head: SI / LI (p: its last dictionary byte) or SRL / LRL (p unset).
        let (t, l) = (a | (b & 15) << 8, b >> 4);
        let n = if l == 15 { sb(x1 + 2) + 18 } else { l + 2 };
        let p = if t == 4095 {
            P_UNSET
        } else {
            (ds + t + n - 1) & MASK
        };
        return PState { pend: l == 15, p };
    }
    // SC, or the c word (length a + 18) of a long code at i0 - 2.
    let mut p = D_FILL | a;
    if back2 && id2 == 1 {
        let (a2, b2) = (sb(x1 - 2), sb(x1 - 1));
        if b2 >> 4 == 15 {
            let t2 = a2 | (b2 & 15) << 8;
            p = if t2 == 4095 {
                P_UNSET
            } else {
                (ds + t2 + a + 18 - 1) & MASK
            };
        }
    }
    PState { pend: false, p }
}

/// `lll_segment_count`: segments of a strip of `l` bytes, segments of `512 << g`.
fn segment_count(l: u32, g: u32) -> u32 {
    let sb = 512 << g;
    if l <= sb {
        return if l > 2048 {
            4
        } else if l > 1024 {
            3
        } else if l > 512 {
            2
        } else {
            1
        };
    }
    g + 1 + (l - 1) / sb
}

/// `lll_segment`: segment `j`'s output `[s, e)` and dictionary start.
fn segment(j: u32, l: u32, g: u32) -> (u32, u32, u32) {
    let (s, e) = if j <= g {
        let s = if j == 0 { 0 } else { 256 << j };
        (s, if j == 0 { 512 } else { 2 * s })
    } else {
        let s = (j - g) * (512 << g);
        (s, s + (512 << g))
    };
    (s, e.min(l), s.saturating_sub(4096))
}

/// `lll_step_write`: strip bytes `[lo, hi)` (inside one segment) from the segment's codes in
/// the step (words `kl..kh`), in equal shares of the threads, byte by byte. `map`: the
/// step's map and first position, when the step has one.
#[allow(clippy::too_many_arguments)]
fn step_write(
    ring: &mut [u8],
    ends: &[u16],
    desc: &[u16],
    lo: u32,
    hi: u32,
    (kl, kh): (u32, u32),
    map: Option<(&[u16], u32)>,
    threads: u32,
) {
    let base = lo & !3;
    let per = ((hi - base).div_ceil(4 * threads) | 1) * 4;
    // The shares cover every byte.
    assert!(base + threads * per >= hi, "[{lo}, {hi}) not covered");
    // A run of a dictionary byte becomes a fill of it when its code is taken.
    let take = |ring: &[u8], d: u16| {
        let d = u32::from(d);
        if d & D_RUN_AT != 0 {
            D_FILL | ring[(d & MASK) as usize] as u32
        } else {
            d
        }
    };
    for t in 0..threads {
        let a0 = lo.max(base + t * per);
        let b0 = hi.min(base + (t + 1) * per);
        if a0 >= b0 {
            continue;
        }
        let mut k = kl;
        if let Some((map, pos)) = map {
            // The code covering a0 & !3 (before the step's first byte: its first code).
            let a4 = a0 & !3;
            k = if a4 >= pos {
                map[((a4 - (pos & !3)) >> 2) as usize] as u32
            } else {
                0
            };
        } else {
            let mut top = kh - 1;
            while k < top {
                let mid = (k + top) >> 1;
                if ends[mid as usize] as u32 > a0 {
                    top = mid;
                } else {
                    k = mid + 1;
                }
            }
        }
        let (mut end, mut d) = (ends[k as usize] as u32, take(ring, desc[k as usize]));
        for xx in a0..b0 {
            while end <= xx {
                k += 1;
                assert!(k < kh, "code {k} past the segment's words");
                end = ends[k as usize] as u32;
                d = take(ring, desc[k as usize]);
            }
            ring[(xx & MASK) as usize] = if d & D_FILL != 0 {
                d as u8
            } else {
                ring[((d + xx) & MASK) as usize]
            };
        }
    }
}

fn id(ids: &[u32], i: u32) -> u32 {
    (ids[(i >> 5) as usize] >> (i & 31)) & 1
}

fn ids_n(ids: &[u32], i: u32, n: u32) -> u32 {
    let (w, sh) = ((i >> 5) as usize, i & 31);
    let mut v = ids[w] >> sh;
    if sh + n > 32 {
        v |= ids[w + 1] << (32 - sh);
    }
    v & ((1u32 << n) - 1)
}

fn exclusive(x: &[u32]) -> (Vec<u32>, u32) {
    let mut acc = 0u32;
    let pre = x
        .iter()
        .map(|&v| {
            let p = acc;
            acc = acc.wrapping_add(v);
            p
        })
        .collect();
    (pre, acc)
}

/// `lll_decode_strip` with `threads` threads; `input` is the padded input buffer.
pub fn decode_strip(input: &[u8], st: StripDesc, out: &mut [u8], threads: u32) -> u32 {
    let w_step = threads * WPT;
    let l = st.out_len;
    if l == 0 || l > 32768 {
        return 1;
    }
    let p = &input[st.in_start as usize..];
    let n_in = st.in_len;
    if st.kind == KIND_STORED {
        // lll.md §4a: exactly L bytes, copied.
        if n_in != l {
            return 8;
        }
        out[..l as usize].copy_from_slice(&p[..l as usize]);
        return 0;
    }
    if st.kind == KIND_FILL {
        // lll.md §4b: one byte, L copies.
        if n_in != 1 {
            return 9;
        }
        out[..l as usize].fill(p[0]);
        return 0;
    }
    let sb = st.segment_bytes;
    if !(512..=4096).contains(&sb) || !sb.is_power_of_two() {
        return 1;
    }
    let g = sb.trailing_zeros() - 9;
    let s_count = segment_count(l, g);
    if n_in < 2 * s_count {
        return 2;
    }
    let mut seg_w = [0u32; 65];
    let mut m = 0u32;
    let mut bad = false;
    for j in 0..s_count {
        let (s, e, _) = segment(j, l, g);
        let c = p[2 * j as usize] as u32 | (p[2 * j as usize + 1] as u32) << 8;
        if c == 0 || c > e - s {
            bad = true;
        }
        seg_w[j as usize] = m;
        m += c;
    }
    seg_w[s_count as usize] = m;
    if bad {
        return 3;
    }
    let ids_at = 2 * s_count;
    let ids_len = m.div_ceil(8);
    if n_in - ids_at < ids_len {
        return 4;
    }
    if m & 7 != 0 && p[(ids_at + ids_len - 1) as usize] >> (m & 7) != 0 {
        return 5;
    }
    let mut ids = vec![0u32; 1024];
    let at = st.in_start + ids_at as u64;
    let aligned = (at & !3) as usize;
    let shift = (at & 3) * 8;
    let rd = |w: usize| word(input, aligned + 4 * w);
    let mut ones = 0u32;
    for w in 0..ids_len.div_ceil(4) {
        let both = (rd(w as usize) as u64) | (rd(w as usize + 1) as u64) << 32;
        let mut v = (both >> shift) as u32;
        let valid = ids_len - 4 * w;
        if valid < 4 {
            v &= (1u32 << (8 * valid)) - 1;
        }
        ids[w as usize] = v;
        ones += v.count_ones();
    }
    let arr_at = ids_at + ids_len;
    if n_in - arr_at != m + ones {
        return 6;
    }
    // The word array's place in the (padded) input: the staged loads' bounds.
    let a_at = st.in_start as usize + arr_at as usize;
    let a_end = a_at + (m + ones) as usize;
    let mut ring = vec![0u8; 8192];
    // Shared memory is not cleared on the GPU: stale bytes are modelled as 0xEE.
    let mut stage = vec![0xEEu8; 16 * stage4(w_step)];
    let mut ends = vec![0u16; w_step as usize];
    let mut desc = vec![0u16; w_step as usize];
    let mut arr_base = 0u32;
    // Steps of W words of the strip, across segments (lll.cu).
    let mut pos = 0u32;
    let mut jc = 0u32;
    let (mut cs, mut ce, _) = segment(0, l, g);
    let mut step0 = 0u32;
    while step0 < m {
        // The step's window of the word array, from 16-byte aligned loads that start before
        // the array's end.
        let wa = a_at + arr_base as usize - STAGE_BEFORE;
        let off = wa & 15;
        let gp = wa - off;
        let nw = w_step.min(m - step0);
        let pieces = stage4(w_step).min((off + STAGE_BEFORE + 2 * nw as usize + 2).div_ceil(16));
        for q in 0..pieces {
            if gp + 16 * q < a_end {
                stage[16 * q..16 * q + 16].copy_from_slice(&input[gp + 16 * q..gp + 16 * q + 16]);
            }
        }
        // sb(x) = array byte arr_base + x, x in [-4, 2 W + 2).
        let sb = |x: i64| stage[(x + (STAGE_BEFORE + off) as i64) as usize] as u32;
        let nvs: Vec<u32> = (0..threads)
            .map(|t| {
                let i0 = step0 + t * WPT;
                if i0 < m {
                    WPT.min(m - i0)
                } else {
                    0
                }
            })
            .collect();
        let bitss: Vec<u32> = (0..threads)
            .map(|t| {
                let nv = nvs[t as usize];
                if nv > 0 {
                    ids_n(&ids, step0 + t * WPT, nv)
                } else {
                    0
                }
            })
            .collect();
        let sizes: Vec<u32> = (0..threads as usize)
            .map(|t| nvs[t] + bitss[t].count_ones())
            .collect();
        let (offs, step_bytes) = exclusive(&sizes);
        let mut dscs = vec![[0u32; WPT as usize]; threads as usize];
        // Per thread: bit k set if word k ends its segment; the segment of its first word.
        let mut lasts = vec![0u32; threads as usize];
        let mut firsts = vec![0u32; threads as usize];
        let mut any_bad = false;
        for t in 0..threads {
            let (nv, bits) = (nvs[t as usize], bitss[t as usize]);
            if nv == 0 {
                continue;
            }
            let i0 = step0 + t * WPT;
            let x0 = offs[t as usize] as i64;
            // The segment of word i0: the last j with seg_w[j] <= i0.
            let (mut j, mut top) = (0u32, s_count - 1);
            while j < top {
                let mid = (j + top + 1) >> 1;
                if seg_w[mid as usize] <= i0 {
                    j = mid;
                } else {
                    top = mid - 1;
                }
            }
            let (mut s, _, mut ds) = segment(j, l, g);
            firsts[t as usize] = j;
            let mut w1 = seg_w[j as usize + 1];
            let mut ps = PState {
                pend: false,
                p: P_UNSET,
            };
            if j > 0 && i0 > seg_w[j as usize] {
                ps = replay(&sb, x0, &ids, i0, seg_w[j as usize], ds);
            }
            let mut x = x0;
            for k in 0..nv {
                let i = i0 + k;
                if i == w1 {
                    j += 1;
                    (s, _, ds) = segment(j, l, g);
                    w1 = seg_w[j as usize + 1];
                    ps = PState {
                        pend: false,
                        p: P_UNSET,
                    };
                }
                let two = (bits >> k) & 1;
                dscs[t as usize][k as usize] = if j == 0 {
                    let n = if two == 1 { sb(x + 1) + RL_MIN } else { 1 };
                    D_FILL | sb(x) | n << 16
                } else {
                    let has_c = || i + 1 < w1 && id(&ids, i + 1) == 0;
                    let mut err = false;
                    let d = dict_word(&sb, x, two, has_c, ds, s - ds, &mut ps, &mut err);
                    any_bad |= err;
                    d
                };
                x += 1 + two as i64;
            }
            // The segments' last words among the thread's: every segment from its first
            // to j - 1 ends inside them, segment j if w1 is past them.
            for jj in firsts[t as usize]..j {
                lasts[t as usize] |= 1 << (seg_w[jj as usize + 1] - 1 - i0);
            }
            if w1 <= i0 + nv {
                lasts[t as usize] |= 1 << (w1 - 1 - i0);
            }
        }
        let totals: Vec<u32> = (0..threads as usize)
            .map(|t| dscs[t][..nvs[t] as usize].iter().map(|d| d >> 16).sum())
            .collect();
        let (pres, step_out) = exclusive(&totals);
        let mapped = step_out <= map_bytes(w_step);
        let pos4 = pos & !3;
        // The map lives in the step's stage buffer: its stale entries (window bytes or an
        // older map) are modelled as a poison word index.
        let mut map = vec![u16::MAX; 8 * stage4(w_step)];
        let qcap = if mapped { MAP_BYTES / 4 + 1 } else { 0 };
        for t in 0..threads as usize {
            if nvs[t] == 0 {
                // Nothing to write (the kernel's loop changes nothing for such a thread).
                continue;
            }
            let mut at = pos.wrapping_add(pres[t]);
            // The segment of word k and its end, from the last-word mask.
            let mut jj = firsts[t];
            let mut e0 = segment(jj, l, g).1;
            // The map entries [qa, qe) of each code: the codes tile the step's output.
            let mut qa = (at - pos4).div_ceil(4).min(qcap);
            // Words past nv have code 0 (length 0) and are written too, never read.
            for k in 0..WPT as usize {
                let d = dscs[t][k];
                let v = if d & (D_FILL | D_RUN_AT) != 0 {
                    d & 0xFFFF
                } else {
                    d.wrapping_sub(at) & MASK
                };
                at = at.wrapping_add(d >> 16);
                let qe = (at - pos4).div_ceil(4).min(qcap);
                while qa < qe {
                    map[qa as usize] = (t * WPT as usize + k) as u16;
                    qa += 1;
                }
                // A segment's last code must end at its end; with the thread's last code
                // inside its segment (below), every code ends inside its segment.
                if lasts[t] >> k & 1 != 0 {
                    any_bad |= at != e0;
                    jj += 1;
                    e0 = segment(jj, l, g).1;
                }
                ends[t * WPT as usize + k] = at as u16;
                desc[t * WPT as usize + k] = v as u16;
            }
            any_bad |= at > e0;
        }
        if any_bad {
            return 7;
        }
        // Stage 2, segment by segment.
        let (hi_step, step_pos) = (pos + step_out, pos);
        while pos < hi_step {
            let b = hi_step.min(ce);
            // The segment's words in the step.
            let kl = seg_w[jc as usize].max(step0) - step0;
            let kh = seg_w[jc as usize + 1].min(step0 + nw) - step0;
            let m = mapped.then_some((map.as_slice(), step_pos));
            step_write(&mut ring, &ends, &desc, pos, b, (kl, kh), m, threads);
            pos = b;
            if pos == ce {
                let r = (cs & MASK) as usize;
                out[cs as usize..ce as usize].copy_from_slice(&ring[r..r + (ce - cs) as usize]);
                jc += 1;
                if jc < s_count {
                    (cs, ce, _) = segment(jc, l, g);
                }
            }
        }
        arr_base += step_bytes;
        step0 += w_step;
    }
    0
}

/// The model over a whole chunk: `Ok(())` iff every strip's status is 0.
fn decode(payload: &[u8], out: &mut [u8], threads: u32) -> std::result::Result<(), u32> {
    let (strips, _, in_len, _) = plan(&[(payload, out.len())]).map_err(|_| 100u32)?;
    let mut input = payload.to_vec();
    input.resize(in_len + INPUT_PADDING, 0);
    for st in strips {
        let o = st.out_start as usize;
        let code = decode_strip(&input, st, &mut out[o..o + st.out_len as usize], threads);
        if code != 0 {
            return Err(code);
        }
    }
    Ok(())
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

fn data_sets(r: &mut Lcg, n: usize) -> Vec<Vec<u8>> {
    let random: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
    let mut runs = Vec::new();
    while runs.len() < n {
        let c = r.next() as u8;
        let len = [1, 2 + r.below(15), 18 + r.below(256), 274 + r.below(700)][r.below(4) as usize];
        runs.extend(std::iter::repeat_n(c, len as usize));
    }
    runs.truncate(n);
    let words = [
        "the ",
        "strip ",
        "segment ",
        "of ",
        "dictionary ",
        "<a href=\"",
        "\">",
        "\n",
    ];
    let mut text = Vec::new();
    while text.len() < n {
        if r.below(20) == 0 {
            text.extend(std::iter::repeat_n(b' ', 2 + r.below(300) as usize));
        } else {
            text.extend_from_slice(words[r.below(words.len() as u32) as usize].as_bytes());
        }
    }
    text.truncate(n);
    let image: Vec<u8> = (0..n)
        .map(|i| {
            let (x, y) = ((i % 777) as f64, (i / 777) as f64);
            if (i / 777) % 50 < 2 {
                255
            } else {
                (128.0 + 60.0 * (x / 40.0).sin() + 40.0 * (y / 30.0).cos()) as u8
                    ^ (r.below(4) as u8)
            }
        })
        .collect();
    // All zeros: fill strips (lll.md §4b). Zeros with one odd byte a strip: coded strips of
    // long runs (LRL).
    let mut nearly_zero = vec![0u8; n];
    for b in nearly_zero.iter_mut().skip(1000).step_by(32768) {
        *b = 1;
    }
    vec![vec![0; n], nearly_zero, random, runs, text, image]
}

#[test]
fn the_short_replay_equals_replaying_two_words() {
    // lll_replay reads words i0 - 1 and i0 - 2 directly; the decoder it replaced ran
    // lll_dict_word over both from the segment-start state. They must agree on any bytes and
    // identifiers (corrupt ones too: a strip whose state differed could fail differently).
    let mut r = Lcg(7);
    for case in 0..200_000u32 {
        let bytes: Vec<u32> = (0..8)
            .map(|_| match r.below(4) {
                0 => 0xFF,
                1 => 0xF0 | r.below(16),
                _ => r.below(256),
            })
            .collect();
        let ids = vec![r.below(4), 0];
        let sb = |x: i64| bytes[(x + 4) as usize];
        let w0 = r.below(3);
        let i0 = 2u32;
        if i0 <= w0 {
            continue;
        }
        let (id1, id2) = (id(&ids, i0 - 1), id(&ids, i0 - 2));
        // Word i0 at staged offset 0 (index 4 of `bytes`), the words before packed below it.
        let x0 = 0i64;
        let ds = r.below(30000);
        let mut ps = PState {
            pend: false,
            p: P_UNSET,
        };
        let mut ignored = false;
        if i0 >= w0 + 2 {
            let xb = x0 - 2 - (id1 + id2) as i64;
            dict_word(&sb, xb, id2, || true, ds, 4096, &mut ps, &mut ignored);
        }
        let xb = x0 - 1 - id1 as i64;
        dict_word(&sb, xb, id1, || true, ds, 4096, &mut ps, &mut ignored);
        let short = replay(&sb, x0, &ids, i0, w0, ds);
        assert_eq!(
            (short.pend, short.p),
            (ps.pend, ps.p),
            "case {case}: bytes {bytes:?} ids {ids:?} w0 {w0} ds {ds}"
        );
    }
}

#[test]
fn the_kernel_model_equals_the_cpu_decoder() {
    let mut r = Lcg(0x5EED);
    for n in [
        0usize, 1, 2, 511, 512, 513, 2049, 4095, 4096, 4097, 9000, 32768, 32769, 70001,
    ] {
        for data in data_sets(&mut r, n) {
            for (sb, parse) in cpu::SEGMENT_SIZES
                .into_iter()
                .flat_map(|sb| [(sb, cpu::Parse::Smallest), (sb, cpu::Parse::FastDecode)])
            {
                let mut payload = Vec::new();
                let opts = cpu::EncodeOptions {
                    segment_bytes: sb,
                    parse,
                };
                cpu::encode_with(&data, &mut payload, &opts).expect("encodes");
                for threads in [64, 128, 256] {
                    let mut out = vec![0xA5u8; n];
                    let what = format!("{n} bytes, segments of {sb}, {parse:?}, {threads} threads");
                    assert_eq!(decode(&payload, &mut out, threads), Ok(()), "{what}");
                    assert!(out == data, "{what}");
                }
            }
        }
    }
}

/// `tests/gpu_lll.rs`'s image-like data: segments of 1000+ words, so steps that start off a
/// 4-byte ring word. Seed 19 (128 threads) once made a middle step end 1 byte past its
/// threads' shares (the shares were sized from hi - lo, not hi - (lo & !3)).
#[test]
fn the_kernel_model_equals_the_cpu_decoder_on_image_like_data() {
    use rand::{Rng, SeedableRng};
    for seed in 0..24u64 {
        let mut r = rand::rngs::StdRng::seed_from_u64(seed);
        let n = 100_003;
        let width = 1000 + r.random_range(0..100);
        let (fx, fy) = (r.random_range(1..8) as f64, r.random_range(1..8) as f64);
        let data: Vec<u8> = (0..n)
            .map(|i| {
                let (x, y) = ((i % width) as f64, (i / width) as f64);
                if (i / width) % 97 < 3 {
                    return 255;
                }
                if (i % width) > width * 3 / 4 {
                    return 40;
                }
                let base = 128.0 + 60.0 * (x / 150.0 * fx).sin() + 50.0 * (y / 90.0 * fy).cos();
                let noise = r.random_range(-3i32..=3) as f64;
                (base + noise).clamp(0.0, 255.0) as u8
            })
            .collect();
        // Each seed its segment size (lll.md §2), the default on half of them.
        let sb = [512, 1024, 512, 2048, 512, 4096][seed as usize % 6];
        let mut payload = Vec::new();
        cpu::encode_with_segment_bytes(&data, &mut payload, sb).expect("encodes");
        for threads in [64, 128, 256] {
            let mut out = vec![0xA5u8; n];
            assert_eq!(decode(&payload, &mut out, threads), Ok(()), "seed {seed}");
            let diff = (0..n).find(|&i| out[i] != data[i]);
            assert!(
                diff.is_none(),
                "seed {seed}, {threads} threads: byte {diff:?}"
            );
        }
    }
}

/// A segment whose codes run past its end within the step that holds its first words,
/// while its last word lies in a later step: the step must fail before stage 2. (Stage 2
/// of the next segment in that step would search its words from `seg_w[j + 1] - step0`,
/// past the step's entries.) Made by turning SI + SC word pairs of that segment into LI
/// codes of 273 bytes (same bytes and identifiers: the SC becomes the c word), enough of
/// them that the step's output also outgrows the map.
#[test]
fn a_segment_overrun_fails_its_first_step() {
    let n = 32768;
    let mut r = Lcg(7);
    let data: Vec<u8> = (0..n)
        .map(|i| ((i % 384) / 3 + (i / 384) % 5) as u8 ^ (r.below(4) as u8))
        .collect();
    let mut payload = Vec::new();
    cpu::encode_with_segment_bytes(&data, &mut payload, 512).expect("encodes");
    let (strip, segs) = (20usize, 64usize);
    assert_eq!(word(&payload, 16) as usize, strip, "one coded strip");
    let counts: Vec<usize> = (0..segs)
        .map(|j| u16::from_le_bytes([payload[strip + 2 * j], payload[strip + 2 * j + 1]]) as usize)
        .collect();
    let seg_w: Vec<usize> = counts
        .iter()
        .scan(0, |a, &c| {
            *a += c;
            Some(*a - c)
        })
        .collect();
    let m: usize = counts.iter().sum();
    let ids_at = strip + 2 * segs;
    let arr_at = ids_at + m.div_ceil(8);
    let id = |p: &[u8], i: usize| (p[ids_at + i / 8] >> (i % 8)) & 1;
    let mut tested = 0;
    for threads in [64u32, 128, 256] {
        let w = (threads * WPT) as usize;
        // The segment that starts before word w and ends after it.
        let Some(j) = (1..segs - 1).find(|&j| seg_w[j] + 8 < w && seg_w[j + 1] > w) else {
            continue;
        };
        let mut p = payload.clone();
        let mut off = (0..seg_w[j]).map(|i| 1 + id(&p, i) as usize).sum::<usize>();
        let mut turned = 0;
        let mut i = seg_w[j];
        while i + 1 < w && turned < 12 {
            let (two, next_two) = (id(&p, i), id(&p, i + 1));
            let (b0, b1) = (p[arr_at + off], p[arr_at + off + 1]);
            let (t, l) = (u32::from(b0) | u32::from(b1 & 15) << 8, b1 >> 4);
            if two == 1 && next_two == 0 && l != 15 && t != 4095 {
                // LI from dictionary byte 0, 255 + 18 bytes long.
                p[arr_at + off] = 0;
                p[arr_at + off + 1] = 0xF0;
                p[arr_at + off + 2] = 255;
                turned += 1;
                off += 3;
                i += 2;
            } else {
                off += 1 + two as usize;
                i += 1;
            }
        }
        if turned < 12 {
            continue;
        }
        let mut out = vec![0u8; n];
        assert!(
            cpu::decode(&p, &mut out).is_err(),
            "{threads} threads: CPU accepts"
        );
        assert_eq!(decode(&p, &mut out, threads), Err(7), "{threads} threads");
        tested += 1;
    }
    assert!(
        tested > 0,
        "no segment across a step boundary with 12 SI + SC pairs"
    );
}

#[test]
fn the_kernel_model_rejects_what_the_cpu_decoder_rejects() {
    let mut r = Lcg(0xBAD);
    let n = 2 * 32768 + 5000;
    for (d, data) in data_sets(&mut r, n).into_iter().enumerate() {
        let sb = [512, 4096][d % 2];
        let mut payload = Vec::new();
        cpu::encode_with_segment_bytes(&data, &mut payload, sb).expect("encodes");
        let strips = n.div_ceil(32768);
        let dir_end = 16 + 4 * strips;
        let mut rejected = 0;
        for trial in 0..400 {
            let mut p = payload.clone();
            let at = if trial % 5 == 4 {
                // A directory entry: its stored or fill flag (lll.md §4a, §4b) flipped, or
                // its offset moved by one (the strip before it one byte shorter or longer).
                let at = 16 + 4 * r.below(strips as u32) as usize;
                let e = word(&p, at);
                let e = match r.below(4) {
                    0 => e ^ cpu::STORED_STRIP,
                    3 => e ^ cpu::FILL_STRIP,
                    1 => e.wrapping_add(1),
                    _ => e.wrapping_sub(1),
                };
                p[at..at + 4].copy_from_slice(&e.to_le_bytes());
                at
            } else {
                let at = dir_end + r.below((p.len() - dir_end) as u32) as usize;
                p[at] ^= 1 << r.below(8);
                if trial % 7 == 0 {
                    p[at] ^= 0x80;
                }
                at
            };
            let mut want = vec![0u8; n];
            let cpu_ok = cpu::decode(&p, &mut want).is_ok();
            let mut got = vec![0u8; n];
            let model = decode(&p, &mut got, 128);
            assert_eq!(model.is_ok(), cpu_ok, "byte {at}: model {model:?}");
            rejected += usize::from(!cpu_ok);
            if cpu_ok {
                assert!(got == want, "byte {at}: outputs differ");
            }
        }
        eprintln!("{rejected} of 400 corruptions rejected");
        assert!(rejected > 0);
    }
}
