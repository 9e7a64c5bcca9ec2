//! Utf8 chunks (`docs/format/utf8.md`): a chunk of strings is stored as the strings' end
//! offsets, DFOR-encoded, followed by their concatenated bytes under the chunk's codec (plain,
//! huffman or lll).
//!
//! Invariants the decoder checks before trusting anything: the 8-byte chunk header fits; the
//! offsets payload lies inside the chunk; `data_size` is at most [`MAX_TEXT_BYTES`] (it sizes an
//! allocation); the decoded end offsets never decrease and the last equals `data_size`; the
//! bytes payload decodes to exactly `data_size` bytes. Strings are not checked to be UTF-8 on
//! decode (the encoder checks); they come back as bytes.

use tessera_format::{CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

use crate::column::{self, CodecOptions};
use crate::int;

/// Bytes of the chunk header: `offsets_size` and `data_size`.
pub const HEADER_BYTES: usize = 8;
/// Most text bytes one chunk may hold (bounds the decoder's allocation).
pub const MAX_TEXT_BYTES: u64 = 1 << 30;

/// A decoded chunk: `ends[i]` is the end of string `i` in `data` (string 0 starts at 0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Strings {
    pub ends: Vec<u32>,
    pub data: Vec<u8>,
}

impl Strings {
    /// Builds the chunk form of `values`.
    pub fn from_values<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Result<Strings> {
        let mut s = Strings::default();
        for v in values {
            s.data.extend_from_slice(v);
            let end = u32::try_from(s.data.len())
                .ok()
                .filter(|&e| e as u64 <= MAX_TEXT_BYTES)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "a utf8 chunk holds at most {MAX_TEXT_BYTES} bytes of text"
                    ))
                })?;
            s.ends.push(end);
        }
        Ok(s)
    }

    /// Strings in the chunk.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the chunk holds no string.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `i`.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.data.get(start..end)
    }

    /// Every string in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// Encodes a chunk of strings; `requested` is plain, huffman or lll for the text bytes (`None`:
/// auto: the smallest, as for a bytes column). Every string must be UTF-8. Appends the payload to `out` and returns the
/// bytes codec used (the chunk's codec in the directory).
pub fn encode_utf8_chunk(
    strings: &Strings,
    requested: Option<CodecId>,
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    encode_utf8_chunk_with(strings, requested, out, CodecOptions::default())
}

/// [`encode_utf8_chunk`] with encoder settings for the text bytes' codec ([`CodecOptions`]).
pub fn encode_utf8_chunk_with(
    strings: &Strings,
    requested: Option<CodecId>,
    out: &mut Vec<u8>,
    opts: CodecOptions,
) -> Result<CodecId> {
    if let Some(c) = requested.filter(|c| !c.supports(LogicalType::Utf8)) {
        return Err(Error::InvalidArgument(format!(
            "codec {} does not apply to utf8 columns",
            c.name()
        )));
    }
    if strings.len() > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "chunk of {} strings exceeds the limit of {MAX_CHUNK_VALUES}",
            strings.len()
        )));
    }
    check_ends(&strings.ends, strings.data.len() as u64)
        .map_err(|e| Error::InvalidArgument(format!("strings: {e}")))?;
    for (i, v) in strings.iter().enumerate() {
        if let Err(e) = std::str::from_utf8(v) {
            return Err(Error::InvalidArgument(format!(
                "string {i} is not UTF-8 (invalid byte at {})",
                e.valid_up_to()
            )));
        }
    }
    let mut offsets = Vec::new();
    int::encode(CodecId::Dfor, &strings.ends, &mut offsets)?;
    let mut data = Vec::new();
    let codec = column::encode_values_with(
        LogicalType::Bytes,
        requested,
        &strings.data,
        strings.data.len() as u64,
        &mut data,
        opts,
    )?;
    out.extend_from_slice(&(offsets.len() as u32).to_le_bytes());
    out.extend_from_slice(&(strings.data.len() as u32).to_le_bytes());
    out.extend_from_slice(&offsets);
    out.extend_from_slice(&data);
    Ok(codec)
}

/// Decodes a utf8 chunk of `value_count` strings encoded with `codec` (fast decoders).
pub fn decode_utf8_chunk(codec: CodecId, payload: &[u8], value_count: u32) -> Result<Strings> {
    decode_impl(codec, payload, value_count, false)
}

/// Same as [`decode_utf8_chunk`] with the reference decoders.
pub fn decode_utf8_chunk_reference(
    codec: CodecId,
    payload: &[u8],
    value_count: u32,
) -> Result<Strings> {
    decode_impl(codec, payload, value_count, true)
}

fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

fn decode_impl(
    codec: CodecId,
    payload: &[u8],
    value_count: u32,
    reference: bool,
) -> Result<Strings> {
    if !codec.supports(LogicalType::Utf8) {
        return Err(Error::InvalidHeader {
            field: "chunk codec",
            offset: 0,
            expected: "a codec of utf8 columns".into(),
            found: codec.id() as u64,
        });
    }
    if value_count > MAX_CHUNK_VALUES {
        return Err(Error::InvalidArgument(format!(
            "chunk of {value_count} strings exceeds the limit of {MAX_CHUNK_VALUES}"
        )));
    }
    if payload.len() < HEADER_BYTES {
        return Err(Error::truncated(
            "utf8 chunk header",
            0,
            HEADER_BYTES,
            payload.len(),
        ));
    }
    let offsets_size = u32_at(payload, 0) as usize;
    let data_size = u32_at(payload, 4) as u64;
    if data_size > MAX_TEXT_BYTES {
        return Err(Error::InvalidHeader {
            field: "utf8 data_size",
            offset: 4,
            expected: format!("<= {MAX_TEXT_BYTES}"),
            found: data_size,
        });
    }
    let rest = &payload[HEADER_BYTES..];
    if offsets_size > rest.len() {
        return Err(Error::truncated(
            "utf8 offsets payload",
            HEADER_BYTES,
            offsets_size,
            rest.len(),
        ));
    }
    let (offsets, data_payload) = rest.split_at(offsets_size);
    let mut ends = vec![0u32; value_count as usize];
    if reference {
        int::decode_reference(CodecId::Dfor, offsets, &mut ends)?;
    } else {
        int::decode(CodecId::Dfor, offsets, &mut ends)?;
    }
    check_ends(&ends, data_size)?;
    let mut data = vec![0u8; data_size as usize];
    let decode = if reference {
        column::decode_values_reference
    } else {
        column::decode_values
    };
    decode(
        LogicalType::Bytes,
        codec,
        data_payload,
        data_size,
        &mut data,
    )?;
    Ok(Strings { ends, data })
}

/// End offsets never decrease and the last one is `data_size` (0 strings: `data_size` is 0).
fn check_ends(ends: &[u32], data_size: u64) -> Result<()> {
    let mut prev = 0u32;
    for (i, &e) in ends.iter().enumerate() {
        if e < prev {
            return Err(Error::InvalidHeader {
                field: "utf8 end offset",
                offset: i as u64,
                expected: format!(">= {prev} (offsets never decrease)"),
                found: e as u64,
            });
        }
        prev = e;
    }
    if prev as u64 != data_size {
        return Err(Error::CountMismatch {
            what: "utf8 text bytes (last end offset against data_size)",
            expected: data_size,
            found: prev as u64,
        });
    }
    Ok(())
}
