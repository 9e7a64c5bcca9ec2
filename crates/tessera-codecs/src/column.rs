//! Chunks of a column as raw bytes: integers (little-endian values), bytes, and bits (packed
//! least significant bit first). Utf8 chunks are in [`crate::text`].
//!
//! - [`encode_values`] / [`decode_values`] serve every fixed-size type; [`encode_chunk`] /
//!   [`decode_chunk`] are their forms for types whose value count follows from the raw length
//!   (integers and bytes).
//! - Bytes: plain, huffman or lll; auto keeps the smallest, ties to **lll, huffman, plain**.
//! - Bits: plain (`⌈n / 8⌉` bytes, padding bits zero), wah or plwah; auto keeps the smallest,
//!   ties to **wah, plwah, plain**. A WAH/PLWAH payload's stored bit length must equal the chunk's
//!   value count (`Error::CountMismatch`).
//! - A codec that does not serve the type is `Error::InvalidHeader` (a corrupt directory).
//!
//! - Lane mapping (`int-common.md` §2): u8/u16/u32 zero-extend into lane 32; i8/i16/i32 flip
//!   the type's sign bit, then zero-extend; u64 is lane 64 as is; i64 flips bit 63. The mapping
//!   is order-preserving, so the FOR reference (a minimum) means the same for signed types.
//! - Plain (`container.md` §2): the raw bytes at the logical width; decoding checks the payload
//!   length is exactly `value_count * width` (`Truncated` / `TrailingBytes`).
//! - Auto (`requested = None`): the smallest exact payload size ([`crate::int::encoded_size`];
//!   plain is `n * width`), except that DFOR or RFOR must be at least [`AUTO_MARGIN`] (1/32,
//!   about 3%) smaller than FOR to be chosen over it: FOR decodes fastest of the three (on the
//!   H100 at 250 M values, 87-97% of the copy ceiling against 77-95% for DFOR and 73-98% for
//!   RFOR), so a sliver of size does not buy a slower column. Plain wins whenever it is not
//!   larger than the best candidate. Ties go to the earlier of **for, dfor, rfor**, so the
//!   choice is deterministic.
//! - Decoding narrows lane values back to the logical type; an 8- or 16-bit lane value that does
//!   not fit is corruption (`Error::ValueOutOfRange`).

use crate::bitmap::{self, Flavor};
use crate::int::{self, LaneWord};
use crate::{huffman, lll};
use tessera_format::{CodecId, Error, Lane, LogicalType, Result, MAX_CHUNK_VALUES};

/// Candidates of the automatic choice for integers, in the order [`auto_choice`] takes sizes.
pub const AUTO_ORDER: [CodecId; 4] = [CodecId::For, CodecId::Dfor, CodecId::Rfor, CodecId::Plain];

fn value_count(ty: LogicalType, bytes: usize, what: &str) -> Result<usize> {
    let w = ty.width();
    if bytes % w != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what} of {bytes} bytes is not a whole number of {} values",
            ty.name()
        )));
    }
    let n = bytes / w;
    if n > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "chunk of {n} values exceeds the limit of {MAX_CHUNK_VALUES}"
        )));
    }
    Ok(n)
}

/// Raw little-endian values of a lane-32 type to lane words.
fn to_lane32(ty: LogicalType, raw: &[u8]) -> Vec<u32> {
    match ty {
        LogicalType::U8 => raw.iter().map(|&b| b as u32).collect(),
        LogicalType::I8 => raw.iter().map(|&b| (b ^ 0x80) as u32).collect(),
        LogicalType::U16 => raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32)
            .collect(),
        LogicalType::I16 => raw
            .chunks_exact(2)
            .map(|c| (u16::from_le_bytes([c[0], c[1]]) ^ 0x8000) as u32)
            .collect(),
        LogicalType::I32 => raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ 0x8000_0000)
            .collect(),
        _ => raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    }
}

