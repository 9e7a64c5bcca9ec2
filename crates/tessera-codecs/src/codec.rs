//! One interface to every codec: the [`Codec`] trait and the registry that
//! [`crate::column`], [`crate::text`] and [`crate::int`] dispatch through.
//!
//! A codec says which [`CodecId`] it is (its stored id, name, the logical types it serves and
//! the format minor that defines it are one row of tessera-format's codec table, the on-disk
//! contract, and the trait reads them from there), where it stands in the automatic choice of
//! each type [`Family`], and how it encodes one chunk, sizes it when that is cheaper than
//! encoding, and decodes it (reference and fast). Integer codecs also expose their lane-level
//! entry points ([`crate::int::LaneCodec`]), which the GPU crate and the tests drive directly.
//!
//! Callers check a chunk before handing it to a codec (the codec serves the type, the value
//! count is at most `MAX_CHUNK_VALUES`, the raw or output length matches it), so a codec deals
//! only with its own payload. Dispatch costs one lookup and one virtual call per chunk, never
//! per value.
//!
//! # Adding a codec (CPU side)
//!
//! 1. In tessera-format (`types.rs`): a `CodecId` variant and its row in the codec table (id,
//!    name, format minor, the types it serves), and the spec in `docs/format/`.
//! 2. Here: a module or folder for the codec (as `int/rfor.rs`, `bitmap/plwah.rs`, `huffman/`,
//!    `lll/`, `plain.rs`) with a type that implements [`Codec`]. An integer codec implements
//!    `int::Kernels` (its generic encode, size and decoders) and registers an `int::IntCodec`;
//!    a bitmap flavor registers a `bitmap::BitmapCodec`.
//! 3. One line in [`REGISTRY`]. [`Codec::auto_slot`] decides whether `auto` tries it.
//! 4. The registry test (`codec::tests`) then checks the new codec round-trips every type it
//!    serves and refuses the others; add golden files under `testdata/` for its payloads.
//!
//! A GPU decoder, where the codec has one, lives in tessera-gpu (a module implementing
//! `tessera_gpu::GpuDecoder`) and is one line in `tessera_gpu::codec::DECODERS`.

use std::cell::OnceCell;
use std::sync::OnceLock;

use tessera_format::{CodecId, Error, Lane, LogicalType, Result, MAX_CHUNK_VALUES};

use crate::int::{self, LaneCodec, Lanes};
use crate::{bitmap, huffman, lll, plain};

/// Every codec, one registration each, in id order.
pub static REGISTRY: [&dyn Codec; 8] = [
    &plain::CODEC,
    &int::for_::CODEC,
    &int::dfor::CODEC,
    &int::rfor::CODEC,
    &bitmap::wah::CODEC,
    &bitmap::plwah::CODEC,
    &huffman::CODEC,
    &lll::CODEC,
];

/// A codec of chunks: see the module notes.
pub trait Codec: Sync {
    /// The stored id.
    fn id(&self) -> CodecId;

    /// The name used on the command line, in specs and in `inspect`.
    fn name(&self) -> &'static str {
        self.id().name()
    }

    /// Whether chunks of `ty` may use this codec.
    fn serves(&self, ty: LogicalType) -> bool {
        self.id().supports(ty)
    }

    /// Where `auto` tries this codec for chunks of `family` (`None`: never).
    fn auto_slot(&self, family: Family) -> Option<AutoSlot>;

    /// Appends the payload of `chunk` to `out`. `opts` holds the encoder settings a payload
    /// records; a codec reads only its own.
    fn encode(&self, chunk: &Chunk<'_>, opts: &CodecOptions, out: &mut Vec<u8>) -> Result<()>;

    /// The exact payload size [`Codec::encode`] would produce, where that is much cheaper than
    /// encoding (`None`: `auto` encodes into a scratch buffer to learn it).
    fn encoded_size(&self, chunk: &Chunk<'_>) -> Result<Option<usize>> {
        let _ = chunk;
        Ok(None)
    }

    /// The fast decoder: writes the raw form of `value_count` values of `ty` into `out`
    /// (`ty.raw_len(value_count)` bytes).
    fn decode(
        &self,
        ty: LogicalType,
        payload: &[u8],
        value_count: u64,
        out: &mut [u8],
    ) -> Result<()>;

    /// The reference decoder: the same output (or the same error) as [`Codec::decode`].
    fn decode_reference(
        &self,
        ty: LogicalType,
        payload: &[u8],
        value_count: u64,
        out: &mut [u8],
    ) -> Result<()>;

    /// The lane-level entry points of an integer codec.
    fn lanes(&self) -> Option<&dyn LaneCodec> {
        None
    }
}

