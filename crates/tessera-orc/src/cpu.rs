//! A stripe's columns decoded on the CPU into Arrow arrays: every stream through the ORC
//! references of `tessera_codecs::orc` (RLE v1 and v2, byte RLE, booleans), nulls placed from
//! PRESENT streams.
//!
//! Counts come from the stripe: a column's PRESENT stream holds one bit per row, its value
//! streams one value per non-null row (a dictionary's LENGTH stream one per entry). Before any
//! buffer is sized by such a count the count is checked against the bytes of the stream that
//! must deliver it ([`MAX_VALUES_PER_BYTE`]), so a lying row count cannot make us allocate.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Decimal128Array, PrimitiveArray, StringArray,
    TimestampNanosecondArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use tessera_codecs::orc as rle;

use crate::compress::decompress;
use crate::error::{OrcError, Result};
use crate::file::{OrcColumn, OrcFile, OrcType, StripeLayout};
use crate::proto::{encoding_kind, stream_kind};
use crate::schema::TIMESTAMP_EPOCH_2015;

/// The most values one byte of an ORC stream can yield: a byte-RLE run of 130 bytes from 2
/// bytes, 8 booleans a byte (RLE v2's DELTA yields 512 values from 4 bytes, RLE v1 130 from 3).
pub const MAX_VALUES_PER_BYTE: usize = 520;

/// Stream values decoded elsewhere (on the GPU), by `(stream kind)`: integers as `i64`, byte
/// RLE output as bytes.
#[derive(Debug, Default)]
pub(crate) struct Predecoded {
    pub ints: std::collections::HashMap<i32, Vec<i64>>,
    pub bytes: std::collections::HashMap<i32, Vec<u8>>,
}

/// The streams of one column in one stripe, decompressed.
pub(crate) struct ColumnStreams<'a> {
    pub pre: Option<&'a Predecoded>,
    pub stripe: usize,
    pub column: &'a OrcColumn,
    pub rows: usize,
    pub encoding: i32,
    pub dict_size: usize,
    pub present: Option<Cow<'a, [u8]>>,
    pub data: Option<Cow<'a, [u8]>>,
    pub length: Option<Cow<'a, [u8]>>,
    pub secondary: Option<Cow<'a, [u8]>>,
    pub dictionary: Option<Cow<'a, [u8]>>,
    pub writer_timezone: &'a str,
}

