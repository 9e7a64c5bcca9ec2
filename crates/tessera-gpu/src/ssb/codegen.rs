//! Emits a query's kernels from the operators of `kernels/ssb/ops.cuh`: one build kernel per
//! join and one probe kernel per query, each a straight composition of operator calls in the
//! plan's order (module docs of [`super`]). The emitted text is compiled by NVRTC once per
//! process and text ([`crate::kernels::compile_generated`]).
//!
//! Parameters, in order (the executor passes them so):
//! - build: per column read (filters, then the key, then the payload, each once) its words,
//!   chunk table and status; then `tiles_per_chunk, total_tiles, ht, bits, base, card, qs`;
//! - probe: per fact column read (each once) its words, chunk table and status; per join its
//!   table and bits; then `tiles_per_chunk, total_tiles, sums, counts, n_groups, qs`.

use std::fmt::Write as _;

use super::plan::{Aggregate, DimJoin, Filter, QueryPlan};

/// The file name generated programs compile as (their `#include "ops.cuh"` resolves from it).
pub const GENERATED_FILE: &str = "ssb/generated.cu";

/// A generated kernel: its text and the columns whose buffers it takes, in parameter order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub source: String,
    pub columns: Vec<String>,
}

/// The first lines of every kernel: the warp's RFOR storage (ops.cuh).
const PROLOGUE: &str =
    "__shared__ SsbWarpStorage ssb_ws[SSB_WARPS];\n    SsbWarpStorage* ssb_s = &ssb_ws[threadIdx.x >> 5];\n";

fn predicate(f: &Filter) -> String {
    let terms: Vec<String> = f
        .ranges
        .iter()
        .filter(|(lo, hi)| lo <= hi)
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("x == {lo}u")
            } else {
                format!("x - {lo}u <= {}u", hi - lo)
            }
        })
        .collect();
    if terms.is_empty() {
        "false".into()
    } else {
        terms.join(" || ")
    }
}

/// The register array a column is loaded into, adding it to `cols` on first use.
fn slot(cols: &mut Vec<String>, name: &str) -> (usize, bool) {
    match cols.iter().position(|c| c == name) {
        Some(i) => (i, false),
        None => {
            cols.push(name.to_string());
            (cols.len() - 1, true)
        }
    }
}

/// How the generated kernels load a column's tiles (`ops.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    /// `SsbLoad` everywhere: one non-inlined loader that switches on each chunk's codec.
    Generic,
    /// `SsbLoadAs<CODEC, false>` for a column of one codec: a call of that codec's own loader
    /// (no switch); `SsbLoad` for a column of mixed codecs.
    Call,
    /// `SsbLoadAs<CODEC, true>` for a column of one codec: the codec's loader expanded at the
    /// load (no switch, no call); `SsbLoad` for a column of mixed codecs.
    Inline,
    /// As [`Loader::Inline`], and the probe kernel prefetches the tiles ahead of the warp's
    /// (`SsbPrefetchMeta`, `SsbPrefetchData` in `ops.cuh`): per column of one codec, the L2
    /// prefetch of the payload of the warp's next tile and the load of the block_starts entries
    /// of the one after, so that a tile's dependent loads find their lines on chip. Not the
    /// default: on an H200 the prefetches added more instructions (and, for tiles that late
    /// materialization skips, more DRAM traffic) than the waits they hid (docs/gpu/ssb.md).
    Prefetch,
    /// As [`Loader::Inline`], and a join whose fact key is a column of RFOR chunks that no
    /// other step reads probes once per run, not per row (`SsbProbeRuns` in `ops.cuh`): the
    /// tile's runs are decoded, each run's key probed, and each row given its run's result.
    /// Such a join that only filters (no group key) on a filtered dimension is probed ahead of
    /// the fact filters.
    Runs,
    /// As [`Loader::Runs`], with those run probes moved ahead of the fact filters and the other
    /// joins: their cost does not fall with the rows that still pass, while later steps load
    /// only the blocks that hold passing rows (every step is a conjunct, so the order does not
    /// change a result).
    RunsFirst,
    /// As [`Loader::RunsFirst`], and the per-row probes read the first slots of a stripe's
    /// four rows together (`SsbProbe4`), not one after another.
    RunsBatch,
    /// As [`Loader::Runs`], and the FOR loader takes each value of a block whose bit_width
    /// divides 32 from one shuffled word, not two (`SSB_FOR_LEAN` in `ops.cuh`). Not the
    /// default: measured no faster on an H200 (decision 0031).
    Lean,
    /// As [`Loader::Runs`], and the FOR loader requests the packed words of all the tile's
    /// blocks that hold rows before it unpacks any (`SSB_FOR_BATCH` in `ops.cuh`): one memory
    /// round trip a tile for them instead of one a block. 1.08x faster than `runs` over the 13
    /// queries on an H200 (docs/gpu/ssb.md); the default before [`Loader::Lanes`], and what
    /// `lanes` programs use for columns without a resident copy (coprocessor mode).
    Batch,
    /// As [`Loader::Batch`], and a column whose FOR tiles were all checked when it became
    /// resident (the codec [`FOR_CHECKED`]) is loaded without the per-tile checks of its
    /// block_starts entries and blocks (`SSB_FOR_CHECKED` in `ops.cuh`): fewer instructions a
    /// tile, and the reference and bit-width loads wait on the block_starts entry alone.
    Upfront,
    /// As [`Loader::Batch`], and a FOR load that comes after a filter or a probe (the rows
    /// still passing are then few) takes the sparse path when the warp's tile holds at most
    /// [`SPARSE_MAX`] passing rows: each lane extracts its own passing values from the packed
    /// words, with no warp unpack (`SSB_FOR_SPARSE` in `ops.cuh`).
    Sparse,
    /// [`Loader::Upfront`] with the sparse FOR path of [`Loader::Sparse`].
    SparseUpfront,
    /// As [`Loader::Batch`], and each column with a resident copy (`super::lanes`, made at
    /// upload) is read from it: a column of FOR chunks from its lane layout, each lane
    /// unpacking its own rows with shifts known when the program compiles, one case a
    /// bit_width from the column's smallest to its largest (`SsbLoadLanes` in `ops.cuh`); a
    /// column of RFOR chunks from its run-start layout, a row's run found by a popcount of the
    /// tile's run-start flags (`SsbProbeRunStarts`). Compressed 1.34x faster than `batch`
    /// over the 13 queries on an H200 (docs/gpu/ssb.md); the default before
    /// [`Loader::LanesVote`].
    Lanes,
    /// As [`Loader::Lanes`], and a run-start probe where at most [`VOTE_ITEMS`] items (32
    /// rows, one a lane) hold a passing row (a warp vote) looks up only those rows' runs
    /// instead of every run of the tile (`SSB_LANES_VOTE` in `ops.cuh`). The default
    /// (docs/gpu/ssb.md has the measurements).
    LanesVote,
}

