//! A table's fields decoded into GPU memory: as stored ([`ArrowTableReader::read_gpu`],
//! [`GpuField`]) or in Arrow's layout ([`ArrowTableReader::read_gpu_arrow`],
//! [`GpuArrowArray`]), the step before exporting them through the Arrow C Device Data
//! Interface ([`super::export_device`]).
//!
//! The columns of all selected fields decode together, whatever the field count: the
//! fixed-size ones (integers, validity and boolean bitmaps, binary bytes) one batch per logical
//! type (one upload; the integer decoders of every batch deferred and sent together, one launch
//! for all of them when they fit one wave of the GPU: [`Gpu::defer_decodes`]), the utf8 ones in one batch of offsets (checked on
//! the device, a status word) and one of text; the columns of a batch are then views of their
//! ranges of the batch's buffer ([`GpuBuffer`]: no copy, no allocation a column; a range a view
//! cannot take, a bitmap not on 8 bytes, is copied out by one launch for the whole read,
//! [`arrow_layout::copy_parts_queued`]). Run-encoded
//! fields (`table.md` §9) are expanded on the device, all in one launch. Uploads are staged
//! through page-locked memory ([`Gpu::stage_uploads`]); every decoder, check, copy and expansion
//! is queued on one stream and their status words are read back after one wait, while the
//! payloads' checksums are verified on the thread pool. What is Arrow's layout as decoded:
//! integer, float (bit patterns), date, time, timestamp and duration values; boolean values and
//! validity bitmaps (bits packed least significant bit first, as Arrow's); dictionary codes;
//! binary bytes. What is not, in a [`GpuField`]: utf8 offsets stay per-chunk relative `u32`
//! ends ([`crate::GpuData::Utf8`]), binary values have `u32` lengths rather than offsets,
//! decimals are the stored `i64` (Arrow's Decimal128 is `i128`) and ALP floats are digits,
//! params and exceptions (`table.md` §8). [`GpuField::into_arrow`] closes those gaps on the
//! device with `tessera_gpu::arrow_layout`'s kernels (utf8 offsets rebased and widened to i32
//! or i64, decimals widened, ALP decoded bit for bit as on the CPU, binary lengths scanned
//! into offsets). Fields the writer dictionary-encoded on its own come back as dictionary
//! arrays (the CPU reader gives their plain values).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_schema::DataType;
use tessera_codecs::{column, text};
use tessera_format::container::{ChunkMeta, ColumnMeta};
use tessera_format::table::{FieldMeta, FieldType, Role, ALP_VECTOR_ROWS};
use tessera_format::{Error, LogicalType, Result};
use tessera_gpu::arrow_layout::{self, AlpColumns, AlpTables};
use tessera_gpu::codec::PreparedColumn;
use tessera_gpu::codec::QueuedDecode;
use tessera_gpu::{BatchError, ChunkRef, CudaSlice, Gpu, GpuBuffer, ResidentColumn};

use crate::gpu_column::{GpuColumn, GpuData};
use crate::read::{chunk_refs, locate, utf8_refs, TableReader};

use super::alp::Float;
use super::read::{arrow_field, ArrowTableReader};

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
    /// the host, on the thread pool while the decoders are queued, and a mismatch is the read's
    /// error; corrupt chunks give the CPU decoders' errors). The columns of all
    /// selected fields are decoded together: fixed-size columns (values, codes, lengths,
    /// dictionaries, ALP digits, params and exceptions, run values and ends, validity and
    /// boolean bitmaps, binary bytes) one batch per logical type, utf8 columns in one batch of
    /// offsets and one of text (module docs). Run-encoded fields leave with one value a row.
    /// Every batch is prepared on the host first (headers checked, descriptors, chunks no
    /// kernel serves decoded on the CPU: [`ResidentColumn::prepare`]), then its copies are
    /// queued; integer payloads are copied once, from the file bytes into the staging buffer.
    /// Uploads are staged through page-locked memory ([`Gpu::stage_uploads`]: none waits for the
    /// stream, and room for the whole read is reserved first), then every decoder, the utf8
    /// check (offsets inside the text, valid UTF-8), one expansion launch for all run-encoded
    /// fields and one check that every dictionary code indexes its dictionary (and one that
    /// binary lengths stay inside their bytes) are queued back to back on one stream (the
    /// columns of a batch are views of its buffer, a copy launch only for ranges a view cannot
    /// take); their status words are read back together after one
    /// wait ([`Gpu::read_back_parts`]), and errors are reported in the order the batches were
    /// queued, each naming its column (and chunk). Checksums are verified on all cores for large
    /// tables. Where the time went: [`last_gpu_read_phases`].
    pub fn read_gpu(&self, gpu: &Gpu) -> Result<Vec<GpuField>> {
        self.read_gpu_one_wait(gpu)
    }
}

impl ArrowTableReader<'_> {
    /// The host work of [`Self::read_gpu`]'s uploads alone (payloads located, every batch
    /// prepared: headers checked, descriptors, CPU-decoded chunks, decoder tables), with no
    /// GPU, its batches one after the other (as the read does) or on the thread pool: what
    /// `tessera-bench tables` times on a machine with or without a GPU. Returns the batches
    /// prepared.
    #[doc(hidden)]
    pub fn prepare_gpu_uploads(&self, parallel: bool) -> Result<usize> {
        let t: &TableReader = self.table_reader();
        let mut wanted: Vec<usize> = Vec::new();
        for f in self.selected_fields() {
            for &(_, c) in &f.columns {
                let c = c as usize;
                column_meta(t, c)?;
                if !wanted.contains(&c) {
                    wanted.push(c);
                }
            }
        }
        let payloads = located_payloads(t, &wanted)?;
        let (fixed, utf8) = prepare_batches(t, &wanted, &payloads, parallel)?;
        // Failures are reported as the read reports them: the first batch's, named.
        let mut n = 0usize;
        for (g, prepared) in fixed {
            prepared.map_err(|be| g.named(t, be))?;
            n += 1;
        }
        if let Some((u, prepared)) = utf8 {
            for p in prepared {
                p.map_err(|be| u.named(t, be))?;
                n += 1;
            }
        }
        Ok(n)
    }
}

/// A field's [`GpuField`] from its values (already one a row) and its other columns, each
/// taken by role through `col`.
fn gpu_field(
    f: &FieldMeta,
    values: GpuColumn,
    col: impl Fn(Role) -> Result<Option<GpuColumn>>,
) -> Result<GpuField> {
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
}

