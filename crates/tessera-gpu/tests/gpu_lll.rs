//! LLL on the GPU equals the CPU reference (`tessera_codecs::lll`), byte for byte, at the size
//! classes that matter (empty, one byte, segment and strip edges, multi-MB, many chunks with
//! unaligned outputs), on data that exercises every code type and stored strips (format 1.1),
//! for every kernel variant; and corrupt payloads (stored strips' lengths and flags included)
//! give exactly the CPU decoder's error. GPU tests skip with a printed reason
//! without a GPU (TESSERA_REQUIRE_GPU=1 makes that a failure); the corpus and NVRTC checks run
//! anywhere NVRTC can be loaded.

mod common;

use common::{gpu, rng};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};
use tessera_codecs::lll as cpu;
use tessera_gpu::bench_hooks::lll::{self as hooks, Variant};
use tessera_gpu::lll::{self, DeviceLll};
use tessera_gpu::Gpu;

const POISON: u8 = 0xA5;

// ---- data -----------------------------------------------------------------------------------

fn random_bytes(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill_bytes(&mut v);
    v
}

/// Words from a small vocabulary, spaces, punctuation, newlines, some indentation runs.
fn text_like(rng: &mut StdRng, n: usize) -> Vec<u8> {
    const WORDS: [&str; 24] = [
        "the",
        "strip",
        "segment",
        "of",
        "and",
        "dictionary",
        "a",
        "decoder",
        "GPU",
        "words",
        "<record id=\"",
        "\">",
        "</record>",
        "value",
        "=",
        "is",
        "to",
        "in",
        "bytes",
        "LLL",
        "compression",
        "light",
        "loss-less",
        "shared memory",
    ];
    let mut v = Vec::with_capacity(n + 32);
    while v.len() < n {
        match rng.random_range(0..40) {
            0 => v.push(b'\n'),
            1 => v.extend(std::iter::repeat_n(b' ', rng.random_range(2..40))),
            2 => v.extend_from_slice(b", "),
            3 => v.extend(std::iter::repeat_n(b'-', rng.random_range(17..300))),
            _ => {
                v.extend_from_slice(WORDS[rng.random_range(0..WORDS.len())].as_bytes());
                v.push(b' ');
            }
        }
    }
    v.truncate(n);
    v
}

/// An 8-bit grayscale image, row by row: smooth gradients plus noise, flat areas, a few
/// saturated stripes (long runs).
fn image_like(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let width = 1000 + rng.random_range(0..100);
    let (fx, fy) = (rng.random_range(1..8) as f64, rng.random_range(1..8) as f64);
    (0..n)
        .map(|i| {
            let (x, y) = ((i % width) as f64, (i / width) as f64);
            if (i / width) % 97 < 3 {
                return 255;
            }
            if (i % width) > width * 3 / 4 {
                return 40;
            }
            let base = 128.0 + 60.0 * (x / 150.0 * fx).sin() + 50.0 * (y / 90.0 * fy).cos();
            let noise = rng.random_range(-3i32..=3) as f64;
            (base + noise).clamp(0.0, 255.0) as u8
        })
        .collect()
}

/// Runs of random characters after single characters: SRL / LRL after SC, RL at strip starts.
fn runs_like(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 300);
    while v.len() < n {
        let c: u8 = rng.random();
        let len = match rng.random_range(0..4) {
            0 => 1,
            1 => rng.random_range(2..17),
            2 => rng.random_range(18..274),
            _ => rng.random_range(274..1000),
        };
        v.extend(std::iter::repeat_n(c, len));
    }
    v.truncate(n);
    v
}

/// Named inputs of one size.
fn corpus(rng: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        // Fill strips (lll.md §4b, format 1.2).
        ("zeros", vec![0u8; n]),
        // One odd byte a strip keeps the strips coded: long runs (RL, LRL).
        ("nearly one byte value", {
            let mut d = vec![0x5Au8; n];
            for b in d.iter_mut().skip(3000).step_by(32768) {
                *b = 0x5B;
            }
            d
        }),
        ("random", random_bytes(rng, n)),
        ("text", text_like(rng, n)),
        ("image", image_like(rng, n)),
        ("runs", runs_like(rng, n)),
    ]
}

fn encode(data: &[u8]) -> (Vec<u8>, cpu::CodeCounts) {
    encode_with(data, cpu::DEFAULT_SEGMENT_BYTES)
}