impl std::fmt::Debug for dyn Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The registered codec of `id`.
pub fn get(id: CodecId) -> Option<&'static dyn Codec> {
    REGISTRY.iter().copied().find(|c| c.id() == id)
}

/// [`get`], as an error when nothing is registered under `id`.
pub(crate) fn lookup(id: CodecId) -> Result<&'static dyn Codec> {
    get(id).ok_or(Error::Unknown {
        what: "registered codec",
        found: id.id() as u64,
    })
}

/// The types whose chunks `auto` chooses among the same candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// The integer types (through their lanes).
    Integers,
    /// Bytes, and the text bytes of utf8 chunks.
    Bytes,
    /// Bitmaps.
    Bits,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 3] = [Family::Integers, Family::Bytes, Family::Bits];

    /// The family of chunks of `ty` (`None` for utf8, whose chunks are coded by
    /// [`crate::text`] with a bytes codec for their text).
    pub fn of(ty: LogicalType) -> Option<Family> {
        match ty {
            t if t.is_integer() => Some(Family::Integers),
            LogicalType::Bytes => Some(Family::Bytes),
            LogicalType::Bits => Some(Family::Bits),
            _ => None,
        }
    }
}

/// A codec's place in the automatic choice of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoSlot {
    /// Candidates are tried in increasing rank (the first one tried is the starting choice);
    /// ranks are distinct within a family. Plain takes [`AutoSlot::LAST`].
    pub rank: u8,
    /// When this candidate replaces the choice so far.
    pub rule: AutoRule,
}

impl AutoSlot {
    /// The rank of the candidate tried last.
    pub const LAST: u8 = u8::MAX;
}

/// When a candidate of the automatic choice replaces the choice so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoRule {
    /// When its payload is smaller (ties stay with the earlier candidate).
    Smaller,
    /// When its payload is smaller or equal (it wins ties).
    NotLarger,
    /// When its payload is smaller and at most `1 - num / den` of the first candidate's
    /// (exact integers): a slower codec must buy a real saving over the first one.
    SmallerThanFirstBy { num: usize, den: usize },
    /// When its payload is smaller and the chunk holds at least `min_bytes` raw bytes (as the
    /// first candidate too): a codec whose decode has a fixed cost per chunk (tables built
    /// before the first symbol, a chain of dependent segments) is not worth it on a chunk
    /// smaller than that cost.
    SmallerOnChunksOf { min_bytes: usize },
    /// When its payload is smaller and, on a chunk of fewer than `min_bytes` raw bytes, at
    /// most `num / den` of them (as the first candidate too): a codec whose decode has a
    /// latency per chunk that its bytes do not hide on a small chunk must buy a large saving
    /// there.
    SmallerOnSmallChunksBy {
        min_bytes: usize,
        num: usize,
        den: usize,
    },
}

impl AutoRule {
    /// Whether a candidate of `size` payload bytes under this rule may be chosen for a chunk of
    /// `raw` raw bytes at all (also as the first candidate tried).
    fn admits(self, size: usize, raw: usize) -> bool {
        match self {
            AutoRule::SmallerOnChunksOf { min_bytes } => raw >= min_bytes,
            AutoRule::SmallerOnSmallChunksBy {
                min_bytes,
                num,
                den,
            } => raw >= min_bytes || size.saturating_mul(den) <= raw.saturating_mul(num),
            _ => true,
        }
    }