impl ArrowTableReader<'_> {
    /// The body of [`Self::read_gpu`]: the payloads' checksums are verified on the thread pool
    /// while this thread uploads and queues the decoders, and the read fails with the first
    /// mismatch (in column and chunk order) whatever the decoders found, so a corrupt payload
    /// gives the same error as when checksums are verified first; nothing is returned before
    /// every checksum has been checked. Header checks and kernels already bounds-check what they
    /// read (a payload with a valid checksum may be hostile too), so decoding bytes whose
    /// checksum is still being computed is safe.
    fn read_gpu_one_wait(&self, gpu: &Gpu) -> Result<Vec<GpuField>> {
        let t: &TableReader = self.table_reader();
        let fields: Vec<&FieldMeta> = self.selected_fields().collect();
        let mut wanted: Vec<usize> = Vec::new();
        for f in &fields {
            for &(_, c) in &f.columns {
                let c = c as usize;
                column_meta(t, c)?;
                if !wanted.contains(&c) {
                    wanted.push(c);
                }
            }
        }
        let mut phases = PhaseClock::start();
        let payloads = located_payloads(t, &wanted)?;
        phases.mark(0);
        let mut verified: Option<(Result<()>, f64)> = None;
        let out = rayon::in_place_scope(|s| {
            s.spawn(|_| {
                let start = std::time::Instant::now();
                let r = verify_payloads(t, &wanted);
                verified = Some((r, start.elapsed().as_secs_f64() * 1e3));
            });
            // Uploads queue from page-locked memory: none waits for the stream.
            let _staged = gpu.stage_uploads();
            // The device span of the read's work, marked only while operations are traced.
            phases.span = gpu.trace_span_start()?;
            let out = self.decode_batched(gpu, t, fields, &wanted, &payloads, &mut phases);
            gpu.trace_span_add(phases.span.take())?;
            out
        });
        let verify_ms = match verified {
            Some((Ok(()), ms)) => ms,
            Some((Err(e), _)) => return Err(e),
            None => return Err(Error::Gpu("the checksums were not verified".into())),
        };
        let out = out?;
        phases.mark(5);
        phases.finish(verify_ms);
        Ok(out)
    }

    /// Uploads, queues and decodes the batches of `wanted`'s columns and assembles `fields`
    /// (the part of [`Self::read_gpu_one_wait`] on the calling thread).
    fn decode_batched<'t>(
        &self,
        gpu: &Gpu,
        t: &'t TableReader,
        fields: Vec<&FieldMeta>,
        wanted: &[usize],
        payloads: &HashMap<usize, Vec<&'t [u8]>>,
        phases: &mut PhaseClock,
    ) -> Result<Vec<GpuField>> {
        // Preparation is header checks and descriptors (payloads are copied once, straight
        // into the staging buffer, when uploaded): cheaper on this thread than handed out.
        let (fixed, utf8) = prepare_batches(t, wanted, payloads, false)?;
        phases.mark_prepared();
        // Room for the whole read's uploads, so the staging buffer neither wraps (a wait) nor
        // grows (a page-locked allocation) in the middle of it, and the batches' packs as
        // ranges of one allocation, copied by one copy (or a few) when the group is flushed,
        // before the first decoder is queued.
        let group = gpu.begin_upload_group(staged_estimate(payloads))?;
        let mut fixed = fixed
            .into_iter()
            .map(|(g, prepared)| g.upload(prepared, t, gpu))
            .collect::<Result<Vec<_>>>()?;
        let mut utf8 = utf8
            .map(|(u, prepared)| u.upload(prepared, t, gpu))
            .transpose()?;
        if let Some(group) = group {
            group.flush()?;
        }
        phases.mark(1);
        let mut parts: Vec<(u64, usize)> = Vec::new();
        // The integer decoders of every batch (and the copies placing chunks) go out together:
        // one launch for all of them when they fit one wave of the GPU, then one copy list.
        let deferred = gpu.defer_decodes()?;
        for g in &mut fixed {
            g.enqueue(t, gpu, &mut parts)?;
        }
        if let Some(u) = utf8.as_mut() {
            u.enqueue(gpu, &mut parts)?;
        }
        deferred.flush()?;
        // Each column's buffers: a batch of one column keeps its decoded buffers, the columns
        // of larger batches get theirs by one copy launch for the whole read.
        let mut planned: Vec<(usize, Planned)> = Vec::new();
        let mut ranges: Vec<arrow_layout::CopyPart<'_>> = Vec::new();
        for g in &mut fixed {
            g.plan(t, gpu, &mut planned, &mut ranges)?;
        }
        if let Some(u) = utf8.as_mut() {
            u.plan(t, gpu, &mut planned, &mut ranges)?;
        }
        tessera_gpu::log_mark("planned");
        let (copies, copy_check) = arrow_layout::copy_parts_queued(gpu, &ranges)?;
        drop(ranges);
        let copy_check = copy_check.map(|q| q.queued(gpu, &mut parts));
        let mut copies = copies.into_iter();
        let mut columns: HashMap<usize, GpuColumn> = HashMap::new();
        for (c, p) in planned {
            columns.insert(c, p.column(&mut copies)?);
        }
        // Every run-encoded field (`table.md` §9) expanded by one launch.
        let mut runs: Vec<(usize, u64, GpuColumn, GpuColumn)> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            if let (Some(v), Some(e)) = (f.column(Role::Values), f.column(Role::RunEnds)) {
                let (Some(values), Some(ends)) = (columns.remove(&v), columns.remove(&e)) else {
                    continue;
                };
                if values.len != ends.len {
                    return Err(in_field(
                        &f.name,
                        Error::CountMismatch {
                            what: "run values vs run ends",
                            expected: ends.len,
                            found: values.len,
                        },
                    ));
                }
                let width = values.logical_type.width() as u64;
                runs.push((i, width, values, ends));
            }
        }
        tessera_gpu::log_mark("runs found");
        let run_fields = runs
            .iter()
            .map(|(i, width, values, ends)| {
                let name = &fields[*i].name;
                Ok(arrow_layout::RunField {
                    values: raw_ref(name, values)?,
                    ends: raw_ref(name, ends)?,
                    runs: ends.len,
                    width: *width as usize,
                    n: self.rows(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (expanded, run_check) = arrow_layout::expand_runs_many(gpu, &run_fields)?;
        drop(run_fields);
        let run_check = run_check.map(|q| q.queued(gpu, &mut parts));
        // Dictionary codes index their dictionaries (what Arrow's dictionary arrays promise
        // whoever reads them): checked on the device, every dictionary-encoded field in one
        // launch.
        let mut dict_fields: Vec<usize> = Vec::new();
        let mut code_fields: Vec<arrow_layout::CodeField<'_>> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let (Some(v), Some(d)) = (f.column(Role::Values), f.column(Role::DictValues)) else {
                continue;
            };
            let decoded = |c: usize| {
                columns.get(&c).ok_or_else(|| {
                    Error::Gpu(format!(
                        "field '{}': column {c} was not decoded with its batch",
                        f.name
                    ))
                })
            };
            let codes = decoded(v)?;
            let validity = match f.column(Role::Validity) {
                Some(c) => Some(raw_ref(&f.name, decoded(c)?)?),
                None => None,
            };
            let dict_count = match f.column(Role::DictLengths) {
                Some(c) => decoded(c)?.len,
                None => decoded(d)?.len,
            };
            code_fields.push(arrow_layout::CodeField {
                codes: raw_ref(&f.name, codes)?,
                width: codes.logical_type.width(),
                signed: codes.logical_type.signed(),
                validity,
                rows: codes.len,
                dict_count,
            });
            dict_fields.push(i);
        }
        let code_check = arrow_layout::check_codes_many(gpu, &code_fields)?;
        drop(code_fields);
        let code_check = code_check.map(|q| q.queued(gpu, &mut parts));
        // Binary lengths (and binary dictionaries' lengths) must not sum past the bytes
        // stored: offsets scanned from them index the values. One launch for all.
        let mut length_owners: Vec<usize> = Vec::new();
        let mut length_fields: Vec<arrow_layout::LengthsField<'_>> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            for (lengths, bytes) in [
                (Role::Lengths, Role::Values),
                (Role::DictLengths, Role::DictValues),
            ] {
                let (Some(l), Some(b)) = (f.column(lengths), f.column(bytes)) else {
                    continue;
                };
                let (Some(l), Some(b)) = (columns.get(&l), columns.get(&b)) else {
                    return Err(Error::Gpu(format!(
                        "field '{}': binary columns not decoded with their batch",
                        f.name
                    )));
                };
                length_fields.push(arrow_layout::LengthsField {
                    lengths: raw_ref(&f.name, l)?,
                    rows: l.len,
                    bytes: b.len,
                });
                length_owners.push(i);
            }
        }
        let length_check = arrow_layout::check_lengths_many(gpu, &length_fields)?;
        drop(length_fields);
        let length_check = length_check.map(|q| q.queued(gpu, &mut parts));
        gpu.trace_span_end(&phases.span)?;
        phases.mark(2);
        // The one wait: every status word of the read comes back together.
        let read = gpu.read_back_parts(&parts)?;
        phases.mark(3);
        for g in &fixed {
            g.check(t, gpu, &read)?;
        }
        if let Some(u) = &utf8 {
            u.check(gpu, &read)?;
        }
        if let Some((q, at)) = &copy_check {
            for v in q.verdicts_at(&read, *at) {
                v?;
            }
        }
        if let Some((q, at)) = &run_check {
            for (v, (i, ..)) in q.verdicts_at(&read, *at).into_iter().zip(&runs) {
                v.map_err(|e| in_field(&fields[*i].name, e))?;
            }
        }
        if let Some((q, at)) = &length_check {
            for (v, &i) in q.verdicts_at(&read, *at).into_iter().zip(&length_owners) {
                v.map_err(|e| in_field(&fields[i].name, e))?;
            }
        }
        if let Some((q, at)) = &code_check {
            for (v, &i) in q.verdicts_at(&read, *at).into_iter().zip(&dict_fields) {
                v.map_err(|e| in_field(&fields[i].name, e))?;
            }
        }
        tessera_gpu::log_mark("checked");
        drop(fixed);
        drop(utf8);
        tessera_gpu::log_mark("batches dropped");
        let mut expanded_values: HashMap<usize, GpuColumn> = HashMap::new();
        for ((i, _, values, _), out) in runs.into_iter().zip(expanded) {
            expanded_values.insert(
                i,
                GpuColumn {
                    logical_type: values.logical_type,
                    len: self.rows(),
                    data: GpuData::Raw(out),
                },
            );
        }
        tessera_gpu::log_mark("runs placed");
        let batched = RefCell::new(columns);
        let out = fields
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let col = |r: Role| {
                    f.column(r)
                        .map(|c| match batched.borrow_mut().remove(&c) {
                            Some(g) => Ok(g),
                            None => t.read_gpu(c, gpu),
                        })
                        .transpose()
                };
                let values = match expanded_values.remove(&i) {
                    Some(v) => v,
                    None => col(Role::Values)?.ok_or_else(|| {
                        Error::InvalidArgument(format!("field '{}' has no values", f.name))
                    })?,
                };
                gpu_field(f, values, col)
            })
            .collect();
        phases.mark(4);
        out
    }
}

