//! Writing Arrow record batches into a `.tsr` table (`table.md` §5).

use std::collections::HashMap;
use std::path::Path;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer};
use arrow_schema::{DataType, SchemaRef};
use rayon::prelude::*;
use tessera_codecs::column::{self, CodecOptions};
use tessera_codecs::text::{self, Strings};
use tessera_format::container::{ContainerWriter, Directory, MAX_NAME_LEN};
use tessera_format::table::{FieldMeta, FieldType, Role, TableMeta, ALP_VECTOR_ROWS};
use tessera_format::{CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

use super::alp::{self, Float};
use super::field_type;
use crate::write::{CHUNK_TEXT_BYTES, DEFAULT_CHUNK_VALUES};

/// Whether fields that are not Arrow dictionaries are dictionary-encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DictionaryChoice {
    /// Decided per field on its first non-empty batch (`table.md` §6): utf8 and binary fields
    /// get a dictionary when that batch's distinct values are at most a quarter of its rows and
    /// the dictionary's bytes plus the codes at `ceil(log2(distinct))` bits are at most half the
    /// values' bytes; fixed-width fields other than booleans (§6.1) when, on that batch's first
    /// `chunk_rows` values, the distinct values are at most a quarter of the rows and the codes
    /// plus the dictionary, each encoded by `auto`, take fewer bytes than the values as they
    /// would otherwise be stored (encoded by `auto`; ALP's columns for a float field that ALP
    /// would take).
    Auto,
    /// Never (Arrow dictionary fields stay dictionaries).
    Never,
}

/// Whether Float32 and Float64 fields are stored with ALP (`table.md` §8) or as bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatChoice {
    /// Decided per field on its first non-empty batch: ALP when that batch's values (its first
    /// `chunk_rows`) take fewer bytes as ALP digits, params and exceptions, each column encoded
    /// by `auto`, than as bit patterns encoded by `auto`.
    Auto,
    /// Always ALP.
    Alp,
    /// Never: bit patterns.
    Plain,
}

/// Whether fixed-width fields are stored as runs (`table.md` §9): one value a run plus the
/// runs' ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunChoice {
    /// Decided per field on its first non-empty batch: runs when, on that batch's first
    /// `chunk_rows` values (at least 64), the run values and run ends, each encoded by `auto`,
    /// take fewer bytes than the field would otherwise (its values, ALP columns or dictionary
    /// codes plus dictionary, whichever the other rules pick). Constant and sorted
    /// low-cardinality columns (years, months, days of a table sorted by date) are the case
    /// this is for: frame-of-reference pays its block metadata even at bit_width 0.
    Auto,
    /// Never.
    Never,
}

/// How an Arrow table is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrowWriteOptions {
    /// Rows per chunk of every row-aligned column: a multiple of 512 in `512..=2^24`. Utf8
    /// chunks also close at [`CHUNK_TEXT_BYTES`] of text.
    pub chunk_rows: usize,
    /// LLL's segment size and parse for text and bytes.
    pub codec_options: CodecOptions,
    /// Dictionary encoding of utf8 and binary fields.
    pub dictionary: DictionaryChoice,
    /// ALP for float fields.
    pub floats: FloatChoice,
    /// Runs for fixed-width fields.
    pub runs: RunChoice,
}

impl Default for ArrowWriteOptions {
    fn default() -> Self {
        ArrowWriteOptions {
            chunk_rows: DEFAULT_CHUNK_VALUES,
            codec_options: CodecOptions::default(),
            dictionary: DictionaryChoice::Auto,
            floats: FloatChoice::Auto,
            runs: RunChoice::Auto,
        }
    }
}

/// A physical column being written: its raw values until a chunk is full.
#[derive(Debug)]
enum Sink {
    /// Fixed-size values (integers, bytes) as little-endian bytes, or bits (packed, `bits`
    /// of them).
    Fixed {
        col: usize,
        ty: LogicalType,
        buf: Vec<u8>,
        bits: u64,
    },
    /// Strings, cut into chunks by count and text bytes.
    Utf8 {
        col: usize,
        current: Strings,
        done: Vec<Strings>,
    },
}

/// A full chunk waiting to be encoded.
enum Job {
    Fixed {
        col: usize,
        ty: LogicalType,
        raw: Vec<u8>,
        n: u64,
    },
    Utf8 {
        col: usize,
        strings: Strings,
    },
}

impl Sink {
    fn fixed(col: usize, ty: LogicalType) -> Sink {
        Sink::Fixed {
            col,
            ty,
            buf: Vec::new(),
            bits: 0,
        }
    }

    fn push_bytes(&mut self, raw: &[u8]) {
        if let Sink::Fixed { buf, .. } = self {
            buf.extend_from_slice(raw);
        }
    }

    /// Appends `len` bits of `bits` (any bit offset).
    fn push_bits(&mut self, bits: &BooleanBuffer) {
        if let Sink::Fixed { buf, bits: n, .. } = self {
            if *n % 8 == 0 && bits.offset() % 8 == 0 {
                let start = bits.offset() / 8;
                let bytes = bits.len().div_ceil(8);
                buf.extend_from_slice(&bits.values()[start..start + bytes]);
                if bits.len() % 8 != 0 {
                    if let Some(last) = buf.last_mut() {
                        *last &= (1u8 << (bits.len() % 8)) - 1;
                    }
                }
            } else {
                for b in bits.iter() {
                    push_bit(buf, *n, b);
                    *n += 1;
                }
                return;
            }
            *n += bits.len() as u64;
        }
    }

