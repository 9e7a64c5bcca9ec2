//! Reading a `.tsr` table as Arrow record batches (`table.md` §4, §7).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;
use tessera_format::table::{FieldMeta, FieldType, Role, TableMeta, ALP_VECTOR_ROWS};
use tessera_format::{Error, LogicalType, Result};

use super::alp::{self, Float};
use super::{arrow_err, data_type};
use crate::device::Engine;
use crate::read::{StringColumn, TableReader};

/// Rows a batch holds unless asked otherwise.
pub const DEFAULT_BATCH_ROWS: usize = 1 << 20;

/// Reads the Arrow table a `.tsr` file holds (see the [module](super) docs).
#[derive(Debug)]
pub struct ArrowTableReader<'a> {
    table: &'a TableReader,
    meta: &'a TableMeta,
    /// The selected fields' indices in the table.
    selected: Vec<usize>,
    schema: SchemaRef,
}

impl<'a> ArrowTableReader<'a> {
    /// The Arrow table of `table`, all fields or those named in `columns` (in that order).
    /// Fails when the file has no table section (a file of plain columns) or a name is unknown.
    pub fn new(table: &'a TableReader, columns: Option<&[String]>) -> Result<Self> {
        let meta = table
            .container()
            .directory()
            .table
            .as_ref()
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "the file holds columns, not an Arrow table (it has no table section)".into(),
                )
            })?;
        let selected: Vec<usize> = match columns {
            None => (0..meta.fields.len()).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    meta.fields
                        .iter()
                        .position(|f| &f.name == n)
                        .ok_or_else(|| {
                            Error::InvalidArgument(format!("no column '{n}' in the table"))
                        })
                })
                .collect::<Result<_>>()?,
        };
        let fields: Vec<Field> = selected
            .iter()
            .map(|&i| arrow_field(&meta.fields[i]))
            .collect();
        let md: HashMap<String, String> = meta.metadata.iter().cloned().collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, md));
        Ok(ArrowTableReader {
            table,
            meta,
            selected,
            schema,
        })
    }

    /// The schema of the batches this reader gives.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows of the table.
    pub fn rows(&self) -> u64 {
        self.meta.row_count
    }

    /// The table section.
    pub fn table_meta(&self) -> &TableMeta {
        self.meta
    }

    /// The table file read.
    pub fn table_reader(&self) -> &TableReader {
        self.table
    }

    /// The selected fields, in order.
    pub fn selected_fields(&self) -> impl Iterator<Item = &FieldMeta> + '_ {
        self.selected.iter().map(|&i| &self.meta.fields[i])
    }

    /// The whole selection as one batch.
    pub fn read_all(&self, engine: &mut Engine) -> Result<RecordBatch> {
        let rows = usize::try_from(self.meta.row_count)
            .map_err(|_| Error::InvalidArgument("table larger than memory".into()))?;
        let mut it = self.batches(rows.max(1), engine)?;
        match it.next_batch()? {
            Some(b) => Ok(b),
            None => RecordBatch::try_new_with_options(
                self.schema.clone(),
                self.schema
                    .fields()
                    .iter()
                    .map(|f| arrow_array::new_empty_array(f.data_type()))
                    .collect(),
                &RecordBatchOptions::new().with_row_count(Some(0)),
            )
            .map_err(|e| arrow_err("empty batch", e)),
        }
    }

    /// Batches of `batch_rows` rows (the last may hold fewer), decoded as they are asked for.
    pub fn batches<'e>(
        &self,
        batch_rows: usize,
        engine: &'e mut Engine,
    ) -> Result<Batches<'_, 'e>> {
        if batch_rows == 0 {
            return Err(Error::InvalidArgument("batches of 0 rows".into()));
        }
        let mut fields = Vec::with_capacity(self.selected.len());
        for &i in &self.selected {
            let f = &self.meta.fields[i];
            let dict = match f.column(Role::DictValues) {
                Some(c) => Some(read_dictionary(self.table, f, c, engine)?),
                None => None,
            };
            fields.push(FieldCursor {
                meta: f,
                values: Cursor::new(f.column(Role::Values)),
                validity: f.column(Role::Validity).map(|c| Cursor::new(Some(c))),
                lengths: f.column(Role::Lengths).map(|c| Cursor::new(Some(c))),
                dict,
                alp: AlpCursor::new(self.table, f, self.meta.row_count),
                runs: f.column(Role::RunEnds).map(|c| RunCursor {
                    ends: Cursor::new(Some(c)),
                    left: self.table.columns()[c].value_count,
                    end: 0,
                    row: 0,
                    value: Vec::new(),
                    table_rows: self.meta.row_count,
                }),
            });
        }
        Ok(Batches {
            reader: self,
            engine,
            fields,
            batch_rows,
            done: 0,
        })
    }
}