/// Where the time went in this thread's last [`ArrowTableReader::read_gpu`] that succeeded,
/// in milliseconds, by the host's clock: what `tessera-bench tables` reports. A read that
/// failed leaves the previous figures. Every phase but `verify_ms` is on the calling thread,
/// one after the other; `verify_ms` runs on the thread pool beside them, and only the part of
/// it that outlasts them (`join_ms`) adds to the read's time.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuReadPhases {
    /// Checksums of every payload verified (on the thread pool, beside the phases below).
    pub verify_ms: f64,
    /// Payloads located in the file (no checksum yet).
    pub locate_ms: f64,
    /// Headers checked and payloads uploaded, one batch per logical type and text codec
    /// (`staging_ms` of it, the rest the decoders' host work: header checks, payloads gathered
    /// into words, chunks no kernel serves decoded on the CPU, decoder tables).
    pub upload_ms: f64,
    /// The part of `upload_ms` spent preparing the batches on the host (headers checked,
    /// descriptors, CPU-decoded chunks, decoder tables), before any of their copies is queued.
    pub prepare_ms: f64,
    /// The part of `upload_ms` spent copying sources into the page-locked staging buffer.
    pub staging_ms: f64,
    /// Decoders, checks, per-column copies and run expansions queued.
    pub queue_ms: f64,
    /// The one wait: the stream finished and the status words read back.
    pub wait_ms: f64,
    /// Status words checked and the fields assembled.
    pub finish_ms: f64,
    /// Waiting for the checksums after everything else was done.
    pub join_ms: f64,
}

thread_local! {
    static LAST_PHASES: std::cell::Cell<GpuReadPhases> =
        const { std::cell::Cell::new(GpuReadPhases { verify_ms: 0.0, locate_ms: 0.0, upload_ms: 0.0, prepare_ms: 0.0, staging_ms: 0.0, queue_ms: 0.0, wait_ms: 0.0, finish_ms: 0.0, join_ms: 0.0 }) };
}

/// This thread's last successful [`ArrowTableReader::read_gpu`]'s phases.
#[doc(hidden)]
pub fn last_gpu_read_phases() -> GpuReadPhases {
    LAST_PHASES.with(|p| p.get())
}

/// Instants at a read's phase boundaries (six of them, after its start).
struct PhaseClock {
    start: std::time::Instant,
    at: [std::time::Instant; 6],
    /// When the batches' host work was done (inside the upload phase).
    prepared: std::time::Instant,
    /// [`tessera_gpu::staged_copy_ns`] at the upload phase's start and end.
    staged_ns: [u64; 2],
    /// The device span of the read's queued work (only while operations are traced).
    span: Option<tessera_gpu::TraceSpan>,
}

impl PhaseClock {
    fn start() -> PhaseClock {
        let now = std::time::Instant::now();
        PhaseClock {
            start: now,
            at: [now; 6],
            prepared: now,
            staged_ns: [0; 2],
            span: None,
        }
    }

    fn mark(&mut self, i: usize) {
        const ENDS: [&str; 6] = [
            "located", "uploaded", "queued", "waited", "finished", "joined",
        ];
        tessera_gpu::log_mark(ENDS[i]);
        self.at[i] = std::time::Instant::now();
        if i < 2 {
            self.staged_ns[i] = tessera_gpu::staged_copy_ns();
        }
    }

    fn mark_prepared(&mut self) {
        tessera_gpu::log_mark("prepared");
        self.prepared = std::time::Instant::now();
    }

    fn finish(&self, verify_ms: f64) {
        let ms = |a: std::time::Instant, b: std::time::Instant| {
            b.saturating_duration_since(a).as_secs_f64() * 1e3
        };
        let p = GpuReadPhases {
            verify_ms,
            locate_ms: ms(self.start, self.at[0]),
            upload_ms: ms(self.at[0], self.at[1]),
            prepare_ms: ms(self.at[0], self.prepared),
            staging_ms: self.staged_ns[1].saturating_sub(self.staged_ns[0]) as f64 * 1e-6,
            queue_ms: ms(self.at[1], self.at[2]),
            wait_ms: ms(self.at[2], self.at[3]),
            finish_ms: ms(self.at[3], self.at[4]),
            join_ms: ms(self.at[4], self.at[5]),
        };
        LAST_PHASES.with(|c| c.set(p));
    }
}

/// Payloads above this many bytes in all have their checksums verified on all cores; below
/// it, handing the work to the thread pool costs more than hashing on one.
const PARALLEL_VERIFY_BYTES: u64 = 1 << 20;

/// The (column, chunk) pairs of `cols`, in column and chunk order.
fn chunk_pairs(t: &TableReader, cols: &[usize]) -> Vec<(usize, usize)> {
    cols.iter()
        .flat_map(|&c| (0..t.columns()[c].chunks.len()).map(move |k| (c, k)))
        .collect()
}