    /// Appends `n` set bits (a validity bitmap started after rows without nulls).
    fn push_ones(&mut self, count: u64) {
        if let Sink::Fixed { buf, bits, .. } = self {
            for _ in 0..count {
                push_bit(buf, *bits, true);
                *bits += 1;
            }
        }
    }

    fn push_string(&mut self, s: &[u8], chunk_rows: usize) -> Result<()> {
        if let Sink::Utf8 { current, done, .. } = self {
            if !current.is_empty()
                && (current.len() >= chunk_rows || current.data.len() + s.len() > CHUNK_TEXT_BYTES)
            {
                done.push(std::mem::take(current));
            }
            current.data.extend_from_slice(s);
            let end = u32::try_from(current.data.len())
                .ok()
                .filter(|&e| e as u64 <= text::MAX_TEXT_BYTES)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "a string of {} bytes is longer than a chunk holds ({} bytes)",
                        s.len(),
                        text::MAX_TEXT_BYTES
                    ))
                })?;
            current.ends.push(end);
        }
        Ok(())
    }

    /// Moves full chunks (or, at `last`, everything) into `jobs`.
    fn drain(&mut self, chunk_rows: usize, last: bool, jobs: &mut Vec<Job>) {
        match self {
            Sink::Fixed { col, ty, buf, bits } => {
                let chunk_bytes = ty.raw_len(chunk_rows as u64).unwrap_or(0) as usize;
                let mut at = 0;
                // A bits chunk is full when it has `chunk_rows` bits, not when the buffer has
                // its bytes: the buffer's last byte may be partial.
                while chunk_bytes > 0
                    && if *ty == LogicalType::Bits {
                        *bits >= (at as u64) * 8 + chunk_rows as u64
                    } else {
                        buf.len() - at >= chunk_bytes
                    }
                {
                    jobs.push(Job::Fixed {
                        col: *col,
                        ty: *ty,
                        raw: buf[at..at + chunk_bytes].to_vec(),
                        n: chunk_rows as u64,
                    });
                    at += chunk_bytes;
                }
                if last && at < buf.len() {
                    let n = if *ty == LogicalType::Bits {
                        *bits - (at as u64) * 8
                    } else {
                        ((buf.len() - at) / ty.width()) as u64
                    };
                    jobs.push(Job::Fixed {
                        col: *col,
                        ty: *ty,
                        raw: buf[at..].to_vec(),
                        n,
                    });
                    at = buf.len();
                }
                buf.drain(..at);
                if *ty == LogicalType::Bits {
                    // A last partial chunk takes the partial byte too.
                    *bits = bits.saturating_sub((at as u64) * 8);
                }
            }
            Sink::Utf8 { col, current, done } => {
                if last && !current.is_empty() {
                    done.push(std::mem::take(current));
                }
                for strings in done.drain(..) {
                    jobs.push(Job::Utf8 { col: *col, strings });
                }
            }
        }
    }
}

fn push_bit(buf: &mut Vec<u8>, at: u64, bit: bool) {
    if at % 8 == 0 {
        buf.push(0);
    }
    if bit {
        if let Some(last) = buf.last_mut() {
            *last |= 1 << (at % 8);
        }
    }
}

/// A dictionary built across batches: each distinct value's bytes and its code.
#[derive(Debug, Default)]
struct Dict {
    codes: HashMap<Vec<u8>, u64>,
    values: Vec<Vec<u8>>,
}

impl Dict {
    fn code(&mut self, v: &[u8]) -> u64 {
        if let Some(&c) = self.codes.get(v) {
            return c;
        }
        let c = self.values.len() as u64;
        self.codes.insert(v.to_vec(), c);
        self.values.push(v.to_vec());
        c
    }
}

/// The ALP side of a float field being written: values wait here until a vector is full.
#[derive(Debug)]
struct AlpField {
    enc: alp::Encoder,
    /// Bit patterns of the rows not yet in a vector (fewer than [`ALP_VECTOR_ROWS`]).
    pending: Vec<u64>,
    /// Rows already encoded into vectors.
    row: u64,
    params: Sink,
    rows: Sink,
    bits: Sink,
}

impl AlpField {
    /// Encodes `pending`'s full vectors (and, at `last`, the partial one) into the sinks;
    /// `values` takes the digits.
    fn encode(&mut self, values: &mut Sink, ty: Float, last: bool) {
        let v = ALP_VECTOR_ROWS as usize;
        let mut at = 0;
        while self.pending.len() - at >= v || (last && at < self.pending.len()) {
            let end = (at + v).min(self.pending.len());
            let e = self.enc.encode(&self.pending[at..end]);
            let mut digits = Vec::with_capacity(e.digits.len() * 8);
            for d in &e.digits {
                digits.extend_from_slice(&d.to_le_bytes());
            }
            values.push_bytes(&digits);
            self.params.push_bytes(&e.param.to_le_bytes());
            for (i, b) in e.exceptions {
                self.rows
                    .push_bytes(&(self.row + u64::from(i)).to_le_bytes());
                self.bits.push_bytes(&b.to_le_bytes()[..ty.width()]);
            }
            self.row += (end - at) as u64;
            at = end;
        }
        self.pending.drain(..at);
    }
}

/// The run side of a run-encoded field (`table.md` §9): the run not yet closed.
#[derive(Debug)]
struct RunField {
    /// The open run's value (stored bytes), `None` before the first row.
    current: Option<Vec<u8>>,
    /// Rows so far: the open run's end.
    end: u64,
    ends: Sink,
}