/// The Arrow field a stored field restores.
pub fn arrow_field(f: &FieldMeta) -> Field {
    let md: HashMap<String, String> = f.metadata.iter().cloned().collect();
    Field::new(&f.name, data_type(&f.ty, f.arrow_dictionary), f.nullable).with_metadata(md)
}

/// Batches of a table, decoded as they are asked for.
#[derive(Debug)]
pub struct Batches<'r, 'e> {
    reader: &'r ArrowTableReader<'r>,
    engine: &'e mut Engine,
    fields: Vec<FieldCursor<'r>>,
    batch_rows: usize,
    done: u64,
}

impl Batches<'_, '_> {
    /// The next batch, or `None` after the last row.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let left = self.reader.meta.row_count - self.done;
        if left == 0 {
            return Ok(None);
        }
        let n = (self.batch_rows as u64).min(left) as usize;
        let table = self.reader.table;
        // Fields decode in parallel on the CPU; on the GPU one after the other through the one
        // engine (each field's chunks still go in batched launches).
        let arrays: Vec<ArrayRef> = if self.engine.gpu().is_some() {
            let mut out = Vec::with_capacity(self.fields.len());
            for f in &mut self.fields {
                out.push(f.take(table, n, self.engine)?);
            }
            out
        } else {
            self.fields
                .par_iter_mut()
                .map(|f| f.take(table, n, &mut Engine::cpu()))
                .collect::<Result<_>>()?
        };
        self.done += n as u64;
        RecordBatch::try_new_with_options(
            self.reader.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map(Some)
        .map_err(|e| arrow_err("cannot assemble a batch", e))
    }
}

impl Iterator for Batches<'_, '_> {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

/// Decoded values of one physical column not yet handed out.
#[derive(Debug)]
enum Held {
    None,
    /// Raw little-endian values (packed bits for bits), `pos` values in.
    Raw(Buffer),
    Strings(StringColumn),
}

/// Walks one physical column chunk by chunk.
#[derive(Debug)]
struct Cursor {
    col: Option<usize>,
    next_chunk: usize,
    held: Held,
    pos: usize,
    avail: usize,
}

impl Cursor {
    fn new(col: Option<usize>) -> Cursor {
        Cursor {
            col,
            next_chunk: 0,
            held: Held::None,
            pos: 0,
            avail: 0,
        }
    }

    /// Decodes the next chunks, enough for `need` values (at least one chunk).
    fn refill(&mut self, t: &TableReader, need: usize, engine: &mut Engine) -> Result<()> {
        let col = self
            .col
            .ok_or_else(|| Error::InvalidArgument("no column".into()))?;
        let meta = &t.columns()[col];
        let first = self.next_chunk;
        let mut end = first;
        let mut got = 0usize;
        while end < meta.chunks.len() && (got < need || end == first) {
            got += meta.chunks[end].value_count as usize;
            end += 1;
        }
        if end == first {
            return Err(Error::InvalidArgument(format!(
                "column '{}' ends {need} values before the table's rows do",
                meta.name
            )));
        }
        self.held = if meta.logical_type == LogicalType::Utf8 {
            Held::Strings(t.read_strings(col, first..end, engine)?)
        } else {
            let len = usize::try_from(t.raw_len(col, first..end)?)
                .map_err(|_| Error::InvalidArgument("chunks larger than memory".into()))?;
            let mut buf = MutableBuffer::from_len_zeroed(len);
            t.read_raw_into(col, first..end, buf.as_slice_mut(), engine)?;
            Held::Raw(buf.into())
        };
        self.next_chunk = end;
        self.pos = 0;
        self.avail = got;
        Ok(())
    }