/// The payloads of every chunk of `cols`, by column, their checksums not yet verified
/// ([`verify_payloads`] does that).
fn located_payloads<'t>(
    t: &'t TableReader,
    cols: &[usize],
) -> Result<HashMap<usize, Vec<&'t [u8]>>> {
    let mut out: HashMap<usize, Vec<&[u8]>> = HashMap::new();
    for (c, k) in chunk_pairs(t, cols) {
        let p = t.container().chunk_payload_unverified(c, k)?;
        out.entry(c).or_default().push(p);
    }
    Ok(out)
}

/// What a read of `payloads` uploads through the staging buffer, about: the payloads (as
/// words, offsets and text, or decoded on the CPU when plain, which is their size again), each
/// chunk's descriptor and every upload's alignment in the buffer, with room to spare.
fn staged_estimate(payloads: &HashMap<usize, Vec<&[u8]>>) -> usize {
    let (bytes, chunks) = payloads
        .values()
        .flatten()
        .fold((0usize, 0usize), |(b, n), p| {
            (b.saturating_add(p.len()), n + 1)
        });
    bytes
        .saturating_add(bytes / 8)
        .saturating_add(chunks.saturating_mul(2048))
        .saturating_add(1 << 20)
}

/// Verifies the checksums of every chunk of `cols`: the first mismatch in column and chunk
/// order is the error, as verifying them one by one gives.
fn verify_payloads(t: &TableReader, cols: &[usize]) -> Result<()> {
    use rayon::prelude::*;
    let pairs = chunk_pairs(t, cols);
    let bytes: u64 = pairs
        .iter()
        .map(|&(c, k)| u64::from(t.columns()[c].chunks[k].compressed_size))
        .sum();
    let verify = |&(c, k): &(usize, usize)| t.container().chunk_payload(c, k).map(|_| ());
    if bytes >= PARALLEL_VERIFY_BYTES {
        // Every verdict kept, so the first in order (not the first to finish) is the error.
        let checked: Vec<Result<()>> = pairs.par_iter().map(verify).collect();
        checked.into_iter().collect()
    } else {
        pairs.iter().try_for_each(verify)
    }
}

/// The payloads of column `c` from [`located_payloads`] (a column with no chunks has none).
fn payloads_of<'p, 't>(payloads: &'p HashMap<usize, Vec<&'t [u8]>>, c: usize) -> &'p [&'t [u8]] {
    payloads.get(&c).map_or(&[], Vec::as_slice)
}

/// The fixed-size columns of one logical type, decoded as one column of their chunks back to
/// back: one upload and one launch per codec for the whole group instead of for each column
/// (what dominates small tables), then a queued device copy of each column's values into a
/// buffer of its own (a group of one column keeps the decoded buffer). Bits chunks decode at
/// byte boundaries (`ceil(values / 8)` bytes each), so each column's bitmap starts on a byte,
/// as it does when decoded alone.
struct FixedBatch<'t> {
    group: FixedGroup<'t>,
    resident: ResidentColumn<'t>,
    out: Option<CudaSlice<u8>>,
    /// The decoded buffer of a batch of several columns once planned: their views lie in it.
    shared: Option<Arc<CudaSlice<u8>>>,
    queued: QueuedDecode,
}

/// The columns of a [`FixedBatch`] and their chunks, before the batch is prepared and uploaded.
struct FixedGroup<'t> {
    ty: LogicalType,
    cols: Vec<usize>,
    /// For each chunk of the batch: its column and its index there.
    owner: Vec<(usize, usize)>,
    /// Decoded bytes of each column.
    sizes: Vec<usize>,
    payloads: Vec<&'t [u8]>,
    refs: Vec<ChunkRef<'t>>,
}

/// The columns of a [`Utf8Batch`] and their chunks' parts, before the batch is prepared and
/// uploaded.
struct Utf8Group<'t> {
    group: Vec<usize>,
    owner: Vec<(usize, usize)>,
    payloads: Vec<&'t [u8]>,
    metas: Vec<ChunkMeta>,
    refs: crate::read::Utf8Refs<'t>,
}

/// A column of a batch prepared on the host ([`ResidentColumn::prepare`]), or the error its
/// preparation gave, reported (named) when the batch is uploaded.
type Prepared<'t> = std::result::Result<PreparedColumn<'t>, BatchError>;

/// Payload bytes from which a read prepares its batches on the thread pool; below it handing
/// the work over costs more than it saves.
const PARALLEL_PREPARE_BYTES: usize = 256 << 10;

/// The fixed-size batches of a read (one per logical type) and its utf8 batch (offsets, text),
/// each with its preparation.
type PreparedBatches<'t> = (
    Vec<(FixedGroup<'t>, Prepared<'t>)>,
    Option<(Utf8Group<'t>, [Prepared<'t>; 2])>,
);

/// The host work of a read's uploads (headers checked, descriptors laid out, chunks no kernel
/// serves decoded on the CPU, decoder tables), with no CUDA call: the fixed-size batches, one
/// per logical type, then the utf8 one; `parallel`: the batches on the thread pool for large
/// reads. A batch's failure is kept with it and reported, in batch order, when it is uploaded.
fn prepare_batches<'t>(
    t: &'t TableReader,
    cols: &[usize],
    payloads: &HashMap<usize, Vec<&'t [u8]>>,
    parallel: bool,
) -> Result<PreparedBatches<'t>> {
    use rayon::prelude::*;
    let fixed = FixedBatch::plan_groups(t, cols, payloads)?;
    let utf8 = Utf8Batch::plan_group(t, cols, payloads)?;
    let bytes: usize = fixed
        .iter()
        .flat_map(|g| &g.refs)
        .chain(
            utf8.iter()
                .flat_map(|u| u.refs.offsets.iter().chain(&u.refs.texts)),
        )
        .map(|c| c.payload.len())
        .sum();
    let fixed_one = |g: FixedGroup<'t>| {
        let p = ResidentColumn::prepare(g.ty, &g.refs);
        (g, p)
    };
    let utf8_one = |u: Utf8Group<'t>| {
        let p = [
            ResidentColumn::prepare(LogicalType::U32, &u.refs.offsets),
            ResidentColumn::prepare(LogicalType::Bytes, &u.refs.texts),
        ];
        (u, p)
    };
    Ok(if parallel && bytes >= PARALLEL_PREPARE_BYTES {
        rayon::join(
            || fixed.into_par_iter().map(fixed_one).collect(),
            || utf8.map(utf8_one),
        )
    } else {
        (
            fixed.into_iter().map(fixed_one).collect(),
            utf8.map(utf8_one),
        )
    })
}

impl<'t> FixedGroup<'t> {
    /// The CPU decoder's error for chunk `i` of the batch, named by column and chunk.
    fn cpu_error(&self, t: &TableReader, i: usize) -> Option<Error> {
        fixed_cpu_error(t, self.ty, &self.owner, &self.payloads, i)
    }

    /// A failure of the batch as the read reports it: the failing chunk's CPU error, named.
    fn named(&self, t: &TableReader, be: BatchError) -> Error {
        locate(be, |i| self.cpu_error(t, i)).1
    }

