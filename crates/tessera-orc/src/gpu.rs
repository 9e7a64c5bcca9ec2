//! An ORC file's streams decoded on the GPU with the batched CODAG decoders of
//! `tessera_gpu::codag` (one warp per chunk), `docs/gpu/orc.md`:
//!
//! 1. every ZLIB compression chunk of every selected stream of every stripe: one Deflate batch
//!    (chunks stored as they are, `isOriginal`, are copied on the host; SNAPPY, LZ4 and ZSTD
//!    chunks are decompressed on the CPU, in parallel);
//! 2. every PRESENT stream: one byte-RLE batch; the host counts each column's non-null rows,
//!    which the value streams' counts depend on;
//! 3. every integer-like stream (DATA of integers, dates and timestamps, SECONDARY of
//!    timestamps and decimals, LENGTH of strings and binaries and dictionaries, dictionary ids):
//!    one RLE v1 batch and one RLE v2 batch; boolean and tinyint DATA streams: one byte-RLE batch.
//!
//! After step 3 every stream is decoded and resident on the GPU. The decoded values are then
//! copied to the host, where nulls are scattered, dictionary entries gathered and timestamps
//! combined into Arrow arrays by the same code as the CPU path (`cpu.rs`), so both paths give
//! the same arrays and errors. A chunk the GPU flags is re-decoded by the CPU reference for its
//! exact error (`codag::cpu_error`), reported with its stripe, column and stream.

use std::collections::HashMap;
use std::time::Instant;

use arrow_array::RecordBatch;
use rayon::prelude::*;
use tessera_gpu::codag::{self, Chunk, Decoder, DeviceBatch};
use tessera_gpu::Gpu;

use crate::compress::{self, Compression};
use crate::cpu::{stream_err, Predecoded, MAX_VALUES_PER_BYTE};
use crate::error::{OrcError, Result};
use crate::file::{OrcType, StripeLayout};
use crate::proto::{encoding_kind, stream_kind};
use crate::OrcReader;

/// What the GPU produced for one column of one stripe.
#[derive(Debug, Default)]
pub(crate) struct ColumnDecoded {
    /// Streams decompressed (by the GPU's Deflate or the CPU's Snappy/LZ4/ZSTD), by kind.
    pub inflated: HashMap<i32, Vec<u8>>,
    /// Streams decoded by the GPU's RLE decoders.
    pub pre: Predecoded,
}

/// What one [`read_batches`] did.
#[derive(Debug, Default, Clone)]
pub struct GpuReport {
    /// Deflate chunks decoded in the one Deflate launch.
    pub deflate_chunks: usize,
    /// PRESENT streams decoded in the first byte-RLE launch.
    pub present_chunks: usize,
    /// Boolean and tinyint DATA streams (second byte-RLE launch).
    pub byte_rle_chunks: usize,
    /// RLE v1 streams.
    pub rle_v1_chunks: usize,
    /// RLE v2 streams.
    pub rle_v2_chunks: usize,
    /// Bytes of decoded stream data the launches wrote on the GPU.
    pub resident_bytes: usize,
    /// Seconds from the file's bytes in host memory to every stream decoded on the GPU.
    pub seconds_to_resident: f64,
    /// Seconds to the Arrow batches on the host.
    pub seconds_total: f64,
}

const STREAMS: [(i32, &str); 5] = [
    (stream_kind::PRESENT, "PRESENT"),
    (stream_kind::DATA, "DATA"),
    (stream_kind::LENGTH, "LENGTH"),
    (stream_kind::SECONDARY, "SECONDARY"),
    (stream_kind::DICTIONARY_DATA, "DICTIONARY_DATA"),
];

fn stream_name(kind: i32) -> &'static str {
    STREAMS
        .iter()
        .find(|s| s.0 == kind)
        .map(|s| s.1)
        .unwrap_or("?")
}

/// Where a chunk of a batch came from: stripe, selected column, stream kind.
type Tag = (usize, usize, i32);
/// A value stream to decode: its place, its (decompressed) bytes, its value count, signed.
type Job = (Tag, Vec<u8>, usize, bool);