    /// The next `n` values of a fixed-size column as one buffer of `width`-byte values.
    fn take_fixed(
        &mut self,
        t: &TableReader,
        n: usize,
        width: usize,
        e: &mut Engine,
    ) -> Result<Buffer> {
        if let (Held::Raw(b), true) = (&self.held, self.avail >= n) {
            let out = b.slice_with_length(self.pos * width, n * width);
            self.pos += n;
            self.avail -= n;
            // An aligned slice is handed out as is; Arrow wants typed buffers aligned.
            if out.as_ptr().align_offset(width.max(1)) == 0 {
                return Ok(out);
            }
            return Ok(Buffer::from_slice_ref(out.as_slice()));
        }
        let mut out = MutableBuffer::with_capacity(n * width);
        let mut need = n;
        while need > 0 {
            if self.avail == 0 {
                self.refill(t, need, e)?;
            }
            let k = need.min(self.avail);
            if let Held::Raw(b) = &self.held {
                out.extend_from_slice(&b.as_slice()[self.pos * width..(self.pos + k) * width]);
            }
            self.pos += k;
            self.avail -= k;
            need -= k;
        }
        Ok(out.into())
    }

    /// The next `n` bits of a bits column.
    fn take_bits(&mut self, t: &TableReader, n: usize, e: &mut Engine) -> Result<BooleanBuffer> {
        if let (Held::Raw(b), true) = (&self.held, self.avail >= n) {
            let out = BooleanBuffer::new(b.clone(), self.pos, n);
            self.pos += n;
            self.avail -= n;
            return Ok(out);
        }
        let mut out = BooleanBufferBuilder::new(n);
        let mut need = n;
        while need > 0 {
            if self.avail == 0 {
                self.refill(t, need, e)?;
            }
            let k = need.min(self.avail);
            if let Held::Raw(b) = &self.held {
                out.append_packed_range(self.pos..self.pos + k, b.as_slice());
            }
            self.pos += k;
            self.avail -= k;
            need -= k;
        }
        Ok(out.finish())
    }

    /// The next `n` strings: end offsets relative to the first string's start, and their bytes.
    fn take_strings(
        &mut self,
        t: &TableReader,
        n: usize,
        e: &mut Engine,
    ) -> Result<(Vec<u64>, Vec<u8>)> {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u64);
        let mut data = Vec::new();
        let mut need = n;
        while need > 0 {
            if self.avail == 0 {
                self.refill(t, need, e)?;
            }
            let k = need.min(self.avail);
            if let Held::Strings(s) = &self.held {
                let (a, b) = (s.offsets[self.pos], s.offsets[self.pos + k]);
                let base = data.len() as u64;
                offsets.extend(
                    s.offsets[self.pos + 1..=self.pos + k]
                        .iter()
                        .map(|&o| o - a + base),
                );
                data.extend_from_slice(&s.data[a as usize..b as usize]);
            }
            self.pos += k;
            self.avail -= k;
            need -= k;
        }
        Ok((offsets, data))
    }
}

/// A field's cursors and, for a dictionary field, its decoded dictionary.
#[derive(Debug)]
struct FieldCursor<'m> {
    meta: &'m FieldMeta,
    values: Cursor,
    validity: Option<Cursor>,
    lengths: Option<Cursor>,
    dict: Option<Dictionary>,
    alp: Option<AlpCursor>,
    runs: Option<RunCursor>,
}

/// How far a run-encoded field (`table.md` §9) has been read: the open run's value and end.
#[derive(Debug)]
struct RunCursor {
    ends: Cursor,
    /// Runs not yet taken from their columns.
    left: u64,
    /// The open run's end (0 before the first run).
    end: u64,
    /// The next row handed out.
    row: u64,
    value: Vec<u8>,
    table_rows: u64,
}

impl RunCursor {
    /// The next `n` rows' values (`width` bytes each), expanded from the runs in `values`.
    fn take(
        &mut self,
        t: &TableReader,
        values: &mut Cursor,
        n: usize,
        width: usize,
        e: &mut Engine,
    ) -> Result<Buffer> {
        let mut out = MutableBuffer::with_capacity(n * width);
        let stop = self.row + n as u64;
        while self.row < stop {
            if self.row == self.end {
                if self.left == 0 {
                    return Err(Error::CountMismatch {
                        what: "run ends vs the table's rows",
                        expected: self.table_rows,
                        found: self.end,
                    });
                }
                let raw = self.ends.take_fixed(t, 1, 8, e)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(&raw.as_slice()[..8]);
                let end = u64::from_le_bytes(a);
                let index = t.columns()[self.ends.col.unwrap_or(0)].value_count - self.left;
                self.left -= 1;
                if end <= self.end
                    || end > self.table_rows
                    || (self.left == 0 && end != self.table_rows)
                {
                    return Err(Error::ValueOutOfRange {
                        index,
                        ty: "run end (strictly ascending, the last the table's rows)",
                        found: end,
                    });
                }
                self.value = values.take_fixed(t, 1, width, e)?.as_slice().to_vec();
                self.end = end;
            }
            let k = (self.end.min(stop) - self.row) as usize;
            for _ in 0..k {
                out.extend_from_slice(&self.value);
            }
            self.row += k as u64;
        }
        Ok(out.into())
    }
}