/// The most items (of a tile's 16) holding a passing row for which a [`Loader::LanesVote`]
/// run-start probe looks up the rows' runs one item at a time rather than every run of the
/// tile: a tile holds about 128 runs at SF 20, four probes a lane plus the read-back of 16
/// items (about 250 instructions a lane), against about 30 an item probed on its own.
pub const VOTE_ITEMS: u32 = 4;

/// The most passing rows (of a tile's 512) for which [`Loader::Sparse`] takes the sparse FOR
/// path in a tile of mixed bit_widths. By the SASS of q1.1's probe kernel (docs/gpu/ssb.md), a
/// mixed block's warp unpack costs about 75 warp instructions, the sparse path about 19 an
/// item (32 rows of one stripe across the lanes) that holds a passing row and 2 one that holds
/// none: 32 rows spread over a tile leave about 14 of its 16 items with one, near where the two
/// meet; fewer rows, fewer items.
pub const SPARSE_MAX: u32 = 32;

/// [`SPARSE_MAX`] for a tile whose blocks all have four equal bit_widths: their warp unpack
/// costs about 34 warp instructions a block (no per-miniblock widths), so the sparse path pays
/// only when about 7 or fewer of the 16 items hold a passing row.
pub const SPARSE_MAX_EQUAL: u32 = 8;

/// The codec [`Codecs`] gives a column of FOR chunks whose every tile passed the FOR loader's
/// checks when it became resident (`Gpu::ssb_upload_column`): loaded as `SSB_FOR_CHECKED` by
/// [`Loader::Upfront`], as FOR by every other loader. Never a chunk's codec.
pub const FOR_CHECKED: u32 = 4;

/// The codec of a chunk in the lane layout (`SsbChunk::codec` of a lane-layout copy,
/// `SSB_FOR_LANES` in `ops.cuh`); [`Codecs`] gives such a column [`lanes_code`].
pub const FOR_LANES: u32 = 5;

/// The codec of a chunk in the run-start layout (a resident copy of an RFOR column,
/// `SSB_RFOR_STARTS` in `ops.cuh`), which [`Loader::Lanes`] programs read for RFOR columns.
pub const RFOR_STARTS: u32 = 6;

/// What [`Codecs`] gives a column read in the lane layout whose tiles' bit_widths lie in
/// `lo..=hi`: [`FOR_LANES`] with the range in bits 8-15 and 16-23.
pub fn lanes_code(lo: u32, hi: u32) -> u32 {
    FOR_LANES | (lo.min(32) << 8) | (hi.min(32) << 16)
}

/// The bit_width range of a [`lanes_code`], or None for another codec.
fn lanes_range(codec: Option<u32>) -> Option<(u32, u32)> {
    let c = codec?;
    (c & 0xFF == FOR_LANES).then_some(((c >> 8) & 0xFF, (c >> 16) & 0xFF))
}

