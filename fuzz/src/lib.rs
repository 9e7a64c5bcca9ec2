//! Shared driver for the decoder fuzz targets: the first bytes of the input choose the logical
//! type and the value count, the rest is the payload. Both decoders (reference and fast) must
//! either fail or agree exactly; neither may panic.

use tessera_codecs::column::{decode_chunk, decode_chunk_reference};
use tessera_format::{CodecId, LogicalType};

/// Decodes `data` as a chunk of `codec` with both decoders and checks they agree.
pub fn decode_both(codec: CodecId, data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let ty = LogicalType::ALL[data[0] as usize % LogicalType::ALL.len()];
    // Value counts up to 2^16 keep each run fast; the decoders check the count against the
    // payload's own header, so larger claims are exercised through the header instead.
    let count = u16::from_le_bytes([data[1], data[2]]) as usize;
    let payload = &data[3..];
    let mut fast = vec![0xA5u8; count * ty.width()];
    let mut reference = vec![0x5Au8; count * ty.width()];
    let a = decode_chunk(ty, codec, payload, &mut fast);
    let b = decode_chunk_reference(ty, codec, payload, &mut reference);
    match (a, b) {
        (Ok(()), Ok(())) => assert_eq!(fast, reference, "fast and reference decoders disagree"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("decoders disagree on validity: fast {a:?}, reference {b:?}"),
    }
}