    fn replaces(self, size: usize, best: usize, first: usize, raw: usize) -> bool {
        match self {
            AutoRule::Smaller => size < best,
            AutoRule::SmallerOnChunksOf { .. } | AutoRule::SmallerOnSmallChunksBy { .. } => {
                size < best && self.admits(size, raw)
            }
            AutoRule::NotLarger => size <= best,
            AutoRule::SmallerThanFirstBy { num, den } => {
                size < best && size.saturating_mul(den) <= first.saturating_mul(den - num)
            }
        }
    }
}

/// How much smaller than FOR (as a fraction of FOR's payload) DFOR or RFOR must be for auto to
/// choose it: 1/32.
pub const AUTO_MARGIN: (usize, usize) = (1, 32);

/// The candidates `auto` tries for `family`, in order, with their rules.
pub fn auto_order(family: Family) -> &'static [(&'static dyn Codec, AutoRule)] {
    type Order = Vec<(&'static dyn Codec, AutoRule)>;
    static ORDERS: OnceLock<[Order; 3]> = OnceLock::new();
    let orders = ORDERS.get_or_init(|| {
        Family::ALL.map(|family| {
            let mut slots: Vec<(u8, &'static dyn Codec, AutoRule)> = REGISTRY
                .iter()
                .filter_map(|&c| c.auto_slot(family).map(|s| (s.rank, c, s.rule)))
                .collect();
            slots.sort_by_key(|&(rank, ..)| rank);
            slots.into_iter().map(|(_, c, rule)| (c, rule)).collect()
        })
    });
    let at = Family::ALL.iter().position(|&f| f == family).unwrap_or(0);
    &orders[at]
}

/// The automatic choice, fed one candidate at a time in [`auto_order`].
#[derive(Debug)]
pub(crate) struct Choice<T> {
    first: usize,
    best: Option<(T, usize)>,
    /// Raw bytes of the chunk chosen for ([`AutoRule::SmallerOnChunksOf`]).
    raw: usize,
}

impl<T> Choice<T> {
    /// A choice for a chunk of `raw` raw bytes.
    pub(crate) fn new(raw: usize) -> Self {
        Choice {
            first: 0,
            best: None,
            raw,
        }
    }

    /// Offers a candidate whose payload takes `size` bytes.
    pub(crate) fn offer(&mut self, candidate: T, rule: AutoRule, size: usize) {
        let replaces = match &self.best {
            // A first candidate sets the bar, unless its rule keeps it off this chunk.
            None if rule.admits(size, self.raw) => {
                self.first = size;
                true
            }
            None => false,
            Some((_, best)) => rule.replaces(size, *best, self.first, self.raw),
        };
        if replaces {
            self.best = Some((candidate, size));
        }
    }

    /// The candidate chosen (`None` when none was offered).
    pub(crate) fn chosen(self) -> Option<T> {
        self.best.map(|(c, _)| c)
    }
}

/// Encodes `chunk` with the automatic choice of its family; returns the codec chosen. Sizes come
/// from [`Codec::encoded_size`] where a codec has it, else from a scratch encoding, which is
/// then the payload appended if that codec wins.
pub(crate) fn encode_auto(
    chunk: &Chunk<'_>,
    opts: &CodecOptions,
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    let family = Family::of(chunk.ty()).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{} chunks have no automatic codec",
            chunk.ty().name()
        ))
    })?;
    let mut choice = Choice::new(chunk.raw().len());
    for &(codec, rule) in auto_order(family) {
        match codec.encoded_size(chunk)? {
            Some(size) => choice.offer((codec, None), rule, size),
            None => {
                let mut scratch = Vec::new();
                codec.encode(chunk, opts, &mut scratch)?;
                let size = scratch.len();
                choice.offer((codec, Some(scratch)), rule, size);
            }
        }
    }
    let (codec, scratch) = choice
        .chosen()
        .ok_or_else(|| Error::InvalidArgument("no codec to try".into()))?;
    match scratch {
        Some(payload) => out.extend_from_slice(&payload),
        None => codec.encode(chunk, opts, out)?,
    }
    Ok(codec.id())
}

