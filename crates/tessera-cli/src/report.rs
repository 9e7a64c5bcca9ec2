//! Text output shared by `inspect` and `demo`: how a column's codecs are summarised
//! (`auto(dfor×3, rfor×1)`) and its sizes; the aligned tables are the library's
//! (`tessera::report::table`, shared with `tessera-bench`).

use tessera_format::container::{ColumnMeta, Container};
use tessera_format::LogicalType;

pub use tessera::report::table;

/// Bytes of column `ci` in the raw form `decompress` writes: the values, the packed bits, or for
/// utf8 the line form (each chunk's `data_size`, read from its header without decoding, plus a
/// line feed per string but an unterminated last). Unreadable headers count as 0: `inspect`
/// reports sizes, decoding reports damage.
pub fn raw_bytes(c: &Container, ci: usize) -> u64 {
    let col = &c.columns()[ci];
    if col.logical_type != LogicalType::Utf8 {
        return col.uncompressed_bytes();
    }
    let text: u64 = (0..col.chunks.len())
        .filter_map(|k| c.chunk_payload_unverified(ci, k).ok())
        .filter_map(|p| p.get(4..8))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64)
        .sum();
    let unterminated = col
        .params
        .first()
        .is_some_and(|f| f & tessera::UNTERMINATED != 0)
        && col.value_count > 0;
    text + col.value_count - u64::from(unterminated)
}

/// The requested codec, followed by the per-chunk mix when it is not simply that codec:
/// `dfor`, `auto(dfor×3, rfor×1)`, `auto` (no chunks).
pub fn codec_summary(col: &ColumnMeta) -> String {
    let mix = col.codec_mix();
    let requested = col.requested_codec_name();
    let only_requested = col
        .requested_codec
        .is_some_and(|r| mix.keys().all(|&c| c == r));
    if mix.is_empty() || only_requested {
        return requested.to_owned();
    }
    let parts: Vec<String> = mix
        .iter()
        .map(|(c, n)| format!("{}×{n}", c.name()))
        .collect();
    format!("{requested}({})", parts.join(", "))
}

/// `s` with its control characters escaped (`\n`, `\t`, `\u{1b}`), so that names and paths
/// from files or arguments cannot break a line or drive the terminal when printed.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_owned();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// How many values of `ty` `n` is, in words: `1000 u32 values`, `3000 bytes`, `8 bits`,
/// `2 strings`.
pub fn count_of(ty: LogicalType, n: u64) -> String {
    let plural = |one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match ty {
        LogicalType::Bytes => plural("byte", "bytes"),
        LogicalType::Bits => plural("bit", "bits"),
        LogicalType::Utf8 => plural("string", "strings"),
        _ => format!("{n} {} value{}", ty.name(), if n == 1 { "" } else { "s" }),
    }
}

/// Bits per value of a column (0 for an empty one).
pub fn bits_per_value(compressed_bytes: u64, values: u64) -> f64 {
    if values == 0 {
        0.0
    } else {
        compressed_bytes as f64 * 8.0 / values as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_format::container::ChunkMeta;
    use tessera_format::{CodecId, LogicalType};

    fn col(requested: Option<CodecId>, codecs: &[CodecId]) -> ColumnMeta {
        ColumnMeta {
            name: "c".into(),
            logical_type: LogicalType::U32,
            requested_codec: requested,
            params: vec![],
            value_count: codecs.len() as u64,
            chunks: codecs
                .iter()
                .map(|&codec| ChunkMeta {
                    offset: 16,
                    compressed_size: 1,
                    value_count: 1,
                    codec,
                    checksum: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn summaries() {
        use CodecId::*;
        assert_eq!(
            codec_summary(&col(None, &[Dfor, Rfor, Dfor, Dfor])),
            "auto(dfor×3, rfor×1)"
        );
        assert_eq!(codec_summary(&col(None, &[])), "auto");
        assert_eq!(codec_summary(&col(Some(For), &[For, For])), "for");
        assert_eq!(
            codec_summary(&col(Some(For), &[For, Plain])),
            "for(plain×1, for×1)"
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape("plain ünïcode"), "plain ünïcode");
        assert_eq!(escape("a\nb\tc\u{1b}[31m"), "a\\nb\\tc\\u{1b}[31m");
    }

    #[test]
    fn counts_read_naturally() {
        assert_eq!(count_of(LogicalType::U32, 1000), "1000 u32 values");
        assert_eq!(count_of(LogicalType::I8, 1), "1 i8 value");
        assert_eq!(count_of(LogicalType::Bytes, 3000), "3000 bytes");
        assert_eq!(count_of(LogicalType::Bits, 1), "1 bit");
        assert_eq!(count_of(LogicalType::Utf8, 2), "2 strings");
    }
}
