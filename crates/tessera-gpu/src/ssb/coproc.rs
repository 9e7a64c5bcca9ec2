//! Coprocessor mode ([`Gpu::ssb_run_coprocessor`]): a query over columns that live in
//! page-locked host memory, shipped for this query only and overlapped with its kernels.
//!
//! What a call costs beyond the link is fixed per call, and it weighs more the fewer bytes the
//! query ships (compressed columns), so the call keeps it small:
//!
//! - one device allocation for everything the query needs (every shipped column's words, chunk
//!   tables and status words, the hash tables, the query status, the aggregate and its
//!   compaction), laid out so that two fills reset it and one copy reads back every status
//!   word with the groups;
//! - the chunk tables of every column staged in one page-locked buffer and shipped in one copy
//!   ahead of the payloads;
//! - a copy stream, its events and the staging buffer kept in the handle between calls
//!   ([`Coproc`]), and the query's program with its kernels looked up once per plan and codecs
//!   ([`Cached`]);
//! - the fact table's pieces shrinking towards the end (…, 4, 2, 1 chunks), so that what runs
//!   after the last copy, the last piece's probe, is short.
//!
//! Invariants: both streams are drained before a call returns, error or not, and only then is
//! the call's allocation freed; the host touches the staging buffer only while no copy of this
//! handle's coprocessor calls is queued (every call ends drained).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaFunction, CudaStream, PinnedHostSlice};
use tessera_format::{Error, Result};

use super::plan::{self, QueryPlan, QueryResult};
use super::{
    codegen, column_status, find_host, groups_from, query_status, SsbColumn, SsbHashTable,
    SsbHostColumn,
};
use crate::runtime::{cuda, Gpu};

/// Groups whose triples come back with the status words in the one read-back; a query that
/// reached more reads the rest in a second copy.
const READ_GROUPS: usize = 1024;
/// Alignment of every part of the call's allocation (plain chunks need 16 bytes).
const ALIGN: usize = 256;
/// Bytes of one chunk table row (`SsbChunk`).
const CHUNK_ROW: usize = std::mem::size_of::<super::SsbChunk>();
/// Programs kept per handle (a bench's 13 queries in two layouts fit).
const PROGRAMS: usize = 32;

/// Where one coprocessor call's wall time went (milliseconds): host time on either side of the
/// device's work, and the device's spans from CUDA events (copy stream and query stream).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CoprocPhases {
    /// Host: from the call's start until every copy is queued (program lookup, allocation,
    /// fills, chunk tables staged, copies queued).
    pub queue_ms: f64,
    /// Device: from the start of the first copy (the chunk tables) to the end of the last.
    pub copy_ms: f64,
    /// Device: from the end of the last copy until the groups and status words are in host
    /// memory (the last piece's probe, the compaction, the read-back).
    pub tail_ms: f64,
    /// Host: from the query stream's end to the call's return (checks, result, frees).
    pub finish_ms: f64,
    /// The whole call.
    pub wall_ms: f64,
}

impl CoprocPhases {
    /// What the phases leave out of the wall time: the queueing the device had not started on
    /// yet when the host finished it, and the host's wake-up at the end.
    pub fn other_ms(&self) -> f64 {
        self.wall_ms - self.queue_ms - self.copy_ms - self.tail_ms - self.finish_ms
    }
}

/// A program of a plan for the codecs its generator asked about, with its kernels loaded.
struct Cached {
    plan: QueryPlan,
    options: codegen::Options,
    /// Every (dimension table or `None` for the fact table, column, codec) the generator
    /// asked about: the program is reused only when all of them still hold.
    asked: Vec<(Option<String>, String, Option<u32>)>,
    prog: codegen::Program,
    builds: Vec<CudaFunction>,
    probe: CudaFunction,
}

/// What coprocessor calls keep in the handle (module docs); taken out of the handle's state
/// for a call, so the call's own uses of that state do not wait on it.
struct Coproc {
    copy: Arc<CudaStream>,
    /// Recorded on the query stream once the call's allocation is filled: the copies wait for it.
    ready: CudaEvent,
    /// The dimensions' arrival, then each piece's.
    arrived: Vec<CudaEvent>,
    /// Timing: copies start, copies end, read-back end.
    marks: [CudaEvent; 3],
    /// Page-locked staging: the chunk tables going out, the status words and groups coming back.
    stage: Option<PinnedHostSlice<u8>>,
    programs: Vec<Cached>,
    last: Option<CoprocPhases>,
}