/// Raw little-endian values of a lane-64 type to lane words.
fn to_lane64(ty: LogicalType, raw: &[u8]) -> Vec<u64> {
    let flip = if ty.signed() { 1u64 << 63 } else { 0 };
    raw.chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ flip)
        .collect()
}

fn out_of_range(ty: LogicalType, index: usize, found: u32) -> Error {
    Error::ValueOutOfRange {
        index: index as u64,
        ty: ty.name(),
        found: found as u64,
    }
}

/// Lane-32 words back to raw little-endian values, checking 8- and 16-bit types fit.
fn from_lane32(ty: LogicalType, lanes: &[u32], out: &mut [u8]) -> Result<()> {
    match ty {
        LogicalType::U8 | LogicalType::I8 => {
            let flip = if ty.signed() { 0x80 } else { 0 };
            for (i, (o, &u)) in out.iter_mut().zip(lanes).enumerate() {
                if u > 0xff {
                    return Err(out_of_range(ty, i, u));
                }
                *o = u as u8 ^ flip;
            }
        }
        LogicalType::U16 | LogicalType::I16 => {
            let flip = if ty.signed() { 0x8000 } else { 0 };
            for (i, (o, &u)) in out.chunks_exact_mut(2).zip(lanes).enumerate() {
                if u > 0xffff {
                    return Err(out_of_range(ty, i, u));
                }
                o.copy_from_slice(&(u as u16 ^ flip).to_le_bytes());
            }
        }
        _ => {
            let flip = if ty.signed() { 0x8000_0000 } else { 0 };
            for (o, &u) in out.chunks_exact_mut(4).zip(lanes) {
                o.copy_from_slice(&(u ^ flip).to_le_bytes());
            }
        }
    }
    Ok(())
}

fn from_lane64(ty: LogicalType, lanes: &[u64], out: &mut [u8]) {
    let flip = if ty.signed() { 1u64 << 63 } else { 0 };
    for (o, &u) in out.chunks_exact_mut(8).zip(lanes) {
        o.copy_from_slice(&(u ^ flip).to_le_bytes());
    }
}

/// How much smaller than FOR (as a fraction of FOR's payload) DFOR or RFOR must be for auto to
/// choose it: 1/32.
pub const AUTO_MARGIN: (usize, usize) = (1, 32);

/// The automatic choice among `sizes` (payload bytes of for, dfor, rfor, plain in
/// [`AUTO_ORDER`] order): see the module notes.
pub fn auto_choice(sizes: [usize; 4]) -> CodecId {
    let [for_size, dfor_size, rfor_size, plain_size] = sizes;
    // DFOR or RFOR replaces FOR only when size <= for_size * (1 - 1/32), in exact integers.
    let beats_for = |s: usize| {
        s.saturating_mul(AUTO_MARGIN.1) <= for_size.saturating_mul(AUTO_MARGIN.1 - AUTO_MARGIN.0)
    };
    let mut best = (CodecId::For, for_size);
    for (codec, size) in [(CodecId::Dfor, dfor_size), (CodecId::Rfor, rfor_size)] {
        if size < best.1 && beats_for(size) {
            best = (codec, size);
        }
    }
    if plain_size <= best.1 {
        best = (CodecId::Plain, plain_size);
    }
    best.0
}

/// The automatic choice for `lanes` whose plain form takes `plain_bytes`.
fn choose<W: LaneWord>(lanes: &[W], plain_bytes: usize) -> Result<CodecId> {
    let mut sizes = [0usize; 4];
    for (size, codec) in sizes.iter_mut().zip(AUTO_ORDER) {
        *size = match codec {
            CodecId::Plain => plain_bytes,
            c => int::encoded_size(c, lanes)?,
        };
    }
    Ok(auto_choice(sizes))
}

fn encode_lanes<W: LaneWord>(
    lanes: &[W],
    requested: Option<CodecId>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    let codec = match requested {
        Some(c) => c,
        None => choose(lanes, raw.len())?,
    };
    match codec {
        CodecId::Plain => out.extend_from_slice(raw),
        c => int::encode(c, lanes, out)?,
    }
    Ok(codec)
}