/// Encoder settings that a codec's payload records, so that no reader needs them: the choices a
/// caller may make beyond the codec itself. `Default` is what
/// [`crate::column::encode_values`] uses.
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

/// One chunk of a fixed-size type to encode: its raw form and, for integer types, its lane
/// words, mapped on first use and shared by every candidate `auto` tries.
#[derive(Debug)]
pub struct Chunk<'a> {
    ty: LogicalType,
    raw: &'a [u8],
    value_count: u64,
    lanes: OnceCell<LaneWords>,
}

#[derive(Debug)]
enum LaneWords {
    L32(Vec<u32>),
    L64(Vec<u64>),
}

impl<'a> Chunk<'a> {
    /// A chunk of `value_count` values of `ty` whose raw form is `raw` (`ty.raw_len(value_count)`
    /// bytes; for bits, padding bits past `value_count` must be zero).
    pub fn new(ty: LogicalType, raw: &'a [u8], value_count: u64) -> Result<Chunk<'a>> {
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
        if ty == LogicalType::Bits
            && value_count % 8 != 0
            && raw[raw.len() - 1] >> (value_count % 8) != 0
        {
            return Err(Error::InvalidArgument(format!(
                "bits past the bitmap's {value_count} bits are set in its last byte"
            )));
        }
        Ok(Chunk {
            ty,
            raw,
            value_count,
            lanes: OnceCell::new(),
        })
    }

    /// The logical type.
    pub fn ty(&self) -> LogicalType {
        self.ty
    }

    /// The raw form (little-endian values; bits packed least significant bit first).
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Values in the chunk.
    pub fn value_count(&self) -> u64 {
        self.value_count
    }

    /// The lane words of an integer chunk (`int-common.md` §2), mapped on the first call.
    pub fn lanes(&self) -> Result<Lanes<'_>> {
        if !self.ty.is_integer() {
            return Err(Error::InvalidArgument(format!(
                "{} values have no lane form",
                self.ty.name()
            )));
        }
        let words = self.lanes.get_or_init(|| match self.ty.lane() {
            Lane::L32 => LaneWords::L32(int::lanes::to_lane32(self.ty, self.raw)),
            Lane::L64 => LaneWords::L64(int::lanes::to_lane64(self.ty, self.raw)),
        });
        Ok(match words {
            LaneWords::L32(v) => Lanes::L32(v),
            LaneWords::L64(v) => Lanes::L64(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::{self, AUTO_ORDER, AUTO_ORDER_BITS, AUTO_ORDER_BYTES};

    /// A small chunk of `ty` in raw form (value_count, raw) with runs, steps and noise so every
    /// codec has something to do.
    fn sample(ty: LogicalType) -> (u64, Vec<u8>) {
        let n = 300u64;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        match ty {
            LogicalType::Bits => {
                let mut raw = vec![0u8; n.div_ceil(8) as usize];
                for i in 0..n {
                    if (40..120).contains(&i) || next() % 7 == 0 {
                        raw[(i / 8) as usize] |= 1 << (i % 8);
                    }
                }
                (n, raw)
            }
            _ => {
                let w = ty.width();
                let mut raw = Vec::new();
                for i in 0..n {
                    let v = if i < 100 { i * 3 } else { next() % 50 };
                    raw.extend_from_slice(&v.to_le_bytes()[..w]);
                }
                (n, raw)
            }
        }
    }

    fn fixed_types() -> impl Iterator<Item = LogicalType> {
        LogicalType::ALL
            .into_iter()
            .filter(|t| t.raw_len(1).is_some())
    }

    #[test]
    fn every_codec_id_is_registered_once_with_the_format_facts() {
        for id in CodecId::ALL {
            let found: Vec<_> = REGISTRY.iter().filter(|c| c.id() == id).collect();
            assert_eq!(
                found.len(),
                1,
                "{} registered {} times",
                id.name(),
                found.len()
            );
            let c = get(id).expect("registered");
            assert_eq!(c.name(), id.name());
            assert_eq!(CodecId::from_name(c.name()), Some(id));
            assert_eq!(CodecId::from_id(c.id().id()).ok(), Some(id));
            for ty in LogicalType::ALL {
                assert_eq!(
                    c.serves(ty),
                    id.supports(ty),
                    "{} for {}",
                    id.name(),
                    ty.name()
                );
            }
            // Exactly the integer codecs have lane entry points.
            assert_eq!(
                c.lanes().is_some(),
                id != CodecId::Plain && c.serves(LogicalType::U32)
            );
        }
        assert_eq!(REGISTRY.len(), CodecId::ALL.len());
    }

    #[test]
    fn auto_orders_follow_the_slots_and_the_public_constants() {
        let ids =
            |f: Family| -> Vec<CodecId> { auto_order(f).iter().map(|(c, _)| c.id()).collect() };
        assert_eq!(ids(Family::Integers), AUTO_ORDER);
        assert_eq!(ids(Family::Bytes), AUTO_ORDER_BYTES);
        assert_eq!(ids(Family::Bits), AUTO_ORDER_BITS);
        for family in Family::ALL {
            let mut ranks: Vec<u8> = REGISTRY
                .iter()
                .filter_map(|c| c.auto_slot(family).map(|s| s.rank))
                .collect();
            let n = ranks.len();
            ranks.dedup();
            assert_eq!(ranks.len(), n, "ranks of {family:?} are distinct");
            for (c, _) in auto_order(family) {
                let ty = match family {
                    Family::Integers => LogicalType::U32,
                    Family::Bytes => LogicalType::Bytes,
                    Family::Bits => LogicalType::Bits,
                };
                assert!(c.serves(ty), "auto tries {} only where it serves", c.name());
            }
        }
    }

    #[test]
    fn every_codec_round_trips_the_types_it_serves_and_refuses_the_others() {
        for codec in REGISTRY {
            let id = codec.id();
            for ty in fixed_types() {
                let (n, raw) = sample(ty);
                let mut payload = Vec::new();
                let encoded = column::encode_values(ty, Some(id), &raw, n, &mut payload);
                let mut out = vec![0u8; raw.len()];
                let decoded = column::decode_values(ty, id, &payload, n, &mut out);
                if !codec.serves(ty) {
                    assert!(
                        matches!(&encoded, Err(Error::InvalidArgument(m)) if m.contains("does not apply")),
                        "{} encoded {}: {encoded:?}",
                        id.name(),
                        ty.name()
                    );
                    assert!(
                        matches!(
                            decoded,
                            Err(Error::InvalidHeader {
                                field: "chunk codec",
                                ..
                            })
                        ),
                        "{} decoded {}: {decoded:?}",
                        id.name(),
                        ty.name()
                    );
                    continue;
                }
                assert_eq!(encoded.expect("encodes"), id);
                // Through the trait directly: the same payload, the exact size where offered.
                let chunk = Chunk::new(ty, &raw, n).expect("valid chunk");
                let mut direct = Vec::new();
                codec
                    .encode(&chunk, &CodecOptions::default(), &mut direct)
                    .expect("encodes");
                assert_eq!(direct, payload, "{} on {}", id.name(), ty.name());
                if let Some(size) = codec.encoded_size(&chunk).expect("sizes") {
                    assert_eq!(size, payload.len(), "{} size on {}", id.name(), ty.name());
                }
                decoded.expect("decodes");
                assert_eq!(out, raw, "{} fast on {}", id.name(), ty.name());
                out.fill(0);
                codec
                    .decode_reference(ty, &payload, n, &mut out)
                    .expect("reference decodes");
                assert_eq!(out, raw, "{} reference on {}", id.name(), ty.name());
            }
            // Utf8 chunks go through text with the bytes codecs.
            let strings =
                crate::text::Strings::from_values([&b"ab"[..], b"", b"cde"]).expect("strings");
            let mut p = Vec::new();
            let r = crate::text::encode_utf8_chunk(&strings, Some(id), &mut p);
            if codec.serves(LogicalType::Utf8) {
                assert_eq!(r.expect("utf8 encodes"), id);
                let back = crate::text::decode_utf8_chunk(id, &p, 3).expect("utf8 decodes");
                assert_eq!(back, strings);
            } else {
                assert!(
                    matches!(r, Err(Error::InvalidArgument(_))),
                    "{}: {r:?}",
                    id.name()
                );
            }
        }
    }

    #[test]
    fn auto_picks_what_the_rules_say() {
        let slot = |c: CodecId, f: Family| get(c).and_then(|c| c.auto_slot(f)).map(|s| s.rule);
        // DFOR must beat FOR by 1/32; plain wins ties on integers and loses them on bytes.
        let pick_raw = |sizes: &[(CodecId, usize)], f: Family, raw: usize| {
            let mut choice = Choice::new(raw);
            for &(c, size) in sizes {
                choice.offer(c, slot(c, f).expect("a candidate"), size);
            }
            choice.chosen()
        };
        let pick = |sizes: &[(CodecId, usize)], f: Family| pick_raw(sizes, f, 1 << 20);
        let ints = Family::Integers;
        assert_eq!(column::auto_choice([320, 311, 400, 500]), CodecId::For);
        assert_eq!(column::auto_choice([320, 310, 400, 500]), CodecId::Dfor);
        assert_eq!(column::auto_choice([320, 310, 300, 300]), CodecId::Plain);
        assert_eq!(
            pick(
                &[
                    (CodecId::For, 320),
                    (CodecId::Dfor, 310),
                    (CodecId::Rfor, 305)
                ],
                ints
            ),
            Some(CodecId::Rfor)
        );
        let bytes = Family::Bytes;
        assert_eq!(
            pick(
                &[
                    (CodecId::Lll, 9),
                    (CodecId::Huffman, 9),
                    (CodecId::Plain, 9)
                ],
                bytes
            ),
            Some(CodecId::Lll)
        );
        assert_eq!(
            pick(
                &[
                    (CodecId::Lll, 9),
                    (CodecId::Huffman, 8),
                    (CodecId::Plain, 8)
                ],
                bytes
            ),
            Some(CodecId::Huffman)
        );
        // Huffman's decode tables cost more than a chunk smaller than them: below 32 KiB it is
        // not tried. LLL's chain of segments is not hidden by a chunk smaller than a strip:
        // there it is chosen (even as the first candidate) only when it halves the chunk.
        let huffman_min = crate::huffman::AUTO_MIN_BYTES;
        let lll_min = crate::lll::AUTO_MIN_BYTES;
        let lll_huffman_plain = |l, h, p| {
            [
                (CodecId::Lll, l),
                (CodecId::Huffman, h),
                (CodecId::Plain, p),
            ]
        };
        let raw = lll_min - 1;
        assert_eq!(
            pick_raw(&lll_huffman_plain(raw / 2, 100, raw), bytes, raw),
            Some(CodecId::Lll)
        );
        assert_eq!(
            pick_raw(&lll_huffman_plain(raw / 2 + 1, 100, raw), bytes, raw),
            Some(CodecId::Plain)
        );
        assert_eq!(
            pick_raw(&lll_huffman_plain(900, 500, 1000), bytes, 1000),
            Some(CodecId::Plain)
        );
        assert_eq!(
            pick_raw(&lll_huffman_plain(400, 300, 1000), bytes, 1000),
            Some(CodecId::Lll)
        );
        assert_eq!(
            pick_raw(&lll_huffman_plain(900, 500, 800), bytes, huffman_min - 1),
            Some(CodecId::Plain)
        );
        assert_eq!(
            pick_raw(&lll_huffman_plain(900, 500, 1000), bytes, lll_min),
            Some(CodecId::Huffman)
        );
        assert_eq!(
            pick_raw(&lll_huffman_plain(900, 950, 1000), bytes, lll_min),
            Some(CodecId::Lll)
        );
    }
}