impl Coproc {
    fn new(gpu: &Gpu) -> Result<Coproc> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = |flags| gpu.ctx.new_event(flags).map_err(cuda("creating an event"));
        Ok(Coproc {
            copy: gpu.ctx.new_stream().map_err(cuda("creating a stream"))?,
            ready: event(None)?,
            arrived: Vec::new(),
            marks: [event(timing)?, event(timing)?, event(timing)?],
            stage: None,
            programs: Vec::new(),
            last: None,
        })
    }

    /// Makes the staging buffer at least `bytes` long.
    fn stage(&mut self, gpu: &Gpu, bytes: usize) -> Result<()> {
        if self.stage.as_ref().is_none_or(|s| s.len() < bytes) {
            // The old buffer is freed before the larger one is allocated.
            self.stage = None;
            // SAFETY: the host writes every byte it ships before the copy is queued and reads
            // only bytes a finished copy wrote. Not write-combined: the host reads it back.
            let s = unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
                .map_err(cuda("allocating pinned host memory"))?;
            self.stage = Some(s);
        }
        Ok(())
    }
}

/// The fact table's `chunks` chunks in `pieces` ranges whose sizes halve towards the end (…, 4,
/// 2, 1 chunks after even ones, or, with more pieces than doubling needs, in proportion to
/// …, 4, 2, 1), each piece at most about twice the next. Only the probe of the last piece runs
/// after the link has finished, so it is kept short; a probe takes a fraction of its piece's
/// copy (about a tenth on an H200), so each earlier probe ends while the smaller pieces after
/// it are still being copied.
pub(crate) fn piece_ranges(chunks: usize, pieces: usize) -> Vec<Range<usize>> {
    let pieces = pieces.clamp(1, chunks.max(1));
    if pieces > 1 && pieces < 64 && (1usize << pieces) - 1 <= chunks {
        // Pure halving: piece i of weight 2^(pieces - 1 - i), at least one chunk each; each
        // cut rounded from the end, so the last piece is the smallest.
        let total = (1u128 << pieces) - 1;
        let cut =
            |i: usize| chunks - (chunks as u128 * ((1u128 << (pieces - i)) - 1) / total) as usize;
        return (0..pieces).map(|i| cut(i)..cut(i + 1)).collect();
    }
    let (mut left, mut n, mut size) = (chunks, pieces, 1usize);
    let mut tail = Vec::new();
    while n > 1 && size < left / n {
        tail.push(size);
        left -= size;
        n -= 1;
        size *= 2;
    }
    let mut ranges: Vec<Range<usize>> = (0..n).map(|i| i * left / n..(i + 1) * left / n).collect();
    let mut at = left;
    for &s in tail.iter().rev() {
        ranges.push(at..at + s);
        at += s;
    }
    ranges
}

/// Byte offsets of the parts of a call's one allocation.
struct Layout {
    /// Filled with 0xFF: the hash tables' slots, then every column's status words, then the
    /// query status.
    ff: Range<usize>,
    slots: Vec<usize>,
    /// Per shipped column (dimension tables in join order, then the fact table): status words,
    /// chunk table and words.
    status: Vec<usize>,
    tables: Range<usize>,
    table_at: Vec<usize>,
    words: Vec<usize>,
    qs: usize,
    /// Zeroed: the number of groups reached (a u32 in an 8-byte slot), then, not filled, the
    /// compacted triples; the read-back covers the status words to the first READ_GROUPS
    /// triples.
    n: usize,
    out: usize,
    /// Zeroed: sums, then counts.
    zero: Range<usize>,
    total: usize,
}

fn bump(at: &mut usize, bytes: usize) -> Result<usize> {
    let start = at.next_multiple_of(8);
    *at = start
        .checked_add(bytes)
        .ok_or_else(|| Error::InvalidArgument("coprocessor buffers past 2^64 bytes".into()))?;
    Ok(start)
}

