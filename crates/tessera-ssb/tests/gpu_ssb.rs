//! The 13 queries on the GPU (generated tile-based kernels, over the columns as stored and over
//! plain columns) give exactly the CPU executor's results. Skips with a printed reason without
//! a GPU, unless TESSERA_REQUIRE_GPU=1.

use tessera::gpu::Gpu;
use tessera_ssb::{cpu, dataset::Dataset, gen, gpu, queries};

/// A GPU handle that keeps the stored chunks beside the resident copies at upload, so a test
/// can run any loader on the columns it uploaded (`lanes_handle_frees_the_stored_chunks` makes
/// its own without).
fn gpu_or_skip() -> Option<Gpu> {
    let g = Gpu::new()
        .map_err(|e| tessera::gpu::testing::skipped(&e))
        .ok()?;
    g.ssb_set_keep_stored(true).expect("keep stored");
    Some(g)
}

/// SSB's tables generated at scale factor `sf` from `seed`, written in chunks of `chunk`
/// values and opened (the folder lives as long as the returned guard).
fn dataset(sf: f64, seed: u64, chunk: usize) -> (tempfile::TempDir, Dataset) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = gen::generate(sf, seed).expect("generates");
    gen::write_tables(dir.path(), &data, Some(chunk)).expect("writes");
    let ds = Dataset::open(dir.path()).expect("opens");
    (dir, ds)
}

/// Generates the kernels of the following queries with `loader`, 8 thread blocks an SM.
fn set_loader(g: &Gpu, loader: tessera::gpu::ssb::codegen::Loader) {
    g.ssb_set_options(tessera::gpu::ssb::codegen::Options {
        loader,
        min_blocks: 8,
    })
    .expect("options");
}

/// Runs `p` on the GPU and on the CPU and asserts the results equal (`what` names the case);
/// returns the number of groups.
fn assert_gpu_equals_cpu(
    g: &Gpu,
    dev: &gpu::DeviceTables,
    ds: &Dataset,
    p: &tessera::gpu::ssb::plan::QueryPlan,
    what: &str,
) -> usize {
    let want = cpu::run(ds, queries::FACT, p).expect("cpu");
    let got = gpu::run(g, dev, p).expect("gpu");
    assert_eq!(got, want, "{what}");
    got.groups.len()
}

/// Asserts that every chunk of lineorder's `columns` has `codec`, so the path under test runs.
fn assert_codec_throughout(ds: &Dataset, columns: &[&str], codec: tessera::CodecId) {
    let fact = ds.table(queries::FACT).expect("lineorder");
    for c in fact.columns() {
        if columns.contains(&c.name.as_str()) {
            assert!(
                c.chunks.iter().all(|ch| ch.codec == codec),
                "{} is not {} throughout",
                c.name,
                codec.name().to_uppercase()
            );
        }
    }
}

#[test]
fn gpu_equals_cpu_on_all_13_queries() {
    let Some(g) = gpu_or_skip() else { return };
    // Chunks of 16,384 values: many chunks, each with auto's own codec, and a partial last
    // tile.
    let (_dir, ds) = dataset(0.1, 3, 16_384);
    let mut codecs = std::collections::BTreeSet::new();
    for t in ds.tables.values() {
        for c in t.columns() {
            codecs.extend(c.chunks.iter().map(|ch| ch.codec.name()));
        }
    }
    eprintln!("codecs in the data: {codecs:?}");
    for layout in [gpu::Layout::Compressed, gpu::Layout::Plain] {
        let dev = gpu::upload(&g, &ds, layout).expect("uploads");
        for name in queries::NAMES {
            let p = queries::plan(name, &ds.dict).expect("plan");
            let n = assert_gpu_equals_cpu(&g, &dev, &ds, &p, &format!("{name} {layout:?}"));
            eprintln!("{name} {layout:?}: {n} groups equal");
        }
    }
}

