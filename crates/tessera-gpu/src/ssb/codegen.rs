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

fn load(body: &mut String, k: usize) {
    let _ = writeln!(
        body,
        "        SsbLoad(w{k}, t{k}, s{k}, ci, local, c{k}, qs);"
    );
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

fn registers(cols: &[String]) -> String {
    cols.iter()
        .enumerate()
        .map(|(k, c)| format!("        u32 c{k}[TS_ITEMS];  // {c}\n"))
        .collect()
}

/// The build kernel `ssb_build_{index}` of one join: filter the dimension's rows, insert
/// (key, payload).
pub fn build_kernel(j: &DimJoin, index: usize) -> Kernel {
    let mut cols = Vec::new();
    let mut body = String::new();
    for f in &j.filters {
        let (k, new) = slot(&mut cols, &f.column);
        if new {
            load(&mut body, k);
        }
        let _ = writeln!(
            body,
            "        SsbFilter(c{k}, flags, [](u32 x) {{ return {}; }});  // {}",
            predicate(f),
            f.column
        );
    }
    if !j.filters.is_empty() {
        body.push_str("        if (!SsbAny(flags)) continue;\n");
    }
    let (key, new) = slot(&mut cols, &j.key);
    if new {
        load(&mut body, key);
    }
    let payload = match &j.payload {
        Some(g) => {
            let (k, new) = slot(&mut cols, &g.column);
            if new {
                load(&mut body, k);
            }
            format!("c{k}")
        }
        None => {
            body.push_str("        const u32 none[TS_ITEMS] = {0, 0, 0, 0};\n");
            "none".into()
        }
    };
    let _ = writeln!(
        body,
        "        SsbBuild(c{key}, {payload}, flags, ht, bits, base, card, qs);"
    );
    let source = format!(
        "// Build of {table}.{key_name} for join {index}.\n\
extern \"C\" __global__ void __launch_bounds__(TS_THREADS) ssb_build_{index}(\n    {params},\n    \
u32 tiles_per_chunk, u32 total_tiles, u64* __restrict__ ht, u32 bits, u32 base, u32 card, u64* __restrict__ qs) {{\n    \
for (u32 tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {{\n        \
const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;\n        \
u32 flags[TS_ITEMS], group[TS_ITEMS];\n{regs}        \
SsbInit(SsbTileRows(t0, ci, local), flags, group);\n{body}    }}\n}}\n",
        table = j.table,
        key_name = j.key,
        params = column_params(&cols),
        regs = registers(&cols),
    );
    Kernel {
        source,
        columns: cols,
    }
}

/// The probe kernel `ssb_probe` of a query: fact filters, joins, aggregate.
pub fn probe_kernel(p: &QueryPlan) -> Kernel {
    let mut cols = Vec::new();
    let mut body = String::new();
    let strides = p.strides();
    for f in &p.fact_filters {
        let (k, new) = slot(&mut cols, &f.column);
        if new {
            load(&mut body, k);
        }
        let _ = writeln!(
            body,
            "        SsbFilter(c{k}, flags, [](u32 x) {{ return {}; }});  // {}",
            predicate(f),
            f.column
        );
        body.push_str("        if (!SsbAny(flags)) continue;\n");
    }
    for (i, j) in p.joins.iter().enumerate() {
        let (k, new) = slot(&mut cols, &j.fact_key);
        if new {
            load(&mut body, k);
        }
        let _ = writeln!(
            body,
            "        SsbProbe(c{k}, flags, group, h{i}, b{i}, {}u);  // join {}",
            strides[i], j.table
        );
        body.push_str("        if (!SsbAny(flags)) continue;\n");
    }
    let names = p.aggregate.columns();
    let mut regs = Vec::new();
    for n in &names {
        let (k, new) = slot(&mut cols, n);
        if new {
            load(&mut body, k);
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
    let _ = writeln!(
        body,
        "        long long value[TS_ITEMS];\n#pragma unroll\n        for (u32 i = 0; i < TS_ITEMS; ++i) value[i] = {expr};"
    );
    let single = p.groups() == 1;
    if single {
        body.push_str("        SsbAccumulate(flags, value, acc_sum, acc_count);\n");
    } else {
        body.push_str("        SsbAggregate(flags, group, value, sums, counts, n_groups, qs);\n");
    }
    let joins: String = (0..p.joins.len())
        .map(|i| format!(",\n    const u64* __restrict__ h{i}, u32 b{i}"))
        .collect();
    let source = format!(
        "// Probe of {name}.\n\
extern \"C\" __global__ void __launch_bounds__(TS_THREADS) ssb_probe(\n    {params}{joins},\n    \
u32 tiles_per_chunk, u32 total_tiles, unsigned long long* __restrict__ sums,\n    \
unsigned long long* __restrict__ counts, u32 n_groups, u64* __restrict__ qs) {{\n    \
unsigned long long acc_sum = 0, acc_count = 0;\n    \
for (u32 tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {{\n        \
const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;\n        \
u32 flags[TS_ITEMS], group[TS_ITEMS];\n{regs}        \
SsbInit(SsbTileRows(t0, ci, local), flags, group);\n{body}    }}\n{total}}}\n",
        name = p.name,
        params = column_params(&cols),
        regs = registers(&cols),
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

/// A query's program: its build kernels (`ssb_build_{i}` for join `i`) and its probe kernel
/// (`ssb_probe`) in one source, so a query costs one NVRTC compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub source: String,
    pub builds: Vec<Kernel>,
    pub probe: Kernel,
}

/// The program of `p`.
pub fn program(p: &QueryPlan) -> Program {
    let builds: Vec<Kernel> = p
        .joins
        .iter()
        .enumerate()
        .map(|(i, j)| build_kernel(j, i))
        .collect();
    let probe = probe_kernel(p);
    let mut source = format!(
        "// The kernels of {}, emitted by src/ssb/codegen.rs from kernels/ssb/ops.cuh.\n#include \"ops.cuh\"\n",
        p.name
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