fn layout(columns: &[&SsbHostColumn], hash_bits: &[u32], groups: usize) -> Result<Layout> {
    let mut at = 0usize;
    let slots: Vec<usize> = hash_bits
        .iter()
        .map(|&b| bump(&mut at, 8usize << b))
        .collect::<Result<_>>()?;
    let ff_start = slots.first().copied().unwrap_or(0);
    let status: Vec<usize> = columns
        .iter()
        .map(|h| bump(&mut at, 8 * h.layout.counts.len().max(1)))
        .collect::<Result<_>>()?;
    let qs = bump(&mut at, 8)?;
    let ff = ff_start..at;
    let n = bump(&mut at, 8)?;
    let out = bump(&mut at, 24 * groups.max(1))?;
    let sums = bump(&mut at, 8 * groups.max(1))?;
    bump(&mut at, 8 * groups.max(1))?;
    let zero = sums..at;
    let tables_start = at;
    let table_at: Vec<usize> = columns
        .iter()
        .map(|h| bump(&mut at, CHUNK_ROW * h.layout.table.len().max(1)))
        .collect::<Result<_>>()?;
    let tables = tables_start..at;
    let mut words = Vec::with_capacity(columns.len());
    for h in columns {
        at = at.next_multiple_of(ALIGN);
        words.push(bump(&mut at, (h.layout.words * 4).max(4))?);
    }
    Ok(Layout {
        ff,
        slots,
        status,
        tables,
        table_at,
        words,
        qs,
        n,
        out,
        zero,
        total: at.next_multiple_of(ALIGN),
    })
}

/// Writes chunk table row `c` as the kernels read it (`SsbChunk`: little-endian fields in
/// declaration order).
fn put_row(c: &super::SsbChunk, out: &mut [u8]) {
    let d = &c.desc;
    out[0..8].copy_from_slice(&d.payload_word.to_le_bytes());
    out[8..16].copy_from_slice(&d.out_index.to_le_bytes());
    out[16..20].copy_from_slice(&d.payload_words.to_le_bytes());
    out[20..24].copy_from_slice(&d.total_count.to_le_bytes());
    out[24..28].copy_from_slice(&d.first_tile.to_le_bytes());
    out[28..32].copy_from_slice(&d.first_slab.to_le_bytes());
    out[32..36].copy_from_slice(&c.codec.to_le_bytes());
    out[36..40].copy_from_slice(&c.pad.to_le_bytes());
}