/// [`encode`] with segments of `segment_bytes` (`lll.md` §2).
fn encode_with(data: &[u8], segment_bytes: usize) -> (Vec<u8>, cpu::CodeCounts) {
    let mut p = Vec::new();
    let counts = cpu::encode_with_segment_bytes(data, &mut p, segment_bytes)
        .expect("CPU encoder accepts the data");
    (p, counts)
}

// ---- checks ---------------------------------------------------------------------------------

/// GPU `decode` equals the CPU decoder's output on `data`'s encoding.
fn check_decode(gpu: &Gpu, what: &str, data: &[u8]) {
    check_decode_with(gpu, what, data, cpu::DEFAULT_SEGMENT_BYTES)
}

/// [`check_decode`] with segments of `segment_bytes`.
fn check_decode_with(gpu: &Gpu, what: &str, data: &[u8], segment_bytes: usize) {
    let (payload, _) = encode_with(data, segment_bytes);
    check_payload(gpu, what, data, &payload);
}

/// GPU `decode` of `payload`, an encoding of `data`, equals the CPU decoder's output.
fn check_payload(gpu: &Gpu, what: &str, data: &[u8], payload: &[u8]) {
    let mut want = vec![0u8; data.len()];
    cpu::decode(payload, &mut want).expect("CPU decodes its own encoding");
    assert!(want == data, "{what}: CPU round trip");
    let mut got = vec![POISON; data.len()];
    lll::decode(gpu, payload, &mut got).unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(i) = (0..data.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what} ({} bytes): first difference at byte {i} (strip {}, offset {}): GPU {:#04x}, CPU {:#04x}",
            data.len(),
            i / cpu::STRIP_BYTES,
            i % cpu::STRIP_BYTES,
            got[i],
            want[i]
        );
    }
}

/// The outcome of a decode, comparable between CPU and GPU: the bytes or the error's Debug text
/// (every field: variant, offsets, expected and found values).
fn outcome(r: tessera_format::Result<()>, out: &[u8]) -> Result<Vec<u8>, String> {
    r.map(|()| out.to_vec()).map_err(|e| format!("{e:?}"))
}

/// GPU and CPU agree on possibly corrupt bytes that should decode to `n` bytes.
fn check_same_outcome(gpu: &Gpu, what: &str, payload: &[u8], n: usize) -> bool {
    let mut c = vec![0u8; n];
    let want = outcome(cpu::decode(payload, &mut c), &c);
    let mut g = vec![POISON; n];
    let got = outcome(lll::decode(gpu, payload, &mut g), &g);
    match (&want, &got) {
        (Ok(a), Ok(b)) => assert!(a == b, "{what}: both decode, outputs differ"),
        _ => assert_eq!(got, want, "{what}"),
    }
    want.is_err()
}

// ---- tests ----------------------------------------------------------------------------------

#[test]
fn lll_kernels_compile_with_nvrtc() {
    use tessera_gpu::kernels::{compile, nvrtc_available, Module};
    if let Err(e) = nvrtc_available() {
        if std::env::var("TESSERA_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("TESSERA_REQUIRE_NVRTC=1 but {e}");
        }
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "skipped: {e}");
        return;
    }
    for arch in ["sm_90", "sm_80"] {
        let ptx = compile(Module::Lll, arch).unwrap_or_else(|e| panic!("{e}"));
        let text = ptx.to_src();
        for v in Variant::ALL {
            let name = format!("lll_decode_{}", v.name());
            assert!(text.contains(&name), "{name} missing for {arch}");
        }
    }
}

#[test]
fn corpus_exercises_every_code_type() {
    // Runs anywhere: the GPU tests below are only as good as the codes their data contains.
    let mut r = rng();
    let mut total = cpu::CodeCounts::default();
    for (_, data) in corpus(&mut r, 3 * cpu::STRIP_BYTES + 777) {
        let (_, c) = encode(&data);
        total.sc += c.sc;
        total.rl += c.rl;
        total.si += c.si;
        total.li += c.li;
        total.srl += c.srl;
        total.lrl += c.lrl;
        total.stored += c.stored;
        total.fill += c.fill;
    }
    for (name, n) in [
        ("SC", total.sc),
        ("RL", total.rl),
        ("SI", total.si),
        ("LI", total.li),
        ("SRL", total.srl),
        ("LRL", total.lrl),
        ("stored strip", total.stored),
        ("fill strip", total.fill),
    ] {
        assert!(n > 0, "no {name} code in the corpus: {total:?}");
    }
}