impl Loader {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "generic" => Some(Self::Generic),
            "call" => Some(Self::Call),
            "inline" => Some(Self::Inline),
            "pf" => Some(Self::Prefetch),
            "runs" => Some(Self::Runs),
            "runsfirst" => Some(Self::RunsFirst),
            "runsb" => Some(Self::RunsBatch),
            "lean" => Some(Self::Lean),
            "batch" => Some(Self::Batch),
            "upfront" => Some(Self::Upfront),
            "sparse" => Some(Self::Sparse),
            "sparseup" => Some(Self::SparseUpfront),
            "lanes" => Some(Self::Lanes),
            "lanesv" => Some(Self::LanesVote),
            _ => None,
        }
    }
    /// Programs of this loader probe a join per run where its fact key allows it
    /// (`SsbProbeRuns`): `runs` and every loader built on it.
    fn probes_per_run(self) -> bool {
        matches!(
            self,
            Self::Runs
                | Self::RunsFirst
                | Self::RunsBatch
                | Self::Lean
                | Self::Batch
                | Self::Upfront
                | Self::Sparse
                | Self::SparseUpfront
                | Self::Lanes
                | Self::LanesVote
        )
    }
    /// Programs of this loader read FOR and RFOR columns from their resident copies.
    pub fn lanes(self) -> bool {
        matches!(self, Self::Lanes | Self::LanesVote)
    }
    /// Programs of this loader take the sparse FOR path where a load allows it.
    fn sparse(self) -> bool {
        matches!(self, Self::Sparse | Self::SparseUpfront)
    }
    /// Programs of this loader read FOR columns checked at upload without the checks.
    fn upfront(self) -> bool {
        matches!(self, Self::Upfront | Self::SparseUpfront)
    }
    /// The name [`LOADER_ENV`] takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Generic => "generic",
            Self::Call => "call",
            Self::Inline => "inline",
            Self::Prefetch => "pf",
            Self::Runs => "runs",
            Self::RunsFirst => "runsfirst",
            Self::RunsBatch => "runsb",
            Self::Lean => "lean",
            Self::Batch => "batch",
            Self::Upfront => "upfront",
            Self::Sparse => "sparse",
            Self::SparseUpfront => "sparseup",
            Self::Lanes => "lanes",
            Self::LanesVote => "lanesv",
        }
    }
}

/// How a program is generated: the loader and the thread blocks per SM its kernels are
/// compiled to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub loader: Loader,
    pub min_blocks: u32,
}

impl Options {
    /// [`LOADER`] and [`MIN_BLOCKS`], each overridden by its environment variable
    /// ([`LOADER_ENV`], [`MIN_BLOCKS_ENV`]) when that holds a valid value.
    pub fn from_env() -> Self {
        Options {
            loader: std::env::var(LOADER_ENV)
                .ok()
                .and_then(|v| Loader::parse(&v))
                .unwrap_or(LOADER),
            min_blocks: min_blocks(),
        }
    }
    /// `loader:min_blocks`, e.g. `inline:8` (the form `tessera-bench ssb --variants` takes).
    pub fn parse(s: &str) -> Option<Self> {
        let (l, m) = s.split_once(':')?;
        let min_blocks = m.parse::<u32>().ok().filter(|n| (1..=16).contains(n))?;
        Some(Options {
            loader: Loader::parse(l)?,
            min_blocks,
        })
    }
}

impl std::fmt::Display for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.loader.name(), self.min_blocks)
    }
}

/// Which table a column belongs to, for [`Codecs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side<'a> {
    /// A dimension table, by name.
    Dim(&'a str),
    /// The fact table.
    Fact,
}

/// The codec every chunk of a column has (`SsbChunk::codec`: 0 plain, 1 FOR, 2 DFOR, 3 RFOR;
/// or [`FOR_CHECKED`], FOR checked at upload; or, for [`Loader::Lanes`] programs, a
/// [`lanes_code`] or [`RFOR_STARTS`], the column's resident copy), or `None` when its chunks
/// differ (or it is unknown): what the generator specializes loads to.
pub type Codecs<'a> = &'a dyn Fn(Side<'_>, &str) -> Option<u32>;

/// The `ops.cuh` name of a codec (`SsbChunk::codec`).
fn codec_name(codec: Option<u32>) -> Option<&'static str> {
    codec.and_then(|c| match c {
        0 => Some("SSB_PLAIN"),
        1 => Some("SSB_FOR"),
        2 => Some("SSB_DFOR"),
        3 => Some("SSB_RFOR"),
        FOR_CHECKED => Some("SSB_FOR_CHECKED"),
        RFOR_STARTS => Some("SSB_RFOR_STARTS"),
        _ => None,
    })
}

/// `sparse`: the load comes after a step that may have cleared rows (a filter or a probe), where
/// a sparse loader ([`Loader::Sparse`], [`Loader::SparseUpfront`]) lets a FOR column take the
/// sparse path.
fn load(body: &mut String, k: usize, codec: Option<u32>, loader: Loader, sparse: bool) {
    if let Some((lo, hi)) = lanes_range(codec) {
        let _ = writeln!(
            body,
            "        SsbLoadLanes<{lo}, {hi}>(w{k}, t{k}, s{k}, ci, local, pass, c{k}, ssb_s, qs);"
        );
        return;
    }
    let name = codec_name(codec);
    match (loader, name) {
        // Every loader but `generic` specializes a column of one codec.
        (l, Some(c)) if l != Loader::Generic => {
            let inline = loader != Loader::Call;
            let sparse =
                sparse && loader.sparse() && matches!(codec, Some(c) if c == 1 || c == FOR_CHECKED);
            let extra = if sparse { ", true" } else { "" };
            let _ = writeln!(
                body,
                "        SsbLoadAs<{c}, {inline}{extra}>(w{k}, t{k}, s{k}, ci, local, pass, c{k}, ssb_s, qs);"
            );
        }
        _ => {
            let _ = writeln!(
                body,
                "        SsbLoad(w{k}, t{k}, s{k}, ci, local, pass, c{k}, ssb_s, qs);"
            );
        }
    }
}

fn column_params(cols: &[String]) -> String {
    cols.iter()
        .enumerate()
        .map(|(k, _)| {
            format!(
                "const u32* __restrict__ w{k}, const SsbChunk* __restrict__ t{k}, u64* __restrict__ s{k}"
            )
        })
        .collect::<Vec<_>>()
        .join(",\n    ")
}

