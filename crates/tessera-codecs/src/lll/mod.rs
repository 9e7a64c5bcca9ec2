//! LLL byte compression (`docs/format/lll.md`, after Funasaka, Nakano and Ito, *Light Loss-Less
//! data compression*, the paper).
//!
//! Input is cut into **strips** of 32 KiB; every strip is encoded and decoded on its own. A strip
//! is coded as **segments** of `segment_bytes` (a header field: 4096 in formats 1 to 1.2, also
//! 512, 1024 or 2048 since 1.3), after the paper's segment halving: the first 512 bytes are coded
//! without a dictionary (SC and RL words), then each segment is twice the bytes before it, at most
//! `segment_bytes`, and its dictionary is the at most 4096 strip bytes right before it (§3). A
//! strip stores per-segment word counts, one identifier bit per word (1 = a 2-byte word) and the
//! word array (§4), so a GPU finds every word's byte offset by a prefix sum of the bits.
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

mod codec;
mod decode;
mod encode;

pub(crate) use codec::CODEC;

pub use decode::{decode, decode_reference, decode_simple, strip_directory, StripKind, StripRange};
pub use encode::{encode, encode_with, encode_with_segment_bytes, max_encoded_len};

/// Codec id reserved for LLL in the container (`lll.md` §1; not yet in `CodecId`).
pub const CODEC_ID: u8 = 48;
/// Logical type id of `bytes` (`lll.md` §1, shared with Huffman; not yet in `LogicalType`).
pub const LOGICAL_TYPE_BYTES: u8 = 9;

/// Segment sizes a payload may declare in its `segment_bytes` header word (§2; format 1.3
/// added all but 4096).
pub const SEGMENT_SIZES: [usize; 4] = [512, 1024, 2048, 4096];
/// The largest segment (§2), the only size of formats 1 to 1.2.
pub const MAX_SEGMENT_BYTES: usize = 4096;
/// The segment size [`encode`] writes (§9: the smallest, whose dictionaries reach the bytes
/// right before each segment, compresses best on every bench set).
pub const DEFAULT_SEGMENT_BYTES: usize = 512;
/// A segment's dictionary is the at most this many strip bytes right before it (§3).
pub const DICTIONARY_BYTES: usize = 4096;
/// Bytes per strip (§2): 32 KiB, whatever the segment size.
pub const STRIP_BYTES: usize = 32768;

/// Below this many raw bytes (one strip) `auto` takes LLL only when it halves a chunk. A strip
/// decodes as a chain of dependent segments (up to 64, each waiting for the one before), so a
/// chunk's decode has a latency its bytes do not shrink: on the GPU one thread block works
/// through the chain while the rest of the device idles. On a chunk smaller than a strip that
/// latency costs a read more than a modest saving of bytes is worth; such chunks are mostly the
/// dictionaries of small tables, whose reads are bound by latencies, not by bytes (figures:
/// `docs/decisions/0037-lll-auto-on-small-chunks.md`).
pub const AUTO_MIN_BYTES: usize = STRIP_BYTES;
/// The first segment of a strip no larger than this (§3: the strip's first 512 bytes have no
/// dictionary).
pub const FIRST_SEGMENT_BYTES: usize = 512;
/// Coded segments in a full strip at most: 64 of 512 bytes (§3).
pub const MAX_STRIP_SEGMENTS: usize = STRIP_BYTES / FIRST_SEGMENT_BYTES;
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

const _: () = assert!(STRIP_BYTES % MAX_SEGMENT_BYTES == 0);
// Every payload offset fits the offset field: a payload is at most 16 + 4 * 512 + 2^24 bytes.
const _: () = assert!(HEADER_BYTES + 4 * 512 + (1 << 24) <= STRIP_OFFSET_MASK as usize);
const _: () = assert!(SHORT_MAX == LONG_L as usize - 1 + SHORT_MIN);
const _: () = assert!(LONG_MAX == 255 + LONG_MIN);
// Offsets below RUN_T address every byte of a dictionary that a copy of at least SHORT_MIN bytes
// can start at.
const _: () = assert!(RUN_T as usize == DICTIONARY_BYTES - 1);
// A segment's word count fits the u16 of §4: each word yields at least one byte.
const _: () = assert!(MAX_SEGMENT_BYTES <= u16::MAX as usize);
const _: () = assert!(MAX_SEGMENT_BYTES <= DICTIONARY_BYTES);