impl RunField {
    /// Appends stored values (`width` bytes each); a null row (`valid` false) continues the
    /// open run, as its slot is ignored.
    fn push(&mut self, values: &mut Sink, raw: &[u8], width: usize, valid: impl Fn(usize) -> bool) {
        for (i, v) in raw.chunks_exact(width).enumerate() {
            match &self.current {
                Some(c) if c.as_slice() == v || !valid(i) => {}
                Some(_) => {
                    self.close(values);
                    self.current = Some(v.to_vec());
                }
                None => self.current = Some(v.to_vec()),
            }
            self.end += 1;
        }
    }

    /// Writes the open run (its value and end) into the sinks.
    fn close(&mut self, values: &mut Sink) {
        if let Some(c) = self.current.take() {
            values.push_bytes(&c);
            self.ends.push_bytes(&self.end.to_le_bytes());
        }
    }
}

/// One field being written.
#[derive(Debug)]
struct FieldState {
    meta: FieldMeta,
    /// Sinks by role.
    values: Option<Sink>,
    validity: Option<Sink>,
    lengths: Option<Sink>,
    /// `Some` when the values are stored as codes into this dictionary.
    dict: Option<Dict>,
    /// The code column's type when dictionary-encoded.
    code_type: LogicalType,
    /// `Some` when the field is a float field stored with ALP.
    alp: Option<AlpField>,
    /// `Some` when the field is stored as runs.
    runs: Option<RunField>,
}

/// Streams Arrow record batches into a `.tsr` table (see the [module](super) docs).
#[derive(Debug)]
pub struct ArrowTableWriter {
    out: ContainerWriter,
    schema: SchemaRef,
    opts: ArrowWriteOptions,
    fields: Vec<FieldState>,
    /// Whether the physical columns were declared (at the first batch, which settles the
    /// automatic dictionary choice).
    laid_out: bool,
    rows: u64,
}

impl ArrowTableWriter {
    /// Starts a table of `schema` at `path` (a temporary name until [`ArrowTableWriter::finish`]).
    /// Fails, before creating anything, when a field's type has no mapping.
    pub fn create(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        opts: ArrowWriteOptions,
    ) -> Result<ArrowTableWriter> {
        Self::check(&schema, &opts)?;
        Self::with_container(ContainerWriter::create(path)?, schema, opts)
    }

    fn check(schema: &SchemaRef, opts: &ArrowWriteOptions) -> Result<()> {
        super::check_schema(schema)?;
        let n = opts.chunk_rows;
        if n == 0 || n % 512 != 0 || n > MAX_CHUNK_VALUES as usize {
            return Err(Error::InvalidArgument(format!(
                "chunk_rows {n} is not a multiple of 512 in 512..={MAX_CHUNK_VALUES}"
            )));
        }
        Ok(())
    }