/// Every way of generating the loads (generic, a call of the codec's loader, inlined, inlined
/// with the tiles ahead prefetched, RFOR keys probed per run with batched row probes, the lean
/// FOR loader: q1.1's lo_discount has 4-bit blocks, its one-shuffle path) gives the
/// CPU's results, over stored columns (of one codec each or mixed: a mixed column keeps the
/// generic loader) and plain ones.
#[test]
fn every_loader_equals_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    for layout in [gpu::Layout::Compressed, gpu::Layout::Plain] {
        let dev = gpu::upload(&g, &ds, layout).expect("uploads");
        for loader in [
            Loader::Generic,
            Loader::Call,
            Loader::Inline,
            Loader::Prefetch,
            Loader::RunsBatch,
            Loader::Lean,
            Loader::Batch,
            Loader::Lanes,
        ] {
            set_loader(&g, loader);
            for name in ["q1.1", "q4.1"] {
                let p = queries::plan(name, &ds.dict).expect("plan");
                assert_gpu_equals_cpu(&g, &dev, &ds, &p, &format!("{name} {layout:?} {loader:?}"));
            }
        }
    }
}

/// The lean FOR loader (`lean`, measured, not the default) over stored and plain columns gives
/// the CPU's results on one query of each flight, TESSERA_SSB_LEAN_QUERIES naming others (e.g.
/// one query under compute-sanitizer). At SF 0.05 lo_discount's blocks have bit_width 4 (the one-shuffle
/// path) and lo_quantity's 6 (the two-shuffle path); both are checked to be FOR.
#[test]
fn lean_for_loader_equals_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    set_loader(&g, Loader::Lean);
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    assert_codec_throughout(&ds, &["lo_discount", "lo_quantity"], tessera::CodecId::For);
    let names =
        std::env::var("TESSERA_SSB_LEAN_QUERIES").unwrap_or_else(|_| "q1.1,q2.1,q3.1,q4.1".into());
    queries_equal_the_cpu_in_both_layouts(&g, &ds, &names, "lean");
}

/// Each of the comma-separated queries `names`, over stored and over plain columns, gives the
/// CPU's result (`loader`: the loader set, for the messages).
fn queries_equal_the_cpu_in_both_layouts(g: &Gpu, ds: &Dataset, names: &str, loader: &str) {
    for layout in [gpu::Layout::Compressed, gpu::Layout::Plain] {
        let dev = gpu::upload(g, ds, layout).expect("uploads");
        for name in names.split(',') {
            let p = queries::plan(name, &ds.dict).expect("plan");
            let n = assert_gpu_equals_cpu(g, &dev, ds, &p, &format!("{name} {layout:?}"));
            eprintln!("{name} {layout:?} {loader}: {n} groups equal");
        }
    }
}

/// The fact columns the FOR loader tests check to be FOR in every chunk: lo_discount's and
/// lo_quantity's narrow equal-width slabs, and the price columns' mixed widths.
const FOR_COLUMNS: [&str; 4] = [
    "lo_discount",
    "lo_quantity",
    "lo_extendedprice",
    "lo_revenue",
];

/// The queries a FOR loader test runs: all 13, or those TESSERA_SSB_BATCH_QUERIES names (fewer,
/// e.g. under compute-sanitizer).
fn batch_queries() -> String {
    std::env::var("TESSERA_SSB_BATCH_QUERIES").unwrap_or_else(|_| queries::NAMES.join(","))
}

/// The batched FOR loader (`batch`: every block's packed words requested before any is
/// unpacked, in place in the value registers) over stored and plain columns gives the CPU's
/// results on all 13 queries (TESSERA_SSB_BATCH_QUERIES naming fewer, e.g. under
/// compute-sanitizer). The four columns below are checked to be FOR throughout: lo_discount's
/// 4-bit slabs take the equal-width path (unpredicated loads), and the wide price columns,
/// whose miniblocks mostly mix 23 and 24 bits, the mixed-width one (predicated loads); chunks
/// of 16,384 values end in a partial tile.
#[test]
fn batch_for_loader_equals_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    set_loader(&g, Loader::Batch);
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    assert_codec_throughout(&ds, &FOR_COLUMNS, tessera::CodecId::For);
    let names = batch_queries();
    queries_equal_the_cpu_in_both_layouts(&g, &ds, &names, "batch");
}