    /// Queues the prepared batch's copies to the device (headers were checked when it was
    /// prepared: a bad one is its CPU error, named).
    fn upload(self, prepared: Prepared<'t>, t: &TableReader, gpu: &Gpu) -> Result<FixedBatch<'t>> {
        let resident = prepared
            .and_then(|p| p.upload(gpu))
            .map_err(|be| self.named(t, be))?;
        Ok(FixedBatch {
            group: self,
            resident,
            out: None,
            shared: None,
            queued: QueuedDecode::default(),
        })
    }
}

impl<'t> FixedBatch<'t> {
    /// Groups the fixed-size columns among `cols` by logical type, each group's chunks in
    /// column order (not prepared yet).
    fn plan_groups(
        t: &'t TableReader,
        cols: &[usize],
        payloads: &HashMap<usize, Vec<&'t [u8]>>,
    ) -> Result<Vec<FixedGroup<'t>>> {
        let mut groups: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
        for &c in cols {
            let meta = column_meta(t, c)?;
            if meta.logical_type != LogicalType::Utf8 {
                let g = groups.entry(meta.logical_type.id()).or_default();
                if !g.contains(&c) {
                    g.push(c);
                }
            }
        }
        let mut out = Vec::with_capacity(groups.len());
        for group in groups.into_values() {
            let ty = t.columns()[group[0]].logical_type;
            let mut owner: Vec<(usize, usize)> = Vec::new();
            let mut all: Vec<&'t [u8]> = Vec::new();
            let mut refs = Vec::new();
            let mut sizes = Vec::with_capacity(group.len());
            for &c in &group {
                let meta = &t.columns()[c];
                let ps = payloads_of(payloads, c);
                refs.extend(chunk_refs(&meta.chunks, ps));
                all.extend_from_slice(ps);
                owner.extend((0..meta.chunks.len()).map(|k| (c, k)));
                let mut bytes = 0usize;
                for ch in &meta.chunks {
                    bytes = ty
                        .raw_len(ch.value_count as u64)
                        .and_then(|b| usize::try_from(b).ok())
                        .and_then(|b| bytes.checked_add(b))
                        .ok_or_else(|| {
                            Error::InvalidArgument("column larger than memory".into())
                        })?;
                }
                sizes.push(bytes);
            }
            out.push(FixedGroup {
                ty,
                cols: group,
                owner,
                sizes,
                payloads: all,
                refs,
            });
        }
        Ok(out)
    }

    fn enqueue(&mut self, t: &TableReader, gpu: &Gpu, parts: &mut Vec<(u64, usize)>) -> Result<()> {
        let (out, queued) = self
            .resident
            .enqueue_owned(gpu, parts)
            .map_err(|be| self.group.named(t, be))?;
        self.queued = queued;
        self.out = Some(out);
        Ok(())
    }

    /// The first corrupt chunk's CPU error, named, from the status words read back.
    fn check(&self, t: &TableReader, gpu: &Gpu, read: &[Vec<u8>]) -> Result<()> {
        self.resident
            .check(gpu, &self.queued, read)
            .map_err(|be| self.group.named(t, be))
    }

    /// Each column's values: a group of one column keeps the decoded buffer; the columns of a
    /// larger group are views of their byte ranges of it ([`Gpu::view`]: no copy, no
    /// allocation), but for a range that is empty or does not start at its type's alignment
    /// ([`view_align`]), which is appended to `ranges` to be copied into a buffer of its own.
    fn plan<'s>(
        &'s mut self,
        t: &TableReader,
        gpu: &Gpu,
        planned: &mut Vec<(usize, Planned)>,
        ranges: &mut Vec<arrow_layout::CopyPart<'s>>,
    ) -> Result<()> {
        let ty = self.group.ty;
        let len = |c: usize| t.columns()[c].value_count;
        let unqueued = || Error::Gpu("a batch planned before it was queued".into());
        if self.group.cols.len() == 1 {
            let all = self.out.take().ok_or_else(unqueued)?;
            let c = self.group.cols[0];
            planned.push((c, Planned::Raw(ty, len(c), Some(all.into()))));
            return Ok(());
        }
        self.shared = Some(Arc::new(self.out.take().ok_or_else(unqueued)?));
        let shared = self.shared.as_ref().ok_or_else(unqueued)?;
        let mut at = 0usize;
        for (&c, &bytes) in self.group.cols.iter().zip(&self.group.sizes) {
            let view = if bytes > 0 && at % view_align(ty) == 0 {
                Some(gpu.view::<u8>(shared, at, bytes)?)
            } else {
                ranges.push(arrow_layout::CopyPart {
                    src: shared,
                    at,
                    len: bytes,
                });
                None
            };
            at += bytes;
            planned.push((c, Planned::Raw(ty, len(c), view)));
        }
        Ok(())
    }
}

/// The byte alignment a column of `ty` needs to be handed out as a view of its batch's
/// buffer: its values' width (bytes need none), and 8 for bitmaps, which consumers read in
/// words.
fn view_align(ty: LogicalType) -> usize {
    match ty {
        LogicalType::Bits => 8,
        ty => ty.width().max(1),
    }
}

/// A column of a batched read before its buffers exist: those a batch hands over whole, or
/// `None` for one that comes from the read's copy launch (in the order the ranges were planned).
enum Planned {
    Raw(LogicalType, u64, Option<GpuBuffer>),
    Utf8 {
        len: u64,
        ends: Option<GpuBuffer>,
        data: Option<GpuBuffer>,
        chunk_value_starts: Vec<u64>,
        chunk_data_starts: Vec<u64>,
    },
}

impl Planned {
    /// The column, taking the buffers it does not own yet from `copies` in order.
    fn column(self, copies: &mut impl Iterator<Item = GpuBuffer>) -> Result<GpuColumn> {
        let mut own = |b: Option<GpuBuffer>| {
            b.or_else(|| copies.next())
                .ok_or_else(|| Error::Gpu("a batch's copy launch gave too few buffers".into()))
        };
        Ok(match self {
            Planned::Raw(logical_type, len, b) => GpuColumn {
                logical_type,
                len,
                data: GpuData::Raw(own(b)?),
            },
            Planned::Utf8 {
                len,
                ends,
                data,
                chunk_value_starts,
                chunk_data_starts,
            } => GpuColumn {
                logical_type: LogicalType::Utf8,
                len,
                data: GpuData::Utf8 {
                    ends: own(ends)?,
                    data: own(data)?,
                    chunk_value_starts,
                    chunk_data_starts,
                },
            },
        })
    }
}

/// The CPU decoder's error for chunk `i` of a fixed-size batch, named by column and chunk.
fn fixed_cpu_error(
    t: &TableReader,
    ty: LogicalType,
    owner: &[(usize, usize)],
    payloads: &[&[u8]],
    i: usize,
) -> Option<Error> {
    let &(c, k) = owner.get(i)?;
    let meta = &t.columns()[c];
    let ch = &meta.chunks[k];
    let payload = payloads.get(i)?;
    let mut host = vec![0u8; ty.raw_len(ch.value_count as u64).unwrap_or(0) as usize];
    column::decode_values(ty, ch.codec, payload, ch.value_count as u64, &mut host)
        .err()
        .map(|e| e.in_chunk(&meta.name, k, ch.codec.name()))
}

