//! The SSB tables on the GPU: each table's columns uploaded as stored (every chunk with the
//! codec auto chose for it) or as plain values (the uncompressed baseline), then the queries
//! run by the generated tile-based kernels (`tessera_gpu::ssb`).

use std::collections::HashMap;

use tessera::gpu::ssb::plan::{QueryPlan, QueryResult};
use tessera::gpu::ssb::{SsbColumn, SsbTable};
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
    let chunks = column_chunks(t, name, layout)?;
    let refs: Vec<ChunkRef<'_>> = chunks
        .iter()
        .map(|(codec, p, n)| ChunkRef {
            codec: *codec,
            payload: p,
            value_count: *n,
        })
        .collect();
    gpu.ssb_upload_column(&refs)
}

/// Every table of a data set on the device.
#[derive(Debug)]
pub struct DeviceTables {
    pub fact: SsbTable,
    pub dims: HashMap<String, SsbTable>,
}

/// Uploads every column of every table in `layout`.
pub fn upload(gpu: &Gpu, ds: &Dataset, layout: Layout) -> Result<DeviceTables> {
    let mut dims = HashMap::new();
    let mut fact = None;
    for name in TABLES {
        let t = ds.table(name)?;
        let cols = t
            .columns()
            .iter()
            .map(|c| Ok((c.name.clone(), upload_column(gpu, t, &c.name, layout)?)))
            .collect::<Result<Vec<_>>>()?;
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

/// Runs `p` on the device tables (hash tables built on the device, then the probe).
pub fn run(gpu: &Gpu, t: &DeviceTables, p: &QueryPlan) -> Result<QueryResult> {
    gpu.ssb_run(p, &t.fact, &t.dims)
}
