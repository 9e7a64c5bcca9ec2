//! The SSB tables on the GPU: each table's columns uploaded as stored (every chunk with the
//! codec auto chose for it) or as plain values (the uncompressed baseline), then the queries
//! run by the generated tile-based kernels (`tessera_gpu::ssb`).

use std::collections::HashMap;

use tessera::gpu::ssb::plan::{QueryPlan, QueryResult};
use tessera::gpu::ssb::{SsbColumn, SsbHostColumn, SsbTable};
use tessera::gpu::{ChunkRef, Gpu};
use tessera::{CodecId, Result, TableReader};

use crate::dataset::{Dataset, TABLES};
use crate::queries::FACT;

/// How columns are laid out on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// As stored: each chunk with its own codec (FOR, DFOR, RFOR or plain).
    Compressed,
    /// Every chunk plain (the paper's "None").
    Plain,
}

/// The payloads of one column's chunks, verified; plain ones re-made from the decoded values
/// when `layout` is [`Layout::Plain`].
pub fn column_chunks(
    t: &TableReader,
    name: &str,
    layout: Layout,
) -> Result<Vec<(CodecId, Vec<u8>, u32)>> {
    let i = t.column_index(name)?;
    let meta = &t.columns()[i];
    let mut out = Vec::with_capacity(meta.chunks.len());
    for (k, ch) in meta.chunks.iter().enumerate() {
        let payload = t.container().chunk_payload(i, k)?;
        match layout {
            Layout::Compressed => out.push((ch.codec, payload.to_vec(), ch.value_count)),
            Layout::Plain => {
                let mut raw = vec![0u8; ch.value_count as usize * 4];
                tessera::codecs::column::decode_chunk(
                    tessera::LogicalType::U32,
                    ch.codec,
                    payload,
                    &mut raw,
                )
                .map_err(|e| e.in_chunk(name, k, ch.codec.name()))?;
                out.push((CodecId::Plain, raw, ch.value_count));
            }
        }
    }
    Ok(out)
}

/// Uploads one column.
pub fn upload_column(gpu: &Gpu, t: &TableReader, name: &str, layout: Layout) -> Result<SsbColumn> {
    gpu.ssb_upload_column(&chunk_refs(&column_chunks(t, name, layout)?))
}

/// The chunks [`column_chunks`] gives, as the GPU runtime takes them.
pub fn chunk_refs(chunks: &[(CodecId, Vec<u8>, u32)]) -> Vec<ChunkRef<'_>> {
    chunks
        .iter()
        .map(|(codec, p, n)| ChunkRef {
            codec: *codec,
            payload: p,
            value_count: *n,
        })
        .collect()
}

/// Every table of a data set on the device.
#[derive(Debug)]
pub struct DeviceTables {
    pub fact: SsbTable,
    pub dims: HashMap<String, SsbTable>,
}

/// Uploads every column of every table in `layout`.
pub fn upload(gpu: &Gpu, ds: &Dataset, layout: Layout) -> Result<DeviceTables> {
    upload_tables(gpu, ds, layout, None)
}

/// Runs `p` on the device tables (hash tables built on the device, then the probe).
pub fn run(gpu: &Gpu, t: &DeviceTables, p: &QueryPlan) -> Result<QueryResult> {
    gpu.ssb_run(p, &t.fact, &t.dims)
}

/// Columns by (table, column) as [`column_chunks`] gives them.
pub type HostChunks = HashMap<(String, String), Vec<(CodecId, Vec<u8>, u32)>>;

/// Columns by (table, column) in page-locked host memory, laid out as on the device: the data
/// of coprocessor mode ([`run_coprocessor`]).
pub type PinnedColumns = HashMap<(String, String), SsbHostColumn>;

/// Every column of every table in `layout`, as [`column_chunks`] gives them.
pub fn host_chunks(ds: &Dataset, layout: Layout) -> Result<HostChunks> {
    let mut out = HashMap::new();
    for (tname, t) in &ds.tables {
        for c in t.columns() {
            out.insert(
                (tname.clone(), c.name.clone()),
                column_chunks(t, &c.name, layout)?,
            );
        }
    }
    Ok(out)
}

/// Every column of `host` laid out in page-locked host memory.
pub fn pin(gpu: &Gpu, host: &HostChunks) -> Result<PinnedColumns> {
    host.iter()
        .map(|(k, chunks)| Ok((k.clone(), gpu.ssb_pin_column(&chunk_refs(chunks))?)))
        .collect()
}

/// Every pinned column of `table`, by name.
fn host_table<'a>(host: &'a PinnedColumns, table: &str) -> Vec<(String, &'a SsbHostColumn)> {
    host.iter()
        .filter(|((t, _), _)| t == table)
        .map(|((_, c), h)| (c.clone(), h))
        .collect()
}

/// Coprocessor mode: ships the columns `p` reads from page-locked host memory for this query,
/// the fact table in `pieces` chunk ranges, each probed as soon as it has arrived
/// (`Gpu::ssb_run_coprocessor`, which picks the columns the query's program reads from the
/// tables it is given). Returns the result and the bytes shipped.
pub fn run_coprocessor(
    gpu: &Gpu,
    host: &PinnedColumns,
    p: &QueryPlan,
    pieces: usize,
) -> Result<(QueryResult, u64)> {
    let dims: HashMap<String, Vec<(String, &SsbHostColumn)>> = p
        .joins
        .iter()
        .map(|j| (j.table.clone(), host_table(host, &j.table)))
        .collect();
    gpu.ssb_run_coprocessor(p, &host_table(host, FACT), &dims, pieces)
}