/// The utf8 columns among a read's, decoded together: the end offsets of every chunk of every
/// column in one batched DFOR decode and the text of every chunk in one batch per decoder, both
/// checked on the device by one launch ([`arrow_layout::check_utf8_queued`]: offsets inside
/// the text, valid UTF-8, no string cut inside a character; a status word instead of
/// downloading them); then queued device copies
/// give each column its own buffers (a single utf8 column keeps the decoded ones). Errors name
/// the column and chunk with the CPU decoder's own error, as [`TableReader::read_gpu`] does.
struct Utf8Batch<'t> {
    group: Vec<usize>,
    owner: Vec<(usize, usize)>,
    payloads: Vec<&'t [u8]>,
    text_sizes: Vec<u64>,
    value_starts: Vec<u64>,
    ends_resident: ResidentColumn<'t>,
    text_resident: ResidentColumn<'t>,
    ends: Option<CudaSlice<u8>>,
    data: Option<CudaSlice<u8>>,
    /// The decoded offsets and text of a batch of several columns once planned: their views
    /// lie in them.
    shared: Option<[Arc<CudaSlice<u8>>; 2]>,
    ends_queued: QueuedDecode,
    text_queued: QueuedDecode,
    /// The end check's status word and its index among the parts read back.
    check: Option<(arrow_layout::QueuedCheck, usize)>,
    table: &'t TableReader,
}

impl<'t> Utf8Group<'t> {
    /// A failure of the offsets' or the text's batch as the read reports it: the failing
    /// chunk's CPU error, named (a chunk the CPU decodes is not a data error of its own).
    fn named(&self, t: &TableReader, be: BatchError) -> Error {
        locate(be, |k| {
            Some(utf8_cpu_error(t, &self.owner, &self.payloads, k))
                .filter(|e| !matches!(e, Error::Gpu(_)))
        })
        .1
    }

    /// Queues the prepared offsets' and text's copies to the device.
    fn upload(
        self,
        [ends, text]: [Prepared<'t>; 2],
        t: &'t TableReader,
        gpu: &Gpu,
    ) -> Result<Utf8Batch<'t>> {
        let ends_resident = ends
            .and_then(|p| p.upload(gpu))
            .map_err(|be| self.named(t, be))?;
        let text_resident = text
            .and_then(|p| p.upload(gpu))
            .map_err(|be| self.named(t, be))?;
        let mut value_starts = Vec::with_capacity(self.metas.len() + 1);
        value_starts.push(0u64);
        for m in &self.metas {
            value_starts.push(value_starts[value_starts.len() - 1] + u64::from(m.value_count));
        }
        let text_sizes: Vec<u64> = self.refs.data_sizes.iter().map(|&d| d as u64).collect();
        Ok(Utf8Batch {
            group: self.group,
            owner: self.owner,
            payloads: self.payloads,
            text_sizes,
            value_starts,
            ends_resident,
            text_resident,
            ends: None,
            data: None,
            shared: None,
            ends_queued: QueuedDecode::default(),
            text_queued: QueuedDecode::default(),
            check: None,
            table: t,
        })
    }
}

impl<'t> Utf8Batch<'t> {
    /// The utf8 columns among `cols` and their chunks' parts (checked as the CPU decoder
    /// checks them: a bad chunk is its CPU error, named), not prepared yet.
    fn plan_group(
        t: &'t TableReader,
        cols: &[usize],
        payloads: &HashMap<usize, Vec<&'t [u8]>>,
    ) -> Result<Option<Utf8Group<'t>>> {
        let mut group: Vec<usize> = Vec::new();
        for &c in cols {
            if column_meta(t, c)?.logical_type == LogicalType::Utf8 && !group.contains(&c) {
                group.push(c);
            }
        }
        if group.is_empty() {
            return Ok(None);
        }
        let mut owner: Vec<(usize, usize)> = Vec::new();
        let mut all: Vec<&'t [u8]> = Vec::new();
        for &c in &group {
            let ps = payloads_of(payloads, c);
            all.extend_from_slice(ps);
            owner.extend((0..ps.len()).map(|k| (c, k)));
        }
        let metas: Vec<ChunkMeta> = owner
            .iter()
            .map(|&(c, k)| t.columns()[c].chunks[k].clone())
            .collect();
        let cpu_error = |i: usize| utf8_cpu_error(t, &owner, &all, i);
        let refs = utf8_refs(&metas, &all, cpu_error)?;
        Ok(Some(Utf8Group {
            group,
            owner,
            payloads: all,
            metas,
            refs,
        }))
    }

    fn cpu_error(&self, i: usize) -> Error {
        utf8_cpu_error(self.table, &self.owner, &self.payloads, i)
    }

    fn cpu_data_error(&self, i: usize) -> Option<Error> {
        Some(self.cpu_error(i)).filter(|e| !matches!(e, Error::Gpu(_)))
    }

    /// Queues the offsets decode, the text decode and their check.
    fn enqueue(&mut self, gpu: &Gpu, parts: &mut Vec<(u64, usize)>) -> Result<()> {
        let (ends, ends_queued) = self
            .ends_resident
            .enqueue_owned(gpu, parts)
            .map_err(|be| locate(be, |i| self.cpu_data_error(i)).1)?;
        self.ends_queued = ends_queued;
        let (data, text_queued) = self
            .text_resident
            .enqueue_owned(gpu, parts)
            .map_err(|be| locate(be, |i| self.cpu_data_error(i)).1)?;
        self.text_queued = text_queued;
        let n = self.value_starts[self.value_starts.len() - 1];
        // The offsets decide where consumers read, and Arrow's utf8 arrays promise UTF-8:
        // both checked on the device, for every column.
        let check = arrow_layout::check_utf8_queued(
            gpu,
            &ends,
            n,
            &self.value_starts,
            &self.text_sizes,
            &data,
        )
        .map_err(|e| self.end_error(e))?;
        self.check = check.map(|q| q.queued(gpu, parts));
        self.ends = Some(ends);
        self.data = Some(data);
        Ok(())
    }

    /// An error of the check, named by column and chunk: a faulty end offset is the chunk's CPU
    /// decoder error; text that is not UTF-8 (which the CPU finds only when Arrow validates the
    /// array) is the check's own.
    fn end_error(&self, e: Error) -> Error {
        match e {
            Error::ValueOutOfRange { index, ty, .. } if ty == arrow_layout::UTF8_TEXT => {
                let i = arrow_layout::chunk_of(&self.value_starts, index);
                match self.owner.get(i) {
                    Some(&(c, k)) => {
                        let meta = &self.table.columns()[c];
                        e.in_chunk(&meta.name, k, meta.chunks[k].codec.name())
                    }
                    None => e,
                }
            }
            Error::ValueOutOfRange { index, .. } => {
                self.cpu_error(arrow_layout::chunk_of(&self.value_starts, index))
            }
            e => e,
        }
    }

    /// The verdicts of the offsets decode, the offsets' check, the text decode and the text's
    /// check, in that order (the check's one status word holds either kind of fault).
    fn check(&self, gpu: &Gpu, read: &[Vec<u8>]) -> Result<()> {
        self.ends_resident
            .check(gpu, &self.ends_queued, read)
            .map_err(|be| locate(be, |i| self.cpu_data_error(i)).1)?;
        let mut text_fault = None;
        if let Some((q, at)) = &self.check {
            for v in q.verdicts_at(read, *at) {
                match v {
                    Err(e @ Error::ValueOutOfRange { ty, .. }) if ty == arrow_layout::UTF8_TEXT => {
                        text_fault = Some(e)
                    }
                    v => v.map_err(|e| self.end_error(e))?,
                }
            }
        }
        self.text_resident
            .check(gpu, &self.text_queued, read)
            .map_err(|be| locate(be, |i| self.cpu_data_error(i)).1)?;
        text_fault.map_or(Ok(()), |e| Err(self.end_error(e)))
    }

    /// Each column's offsets and text: a single utf8 column keeps the decoded buffers; the
    /// columns of a larger batch are views of their byte ranges of them ([`Gpu::view`]), but
    /// for an empty range, which is appended to `ranges` (ends, then text, a column) to be
    /// copied into a buffer of its own.
    fn plan<'s>(
        &'s mut self,
        t: &TableReader,
        gpu: &Gpu,
        planned: &mut Vec<(usize, Planned)>,
        ranges: &mut Vec<arrow_layout::CopyPart<'s>>,
    ) -> Result<()> {
        let single = self.group.len() == 1;
        let unqueued = || Error::Gpu("a utf8 batch planned before it was queued".into());
        let (mut whole_ends, mut whole_data) = (None, None);
        let (mut ends, mut data) = (None, None);
        if single {
            whole_ends = Some(GpuBuffer::from(self.ends.take().ok_or_else(unqueued)?));
            whole_data = Some(GpuBuffer::from(self.data.take().ok_or_else(unqueued)?));
        } else {
            self.shared = Some([
                Arc::new(self.ends.take().ok_or_else(unqueued)?),
                Arc::new(self.data.take().ok_or_else(unqueued)?),
            ]);
            let [e, d] = self.shared.as_ref().ok_or_else(unqueued)?;
            ends = Some(e);
            data = Some(d);
        }
        let (mut chunk, mut value_at, mut text_at) = (0usize, 0usize, 0usize);
        for &c in &self.group {
            let meta = &t.columns()[c];
            let mut chunk_value_starts = vec![0u64];
            let mut chunk_data_starts = vec![0u64];
            for (ch, &size) in meta.chunks.iter().zip(&self.text_sizes[chunk..]) {
                chunk_value_starts.push(
                    chunk_value_starts[chunk_value_starts.len() - 1] + u64::from(ch.value_count),
                );
                chunk_data_starts.push(chunk_data_starts[chunk_data_starts.len() - 1] + size);
            }
            chunk += meta.chunks.len();
            // Both totals were checked against the decoded buffers' sizes when they were made.
            let values = chunk_value_starts[chunk_value_starts.len() - 1] as usize;
            let text_len = chunk_data_starts[chunk_data_starts.len() - 1] as usize;
            if let (Some(ends), Some(data)) = (ends, data) {
                // u32 ends start on 4 bytes (the buffer's start is aligned); text needs none.
                let mut part = |src: &'s Arc<CudaSlice<u8>>, at: usize, len: usize| {
                    if len > 0 {
                        return gpu.view::<u8>(src, at, len).map(Some);
                    }
                    ranges.push(arrow_layout::CopyPart { src, at, len });
                    Ok(None)
                };
                whole_ends = part(ends, value_at * 4, values * 4)?;
                whole_data = part(data, text_at, text_len)?;
            }
            value_at += values;
            text_at += text_len;
            planned.push((
                c,
                Planned::Utf8 {
                    len: meta.value_count,
                    ends: whole_ends.take(),
                    data: whole_data.take(),
                    chunk_value_starts,
                    chunk_data_starts,
                },
            ));
        }
        Ok(())
    }
}