/// How far an ALP float field (`table.md` §8) has been read: the params of the vectors the
/// next rows fall in and the exceptions not yet applied, taken from their columns a bounded
/// number at a time.
#[derive(Debug)]
struct AlpCursor {
    ty: Float,
    /// The next row handed out.
    row: u64,
    table_rows: u64,
    params: Cursor,
    /// `(e, f)` of vectors `first_vector..`.
    held_params: Vec<(u8, u8)>,
    first_vector: u64,
    params_left: u64,
    exception_rows: Cursor,
    exception_bits: Cursor,
    exceptions_left: u64,
    /// Exceptions taken from their columns, not yet applied, in order.
    held: std::collections::VecDeque<(u64, u64)>,
    /// The row of the last exception applied (they must ascend).
    last: Option<u64>,
}

/// Exceptions taken from their columns at a time.
const EXCEPTIONS_AT_ONCE: u64 = 4096;

impl AlpCursor {
    fn new(t: &TableReader, f: &FieldMeta, table_rows: u64) -> Option<AlpCursor> {
        let params = f.column(Role::AlpParams)?;
        let rows = f.column(Role::ExceptionRows)?;
        let bits = f.column(Role::ExceptionBits)?;
        Some(AlpCursor {
            ty: if f.ty == FieldType::Float32 {
                Float::F32
            } else {
                Float::F64
            },
            row: 0,
            table_rows,
            params: Cursor::new(Some(params)),
            held_params: Vec::new(),
            first_vector: 0,
            params_left: t.columns()[params].value_count,
            exception_rows: Cursor::new(Some(rows)),
            exception_bits: Cursor::new(Some(bits)),
            exceptions_left: t.columns()[rows].value_count,
            held: std::collections::VecDeque::new(),
            last: None,
        })
    }

    /// The bit patterns of the next `n` rows from their `digits` (little-endian i64).
    fn take(
        &mut self,
        t: &TableReader,
        digits: &Buffer,
        n: usize,
        e: &mut Engine,
    ) -> Result<Buffer> {
        if n == 0 {
            return Ok(Buffer::from_vec(Vec::<u8>::new()));
        }
        let v0 = self.row / ALP_VECTOR_ROWS;
        let v1 = (self.row + n as u64 - 1) / ALP_VECTOR_ROWS;
        let drop = (v0 - self.first_vector).min(self.held_params.len() as u64) as usize;
        self.held_params.drain(..drop);
        self.first_vector += drop as u64;
        let have = self.first_vector + self.held_params.len() as u64;
        if have <= v1 {
            let k = v1 + 1 - have;
            if k > self.params_left {
                return Err(Error::CountMismatch {
                    what: "ALP params of a float field vs its vectors",
                    expected: v1 + 1,
                    found: have + self.params_left,
                });
            }
            let raw = self.params.take_fixed(t, k as usize, 2, e)?;
            self.params_left -= k;
            for (j, c) in raw.as_slice().chunks_exact(2).enumerate() {
                let p = u16::from_le_bytes([c[0], c[1]]);
                let ef = alp::unpack(self.ty, p).ok_or(Error::ValueOutOfRange {
                    index: have + j as u64,
                    ty: "ALP params (f <= e <= the type's largest exponent)",
                    found: p as u64,
                })?;
                self.held_params.push(ef);
            }
        }
        let ty = self.ty;
        let w = ty.width();
        let mut out = vec![0u8; n * w];
        let d = digits.as_slice();
        for (i, o) in out.chunks_exact_mut(w).enumerate() {
            let row = self.row + i as u64;
            let (ea, fa) = self.held_params[(row / ALP_VECTOR_ROWS - self.first_vector) as usize];
            let mut a = [0u8; 8];
            a.copy_from_slice(&d[i * 8..i * 8 + 8]);
            let bits = ty.decode(i64::from_le_bytes(a), ea, fa);
            o.copy_from_slice(&bits.to_le_bytes()[..w]);
        }
        let end = self.row + n as u64;
        loop {
            if self.held.is_empty() && self.exceptions_left > 0 {
                let k = self.exceptions_left.min(EXCEPTIONS_AT_ONCE) as usize;
                let rows = self.exception_rows.take_fixed(t, k, 8, e)?;
                let bits = self.exception_bits.take_fixed(t, k, w, e)?;
                self.exceptions_left -= k as u64;
                for (r, b) in rows
                    .as_slice()
                    .chunks_exact(8)
                    .zip(bits.as_slice().chunks_exact(w))
                {
                    let mut ra = [0u8; 8];
                    ra.copy_from_slice(r);
                    let mut ba = [0u8; 8];
                    ba[..w].copy_from_slice(b);
                    self.held
                        .push_back((u64::from_le_bytes(ra), u64::from_le_bytes(ba)));
                }
            }
            let Some(&(row, bits)) = self.held.front() else {
                break;
            };
            if row >= end {
                break;
            }
            if row < self.row || self.last.is_some_and(|l| row <= l) {
                return Err(Error::ValueOutOfRange {
                    index: self.last.map_or(0, |l| l + 1),
                    ty: "ALP exception row (rows ascend)",
                    found: row,
                });
            }
            let at = (row - self.row) as usize * w;
            out[at..at + w].copy_from_slice(&bits.to_le_bytes()[..w]);
            self.last = Some(row);
            self.held.pop_front();
        }
        self.row = end;
        if end == self.table_rows && (!self.held.is_empty() || self.exceptions_left > 0) {
            let found = self.held.front().map_or(end, |x| x.0);
            return Err(Error::ValueOutOfRange {
                index: end,
                ty: "ALP exception row (below the table's rows)",
                found,
            });
        }
        Ok(Buffer::from_vec(out))
    }
}

