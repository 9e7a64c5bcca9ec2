//! The error type shared by every tessera crate.
//!
//! Decoders treat their input as hostile: each check that fails returns one of these variants,
//! carrying the offending offset and the expected and found values, so a user (or a fuzzer) can
//! see exactly which byte was wrong. GPU kernels report per-tile status codes that the host maps
//! onto the same variants.

/// Result alias used across tessera.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading, writing, encoding or decoding tessera data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ends before a structure it announces.
    #[error("truncated {what} at byte {offset}: needs {needed} bytes, {available} available")]
    Truncated {
        what: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },

    /// Magic bytes do not match.
    #[error("bad magic at byte {offset}: expected {expected:02x?}, found {found:02x?}")]
    BadMagic {
        offset: u64,
        expected: Vec<u8>,
        found: Vec<u8>,
    },

    /// The file's format version is not one this build reads.
    #[error("unsupported {what} version {found} (this build reads {supported})")]
    UnsupportedVersion {
        what: &'static str,
        found: u32,
        supported: u32,
    },

    /// A header field holds a value the format does not allow.
    #[error("invalid {field} at byte {offset}: expected {expected}, found {found}")]
    InvalidHeader {
        field: &'static str,
        offset: u64,
        expected: String,
        found: u64,
    },

    /// A stored checksum does not match the bytes it covers.
    #[error("checksum mismatch in {what}: stored {expected:#018x}, computed {found:#018x}")]
    ChecksumMismatch {
        what: String,
        expected: u64,
        found: u64,
    },

    /// A payload's byte length is not a whole number of 32-bit words.
    #[error("payload length {len} is not a multiple of 4")]
    Misaligned { len: u64 },

    /// A `block_starts` entry points outside the data area or goes backwards.
    #[error("block_starts[{block}] = {found} is out of range (allowed {min}..={max})")]
    BlockStartOutOfRange {
        block: u64,
        found: u64,
        min: u64,
        max: u64,
    },

    /// A miniblock's bit width exceeds what its lane allows.
    #[error("bit_width {found} of block {block} miniblock {miniblock} exceeds {max}")]
    BitWidthTooLarge {
        block: u64,
        miniblock: u32,
        found: u32,
        max: u32,
    },

    /// Counts that must agree do not.
    #[error("{what}: expected {expected}, found {found}")]
    CountMismatch {
        what: &'static str,
        expected: u64,
        found: u64,
    },

    /// A decoded value does not fit the column's logical type.
    #[error("value {found:#x} at index {index} does not fit {ty}")]
    ValueOutOfRange {
        index: u64,
        ty: &'static str,
        found: u64,
    },

    /// Bytes remain after the structure that should end the input.
    #[error("{count} trailing bytes after {what} at byte {offset}")]
    TrailingBytes {
        what: &'static str,
        offset: u64,
        count: u64,
    },

    /// A Huffman bit stream holds a bit pattern that is no code of its code table
    /// (`docs/format/huffman.md` §6).
    #[error("no Huffman code at bit {bit_offset} of block {block}")]
    InvalidCode { block: u64, bit_offset: u64 },

    /// Decoding a Huffman block's symbols ended at a different bit than its `block_info` says
    /// (`docs/format/huffman.md` §6).
    #[error("block {block} ends at bit {found}, its block_info says bit {expected}")]
    BlockEndMismatch {
        block: u64,
        expected: u64,
        found: u64,
    },

    /// A WAH or PLWAH fill_word whose counter is 0 (`docs/format/wah.md` §3, `plwah.md` §3).
    #[error("fill_word {word} at byte {offset} has counter 0")]
    FillCounterZero { word: u64, offset: u64 },

    /// A bitmap payload sets a bit at or past its stored bit length (the padding of the last
    /// group must be 0: `docs/format/wah.md` §2).
    #[error("bit {bit} is set, past the bitmap length {bit_len}")]
    SetBitPastEnd { bit_len: u64, bit: u64 },

    /// An id that this build does not know (codec, logical type, flag bits).
    #[error("unknown {what} {found}")]
    Unknown { what: &'static str, found: u64 },

    /// The caller asked for something invalid (not a data problem).
    /// A chunk's error with the column and chunk it concerns (decoders do not know them).
    #[error("column '{column}' chunk {chunk} ({codec}): {source}")]
    InChunk {
        column: String,
        chunk: u64,
        codec: &'static str,
        #[source]
        source: Box<Error>,
    },

    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The GPU path is unavailable or failed (no driver, no device, NVRTC, launch errors).
    #[error("GPU: {0}")]
    Gpu(String),

    /// An operating-system I/O error, with the path or operation it concerned.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Shorthand for [`Error::Truncated`] from `usize` quantities.
    /// Wraps a decoder's error with its column and chunk, unless it already says where (a
    /// checksum mismatch), concerns no chunk (I/O, GPU failures) or is already wrapped.
    pub fn in_chunk(self, column: &str, chunk: usize, codec: &'static str) -> Self {
        match self {
            Error::ChecksumMismatch { .. }
            | Error::Io { .. }
            | Error::Gpu(_)
            | Error::InChunk { .. } => self,
            other => Error::InChunk {
                column: column.to_owned(),
                chunk: chunk as u64,
                codec,
                source: Box::new(other),
            },
        }
    }

    pub fn truncated(what: &'static str, offset: usize, needed: usize, available: usize) -> Self {
        Error::Truncated {
            what,
            offset: offset as u64,
            needed: needed as u64,
            available: available as u64,
        }
    }
}