impl<'a> ColumnStreams<'a> {
    /// The column's streams; `inflated` holds those already decompressed (by the GPU).
    pub(crate) fn gather(
        f: &'a OrcFile,
        s: usize,
        layout: &'a StripeLayout,
        column: &'a OrcColumn,
        inflated: Option<&'a std::collections::HashMap<i32, Vec<u8>>>,
        pre: Option<&'a Predecoded>,
    ) -> Result<ColumnStreams<'a>> {
        let get = |kind: i32, name: &'static str| -> Result<Option<Cow<'a, [u8]>>> {
            if let Some(b) = inflated.and_then(|m| m.get(&kind)) {
                return Ok(Some(Cow::Borrowed(b.as_slice())));
            }
            match layout.streams.get(&(column.id, kind)) {
                None => Ok(None),
                Some(r) => decompress(f.compression(), f.block_size(), &f.bytes()[r.clone()])
                    .map(Some)
                    .map_err(|e| stream_err(s, column, name, e)),
            }
        };
        let (encoding, dict) = *layout.encodings.get(column.id as usize).ok_or_else(|| {
            OrcError::malformed(
                format!("stripe {s} footer"),
                format!("no encoding for column {}", column.id),
            )
        })?;
        Ok(ColumnStreams {
            pre,
            stripe: s,
            column,
            rows: usize::try_from(layout.rows)
                .map_err(|_| OrcError::malformed("stripe", "row count over the address space"))?,
            encoding,
            dict_size: dict as usize,
            present: get(stream_kind::PRESENT, "PRESENT")?,
            data: get(stream_kind::DATA, "DATA")?,
            length: get(stream_kind::LENGTH, "LENGTH")?,
            secondary: get(stream_kind::SECONDARY, "SECONDARY")?,
            dictionary: get(stream_kind::DICTIONARY_DATA, "DICTIONARY_DATA")?,
            writer_timezone: &layout.writer_timezone,
        })
    }

    pub(crate) fn err(&self, stream: &'static str, e: impl Into<OrcError>) -> OrcError {
        stream_err(self.stripe, self.column, stream, e.into())
    }

    pub(crate) fn need(&self, stream: &'static str) -> Result<&[u8]> {
        let s = match stream {
            "DATA" => &self.data,
            "LENGTH" => &self.length,
            "SECONDARY" => &self.secondary,
            "DICTIONARY_DATA" => &self.dictionary,
            _ => &self.present,
        };
        s.as_deref().ok_or_else(|| {
            self.err(
                stream,
                OrcError::malformed("stripe", format!("no {stream} stream")),
            )
        })
    }

    /// Checks that `n` values can come from `bytes` bytes.
    pub(crate) fn check_count(&self, stream: &'static str, n: usize, bytes: usize) -> Result<()> {
        if n > bytes.saturating_mul(MAX_VALUES_PER_BYTE) {
            return Err(self.err(
                stream,
                OrcError::malformed(
                    "stream",
                    format!("{n} values announced, {bytes} bytes cannot hold them"),
                ),
            ));
        }
        Ok(())
    }

    /// Whether integer streams are RLE v2 (else v1).
    pub(crate) fn v2(&self) -> Result<bool> {
        match self.encoding {
            encoding_kind::DIRECT | encoding_kind::DICTIONARY => Ok(false),
            encoding_kind::DIRECT_V2 | encoding_kind::DICTIONARY_V2 => Ok(true),
            k => Err(self.err(
                "DATA",
                OrcError::Unsupported(format!("column encoding kind {k}")),
            )),
        }
    }

    pub(crate) fn dictionary_encoded(&self) -> bool {
        matches!(
            self.encoding,
            encoding_kind::DICTIONARY | encoding_kind::DICTIONARY_V2
        )
    }

    /// The validity of each row (`None`: no nulls) and the count of non-null rows.
    pub(crate) fn present(&self) -> Result<(Option<NullBuffer>, usize)> {
        let Some(p) = self.present.as_deref() else {
            return Ok((None, self.rows));
        };
        let bits = self.bools(stream_kind::PRESENT, "PRESENT", p, self.rows)?;
        let nb = NullBuffer::from(bits);
        let n = self.rows - nb.null_count();
        Ok((Some(nb), n))
    }

    /// `n` booleans of a boolean stream (decoded here or taken from the GPU's bytes).
    pub(crate) fn bools(
        &self,
        kind: i32,
        stream: &'static str,
        input: &[u8],
        n: usize,
    ) -> Result<Vec<bool>> {
        if let Some(b) = self.pre.and_then(|p| p.bytes.get(&kind)) {
            if b.len() != n.div_ceil(8) {
                return Err(self.err(stream, OrcError::malformed("GPU output", "length differs")));
            }
            return Ok((0..n).map(|i| b[i / 8] >> (7 - i % 8) & 1 == 1).collect());
        }
        self.check_count(stream, n, input.len())?;
        let mut bits = vec![false; n];
        rle::decode_bool(input, &mut bits).map_err(|e| self.err(stream, e))?;
        Ok(bits)
    }

    /// `n` bytes of a byte-RLE stream.
    pub(crate) fn byte_rle(&self, n: usize) -> Result<Vec<u8>> {
        if let Some(b) = self.pre.and_then(|p| p.bytes.get(&stream_kind::DATA)) {
            if b.len() != n {
                return Err(self.err("DATA", OrcError::malformed("GPU output", "length differs")));
            }
            return Ok(b.clone());
        }
        let d = self.need("DATA")?;
        self.check_count("DATA", n, d.len())?;
        let mut b = vec![0u8; n];
        rle::decode_byte_rle(d, &mut b).map_err(|e| self.err("DATA", e))?;
        Ok(b)
    }

    pub(crate) fn ints(&self, stream: &'static str, n: usize, signed: bool) -> Result<Vec<i64>> {
        if let Some(v) = self.pre.and_then(|p| p.ints.get(&kind_of(stream))) {
            if v.len() != n {
                return Err(self.err(stream, OrcError::malformed("GPU output", "length differs")));
            }
            return Ok(v.clone());
        }
        let input = self.need(stream)?;
        self.check_count(stream, n, input.len())?;
        let mut out = vec![0i64; n];
        let r = if self.v2()? {
            rle::decode_rle_v2(input, signed, &mut out)
        } else {
            rle::decode_rle_v1(input, signed, &mut out)
        };
        r.map_err(|e| self.err(stream, e))?;
        Ok(out)
    }
}

