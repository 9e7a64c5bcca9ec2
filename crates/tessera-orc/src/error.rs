//! The reader's errors: every way a file can be refused, named by where it happened.

use arrow_schema::ArrowError;

/// What went wrong reading an ORC file.
#[derive(Debug, thiserror::Error)]
pub enum OrcError {
    /// The bytes are not an ORC file (no `ORC` magic, no postscript).
    #[error("not an ORC file: {0}")]
    NotOrc(String),

    /// A structure announced by the file lies (partly) outside it.
    #[error("truncated or lying ORC file: {what} needs bytes {start}..{end}, {limit} available")]
    OutOfBounds {
        what: String,
        start: u64,
        end: u64,
        limit: u64,
    },

    /// A metadata message or a field of one is malformed.
    #[error("malformed ORC {what}: {detail}")]
    Malformed { what: String, detail: String },

    /// A column's type is one this reader does not decode.
    #[error("column `{column}`: ORC type {ty} is not supported by this reader")]
    UnsupportedType { column: String, ty: String },

    /// A file-level feature this reader does not decode (a compression, a version).
    #[error("unsupported ORC feature: {0}")]
    Unsupported(String),

    /// No top-level column has this name.
    #[error("no column named `{name}` (the file has: {have})")]
    NoColumn { name: String, have: String },

    /// A stream of a column failed to decode.
    #[error("stripe {stripe}, column `{column}`, {stream} stream: {source}")]
    Stream {
        stripe: usize,
        column: String,
        stream: &'static str,
        #[source]
        source: Box<OrcError>,
    },

    /// A decoder of `tessera_codecs` (RLE, Deflate) refused a stream.
    #[error(transparent)]
    Codec(#[from] tessera_format::Error),

    /// Building the Arrow arrays failed (e.g. a string that is not UTF-8).
    #[error(transparent)]
    Arrow(#[from] ArrowError),

    /// Reading the file failed.
    #[error("cannot read the ORC file: {0}")]
    Io(#[from] std::io::Error),
}

impl OrcError {
    pub(crate) fn malformed(what: impl Into<String>, detail: impl Into<String>) -> OrcError {
        OrcError::Malformed {
            what: what.into(),
            detail: detail.into(),
        }
    }
}

/// The reader's result.
pub type Result<T, E = OrcError> = std::result::Result<T, E>;