fn registers(cols: &[String], skip: &[usize]) -> String {
    cols.iter()
        .enumerate()
        .filter(|(k, _)| !skip.contains(k))
        .map(|(k, c)| format!("        u32 c{k}[SSB_ROWS];  // {c}\n"))
        .collect()
}

/// The line that filters the rows by `f` on register array `c{k}`.
fn filter(body: &mut String, k: usize, f: &Filter) {
    let _ = writeln!(
        body,
        "        SsbFilter(c{k}, pass, [](u32 x) {{ return {}; }});  // {}",
        predicate(f),
        f.column
    );
}

/// The build kernel `ssb_build_{index}` of one join: filter the dimension's rows, insert
/// (key, payload).
pub fn build_kernel(j: &DimJoin, index: usize, codecs: Codecs<'_>, loader: Loader) -> Kernel {
    let mut cols = Vec::new();
    let mut body = String::new();
    let load = |body: &mut String, k: usize, col: &str| {
        load(body, k, codecs(Side::Dim(&j.table), col), loader, false)
    };
    for f in &j.filters {
        let (k, new) = slot(&mut cols, &f.column);
        if new {
            load(&mut body, k, &f.column);
        }
        filter(&mut body, k, f);
    }
    if !j.filters.is_empty() {
        body.push_str("        if (!SsbAny(pass)) continue;\n");
    }
    let (key, new) = slot(&mut cols, &j.key);
    if new {
        load(&mut body, key, &j.key);
    }
    let payload = match &j.payload {
        Some(g) => {
            let (k, new) = slot(&mut cols, &g.column);
            if new {
                load(&mut body, k, &g.column);
            }
            format!("c{k}")
        }
        None => {
            body.push_str("        const u32 none[SSB_ROWS] = {};\n");
            "none".into()
        }
    };
    let _ = writeln!(
        body,
        "        SsbBuild(c{key}, {payload}, pass, ht, bits, base, card, qs);"
    );
    let source = format!(
        "// Build of {table}.{key_name} for join {index}.\n\
extern \"C\" __global__ void SSB_BOUNDS ssb_build_{index}(\n    {params},\n    \
u32 tiles_per_chunk, u32 total_tiles, u64* __restrict__ ht, u32 bits, u32 base, u32 card, u64* __restrict__ qs) {{\n    \
{prologue}    \
SSB_TILE_LOOP(total_tiles) {{\n        \
const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;\n        \
u32 pass = SsbTileRows(t0, ci, local);\n{regs}{body}    }}\n}}\n",
        prologue = PROLOGUE,
        table = j.table,
        key_name = j.key,
        params = column_params(&cols),
        regs = registers(&cols, &[]),
    );
    Kernel {
        source,
        columns: cols,
    }
}

/// One step of a probe kernel: a fact filter or a join, by index.
#[derive(Clone, Copy)]
enum Step {
    Filter(usize),
    Join(usize),
}