/// A decoded dictionary: the Arrow array and, for byte-like values, its offsets and bytes.
#[derive(Debug)]
struct Dictionary {
    array: ArrayRef,
    var: Option<(Vec<u64>, Vec<u8>)>,
}

fn offsets_buffer(name: &str, offsets: &[u64], large: bool) -> Result<Buffer> {
    if large {
        let v: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
        return Ok(Buffer::from_vec(v));
    }
    let last = offsets.last().copied().unwrap_or(0);
    if last > i32::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "column '{name}': {last} bytes in one batch exceed 32-bit Arrow offsets; read smaller batches"
        )));
    }
    Ok(Buffer::from_vec(
        offsets.iter().map(|&o| o as i32).collect::<Vec<i32>>(),
    ))
}

fn is_large(ty: &FieldType) -> bool {
    matches!(ty, FieldType::LargeUtf8 | FieldType::LargeBinary)
}

/// Builds an array of the field's value type from its stored parts; Arrow's validation runs
/// over everything (UTF-8, offsets, lengths), so bad data is an error, never a panic.
fn build(
    name: &str,
    ty: &FieldType,
    n: usize,
    values: Buffer,
    offsets: Option<Buffer>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let mut b = ArrayDataBuilder::new(data_type(ty, None))
        .len(n)
        .nulls(nulls);
    b = match offsets {
        Some(o) => b.add_buffer(o).add_buffer(values),
        None => b.add_buffer(values),
    };
    let data = b.build().map_err(|e| {
        arrow_err(
            &format!("column '{name}' does not form a valid Arrow array"),
            e,
        )
    })?;
    Ok(make_array(data))
}

/// Widens stored i64 decimals to Arrow's i128.
fn widen_decimal(raw: &Buffer) -> Buffer {
    let v: Vec<i128> = raw
        .as_slice()
        .chunks_exact(8)
        .map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            i64::from_le_bytes(a) as i128
        })
        .collect();
    Buffer::from_vec(v)
}

