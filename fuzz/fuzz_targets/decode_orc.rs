//! Fuzzes the ORC decoders (RLE v1, RLE v2, byte RLE, booleans) on hostile streams: the first
//! two bytes pick the decoder, signedness and value count (bounded, so no fuzz input allocates
//! much), the rest is the stream. Any result is fine but a panic; a stream that decodes must
//! use no more bytes than it has.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::orc;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (kind, n) = (data[0], data[1] as usize * 16);
    let s = &data[2..];
    let used = match kind % 6 {
        0 | 1 => orc::decode_rle_v1(s, kind % 2 == 1, &mut vec![0i64; n]),
        2 | 3 => orc::decode_rle_v2(s, kind % 2 == 1, &mut vec![0i64; n]),
        4 => orc::decode_byte_rle(s, &mut vec![0u8; n]),
        _ => orc::decode_bool(s, &mut vec![false; n]),
    };
    if let Ok(u) = used {
        assert!(u <= s.len());
    }
});