/// The probe kernel `ssb_probe` of a query: fact filters, joins, aggregate.
pub fn probe_kernel(p: &QueryPlan, codecs: Codecs<'_>, loader: Loader) -> Kernel {
    let mut cols = Vec::new();
    let mut body = String::new();
    // A load after the first step (a filter or a probe) may find few rows still passing.
    let load = |body: &mut String, k: usize, col: &str, after_step: bool| {
        load(body, k, codecs(Side::Fact, col), loader, after_step)
    };
    let strides = p.strides();
    let names = p.aggregate.columns();
    let runs = loader.probes_per_run();
    // A join probed per run: its fact key is a column of RFOR chunks that no other step reads
    // (its row values are never formed).
    let per_run = |i: usize| {
        let key = &p.joins[i].fact_key;
        runs && matches!(codecs(Side::Fact, key), Some(3 | RFOR_STARTS))
            && !p.fact_filters.iter().any(|f| &f.column == key)
            && !p
                .joins
                .iter()
                .enumerate()
                .any(|(o, j)| o != i && &j.fact_key == key)
            && !names.iter().any(|n| n == key)
    };
    // Which joins go ahead of the fact filters. `runs`: a per-run semi-join whose dimension
    // is filtered (it only removes rows, a probe a run costs about a quarter of a row filter,
    // and later steps then load only the blocks that still hold rows); joins that carry a
    // group key stay in the plan's order, which the plans give by selectivity.
    // `runsfirst` / `runsb`: every per-run join.
    let ahead = |i: usize| match loader {
        Loader::RunsFirst | Loader::RunsBatch => per_run(i),
        l if l.probes_per_run() => {
            per_run(i) && p.joins[i].payload.is_none() && !p.joins[i].filters.is_empty()
        }
        _ => false,
    };
    let mut steps: Vec<Step> = Vec::new();
    steps.extend((0..p.joins.len()).filter(|&i| ahead(i)).map(Step::Join));
    steps.extend((0..p.fact_filters.len()).map(Step::Filter));
    steps.extend((0..p.joins.len()).filter(|&i| !ahead(i)).map(Step::Join));
    let probe = if loader == Loader::RunsBatch {
        "SsbProbe4"
    } else {
        "SsbProbe"
    };
    let mut unused = Vec::new();
    let mut after_step = false;
    for step in steps {
        match step {
            Step::Filter(fi) => {
                let f = &p.fact_filters[fi];
                let (k, new) = slot(&mut cols, &f.column);
                if new {
                    load(&mut body, k, &f.column, after_step);
                }
                filter(&mut body, k, f);
            }
            Step::Join(i) => {
                let j = &p.joins[i];
                let (k, new) = slot(&mut cols, &j.fact_key);
                if per_run(i) {
                    unused.push(k);
                    // An RFOR key read from its run-start copy (`lanes` programs).
                    let f = if codecs(Side::Fact, &j.fact_key) == Some(RFOR_STARTS) {
                        "SsbProbeRunStarts"
                    } else {
                        "SsbProbeRuns"
                    };
                    let _ = writeln!(
                        body,
                        "        {f}(w{k}, t{k}, s{k}, ci, local, pass, group, h{i}, b{i}, {}u, ssb_s, qs);  // join {}, per run",
                        strides[i], j.table
                    );
                } else {
                    if new {
                        load(&mut body, k, &j.fact_key, after_step);
                    }
                    let _ = writeln!(
                        body,
                        "        {probe}(c{k}, pass, group, h{i}, b{i}, {}u);  // join {}",
                        strides[i], j.table
                    );
                }
            }
        }
        body.push_str("        if (!SsbAny(pass)) continue;\n");
        after_step = true;
    }
    let mut regs = Vec::new();
    for n in &names {
        let (k, new) = slot(&mut cols, n);
        if new {
            load(&mut body, k, n, after_step);
        }
        regs.push(k);
    }
    let expr = match (&p.aggregate, regs.as_slice()) {
        (Aggregate::Sum(_), [a, ..]) => format!("(long long)c{a}[i]"),
        (Aggregate::SumProduct(..), [a, b, ..]) => {
            format!("(long long)c{a}[i] * (long long)c{b}[i]")
        }
        (Aggregate::SumDifference(..), [a, b, ..]) => {
            format!("(long long)c{a}[i] - (long long)c{b}[i]")
        }
        _ => "0".into(),
    };
    let value = format!("[&](u32 i) {{ return {expr}; }}");
    let single = p.groups() == 1;
    if single {
        let _ = writeln!(
            body,
            "        SsbAccumulate(pass, {value}, acc_sum, acc_count);"
        );
    } else {
        let _ = writeln!(
            body,
            "        SsbAggregate(pass, group, {value}, sums, counts, n_groups, qs);"
        );
    }
    let joins: String = (0..p.joins.len())
        .map(|i| format!(",\n    const u64* __restrict__ h{i}, u32 b{i}"))
        .collect();
    // Prefetch: per column of one codec, stage 1 (block_starts entries of the tile two ahead,
    // one register) and stage 2 (L2 prefetch of the next tile's payload), ahead of the tile's
    // work and of every `continue`.
    let (pf_init, pf_step) = if loader == Loader::Prefetch {
        let mut init = String::from(
            "    const u32 ssb_step = gridDim.x * SSB_WARPS;\n    \
const u32 ssb_first = blockIdx.x * SSB_WARPS + (threadIdx.x >> 5);\n",
        );
        let mut step = String::from(
            "        const u32 ssb_n1 = ssb_next(tile, ssb_step, total_tiles), ssb_n2 = ssb_next(ssb_n1, ssb_step, total_tiles);\n",
        );
        for (k, c) in cols.iter().enumerate() {
            if let Some(n) = codec_name(codecs(Side::Fact, c)) {
                let _ = writeln!(
                    init,
                    "    u32 pf{k} = SsbPrefetchMeta<{n}>(w{k}, t{k}, ssb_next(ssb_first, ssb_step, total_tiles), tiles_per_chunk, total_tiles);"
                );
                let _ = writeln!(
                    step,
                    "        SsbPrefetchData<{n}>(w{k}, t{k}, ssb_n1, pf{k}, tiles_per_chunk, total_tiles);\n        \
pf{k} = SsbPrefetchMeta<{n}>(w{k}, t{k}, ssb_n2, tiles_per_chunk, total_tiles);"
                );
            }
        }
        (init, step)
    } else {
        (String::new(), String::new())
    };
    let source = format!(
        "// Probe of {name}.\n\
extern \"C\" __global__ void SSB_BOUNDS ssb_probe(\n    {params}{joins},\n    \
u32 tiles_per_chunk, u32 total_tiles, unsigned long long* __restrict__ sums,\n    \
unsigned long long* __restrict__ counts, u32 n_groups, u64* __restrict__ qs) {{\n    \
{prologue}    \
unsigned long long acc_sum = 0, acc_count = 0;\n{pf_init}    \
SSB_TILE_LOOP(total_tiles) {{\n{pf_step}        \
const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;\n        \
u32 pass = SsbTileRows(t0, ci, local);\n        \
u32 group[SSB_ROWS] = {{}};\n{regs}{body}    }}\n{total}}}\n",
        prologue = PROLOGUE,
        name = p.name,
        params = column_params(&cols),
        regs = registers(&cols, &unused),
        total = if single {
            "    SsbBlockTotal(acc_sum, acc_count, sums, counts);\n"
        } else {
            "    (void)acc_sum;\n    (void)acc_count;\n"
        },
    );
    Kernel {
        source,
        columns: cols,
    }
}

