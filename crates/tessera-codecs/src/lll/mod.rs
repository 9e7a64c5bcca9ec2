//! LLL byte compression (`docs/format/lll.md`, after Funasaka, Nakano and Ito, *Light Loss-Less
//! data compression*, the paper).
//!
//! Input is cut into **strips** of 8 **segments** of 4096 bytes; every strip is encoded and
//! decoded on its own. The first segment of a strip is halved into subsegments of 512, 512, 1024
//! and 2048 bytes: the first is coded without a dictionary (SC and RL words), each later one uses
//! every byte before it in the strip as its dictionary; segment `k >= 1` uses segment `k - 1`
//! (§3). A strip stores per-segment word counts, one identifier bit per word (1 = a 2-byte word)
//! and the word array (§4), so a GPU finds every word's byte offset by a prefix sum of the bits.
//!
//! A strip whose coding is not shorter than its input is **stored** (format 1.1): its bytes are
//! the input bytes, flagged by bit 31 of its `strip_starts` entry (§2, §4a). A strip whose bytes
//! all equal one byte is a **fill** strip (format 1.2): that one byte, flagged by bit 30 (§4b).
//!
//! Modules: `encode` (hash-chain match finding and an optimal parse by dynamic programming, one
//! rayon task per strip) and `decode` (the reference decoder, the paper's sequential algorithm
//! over a strip's words in order, strip after strip; the fast one runs the same strip loop on
//! all cores; and a word-at-a-time decoder kept as a test oracle). All treat the payload as
//! hostile: the header, the strip directory and each strip's counts and lengths are checked
//! against the payload length before any word is decoded, nothing is allocated from a header
//! field, and all fail with the same [`tessera_format::Error`] on the same bytes.

mod decode;
mod encode;

pub use decode::{decode, decode_reference, decode_simple, strip_directory, StripKind, StripRange};
pub use encode::{encode, max_encoded_len};

/// Codec id reserved for LLL in the container (`lll.md` §1; not yet in `CodecId`).
pub const CODEC_ID: u8 = 48;
/// Logical type id of `bytes` (`lll.md` §1, shared with Huffman; not yet in `LogicalType`).
pub const LOGICAL_TYPE_BYTES: u8 = 9;

/// Bytes per segment (§2).
pub const SEGMENT_BYTES: usize = 4096;
/// Segments per strip (§2).
pub const SEGMENTS_PER_STRIP: usize = 8;
/// Bytes per strip (§2): 32 KiB.
pub const STRIP_BYTES: usize = SEGMENT_BYTES * SEGMENTS_PER_STRIP;
/// Lengths of the subsegments the first segment of a strip is halved into (§3).
pub const SUBSEGMENT_BYTES: [usize; 4] = [512, 512, 1024, 2048];
/// Coded segments in a full strip: 4 subsegments and 7 segments (§3).
pub const MAX_STRIP_SEGMENTS: usize = SUBSEGMENT_BYTES.len() + SEGMENTS_PER_STRIP - 1;
/// Header bytes (§2): `segment_bytes`, `segments_per_strip`, `total_count`, `strip_count`.
pub const HEADER_BYTES: usize = 16;

/// Bit 31 of a `strip_starts` entry: the strip is stored, its bytes are its input (§2, §4a).
pub const STORED_STRIP: u32 = 1 << 31;
/// Bit 30 of a `strip_starts` entry (format 1.2): the strip is a fill strip, one byte that every
/// output byte of the strip equals (§2, §4b).
pub const FILL_STRIP: u32 = 1 << 30;
/// The `offset` field of a `strip_starts` entry: bits 0..29 (§2).
pub const STRIP_OFFSET_MASK: u32 = FILL_STRIP - 1;