/// Candidate order of the automatic choice for bytes chunks.
pub const AUTO_ORDER_BYTES: [CodecId; 3] = [CodecId::Lll, CodecId::Huffman, CodecId::Plain];
/// Candidate order of the automatic choice for bits chunks.
pub const AUTO_ORDER_BITS: [CodecId; 3] = [CodecId::Wah, CodecId::Plwah, CodecId::Plain];

fn unsupported(codec: CodecId, ty: LogicalType) -> Error {
    Error::InvalidHeader {
        field: "chunk codec",
        offset: 0,
        expected: format!("a codec of {} columns", ty.name()),
        found: codec.id() as u64,
    }
}

fn check_request(ty: LogicalType, requested: Option<CodecId>) -> Result<()> {
    match requested {
        Some(c) if !c.supports(ty) => Err(Error::InvalidArgument(format!(
            "codec {} does not apply to {} columns",
            c.name(),
            ty.name()
        ))),
        _ => Ok(()),
    }
}

/// Encodes `raw` with one codec of `order` (or the smallest of them, ties to the earlier, when
/// `requested` is `None`), through `enc`, which appends a payload for a non-plain codec.
fn encode_smallest(
    order: &[CodecId],
    requested: Option<CodecId>,
    raw: &[u8],
    out: &mut Vec<u8>,
    enc: impl Fn(CodecId, &mut Vec<u8>) -> Result<()>,
) -> Result<CodecId> {
    let one = |c: CodecId, out: &mut Vec<u8>| match c {
        CodecId::Plain => {
            out.extend_from_slice(raw);
            Ok(())
        }
        c => enc(c, out),
    };
    if let Some(c) = requested {
        one(c, out)?;
        return Ok(c);
    }
    let mut best: Option<(CodecId, Vec<u8>)> = None;
    for &c in order {
        let mut buf = Vec::new();
        one(c, &mut buf)?;
        if best.as_ref().is_none_or(|(_, b)| buf.len() < b.len()) {
            best = Some((c, buf));
        }
    }
    let (codec, bytes) = best.ok_or_else(|| Error::InvalidArgument("no codec to try".into()))?;
    out.extend_from_slice(&bytes);
    Ok(codec)
}

/// Encoder settings that a codec's payload records, so that no reader needs them: the choices a
/// caller may make beyond the codec itself. `Default` is what [`encode_values`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecOptions {
    /// LLL segment size (`docs/format/lll.md` §2: 512, 1024, 2048 or 4096): smaller segments
    /// reach the bytes just before more of their own (the best ratio on images and text),
    /// larger ones decode faster on a GPU.
    pub lll_segment_bytes: usize,
    /// What LLL's parse minimizes (`docs/format/lll.md` §9): the smallest payload, or a few
    /// percent more bytes for fewer words to decode (no 2-byte copies or runs).
    pub lll_parse: lll::Parse,
}

impl Default for CodecOptions {
    fn default() -> Self {
        CodecOptions {
            lll_segment_bytes: lll::DEFAULT_SEGMENT_BYTES,
            lll_parse: lll::Parse::Smallest,
        }
    }
}

/// Encodes one chunk of `value_count` values of any fixed-size type (not utf8: see
/// [`crate::text`]) whose raw form is `raw` (`ty.raw_len(value_count)` bytes; for bits, padding
/// bits past `value_count` must be zero). `requested = None` means auto. Appends the payload to
/// `out`; returns the codec used.
pub fn encode_values(
    ty: LogicalType,
    requested: Option<CodecId>,
    raw: &[u8],
    value_count: u64,
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    encode_values_with(
        ty,
        requested,
        raw,
        value_count,
        out,
        CodecOptions::default(),
    )
}