/// Environment variable: thread blocks per SM the query kernels are compiled to fit (1..=16:
/// registers capped at 65536 / (128 * n)); unset, [`MIN_BLOCKS`]. A tuning knob for measuring
/// the trade between registers (spills) and occupancy on a device.
pub const MIN_BLOCKS_ENV: &str = "TESSERA_SSB_MIN_BLOCKS";

/// Thread blocks per SM by default: 8 (64 registers, a few hundred bytes of spills in the
/// largest probe kernels) ran both layouts' queries about 25% faster on an H200 than 1 (up to
/// 96 registers, no spills, 20 warps an SM): the kernels wait on memory, and more warps hide it
/// (docs/gpu/ssb.md).
pub const MIN_BLOCKS: u32 = 8;

/// Environment variable: the loader of generated kernels (`generic`, `call`, `inline`, `pf`,
/// `runs`, `runsfirst`, `runsb`, `lean`, `batch`, `upfront`, `sparse`, `sparseup`, `lanes` or
/// `lanesv`,
/// see [`Loader`]); unset, [`LOADER`].
/// A knob for measuring.
pub const LOADER_ENV: &str = "TESSERA_SSB_LOADER";

/// The loader by default (docs/gpu/ssb.md has the measurements that chose it).
pub const LOADER: Loader = Loader::LanesVote;

fn min_blocks() -> u32 {
    std::env::var(MIN_BLOCKS_ENV)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|n| (1..=16).contains(n))
        .unwrap_or(MIN_BLOCKS)
}

/// A query's program: its build kernels (`ssb_build_{i}` for join `i`) and its probe kernel
/// (`ssb_probe`) in one source, so a query costs one NVRTC compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub source: String,
    pub builds: Vec<Kernel>,
    pub probe: Kernel,
}

/// The program of `p` with no knowledge of the columns' codecs: every load goes through the
/// generic loader (`SsbLoad`), whatever the columns hold.
pub fn program(p: &QueryPlan) -> Program {
    program_with(p, &|_, _| None, Options::from_env())
}