/// FOR columns checked once at upload and then loaded without the per-tile checks (`upfront`)
/// give the CPU's results on all 13 queries over stored and plain columns (the queries
/// TESSERA_SSB_BATCH_QUERIES names, if set). The FOR columns of the data are checked at upload
/// (`for_checked`), so the unchecked path is what runs; a column of another codec is not.
#[test]
fn upfront_checked_for_loader_equals_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    set_loader(&g, Loader::Upfront);
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    assert_codec_throughout(&ds, &FOR_COLUMNS, tessera::CodecId::For);
    let lo = ds.table(queries::FACT).expect("lineorder");
    for name in FOR_COLUMNS {
        let c = gpu::upload_column(&g, lo, name, gpu::Layout::Compressed).expect("uploads");
        assert!(c.for_checked(), "{name} was not checked at upload");
        let c = gpu::upload_column(&g, lo, name, gpu::Layout::Plain).expect("uploads");
        assert!(!c.for_checked(), "plain {name} marked as checked FOR");
    }
    let c = gpu::upload_column(&g, lo, "lo_orderdate", gpu::Layout::Compressed).expect("uploads");
    assert!(
        !c.for_checked(),
        "lo_orderdate (RFOR) marked as checked FOR"
    );
    let names = batch_queries();
    queries_equal_the_cpu_in_both_layouts(&g, &ds, &names, "upfront");
}

/// FOR columns read from their lane-layout copies (`lanes`: one bit_width a tile, each lane
/// unpacking its own rows with constant shifts) and RFOR keys probed per run from their
/// run-start copies give the CPU's results on all 13 queries over stored and plain columns
/// (the queries TESSERA_SSB_BATCH_QUERIES names, if set). Every FOR and RFOR column of the data
/// gets a copy at upload; DFOR and plain columns get none. Chunks of 16,384 values end in a partial tile, and the
/// price columns' tiles take widths on both sides of a word (tiles starting half-way into
/// one).
#[test]
fn lanes_for_loader_equals_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    set_loader(&g, Loader::Lanes);
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    assert_codec_throughout(&ds, &FOR_COLUMNS, tessera::CodecId::For);
    let lo = ds.table(queries::FACT).expect("lineorder");
    for name in FOR_COLUMNS {
        let c = gpu::upload_column(&g, lo, name, gpu::Layout::Compressed).expect("uploads");
        let b = c
            .lane_bytes()
            .unwrap_or_else(|| panic!("{name} has no lane copy"));
        assert!(b > 0 && b < c.values() * 4, "{name}: {b} lane bytes");
        let c = gpu::upload_column(&g, lo, name, gpu::Layout::Plain).expect("uploads");
        assert!(c.lane_bytes().is_none(), "plain {name} has a lane copy");
    }
    // RFOR keys get a run-start copy (their per-run probes read it), DFOR none.
    assert_codec_throughout(&ds, &["lo_orderdate", "lo_custkey"], tessera::CodecId::Rfor);
    for name in ["lo_orderdate", "lo_custkey"] {
        let c = gpu::upload_column(&g, lo, name, gpu::Layout::Compressed).expect("uploads");
        let b = c
            .lane_bytes()
            .unwrap_or_else(|| panic!("{name} has no run-start copy"));
        assert!(b > 0 && b < c.values() * 4, "{name}: {b} run-start bytes");
    }
    let c = gpu::upload_column(&g, lo, "lo_orderkey", gpu::Layout::Compressed).expect("uploads");
    assert!(c.lane_bytes().is_none(), "lo_orderkey (DFOR) has a copy");
    let names = batch_queries();
    // `lanesv`, with few items passing, probes the passing rows' runs alone: selective joins
    // (q2.x, q3.2-q3.4) take that path, q1.x's date probe ahead of the filters the per-run
    // one.
    for loader in [Loader::Lanes, Loader::LanesVote] {
        set_loader(&g, loader);
        queries_equal_the_cpu_in_both_layouts(&g, &ds, &names, loader.name());
    }
}

/// The sparse FOR loads (`sparse`, over FOR columns loaded with their checks, and `sparseup`,
/// over FOR columns checked at upload: a load after a filter or a probe extracts each lane's
/// passing values from the packed words when the warp's tile holds few passing rows) give the
/// CPU's results on all 13 queries over stored and plain columns (the queries
/// TESSERA_SSB_BATCH_QUERIES names, if set). The four columns are FOR throughout: lo_discount's
/// and lo_quantity's equal slabs (q1.x loads lo_quantity after the date join and the discount
/// filter) and the price columns' mixed widths (lo_extendedprice in q1.x, lo_revenue in q2.x
/// to q4.x, after every join), and the filters and joins leave tiles on both sides of
/// SPARSE_MAX passing rows, so both paths run.
#[test]
fn sparse_for_loader_equals_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    assert_codec_throughout(&ds, &FOR_COLUMNS, tessera::CodecId::For);
    let names = batch_queries();
    for loader in [Loader::Sparse, Loader::SparseUpfront] {
        set_loader(&g, loader);
        queries_equal_the_cpu_in_both_layouts(&g, &ds, &names, loader.name());
    }
}