#[test]
fn gpu_equals_cpu_at_edge_sizes() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let sizes = [
        0usize, 1, 2, 17, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097,
        8191, 8192, 8193, 28_673, 32_767, 32_768, 32_769, 65_536, 65_537, 100_003,
    ];
    for n in sizes {
        for (name, data) in corpus(&mut r, n) {
            check_decode(gpu, &format!("{name}, {n} bytes"), &data);
        }
    }
}

#[test]
fn gpu_equals_cpu_for_every_segment_size() {
    // lll.md §2, §3 (format 1.3): each size's own segment edges, and one launch over chunks of
    // all four sizes (the kernel takes segment_bytes per strip), unaligned outputs included.
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let mut payloads = Vec::new();
    let mut datas = Vec::new();
    for sb in cpu::SEGMENT_SIZES {
        for n in [
            1usize,
            511,
            513,
            sb - 1,
            sb + 1,
            3 * sb + 7,
            32_769,
            100_003,
        ] {
            for (name, data) in corpus(&mut r, n) {
                check_decode_with(
                    gpu,
                    &format!("{name}, {n} bytes, segments of {sb}"),
                    &data,
                    sb,
                );
            }
        }
        let data = image_like(&mut r, 70_001 + sb);
        payloads.push(encode_with(&data, sb).0);
        datas.push(data);
        let data = text_like(&mut r, 33_333);
        payloads.push(encode_with(&data, sb).0);
        datas.push(data);
    }
    let chunks: Vec<(&[u8], usize)> = payloads
        .iter()
        .zip(&datas)
        .map(|(p, d)| (p.as_slice(), d.len()))
        .collect();
    let total: usize = datas.iter().map(|d| d.len()).sum();
    let input = DeviceLll::upload(gpu, &chunks).expect("upload");
    let mut d_out = gpu.alloc::<u8>(total).expect("alloc");
    for v in Variant::ALL {
        gpu.fill_bytes(&mut d_out, POISON).expect("poison");
        hooks::enqueue_decode(gpu, &input, &mut d_out, v).expect("launch");
        lll::finish_decode(gpu, &input).unwrap_or_else(|e| panic!("variant {}: {e}", v.name()));
        let mut back = vec![0u8; total];
        gpu.download(&d_out, &mut back).expect("download");
        let want: Vec<u8> = datas.concat();
        assert!(back == want, "variant {}: mixed segment sizes", v.name());
    }
}

#[test]
fn gpu_equals_cpu_on_every_code_type() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    for (name, data) in corpus(&mut r, 5 * cpu::STRIP_BYTES + 1234) {
        let (_, c) = encode(&data);
        eprintln!("{name}: {c:?}");
        check_decode(gpu, name, &data);
    }
    // Mixtures inside one strip: every segment a different kind of data.
    let mut mixed = Vec::new();
    while mixed.len() < 8 * cpu::STRIP_BYTES {
        let n = r.random_range(1..6000);
        let part = match r.random_range(0..4) {
            0 => random_bytes(&mut r, n),
            1 => text_like(&mut r, n),
            2 => image_like(&mut r, n),
            _ => runs_like(&mut r, n),
        };
        mixed.extend(part);
    }
    check_decode(gpu, "mixed", &mixed);
}

#[test]
fn gpu_equals_cpu_on_fast_decode_payloads() {
    // The fast-decode parse (`lll.md` §9) writes other words (no 2-byte copies or runs, more
    // SC runs); the format and so the kernel are the same, for every segment size.
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    for segment_bytes in cpu::SEGMENT_SIZES {
        let opts = cpu::EncodeOptions {
            segment_bytes,
            parse: cpu::Parse::FastDecode,
        };
        for n in [1usize, 513, 32_769, 3 * cpu::STRIP_BYTES + 777] {
            for (name, data) in corpus(&mut r, n) {
                let mut payload = Vec::new();
                cpu::encode_with(&data, &mut payload, &opts).expect("encodes");
                let what = format!("{name}, {n} bytes, segments of {segment_bytes}, fast-decode");
                check_payload(gpu, &what, &data, &payload);
            }
        }
    }
}