pub(crate) fn kind_of(stream: &str) -> i32 {
    match stream {
        "PRESENT" => stream_kind::PRESENT,
        "DATA" => stream_kind::DATA,
        "LENGTH" => stream_kind::LENGTH,
        "SECONDARY" => stream_kind::SECONDARY,
        _ => stream_kind::DICTIONARY_DATA,
    }
}

pub(crate) fn stream_err(s: usize, c: &OrcColumn, stream: &'static str, e: OrcError) -> OrcError {
    OrcError::Stream {
        stripe: s,
        column: c.name.clone(),
        stream,
        source: Box::new(e),
    }
}

/// Values of non-null rows spread over all rows: row `i` takes the next value when valid, a
/// default when null.
pub(crate) fn scatter<T: Copy + Default>(vals: Vec<T>, nulls: &Option<NullBuffer>) -> Vec<T> {
    match nulls {
        None => vals,
        Some(nb) => {
            let mut out = Vec::with_capacity(nb.len());
            let mut it = vals.into_iter();
            for v in nb.iter() {
                out.push(if v {
                    it.next().unwrap_or_default()
                } else {
                    T::default()
                });
            }
            out
        }
    }
}

fn narrow<T: TryFrom<i64> + Copy + Default>(
    cs: &ColumnStreams<'_>,
    v: Vec<i64>,
    ty: &'static str,
) -> Result<Vec<T>> {
    v.into_iter()
        .enumerate()
        .map(|(i, x)| {
            T::try_from(x).map_err(|_| {
                cs.err(
                    "DATA",
                    tessera_format::Error::ValueOutOfRange {
                        index: i as u64,
                        ty,
                        found: x as u64,
                    },
                )
            })
        })
        .collect()
}

fn prim<T: arrow_array::ArrowPrimitiveType>(
    vals: Vec<T::Native>,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let v = scatter(vals, &nulls);
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), nulls))
}

/// Little-endian fixed-width values (float, double).
fn fixed<const W: usize>(cs: &ColumnStreams<'_>, n: usize) -> Result<Vec<[u8; W]>> {
    let d = cs.need("DATA")?;
    let need = n.checked_mul(W).filter(|&b| b <= d.len()).ok_or_else(|| {
        cs.err(
            "DATA",
            OrcError::malformed(
                "stream",
                format!("{n} values of {W} bytes, {} bytes in the stream", d.len()),
            ),
        )
    })?;
    Ok(d[..need]
        .chunks_exact(W)
        .map(|c| {
            let mut a = [0u8; W];
            a.copy_from_slice(c);
            a
        })
        .collect())
}

/// Offsets and bytes of a string or binary column's non-null values (DIRECT or DICTIONARY).
pub(crate) fn byte_values(cs: &ColumnStreams<'_>, n: usize) -> Result<(Vec<i64>, Vec<u8>)> {
    if cs.dictionary_encoded() {
        let dict_lens = cs.ints("LENGTH", cs.dict_size, false)?;
        let dict_bytes = cs.dictionary.as_deref().unwrap_or(&[]);
        let dict_off = offsets(cs, "LENGTH", &dict_lens, dict_bytes.len())?;
        let ids = cs.ints("DATA", n, false)?;
        dictionary_gather(cs, &ids, &dict_off, dict_bytes)
    } else {
        let lens = cs.ints("LENGTH", n, false)?;
        let data = cs.data.as_deref().unwrap_or(&[]);
        let off = offsets(cs, "LENGTH", &lens, data.len())?;
        let end = *off.last().unwrap_or(&0) as usize;
        Ok((off, data[..end].to_vec()))
    }
}

/// Running offsets of `lens`, checked to end inside `avail` bytes.
pub(crate) fn offsets(
    cs: &ColumnStreams<'_>,
    stream: &'static str,
    lens: &[i64],
    avail: usize,
) -> Result<Vec<i64>> {
    let mut off = Vec::with_capacity(lens.len() + 1);
    let mut at = 0i64;
    off.push(0);
    for (i, &l) in lens.iter().enumerate() {
        at = match at.checked_add(l) {
            Some(x) if l >= 0 && x as u64 <= avail as u64 => x,
            _ => {
                return Err(cs.err(
                    stream,
                    OrcError::malformed(
                        "lengths",
                        format!("length {l} of value {i} runs past the {avail} bytes of data"),
                    ),
                ))
            }
        };
        off.push(at);
    }
    Ok(off)
}