/// Decodes one batch of chunks; returns each chunk's output bytes or the first bad chunk's
/// error with its place.
fn run_batch(
    gpu: &Gpu,
    reader: &OrcReader<'_>,
    decoder: Decoder,
    chunks: &[Chunk<'_>],
    tags: &[Tag],
    resident: &mut usize,
) -> Result<Vec<Vec<u8>>> {
    if chunks.is_empty() {
        return Ok(Vec::new());
    }
    let batch = DeviceBatch::upload(gpu, decoder, chunks)?;
    let mut out = gpu.alloc::<u8>(batch.out_bytes().max(8))?;
    codag::enqueue(gpu, &batch, &mut out)?;
    let res = codag::results(gpu, &batch)?;
    *resident += batch.out_bytes();
    let place = |c: usize, e: tessera_format::Error| {
        let (s, k, kind) = tags[c];
        let col = &reader.file.columns()[reader.cols[k]];
        stream_err(s, col, stream_name(kind), OrcError::Codec(e))
    };
    for (c, r) in res.iter().enumerate() {
        if r.status != 0 {
            return Err(place(c, codag::cpu_error(decoder, &chunks[c], c, r.status)));
        }
        let want = chunks[c].out_cap;
        if decoder != Decoder::Deflate && r.out_len != want {
            return Err(place(
                c,
                tessera_format::Error::CountMismatch {
                    what: "values the GPU decoded",
                    expected: want as u64,
                    found: r.out_len as u64,
                },
            ));
        }
    }
    let mut host = vec![0u8; batch.out_bytes()];
    gpu.download(&out, &mut host)?;
    let eb = decoder.elem_bytes();
    Ok(res
        .iter()
        .enumerate()
        .map(|(c, r)| {
            let a = batch.out_start(c) * eb;
            host[a..a + r.out_len * eb].to_vec()
        })
        .collect())
}

fn count_err(reader: &OrcReader<'_>, t: Tag, n: usize, bytes: usize) -> OrcError {
    let col = &reader.file.columns()[reader.cols[t.1]];
    stream_err(
        t.0,
        col,
        stream_name(t.2),
        OrcError::malformed(
            "stream",
            format!("{n} values announced, {bytes} bytes cannot hold them"),
        ),
    )
}

/// Reads the reader's columns with every stream decoded on the GPU: one batch per stripe.
pub fn read_batches(gpu: &Gpu, reader: &OrcReader<'_>) -> Result<(Vec<RecordBatch>, GpuReport)> {
    let t0 = Instant::now();
    let file = reader.file;
    let bytes = file.bytes();
    let bs = file.block_size();
    let ns = file.stripes().len();
    let nc = reader.cols.len();
    let layouts: Vec<StripeLayout> = (0..ns)
        .into_par_iter()
        .map(|s| file.stripe_layout(s))
        .collect::<Result<_>>()?;
    let mut dec: Vec<Vec<ColumnDecoded>> = (0..ns)
        .map(|_| (0..nc).map(|_| ColumnDecoded::default()).collect())
        .collect();
    let mut rep = GpuReport::default();
    let mut resident = 0usize;

    // Every selected stream, in file order.
    let mut streams: Vec<(Tag, std::ops::Range<usize>)> = Vec::new();
    for (s, l) in layouts.iter().enumerate() {
        for (k, &ci) in reader.cols.iter().enumerate() {
            let id = file.columns()[ci].id;
            for (kind, _) in STREAMS {
                if let Some(r) = l.streams.get(&(id, kind)) {
                    streams.push(((s, k, kind), r.clone()));
                }
            }
        }
    }

    // 1. Decompression.
    match file.compression() {
        Compression::None => {}
        Compression::Zlib => {
            enum Piece {
                Raw(std::ops::Range<usize>),
                Gpu(usize),
            }
            let mut chunks = Vec::new();
            let mut tags = Vec::new();
            let mut pieces: Vec<Vec<Piece>> = Vec::with_capacity(streams.len());
            for (t, r) in &streams {
                let st = &bytes[r.clone()];
                let cs = compress::chunks(st, bs).map_err(|e| {
                    stream_err(t.0, &file.columns()[reader.cols[t.1]], stream_name(t.2), e)
                })?;
                let mut p = Vec::with_capacity(cs.len());
                for c in cs {
                    if c.original {
                        p.push(Piece::Raw(r.start + c.range.start..r.start + c.range.end));
                    } else {
                        p.push(Piece::Gpu(chunks.len()));
                        chunks.push(Chunk {
                            input: &st[c.range],
                            out_cap: bs,
                            signed: false,
                        });
                        tags.push(*t);
                    }
                }
                pieces.push(p);
            }
            rep.deflate_chunks = chunks.len();
            let out = run_batch(gpu, reader, Decoder::Deflate, &chunks, &tags, &mut resident)?;
            for ((t, _), p) in streams.iter().zip(pieces) {
                let mut v = Vec::new();
                for piece in p {
                    match piece {
                        Piece::Raw(r) => v.extend_from_slice(&bytes[r]),
                        Piece::Gpu(c) => v.extend_from_slice(&out[c]),
                    }
                }
                dec[t.0][t.1].inflated.insert(t.2, v);
            }
        }
        c => {
            let done: Vec<(Tag, Vec<u8>)> = streams
                .par_iter()
                .map(|(t, r)| {
                    compress::decompress(c, bs, &bytes[r.clone()])
                        .map(|v| (*t, v.into_owned()))
                        .map_err(|e| {
                            stream_err(t.0, &file.columns()[reader.cols[t.1]], stream_name(t.2), e)
                        })
                })
                .collect::<Result<_>>()?;
            for (t, v) in done {
                dec[t.0][t.1].inflated.insert(t.2, v);
            }
        }
    }
    let stream_of = |dec: &Vec<Vec<ColumnDecoded>>, t: Tag| -> Option<Vec<u8>> {
        if let Some(v) = dec[t.0][t.1].inflated.get(&t.2) {
            return Some(v.clone());
        }
        let id = file.columns()[reader.cols[t.1]].id;
        layouts[t.0]
            .streams
            .get(&(id, t.2))
            .map(|r| bytes[r.clone()].to_vec())
    };

    // 2. PRESENT streams, then each column's non-null count.
    let mut nonnull = vec![vec![0usize; nc]; ns];
    {
        let mut inputs = Vec::new();
        let mut caps = Vec::new();
        let mut tags = Vec::new();
        for (s, l) in layouts.iter().enumerate() {
            let rows = usize::try_from(l.rows)
                .map_err(|_| OrcError::malformed("stripe", "row count over the address space"))?;
            for (k, n) in nonnull[s].iter_mut().enumerate() {
                *n = rows;
                let t = (s, k, stream_kind::PRESENT);
                if let Some(b) = stream_of(&dec, t) {
                    if rows > b.len().saturating_mul(MAX_VALUES_PER_BYTE) {
                        return Err(count_err(reader, t, rows, b.len()));
                    }
                    inputs.push(b);
                    caps.push(rows.div_ceil(8));
                    tags.push(t);
                }
            }
        }
        let chunks: Vec<Chunk<'_>> = inputs
            .iter()
            .zip(&caps)
            .map(|(i, &c)| Chunk {
                input: i,
                out_cap: c,
                signed: false,
            })
            .collect();
        rep.present_chunks = chunks.len();
        let out = run_batch(
            gpu,
            reader,
            Decoder::OrcByteRle,
            &chunks,
            &tags,
            &mut resident,
        )?;
        for (t, b) in tags.iter().zip(out) {
            let rows = nonnull[t.0][t.1];
            let ones: usize = (0..rows)
                .filter(|&i| b[i / 8] >> (7 - i % 8) & 1 == 1)
                .count();
            nonnull[t.0][t.1] = ones;
            dec[t.0][t.1].pre.bytes.insert(stream_kind::PRESENT, b);
        }
    }

    // 3. Value streams: byte RLE, RLE v1, RLE v2.
    let mut jobs: [Vec<Job>; 3] = Default::default();
    for (s, l) in layouts.iter().enumerate() {
        for (k, &ci) in reader.cols.iter().enumerate() {
            let c = &file.columns()[ci];
            let Some(&(enc, dict)) = l.encodings.get(c.id as usize) else {
                continue; // the CPU assembly reports the missing encoding
            };
            let v2 = matches!(enc, encoding_kind::DIRECT_V2 | encoding_kind::DICTIONARY_V2);
            let dict_enc = matches!(
                enc,
                encoding_kind::DICTIONARY | encoding_kind::DICTIONARY_V2
            );
            let ints = if v2 { 2 } else { 1 };
            let n = nonnull[s][k];
            let want: Vec<(i32, usize, usize, bool)> = match &c.ty {
                OrcType::Boolean => vec![(stream_kind::DATA, n.div_ceil(8), 0, false)],
                OrcType::Byte => vec![(stream_kind::DATA, n, 0, false)],
                OrcType::Short | OrcType::Int | OrcType::Long | OrcType::Date => {
                    vec![(stream_kind::DATA, n, ints, true)]
                }
                OrcType::Timestamp => vec![
                    (stream_kind::DATA, n, ints, true),
                    (stream_kind::SECONDARY, n, ints, false),
                ],
                OrcType::Decimal { .. } => vec![(stream_kind::SECONDARY, n, ints, true)],
                OrcType::String | OrcType::Binary if dict_enc => vec![
                    (stream_kind::DATA, n, ints, false),
                    (stream_kind::LENGTH, dict as usize, ints, false),
                ],
                OrcType::String | OrcType::Binary => vec![(stream_kind::LENGTH, n, ints, false)],
                _ => vec![],
            };
            for (kind, count, which, signed) in want {
                let t = (s, k, kind);
                let Some(b) = stream_of(&dec, t) else {
                    continue; // the CPU assembly reports the missing stream
                };
                let per_byte = if which == 0 && c.ty == OrcType::Boolean {
                    MAX_VALUES_PER_BYTE / 8
                } else {
                    MAX_VALUES_PER_BYTE
                };
                if count > b.len().saturating_mul(per_byte) {
                    return Err(count_err(reader, t, count, b.len()));
                }
                jobs[which].push((t, b, count, signed));
            }
        }
    }
    let decoders = [Decoder::OrcByteRle, Decoder::OrcRleV1, Decoder::OrcRleV2];
    let mut outs = Vec::with_capacity(3);
    for (which, job) in jobs.iter().enumerate() {
        let chunks: Vec<Chunk<'_>> = job
            .iter()
            .map(|(_, b, n, signed)| Chunk {
                input: b,
                out_cap: *n,
                signed: *signed,
            })
            .collect();
        let tags: Vec<Tag> = job.iter().map(|j| j.0).collect();
        outs.push(run_batch(
            gpu,
            reader,
            decoders[which],
            &chunks,
            &tags,
            &mut resident,
        )?);
    }
    rep.byte_rle_chunks = jobs[0].len();
    rep.rle_v1_chunks = jobs[1].len();
    rep.rle_v2_chunks = jobs[2].len();
    rep.resident_bytes = resident;
    rep.seconds_to_resident = t0.elapsed().as_secs_f64();
    for (which, (job, out)) in jobs.iter().zip(outs).enumerate() {
        for ((t, ..), b) in job.iter().zip(out) {
            let pre = &mut dec[t.0][t.1].pre;
            if which == 0 {
                pre.bytes.insert(t.2, b);
            } else {
                let v = b
                    .chunks_exact(8)
                    .map(|w| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(w);
                        i64::from_le_bytes(a)
                    })
                    .collect();
                pre.ints.insert(t.2, v);
            }
        }
    }

    let batches = dec
        .par_iter()
        .enumerate()
        .map(|(s, d)| reader.assemble(s, &layouts[s], Some(d)))
        .collect::<Result<Vec<_>>>()?;
    rep.seconds_total = t0.elapsed().as_secs_f64();
    Ok((batches, rep))
}
