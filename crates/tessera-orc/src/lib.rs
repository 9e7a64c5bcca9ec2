//! Apache ORC files (ORC v1 specification, file versions 0.11 and 0.12) read into Arrow
//! record batches, one batch per stripe.
//!
//! - [`OrcFile`] checks the file's tail (postscript, footer, stripe list, type tree) and places
//!   each stripe's streams; every offset and length is checked against the file first.
//! - [`OrcReader`] decodes the selected top-level columns of each stripe on the CPU through the
//!   ORC references of `tessera_codecs` (RLE v1/v2, byte RLE, booleans; ZLIB through
//!   `tessera_codecs::deflate`, SNAPPY/LZ4/ZSTD through their crates).
//! - [`gpu`] decodes a file's compression chunks and integer streams on the GPU with the batched
//!   CODAG decoders of `tessera_gpu::codag` (`docs/gpu/orc.md`), into Arrow batches on the host
//!   or GPU-resident Arrow arrays ([`gpu::read_device`]).
//!
//! Types: boolean, tinyint..bigint, float, double, string/varchar/char (DIRECT and DICTIONARY,
//! RLE v1 and v2), binary, date (Arrow `Date32`), timestamp (Arrow timestamp ns without a time
//! zone: the wall clock as written, for files written in UTC/GMT; another writer time zone is a
//! clear error), decimal (Arrow `Decimal128`, any precision up to 38). List, map, struct, union
//! and timestamp with local time zone give [`OrcError::UnsupportedType`] naming the column.

mod compress;
mod cpu;
mod error;
mod file;
pub mod gpu;
pub mod proto;
mod schema;
pub mod split;

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use rayon::prelude::*;

pub use compress::{chunks as compression_chunks, decompress, ChunkRef, Compression};
pub use cpu::MAX_VALUES_PER_BYTE;
pub use error::{OrcError, Result};
pub use file::{OrcColumn, OrcFile, OrcType, StripeInfo, StripeLayout, MAX_BLOCK_SIZE};
pub use schema::{arrow_field, arrow_type, TIMESTAMP_EPOCH_2015};

/// Whether `bytes` start like an ORC file.
pub fn is_orc(bytes: &[u8]) -> bool {
    bytes.starts_with(b"ORC")
}

/// Selected columns of an [`OrcFile`] read stripe by stripe on the CPU.
#[derive(Debug)]
pub struct OrcReader<'a> {
    pub(crate) file: &'a OrcFile,
    pub(crate) cols: Vec<usize>,
    schema: SchemaRef,
}

impl<'a> OrcReader<'a> {
    /// A reader of the named columns (all when `None`); fails on an unknown name or a column of
    /// an unsupported type.
    pub fn new(file: &'a OrcFile, columns: Option<&[String]>) -> Result<OrcReader<'a>> {
        let cols = file.select(columns)?;
        let fields: Vec<_> = cols
            .iter()
            .filter_map(|&i| arrow_field(&file.columns()[i]))
            .collect();
        Ok(OrcReader {
            file,
            cols,
            schema: Arc::new(Schema::new(fields)),
        })
    }

    /// The Arrow schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Indices into [`OrcFile::columns`] of the selected columns.
    pub fn selected(&self) -> &[usize] {
        &self.cols
    }

    /// Stripe `s` as one record batch (its columns decoded in parallel).
    pub fn read_stripe(&self, s: usize) -> Result<RecordBatch> {
        let layout = self.file.stripe_layout(s)?;
        self.assemble(s, &layout, None)
    }

    /// Stripe `s`'s batch from its layout; `gpu` holds, per selected column, the streams the GPU
    /// decompressed and the values it decoded (the rest is decoded here).
    pub(crate) fn assemble(
        &self,
        s: usize,
        layout: &StripeLayout,
        gpu: Option<&[gpu::ColumnDecoded]>,
    ) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self
            .cols
            .par_iter()
            .enumerate()
            .map(|(k, &i)| {
                let c = &self.file.columns()[i];
                let g = gpu.and_then(|g| g.get(k));
                let cs = cpu::ColumnStreams::gather(
                    self.file,
                    s,
                    layout,
                    c,
                    g.map(|g| &g.inflated),
                    g.map(|g| &g.pre),
                )?;
                cpu::decode_column(&cs)
            })
            .collect::<Result<_>>()?;
        let opts = RecordBatchOptions::new().with_row_count(Some(layout.rows as usize));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &opts,
        )?)
    }

    /// Every stripe, in order.
    pub fn batches(&self) -> impl Iterator<Item = Result<RecordBatch>> + '_ {
        (0..self.file.stripes().len()).map(|s| self.read_stripe(s))
    }

    /// Every stripe decoded in parallel.
    pub fn read_all(&self) -> Result<Vec<RecordBatch>> {
        (0..self.file.stripes().len())
            .into_par_iter()
            .map(|s| self.read_stripe(s))
            .collect()
    }
}