/// The bytes of dictionary entries `ids`, concatenated, with their offsets.
pub(crate) fn dictionary_gather(
    cs: &ColumnStreams<'_>,
    ids: &[i64],
    dict_off: &[i64],
    dict_bytes: &[u8],
) -> Result<(Vec<i64>, Vec<u8>)> {
    let entries = dict_off.len() - 1;
    let mut off = Vec::with_capacity(ids.len() + 1);
    off.push(0i64);
    let mut bytes = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        if id < 0 || id as u64 >= entries as u64 {
            return Err(cs.err(
                "DATA",
                OrcError::malformed(
                    "dictionary id",
                    format!("value {i}: id {id}, the dictionary has {entries} entries"),
                ),
            ));
        }
        let (a, b) = (
            dict_off[id as usize] as usize,
            dict_off[id as usize + 1] as usize,
        );
        bytes.extend_from_slice(&dict_bytes[a..b]);
        off.push(bytes.len() as i64);
    }
    Ok((off, bytes))
}

/// Offsets of non-null values spread over all rows (a null row is empty).
fn spread_offsets(off: Vec<i64>, nulls: &Option<NullBuffer>) -> Result<OffsetBuffer<i32>> {
    let too_big = || OrcError::Unsupported("a string column of 2 GiB or more in one stripe".into());
    let off32 = |x: i64| i32::try_from(x).map_err(|_| too_big());
    let v: Vec<i32> = match nulls {
        None => off.into_iter().map(off32).collect::<Result<_>>()?,
        Some(nb) => {
            let mut out = Vec::with_capacity(nb.len() + 1);
            out.push(0);
            let mut k = 0usize;
            for valid in nb.iter() {
                if valid {
                    k += 1;
                }
                out.push(off32(off.get(k).copied().unwrap_or(0))?);
            }
            out
        }
    };
    Ok(OffsetBuffer::new(ScalarBuffer::from(v)))
}

/// An unbounded zigzag base-128 varint as an `i128` (decimal DATA streams).
fn varint_i128(d: &[u8], at: &mut usize) -> std::result::Result<i128, String> {
    let mut u: u128 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = d.get(*at) else {
            return Err(format!("varint truncated at byte {at}"));
        };
        *at += 1;
        if shift >= 128 || (shift == 126 && b & 0x7f > 3) {
            return Err(format!("varint over 128 bits ending at byte {at}"));
        }
        u |= ((b & 0x7f) as u128) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    Ok((u >> 1) as i128 ^ -((u & 1) as i128))
}

/// `v` written at `from` digits after the point, rescaled to `to` (ORC readers truncate when
/// digits are dropped).
fn rescale(v: i128, from: i64, to: i64) -> Option<i128> {
    let d = to.checked_sub(from)?;
    if d >= 0 {
        v.checked_mul(10i128.checked_pow(u32::try_from(d).ok()?)?)
    } else {
        Some(v / 10i128.checked_pow(u32::try_from(-d).ok()?)?)
    }
}