fn words_of(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

impl Gpu {
    /// Coprocessor mode: runs `p` over columns that live in page-locked host memory (`fact`
    /// and, by table name, `dims`: (column name, column) pairs; columns the query does not read
    /// are not shipped), shipping for this query only the columns it reads, and overlapping
    /// the copies with the query's kernels:
    ///
    /// - a copy stream ships the chunk tables, then the dimension columns, then the fact
    ///   columns in `pieces` chunk ranges (each piece: every fact column's bytes of those
    ///   chunks, one copy a column; the last pieces shrink, `piece_ranges`), recording an event
    ///   after the dimensions and after each piece;
    /// - the query stream builds the hash tables once the dimensions have arrived (while the
    ///   fact table is still on its way), then probes each piece as soon as it has arrived,
    ///   into the same aggregate, compacts the groups reached and reads them back with every
    ///   status word in one copy.
    ///
    /// So the link is busy from the first copy to the last and the kernels hide behind it, but
    /// the probe of the last piece. Each column is shipped as its bytes lie in host memory: the
    /// chunk payloads back to back, nothing else (plain chunks start on 16-byte boundaries).
    /// Every loader's chunk report and the query's status are checked before the result is
    /// returned, as [`Gpu::ssb_run`] does. Returns the result and the payload bytes shipped;
    /// [`Gpu::ssb_coprocessor_phases`] says where the call's time went.
    pub fn ssb_run_coprocessor<'a>(
        &self,
        p: &QueryPlan,
        fact: &[(String, &'a SsbHostColumn)],
        dims: &HashMap<String, Vec<(String, &'a SsbHostColumn)>>,
        pieces: usize,
    ) -> Result<(QueryResult, u64)> {
        let t0 = Instant::now();
        p.check()?;
        let mut cx = match self.with_state::<Coproc, _>(|s| Ok(s.take()))? {
            Some(cx) => cx,
            None => Coproc::new(self)?,
        };
        let out = self.coproc_call(&mut cx, t0, p, fact, dims, pieces);
        // A concurrent call on this handle may have put its own back first; one is enough.
        self.with_state::<Coproc, _>(|s| {
            if s.is_none() {
                *s = Some(cx);
            }
            Ok(())
        })?;
        out
    }

    /// Where the last [`Gpu::ssb_run_coprocessor`] call on this handle spent its time (`None`
    /// before the first, or when it failed).
    pub fn ssb_coprocessor_phases(&self) -> Option<CoprocPhases> {
        self.with_state::<Coproc, _>(|s| Ok(s.as_ref().and_then(|c| c.last)))
            .ok()
            .flatten()
    }

    /// The program of `p` for these host columns' codecs, from the cache or generated (and
    /// its kernels loaded) and cached.
    fn coproc_program<'c>(
        &self,
        cx: &'c mut Coproc,
        p: &QueryPlan,
        fact: &[(String, &SsbHostColumn)],
        dims: &HashMap<String, Vec<(String, &SsbHostColumn)>>,
    ) -> Result<&'c Cached> {
        let codec_of = |dim: Option<&str>, col: &str| -> Option<u32> {
            let host = match dim {
                None => fact,
                Some(name) => dims.get(name)?.as_slice(),
            };
            host.iter()
                .find(|(n, _)| n == col)
                .and_then(|(_, h)| h.layout.uniform())
        };
        let options = self.ssb_options();
        let hit = cx.programs.iter().position(|c| {
            c.options == options
                && c.plan == *p
                && c.asked
                    .iter()
                    .all(|(d, col, v)| codec_of(d.as_deref(), col) == *v)
        });
        let at = match hit {
            Some(i) => i,
            None => {
                let asked = RefCell::new(Vec::new());
                let codecs = |side: codegen::Side<'_>, col: &str| -> Option<u32> {
                    let dim = match side {
                        codegen::Side::Fact => None,
                        codegen::Side::Dim(name) => Some(name),
                    };
                    let v = codec_of(dim, col);
                    asked
                        .borrow_mut()
                        .push((dim.map(str::to_string), col.to_string(), v));
                    v
                };
                let prog = codegen::program_with(p, &codecs, options);
                let builds = (0..prog.builds.len())
                    .map(|i| self.ssb_function(&prog.source, &format!("ssb_build_{i}")))
                    .collect::<Result<Vec<_>>>()?;
                let probe = self.ssb_function(&prog.source, "ssb_probe")?;
                if cx.programs.len() >= PROGRAMS {
                    cx.programs.remove(0);
                }
                cx.programs.push(Cached {
                    plan: p.clone(),
                    options,
                    asked: asked.into_inner(),
                    prog,
                    builds,
                    probe,
                });
                cx.programs.len() - 1
            }
        };
        Ok(&cx.programs[at])
    }

    fn coproc_call(
        &self,
        cx: &mut Coproc,
        t0: Instant,
        p: &QueryPlan,
        fact: &[(String, &SsbHostColumn)],
        dims: &HashMap<String, Vec<(String, &SsbHostColumn)>>,
        pieces: usize,
    ) -> Result<(QueryResult, u64)> {
        cx.last = None;
        let (prog, builds, probe) = {
            let c = self.coproc_program(cx, p, fact, dims)?;
            (c.prog.clone(), c.builds.clone(), c.probe.clone())
        };
        // The shipped columns: each join's build columns, then the probe's.
        let mut hosts: Vec<(&String, &SsbHostColumn)> = Vec::new();
        let mut bits = Vec::with_capacity(p.joins.len());
        for (j, k) in p.joins.iter().zip(&prog.builds) {
            let host = dims.get(&j.table).ok_or_else(|| {
                Error::InvalidArgument(format!("no table {} in host memory", j.table))
            })?;
            let mut rows = None;
            for n in &k.columns {
                let h = find_host(host, &j.table, n)?;
                rows.get_or_insert(h.layout.counts.iter().map(|&c| c as u64).sum::<u64>());
                hosts.push((n, h));
            }
            bits.push(plan::hash_bits(rows.unwrap_or(0) as usize));
        }
        let fact_from = hosts.len();
        for n in &prog.probe.columns {
            hosts.push((n, find_host(fact, "lineorder", n)?));
        }
        let groups = p.groups() as usize;
        let n_groups = u32::try_from(groups)
            .map_err(|_| Error::InvalidArgument(format!("{groups} groups: more than 2^32")))?;
        let columns: Vec<&SsbHostColumn> = hosts.iter().map(|h| h.1).collect();
        let l = layout(&columns, &bits, groups)?;

        // The chunk tables, staged for one copy; the read-back (status words to the first
        // READ_GROUPS triples) lands after them.
        let first = l.status.first().copied().unwrap_or(l.qs);
        let read_at = l.tables.len().next_multiple_of(64);
        let read_len = l.out + 24 * groups.min(READ_GROUPS) - first;
        cx.stage(self, read_at + read_len)?;
        let Coproc {
            copy,
            ready,
            arrived,
            marks,
            stage,
            ..
        } = &mut *cx;
        let stage = stage
            .as_mut()
            .ok_or_else(|| Error::Gpu("staging buffer missing".into()))?;
        {
            let host = stage
                .as_mut_slice()
                .map_err(cuda("mapping pinned host memory"))?;
            for (h, &at) in columns.iter().zip(&l.table_at) {
                let at = at - l.tables.start;
                for (i, row) in h.layout.table.iter().enumerate() {
                    let r = at + i * CHUNK_ROW;
                    put_row(row, &mut host[r..r + CHUNK_ROW]);
                }
            }
        }

        let arena = Arc::new(self.alloc::<u8>(l.total)?);
        let base = self.ptr(&arena);
        // Device tables over views of the allocation.
        let mut cols = Vec::with_capacity(hosts.len());
        for (i, &(n, h)) in hosts.iter().enumerate() {
            let lay = &h.layout;
            let col = SsbColumn {
                words: Some(self.view(&arena, l.words[i], (lay.words * 4).max(4))?),
                chunks: self.view(&arena, l.table_at[i], lay.table.len().max(1))?,
                status: self.view(&arena, l.status[i], lay.counts.len().max(1))?,
                shapes: lay.shapes.clone(),
                counts: lay.counts.clone(),
                bytes: lay.words as u64 * 4,
                uniform: lay.uniform(),
                // Shipped per call: its tiles are checked by the loaders as they are read.
                for_checked: false,
                // Shipped as stored: the lane layout is a resident copy only.
                lanes: None,
            };
            cols.push((n.clone(), col));
        }
        let fact_cols = cols.split_off(fact_from);
        let mut dim_tables = Vec::with_capacity(p.joins.len());
        for k in &prog.builds {
            let rest = cols.split_off(k.columns.len().min(cols.len()));
            dim_tables.push(self.ssb_table(std::mem::replace(&mut cols, rest))?);
        }
        let fact_table = self.ssb_table(fact_cols)?;
        let tables: Vec<SsbHashTable> = bits
            .iter()
            .zip(&l.slots)
            .map(|(&b, &at)| {
                Ok(SsbHashTable {
                    slots: self.view(&arena, at, 1usize << b)?,
                    bits: b,
                })
            })
            .collect::<Result<_>>()?;
        let ranges = piece_ranges(fact_table.chunk_count(), pieces);
        while arrived.len() < ranges.len() + 1 {
            arrived.push(
                self.ctx
                    .new_event(None)
                    .map_err(cuda("creating an event"))?,
            );
        }

        let mut shipped = 0u64;
        // Queues the copy of chunks `range` of `h` to the device bytes at `dst` (`cap` long):
        // the bytes from the first chunk's payload to the last one's end.
        let ship = |h: &SsbHostColumn, dst: usize, range: Range<usize>| -> Result<u64> {
            let (Some(first), Some(last)) = (
                h.layout.table.get(range.start),
                range.end.checked_sub(1).and_then(|e| h.layout.table.get(e)),
            ) else {
                return Ok(0);
            };
            let at = first.desc.payload_word as usize * 4;
            let end = (last.desc.payload_word as usize + last.desc.payload_words as usize) * 4;
            let host = h.pinned.as_slice().map_err(cuda("reading pinned memory"))?;
            if at > end || end > host.len() || end > (h.layout.words * 4).max(4) {
                return Err(Error::InvalidArgument(format!(
                    "bytes {at}..{end} of a column of {} bytes",
                    host.len()
                )));
            }
            if end > at {
                // SAFETY: `at..end` lies inside the pinned column and inside the column's
                // words in the allocation (checked; the layout gave them its length); both
                // outlive the copy: this function drains both streams before it returns or
                // frees the allocation, error or not.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(
                        base + (dst + at) as u64,
                        &host[at..end],
                        copy.cu_stream(),
                    )
                }
                .map_err(cuda("copying to the device"))?;
            }
            Ok((end - at) as u64)
        };
        let fill = |r: Range<usize>, v: u8| {
            // SAFETY: `r` lies inside the live allocation (a part of the layout); ordered on
            // the query stream before the copies and kernels that use it.
            unsafe {
                cudarc::driver::result::memset_d8_async(
                    base + r.start as u64,
                    v,
                    r.len(),
                    self.stream.cu_stream(),
                )
            }
            .map_err(cuda("filling device memory"))
        };
        let ev = |e: &CudaEvent, s: &CudaStream| e.record(s).map_err(cuda("recording an event"));
        let wait = |s: &CudaStream, e: &CudaEvent| s.wait(e).map_err(cuda("waiting for an event"));

        let queued = (|| -> Result<(Instant, Instant)> {
            fill(l.ff.clone(), 0xFF)?;
            fill(l.n..l.n + 8, 0)?;
            fill(l.zero.clone(), 0)?;
            // The copy stream writes the allocation the query stream made and filled.
            ev(ready, &self.stream)?;
            wait(copy, ready)?;
            ev(&marks[0], copy)?;
            {
                let staged = stage.as_slice().map_err(cuda("reading pinned memory"))?;
                // SAFETY: the staged tables lie in the page-locked staging buffer, not touched
                // again until this call has drained the copy stream; the destination is the
                // allocation's table part, of the same length.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(
                        base + l.tables.start as u64,
                        &staged[..l.tables.len()],
                        copy.cu_stream(),
                    )
                }
                .map_err(cuda("copying to the device"))?;
            }
            for (i, &(_, h)) in hosts[..fact_from].iter().enumerate() {
                shipped += ship(h, l.words[i], 0..h.layout.table.len())?;
            }
            ev(&arrived[0], copy)?;
            for (r, e) in ranges.iter().zip(&arrived[1..]) {
                for (i, &(_, h)) in hosts.iter().enumerate().skip(fact_from) {
                    shipped += ship(h, l.words[i], r.clone())?;
                }
                ev(e, copy)?;
            }
            ev(&marks[1], copy)?;
            let t_copies = Instant::now();

            wait(&self.stream, &arrived[0])?;
            let qs = base + l.qs as u64;
            for (i, (d, f)) in dim_tables.iter().zip(&builds).enumerate() {
                self.launch_build(f, &prog, p, i, d, &tables[i], qs)?;
            }
            let sums = base + l.zero.start as u64;
            let counts = sums + 8 * groups.max(1) as u64;
            for (r, e) in ranges.iter().zip(&arrived[1..]) {
                wait(&self.stream, e)?;
                self.launch_probe(
                    &probe,
                    &prog,
                    p,
                    &fact_table,
                    &tables,
                    r.clone(),
                    [sums, counts, qs],
                )?;
            }
            // SAFETY: the aggregate holds `n_groups` sums and counts, `out` 3 * `n_groups`
            // values and `n` one u32 (the layout); the allocation outlives the drained streams.
            unsafe {
                self.launch_compact(
                    [sums, counts],
                    n_groups,
                    base + l.out as u64,
                    base + l.n as u64,
                )
            }?;
            {
                let back = stage
                    .as_mut_slice()
                    .map_err(cuda("mapping pinned host memory"))?;
                // SAFETY: `first .. first + read_len` lies inside the allocation (the status
                // words to the first READ_GROUPS triples, the layout) and the staging buffer
                // holds `read_at + read_len` bytes; the host reads them after the wait below.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut back[read_at..read_at + read_len],
                        base + first as u64,
                        self.stream.cu_stream(),
                    )
                }
                .map_err(cuda("copying from the device"))?;
            }
            ev(&marks[2], &self.stream)?;
            self.synchronize()?;
            Ok((t_copies, Instant::now()))
        })();
        // Nothing queued may outlive the allocation, whatever happened above.
        let drained = copy
            .synchronize()
            .map_err(cuda("waiting for the copies"))
            .and_then(|()| self.synchronize());
        let (t_copies, t_done) = queued?;
        drained?;

        // Every check the resident path makes, in its order: each build's columns' chunk
        // reports, the probe's columns', the query status, then the groups.
        let back = stage.as_slice().map_err(cuda("reading pinned memory"))?;
        let back = &back[read_at..read_at + read_len];
        let word =
            |at: usize, n: usize| -> Vec<u64> { words_of(&back[at - first..]).take(n).collect() };
        let mut i = 0usize;
        for t in dim_tables.iter().chain(std::iter::once(&fact_table)) {
            for (n, c) in &t.columns {
                column_status(n, c, &word(l.status[i], c.counts.len()))?;
                i += 1;
            }
        }
        query_status(word(l.qs, 1)[0], &p.name)?;
        let reached = word(l.n, 1)[0] as u32 as usize;
        if reached > groups {
            return Err(Error::Gpu(format!(
                "{reached} groups reached of {groups}: the compaction overran"
            )));
        }
        let result = if reached <= READ_GROUPS {
            groups_from(&word(l.out, 3 * reached))
        } else {
            let out = self.view::<u64>(&arena, l.out, 3 * reached)?;
            let mut host = vec![0u64; 3 * reached];
            self.download(&out, &mut host)?;
            groups_from(&host)
        };
        drop((dim_tables, fact_table, tables, arena));
        let t_end = Instant::now();
        let ms = |a: Instant, b: Instant| b.duration_since(a).as_secs_f64() * 1e3;
        let span = |a: &CudaEvent, b: &CudaEvent| {
            a.elapsed_ms(b)
                .map(f64::from)
                .map_err(cuda("reading an event timer"))
        };
        cx.last = Some(CoprocPhases {
            queue_ms: ms(t0, t_copies),
            copy_ms: span(&cx.marks[0], &cx.marks[1])?,
            tail_ms: span(&cx.marks[1], &cx.marks[2])?,
            finish_ms: ms(t_done, t_end),
            wall_ms: ms(t0, t_end),
        });
        Ok((result, shipped))
    }
}