/// The CPU decoder's error for chunk `i` of a utf8 batch, named by column and chunk.
fn utf8_cpu_error(
    t: &TableReader,
    owner: &[(usize, usize)],
    payloads: &[&[u8]],
    i: usize,
) -> Error {
    let (Some(&(c, k)), Some(payload)) = (owner.get(i), payloads.get(i)) else {
        return Error::Gpu("a utf8 batch failed outside its chunks".into());
    };
    let meta = &t.columns()[c];
    let ch = &meta.chunks[k];
    match text::decode_utf8_chunk(ch.codec, payload, ch.value_count) {
        Err(e) => e.in_chunk(&meta.name, k, ch.codec.name()),
        Ok(_) => Error::Gpu(format!(
            "column '{}' chunk {k}: the GPU path rejected a chunk the CPU decodes",
            meta.name
        )),
    }
}

fn column_meta(t: &TableReader, c: usize) -> Result<&ColumnMeta> {
    t.columns()
        .get(c)
        .ok_or_else(|| Error::InvalidArgument(format!("no column {c}")))
}

/// One field (or a dictionary's values) as Arrow arrays hold it, in GPU memory: the buffers of
/// Arrow's columnar format, little-endian, with no offset into them.
#[derive(Debug)]
pub struct GpuArrowArray {
    /// The Arrow type (a dictionary type for dictionary-encoded fields).
    pub data_type: DataType,
    /// Rows.
    pub len: u64,
    /// The validity bitmap (least significant bit first, at least `ceil(len / 8)` bytes);
    /// `None` when the field has no nulls.
    pub validity: Option<GpuBuffer>,
    /// `len + 1` offsets (i32, or i64 for large types) of variable-size values.
    pub offsets: Option<GpuBuffer>,
    /// Values at the type's width, bits for booleans, text and bytes for variable-size types,
    /// codes for dictionaries. May be longer than the rows need.
    pub values: GpuBuffer,
    /// The dictionary's values, for dictionary-encoded fields.
    pub dictionary: Option<Box<GpuArrowArray>>,
}

impl ArrowTableReader<'_> {
    /// Decodes the selected fields into GPU memory on `gpu` in Arrow's layout
    /// ([`GpuField::into_arrow`]). Fields the writer dictionary-encoded on its own (utf8,
    /// binary and, from format 1.5, fixed-width fields that are not Arrow dictionaries,
    /// `table.md` §6.1) come back as dictionary arrays of their codes, not as the plain values
    /// the CPU reader restores.
    pub fn read_gpu_arrow(&self, gpu: &Gpu) -> Result<Vec<GpuArrowArray>> {
        self.read_gpu(gpu)?
            .into_iter()
            .map(|f| f.into_arrow(gpu))
            .collect()
    }
}

impl GpuField {
    /// Rearranges the decoded columns into Arrow's layout on the device: utf8 offsets rebased
    /// and widened to i32 or i64, decimals widened to i128, ALP floats decoded (`table.md`
    /// §8.2), binary lengths scanned into offsets; every other type is Arrow's layout as
    /// decoded.
    pub fn into_arrow(self, gpu: &Gpu) -> Result<GpuArrowArray> {
        let name = self.meta.name.clone();
        let validity = self.validity.map(|v| raw(&name, v)).transpose()?;
        let field_type = arrow_field(&self.meta).data_type().clone();
        if let Some((dict_values, dict_lengths)) = self.dictionary {
            let code_ty = self.values.logical_type;
            let value_type = match &field_type {
                DataType::Dictionary(_, v) => (**v).clone(),
                other => other.clone(),
            };
            let dict = plain(
                gpu,
                &name,
                &self.meta.ty,
                value_type.clone(),
                dict_values,
                dict_lengths,
                None,
            )?;
            let key_type = match field_type {
                DataType::Dictionary(k, _) => *k,
                _ => super::int_data_type(code_ty),
            };
            return Ok(GpuArrowArray {
                data_type: DataType::Dictionary(Box::new(key_type), Box::new(value_type)),
                len: self.values.len,
                validity,
                offsets: None,
                values: raw(&name, self.values)?,
                dictionary: Some(Box::new(dict)),
            });
        }
        let mut a = plain(
            gpu,
            &name,
            &self.meta.ty,
            field_type,
            self.values,
            self.lengths,
            self.alp,
        )?;
        a.validity = validity;
        Ok(a)
    }
}