/// Joins probed per run (`SsbProbeRuns`: lo_orderdate in q1.2, lo_custkey and lo_orderdate in
/// q3.1 and q4.3), in plan order and moved first, give the CPU's results; the data's RFOR keys
/// are checked to be RFOR in every chunk, so the per-run probe is what runs.
#[test]
fn run_probes_equal_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    assert_codec_throughout(&ds, &["lo_orderdate", "lo_custkey"], tessera::CodecId::Rfor);
    let dev = gpu::upload(&g, &ds, gpu::Layout::Compressed).expect("uploads");
    for (name, loader) in [
        ("q1.2", Loader::Runs),
        ("q3.1", Loader::RunsFirst),
        ("q4.3", Loader::RunsBatch),
    ] {
        set_loader(&g, loader);
        let p = queries::plan(name, &ds.dict).expect("plan");
        let n = assert_gpu_equals_cpu(&g, &dev, &ds, &p, &format!("{name} {loader:?}"));
        eprintln!("{name} {loader:?}: {n} groups equal");
    }
}

/// The prefetching probe (`pf`) over a scan of every lineorder column, stored (FOR, DFOR and
/// RFOR columns, some of mixed codecs) and plain, gives the CPU's sums: every codec's prefetch,
/// with tiles ahead that lie in the next chunk and past the last tile.
#[test]
fn prefetching_scans_equal_the_cpu() {
    use tessera::gpu::ssb::codegen::Loader;
    use tessera::gpu::ssb::plan::{Aggregate, QueryPlan};
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.05, 5, 16_384);
    set_loader(&g, Loader::Prefetch);
    let fact = ds.table(queries::FACT).expect("lineorder");
    for layout in [gpu::Layout::Compressed, gpu::Layout::Plain] {
        let dev = gpu::upload(&g, &ds, layout).expect("uploads");
        for c in fact.columns() {
            let p = QueryPlan {
                name: format!("scan {}", c.name),
                fact_filters: vec![],
                joins: vec![],
                group: vec![],
                aggregate: Aggregate::Sum(c.name.clone()),
            };
            assert_gpu_equals_cpu(&g, &dev, &ds, &p, &format!("{} {layout:?}", p.name));
        }
    }
}

/// Runs `query` on SF 0.01's lineorder (chunks of 8,192 values) whose `column` has its first
/// chunk's block_starts[1] (word 5 of the payload, after the 4 header words and
/// block_starts[0]) pointing far past the data area: the host checks only the last entry, the
/// loader must check this one and report. `check_codec` sees that chunk's codec first.
fn run_with_a_corrupt_block(
    g: &Gpu,
    column: &str,
    check_codec: impl Fn(tessera::CodecId),
    query: &str,
) -> tessera::Result<tessera::gpu::ssb::plan::QueryResult> {
    let (_dir, ds) = dataset(0.01, 5, 8_192);
    let lo = ds.table("lineorder").expect("table");
    let mut cols = Vec::new();
    for c in lo.columns() {
        let mut chunks = gpu::column_chunks(lo, &c.name, gpu::Layout::Compressed).expect("chunks");
        if c.name == column {
            let (codec, p, _) = &mut chunks[0];
            check_codec(*codec);
            p[20..24].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        }
        let refs: Vec<tessera::gpu::ChunkRef<'_>> = chunks
            .iter()
            .map(|(codec, p, n)| tessera::gpu::ChunkRef {
                codec: *codec,
                payload: p,
                value_count: *n,
            })
            .collect();
        let col = g.ssb_upload_column(&refs).expect("uploads");
        // A corrupt FOR column fails the check at upload, so no program reads it unchecked.
        assert!(
            c.name != column || !col.for_checked(),
            "corrupt {column} passed the upload check"
        );
        cols.push((c.name.clone(), col));
    }
    let fact = g.ssb_table(cols).expect("table");
    let dims = gpu::upload(g, &ds, gpu::Layout::Compressed)
        .expect("uploads")
        .dims;
    let p = queries::plan(query, &ds.dict).expect("plan");
    g.ssb_run(&p, &fact, &dims)
}