/// [`encode_values`] with encoder settings ([`CodecOptions`]); an invalid setting is an
/// `InvalidArgument` error when the codec it belongs to is tried.
pub fn encode_values_with(
    ty: LogicalType,
    requested: Option<CodecId>,
    raw: &[u8],
    value_count: u64,
    out: &mut Vec<u8>,
    opts: CodecOptions,
) -> Result<CodecId> {
    check_request(ty, requested)?;
    if value_count > MAX_CHUNK_VALUES as u64 {
        return Err(Error::InvalidArgument(format!(
            "chunk of {value_count} values exceeds the limit of {MAX_CHUNK_VALUES}"
        )));
    }
    let Some(raw_len) = ty.raw_len(value_count) else {
        return Err(Error::InvalidArgument(
            "utf8 chunks are encoded with tessera_codecs::text".into(),
        ));
    };
    if raw.len() as u64 != raw_len {
        return Err(Error::InvalidArgument(format!(
            "{} raw bytes for {value_count} {} values (expected {raw_len})",
            raw.len(),
            ty.name()
        )));
    }
    match ty {
        LogicalType::Bytes => {
            encode_smallest(&AUTO_ORDER_BYTES, requested, raw, out, |c, o| match c {
                CodecId::Huffman => huffman::encode(raw, o),
                _ => {
                    let lll_opts = lll::EncodeOptions {
                        segment_bytes: opts.lll_segment_bytes,
                        parse: opts.lll_parse,
                    };
                    lll::encode_with(raw, o, &lll_opts).map(|_| ())
                }
            })
        }
        LogicalType::Bits => {
            if value_count % 8 != 0 && raw[raw.len() - 1] >> (value_count % 8) != 0 {
                return Err(Error::InvalidArgument(format!(
                    "bits past the bitmap's {value_count} bits are set in its last byte"
                )));
            }
            encode_smallest(&AUTO_ORDER_BITS, requested, raw, out, |c, o| {
                let flavor = if c == CodecId::Wah {
                    Flavor::Wah
                } else {
                    Flavor::Plwah
                };
                bitmap::Bitmap::compress(flavor, raw, value_count)?.write_payload(o);
                Ok(())
            })
        }
        _ => encode_chunk(ty, requested, raw, out),
    }
}

/// Decodes one chunk of `value_count` values of any fixed-size type into `out`
/// (`ty.raw_len(value_count)` bytes) with the fast decoders.
pub fn decode_values(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    value_count: u64,
    out: &mut [u8],
) -> Result<()> {
    decode_values_impl(ty, codec, payload, value_count, out, false)
}

/// Same as [`decode_values`] with the reference decoders.
pub fn decode_values_reference(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    value_count: u64,
    out: &mut [u8],
) -> Result<()> {
    decode_values_impl(ty, codec, payload, value_count, out, true)
}

fn decode_values_impl(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    value_count: u64,
    out: &mut [u8],
    reference: bool,
) -> Result<()> {
    if !codec.supports(ty) {
        return Err(unsupported(codec, ty));
    }
    if ty.raw_len(value_count) != Some(out.len() as u64) {
        return Err(Error::InvalidArgument(format!(
            "output of {} bytes for {value_count} {} values",
            out.len(),
            ty.name()
        )));
    }
    match (ty, codec) {
        (LogicalType::Bytes | LogicalType::Bits, CodecId::Plain) => {
            plain(payload, out)?;
            let tail = value_count % 8;
            if ty == LogicalType::Bits && tail != 0 && out[out.len() - 1] >> tail != 0 {
                return Err(Error::InvalidHeader {
                    field: "plain bits padding",
                    offset: (out.len() - 1) as u64,
                    expected: "zero bits past the bitmap's end".into(),
                    found: out[out.len() - 1] as u64,
                });
            }
            Ok(())
        }
        (_, CodecId::Huffman) if reference => huffman::decode_reference(payload, out),
        (_, CodecId::Huffman) => huffman::decode(payload, out),
        (_, CodecId::Lll) if reference => lll::decode_reference(payload, out),
        (_, CodecId::Lll) => lll::decode(payload, out),
        (_, CodecId::Wah | CodecId::Plwah) => {
            let flavor = if codec == CodecId::Wah {
                Flavor::Wah
            } else {
                Flavor::Plwah
            };
            let bits = bitmap::payload_bit_len(flavor, payload)?;
            if bits != value_count {
                return Err(Error::CountMismatch {
                    what: "bitmap bit length",
                    expected: value_count,
                    found: bits,
                });
            }
            bitmap::Bitmap::from_payload(flavor, payload)?.decompress(out)
        }
        _ => decode_impl(ty, codec, payload, out, reference),
    }
}