/// What the encoder's optimal parse minimizes (`lll.md` §9). The format is the same either way:
/// every decoder reads both, and only the choice of words differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Parse {
    /// The fewest bits: 8 per word-array byte plus 1 identifier bit per word. The smallest
    /// payload, and what the paper's encoder does.
    #[default]
    Smallest,
    /// The fewest bits plus [`FAST_DECODE_CODE_BITS`] for every 2-byte word. A decoder's cost
    /// is per word, not per byte: a run of SC words is one block copy, while each 2-byte word
    /// is a step of its own (its fields, a check, a copy or fill). A copy or run of 2 bytes saves
    /// 1 bit over two SC words, so this parse writes none; longer codes save at least 10 bits
    /// and stay. On the bench photographs: about 2% larger
    /// payloads and a reference decoder 1.5-2.1x faster, but a GPU decoder, which pays per
    /// word, up to 16% slower (`lll.md` §9; the figures are in `docs/decisions/`).
    FastDecode,
}

/// Bits [`Parse::FastDecode`] charges per 2-byte word on top of its size: more than the 1 bit
/// a 2-byte code saves over SC words, well under the 10 bits that a 3-byte one saves.
pub const FAST_DECODE_CODE_BITS: u32 = 2;

impl Parse {
    /// Bits the parse charges per 2-byte word on top of the bits the word takes.
    pub fn code_bits(self) -> u32 {
        match self {
            Parse::Smallest => 0,
            Parse::FastDecode => FAST_DECODE_CODE_BITS,
        }
    }

    /// The name the CLI and the bench results use (`smallest`, `fast-decode`).
    pub fn name(self) -> &'static str {
        match self {
            Parse::Smallest => "smallest",
            Parse::FastDecode => "fast-decode",
        }
    }
}

/// How [`encode_with`] writes a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncodeOptions {
    /// One of [`SEGMENT_SIZES`] (§2; 4096 writes a payload that every decoder since format 1
    /// reads, the others need format 1.3).
    pub segment_bytes: usize,
    /// What the parse minimizes.
    pub parse: Parse,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            parse: Parse::Smallest,
        }
    }
}

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

/// Whether `segment_bytes` is a size a payload may declare (§2).
pub fn valid_segment_bytes(segment_bytes: usize) -> bool {
    SEGMENT_SIZES.contains(&segment_bytes)
}

/// The coded segments of a strip of `len` bytes, segment size `segment_bytes` (one of
/// [`SEGMENT_SIZES`]), in order (§3); returns them and their count. Segment 0 is
/// `[0, min(512, len))`, without a dictionary; each next one starts where the one before ends and
/// is twice as long as the bytes before it, at most `segment_bytes` (the paper's segment
/// halving); its dictionary is the at most [`DICTIONARY_BYTES`] strip bytes before it.
pub(crate) fn strip_segments(
    len: usize,
    segment_bytes: usize,
) -> ([Seg; MAX_STRIP_SEGMENTS], usize) {
    debug_assert!(valid_segment_bytes(segment_bytes) && len <= STRIP_BYTES);
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
    while start < len && n < MAX_STRIP_SEGMENTS {
        let next = if start == 0 {
            FIRST_SEGMENT_BYTES
        } else {
            (2 * start).min(start + segment_bytes)
        };
        segs[n] = Seg {
            start,
            end: next.min(len),
            dict_start: start.saturating_sub(DICTIONARY_BYTES),
            dict_end: start,
            dictionary: start > 0,
        };
        n += 1;
        start = next;
    }
    (segs, n)
}