#[test]
fn a_corrupt_chunk_is_an_error_not_a_wrong_answer() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    // The lean FOR loader reads lo_discount's 4-bit blocks by its one-shuffle path, after the
    // same checks as the two-shuffle one (`runs`).
    // The batched one makes the same checks before it requests any packed word (`batch`).
    // `upfront` loads it with the checks too: the check at upload found the corrupt block.
    // The sparse loads make the same checks before they read a packed word (`sparse`,
    // `sparseup`); TESSERA_SSB_CORRUPT_LOADERS=sparse,sparseup runs only those (e.g. under
    // compute-sanitizer). `lanes`: a column whose chunk does not decode at upload gets no
    // lane copy, so the FOR loader reads it and reports the block.
    let only = std::env::var("TESSERA_SSB_CORRUPT_LOADERS").unwrap_or_default();
    for loader in [
        Loader::Lean,
        Loader::Runs,
        Loader::Batch,
        Loader::Upfront,
        Loader::Sparse,
        Loader::SparseUpfront,
        Loader::Lanes,
    ] {
        if !only.is_empty() && !only.split(',').any(|n| n == loader.name()) {
            continue;
        }
        set_loader(&g, loader);
        corrupt_discount_fails(&g);
    }
}

fn corrupt_discount_fails(g: &Gpu) {
    // q1.1 loads lo_discount in every tile (its first filter), so the bad block is read.
    let r = run_with_a_corrupt_block(
        g,
        "lo_discount",
        |codec| assert_ne!(codec, tessera::CodecId::Plain),
        "q1.1",
    );
    assert!(r.is_err(), "corrupt lo_discount gave {r:?}");
    eprintln!(
        "corrupt chunk: {}",
        r.err().map(|e| e.to_string()).unwrap_or_default()
    );
}

/// A handle whose programs are `lanes` ones (as the default `lanesv`'s are) frees a column's stored chunks once
/// its resident copy is made: the queries still equal the CPU's, the column holds only the
/// copy's bytes, and a program of another loader is refused with an error, never run on the
/// freed buffer. Columns without a copy (DFOR, plain) keep theirs.
#[test]
fn lanes_handle_frees_the_stored_chunks() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    g.ssb_set_keep_stored(false).expect("keep stored");
    set_loader(&g, Loader::Lanes);
    let (_dir, ds) = dataset(0.01, 5, 8_192);
    let lo = ds.table(queries::FACT).expect("lineorder");
    for name in ["lo_discount", "lo_orderdate"] {
        let c = gpu::upload_column(&g, lo, name, gpu::Layout::Compressed).expect("uploads");
        assert!(!c.stored_kept(), "{name}: stored chunks kept");
        assert_eq!(c.device_bytes(), c.lane_bytes().expect("a copy"), "{name}");
    }
    let c = gpu::upload_column(&g, lo, "lo_orderkey", gpu::Layout::Compressed).expect("uploads");
    assert!(
        c.stored_kept() && c.lane_bytes().is_none(),
        "lo_orderkey (DFOR)"
    );
    let dev = gpu::upload(&g, &ds, gpu::Layout::Compressed).expect("uploads");
    for name in ["q1.1", "q3.2", "q4.1"] {
        let p = queries::plan(name, &ds.dict).expect("plan");
        assert_gpu_equals_cpu(&g, &dev, &ds, &p, &format!("{name} stored chunks freed"));
    }
    set_loader(&g, Loader::Batch);
    let p = queries::plan("q1.1", &ds.dict).expect("plan");
    let e = g
        .ssb_run(&p, &dev.fact, &dev.dims)
        .expect_err("batch on freed stored chunks")
        .to_string();
    assert!(e.contains("not kept"), "{e}");
}

/// A hostile tile in a lane-layout copy (a bit_width over 32, a tile whose bits lie past its
/// chunk, a width outside the range the program was generated for) or a run-start copy (a
/// bit_width over 32, a row 0 that starts no run, flags past the chunk) fails the query with
/// the loader's report, never a read past the chunk (memcheck runs this on the GPU machine).
#[test]
fn a_corrupt_lane_tile_is_an_error() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.01, 5, 8_192);
    let lo = ds.table("lineorder").expect("table");
    for loader in [Loader::Lanes, Loader::LanesVote] {
        set_loader(&g, loader);
        corrupt_lane_tiles_fail(&g, &ds, lo);
    }
}

