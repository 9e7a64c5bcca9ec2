//! Bitmap indexes against a plain scan: every predicate, ANDed across two columns, on equality
//! and range indexes, signed and unsigned types, sizes across piece edges; and the file round
//! trip (write, read, same answers) with a damaged file failing cleanly.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use tessera_format::container::Container;
use tessera_format::LogicalType;
use tessera_query::index::{key_of, value_of, ColumnIndex, Index, Predicate, CHUNK_BITS};

fn raw_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn raw_u16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn matches(p: &Predicate, v: i128) -> bool {
    match p {
        Predicate::In(list) => list.contains(&v),
        Predicate::Range(lo, hi) => *lo <= v && v <= *hi,
    }
}

fn scan(a: &[i32], b: &[u16], pa: &Predicate, pb: &Predicate) -> Vec<u64> {
    (0..a.len())
        .filter(|&r| matches(pa, a[r] as i128) && matches(pb, b[r] as i128))
        .map(|r| r as u64)
        .collect()
}

fn pred() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        proptest::collection::vec(-70i128..70, 0..5).prop_map(Predicate::In),
        (-80i128..80, 0i128..60).prop_map(|(lo, span)| Predicate::Range(lo, lo + span)),
    ]
}

fn check(a: &[i32], b: &[u16], pa: &Predicate, pb: &Predicate, max_distinct: usize) {
    let ia = ColumnIndex::build("a", LogicalType::I32, &raw_i32(a), max_distinct, 7).unwrap();
    let ib = ColumnIndex::build("b", LogicalType::U16, &raw_u16(b), max_distinct, 5).unwrap();
    let index = Index {
        columns: vec![ia, ib],
    };
    let sel = index
        .select(&[("a", pa.clone()), ("b", pb.clone())])
        .unwrap();
    let want = scan(a, b, pa, pb);
    assert_eq!(sel.count(), want.len() as u64);
    assert_eq!(sel.row_ids().collect::<Vec<_>>(), want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn equality_and_range_indexes_match_a_scan(
        a in proptest::collection::vec(-60i32..60, 0..3000),
        seed in any::<u64>(),
        pa in pred(),
        pb in pred(),
        max_distinct in prop_oneof![Just(1000usize), Just(8usize)],
    ) {
        let b: Vec<u16> = (0..a.len()).map(|i| ((seed >> (i % 48)) as u16 ^ i as u16) % 50).collect();
        check(&a, &b, &pa, &pb, max_distinct);
    }
}

#[test]
fn pieces_past_chunk_bits() {
    let n = CHUNK_BITS as usize + 1000;
    let a: Vec<i32> = (0..n).map(|i| (i % 97) as i32 - 40).collect();
    let b: Vec<u16> = (0..n).map(|i| (i / 1000 % 13) as u16).collect();
    for (pa, pb) in [
        (Predicate::In(vec![-40, 3, 56]), Predicate::Range(0, 12)),
        (Predicate::Range(-5, 5), Predicate::In(vec![12])),
    ] {
        for md in [1000, 10] {
            check(&a, &b, &pa, &pb, md);
        }
    }
}

#[test]
fn keys_keep_order_and_values() {
    for v in [i32::MIN, -1, 0, 1, i32::MAX] {
        let k = key_of(LogicalType::I32, &v.to_le_bytes());
        assert_eq!(value_of(LogicalType::I32, k), v as i128);
    }
    let k = |v: i32| key_of(LogicalType::I32, &v.to_le_bytes());
    assert!(k(-5) < k(-1) && k(-1) < k(0) && k(0) < k(7));
}

#[test]
fn index_file_round_trip_and_damage() {
    let a: Vec<i32> = (0..5000).map(|i| (i * 7919 % 300) - 150).collect();
    let b: Vec<u16> = (0..5000).map(|i| (i % 11) as u16).collect();
    let index = Index {
        columns: vec![
            ColumnIndex::build("a", LogicalType::I32, &raw_i32(&a), 100, 16).unwrap(),
            ColumnIndex::build("b", LogicalType::U16, &raw_u16(&b), 100, 16).unwrap(),
        ],
    };
    assert!(!index.columns[0].is_exact() && index.columns[1].is_exact());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.tsr");
    index.write(&path).unwrap();
    let back = Index::read(&Container::open(&path).unwrap()).unwrap();
    let preds = [
        ("a", Predicate::Range(-20, 40)),
        ("b", Predicate::In(vec![3, 4])),
    ];
    let want = scan(&a, &b, &preds[0].1, &preds[1].1);
    assert_eq!(
        back.select(&preds).unwrap().row_ids().collect::<Vec<_>>(),
        want
    );
    // A flipped payload byte is caught by the chunk checksum, never a panic.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let r = Container::open(&path).and_then(|c| Index::read(&c));
    assert!(r.is_err());
}
