//! Fuzzes the Deflate, zlib and gzip readers on hostile input (outputs bounded at 1 MiB): any
//! result is fine but a panic; a raw stream that decodes uses no more bytes than it has and
//! decodes to the same bytes again.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::deflate;

fuzz_target!(|data: &[u8]| {
    const LIMIT: usize = 1 << 20;
    if let Ok((out, used)) = deflate::inflate(data, LIMIT) {
        assert!(used <= data.len());
        assert_eq!(deflate::inflate(&data[..used], LIMIT).map(|r| r.0).ok(), Some(out));
    }
    let _ = deflate::zlib_decompress(data, LIMIT);
    let _ = deflate::gzip_decompress(data, LIMIT);
});