pub(crate) fn timestamp_ns(secs: i64, nanos_enc: i64) -> Option<i64> {
    // The nanoseconds are read as a signed value and shifted arithmetically, as Apache ORC's
    // C++ reader does: its writer (pyarrow's) stores a negative remainder for times before
    // 1970, which sums back to the right instant.
    let z = (nanos_enc & 7) as u32;
    let mut nanos = nanos_enc >> 3;
    if z != 0 {
        nanos = nanos.checked_mul(10i64.pow(z + 1))?;
    }
    if nanos <= -1_000_000_000 || nanos >= 1_000_000_000 {
        return None;
    }
    let mut s = secs.checked_add(TIMESTAMP_EPOCH_2015)?;
    // ORC's writers truncate negative times toward zero in seconds while the nanoseconds stay
    // positive; Apache ORC's readers take one second off, as done here.
    if s < 0 && nanos > 999_999 {
        s -= 1;
    }
    s.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Decodes one column of one stripe.
pub(crate) fn decode_column(cs: &ColumnStreams<'_>) -> Result<ArrayRef> {
    let (nulls, n) = cs.present()?;
    Ok(match &cs.column.ty {
        OrcType::Boolean => {
            let d = cs.data.as_deref().unwrap_or(&[]);
            let bits = cs.bools(stream_kind::DATA, "DATA", d, n)?;
            let v = scatter(bits, &nulls);
            Arc::new(BooleanArray::new(BooleanBuffer::from(v), nulls))
        }
        OrcType::Byte => {
            let b = cs.byte_rle(n)?;
            prim::<Int8Type>(b.into_iter().map(|x| x as i8).collect(), nulls)
        }
        OrcType::Short => {
            prim::<Int16Type>(narrow(cs, cs.ints("DATA", n, true)?, "smallint")?, nulls)
        }
        OrcType::Int => prim::<Int32Type>(narrow(cs, cs.ints("DATA", n, true)?, "int")?, nulls),
        OrcType::Long => prim::<Int64Type>(cs.ints("DATA", n, true)?, nulls),
        OrcType::Date => prim::<Date32Type>(narrow(cs, cs.ints("DATA", n, true)?, "date")?, nulls),
        OrcType::Float => prim::<Float32Type>(
            fixed::<4>(cs, n)?
                .into_iter()
                .map(f32::from_le_bytes)
                .collect(),
            nulls,
        ),
        OrcType::Double => prim::<Float64Type>(
            fixed::<8>(cs, n)?
                .into_iter()
                .map(f64::from_le_bytes)
                .collect(),
            nulls,
        ),
        OrcType::Timestamp => {
            check_timezone(cs)?;
            let secs = cs.ints("DATA", n, true)?;
            let nanos = cs.ints("SECONDARY", n, false)?;
            timestamp_array(cs, &secs, &nanos, nulls)?
        }
        OrcType::Decimal { precision, scale } => {
            let d = cs.need("DATA")?;
            cs.check_count("DATA", n, d.len())?;
            let scales = cs.ints("SECONDARY", n, true)?;
            let mut at = 0usize;
            let mut vals = Vec::with_capacity(n);
            for (i, &sc) in scales.iter().enumerate() {
                let v = varint_i128(d, &mut at)
                    .map_err(|e| cs.err("DATA", OrcError::malformed("decimal", e)))?;
                let v = rescale(v, sc, *scale as i64).ok_or_else(|| {
                    cs.err(
                        "SECONDARY",
                        OrcError::malformed("decimal", format!("value {i}: scale {sc} overflows")),
                    )
                })?;
                vals.push(v);
            }
            let v = scatter(vals, &nulls);
            Arc::new(
                Decimal128Array::new(ScalarBuffer::from(v), nulls)
                    .with_precision_and_scale(*precision, *scale)?,
            )
        }
        OrcType::String | OrcType::Binary => {
            let (off, bytes) = byte_values(cs, n)?;
            let off = spread_offsets(off, &nulls)?;
            let values = Buffer::from_vec(bytes);
            if cs.column.ty == OrcType::String {
                Arc::new(
                    StringArray::try_new(off, values, nulls)
                        .map_err(|e| cs.err("DATA", OrcError::Arrow(e)))?,
                )
            } else {
                Arc::new(BinaryArray::try_new(off, values, nulls)?)
            }
        }
        OrcType::Unsupported(t) => {
            return Err(OrcError::UnsupportedType {
                column: cs.column.name.clone(),
                ty: t.clone(),
            })
        }
    })
}

/// Timestamps are read with UTC semantics: the writer's wall clock, counted from 2015-01-01
/// 00:00:00, taken as UTC. That is exact for files written in UTC (pyarrow writes "UTC" or
/// "GMT"); a file from another zone would need the zone's rules to move its wall clock, which
/// this reader does not carry.
pub(crate) fn check_timezone(cs: &ColumnStreams<'_>) -> Result<()> {
    match cs.writer_timezone {
        tz if utc_zone(tz) => Ok(()),
        tz => Err(cs.err(
            "DATA",
            OrcError::Unsupported(format!(
                "timestamps written in time zone {tz} (this reader reads UTC/GMT files)"
            )),
        )),
    }
}

/// Whether a writer time zone is UTC (the zones this reader reads timestamps of).
pub(crate) fn utc_zone(tz: &str) -> bool {
    matches!(tz, "" | "UTC" | "GMT" | "Etc/UTC" | "Etc/GMT" | "Z")
}

pub(crate) fn timestamp_array(
    cs: &ColumnStreams<'_>,
    secs: &[i64],
    nanos: &[i64],
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let vals = secs
        .iter()
        .zip(nanos)
        .enumerate()
        .map(|(i, (&s, &ns))| {
            timestamp_ns(s, ns).ok_or_else(|| {
                cs.err(
                    "SECONDARY",
                    OrcError::malformed(
                        "timestamp",
                        format!("value {i}: {s} s, nanoseconds code {ns} out of range"),
                    ),
                )
            })
        })
        .collect::<Result<Vec<i64>>>()?;
    let v = scatter(vals, &nulls);
    Ok(Arc::new(TimestampNanosecondArray::new(
        ScalarBuffer::from(v),
        nulls,
    )))
}