    /// Writes through an existing container writer (a stream, or a file made with other
    /// replace rules).
    pub fn with_container(
        out: ContainerWriter,
        schema: SchemaRef,
        opts: ArrowWriteOptions,
    ) -> Result<ArrowTableWriter> {
        Self::check(&schema, &opts)?;
        let mut fields = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            let (ty, key) = field_type(f.name(), f.data_type())?;
            let mut metadata: Vec<(String, String)> = f
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            metadata.sort();
            fields.push(FieldState {
                meta: FieldMeta {
                    name: f.name().clone(),
                    ty,
                    nullable: f.is_nullable(),
                    arrow_dictionary: key,
                    metadata,
                    columns: Vec::new(),
                },
                values: None,
                validity: None,
                lengths: None,
                dict: key.map(|_| Dict::default()),
                code_type: key.unwrap_or(LogicalType::U32),
                alp: None,
                runs: None,
            });
        }
        Ok(ArrowTableWriter {
            out,
            schema,
            opts,
            fields,
            laid_out: false,
            rows: 0,
        })
    }

    /// The schema every batch must have.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written to the file so far.
    pub fn bytes_written(&self) -> u64 {
        self.out.bytes_written()
    }

    /// A physical column's name: the field's name for its values, `name.role` for the others,
    /// `#index.role` when that would be too long or taken.
    fn column_name(
        &self,
        i: usize,
        role: Role,
        taken: &std::collections::HashSet<String>,
    ) -> String {
        let name = &self.fields[i].meta.name;
        let plain = if role == Role::Values {
            name.clone()
        } else {
            format!("{name}.{}", role.name())
        };
        if plain.len() <= MAX_NAME_LEN && !plain.is_empty() && !taken.contains(&plain) {
            return plain;
        }
        let mut k = 0;
        loop {
            let alt = format!(
                "#{i}.{}{}",
                role.name(),
                if k == 0 {
                    String::new()
                } else {
                    format!(".{k}")
                }
            );
            if !taken.contains(&alt) {
                return alt;
            }
            k += 1;
        }
    }

    fn declare(
        &mut self,
        i: usize,
        role: Role,
        ty: LogicalType,
        taken: &mut std::collections::HashSet<String>,
    ) -> Result<usize> {
        let name = self.column_name(i, role, taken);
        taken.insert(name.clone());
        let col = self.out.add_column(&name, ty, None)?;
        self.fields[i].meta.columns.push((role, col as u32));
        Ok(col)
    }

    fn taken(&self) -> std::collections::HashSet<String> {
        self.out.columns().iter().map(|c| c.name.clone()).collect()
    }

    /// Declares every field's row-aligned columns; `first` settles the automatic dictionaries.
    fn lay_out(&mut self, first: Option<&RecordBatch>) -> Result<()> {
        let mut taken = self.taken();
        for i in 0..self.fields.len() {
            let ty = self.fields[i].meta.ty.clone();
            if self.fields[i].dict.is_none()
                && self.opts.dictionary == DictionaryChoice::Auto
                && matches!(
                    ty,
                    FieldType::Utf8
                        | FieldType::LargeUtf8
                        | FieldType::Binary
                        | FieldType::LargeBinary
                )
            {
                if let Some(b) = first {
                    if dictionary_pays(b.column(i).as_ref()) {
                        self.fields[i].dict = Some(Dict::default());
                    }
                }
            }
            let float = match ty {
                FieldType::Float32 => Some(Float::F32),
                FieldType::Float64 => Some(Float::F64),
                _ => None,
            }
            .filter(|_| self.fields[i].dict.is_none());
            let name = self.fields[i].meta.name.clone();
            let (chunk_rows, copts) = (self.opts.chunk_rows, self.opts.codec_options);
            // The cheapest way to store the field's first chunk when it is not a dictionary:
            // ALP's columns or the bit patterns for floats (`FloatChoice::Auto`), the values.
            let mut undict_bytes = None;
            let use_alp = match (float, self.opts.floats) {
                (None, _) | (_, FloatChoice::Plain) => false,
                (Some(_), FloatChoice::Alp) => true,
                (Some(fl), FloatChoice::Auto) => match first {
                    Some(b) => {
                        let a = b.column(i).as_ref();
                        let plain = plain_size(&name, &ty, a, chunk_rows, copts)?;
                        let alp = alp_size(&name, &ty, fl, a, chunk_rows, copts)?;
                        undict_bytes = Some(plain.min(alp));
                        alp < plain
                    }
                    None => false,
                },
            };
            let fixed_dict_candidate = self.fields[i].dict.is_none()
                && self.opts.dictionary == DictionaryChoice::Auto
                && !(float.is_some() && self.opts.floats == FloatChoice::Alp)
                && !matches!(ty, FieldType::Boolean)
                && !ty.is_binary()
                && ty.physical() != LogicalType::Utf8;
            let mut dict_bytes = None;
            if let (true, Some(b)) = (fixed_dict_candidate, first) {
                let a = b.column(i).as_ref();
                if let Some(dict) = fixed_dict_size(&name, &ty, a, chunk_rows, copts)? {
                    let other = match undict_bytes {
                        Some(u) => u,
                        None => plain_size(&name, &ty, a, chunk_rows, copts)?,
                    };
                    undict_bytes = Some(other);
                    if dict < other {
                        self.fields[i].dict = Some(Dict::default());
                        dict_bytes = Some(dict);
                    }
                }
            }
            // Runs against whatever the rules above picked: they replace a dictionary only the
            // writer chose (an Arrow dictionary stays one).
            let runs_candidate = self.opts.runs == RunChoice::Auto
                && self.fields[i].meta.arrow_dictionary.is_none()
                && !(float.is_some() && self.opts.floats == FloatChoice::Alp)
                && !matches!(ty, FieldType::Boolean)
                && !ty.is_binary()
                && ty.physical() != LogicalType::Utf8;
            let mut use_runs = false;
            if let (true, Some(b)) = (runs_candidate, first) {
                let a = b.column(i).as_ref();
                if let Some(r) = runs_size(&name, &ty, a, chunk_rows, copts)? {
                    let chosen = match (dict_bytes, undict_bytes) {
                        (Some(d), _) => d,
                        (None, Some(u)) => u,
                        (None, None) => plain_size(&name, &ty, a, chunk_rows, copts)?,
                    };
                    use_runs = r < chosen;
                }
            }
            if use_runs {
                self.fields[i].dict = None;
                let col = self.declare(i, Role::Values, ty.physical(), &mut taken)?;
                self.fields[i].values = Some(Sink::fixed(col, ty.physical()));
                let e = self.declare(i, Role::RunEnds, LogicalType::U64, &mut taken)?;
                self.fields[i].runs = Some(RunField {
                    current: None,
                    end: 0,
                    ends: Sink::fixed(e, LogicalType::U64),
                });
                continue;
            }
            let use_alp = use_alp && self.fields[i].dict.is_none();
            if let (Some(fl), true) = (float, use_alp) {
                let col = self.declare(i, Role::Values, LogicalType::I64, &mut taken)?;
                self.fields[i].values = Some(Sink::fixed(col, LogicalType::I64));
                let p = self.declare(i, Role::AlpParams, LogicalType::U16, &mut taken)?;
                let r = self.declare(i, Role::ExceptionRows, LogicalType::U64, &mut taken)?;
                let b = self.declare(i, Role::ExceptionBits, ty.physical(), &mut taken)?;
                self.fields[i].alp = Some(AlpField {
                    enc: alp::Encoder::new(fl),
                    pending: Vec::new(),
                    row: 0,
                    params: Sink::fixed(p, LogicalType::U16),
                    rows: Sink::fixed(r, LogicalType::U64),
                    bits: Sink::fixed(b, ty.physical()),
                });
            } else if self.fields[i].dict.is_some() {
                let code_type = self.fields[i].code_type;
                let col = self.declare(i, Role::Values, code_type, &mut taken)?;
                self.fields[i].values = Some(Sink::fixed(col, code_type));
            } else {
                let col = self.declare(i, Role::Values, ty.physical(), &mut taken)?;
                self.fields[i].values = Some(match ty.physical() {
                    LogicalType::Utf8 => Sink::Utf8 {
                        col,
                        current: Strings::default(),
                        done: Vec::new(),
                    },
                    t => Sink::fixed(col, t),
                });
                if ty.is_binary() {
                    let col = self.declare(i, Role::Lengths, LogicalType::U32, &mut taken)?;
                    self.fields[i].lengths = Some(Sink::fixed(col, LogicalType::U32));
                }
            }
        }
        self.laid_out = true;
        Ok(())
    }

    /// Appends a batch; it must have the writer's schema (fields, types, nullability).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.schema().fields() != self.schema.fields() {
            return Err(Error::InvalidArgument(format!(
                "a batch's schema differs from the table's: {} against {}",
                describe(&batch.schema()),
                describe(&self.schema)
            )));
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if !self.laid_out {
            self.lay_out(Some(batch))?;
        }
        let rows_before = self.rows;
        for i in 0..self.fields.len() {
            let array = batch.column(i);
            if let Some(nulls) = array.nulls().filter(|n| n.null_count() > 0) {
                if !self.fields[i].meta.nullable {
                    return Err(Error::InvalidArgument(format!(
                        "column '{}' is not nullable but holds {} nulls",
                        self.fields[i].meta.name,
                        nulls.null_count()
                    )));
                }
                if self.fields[i].validity.is_none() {
                    let mut taken = self.taken();
                    let col = self.declare(i, Role::Validity, LogicalType::Bits, &mut taken)?;
                    let mut sink = Sink::fixed(col, LogicalType::Bits);
                    // Rows before the first null were all valid.
                    let mut left = rows_before;
                    while left > 0 {
                        let n = left.min(self.opts.chunk_rows as u64);
                        sink.push_ones(n);
                        left -= n;
                        let mut jobs = Vec::new();
                        sink.drain(self.opts.chunk_rows, false, &mut jobs);
                        self.encode(jobs)?;
                    }
                    self.fields[i].validity = Some(sink);
                }
            }
            if let Some(v) = self.fields[i].validity.as_mut() {
                match array.nulls() {
                    Some(n) => v.push_bits(n.inner()),
                    None => v.push_ones(array.len() as u64),
                }
            }
            push_field(&mut self.fields[i], array, self.opts.chunk_rows)?;
        }
        self.rows += batch.num_rows() as u64;
        self.flush(false)
    }

    /// Encodes the full chunks of every column (all that is left at `last`) and writes them.
    fn flush(&mut self, last: bool) -> Result<()> {
        let mut jobs = Vec::new();
        let rows = self.opts.chunk_rows;
        for f in &mut self.fields {
            if let (Some(a), Some(v)) = (f.alp.as_mut(), f.values.as_mut()) {
                let fl = if f.meta.ty == FieldType::Float32 {
                    Float::F32
                } else {
                    Float::F64
                };
                a.encode(v, fl, last);
            }
            if let (Some(r), Some(v), true) = (f.runs.as_mut(), f.values.as_mut(), last) {
                r.close(v);
            }
            let alp_sinks = f
                .alp
                .as_mut()
                .map(|a| [&mut a.params, &mut a.rows, &mut a.bits]);
            let run_sink = f.runs.as_mut().map(|r| &mut r.ends);
            for s in [&mut f.values, &mut f.validity, &mut f.lengths]
                .into_iter()
                .flatten()
                .chain(alp_sinks.into_iter().flatten())
                .chain(run_sink)
            {
                s.drain(rows, last, &mut jobs);
            }
        }
        self.encode(jobs)
    }

    fn encode(&mut self, jobs: Vec<Job>) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let opts = self.opts.codec_options;
        let names: Vec<String> = self.out.columns().iter().map(|c| c.name.clone()).collect();
        let encoded: Vec<(usize, CodecId, u32, Vec<u8>)> = jobs
            .into_par_iter()
            .map(|job| {
                let mut out = Vec::new();
                match job {
                    Job::Fixed { col, ty, raw, n } => {
                        let codec = column::encode_values_with(ty, None, &raw, n, &mut out, opts)
                            .map_err(|e| e.in_chunk(&names[col], 0, "encoding"))?;
                        Ok((col, codec, n as u32, out))
                    }
                    Job::Utf8 { col, strings } => {
                        let codec = text::encode_utf8_chunk_with(&strings, None, &mut out, opts)
                            .map_err(|e| e.in_chunk(&names[col], 0, "encoding"))?;
                        Ok((col, codec, strings.len() as u32, out))
                    }
                }
            })
            .collect::<Result<_>>()?;
        for (col, codec, n, payload) in encoded {
            self.out.write_chunk_to(col, codec, n, &payload)?;
        }
        Ok(())
    }

    /// Writes the dictionaries, what is left of every column, the table section, the directory
    /// and footer, and puts the file under its name.
    pub fn finish(mut self) -> Result<(Directory, u64)> {
        if !self.laid_out {
            self.lay_out(None)?;
        }
        self.flush(true)?;
        let mut taken = self.taken();
        for i in 0..self.fields.len() {
            let Some(dict) = self.fields[i].dict.take() else {
                continue;
            };
            let ty = self.fields[i].meta.ty.clone();
            let col = self.declare(i, Role::DictValues, ty.physical(), &mut taken)?;
            let mut values = match ty.physical() {
                LogicalType::Utf8 => Sink::Utf8 {
                    col,
                    current: Strings::default(),
                    done: Vec::new(),
                },
                t => Sink::fixed(col, t),
            };
            let mut lengths = if ty.is_binary() {
                let c = self.declare(i, Role::DictLengths, LogicalType::U32, &mut taken)?;
                Some(Sink::fixed(c, LogicalType::U32))
            } else {
                None
            };
            let text = matches!(values, Sink::Utf8 { .. });
            for v in &dict.values {
                if text {
                    values.push_string(v, self.opts.chunk_rows)?;
                } else {
                    values.push_bytes(v);
                }
                if let Some(l) = lengths.as_mut() {
                    l.push_bytes(&(v.len() as u32).to_le_bytes());
                }
                // Dictionaries can be large: encode as the chunks fill.
                let mut jobs = Vec::new();
                values.drain(self.opts.chunk_rows, false, &mut jobs);
                if let Some(l) = lengths.as_mut() {
                    l.drain(self.opts.chunk_rows, false, &mut jobs);
                }
                self.encode(jobs)?;
            }
            let mut jobs = Vec::new();
            values.drain(self.opts.chunk_rows, true, &mut jobs);
            if let Some(l) = lengths.as_mut() {
                l.drain(self.opts.chunk_rows, true, &mut jobs);
            }
            self.encode(jobs)?;
        }
        let mut schema_metadata: Vec<(String, String)> = self
            .schema
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        schema_metadata.sort();
        let table = TableMeta {
            row_count: self.rows,
            metadata: schema_metadata,
            fields: self.fields.into_iter().map(|f| f.meta).collect(),
        };
        self.out.set_table(table)?;
        self.out.finish_sized()
    }
}