fn plain(payload: &[u8], out: &mut [u8]) -> Result<()> {
    if payload.len() < out.len() {
        return Err(Error::truncated(
            "plain payload",
            0,
            out.len(),
            payload.len(),
        ));
    }
    if payload.len() > out.len() {
        return Err(Error::TrailingBytes {
            what: "plain payload",
            offset: out.len() as u64,
            count: (payload.len() - out.len()) as u64,
        });
    }
    out.copy_from_slice(payload);
    Ok(())
}

/// Encodes one chunk of an integer or bytes column: `raw` holds `raw.len() / ty.width()` values.
/// `requested = None` means auto: for integers the smallest of plain, for, dfor, rfor. Appends
/// the payload to `out`; returns the codec used.
pub fn encode_chunk(
    ty: LogicalType,
    requested: Option<CodecId>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    if !ty.is_integer() {
        if ty == LogicalType::Bytes {
            return encode_values(ty, requested, raw, raw.len() as u64, out);
        }
        return Err(Error::InvalidArgument(format!(
            "{} chunks are encoded with encode_values or tessera_codecs::text",
            ty.name()
        )));
    }
    check_request(ty, requested)?;
    value_count(ty, raw.len(), "raw chunk")?;
    if requested == Some(CodecId::Plain) {
        out.extend_from_slice(raw);
        return Ok(CodecId::Plain);
    }
    match ty.lane() {
        Lane::L32 => encode_lanes(&to_lane32(ty, raw), requested, raw, out),
        Lane::L64 => encode_lanes(&to_lane64(ty, raw), requested, raw, out),
    }
}

fn decode_impl(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    out: &mut [u8],
    reference: bool,
) -> Result<()> {
    if !ty.is_integer() {
        if ty == LogicalType::Bytes {
            return decode_values_impl(ty, codec, payload, out.len() as u64, out, reference);
        }
        return Err(Error::InvalidArgument(format!(
            "{} chunks are decoded with decode_values or tessera_codecs::text",
            ty.name()
        )));
    }
    if !codec.supports(ty) {
        return Err(unsupported(codec, ty));
    }
    let n = value_count(ty, out.len(), "output buffer")?;
    if codec == CodecId::Plain {
        return plain(payload, out);
    }
    fn run<W: LaneWord>(
        codec: CodecId,
        payload: &[u8],
        lanes: &mut [W],
        reference: bool,
    ) -> Result<()> {
        if reference {
            int::decode_reference(codec, payload, lanes)
        } else {
            int::decode(codec, payload, lanes)
        }
    }
    match ty.lane() {
        Lane::L32 => {
            let mut lanes = vec![0u32; n];
            run(codec, payload, &mut lanes, reference)?;
            from_lane32(ty, &lanes, out)
        }
        Lane::L64 => {
            let mut lanes = vec![0u64; n];
            run(codec, payload, &mut lanes, reference)?;
            from_lane64(ty, &lanes, out);
            Ok(())
        }
    }
}

/// Decodes one chunk of an integer or bytes column into `out` (`value_count * ty.width()`
/// bytes) with the fast decoder.
pub fn decode_chunk(ty: LogicalType, codec: CodecId, payload: &[u8], out: &mut [u8]) -> Result<()> {
    decode_impl(ty, codec, payload, out, false)
}

/// Same as [`decode_chunk`] with the reference decoder.
pub fn decode_chunk_reference(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    out: &mut [u8],
) -> Result<()> {
    decode_impl(ty, codec, payload, out, true)
}
