//! Every program the 13 queries generate (per query its build kernels, one a join, and its
//! probe kernel) compiles with NVRTC. Needs NVRTC only (no GPU); skips with a printed reason when it
//! cannot be loaded, unless TESSERA_REQUIRE_NVRTC=1 (CI). Each query's program is compiled
//! generic (codecs unknown) and specialized to per-column codecs (every `SsbLoadAs` codec, as a
//! call, inlined, inlined with the tiles ahead prefetched, and with RFOR keys probed per run). With TESSERA_SSB_PTX_CACHE set, the
//! PTX comes from (or goes to) that cache folder (so a run can fill it for a GPU session).

use tessera::gpu::kernels::nvrtc_available;
use tessera::gpu::ssb::codegen::{
    lanes_code, program, program_with, Loader, Options, Side, FOR_CHECKED, RFOR_STARTS,
};
use tessera::gpu::ssb::plan::{Aggregate, QueryPlan};
use tessera::gpu::ssb::program_ptx;
use tessera_ssb::{queries, schema::Dictionaries};

#[test]
fn every_generated_query_kernel_compiles() {
    if let Err(e) = nvrtc_available() {
        if std::env::var("TESSERA_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("TESSERA_REQUIRE_NVRTC=1 but {e}");
        }
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "skipped: {e}");
        return;
    }
    let d = Dictionaries::standard();
    let mut sources = std::collections::BTreeSet::new();
    // The codecs auto picks for SSB's columns (DFOR keys, RFOR runs, FOR otherwise), and every
    // column plain: between them every specialized loader.
    let stored = |side: Side<'_>, col: &str| -> Option<u32> {
        Some(match (side, col) {
            (Side::Dim(_), c) if c.ends_with("key") => 2,
            (Side::Fact, "lo_orderkey") => 2,
            (Side::Fact, "lo_custkey" | "lo_orderdate") => 3,
            (Side::Dim("date"), _) => 3,
            _ => 1,
        })
    };
    let plain = |_: Side<'_>, _: &str| Some(0u32);
    // Resident FOR columns are checked at upload: the generator sees them as FOR_CHECKED (a
    // clean column passes), which only `upfront` programs read differently.
    let resident =
        |side: Side<'_>, col: &str| stored(side, col).map(|c| if c == 1 { FOR_CHECKED } else { c });
    // Specialized programs take NVRTC several times longer than generic ones: one query of each
    // flight inlined on stored codecs, and q1.1 in the other three forms, cover every
    // SsbLoadAs instantiation in the CI time a run allows.
    let inline = Options {
        loader: Loader::Inline,
        min_blocks: 8,
    };
    let call = Options {
        loader: Loader::Call,
        ..inline
    };
    let pf = Options {
        loader: Loader::Prefetch,
        ..inline
    };
    for name in queries::NAMES {
        let p = queries::plan(name, &d).expect("plan");
        sources.insert(program(&p).source);
        if matches!(name, "q1.1" | "q2.1" | "q3.1" | "q4.1") {
            sources.insert(program_with(&p, &stored, inline).source);
        }
        // Probes per run (RFOR keys: q1.x's date, q3.x's customer and date), in plan order,
        // first, and with the batched row probes.
        for (q, loader) in [
            ("q1.2", Loader::Runs),
            ("q3.1", Loader::RunsFirst),
            ("q4.3", Loader::RunsBatch),
            ("q1.1", Loader::Lean),
            ("q1.1", Loader::Batch),
            ("q4.1", Loader::Batch),
            ("q1.1", Loader::Sparse),
            ("q4.1", Loader::Sparse),
        ] {
            if name == q {
                let o = Options { loader, ..inline };
                sources.insert(program_with(&p, &stored, o).source);
            }
        }
        // FOR columns checked at upload, loaded unchecked (SsbLoadAs<SSB_FOR_CHECKED, ..>).
        // And with the sparse FOR path at the loads after a step (SsbLoadAs<.., .., true>),
        // over checked and unchecked FOR columns.
        for (q, loader) in [
            ("q1.1", Loader::Upfront),
            ("q4.1", Loader::Upfront),
            ("q2.1", Loader::SparseUpfront),
            ("q3.1", Loader::SparseUpfront),
        ] {
            if name == q {
                let o = Options { loader, ..inline };
                sources.insert(program_with(&p, &resident, o).source);
            }
        }
        // FOR columns read from their lane-layout copies (SsbLoadLanes, every bit_width case),
        // RFOR ones from their run-start copies (SsbProbeRunStarts; SsbLoadAs for the date
        // table's RFOR columns).
        if matches!(name, "q1.1" | "q4.1") {
            let lanes = |side: Side<'_>, col: &str| {
                stored(side, col).map(|c| match c {
                    1 => lanes_code(0, 32),
                    3 => RFOR_STARTS,
                    c => c,
                })
            };
            for loader in [Loader::Lanes, Loader::LanesVote] {
                let o = Options { loader, ..inline };
                sources.insert(program_with(&p, &lanes, o).source);
            }
        }
        if name == "q1.1" {
            sources.insert(program_with(&p, &plain, inline).source);
            sources.insert(program_with(&p, &stored, call).source);
            sources.insert(program_with(&p, &plain, call).source);
            sources.insert(program_with(&p, &stored, pf).source);
            sources.insert(program_with(&p, &plain, pf).source);
        }
    }
    // The prefetching probe of a one-column scan in each codec: every SsbPrefetchMeta and
    // SsbPrefetchData instantiation (no query reads a DFOR fact column).
    for codec in 0..4u32 {
        let scan = QueryPlan {
            name: format!("scan of codec {codec}"),
            fact_filters: vec![],
            joins: vec![],
            group: vec![],
            aggregate: Aggregate::Sum("lo_orderkey".into()),
        };
        sources.insert(program_with(&scan, &move |_: Side<'_>, _: &str| Some(codec), pf).source);
    }
    // TESSERA_SSB_PTX_ALL=inline:8,pf:8 (with TESSERA_SSB_PTX_CACHE): instead, every program
    // that `tessera-bench ssb` runs on SSB's stored codecs and on plain columns with those
    // options, and its scans of the columns TESSERA_SSB_PTX_SCANS names, so that a GPU
    // session's bench finds them all in the cache.
    let all: Vec<Options> = std::env::var("TESSERA_SSB_PTX_ALL")
        .unwrap_or_default()
        .split(',')
        .filter_map(Options::parse)
        .collect();
    if !all.is_empty() {
        sources.clear();
    }
    let scans = std::env::var("TESSERA_SSB_PTX_SCANS").unwrap_or_default();
    for o in all {
        for name in queries::NAMES {
            let p = queries::plan(name, &d).expect("plan");
            sources.insert(program_with(&p, &resident, o).source);
            sources.insert(program_with(&p, &plain, o).source);
        }
        for col in scans.split(',').filter(|c| !c.is_empty()) {
            let scan = QueryPlan {
                name: format!("scan {col}"),
                fact_filters: vec![],
                joins: vec![],
                group: vec![],
                aggregate: Aggregate::Sum(col.into()),
            };
            sources.insert(program_with(&scan, &resident, o).source);
            sources.insert(program_with(&scan, &plain, o).source);
        }
    }
    // TESSERA_SSB_SRC_DUMP=DIR: each program's source is also written to DIR (in compile
    // order, 000.cu ...), for counting its instructions with scripts/sass.py.
    let dump = std::env::var_os("TESSERA_SSB_SRC_DUMP").map(std::path::PathBuf::from);
    for (i, src) in sources.iter().enumerate() {
        if let Some(dir) = &dump {
            std::fs::create_dir_all(dir).expect("dump folder");
            std::fs::write(dir.join(format!("{i:03}.cu")), src).expect("dump");
        }
        let t = std::time::Instant::now();
        let ptx = program_ptx(src, "sm_90").unwrap_or_else(|e| panic!("{e}\n{src}"));
        assert!(ptx.to_src().contains(".entry"), "{src}");
        let first = src.lines().next().unwrap_or_default();
        eprintln!("{first}: {:.2} s", t.elapsed().as_secs_f64());
    }
    eprintln!("{} generated programs compiled", sources.len());
}