/// One strip of `L = 8192` bytes coded by hand (`lll.md` §4, §5): the first 4096 bytes as SC
/// words, then segment 1 as `words` (`Ok(ch)` an SC, `Err((t, l))` an SI), so a test controls
/// where each step of the kernel starts and how many bytes it writes.
fn hand_strip(head: &[u8], words: &[Result<u8, (u16, u16)>]) -> Vec<u8> {
    assert_eq!(head.len(), 4096);
    let counts = [512u16, 512, 1024, 2048, words.len() as u16];
    let mut ids = Vec::new();
    let mut array = head.to_vec();
    ids.resize(4096, false);
    for w in words {
        match *w {
            Ok(ch) => {
                ids.push(false);
                array.push(ch);
            }
            Err((t, l)) => {
                ids.push(true);
                array.extend_from_slice(&(t | l << 12).to_le_bytes());
            }
        }
    }
    let mut p = Vec::new();
    for w in [4096u32, 8, 8192, 1, 20] {
        p.extend_from_slice(&w.to_le_bytes());
    }
    for c in counts {
        p.extend_from_slice(&c.to_le_bytes());
    }
    for byte in ids.chunks(8) {
        p.push(byte.iter().enumerate().map(|(i, &b)| (b as u8) << i).sum());
    }
    p.extend_from_slice(&array);
    p
}

#[test]
fn gpu_equals_cpu_when_a_step_starts_off_a_ring_word() {
    // A step's output [lo, hi) is shared among the threads in 4-byte ring words from lo & !3;
    // these strips make a middle step start at lo % 4 = 2 (128 threads: 512 words per step) or
    // lo % 4 = 1 (256 threads: 1024 words) and write just under a multiple of 4 * threads
    // bytes, so a share size computed from hi - lo instead of hi - (lo & !3) misses the last
    // byte (the bug the 100 kB image data first showed).
    let mut r = rng();
    let head = random_bytes(&mut r, 4096);
    let mut words = Vec::new();
    let sc = |r: &mut StdRng| Ok(r.random::<u8>());
    // Step 1 (128 threads): 511 SC + one 3-byte SI = 514 bytes.
    words.extend((0..511).map(|_| sc(&mut r)));
    words.push(Err((r.random_range(0..4000), 1)));
    // Step 2: 68 16-byte SIs, one 4-byte SI and 443 SC words = 512 words, 1535 bytes.
    let mut step2: Vec<Result<u8, (u16, u16)>> = (0..443).map(|_| sc(&mut r)).collect();
    step2.extend((0..68).map(|_| Err((r.random_range(0..4000), 14))));
    step2.push(Err((r.random_range(0..4000), 2)));
    // Mix the order; the byte count of the step stays 1535.
    for i in (1..step2.len()).rev() {
        step2.swap(i, r.random_range(0..=i));
    }
    words.extend(step2);
    // The rest of the segment: 4096 - 514 - 1535 = 2047 SC words.
    words.extend((0..2047).map(|_| sc(&mut r)));
    let payload = hand_strip(&head, &words);
    let mut want = vec![0u8; 8192];
    cpu::decode_reference(&payload, &mut want).expect("the hand-made strip is valid");
    assert_eq!(&want[..4096], &head[..]);
    let Some(gpu) = gpu() else { return };
    // Every variant, alone and as the second chunk after a 1-byte one (unaligned output).
    let tiny = encode(&[7u8]).0;
    let input = DeviceLll::upload(gpu, &[(&tiny, 1), (&payload, 8192)]).expect("upload");
    let mut d_out = gpu.alloc::<u8>(8193).expect("alloc");
    for v in Variant::ALL {
        gpu.fill_bytes(&mut d_out, POISON).expect("poison");
        hooks::enqueue_decode(gpu, &input, &mut d_out, v).expect("launch");
        lll::finish_decode(gpu, &input).unwrap_or_else(|e| panic!("variant {}: {e}", v.name()));
        let mut back = vec![0u8; 8193];
        gpu.download(&d_out, &mut back).expect("download");
        assert_eq!(back[0], 7, "variant {}", v.name());
        if let Some(i) = (0..8192).find(|&i| back[1 + i] != want[i]) {
            panic!(
                "variant {}: first difference at byte {i}: GPU {:#04x}, CPU {:#04x}",
                v.name(),
                back[1 + i],
                want[i]
            );
        }
    }
    let mut got = vec![POISON; 8192];
    lll::decode(gpu, &payload, &mut got).expect("GPU decode");
    assert!(got == want, "lll::decode differs from the CPU");
}

#[test]
fn gpu_equals_cpu_on_a_full_chunk() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let n = tessera_format::MAX_CHUNK_VALUES as usize; // 16 MiB, 512 strips
    check_decode(gpu, "image, 16 MiB", &image_like(&mut r, n));
    check_decode(gpu, "text, 16 MiB - 5", &text_like(&mut r, n - 5));
    check_decode(gpu, "random, 3 MiB", &random_bytes(&mut r, 3 << 20));
}