fn read_dictionary(
    t: &TableReader,
    f: &FieldMeta,
    col: usize,
    e: &mut Engine,
) -> Result<Dictionary> {
    // A binary dictionary's entries are its lengths; its values column counts bytes.
    let entries = f.column(Role::DictLengths).unwrap_or(col);
    let count = usize::try_from(t.columns()[entries].value_count)
        .map_err(|_| Error::InvalidArgument("dictionary larger than memory".into()))?;
    let mut c = Cursor::new(Some(col));
    let name = &f.name;
    let (array, var) = match &f.ty {
        FieldType::Utf8 | FieldType::LargeUtf8 | FieldType::Binary | FieldType::LargeBinary => {
            let (o, d) = match f.ty {
                FieldType::Utf8 | FieldType::LargeUtf8 if count == 0 => (vec![0], vec![]),
                FieldType::Utf8 | FieldType::LargeUtf8 => c.take_strings(t, count, e)?,
                _ => {
                    let lcol = f.column(Role::DictLengths);
                    read_binary(t, name, &mut c, &mut Cursor::new(lcol), count, e)?
                }
            };
            let arr = build(
                name,
                &f.ty,
                count,
                Buffer::from_vec(d.clone()),
                Some(offsets_buffer(name, &o, is_large(&f.ty))?),
                None,
            )?;
            (arr, Some((o, d)))
        }
        ty => {
            let raw = if count == 0 {
                Buffer::from_vec(Vec::<u8>::new())
            } else {
                c.take_fixed(t, count, ty.physical().width(), e)?
            };
            let raw = if matches!(ty, FieldType::Decimal128 { .. }) {
                widen_decimal(&raw)
            } else {
                // Decoded bytes may sit at any address; Arrow wants the type's alignment.
                let mut aligned = MutableBuffer::new(raw.len());
                aligned.extend_from_slice(raw.as_slice());
                aligned.into()
            };
            (build(name, ty, count, raw, None, None)?, None)
        }
    };
    Ok(Dictionary { array, var })
}

/// The `n` values of a fixed-width field under an automatic dictionary (`table.md` §6.1):
/// each valid row's dictionary value by its code (null rows get zeros).
fn fixed_from_dictionary(
    name: &str,
    ty: &FieldType,
    n: usize,
    dictionary: &ArrayRef,
    code_at: impl Fn(usize) -> u64,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let dd = dictionary.to_data();
    let w = dd.data_type().primitive_width().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "column '{name}': an automatic dictionary of a {} field",
            ty.physical().name()
        ))
    })?;
    let dvals = dd.buffers().first().map_or(&[][..], |b| b.as_slice());
    let dlen = dd.len();
    // Aligned for the value type, as Arrow's validation wants.
    let mut out = MutableBuffer::from_len_zeroed(n * w);
    for (i, slot) in out.as_slice_mut().chunks_exact_mut(w).enumerate() {
        if nulls.as_ref().is_none_or(|nb| nb.is_valid(i)) {
            let c = code_at(i);
            if c >= dlen as u64 {
                return Err(Error::ValueOutOfRange {
                    index: i as u64,
                    ty: "dictionary code",
                    found: c,
                });
            }
            let at = (dd.offset() + c as usize) * w;
            slot.copy_from_slice(&dvals[at..at + w]);
        }
    }
    build(name, ty, n, out.into(), None, nulls)
}

/// `n` binary values: lengths from `lengths`, then as many bytes from `bytes`.
fn read_binary(
    t: &TableReader,
    name: &str,
    bytes: &mut Cursor,
    lengths: &mut Cursor,
    n: usize,
    e: &mut Engine,
) -> Result<(Vec<u64>, Vec<u8>)> {
    let lens = if n == 0 {
        Buffer::from_vec(Vec::<u8>::new())
    } else {
        lengths.take_fixed(t, n, 4, e)?
    };
    let mut offsets = Vec::with_capacity(n + 1);
    let mut at = 0u64;
    offsets.push(0);
    for c in lens.as_slice().chunks_exact(4) {
        at += u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64;
        offsets.push(at);
    }
    let total = usize::try_from(at)
        .map_err(|_| Error::InvalidArgument("values larger than memory".into()))?;
    if let Some(col) = bytes.col {
        let stored = t.columns()[col].value_count;
        let used: u64 = t.columns()[col].chunks[..bytes.next_chunk]
            .iter()
            .map(|c| c.value_count as u64)
            .sum::<u64>()
            - bytes.avail as u64;
        if used + at > stored {
            return Err(Error::CountMismatch {
                what: "binary lengths of a column vs the bytes stored",
                expected: stored,
                found: used + at,
            });
        }
        let _ = name;
    }
    let data = if total == 0 {
        Vec::new()
    } else {
        bytes.take_fixed(t, total, 1, e)?.as_slice().to_vec()
    };
    Ok((offsets, data))
}