fn describe(schema: &arrow_schema::Schema) -> String {
    let f: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| {
            format!(
                "{}: {}{}",
                f.name(),
                f.data_type(),
                if f.is_nullable() { "" } else { " not null" }
            )
        })
        .collect();
    format!("[{}]", f.join(", "))
}

/// The `(offsets, data)` of a utf8 or binary array (any offset width), as `usize` offsets.
fn var_parts(array: &dyn Array) -> Option<(Vec<usize>, &[u8])> {
    use arrow_array::cast::AsArray;
    fn parts<'a, O: ArrowNativeType>(offsets: &[O], data: &'a Buffer) -> (Vec<usize>, &'a [u8]) {
        (
            offsets.iter().map(|o| o.as_usize()).collect(),
            data.as_slice(),
        )
    }
    Some(match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            parts(a.value_offsets(), a.values())
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            parts(a.value_offsets(), a.values())
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            parts(a.value_offsets(), a.values())
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            parts(a.value_offsets(), a.values())
        }
        _ => return None,
    })
}

/// The auto dictionary rule (`table.md` §6), on one batch's values.
fn dictionary_pays(array: &dyn Array) -> bool {
    let Some((offsets, data)) = var_parts(array) else {
        return false;
    };
    let n = offsets.len() - 1;
    if n < 64 {
        return false;
    }
    let mut seen: HashMap<&[u8], ()> = HashMap::new();
    let mut distinct_bytes = 0usize;
    for w in offsets.windows(2) {
        let v = &data[w[0]..w[1]];
        if seen.insert(v, ()).is_none() {
            distinct_bytes += v.len();
            if seen.len() * 4 > n {
                return false;
            }
        }
    }
    let total = offsets[n] - offsets[0];
    let bits = (usize::BITS - (seen.len().max(2) - 1).leading_zeros()) as usize;
    let dict = distinct_bytes + (n * bits).div_ceil(8);
    dict * 2 <= total
}