fn corrupt_lane_tiles_fail(g: &Gpu, ds: &Dataset, lo: &tessera::TableReader) {
    // lo_discount: q1.1 loads it in every tile that a date passes (all at SF 0.01), and
    // lo_orderdate (run-start copy) is probed per run first, in every tile. Chunks of 8,192
    // values are 16 tiles: the tile table is words 0..32, tile 0's (start << 6) | bit_width
    // is word 1, and its data (the run-start layout's flag words first) starts at word 32.
    for (what, column, word, value) in [
        ("bit_width 40", "lo_discount", 1usize, 40u32),
        (
            "start far past the chunk",
            "lo_discount",
            1,
            (1u32 << 25) << 6 | 4,
        ),
        ("bit_width 31, outside the column's", "lo_discount", 1, 31),
        ("run-start bit_width 40", "lo_orderdate", 1, 40),
        ("run-start row 0 starting no run", "lo_orderdate", 32, 0),
        (
            "run-start flags past the chunk",
            "lo_orderdate",
            1,
            (1u32 << 25) << 6 | 16,
        ),
    ] {
        let mut cols = Vec::new();
        for c in lo.columns() {
            let mut col =
                gpu::upload_column(g, lo, &c.name, gpu::Layout::Compressed).expect("uploads");
            if c.name == column {
                g.ssb_poke_lane_word(&mut col, 0, word, value)
                    .expect("pokes");
            }
            cols.push((c.name.clone(), col));
        }
        let fact = g.ssb_table(cols).expect("table");
        let dims = gpu::upload(g, ds, gpu::Layout::Compressed)
            .expect("uploads")
            .dims;
        let p = queries::plan("q1.1", &ds.dict).expect("plan");
        let r = g.ssb_run(&p, &fact, &dims);
        let e = r.expect_err(what).to_string();
        assert!(e.contains("resident copy is corrupt"), "{what}: {e}");
        eprintln!("{what}: {e}");
    }
}

/// A corrupt RFOR block of a key probed per run (lo_orderdate's block_starts[1] far past the
/// data area) fails the query, never answers it.
#[test]
fn a_corrupt_rfor_key_probed_per_run_is_an_error() {
    use tessera::gpu::ssb::codegen::Loader;
    let Some(g) = gpu_or_skip() else { return };
    set_loader(&g, Loader::RunsFirst);
    // RunsFirst probes lo_orderdate first, in every tile, so the bad block is read.
    let r = run_with_a_corrupt_block(
        &g,
        "lo_orderdate",
        |codec| assert_eq!(codec, tessera::CodecId::Rfor),
        "q1.2",
    );
    assert!(r.is_err(), "corrupt lo_orderdate gave {r:?}");
    eprintln!(
        "corrupt RFOR key: {}",
        r.err().map(|e| e.to_string()).unwrap_or_default()
    );
}

/// Lineorder split across two GPUs (row ranges on chunk boundaries), dimension tables on both,
/// partial aggregates merged on the host: the same results as the CPU. With one GPU the two
/// parts go to two handles of device 0 (own streams, own hash tables and aggregates), which
/// checks the split and the merge, not the scaling.
#[test]
fn lineorder_split_across_two_gpus_equals_the_cpu() {
    let Some(first) = gpu_or_skip() else { return };
    let second = if Gpu::device_count() >= 2 {
        Gpu::open(1).expect("opens device 1")
    } else {
        eprintln!("one GPU: both parts on device 0");
        Gpu::open(0).expect("opens device 0 again")
    };
    let gpus = [first, second];
    // 37 chunks of 16,384 rows and a partial last chunk: the parts differ in size.
    let (_dir, ds) = dataset(0.1, 7, 16_384);
    let parts = gpu::upload_split(&gpus, &ds, gpu::Layout::Compressed).expect("uploads");
    assert!(parts.iter().all(|p| p.fact.rows() > 0));
    assert_eq!(
        parts.iter().map(|p| p.fact.rows()).sum::<u64>(),
        ds.table("lineorder").expect("table").columns()[0]
            .chunks
            .iter()
            .map(|c| c.value_count as u64)
            .sum::<u64>()
    );
    for name in queries::NAMES {
        let p = queries::plan(name, &ds.dict).expect("plan");
        let want = cpu::run(&ds, queries::FACT, &p).expect("cpu");
        let (got, ms) = gpu::run_split(&gpus, &parts, &p).expect("gpu");
        assert_eq!(got, want, "{name}");
        eprintln!("{name}: {} groups equal, GPU ms {ms:?}", got.groups.len());
    }
}

