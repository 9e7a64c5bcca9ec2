//! Deferred integer decodes ([`tessera_gpu::Gpu::defer_decodes`]): columns of every codec and
//! logical type (plain chunks among them) decoded by one launch of `int_decode_jobs`, equal to
//! the CPU reference decoder and to the same columns decoded one by one; a corrupt chunk in one
//! of them fails that column alone, with the error the undeferred decode gives. Its own test
//! binary: it counts the process's launches.

mod common;

use common::*;
use rand::Rng;
use tessera_codecs::column;
use tessera_format::{CodecId, LogicalType};
use tessera_gpu::TraceCounts;

const POISON: u8 = 0xA5;

/// A column's chunks: codec, payload, value count.
type Chunks = Vec<(CodecId, Vec<u8>, u32)>;

/// A column of `ty`: 1-3 chunks of any codec (plain included), a few hundred to a few
/// thousand values each, so that a dozen such columns fit one wave of the GPU.
fn column_of(rng: &mut rand::rngs::StdRng, ty: LogicalType, codec_hint: usize) -> Chunks {
    let k = rng.random_range(1..4);
    (0..k)
        .map(|i| {
            let n = rng.random_range(0..5000usize);
            let shape = any_shape(rng);
            let raw = values(rng, ty, n, shape);
            let codec = if rng.random_bool(0.1) {
                CodecId::Plain
            } else {
                INT_CODECS[(codec_hint + i) % 3]
            };
            let mut payload = Vec::new();
            column::encode_chunk(ty, Some(codec), &raw, &mut payload).expect("encodes");
            (codec, payload, n as u32)
        })
        .collect()
}

#[test]
fn deferred_decodes_of_every_codec_and_type_go_out_in_one_launch() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for round in 0..4 {
        // Every integer type, each codec first in some column; one column gets a corrupt chunk
        // in the last round.
        let columns: Vec<(LogicalType, Chunks)> = LogicalType::INTEGERS
            .iter()
            .enumerate()
            .map(|(i, &ty)| (ty, column_of(&mut rng, ty, i + round)))
            .collect();
        let corrupt = (round == 3).then(|| rng.random_range(0..columns.len()));
        let mut columns = columns;
        if let Some(c) = corrupt {
            // A block_starts entry past the payload in the column's first coded chunk (or none
            // when the column drew only plain or empty chunks).
            if let Some((_, p, _)) = columns[c]
                .1
                .iter_mut()
                .find(|(codec, p, n)| *codec != CodecId::Plain && *n > 600 && p.len() > 24)
            {
                p[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
            }
        }
        let refs: Vec<Vec<tessera_gpu::ChunkRef<'_>>> =
            columns.iter().map(|(_, c)| chunk_refs(c)).collect();
        let cols: Vec<tessera_gpu::DeviceColumn> = columns
            .iter()
            .zip(&refs)
            .map(|((ty, _), r)| gpu.upload_column(*ty, r).expect("headers pass"))
            .collect();
        let mut outs: Vec<_> = cols
            .iter()
            .map(|c| {
                let mut o = gpu
                    .alloc::<u8>(c.decoded_bytes() as usize + 64)
                    .expect("alloc");
                gpu.fill_bytes(&mut o, POISON).expect("poison");
                o
            })
            .collect();
        gpu.synchronize().expect("sync");

        let before = TraceCounts::now();
        let deferred = gpu.defer_decodes().expect("defer");
        for (c, o) in cols.iter().zip(outs.iter_mut()) {
            gpu.enqueue_decode(c, o).expect("queued");
        }
        let queued = TraceCounts::now();
        assert_eq!(
            queued.launches, before.launches,
            "round {round}: a deferred decode launched before the flush"
        );
        deferred.flush().expect("flush");
        let sent = TraceCounts::now();
        // The jobs (one per codec of a column) in launches of up to 16, then one copy list
        // (a launch, or a single device copy) for the plain chunks; decoded one by one, the
        // columns take a launch per job.
        let jobs: usize = columns
            .iter()
            .map(|(_, chunks)| {
                INT_CODECS
                    .iter()
                    .filter(|&&codec| chunks.iter().any(|(c, _, n)| *c == codec && *n > 0))
                    .count()
            })
            .sum();
        let has_plain = columns.iter().any(|(_, chunks)| {
            chunks
                .iter()
                .any(|(c, _, n)| *c == CodecId::Plain && *n > 0)
        });
        let launches = sent.launches - queued.launches;
        let copies = sent.device_to_device - queued.device_to_device;
        let job_launches = jobs.div_ceil(16) as u64;
        assert!(
            launches + copies == job_launches + u64::from(has_plain) && launches >= job_launches,
            "round {round}: {launches} launches and {copies} device copies for {jobs} jobs \
             (plain chunks: {has_plain})"
        );

        for (i, ((ty, chunks), (c, o))) in columns.iter().zip(cols.iter().zip(&outs)).enumerate() {
            let verdict = gpu.finish_decode(c, Some(&refs[i]));
            // The same column decoded alone, undeferred: the reference verdict.
            let mut alone = gpu
                .alloc::<u8>(c.decoded_bytes() as usize + 64)
                .expect("alloc");
            gpu.enqueue_decode(c, &mut alone).expect("queued");
            let reference = gpu.finish_decode(c, Some(&refs[i]));
            match (&verdict, &reference) {
                (Ok(()), Ok(())) => {}
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "round {round} column {i}");
                    assert_eq!(Some(i), corrupt, "round {round}: column {i} failed: {a}");
                    continue;
                }
                _ => panic!("round {round} column {i}: deferred {verdict:?}, alone {reference:?}"),
            }
            let expected = cpu_decoded(*ty, chunks);
            let mut back = vec![0u8; expected.len() + 64];
            gpu.download(o, &mut back).expect("download");
            assert!(
                back[..expected.len()] == expected[..],
                "round {round} column {i} ({ty:?}): differs from the CPU"
            );
            assert!(
                back[expected.len()..].iter().all(|&b| b == POISON),
                "round {round} column {i}: wrote past the column"
            );
        }
    }
}