#[test]
fn many_chunks_device_resident_every_variant() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    // Chunk lengths that are not multiples of 16 put later outputs off 16-byte alignment.
    let mut data = Vec::new();
    let mut lens = Vec::new();
    for k in 0..12 {
        let n = match k % 4 {
            0 => r.random_range(1..200_000),
            1 => tessera_format::MAX_CHUNK_VALUES as usize - r.random_range(0..17),
            2 => r.random_range(1..40),
            _ => 32_768 * r.random_range(1..9),
        };
        let part = match k % 3 {
            0 => image_like(&mut r, n),
            1 => text_like(&mut r, n),
            _ => runs_like(&mut r, n),
        };
        data.extend_from_slice(&part);
        lens.push(n);
    }
    let mut payloads = Vec::new();
    let mut at = 0;
    for &n in &lens {
        payloads.push(encode(&data[at..at + n]).0);
        at += n;
    }
    let refs: Vec<(&[u8], usize)> = payloads
        .iter()
        .zip(&lens)
        .map(|(p, &n)| (p.as_slice(), n))
        .collect();
    let input = DeviceLll::upload(gpu, &refs).expect("upload");
    assert_eq!(input.out_len(), data.len());
    let mut d_out = gpu.alloc::<u8>(data.len() + 64).expect("alloc");
    for v in Variant::ALL {
        gpu.fill_bytes(&mut d_out, POISON).expect("poison");
        hooks::enqueue_decode(gpu, &input, &mut d_out, v).expect("launch");
        lll::finish_decode(gpu, &input).unwrap_or_else(|e| panic!("variant {}: {e}", v.name()));
        let mut back = vec![0u8; data.len() + 64];
        gpu.download(&d_out, &mut back).expect("download");
        if let Some(i) = (0..data.len()).find(|&i| back[i] != data[i]) {
            panic!("variant {}: first difference at byte {i}", v.name());
        }
        assert!(
            back[data.len()..].iter().all(|&b| b == POISON),
            "variant {} wrote past the output",
            v.name()
        );
    }
    lll::decode_device(gpu, &input, &mut d_out).expect("decode_device");
}

/// The Arrow table writer's binary fields: a bytes column of many 1,024-byte chunks (one short
/// strip each, not the last of the batch) of short byte sequences. Every variant decodes the
/// batch twice from the same device input, so a kernel that wrote into its input fails the
/// second pass.
#[test]
fn many_small_chunks_decode_twice_from_one_input() {
    let Some(gpu) = gpu() else { return };
    let mut data = Vec::new();
    for i in 0..5000usize {
        if i % 6 != 4 {
            data.extend((0..i % 37).map(|k| (i * 13 + k) as u8));
        }
    }
    let mut r = rng();
    data.extend_from_slice(&text_like(&mut r, 20_000));
    let lens: Vec<usize> = data.chunks(1024).map(<[u8]>::len).collect();
    let payloads: Vec<Vec<u8>> = data.chunks(1024).map(|c| encode(c).0).collect();
    let refs: Vec<(&[u8], usize)> = payloads
        .iter()
        .zip(&lens)
        .map(|(p, &n)| (p.as_slice(), n))
        .collect();
    let input = DeviceLll::upload(gpu, &refs).expect("upload");
    let mut d_out = gpu.alloc::<u8>(data.len() + 64).expect("alloc");
    for v in Variant::ALL {
        for pass in 0..2 {
            gpu.fill_bytes(&mut d_out, POISON).expect("poison");
            hooks::enqueue_decode(gpu, &input, &mut d_out, v).expect("launch");
            lll::finish_decode(gpu, &input)
                .unwrap_or_else(|e| panic!("variant {} pass {pass}: {e}", v.name()));
            let mut back = vec![0u8; data.len() + 64];
            gpu.download(&d_out, &mut back).expect("download");
            if let Some(i) = (0..data.len()).find(|&i| back[i] != data[i]) {
                panic!(
                    "variant {} pass {pass}: first difference at byte {i}",
                    v.name()
                );
            }
            assert!(
                back[data.len()..].iter().all(|&b| b == POISON),
                "variant {} wrote past the output",
                v.name()
            );
        }
    }
}

