//! A table's fields decoded into GPU memory, buffer by buffer in Arrow's layout where the
//! stored form already is Arrow's (`table.md` §7): the step before exporting them through the
//! Arrow C Device Data Interface.
//!
//! Each physical column goes through [`TableReader::read_gpu`] (integers in one launch per
//! codec, bitmaps, bytes and text by their GPU decoders). What is Arrow's layout as decoded:
//! integer, float (bit patterns), date, time, timestamp and duration values; boolean values and
//! validity bitmaps (bits packed least significant bit first, as Arrow's); dictionary codes;
//! binary bytes. What is not yet: utf8 offsets stay per-chunk relative `u32` ends
//! ([`crate::GpuData::Utf8`]), binary values have `u32` lengths rather than offsets, and
//! decimals are the stored `i64` (Arrow's Decimal128 is `i128`): each needs a small kernel
//! (a rebase or scan, a widening) in `tessera-gpu`, not written yet.

use tessera_format::table::{FieldMeta, Role};
use tessera_format::{Error, Result};
use tessera_gpu::Gpu;

use crate::gpu_column::GpuColumn;
use crate::read::TableReader;

use super::read::ArrowTableReader;

/// One field's physical columns decoded on the GPU.
#[derive(Debug)]
pub struct GpuField {
    /// The field as stored (name, type, roles).
    pub meta: FieldMeta,
    /// Values (or dictionary codes).
    pub values: GpuColumn,
    /// The validity bitmap; `None` when the field has no nulls.
    pub validity: Option<GpuColumn>,
    /// Binary value lengths (u32).
    pub lengths: Option<GpuColumn>,
    /// Dictionary values, and binary dictionary lengths.
    pub dictionary: Option<(GpuColumn, Option<GpuColumn>)>,
    /// An ALP float field's params, exception rows and exception bits (`table.md` §8); its
    /// `values` then hold the digits.
    pub alp: Option<[GpuColumn; 3]>,
}

impl ArrowTableReader<'_> {
    /// Decodes the selected fields into GPU memory on `gpu` (payload checksums are verified on
    /// the host first; corrupt chunks give the CPU decoders' errors).
    pub fn read_gpu(&self, gpu: &Gpu) -> Result<Vec<GpuField>> {
        let t: &TableReader = self.table_reader();
        self.selected_fields()
            .map(|f| {
                let col = |r: Role| f.column(r).map(|c| t.read_gpu(c, gpu)).transpose();
                let values = col(Role::Values)?.ok_or_else(|| {
                    Error::InvalidArgument(format!("field '{}' has no values", f.name))
                })?;
                let dictionary = match col(Role::DictValues)? {
                    Some(d) => Some((d, col(Role::DictLengths)?)),
                    None => None,
                };
                let alp = match (
                    col(Role::AlpParams)?,
                    col(Role::ExceptionRows)?,
                    col(Role::ExceptionBits)?,
                ) {
                    (Some(p), Some(r), Some(b)) => Some([p, r, b]),
                    _ => None,
                };
                Ok(GpuField {
                    alp,
                    meta: f.clone(),
                    values,
                    validity: col(Role::Validity)?,
                    lengths: col(Role::Lengths)?,
                    dictionary,
                })
            })
            .collect()
    }
}