/// A field's values (or a dictionary's) of stored type `ty` as an Arrow array with no validity.
fn plain(
    gpu: &Gpu,
    name: &str,
    ty: &FieldType,
    data_type: DataType,
    values: GpuColumn,
    lengths: Option<GpuColumn>,
    alp: Option<[GpuColumn; 3]>,
) -> Result<GpuArrowArray> {
    let len = values.len;
    let (offsets, values) = match (ty, values.data, alp) {
        (
            FieldType::Utf8 | FieldType::LargeUtf8,
            GpuData::Utf8 {
                ends,
                data,
                chunk_value_starts,
                chunk_data_starts,
            },
            _,
        ) => {
            let large = *ty == FieldType::LargeUtf8;
            let offsets = arrow_layout::utf8_offsets(
                gpu,
                &ends,
                len,
                &chunk_value_starts,
                &chunk_data_starts,
                large,
            )
            .map_err(|e| in_field(name, e))?;
            (Some(offsets.into()), data)
        }
        (FieldType::Binary | FieldType::LargeBinary, GpuData::Raw(data), _) => {
            // The bytes column counts bytes; the rows are the lengths.
            let lengths = lengths.ok_or_else(|| {
                Error::InvalidArgument(format!("field '{name}': binary values without lengths"))
            })?;
            let rows = lengths.len;
            let lengths = raw(name, lengths)?;
            let large = *ty == FieldType::LargeBinary;
            let offsets = arrow_layout::binary_offsets(gpu, &lengths, rows, len, large)
                .map_err(|e| in_field(name, e))?;
            return Ok(GpuArrowArray {
                data_type,
                len: rows,
                validity: None,
                offsets: Some(offsets.into()),
                values: data,
                dictionary: None,
            });
        }
        (FieldType::Decimal128 { .. }, GpuData::Raw(v), _) => (
            None,
            arrow_layout::widen_i64_to_i128(gpu, &v, len)
                .map_err(|e| in_field(name, e))?
                .into(),
        ),
        (FieldType::Float32 | FieldType::Float64, GpuData::Raw(digits), Some([p, r, b])) => {
            let float = if *ty == FieldType::Float32 {
                Float::F32
            } else {
                Float::F64
            };
            (
                None,
                alp_values(gpu, name, float, len, &digits, p, r, b)?.into(),
            )
        }
        (_, GpuData::Raw(v), None) => (None, v),
        _ => {
            return Err(Error::InvalidArgument(format!(
                "field '{name}': its stored columns do not match its type"
            )))
        }
    };
    Ok(GpuArrowArray {
        data_type,
        len,
        validity: None,
        offsets,
        values,
        dictionary: None,
    })
}

#[allow(clippy::too_many_arguments)]
fn alp_values(
    gpu: &Gpu,
    name: &str,
    float: Float,
    len: u64,
    digits: &CudaSlice<u8>,
    params: GpuColumn,
    rows: GpuColumn,
    bits: GpuColumn,
) -> Result<CudaSlice<u8>> {
    if rows.len != bits.len {
        return Err(in_field(
            name,
            Error::CountMismatch {
                what: "ALP exception bits vs exception rows",
                expected: rows.len,
                found: bits.len,
            },
        ));
    }
    let (params_len, exceptions) = (params.len, rows.len);
    let (p, r, b) = (raw(name, params)?, raw(name, rows)?, raw(name, bits)?);
    let cols = AlpColumns {
        digits,
        params: &p,
        params_len,
        exception_rows: &r,
        exception_bits: &b,
        exceptions,
    };
    let out = match float {
        Float::F64 => {
            let (f10, if10) = alp_tables_f64();
            let t = AlpTables::F64 {
                f10: &f10,
                if10: &if10,
            };
            arrow_layout::alp_decode(gpu, cols, t, ALP_VECTOR_ROWS, len)
        }
        Float::F32 => {
            let (f10, if10) = alp_tables_f32();
            let t = AlpTables::F32 {
                f10: &f10,
                if10: &if10,
            };
            arrow_layout::alp_decode(gpu, cols, t, ALP_VECTOR_ROWS, len)
        }
    };
    out.map_err(|e| in_field(name, e))
}

/// The CPU decoder's powers of ten for Float64 (`table.md` §8.2): 10^i, exact, and the
/// binary64 nearest 10^-i, read back from the CPU's own decode so both sides share one table.
fn alp_tables_f64() -> (Vec<f64>, Vec<f64>) {
    let n = Float::F64.max_e() as i32 + 1;
    let f10 = (0..n).map(|i| 10f64.powi(i)).collect();
    let if10 = (0..n as u8)
        .map(|e| f64::from_bits(Float::F64.decode(1, e, 0)))
        .collect();
    (f10, if10)
}

/// [`alp_tables_f64`] for Float32.
fn alp_tables_f32() -> (Vec<f32>, Vec<f32>) {
    let n = Float::F32.max_e() as i32 + 1;
    let f10 = (0..n).map(|i| 10f32.powi(i)).collect();
    let if10 = (0..n as u8)
        .map(|e| f32::from_bits(Float::F32.decode(1, e, 0) as u32))
        .collect();
    (f10, if10)
}

fn raw_ref<'c>(name: &str, c: &'c GpuColumn) -> Result<&'c CudaSlice<u8>> {
    match &c.data {
        GpuData::Raw(v) => Ok(&**v),
        GpuData::Utf8 { .. } => Err(Error::InvalidArgument(format!(
            "field '{name}': a utf8 column where fixed-size values belong"
        ))),
    }
}

fn raw(name: &str, c: GpuColumn) -> Result<GpuBuffer> {
    match c.data {
        GpuData::Raw(v) => Ok(v),
        GpuData::Utf8 { .. } => Err(Error::InvalidArgument(format!(
            "field '{name}': a utf8 column where fixed-size values belong"
        ))),
    }
}

fn in_field(name: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("field '{name}': {m}")),
        Error::Gpu(m) => Error::Gpu(format!("field '{name}': {m}")),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables the GPU gets reproduce the CPU's decode bit for bit (powers of ten exact,
    /// inverse powers the CPU's), over every `(e, f)` and digits of every size.
    #[test]
    fn alp_tables_are_the_cpus() {
        let (f10, if10) = alp_tables_f64();
        let (g10, ig10) = alp_tables_f32();
        assert_eq!((f10.len(), g10.len()), (19, 11));
        for (i, x) in f10.iter().enumerate() {
            assert_eq!(*x, format!("1e{i}").parse::<f64>().expect("literal"));
        }
        for (i, x) in g10.iter().enumerate() {
            assert_eq!(*x, format!("1e{i}").parse::<f32>().expect("literal"));
        }
        let digits = [
            0i64,
            1,
            -1,
            7,
            123_456_789,
            -98_765_432_109,
            1 << 53,
            (1 << 62) - 1,
        ];
        for e in 0..=18u8 {
            for f in 0..=e {
                for &d in &digits {
                    let x = d as f64 * f10[f as usize] * if10[e as usize];
                    assert_eq!(x.to_bits(), Float::F64.decode(d, e, f), "{d} {e} {f}");
                    if e <= 10 {
                        let y = d as f32 * g10[f as usize] * ig10[e as usize];
                        assert_eq!(y.to_bits() as u64, Float::F32.decode(d, e, f));
                    }
                }
            }
        }
    }

    /// ALP params pack `e` low and `f` high, as the kernels unpack them.
    #[test]
    fn alp_params_pack_as_the_kernels_read_them() {
        let p = super::super::alp::pack(12, 3);
        assert_eq!((p & 0xff, p >> 8), (12, 3));
        assert_eq!(super::super::alp::unpack(Float::F64, p), Some((12, 3)));
        assert_eq!(super::super::alp::unpack(Float::F32, p), None);
    }
}