#[test]
fn truncated_payloads_give_the_cpu_error() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let data = text_like(&mut r, 2 * cpu::STRIP_BYTES + 999);
    let (payload, _) = encode(&data);
    let mut cuts: Vec<usize> = (0..64).collect();
    cuts.extend((0..200).map(|_| r.random_range(0..payload.len())));
    cuts.push(payload.len() - 1);
    for cut in cuts {
        let failed = check_same_outcome(gpu, &format!("cut at {cut}"), &payload[..cut], data.len());
        assert!(failed, "a payload cut at {cut} decoded");
    }
    // One byte too many.
    let mut long = payload.clone();
    long.push(0);
    assert!(check_same_outcome(gpu, "one extra byte", &long, data.len()));
    // The wrong output length.
    check_same_outcome(gpu, "length + 1", &payload, data.len() + 1);
    check_same_outcome(gpu, "length - 1", &payload, data.len() - 1);
}

#[test]
fn corrupt_bytes_give_the_cpu_error_or_the_cpu_output() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    for (name, data) in corpus(&mut r, 3 * cpu::STRIP_BYTES + 4321) {
        let (payload, _) = encode(&data);
        let strips = data.len().div_ceil(cpu::STRIP_BYTES);
        let dir_end = cpu::HEADER_BYTES + 4 * strips;
        let strip1 = (u32::from_le_bytes(payload[20..24].try_into().expect("4 bytes"))
            & cpu::STRIP_OFFSET_MASK) as usize;
        // Every byte of the header and directory, the first strip's word counts (a fill
        // strip's payload ends sooner), and random bytes of the identifier blocks and word
        // arrays.
        let mut spots: Vec<usize> =
            (0..(dir_end + 2 * cpu::MAX_STRIP_SEGMENTS).min(payload.len())).collect();
        spots.extend((0..300).map(|_| r.random_range(dir_end..payload.len())));
        spots.extend((0..100).map(|_| r.random_range(strip1..payload.len())));
        let mut failures = 0;
        for &at in &spots {
            let mut p = payload.clone();
            let flip = match r.random_range(0..3) {
                0 => 1u8 << r.random_range(0..8),
                1 => 0xFF,
                _ => r.random_range(1..=255u8),
            };
            p[at] ^= flip;
            if check_same_outcome(
                gpu,
                &format!("{name}: byte {at} ^ {flip:#04x}"),
                &p,
                data.len(),
            ) {
                failures += 1;
            }
        }
        eprintln!("{name}: {failures} of {} corruptions rejected", spots.len());
        assert!(failures > 0, "{name}: no corruption was rejected");
    }
}

#[test]
fn a_corrupt_chunk_among_good_ones_gives_its_cpu_error() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let datas: Vec<Vec<u8>> = (0..4).map(|_| text_like(&mut r, 100_000)).collect();
    let mut payloads: Vec<Vec<u8>> = datas.iter().map(|d| encode(d).0).collect();
    // Break a word of chunk 2's second strip: its last byte becomes a long head's missing c.
    let p = &mut payloads[2];
    let s1 = (u32::from_le_bytes(p[20..24].try_into().expect("4 bytes")) & cpu::STRIP_OFFSET_MASK)
        as usize;
    let s2 = (u32::from_le_bytes(p[24..28].try_into().expect("4 bytes")) & cpu::STRIP_OFFSET_MASK)
        as usize;
    let mut found = false;
    for at in (s1..s2).rev().take(2000) {
        let mut q = p.clone();
        q[at] ^= 0x40;
        let mut out = vec![0u8; 100_000];
        if cpu::decode(&q, &mut out).is_err() {
            *p = q;
            found = true;
            break;
        }
    }
    assert!(found, "no single-bit corruption in strip 1 failed");
    let mut want = vec![0u8; 100_000];
    let want = format!(
        "{:?}",
        cpu::decode(&payloads[2], &mut want).expect_err("corrupt")
    );
    let refs: Vec<(&[u8], usize)> = payloads.iter().map(|p| (p.as_slice(), 100_000)).collect();
    let input = DeviceLll::upload(gpu, &refs).expect("the directories are intact");
    let mut d_out = gpu.alloc::<u8>(400_000).expect("alloc");
    let got = lll::decode_device(gpu, &input, &mut d_out).expect_err("chunk 2 is corrupt");
    assert_eq!(format!("{got:?}"), want);
}

// ---- stored strips (format 1.1, lll.md §4a) ------------------------------------------------

/// Strips of different kinds back to back: random (stored), text and image (coded), runs, a
/// random tail (stored, short), so stored and coded strips alternate inside one chunk.
fn mixed_stored(rng: &mut StdRng) -> Vec<u8> {
    let mut d = random_bytes(rng, cpu::STRIP_BYTES);
    d.extend(text_like(rng, cpu::STRIP_BYTES));
    d.extend(random_bytes(rng, cpu::STRIP_BYTES));
    d.extend(random_bytes(rng, cpu::STRIP_BYTES));
    d.extend(image_like(rng, cpu::STRIP_BYTES));
    d.extend(runs_like(rng, cpu::STRIP_BYTES));
    d.extend(random_bytes(rng, 3333));
    d
}