/// The bytes `auto` encodes little-endian values of type `t` into.
fn encoded_size(t: LogicalType, bytes: &[u8], opts: CodecOptions) -> Result<usize> {
    let count = (bytes.len() / t.width()) as u64;
    if count == 0 {
        return Ok(0);
    }
    let mut out = Vec::new();
    column::encode_values_with(t, None, bytes, count, &mut out, opts)?;
    Ok(out.len())
}

/// The bytes a fixed-width field's first `chunk_rows` values of one batch take as stored
/// values (bit patterns for floats), encoded by `auto`.
fn plain_size(
    name: &str,
    ty: &FieldType,
    array: &dyn Array,
    chunk_rows: usize,
    opts: CodecOptions,
) -> Result<usize> {
    let n = array.len().min(chunk_rows);
    let raw = fixed_bytes(name, ty, array.slice(0, n).as_ref())?;
    encoded_size(ty.physical(), &raw, opts)
}

/// What the automatic rules (§6.1, §9) try: the first `chunk_rows` values of `array` and their
/// fixed-width bytes; `None` under 64 rows.
fn trial_slice(
    name: &str,
    ty: &FieldType,
    array: &dyn Array,
    chunk_rows: usize,
) -> Result<Option<(ArrayRef, Vec<u8>)>> {
    let n = array.len().min(chunk_rows);
    if n < 64 {
        return Ok(None);
    }
    let sliced = array.slice(0, n);
    let raw = fixed_bytes(name, ty, sliced.as_ref())?;
    Ok(Some((sliced, raw)))
}