/// The program of `p` for columns of the codecs `codecs` gives: a load of a column of one codec
/// is specialized to it as `opts.loader` says.
pub fn program_with(p: &QueryPlan, codecs: Codecs<'_>, opts: Options) -> Program {
    // Only `upfront` reads checked FOR columns unchecked; every other loader loads them as FOR.
    let checked_as_for = |side: Side<'_>, col: &str| match codecs(side, col) {
        Some(FOR_CHECKED) if !opts.loader.upfront() => Some(1),
        c => c,
    };
    let codecs: Codecs<'_> = &checked_as_for;
    let builds: Vec<Kernel> = p
        .joins
        .iter()
        .enumerate()
        .map(|(i, j)| build_kernel(j, i, codecs, opts.loader))
        .collect();
    let probe = probe_kernel(p, codecs, opts.loader);
    let sparse;
    let vote;
    let lean = match opts.loader {
        Loader::Lean => "#define SSB_FOR_LEAN 1\n",
        Loader::Batch | Loader::Upfront | Loader::Lanes => "#define SSB_FOR_BATCH 1\n",
        Loader::LanesVote => {
            vote = format!("#define SSB_FOR_BATCH 1\n#define SSB_LANES_VOTE {VOTE_ITEMS}\n");
            &vote
        }
        Loader::Sparse | Loader::SparseUpfront => {
            sparse = format!(
                "#define SSB_FOR_BATCH 1\n#define SSB_FOR_SPARSE {SPARSE_MAX}\n#define SSB_FOR_SPARSE_EQUAL {SPARSE_MAX_EQUAL}\n"
            );
            &sparse
        }
        _ => "",
    };
    let mut source = format!(
        "// The kernels of {}, emitted by src/ssb/codegen.rs from kernels/ssb/ops.cuh.\n#define SSB_MIN_BLOCKS {}\n{lean}#include \"ops.cuh\"\n",
        p.name, opts.min_blocks
    );
    for k in builds.iter().chain([&probe]) {
        source.push('\n');
        source.push_str(&k.source);
    }
    Program {
        source,
        builds,
        probe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssb::plan::test_join as join;

    /// A fact filter on `f`, joins on `fk_a` (RFOR), `fk_b` (FOR) and `fk_c` (RFOR, also
    /// aggregated), in that order.
    fn plan() -> QueryPlan {
        QueryPlan {
            name: "t".into(),
            fact_filters: vec![Filter::between("f", 1, 3)],
            joins: vec![join("a", Some(7)), join("b", None), join("c", None)],
            group: vec![0],
            aggregate: Aggregate::Sum("fk_c".into()),
        }
    }

    /// `runs` probes a filtered semi-join on an RFOR key ahead of the fact filters; one that
    /// carries a group key, or whose dimension is not filtered, stays in the plan's order.
    #[test]
    fn runs_probe_a_filtered_semi_join_ahead_of_the_fact_filters() {
        let mut p = plan();
        p.joins.push(DimJoin {
            fact_key: "fk_d".into(),
            table: "d".into(),
            key: "k".into(),
            filters: vec![Filter::between("y", 1993, 1993)],
            payload: None,
        });
        p.joins.push(DimJoin {
            fact_key: "fk_e".into(),
            table: "e".into(),
            key: "k".into(),
            filters: vec![],
            payload: None,
        });
        let rfor = |_: Side<'_>, col: &str| Some(if col == "fk_b" { 1 } else { 3 });
        let k = probe_kernel(&p, &rfor, Loader::Runs);
        let joins: Vec<&str> = k
            .source
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("SsbFilter") || l.starts_with("SsbProbe"))
            .filter_map(|l| l.split("// ").nth(1))
            .collect();
        assert_eq!(
            joins,
            [
                "join d, per run",
                "f",
                "join a, per run",
                "join b",
                "join c",
                "join e, per run"
            ]
        );
    }

    fn codecs(_: Side<'_>, col: &str) -> Option<u32> {
        Some(if col == "fk_a" || col == "fk_c" { 3 } else { 1 })
    }

    /// The probe kernel's steps, in order: the operator names of its body lines.
    fn steps(loader: Loader) -> Vec<String> {
        steps_with(&codecs, loader)
    }

    /// [`steps`] over the columns' codecs `codecs` gives; a per-run probe of a run-start copy
    /// (`SsbProbeRunStarts`) counts as `SsbProbeRuns`, the step it takes the place of.
    fn steps_with(codecs: Codecs<'_>, loader: Loader) -> Vec<String> {
        let k = probe_kernel(&plan(), codecs, loader);
        k.source
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let ops = [
                    "SsbFilter",
                    "SsbProbeRuns",
                    "SsbProbeRunStarts",
                    "SsbProbe4",
                    "SsbProbe(",
                ];
                ops.iter()
                    .find(|op| l.starts_with(*op))
                    .map(|_| l.split('(').next().unwrap_or_default())
                    .map(|op| op.replace("SsbProbeRunStarts", "SsbProbeRuns"))
            })
            .collect()
    }

    /// Each loader's program defines the switches `ops.cuh` reads, and a name parses back.
    #[test]
    fn loader_switches_and_names() {
        let opts = |loader| Options {
            loader,
            min_blocks: 8,
        };
        let src = |loader| program_with(&plan(), &codecs, opts(loader)).source;
        assert!(src(Loader::Batch).contains("#define SSB_FOR_BATCH 1\n"));
        assert!(!src(Loader::Runs).contains("SSB_FOR_BATCH"));
        assert!(src(Loader::Lean).contains("#define SSB_FOR_LEAN 1\n"));
        assert_eq!(Options::parse("batch:8"), Some(opts(Loader::Batch)));
        assert_eq!(opts(Loader::Batch).to_string(), "batch:8");
        assert!(src(Loader::Upfront).contains("#define SSB_FOR_BATCH 1\n"));
        assert_eq!(
            Options::parse("upfront:12"),
            Some(Options {
                loader: Loader::Upfront,
                min_blocks: 12
            })
        );
    }

    /// A FOR column checked at upload is loaded unchecked by `upfront` only; every other
    /// loader, and a column not checked, gets the FOR loader with its checks.
    #[test]
    fn only_upfront_loads_checked_for_columns_unchecked() {
        let checked = |_: Side<'_>, col: &str| match col {
            "fk_a" | "fk_c" => Some(3),
            "f" => Some(FOR_CHECKED),
            _ => Some(1),
        };
        let opts = |loader| Options {
            loader,
            min_blocks: 8,
        };
        let up = program_with(&plan(), &checked, opts(Loader::Upfront)).source;
        assert!(up.contains("SsbLoadAs<SSB_FOR_CHECKED, true>(w0,"), "{up}");
        // fk_b: FOR, not checked.
        assert!(up.contains("SsbLoadAs<SSB_FOR, true>"), "{up}");
        for loader in [Loader::Batch, Loader::Runs, Loader::Prefetch, Loader::Call] {
            let src = program_with(&plan(), &checked, opts(loader)).source;
            assert!(!src.contains("SSB_FOR_CHECKED"), "{loader:?}: {src}");
        }
        // Same steps as `batch` otherwise.
        assert_eq!(steps(Loader::Upfront), steps(Loader::Batch));
    }

    /// `lanes` reads a column's resident copy: a lane-layout FOR column as `SsbLoadLanes` with
    /// its bit_width range, a run-start RFOR key by `SsbProbeRunStarts`, per run where `batch`
    /// probes the RFOR key per run; the steps are `batch`'s.
    #[test]
    fn lanes_loads_resident_copies() {
        let copies = |_: Side<'_>, col: &str| match col {
            "fk_a" | "fk_c" => Some(RFOR_STARTS),
            "f" => Some(lanes_code(4, 6)),
            _ => Some(1),
        };
        let o = Options {
            loader: Loader::Lanes,
            min_blocks: 8,
        };
        let src = program_with(&plan(), &copies, o).source;
        assert!(src.contains("#define SSB_FOR_BATCH 1\n"), "{src}");
        assert!(src.contains("SsbLoadLanes<4, 6>(w0,"), "{src}");
        assert!(src.contains("SsbProbeRunStarts(w"), "{src}");
        assert!(!src.contains("SsbProbeRuns("), "{src}");
        // fk_b: FOR without a copy, the batched FOR loader.
        assert!(src.contains("SsbLoadAs<SSB_FOR, true>"), "{src}");
        assert_eq!(lanes_range(Some(lanes_code(0, 32))), Some((0, 32)));
        assert_eq!(lanes_range(Some(1)), None);
        assert_eq!(Options::parse("lanes:8"), Some(o));
        assert_eq!(o.to_string(), "lanes:8");
        assert_eq!(steps_with(&copies, Loader::Lanes), steps(Loader::Batch));
        // `lanesv`: the same program with the vote skips switched on.
        let v = Options {
            loader: Loader::LanesVote,
            ..o
        };
        let vsrc = program_with(&plan(), &copies, v).source;
        let define = format!("#define SSB_LANES_VOTE {VOTE_ITEMS}\n");
        assert!(vsrc.contains(&define), "{vsrc}");
        assert!(!src.contains("SSB_LANES_VOTE"), "{src}");
        assert_eq!(vsrc.replace(&define, ""), src);
        assert_eq!(Options::parse("lanesv:8"), Some(v));
        assert!(Loader::LanesVote.lanes());
    }

    /// The sparse loaders allow the sparse FOR path only at FOR loads after the first step
    /// (a filter or a probe); the first load and loads of other codecs are as `batch`'s, and
    /// the steps are `batch`'s.
    #[test]
    fn sparse_loads_only_for_columns_after_a_step() {
        let opts = |loader| Options {
            loader,
            min_blocks: 8,
        };
        let loads = |src: &str| -> Vec<String> {
            src.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("SsbLoadAs<"))
                .map(|l| l.split('(').next().unwrap_or_default().to_string())
                .collect()
        };
        // The probe kernel of plan(): f (FOR, the first step's), fk_b (FOR, after a step), then
        // fk_c (RFOR, aggregated).
        let sparse = program_with(&plan(), &codecs, opts(Loader::Sparse));
        assert!(sparse.source.contains(&format!(
            "#define SSB_FOR_BATCH 1\n#define SSB_FOR_SPARSE {SPARSE_MAX}\n#define SSB_FOR_SPARSE_EQUAL {SPARSE_MAX_EQUAL}\n"
        )));
        assert_eq!(
            loads(&sparse.probe.source),
            [
                "SsbLoadAs<SSB_FOR, true>",
                "SsbLoadAs<SSB_FOR, true, true>",
                "SsbLoadAs<SSB_RFOR, true>"
            ]
        );
        // Build kernels never take it.
        assert!(sparse
            .builds
            .iter()
            .all(|b| !b.source.contains(", true, true>")));
        let checked = |_: Side<'_>, col: &str| match col {
            "fk_a" | "fk_c" => Some(3),
            _ => Some(FOR_CHECKED),
        };
        let up = program_with(&plan(), &checked, opts(Loader::SparseUpfront));
        assert_eq!(
            loads(&up.probe.source),
            [
                "SsbLoadAs<SSB_FOR_CHECKED, true>",
                "SsbLoadAs<SSB_FOR_CHECKED, true, true>",
                "SsbLoadAs<SSB_RFOR, true>"
            ]
        );
        // `sparse` reads checked columns with the checks, as `batch` does.
        let src = program_with(&plan(), &checked, opts(Loader::Sparse)).source;
        assert!(!src.contains("SSB_FOR_CHECKED"), "{src}");
        // Plain columns: no sparse load.
        let plain = program_with(&plan(), &|_, _| Some(0), opts(Loader::Sparse)).source;
        assert!(!plain.contains(", true, true>"), "{plain}");
        assert_eq!(steps(Loader::Sparse), steps(Loader::Batch));
        assert_eq!(steps(Loader::SparseUpfront), steps(Loader::Batch));
        for (name, loader) in [
            ("sparse:8", Loader::Sparse),
            ("sparseup:8", Loader::SparseUpfront),
        ] {
            assert_eq!(Options::parse(name), Some(opts(loader)));
            assert_eq!(opts(loader).to_string(), name);
        }
    }

    #[test]
    fn only_an_rfor_key_no_other_step_reads_is_probed_per_run() {
        assert_eq!(
            steps(Loader::Inline),
            ["SsbFilter", "SsbProbe", "SsbProbe", "SsbProbe"]
        );
        // fk_c is RFOR but aggregated: its rows are needed, so it is probed per row.
        assert_eq!(
            steps(Loader::Runs),
            ["SsbFilter", "SsbProbeRuns", "SsbProbe", "SsbProbe"]
        );
        assert_eq!(
            steps(Loader::RunsFirst),
            ["SsbProbeRuns", "SsbFilter", "SsbProbe", "SsbProbe"]
        );
        assert_eq!(
            steps(Loader::RunsBatch),
            ["SsbProbeRuns", "SsbFilter", "SsbProbe4", "SsbProbe4"]
        );
        // `batch` orders the steps as `runs` does; only the FOR loader differs.
        assert_eq!(steps(Loader::Batch), steps(Loader::Runs));
        // Plain columns: nothing per run, whatever the loader.
        let plain = probe_kernel(&plan(), &|_, _| Some(0), Loader::RunsFirst);
        assert!(!plain.source.contains("SsbProbeRuns"));
        // The per-run key's registers are not declared; its buffers are still parameters.
        let k = probe_kernel(&plan(), &codecs, Loader::Runs);
        assert!(k.columns.contains(&"fk_a".to_string()));
        let slot = k.columns.iter().position(|c| c == "fk_a").expect("fk_a");
        assert!(!k.source.contains(&format!("u32 c{slot}[SSB_ROWS]")));
        assert!(k
            .source
            .contains(&format!("SsbProbeRuns(w{slot}, t{slot}, s{slot},")));
    }
}