/// Fill (zeros), coded, fill (0xC3), stored, a short fill of 2 + 7 k bytes: lll.md §4b next to
/// the other strip kinds.
fn mixed_fill(rng: &mut StdRng, k: usize) -> Vec<u8> {
    let mut d = vec![0u8; cpu::STRIP_BYTES];
    d.extend(text_like(rng, cpu::STRIP_BYTES));
    d.extend(std::iter::repeat_n(0xC3u8, cpu::STRIP_BYTES));
    d.extend(random_bytes(rng, cpu::STRIP_BYTES));
    d.extend(std::iter::repeat_n(0x3Cu8, 2 + 7 * k));
    d
}

#[test]
fn fill_strips_are_in_the_test_data() {
    // Runs anywhere: the fill-strip GPU tests need fill, coded and stored strips mixed.
    let mut r = rng();
    let (p, c) = encode(&mixed_fill(&mut r, 3));
    let kinds: Vec<u32> = (0..5).map(|k| entry(&p, k) >> 30).collect();
    assert_eq!(kinds, [1, 0, 1, 2, 1], "{c:?}");
}

#[test]
fn corrupt_fill_strips_give_the_cpu_error() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let data = mixed_fill(&mut r, 3);
    let n = data.len();
    let (good, _) = encode(&data);
    check_decode(gpu, "fill strips", &data);
    // The last strip (fill) with no byte and with two.
    let mut cases = last_strip_cut_and_grown(&good, "fill");
    for k in 0..5 {
        let e = entry(&good, k);
        // The fill flag flipped (a fill strip read as coded, a coded or stored one as fill),
        // both kind bits set, the start moved by one.
        for (what, v) in [
            ("fill flag flipped", e ^ cpu::FILL_STRIP),
            ("both kind bits", e | cpu::FILL_STRIP | cpu::STORED_STRIP),
            ("start one byte back", e.wrapping_sub(1)),
            ("start one byte on", e + 1),
        ] {
            if k == 0 && what.starts_with("start") {
                continue; // strip 0's start is fixed: the host rejects a moved one
            }
            let mut p = good.clone();
            set_entry(&mut p, k, v);
            cases.push((format!("strip {k} {what}"), p));
        }
    }
    assert_all_rejected(gpu, "fill-strip", &cases, n);
    // A changed fill byte changes the output, not the validity.
    let mut p = good.clone();
    let s2 = (entry(&good, 2) & cpu::STRIP_OFFSET_MASK) as usize;
    p[s2] ^= 0x5A;
    assert!(!check_same_outcome(gpu, "a fill strip's byte", &p, n));
}

/// `good` with its last byte cut and with one byte appended: the last strip one byte short and
/// one byte long.
fn last_strip_cut_and_grown(good: &[u8], kind: &str) -> Vec<(String, Vec<u8>)> {
    let mut long = good.to_vec();
    long.push(good[good.len() - 1]);
    vec![
        (
            format!("last {kind} strip short"),
            good[..good.len() - 1].to_vec(),
        ),
        (format!("last {kind} strip long"), long),
    ]
}

/// GPU and CPU give the same error on every case, and every case fails.
fn assert_all_rejected(gpu: &Gpu, what: &str, cases: &[(String, Vec<u8>)], n: usize) {
    let failed: usize = cases
        .iter()
        .map(|(c, p)| usize::from(check_same_outcome(gpu, c, p, n)))
        .sum();
    eprintln!("{failed} of {} {what} corruptions rejected", cases.len());
    assert_eq!(
        failed,
        cases.len(),
        "{what}: some corruptions were accepted"
    );
}

fn entry(p: &[u8], k: usize) -> u32 {
    u32::from_le_bytes(p[16 + 4 * k..20 + 4 * k].try_into().expect("4 bytes"))
}