/// Chunk ranges of `chunks` chunks split into `parts` row ranges on chunk boundaries, as even
/// as whole chunks allow (a range may be empty when there are fewer chunks than parts).
pub fn split_chunks(chunks: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1);
    (0..parts)
        .map(|i| i * chunks / parts..(i + 1) * chunks / parts)
        .collect()
}

/// Uploads the fact table's chunks `range` (every column) and every dimension table whole:
/// one part of a split data set.
pub fn upload_part(
    gpu: &Gpu,
    ds: &Dataset,
    layout: Layout,
    range: std::ops::Range<usize>,
) -> Result<DeviceTables> {
    upload_tables(gpu, ds, layout, Some(range))
}

/// Every dimension table whole, and the fact table's chunks `range` (all of them when `None`).
fn upload_tables(
    gpu: &Gpu,
    ds: &Dataset,
    layout: Layout,
    range: Option<std::ops::Range<usize>>,
) -> Result<DeviceTables> {
    let mut dims = HashMap::new();
    let mut fact = None;
    for name in TABLES {
        let t = ds.table(name)?;
        let mut cols = Vec::new();
        for c in t.columns() {
            let mut chunks = column_chunks(t, &c.name, layout)?;
            if let (FACT, Some(range)) = (name, &range) {
                if range.end > chunks.len() || range.start > range.end {
                    return Err(tessera::Error::InvalidArgument(format!(
                        "chunks {range:?} of {} chunks",
                        chunks.len()
                    )));
                }
                chunks.truncate(range.end);
                chunks.drain(..range.start);
            }
            cols.push((c.name.clone(), gpu.ssb_upload_column(&chunk_refs(&chunks))?));
        }
        let table = gpu.ssb_table(cols)?;
        if name == FACT {
            fact = Some(table);
        } else {
            dims.insert(name.to_string(), table);
        }
    }
    Ok(DeviceTables {
        fact: fact.ok_or_else(|| tessera::Error::InvalidArgument("no lineorder".into()))?,
        dims,
    })
}

/// Splits the fact table across `gpus` (row ranges on chunk boundaries, one a GPU), each GPU
/// holding every dimension table: what [`run_split`] queries.
pub fn upload_split(gpus: &[Gpu], ds: &Dataset, layout: Layout) -> Result<Vec<DeviceTables>> {
    let fact = ds.table(FACT)?;
    let chunks = fact.columns().first().map_or(0, |c| c.chunks.len());
    gpus.iter()
        .zip(split_chunks(chunks, gpus.len()))
        .map(|(g, r)| upload_part(g, ds, layout, r))
        .collect()
}

/// Adds partial results (per group: sums wrapping as the executors' do, counts added).
pub fn merge(parts: &[QueryResult]) -> QueryResult {
    let mut m: std::collections::BTreeMap<u64, (i64, u64)> = std::collections::BTreeMap::new();
    for r in parts {
        for &(g, s, c) in &r.groups {
            let e = m.entry(g).or_insert((0, 0));
            e.0 = e.0.wrapping_add(s);
            e.1 += c;
        }
    }
    QueryResult {
        groups: m
            .into_iter()
            .filter(|&(_, (_, c))| c > 0)
            .map(|(g, (s, c))| (g, s, c))
            .collect(),
    }
}

/// Runs `p` on every part at once (each GPU builds its own hash tables and probes its rows, one
/// host thread a GPU), then merges the partial aggregates on the host. Returns the result and
/// per part its GPU time (ms, CUDA events).
pub fn run_split(
    gpus: &[Gpu],
    parts: &[DeviceTables],
    p: &QueryPlan,
) -> Result<(QueryResult, Vec<f32>)> {
    if gpus.len() != parts.len() {
        return Err(tessera::Error::InvalidArgument(format!(
            "{} GPUs for {} parts",
            gpus.len(),
            parts.len()
        )));
    }
    let outs: Vec<Result<(QueryResult, f32)>> = std::thread::scope(|s| {
        let hs: Vec<_> = gpus
            .iter()
            .zip(parts)
            .map(|(g, t)| s.spawn(move || g.ssb_run_timed(p, &t.fact, &t.dims)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(tessera::Error::Gpu("a GPU's query thread panicked".into()))
                })
            })
            .collect()
    });
    let mut results = Vec::with_capacity(outs.len());
    let mut ms = Vec::with_capacity(outs.len());
    for o in outs {
        let (r, t) = o?;
        results.push(r);
        ms.push(t);
    }
    Ok((merge(&results), ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ranges_cover_every_chunk_once() {
        for (chunks, parts) in [(115, 2), (230, 2), (7, 3), (1, 2), (0, 2), (5, 1)] {
            let r = split_chunks(chunks, parts);
            assert_eq!(r.len(), parts);
            assert_eq!(r.first().map(|x| x.start), Some(0));
            assert_eq!(r.last().map(|x| x.end), Some(chunks));
            assert!(r.windows(2).all(|w| w[0].end == w[1].start));
            let sizes: Vec<usize> = r.iter().map(|x| x.len()).collect();
            let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
            assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{sizes:?}");
        }
    }

    #[test]
    fn partial_aggregates_merge_by_group() {
        let a = QueryResult {
            groups: vec![(1, 10, 2), (5, i64::MAX, 1)],
        };
        let b = QueryResult {
            groups: vec![(0, -3, 1), (5, 2, 1)],
        };
        let m = merge(&[a, b]);
        assert_eq!(
            m.groups,
            vec![(0, -3, 1), (1, 10, 2), (5, i64::MAX.wrapping_add(2), 2)]
        );
    }
}