/// Coprocessor mode (columns in page-locked host memory, shipped per query, the fact table in
/// pieces each probed once it has arrived) gives the CPU's results for every piece count,
/// including more pieces than chunks and pieces of unequal size.
#[test]
fn coprocessor_mode_in_pieces_equals_the_cpu() {
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.1, 5, 16_384);
    for layout in [gpu::Layout::Compressed, gpu::Layout::Plain] {
        let host = gpu::pin(&g, &gpu::host_chunks(&ds, layout).expect("chunks")).expect("pins");
        for name in queries::NAMES {
            let p = queries::plan(name, &ds.dict).expect("plan");
            let want = cpu::run(&ds, queries::FACT, &p).expect("cpu");
            for pieces in [1, 3, 8, 1000] {
                let (got, shipped) =
                    gpu::run_coprocessor(&g, &host, &p, pieces).expect("coprocessor");
                assert_eq!(got, want, "{name} {layout:?} {pieces} pieces");
                assert!(shipped > 0);
            }
            eprintln!("{name} {layout:?}: {} groups equal", want.groups.len());
        }
    }
}

/// Coprocessor mode makes every check the resident path makes: a corrupt block in the first
/// or the last chunk of lineorder (the first or the last piece) fails the query with the
/// loader's report, and a dimension key that appears twice fails it with the query's status,
/// whatever the piece count; the handle answers right afterwards.
#[test]
fn coprocessor_mode_reports_corrupt_chunks_and_bad_keys() {
    let Some(g) = gpu_or_skip() else { return };
    let (_dir, ds) = dataset(0.01, 5, 8_192);
    let p = queries::plan("q1.1", &ds.dict).expect("plan");
    let comp = gpu::host_chunks(&ds, gpu::Layout::Compressed).expect("chunks");
    let discount = ("lineorder".to_string(), "lo_discount".to_string());
    let n = comp[&discount].len();
    assert!(n >= 4, "lineorder in {n} chunks");
    for chunk in [0, n - 1] {
        let mut bad = comp.clone();
        let (codec, payload, _) = &mut bad.get_mut(&discount).expect("column")[chunk];
        assert_ne!(*codec, tessera::CodecId::Plain);
        // block_starts[1] far past the data area, as in run_with_a_corrupt_block.
        payload[20..24].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        let host = gpu::pin(&g, &bad).expect("pins");
        for pieces in [1, 3, 16] {
            let r = gpu::run_coprocessor(&g, &host, &p, pieces);
            assert!(r.is_err(), "corrupt chunk {chunk}, {pieces} pieces: {r:?}");
            eprintln!(
                "chunk {chunk}, {pieces} pieces: {}",
                r.err().map(|e| e.to_string()).unwrap_or_default()
            );
        }
    }
    // A date key that passes q1.1's filter (d_year 1993) written over the next row's key.
    let mut plain = gpu::host_chunks(&ds, gpu::Layout::Plain).expect("chunks");
    let years = &plain[&("date".to_string(), "d_year".to_string())];
    assert_eq!(years.len(), 1, "date in one chunk");
    let row = years[0]
        .1
        .chunks_exact(4)
        .position(|v| u32::from_le_bytes(v.try_into().expect("4 bytes")) == 1993)
        .expect("a day of 1993");
    let keys = &mut plain
        .get_mut(&("date".to_string(), "d_datekey".to_string()))
        .expect("column")[0]
        .1;
    let key: [u8; 4] = keys[4 * row..4 * row + 4].try_into().expect("4 bytes");
    keys[4 * row + 4..4 * row + 8].copy_from_slice(&key);
    let host = gpu::pin(&g, &plain).expect("pins");
    for pieces in [1, 16] {
        let e = gpu::run_coprocessor(&g, &host, &p, pieces).expect_err("a key appears twice");
        assert!(e.to_string().contains("appears twice"), "{e}");
    }
    let good = gpu::pin(&g, &comp).expect("pins");
    let want = cpu::run(&ds, queries::FACT, &p).expect("cpu");
    let (got, _) = gpu::run_coprocessor(&g, &good, &p, 16).expect("coprocessor");
    assert_eq!(got, want);
}