fn set_entry(p: &mut [u8], k: usize, v: u32) {
    p[16 + 4 * k..20 + 4 * k].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn stored_strips_are_in_the_test_data() {
    // Runs anywhere: the stored-strip GPU tests below need stored and coded strips mixed.
    let mut r = rng();
    let data = mixed_stored(&mut r);
    let (p, c) = encode(&data);
    let flags: Vec<bool> = (0..data.len().div_ceil(cpu::STRIP_BYTES))
        .map(|k| entry(&p, k) & cpu::STORED_STRIP != 0)
        .collect();
    assert_eq!(
        flags,
        [true, false, true, true, false, false, true],
        "{c:?}"
    );
}

#[test]
fn gpu_equals_cpu_on_stored_strips() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    // Random bytes: every strip stored, at edge sizes.
    for n in [
        1usize,
        2,
        15,
        16,
        17,
        4097,
        32_767,
        32_768,
        32_769,
        3 * 32_768 + 5,
    ] {
        check_decode(
            gpu,
            &format!("random (stored), {n} bytes"),
            &random_bytes(&mut r, n),
        );
    }
    check_decode(gpu, "stored and coded strips", &mixed_stored(&mut r));
    // Device-resident, many chunks: outputs and payloads at every alignment mod 16 (1-byte and
    // 17-byte stored chunks shift everything after them), every variant; fill strips (format
    // 1.2) among them, so fills start and end off 16-byte boundaries.
    let mut data = Vec::new();
    let mut lens = Vec::new();
    for k in 0..12 {
        let part = match k % 6 {
            0 => random_bytes(&mut r, 1 + k),
            1 => mixed_stored(&mut r),
            2 => random_bytes(&mut r, 17),
            3 => random_bytes(&mut r, 32_768 * 2 + k),
            4 => mixed_fill(&mut r, k),
            _ => text_like(&mut r, 40_000 + k),
        };
        lens.push(part.len());
        data.extend(part);
    }
    let mut payloads = Vec::new();
    let mut at = 0;
    for &n in &lens {
        payloads.push(encode(&data[at..at + n]).0);
        at += n;
    }
    let refs: Vec<(&[u8], usize)> = payloads
        .iter()
        .zip(&lens)
        .map(|(p, &n)| (p.as_slice(), n))
        .collect();
    let input = DeviceLll::upload(gpu, &refs).expect("upload");
    let mut d_out = gpu.alloc::<u8>(data.len() + 64).expect("alloc");
    for v in Variant::ALL {
        gpu.fill_bytes(&mut d_out, POISON).expect("poison");
        hooks::enqueue_decode(gpu, &input, &mut d_out, v).expect("launch");
        lll::finish_decode(gpu, &input).unwrap_or_else(|e| panic!("variant {}: {e}", v.name()));
        let mut back = vec![0u8; data.len() + 64];
        gpu.download(&d_out, &mut back).expect("download");
        if let Some(i) = (0..data.len()).find(|&i| back[i] != data[i]) {
            panic!("variant {}: first difference at byte {i}", v.name());
        }
        assert!(
            back[data.len()..].iter().all(|&b| b == POISON),
            "variant {} wrote past the output",
            v.name()
        );
    }
}

#[test]
fn corrupt_stored_strips_give_the_cpu_error() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    let data = mixed_stored(&mut r);
    let n = data.len();
    let (good, _) = encode(&data);
    let strips = n.div_ceil(cpu::STRIP_BYTES);
    // The last strip (stored) one byte short and one byte long.
    let mut cases = last_strip_cut_and_grown(&good, "stored");
    for k in 1..strips {
        let e = entry(&good, k);
        // Strip k - 1 one byte shorter / longer (strip k's start moved), flags kept.
        for (what, v) in [("back", e - 1), ("on", e + 1)] {
            let mut p = good.clone();
            set_entry(&mut p, k, v);
            cases.push((format!("strip {k} start one byte {what}"), p));
        }
        // The stored flag flipped: coded bytes read as stored, stored bytes read as coded.
        let mut p = good.clone();
        set_entry(&mut p, k, e ^ cpu::STORED_STRIP);
        cases.push((format!("strip {k} stored flag flipped"), p));
    }
    let mut p = good.clone();
    set_entry(&mut p, 0, entry(&good, 0) ^ cpu::STORED_STRIP);
    cases.push(("strip 0 stored flag flipped".into(), p));
    // A flipped byte inside a stored strip changes the output, not the validity.
    let mut p = good.clone();
    let s0 = (entry(&good, 0) & cpu::STRIP_OFFSET_MASK) as usize;
    p[s0 + 100] ^= 0x5A;
    assert!(!check_same_outcome(gpu, "a byte of a stored strip", &p, n));
    // Every length change of a stored strip and every flag flip must fail (a moved start also
    // shortens or lengthens the strip before it, stored or coded).
    assert_all_rejected(gpu, "stored-strip", &cases, n);
}
