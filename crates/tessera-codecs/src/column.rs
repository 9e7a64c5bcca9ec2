//! Chunks of a column as raw bytes: integers (little-endian values), bytes, and bits (packed
//! least significant bit first). Utf8 chunks are in [`crate::text`].
//!
//! - [`encode_values`] / [`decode_values`] serve every fixed-size type; [`encode_chunk`] /
//!   [`decode_chunk`] are their forms for types whose value count follows from the raw length
//!   (integers and bytes).
//! - Bytes: plain, huffman or lll; auto keeps the smallest, ties to **lll, huffman, plain**;
//!   huffman only on chunks of at least [`crate::huffman::AUTO_MIN_BYTES`] bytes, lll on
//!   chunks under [`crate::lll::AUTO_MIN_BYTES`] only when it halves them.
//! - Bits: plain (`⌈n / 8⌉` bytes, padding bits zero), wah or plwah; auto keeps the smallest,
//!   ties to **wah, plwah, plain**. A WAH/PLWAH payload's stored bit length must equal the chunk's
//!   value count (`Error::CountMismatch`).
//! - A codec that does not serve the type is `Error::InvalidHeader` (a corrupt directory).
//! - Every codec is reached through the registry of [`crate::codec`], which holds what is
//!   specific to each (its encoder, decoders and place in `auto`); this module checks chunks
//!   and runs the automatic choice.
//!
//! - Lane mapping (`int-common.md` §2, [`crate::int`]): u8/u16/u32 zero-extend into lane 32;
//!   i8/i16/i32 flip the type's sign bit, then zero-extend; u64 is lane 64 as is; i64 flips
//!   bit 63. The mapping is order-preserving, so the FOR reference (a minimum) means the same
//!   for signed types.
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

use crate::codec::{self, Choice, Chunk, Family};
use tessera_format::{CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

pub use crate::codec::{CodecOptions, AUTO_MARGIN};

/// Candidates of the automatic choice for integers, in the order [`auto_choice`] takes sizes
/// (the registry's order for [`Family::Integers`]).
pub const AUTO_ORDER: [CodecId; 4] = [CodecId::For, CodecId::Dfor, CodecId::Rfor, CodecId::Plain];
/// Candidate order of the automatic choice for bytes chunks.
pub const AUTO_ORDER_BYTES: [CodecId; 3] = [CodecId::Lll, CodecId::Huffman, CodecId::Plain];
/// Candidate order of the automatic choice for bits chunks.
pub const AUTO_ORDER_BITS: [CodecId; 3] = [CodecId::Wah, CodecId::Plwah, CodecId::Plain];

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

/// The automatic choice among `sizes` (payload bytes of for, dfor, rfor, plain in
/// [`AUTO_ORDER`] order): see the module notes.
pub fn auto_choice(sizes: [usize; 4]) -> CodecId {
    // Plain's payload is the chunk's raw bytes.
    let mut choice = Choice::new(sizes[3]);
    for (&(codec, rule), size) in codec::auto_order(Family::Integers).iter().zip(sizes) {
        choice.offer(codec.id(), rule, size);
    }
    // The integers always have candidates (the registry tests check the order above).
    choice.chosen().unwrap_or(CodecId::Plain)
}

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

/// Encodes `chunk` with `requested`, or with the automatic choice when it is `None`.
fn encode(
    chunk: &Chunk<'_>,
    requested: Option<CodecId>,
    out: &mut Vec<u8>,
    opts: &CodecOptions,
) -> Result<CodecId> {
    match requested {
        Some(c) => {
            codec::lookup(c)?.encode(chunk, opts, out)?;
            Ok(c)
        }
        None => codec::encode_auto(chunk, opts, out),
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
    let chunk = Chunk::new(ty, raw, value_count)?;
    encode(&chunk, requested, out, &opts)
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
    let c = codec::lookup(codec)?;
    if !c.serves(ty) {
        return Err(unsupported(codec, ty));
    }
    if ty.raw_len(value_count) != Some(out.len() as u64) {
        return Err(Error::InvalidArgument(format!(
            "output of {} bytes for {value_count} {} values",
            out.len(),
            ty.name()
        )));
    }
    if ty.is_integer() {
        value_count_of(ty, out)?;
    }
    if reference {
        c.decode_reference(ty, payload, value_count, out)
    } else {
        c.decode(ty, payload, value_count, out)
    }
}

fn value_count_of(ty: LogicalType, out: &[u8]) -> Result<usize> {
    value_count(ty, out.len(), "output buffer")
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
    let n = value_count(ty, raw.len(), "raw chunk")?;
    let chunk = Chunk::new(ty, raw, n as u64)?;
    encode(&chunk, requested, out, &CodecOptions::default())
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
    let n = value_count_of(ty, out)?;
    decode_values_impl(ty, codec, payload, n as u64, out, reference)
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