#[cfg(test)]
mod tests {
    use super::piece_ranges;

    #[test]
    fn pieces_cover_every_chunk_once_and_end_small() {
        for chunks in 0..300usize {
            for pieces in [1usize, 2, 3, 4, 5, 7, 8, 16, 64, 1000] {
                let r = piece_ranges(chunks, pieces);
                assert_eq!(r.len(), pieces.clamp(1, chunks.max(1)), "{chunks} {pieces}");
                let mut at = 0;
                for x in &r {
                    assert_eq!(x.start, at, "{chunks} {pieces}: {r:?}");
                    assert!(x.end >= x.start);
                    at = x.end;
                }
                assert_eq!(at, chunks, "{chunks} {pieces}: {r:?}");
                // Never an empty piece, none more than about twice the next, and the last
                // one chunk when there is room for the halving.
                let sizes: Vec<usize> = r.iter().map(|x| x.len()).collect();
                if chunks > 0 {
                    assert!(sizes.iter().all(|&s| s > 0), "{chunks} {pieces}: {sizes:?}");
                }
                for w in sizes.windows(2) {
                    assert!(w[0] <= 2 * w[1] + 3, "{chunks} {pieces}: {sizes:?}");
                }
                if pieces > 1 && chunks >= 2 * pieces && chunks < (1 << pieces.min(20)) - 1 {
                    assert_eq!(sizes.last(), Some(&1), "{chunks} {pieces}: {sizes:?}");
                }
            }
        }
        assert_eq!(
            piece_ranges(115, 16)
                .iter()
                .map(|x| x.len())
                .collect::<Vec<_>>(),
            [8, 8, 8, 9, 8, 8, 9, 8, 8, 9, 8, 8, 9, 4, 2, 1]
        );
        assert_eq!(
            piece_ranges(37, 3)
                .iter()
                .map(|x| x.len())
                .collect::<Vec<_>>(),
            [22, 10, 5]
        );
        let one = piece_ranges(115, 1);
        assert_eq!((one.len(), one[0].clone()), (1, 0..115));
    }
}