/// The automatic dictionary rule for fixed-width fields (`table.md` §6.1): the bytes of the
/// codes (u32) and the dictionary of one batch's first `chunk_rows` values, each encoded by
/// `auto`; `None` when that slice has fewer than 64 rows or more distinct values than a quarter
/// of its rows (a dictionary that grows with the rows costs memory while writing).
fn fixed_dict_size(
    name: &str,
    ty: &FieldType,
    array: &dyn Array,
    chunk_rows: usize,
    opts: CodecOptions,
) -> Result<Option<usize>> {
    let Some((sliced, raw)) = trial_slice(name, ty, array, chunk_rows)? else {
        return Ok(None);
    };
    let n = sliced.len();
    let w = ty.physical().width();
    let mut seen: HashMap<&[u8], u32> = HashMap::new();
    let mut distinct = Vec::new();
    let mut codes = Vec::with_capacity(n * 4);
    for (i, v) in raw.chunks_exact(w).enumerate() {
        let c = if sliced.is_null(i) {
            0
        } else {
            let next = seen.len() as u32;
            let c = *seen.entry(v).or_insert(next);
            if c == next {
                distinct.extend_from_slice(v);
                if seen.len() * 4 > n {
                    return Ok(None);
                }
            }
            c
        };
        codes.extend_from_slice(&c.to_le_bytes());
    }
    Ok(Some(
        encoded_size(LogicalType::U32, &codes, opts)?
            + encoded_size(ty.physical(), &distinct, opts)?,
    ))
}

/// The run rule (`table.md` §9): the bytes of the run values and run ends of one batch's first
/// `chunk_rows` values, each encoded by `auto` (null rows continue the open run, as the writer
/// stores them); `None` when that slice has fewer than 64 rows or more runs than a quarter of
/// its rows (runs that many never pay).
fn runs_size(
    name: &str,
    ty: &FieldType,
    array: &dyn Array,
    chunk_rows: usize,
    opts: CodecOptions,
) -> Result<Option<usize>> {
    let Some((sliced, raw)) = trial_slice(name, ty, array, chunk_rows)? else {
        return Ok(None);
    };
    let n = sliced.len();
    let w = ty.physical().width();
    let mut values = Sink::fixed(0, ty.physical());
    let mut runs = RunField {
        current: None,
        end: 0,
        ends: Sink::fixed(0, LogicalType::U64),
    };
    runs.push(&mut values, &raw, w, |i| sliced.is_valid(i));
    runs.close(&mut values);
    let (Sink::Fixed { buf: v, .. }, Sink::Fixed { buf: e, .. }) = (&values, &runs.ends) else {
        return Ok(None);
    };
    if e.len() / 8 * 4 > n {
        return Ok(None);
    }
    Ok(Some(
        encoded_size(ty.physical(), v, opts)? + encoded_size(LogicalType::U64, e, opts)?,
    ))
}

/// The bytes ALP's columns (`table.md` §8) take for one batch's first `chunk_rows` values of a
/// float field, each encoded by `auto` (the `FloatChoice::Auto` rule compares them with
/// [`plain_size`]).
fn alp_size(
    name: &str,
    ty: &FieldType,
    fl: Float,
    array: &dyn Array,
    chunk_rows: usize,
    opts: CodecOptions,
) -> Result<usize> {
    let n = array.len().min(chunk_rows);
    if n == 0 {
        return Ok(usize::MAX);
    }
    let raw = fixed_bytes(name, ty, array.slice(0, n).as_ref())?;
    let size = |t: LogicalType, bytes: &[u8]| encoded_size(t, bytes, opts);
    let mut values = Sink::fixed(0, LogicalType::I64);
    let w = fl.width();
    let mut a = AlpField {
        enc: alp::Encoder::new(fl),
        pending: raw
            .chunks_exact(w)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..w].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect(),
        row: 0,
        params: Sink::fixed(0, LogicalType::U16),
        rows: Sink::fixed(0, LogicalType::U64),
        bits: Sink::fixed(0, ty.physical()),
    };
    a.encode(&mut values, fl, true);
    let mut total = 0;
    for (s, t) in [
        (&values, LogicalType::I64),
        (&a.params, LogicalType::U16),
        (&a.rows, LogicalType::U64),
        (&a.bits, ty.physical()),
    ] {
        if let Sink::Fixed { buf, .. } = s {
            total += size(t, buf)?;
        }
    }
    Ok(total)
}

/// The little-endian bytes of fixed-size array values as stored (decimals narrowed to i64).
fn fixed_bytes(name: &str, ty: &FieldType, array: &dyn Array) -> Result<Vec<u8>> {
    let data = array.to_data();
    if let FieldType::Decimal128 { .. } = ty {
        use arrow_array::cast::AsArray;
        let a = array.as_primitive::<arrow_array::types::Decimal128Type>();
        let mut out = Vec::with_capacity(a.len() * 8);
        for (i, v) in a.values().iter().enumerate() {
            let valid = a.is_valid(i);
            let narrow = i64::try_from(*v).ok().filter(|_| valid).unwrap_or(0);
            if valid && i64::try_from(*v).is_err() {
                return Err(Error::InvalidArgument(format!(
                    "column '{name}' row {i}: decimal {v} does not fit its declared precision"
                )));
            }
            out.extend_from_slice(&narrow.to_le_bytes());
        }
        return Ok(out);
    }
    let width = ty.physical().width();
    let buf = data.buffers().first().ok_or_else(|| {
        Error::InvalidArgument(format!("column '{name}': an array without a values buffer"))
    })?;
    let start = data.offset() * width;
    Ok(buf.as_slice()[start..start + data.len() * width].to_vec())
}