impl FieldCursor<'_> {
    fn take(&mut self, t: &TableReader, n: usize, e: &mut Engine) -> Result<ArrayRef> {
        let name = &self.meta.name;
        let nulls = match self.validity.as_mut() {
            Some(v) => Some(NullBuffer::new(v.take_bits(t, n, e)?)),
            None => None,
        };
        let ty = &self.meta.ty;
        if let Some(dict) = &self.dict {
            let key = self.meta.arrow_dictionary;
            let code_ty = t.columns()[self.values.col.unwrap_or(0)].logical_type;
            let codes = self.values.take_fixed(t, n, code_ty.width(), e)?;
            let code_at = |i: usize| -> u64 {
                let w = code_ty.width();
                let mut a = [0u8; 8];
                a[..w].copy_from_slice(&codes.as_slice()[i * w..(i + 1) * w]);
                u64::from_le_bytes(a)
            };
            if let Some(k) = key {
                let dt = DataType::Dictionary(
                    Box::new(super::int_data_type(k)),
                    Box::new(data_type(ty, None)),
                );
                let data = ArrayDataBuilder::new(dt)
                    .len(n)
                    .nulls(nulls)
                    .add_buffer(codes)
                    .child_data(vec![dict.array.to_data()])
                    .build()
                    .map_err(|er| {
                        arrow_err(
                            &format!("column '{name}' does not form a valid Arrow dictionary"),
                            er,
                        )
                    })?;
                return Ok(make_array(data));
            }
            // An automatic dictionary: the plain values come back.
            let Some((doff, ddata)) = dict.var.as_ref() else {
                return fixed_from_dictionary(name, ty, n, &dict.array, code_at, nulls);
            };
            let dlen = doff.len() - 1;
            let mut offsets = Vec::with_capacity(n + 1);
            offsets.push(0u64);
            let mut data = Vec::new();
            for i in 0..n {
                if nulls.as_ref().is_none_or(|nb| nb.is_valid(i)) {
                    let c = code_at(i) as usize;
                    if c >= dlen {
                        return Err(Error::ValueOutOfRange {
                            index: i as u64,
                            ty: "dictionary code",
                            found: c as u64,
                        });
                    }
                    data.extend_from_slice(&ddata[doff[c] as usize..doff[c + 1] as usize]);
                }
                offsets.push(data.len() as u64);
            }
            let o = offsets_buffer(name, &offsets, is_large(ty))?;
            return build(name, ty, n, Buffer::from_vec(data), Some(o), nulls);
        }
        match ty {
            FieldType::Boolean => {
                let bits = self.values.take_bits(t, n, e)?;
                build(name, ty, n, bits.sliced(), None, nulls)
            }
            FieldType::Utf8 | FieldType::LargeUtf8 => {
                let (o, d) = self.values.take_strings(t, n, e)?;
                build(
                    name,
                    ty,
                    n,
                    Buffer::from_vec(d),
                    Some(offsets_buffer(name, &o, is_large(ty))?),
                    nulls,
                )
            }
            FieldType::Binary | FieldType::LargeBinary => {
                let lengths = self.lengths.as_mut().ok_or_else(|| {
                    Error::InvalidArgument(format!("column '{name}': no lengths"))
                })?;
                let (o, d) = read_binary(t, name, &mut self.values, lengths, n, e)?;
                build(
                    name,
                    ty,
                    n,
                    Buffer::from_vec(d),
                    Some(offsets_buffer(name, &o, is_large(ty))?),
                    nulls,
                )
            }
            FieldType::Decimal128 { .. } => {
                let raw = match self.runs.as_mut() {
                    Some(r) => r.take(t, &mut self.values, n, 8, e)?,
                    None => self.values.take_fixed(t, n, 8, e)?,
                };
                build(name, ty, n, widen_decimal(&raw), None, nulls)
            }
            FieldType::Float32 | FieldType::Float64 if self.alp.is_some() => {
                let digits = self.values.take_fixed(t, n, 8, e)?;
                let raw = match self.alp.as_mut() {
                    Some(a) => a.take(t, &digits, n, e)?,
                    None => digits,
                };
                build(name, ty, n, raw, None, nulls)
            }
            ty => {
                let w = ty.physical().width();
                let raw = match self.runs.as_mut() {
                    Some(r) => r.take(t, &mut self.values, n, w, e)?,
                    None => self.values.take_fixed(t, n, w, e)?,
                };
                build(name, ty, n, raw, None, nulls)
            }
        }
    }
}
