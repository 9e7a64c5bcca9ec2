//! Deflate, zlib and gzip on the CPU: round trips with stored, fixed and dynamic blocks, gzip
//! headers with every optional field, multi-member files, and hostile input (truncation, bad
//! checksums, bad headers, outputs past the limit) giving typed errors.

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use tessera_codecs::deflate;
use tessera_format::Error;

fn text(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let words = ["gzip ", "member ", "of ", "the ", "file ", "\n", "ACGTN"];
    let mut v = Vec::new();
    while v.len() < n {
        v.extend_from_slice(words[rng.random_range(0..words.len())].as_bytes());
    }
    v.truncate(n);
    v
}

/// A gzip member with the given optional header fields.
fn member(data: &[u8], level: u8, name: bool, extra: bool, hcrc: bool) -> Vec<u8> {
    let mut flg = 0u8;
    if hcrc {
        flg |= 2;
    }
    if extra {
        flg |= 4;
    }
    if name {
        flg |= 8;
    }
    let mut m = vec![0x1f, 0x8b, 8, flg, 0, 0, 0, 0, 0, 3];
    if extra {
        m.extend_from_slice(&[3, 0, b'a', b'b', b'c']);
    }
    if name {
        m.extend_from_slice(b"file.txt\0");
    }
    if hcrc {
        let c = crc32fast::hash(&m) as u16;
        m.extend_from_slice(&c.to_le_bytes());
    }
    m.extend(miniz_oxide::deflate::compress_to_vec(data, level));
    m.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

#[test]
fn raw_and_zlib_round_trip_at_every_level() {
    let mut rng = StdRng::seed_from_u64(5);
    for n in [0usize, 1, 100, 70_000, 300_000] {
        let mut d = text(&mut rng, n);
        if n > 1000 {
            rng.fill_bytes(&mut d[..500]);
        }
        for level in [0u8, 1, 6, 9] {
            let c = miniz_oxide::deflate::compress_to_vec(&d, level);
            let (out, used) = deflate::inflate(&c, n).expect("raw");
            assert_eq!((out, used), (d.clone(), c.len()));
            let z = miniz_oxide::deflate::compress_to_vec_zlib(&d, level);
            let (out, used) = deflate::zlib_decompress(&z, n).expect("zlib");
            assert_eq!((out, used), (d.clone(), z.len()));
        }
    }
}

#[test]
fn gzip_headers_and_members() {
    let mut rng = StdRng::seed_from_u64(6);
    let a = text(&mut rng, 5000);
    let b = text(&mut rng, 1);
    let c: Vec<u8> = Vec::new();
    let mut file = member(&a, 6, true, true, true);
    file.extend(member(&b, 0, false, false, false));
    file.extend(member(&c, 9, true, false, true));
    let out = deflate::gzip_decompress(&file, 1 << 20).expect("gzip");
    assert_eq!(out, [a.clone(), b.clone()].concat());
}

#[test]
fn hostile_input_gives_typed_errors() {
    let mut rng = StdRng::seed_from_u64(7);
    let d = text(&mut rng, 10_000);
    let g = member(&d, 6, true, false, true);
    // Truncated anywhere.
    for cut in [0, 5, 12, g.len() / 2, g.len() - 5, g.len() - 1] {
        assert!(
            deflate::gzip_decompress(&g[..cut], 1 << 20).is_err(),
            "cut {cut}"
        );
    }
    // Bad CRC-32, bad ISIZE, bad header CRC16, bad magic, reserved flags.
    let mut bad = g.clone();
    let n = bad.len();
    bad[n - 6] ^= 1;
    assert!(matches!(
        deflate::gzip_decompress(&bad, 1 << 20),
        Err(Error::ChecksumMismatch { .. })
    ));
    let mut bad = g.clone();
    bad[n - 2] ^= 1;
    assert!(matches!(
        deflate::gzip_decompress(&bad, 1 << 20),
        Err(Error::CountMismatch { .. })
    ));
    let mut bad = g.clone();
    bad[19] ^= 1; // inside the CRC16 (after the 10-byte header and "file.txt\0")
    assert!(matches!(
        deflate::gzip_decompress(&bad, 1 << 20),
        Err(Error::ChecksumMismatch { .. })
    ));
    let mut bad = g.clone();
    bad[0] = 0x1e;
    assert!(matches!(
        deflate::gzip_decompress(&bad, 1 << 20),
        Err(Error::BadMagic { .. })
    ));
    let mut bad = g.clone();
    bad[3] |= 0x80;
    assert!(matches!(
        deflate::gzip_decompress(&bad, 1 << 20),
        Err(Error::InvalidHeader { .. })
    ));
    // Output past the limit, also a limit of 0.
    let one = miniz_oxide::deflate::compress_to_vec(b"x", 6);
    assert!(matches!(
        deflate::inflate(&one, 0),
        Err(Error::CountMismatch { .. })
    ));
    assert_eq!(deflate::inflate(&one, 1).expect("fits").0, b"x");
    assert!(matches!(
        deflate::gzip_decompress(&g, 9_999),
        Err(Error::CountMismatch { .. })
    ));
    // zlib: bad Adler-32, FCHECK, FDICT.
    let mut z = miniz_oxide::deflate::compress_to_vec_zlib(&d, 6);
    let n = z.len();
    z[n - 1] ^= 1;
    assert!(matches!(
        deflate::zlib_decompress(&z, 1 << 20),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(matches!(
        deflate::zlib_decompress(&[0x78, 0x9d, 0, 0], 10),
        Err(Error::InvalidHeader { .. })
    ));
    assert!(matches!(
        deflate::zlib_decompress(&[0x78, 0xbb, 0, 0], 10),
        Err(Error::InvalidHeader { .. })
    ));
    // Raw Deflate: block type 3; a distance before the output's start; stored LEN != ~NLEN.
    assert!(matches!(
        deflate::inflate(&[0x07, 0x00], 10),
        Err(Error::InvalidHeader { .. })
    ));
    assert!(matches!(
        deflate::inflate(&[0x4b, 0x04, 0x42, 0x00], 10),
        Err(Error::InvalidHeader { .. })
    ));
    assert!(deflate::inflate(&[0x01, 0x05, 0x00, 0xfa, 0xff, 1, 2, 3, 4, 5], 10).is_ok());
    assert!(matches!(
        deflate::inflate(&[0x01, 0x05, 0x00, 0xfa, 0xfe, 1, 2, 3, 4, 5], 10),
        Err(Error::InvalidHeader { .. })
    ));
}

/// A single-member file of more than `PARALLEL_MIN_BYTES`, decoded with four threads (the
/// parallel inflater) equals its input; a flipped byte or a cut gives an error, never a panic.
#[test]
fn a_large_single_member_decodes_in_parallel() {
    let mut rng = StdRng::seed_from_u64(8);
    let mut data = text(&mut rng, 6 << 20);
    let noise: Vec<u8> = (0..(12 << 20)).map(|_| rng.random::<u8>() & 0x3f).collect();
    data.extend_from_slice(&noise);
    let file = member(&data, 6, true, false, false);
    assert!(
        file.len() >= deflate::PARALLEL_MIN_BYTES,
        "{} bytes",
        file.len()
    );
    let pool = pool_of(deflate::PARALLEL_MIN_THREADS);
    pool.install(|| {
        let out = deflate::gzip_decompress(&file, data.len()).expect("gzip");
        assert!(out == data, "parallel gunzip differs");
        assert!(deflate::gzip_decompress(&file, data.len() - 1).is_err());
        for at in [file.len() / 3, file.len() / 2, file.len() - 12] {
            let mut bad = file.clone();
            bad[at] ^= 0x10;
            assert!(
                deflate::gzip_decompress(&bad, data.len()).is_err(),
                "flip at {at}"
            );
            assert!(
                deflate::gzip_decompress(&file[..at], data.len()).is_err(),
                "cut at {at}"
            );
        }
    });
}

/// Whether a gzip header parses somewhere after offset 0 of `file`.
fn inner_header(file: &[u8]) -> bool {
    (1..file.len().saturating_sub(9))
        .any(|p| file[p..p + 3] == [0x1f, 0x8b, 8] && deflate::gzip_header(&file[p..]).is_ok())
}

#[test]
fn a_header_pattern_inside_one_member_keeps_the_parallel_decoder() {
    let mut rng = StdRng::seed_from_u64(9);
    let mut data = text(&mut rng, 7 << 20);
    // Incompressible bytes are stored as they are, so a gzip header inside them shows in the file
    // as it would inside any large compressed stream by chance.
    let mut noise = vec![0u8; 8 << 20];
    rng.fill_bytes(&mut noise);
    noise[1 << 20..(1 << 20) + 10].copy_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    data.extend_from_slice(&noise);
    let file = member(&data, 6, false, false, false);
    assert!(inner_header(&file), "no header pattern shows in the member");
    let threads = deflate::PARALLEL_MIN_THREADS;
    assert!(deflate::tries_parallel(&file, threads));
    assert!(!deflate::tries_parallel(&file, threads - 1));
    assert!(!deflate::tries_parallel(&file[..1 << 20], threads));
    let pool = pool_of(threads);
    pool.install(|| {
        let out = deflate::gzip_decompress(&file, data.len()).expect("gzip");
        assert!(out == data, "gunzip differs");
    });
}

#[test]
fn many_small_members_decode_member_by_member() {
    let mut rng = StdRng::seed_from_u64(10);
    let mut data = vec![0u8; 9 << 20];
    rng.fill_bytes(&mut data);
    let mut file = Vec::new();
    for piece in data.chunks(64 << 10) {
        file.extend(member(piece, 1, false, false, false));
    }
    assert!(file.len() >= deflate::PARALLEL_MIN_BYTES, "{}", file.len());
    assert!(!deflate::tries_parallel(&file, 16));
    let pool = pool_of(deflate::PARALLEL_MIN_THREADS);
    pool.install(|| {
        let out = deflate::gzip_decompress(&file, data.len()).expect("gzip");
        assert!(out == data, "gunzip differs");
    });
}

/// A rayon pool of `threads` threads, so a test sees the parallel decoder whatever the machine.
fn pool_of(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool")
}