/// Appends one batch's array of a field to its value sinks.
fn push_field(f: &mut FieldState, array: &ArrayRef, chunk_rows: usize) -> Result<()> {
    let name = f.meta.name.clone();
    if let Some(dict) = f.dict.as_mut() {
        let codes = dict_codes(&name, &f.meta.ty, array, dict)?;
        let width = f.code_type.width();
        let max = match f.code_type {
            LogicalType::I8 => i8::MAX as u64,
            LogicalType::I16 => i16::MAX as u64,
            LogicalType::I32 => i32::MAX as u64,
            LogicalType::I64 => i64::MAX as u64,
            t => u64::MAX >> (64 - 8 * t.width()),
        };
        let mut raw = Vec::with_capacity(codes.len() * width);
        for c in codes {
            if c > max {
                return Err(Error::InvalidArgument(format!(
                    "column '{name}': the table's dictionary outgrew its {} keys ({} values)",
                    f.code_type.name(),
                    dict.values.len()
                )));
            }
            raw.extend_from_slice(&c.to_le_bytes()[..width]);
        }
        if let Some(v) = f.values.as_mut() {
            v.push_bytes(&raw);
        }
        return Ok(());
    }
    let values = f
        .values
        .as_mut()
        .ok_or_else(|| Error::InvalidArgument("no values column".into()))?;
    if let Some(a) = f.alp.as_mut() {
        let raw = fixed_bytes(&name, &f.meta.ty, array.as_ref())?;
        let w = f.meta.ty.physical().width();
        a.pending.extend(raw.chunks_exact(w).map(|c| {
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(c);
            u64::from_le_bytes(b)
        }));
        let fl = if w == 4 { Float::F32 } else { Float::F64 };
        a.encode(values, fl, false);
        return Ok(());
    }
    if let Some(r) = f.runs.as_mut() {
        let raw = fixed_bytes(&name, &f.meta.ty, array.as_ref())?;
        r.push(values, &raw, f.meta.ty.physical().width(), |i| {
            array.is_valid(i)
        });
        return Ok(());
    }
    match &f.meta.ty {
        FieldType::Boolean => {
            use arrow_array::cast::AsArray;
            values.push_bits(array.as_boolean().values());
        }
        FieldType::Utf8 | FieldType::LargeUtf8 => {
            let (offsets, data) = var_parts(array.as_ref()).ok_or_else(|| {
                Error::InvalidArgument(format!("column '{name}': not a string array"))
            })?;
            for w in offsets.windows(2) {
                values.push_string(&data[w[0]..w[1]], chunk_rows)?;
            }
        }
        FieldType::Binary | FieldType::LargeBinary => {
            let (offsets, data) = var_parts(array.as_ref()).ok_or_else(|| {
                Error::InvalidArgument(format!("column '{name}': not a binary array"))
            })?;
            values.push_bytes(&data[offsets[0]..offsets[offsets.len() - 1]]);
            let mut lens = Vec::with_capacity((offsets.len() - 1) * 4);
            for w in offsets.windows(2) {
                let l = u32::try_from(w[1] - w[0]).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "column '{name}': a value of {} bytes (at most 4 GiB)",
                        w[1] - w[0]
                    ))
                })?;
                lens.extend_from_slice(&l.to_le_bytes());
            }
            if let Some(l) = f.lengths.as_mut() {
                l.push_bytes(&lens);
            }
        }
        ty => values.push_bytes(&fixed_bytes(&name, ty, array.as_ref())?),
    }
    Ok(())
}

/// The dictionary codes of one batch's array (an Arrow dictionary array, or plain utf8 or
/// binary values under an automatic dictionary), growing the table's dictionary. Null rows get
/// code 0.
fn dict_codes(name: &str, ty: &FieldType, array: &ArrayRef, dict: &mut Dict) -> Result<Vec<u64>> {
    if let DataType::Dictionary(..) = array.data_type() {
        use arrow_array::cast::AsArray;
        let any = array.as_any_dictionary();
        let dvalues = any.values();
        if dvalues.null_count() > 0 {
            return Err(Error::InvalidArgument(format!(
                "column '{name}': its dictionary holds nulls (tessera stores nulls in the keys only)"
            )));
        }
        // Each batch's dictionary maps into the table's one.
        let local: Vec<u64> = match var_parts(dvalues.as_ref()) {
            Some((offsets, data)) => offsets
                .windows(2)
                .map(|w| dict.code(&data[w[0]..w[1]]))
                .collect(),
            None => {
                let raw = fixed_bytes(name, ty, dvalues.as_ref())?;
                let w = ty.physical().width();
                raw.chunks_exact(w).map(|v| dict.code(v)).collect()
            }
        };
        if dvalues.is_empty() {
            // An empty dictionary (an all-null column, dictionary-encoded) leaves nothing for a
            // key to point at; arrow's `normalized_keys` asserts on it, so answer here.
            let keys = any.keys();
            if let Some(i) = (0..keys.len()).find(|&i| !keys.is_null(i)) {
                return Err(Error::InvalidArgument(format!(
                    "column '{name}' row {i}: a dictionary key into an empty dictionary"
                )));
            }
            return Ok(vec![0; keys.len()]);
        }
        let keys = any.normalized_keys();
        let mut codes = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if any.keys().is_null(i) {
                codes.push(0);
            } else {
                codes.push(*local.get(*k).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "column '{name}' row {i}: dictionary key {k} out of range"
                    ))
                })?);
            }
        }
        return Ok(codes);
    }
    let Some((offsets, data)) = var_parts(array.as_ref()) else {
        // A fixed-width field under an automatic dictionary (`table.md` §6.1).
        let raw = fixed_bytes(name, ty, array.as_ref())?;
        let w = ty.physical().width();
        return Ok(raw
            .chunks_exact(w)
            .enumerate()
            .map(|(i, v)| if array.is_null(i) { 0 } else { dict.code(v) })
            .collect());
    };
    Ok(offsets
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            if array.is_null(i) {
                0
            } else {
                dict.code(&data[w[0]..w[1]])
            }
        })
        .collect())
}