/// Offset field value that marks a run-length code, SRL or LRL (§5).
pub const RUN_T: u16 = 4095;
/// Length field value that marks a long code, LI or LRL (§5).
pub const LONG_L: u16 = 15;
/// Shortest and longest SI / SRL (`l + 2`, `l = 0..=14`).
pub const SHORT_MIN: usize = 2;
/// Longest SI / SRL.
pub const SHORT_MAX: usize = 16;
/// Shortest and longest LI / LRL (`c + 18`, `c = 0..=255`).
pub const LONG_MIN: usize = 18;
/// Longest LI / LRL.
pub const LONG_MAX: usize = 273;
/// Shortest and longest RL (`l + 2`, `l = 0..=255`) in a non-dictionary subsegment.
pub const RL_MIN: usize = 2;
/// Longest RL.
pub const RL_MAX: usize = 257;

const _: () = assert!(STRIP_BYTES == 32768);
// Every payload offset fits the offset field: a payload is at most 16 + 4 * 512 + 2^24 bytes.
const _: () = assert!(HEADER_BYTES + 4 * 512 + (1 << 24) <= STRIP_OFFSET_MASK as usize);
const _: () = assert!(
    SUBSEGMENT_BYTES[0] + SUBSEGMENT_BYTES[1] + SUBSEGMENT_BYTES[2] + SUBSEGMENT_BYTES[3]
        == SEGMENT_BYTES
);
const _: () = assert!(SHORT_MAX == LONG_L as usize - 1 + SHORT_MIN);
const _: () = assert!(LONG_MAX == 255 + LONG_MIN);
// Every dictionary is at most a segment long and offsets below RUN_T address all of it that a
// copy of at least SHORT_MIN bytes can start at.
const _: () = assert!(RUN_T as usize == SEGMENT_BYTES - 1);
// A segment's word count fits the u16 of §4: each word yields at least one byte.
const _: () = assert!(SEGMENT_BYTES <= u16::MAX as usize);

/// How many words of each code type an encoding holds (the paper's code names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeCounts {
    /// Single character (1-byte word), both modes.
    pub sc: u64,
    /// Run length with its character (non-dictionary subsegment).
    pub rl: u64,
    /// Short dictionary copy.
    pub si: u64,
    /// Long dictionary copy.
    pub li: u64,
    /// Short run of the previous character.
    pub srl: u64,
    /// Long run of the previous character.
    pub lrl: u64,
    /// Strips stored as their input bytes (§4a; their words are not counted above).
    pub stored: u64,
    /// Fill strips, one byte each (§4b; no words).
    pub fill: u64,
}

impl CodeCounts {
    pub(crate) fn add(&mut self, o: &CodeCounts) {
        self.sc += o.sc;
        self.rl += o.rl;
        self.si += o.si;
        self.li += o.li;
        self.srl += o.srl;
        self.lrl += o.lrl;
        self.stored += o.stored;
        self.fill += o.fill;
    }
}

/// One coded segment of a strip (§3): output bytes `[start, end)` of the strip, dictionary
/// bytes `[dict_start, dict_end)` of the strip (empty for the non-dictionary subsegment).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub start: usize,
    pub end: usize,
    pub dict_start: usize,
    pub dict_end: usize,
    pub dictionary: bool,
}

/// The coded segments of a strip of `len` bytes, in order (§3); returns them and their count.
pub(crate) fn strip_segments(len: usize) -> ([Seg; MAX_STRIP_SEGMENTS], usize) {
    let empty = Seg {
        start: 0,
        end: 0,
        dict_start: 0,
        dict_end: 0,
        dictionary: false,
    };
    let mut segs = [empty; MAX_STRIP_SEGMENTS];
    let mut n = 0;
    let mut start = 0;
    for (j, &sub) in SUBSEGMENT_BYTES.iter().enumerate() {
        if start >= len {
            return (segs, n);
        }
        segs[n] = Seg {
            start,
            end: (start + sub).min(len),
            dict_start: 0,
            dict_end: start,
            dictionary: j > 0,
        };
        n += 1;
        start += sub;
    }
    for k in 1..SEGMENTS_PER_STRIP {
        let start = k * SEGMENT_BYTES;
        if start >= len {
            break;
        }
        segs[n] = Seg {
            start,
            end: (start + SEGMENT_BYTES).min(len),
            dict_start: start - SEGMENT_BYTES,
            dict_end: start,
            dictionary: true,
        };
        n += 1;
    }
    (segs, n)
}
