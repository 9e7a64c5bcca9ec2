//! Fuzzes the parallel Deflate decoder (speculative two-pass, `deflate::inflate_parallel`) with
//! spans of 1 KiB, so that block candidates, markers and the chain are all reached on small
//! inputs: no panic, and wherever the sequential decoder succeeds the parallel one gives the
//! same bytes and the same input length or an error (it may refuse what miniz_oxide accepts, never
//! accept with other output).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_codecs::deflate;

fuzz_target!(|data: &[u8]| {
    const LIMIT: usize = 1 << 20;
    let par = deflate::inflate_parallel(data, LIMIT, 1024);
    if let Ok((out, used)) = &par {
        let (seq, seq_used) = deflate::inflate(data, LIMIT).expect("the sequential decoder agrees");
        assert_eq!((out, used), (&seq, &seq_used));
    }
});
