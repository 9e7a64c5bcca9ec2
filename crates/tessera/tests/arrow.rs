//! Arrow tables through `.tsr` files: every stored type x nulls (none, some, all) x sizes, batch
//! by batch, dictionaries, column selection, and inputs that must fail.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::{Int16Type, Int8Type};
use arrow_array::*;
use arrow_buffer::{i256, NullBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use proptest::prelude::*;
use tessera::arrow::{
    ArrowTableReader, ArrowTableWriter, ArrowWriteOptions, DictionaryChoice, FloatChoice, Role,
    RunChoice,
};
use tessera::{Engine, Error, LogicalType, TableReader};

/// How the rows of a generated column are null.
#[derive(Debug, Clone, Copy)]
enum Nulls {
    None,
    Some,
    All,
}

fn nulls(n: usize, kind: Nulls, seed: u64) -> Option<NullBuffer> {
    match kind {
        Nulls::None => None,
        Nulls::All => Some(NullBuffer::new_null(n)),
        Nulls::Some => Some(NullBuffer::from(
            (0..n)
                .map(|i| (i as u64 * 2654435761 + seed) % 7 != 3)
                .collect::<Vec<bool>>(),
        )),
    }
}

/// One column of every stored type, `n` rows, deterministic values from `seed`.
fn columns(n: usize, kind: Nulls, seed: u64) -> Vec<(Field, ArrayRef)> {
    let v = |i: usize| {
        (i as u64)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(seed)
            >> 17
    };
    let nb = |s: u64| nulls(n, kind, s);
    let nullable = !matches!(kind, Nulls::None);
    let mut out: Vec<(Field, ArrayRef)> = Vec::new();
    let mut add = |name: &str, a: ArrayRef| {
        out.push((Field::new(name, a.data_type().clone(), nullable), a));
    };
    add(
        "u8",
        Arc::new(UInt8Array::new((0..n).map(|i| v(i) as u8).collect(), nb(1))),
    );
    add(
        "u16",
        Arc::new(UInt16Array::new(
            (0..n).map(|i| v(i) as u16).collect(),
            nb(2),
        )),
    );
    add(
        "u32",
        Arc::new(UInt32Array::new(
            (0..n).map(|i| (i as u32) * 3).collect(),
            nb(3),
        )),
    );
    add(
        "u64",
        Arc::new(UInt64Array::new(
            (0..n).map(|i| v(i) << 20).collect(),
            nb(4),
        )),
    );
    add(
        "i8",
        Arc::new(Int8Array::new((0..n).map(|i| v(i) as i8).collect(), nb(5))),
    );
    add(
        "i16",
        Arc::new(Int16Array::new(
            (0..n).map(|i| (i % 100) as i16 - 50).collect(),
            nb(6),
        )),
    );
    add(
        "i32",
        Arc::new(Int32Array::new(
            (0..n).map(|i| v(i) as i32).collect(),
            nb(7),
        )),
    );
    add(
        "i64",
        Arc::new(Int64Array::new(
            (0..n).map(|i| -(v(i) as i64)).collect(),
            nb(8),
        )),
    );
    add(
        "bool",
        Arc::new(BooleanArray::new(
            (0..n).map(|i| v(i) % 3 == 0).collect(),
            nb(9),
        )),
    );
    // Float16 from its bit patterns (the `half` type is not re-exported).
    let f16_bits = UInt16Array::new((0..n).map(|i| v(i) as u16).collect(), nb(10));
    add(
        "f16",
        make_array(
            f16_bits
                .to_data()
                .into_builder()
                .data_type(DataType::Float16)
                .build()
                .expect("f16"),
        ),
    );
    let specials = [f32::NAN, -0.0, f32::INFINITY, f32::MIN_POSITIVE];
    add(
        "f32",
        Arc::new(Float32Array::new(
            (0..n)
                .map(|i| {
                    if i % 11 == 0 {
                        specials[i % 4]
                    } else {
                        i as f32 * 0.25
                    }
                })
                .collect(),
            nb(11),
        )),
    );
    add(
        "f64",
        Arc::new(Float64Array::new(
            (0..n)
                .map(|i| f64::from_bits(v(i) ^ (i as u64) << 52))
                .collect(),
            nb(12),
        )),
    );
    add(
        "date32",
        Arc::new(Date32Array::new(
            (0..n).map(|i| 19000 + (i % 400) as i32).collect(),
            nb(13),
        )),
    );
    add(
        "date64",
        Arc::new(Date64Array::new(
            (0..n)
                .map(|i| 1_600_000_000_000 + i as i64 * 1000)
                .collect(),
            nb(14),
        )),
    );
    add(
        "ts_ns_tz",
        Arc::new(
            TimestampNanosecondArray::new(
                (0..n)
                    .map(|i| 1_700_000_000_000_000_000 + i as i64)
                    .collect(),
                nb(15),
            )
            .with_timezone("Europe/Oslo"),
        ),
    );
    add(
        "ts_s",
        Arc::new(TimestampSecondArray::new(
            (0..n).map(|i| i as i64 * 60).collect(),
            nb(16),
        )),
    );
    add(
        "time32_ms",
        Arc::new(Time32MillisecondArray::new(
            (0..n).map(|i| (i % 86_400_000) as i32).collect(),
            nb(17),
        )),
    );
    add(
        "time64_us",
        Arc::new(Time64MicrosecondArray::new(
            (0..n).map(|i| i as i64 * 7).collect(),
            nb(18),
        )),
    );
    add(
        "dur_ms",
        Arc::new(DurationMillisecondArray::new(
            (0..n).map(|i| i as i64 - 5).collect(),
            nb(19),
        )),
    );
    add(
        "dec",
        Arc::new(
            Decimal128Array::new(
                (0..n)
                    .map(|i| (v(i) % 1_000_000_000) as i128 - 500_000_000)
                    .collect(),
                nb(20),
            )
            .with_precision_and_scale(18, 2)
            .expect("decimal"),
        ),
    );
    let words = ["Oslo", "Lima", "Pune", "Zürich", "", "東京"];
    add(
        "utf8",
        Arc::new(
            StringArray::from(
                (0..n)
                    .map(|i| Some(format!("{}-{}", words[i % 6], v(i) % 1000)))
                    .collect::<Vec<_>>(),
            )
            .with_nulls_checked(nb(21)),
        ),
    );
    add(
        "large_utf8_repeats",
        Arc::new(
            LargeStringArray::from(
                (0..n)
                    .map(|i| Some(words[(v(i) % 6) as usize]))
                    .collect::<Vec<_>>(),
            )
            .with_nulls_checked(nb(22)),
        ),
    );
    add(
        "binary",
        Arc::new(
            BinaryArray::from_iter(
                (0..n)
                    .map(|i| Some([i as u8, 0, 255, (v(i) % 7) as u8][..(i % 5).min(4)].to_vec())),
            )
            .with_nulls_checked(nb(23)),
        ),
    );
    add(
        "large_binary",
        Arc::new(
            LargeBinaryArray::from(
                (0..n)
                    .map(|i| Some(&b"abcdefgh"[..i % 9]))
                    .collect::<Vec<_>>(),
            )
            .with_nulls_checked(nb(24)),
        ),
    );
    out
}

/// `with_nulls` that keeps the arrays' constructors short above.
trait WithNulls: Sized {
    fn with_nulls_checked(self, n: Option<NullBuffer>) -> Self;
}

macro_rules! with_nulls {
    ($t:ty) => {
        impl WithNulls for $t {
            fn with_nulls_checked(self, n: Option<NullBuffer>) -> Self {
                let (o, v, _) = self.into_parts();
                <$t>::try_new(o, v, n).expect("array")
            }
        }
    };
}
with_nulls!(StringArray);
with_nulls!(LargeStringArray);
with_nulls!(BinaryArray);
with_nulls!(LargeBinaryArray);

fn batch_of(cols: Vec<(Field, ArrayRef)>) -> RecordBatch {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
    let mut md = HashMap::new();
    md.insert("origin".to_owned(), "test".to_owned());
    RecordBatch::try_new(Arc::new(Schema::new_with_metadata(fields, md)), arrays).expect("batch")
}

fn write(
    path: &std::path::Path,
    schema: SchemaRef,
    batches: &[RecordBatch],
    opts: ArrowWriteOptions,
) -> tessera::Result<()> {
    let mut w = ArrowTableWriter::create(path, schema, opts)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish().map(|_| ())
}

fn read_all(path: &std::path::Path) -> RecordBatch {
    let t = TableReader::open(path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    r.read_all(&mut Engine::cpu()).expect("read")
}

fn concat(batches: &[RecordBatch]) -> RecordBatch {
    let schema = batches[0].schema();
    let cols: Vec<ArrayRef> = (0..schema.fields().len())
        .map(|c| {
            let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            concat_arrays(&parts)
        })
        .collect();
    RecordBatch::try_new(schema, cols).expect("concat")
}

/// Concatenation through `ArrayData` (arrow-select is not a dependency of these tests).
fn concat_arrays(parts: &[&dyn Array]) -> ArrayRef {
    let datas: Vec<arrow_data::ArrayData> = parts.iter().map(|a| a.to_data()).collect();
    let refs: Vec<&arrow_data::ArrayData> = datas.iter().collect();
    let total: usize = parts.iter().map(|a| a.len()).sum();
    let mut m = arrow_data::transform::MutableArrayData::new(refs, true, total);
    for (i, a) in parts.iter().enumerate() {
        m.try_extend(i, 0, a.len()).expect("extend");
    }
    make_array(m.freeze())
}

fn round_trip(
    n: usize,
    kind: Nulls,
    batches: usize,
    chunk_rows: usize,
    dictionary: DictionaryChoice,
) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let parts: Vec<RecordBatch> = (0..batches)
        .map(|b| batch_of(columns(n, kind, b as u64)))
        .collect();
    // Floats as the automatic rule stores them, then always as ALP.
    for floats in [FloatChoice::Auto, FloatChoice::Alp] {
        let opts = ArrowWriteOptions {
            chunk_rows,
            dictionary,
            floats,
            ..ArrowWriteOptions::default()
        };
        check_round_trip(
            &path,
            &parts,
            opts,
            &format!("{kind:?}, {n} rows x {batches}"),
        );
    }
}

/// Writes `parts` with `opts`, reads them back whole and in batches that cut chunks and ALP
/// vectors anywhere, and compares every column bit for bit.
fn check_round_trip(
    path: &std::path::Path,
    parts: &[RecordBatch],
    opts: ArrowWriteOptions,
    what: &str,
) {
    write(path, parts[0].schema(), parts, opts).expect("write");
    let back = read_all(path);
    let want = concat(parts);
    assert_eq!(back.schema(), want.schema());
    for (c, f) in want.schema().fields().iter().enumerate() {
        assert_eq!(
            back.column(c).to_data(),
            want.column(c).to_data(),
            "column {} ({what}, {opts:?})",
            f.name()
        );
    }
    // Batch by batch, at sizes that cut chunks anywhere, gives the same rows.
    let t = TableReader::open(path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    let mut engine = Engine::cpu();
    let got: Vec<RecordBatch> = r
        .batches(777, &mut engine)
        .expect("batches")
        .collect::<tessera::Result<_>>()
        .expect("read");
    if !got.is_empty() {
        assert_eq!(concat(&got), back);
    }
}

#[test]
fn every_type_no_nulls() {
    round_trip(3000, Nulls::None, 2, 1024, DictionaryChoice::Auto);
}

#[test]
fn every_type_some_nulls() {
    round_trip(3000, Nulls::Some, 3, 512, DictionaryChoice::Auto);
}

#[test]
fn every_type_all_nulls() {
    round_trip(1500, Nulls::All, 2, 512, DictionaryChoice::Never);
}

#[test]
fn empty_table_keeps_its_schema() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let b = batch_of(columns(10, Nulls::Some, 0));
    write(&path, b.schema(), &[], ArrowWriteOptions::default()).expect("write");
    let back = read_all(&path);
    assert_eq!(back.num_rows(), 0);
    assert_eq!(back.schema(), b.schema());
}

#[test]
fn nulls_first_seen_in_a_later_batch() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, true)]));
    let a = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int32Array::from((0..1000).collect::<Vec<i32>>()))],
    )
    .expect("a");
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]))],
    )
    .expect("b");
    let opts = ArrowWriteOptions {
        chunk_rows: 512,
        ..ArrowWriteOptions::default()
    };
    write(&path, schema, &[a.clone(), b.clone()], opts).expect("write");
    assert_eq!(read_all(&path), concat(&[a, b]));
}

#[test]
fn no_validity_column_without_nulls() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let b = batch_of(columns(2000, Nulls::None, 0));
    // Floats as bit patterns: a table without ALP fields stays a 1.3 file.
    let opts = ArrowWriteOptions {
        floats: FloatChoice::Plain,
        ..ArrowWriteOptions::default()
    };
    write(&path, b.schema(), std::slice::from_ref(&b), opts).expect("write");
    let t = TableReader::open(&path).expect("open");
    let meta = t.container().directory().table.as_ref().expect("table");
    assert!(meta
        .fields
        .iter()
        .all(|f| f.column(Role::Validity).is_none()));
    assert_eq!(t.container().version(), (1, 3));
}

#[test]
fn dictionaries_across_batches_come_back_as_dictionaries() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let mk = |words: &[Option<&str>]| {
        let mut b = StringDictionaryBuilder::<Int16Type>::new();
        for w in words {
            b.append_option(*w);
        }
        b.finish()
    };
    let d1 = mk(&[Some("a"), Some("b"), None, Some("a")]);
    let d2 = mk(&[Some("c"), Some("a"), Some("c")]);
    let schema = Arc::new(Schema::new(vec![Field::new(
        "d",
        d1.data_type().clone(),
        true,
    )]));
    let b1 = RecordBatch::try_new(schema.clone(), vec![Arc::new(d1)]).expect("b1");
    let b2 = RecordBatch::try_new(schema.clone(), vec![Arc::new(d2)]).expect("b2");
    write(
        &path,
        schema.clone(),
        &[b1, b2],
        ArrowWriteOptions::default(),
    )
    .expect("write");
    let back = read_all(&path);
    assert_eq!(back.schema(), schema);
    let d = back
        .column(0)
        .as_any()
        .downcast_ref::<DictionaryArray<Int16Type>>()
        .expect("dictionary array");
    let vals = d.downcast_dict::<StringArray>().expect("strings");
    let got: Vec<Option<&str>> = vals.into_iter().collect();
    assert_eq!(
        got,
        [
            Some("a"),
            Some("b"),
            None,
            Some("a"),
            Some("c"),
            Some("a"),
            Some("c")
        ]
    );
}

/// An all-null column dictionary-encoded has an empty dictionary: it round-trips, every key
/// null (arrow's `normalized_keys`, which the writer uses otherwise, asserts on it).
#[test]
fn empty_dictionary_round_trips() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let ty = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let schema = Arc::new(Schema::new(vec![Field::new("d", ty, true)]));
    let empty: ArrayRef = Arc::new(StringArray::from(Vec::<&str>::new()));
    let all_null = arrow_array::DictionaryArray::<arrow_array::types::Int32Type>::try_new(
        arrow_array::Int32Array::from(vec![None::<i32>; 10]),
        empty,
    )
    .expect("dictionary");
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(all_null)]).expect("batch");
    write(
        &path,
        schema,
        std::slice::from_ref(&batch),
        ArrowWriteOptions::default(),
    )
    .expect("write");
    let t = TableReader::open(&path).expect("open");
    let back = ArrowTableReader::new(&t, None)
        .expect("table")
        .read_all(&mut Engine::cpu())
        .expect("read");
    let col = back.column(0);
    assert_eq!(col.len(), 10);
    assert_eq!(col.null_count(), 10);
    assert_eq!(col.data_type(), batch.column(0).data_type());
}

#[test]
fn dictionary_outgrowing_its_keys_fails() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let words: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
    let mut b = arrow_array::builder::StringDictionaryBuilder::<Int8Type>::new();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "d",
        DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
        false,
    )]));
    let mut w = ArrowTableWriter::create(&path, schema.clone(), ArrowWriteOptions::default())
        .expect("writer");
    let mut failed = None;
    for chunk in words.chunks(100) {
        for s in chunk {
            b.append_value(s);
        }
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(b.finish())]).expect("batch");
        if let Err(e) = w.write(&batch) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("the second batch overflows Int8 keys");
    assert!(e.to_string().contains("'d'"), "{e}");
    drop(w);
    assert!(!path.exists(), "nothing is left under the name");
}

#[test]
fn auto_dictionary_for_repetitive_strings_and_not_for_unique_ones() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let n = 5000;
    let rep: StringArray = (0..n)
        .map(|i| Some(["alpha-long-word", "beta-long-word"][i % 2]))
        .collect();
    let uniq: StringArray = (0..n).map(|i| Some(format!("id-{i}"))).collect();
    let b = RecordBatch::try_from_iter([
        ("rep", Arc::new(rep) as ArrayRef),
        ("uniq", Arc::new(uniq) as ArrayRef),
    ])
    .expect("b");
    write(
        &path,
        b.schema(),
        std::slice::from_ref(&b),
        ArrowWriteOptions::default(),
    )
    .expect("write");
    let t = TableReader::open(&path).expect("open");
    let meta = t.container().directory().table.as_ref().expect("table");
    assert!(meta.fields[0].is_dictionary_encoded());
    assert!(!meta.fields[1].is_dictionary_encoded());
    assert_eq!(read_all(&path), b);
}

#[test]
fn column_selection() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let b = batch_of(columns(1000, Nulls::Some, 3));
    write(
        &path,
        b.schema(),
        std::slice::from_ref(&b),
        ArrowWriteOptions::default(),
    )
    .expect("write");
    let t = TableReader::open(&path).expect("open");
    let names = vec!["utf8".to_owned(), "i16".to_owned()];
    let r = ArrowTableReader::new(&t, Some(&names)).expect("table");
    let got = r.read_all(&mut Engine::cpu()).expect("read");
    let want = b
        .project(&[
            b.schema().index_of("utf8").expect("i"),
            b.schema().index_of("i16").expect("i"),
        ])
        .expect("p");
    assert_eq!(got.columns(), want.columns());
    let bad = vec!["nope".to_owned()];
    let e = ArrowTableReader::new(&t, Some(&bad)).expect_err("unknown column");
    assert!(e.to_string().contains("nope"));
}

#[test]
fn unsupported_types_fail_up_front_naming_the_column() {
    let dir = tempfile::tempdir().expect("dir");
    let cases: Vec<(Field, &str)> = vec![
        (
            Field::new(
                "l",
                DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
                true,
            ),
            "'l'",
        ),
        (
            Field::new(
                "s",
                DataType::Struct(vec![Field::new("a", DataType::Int32, true)].into()),
                true,
            ),
            "'s'",
        ),
        (
            Field::new("d256", DataType::Decimal256(40, 2), true),
            "'d256'",
        ),
        (
            Field::new("wide", DataType::Decimal128(30, 2), true),
            "precision at most 18",
        ),
    ];
    for (f, want) in cases {
        let path = dir.path().join("bad.tsr");
        let schema = Arc::new(Schema::new(vec![
            Field::new("ok", DataType::Int32, true),
            f,
        ]));
        let e = ArrowTableWriter::create(&path, schema, ArrowWriteOptions::default())
            .expect_err("unsupported");
        assert!(matches!(e, Error::InvalidArgument(_)));
        assert!(e.to_string().contains(want), "{e}");
        assert!(!path.exists());
    }
    let _ = i256::ZERO;
}

#[test]
fn decimal_past_its_precision_fails_naming_the_row() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let a = Decimal128Array::from(vec![1i128, i64::MAX as i128 + 1])
        .with_precision_and_scale(18, 0)
        .expect("d");
    let b = RecordBatch::try_from_iter([("m", Arc::new(a) as ArrayRef)]).expect("b");
    let e = write(
        &path,
        b.schema(),
        std::slice::from_ref(&b),
        ArrowWriteOptions::default(),
    )
    .expect_err("too wide");
    assert!(e.to_string().contains("'m' row 1"), "{e}");
    assert!(!path.exists());
}

#[test]
fn a_batch_with_another_schema_fails() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let a = RecordBatch::try_from_iter([("x", Arc::new(Int32Array::from(vec![1])) as ArrayRef)])
        .expect("a");
    let b = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef)])
        .expect("b");
    let e = write(
        &path,
        a.schema(),
        &[a.clone(), b],
        ArrowWriteOptions::default(),
    )
    .expect_err("schema change");
    assert!(e.to_string().contains("schema differs"), "{e}");
    assert!(!path.exists());
}

#[test]
fn plain_column_files_are_not_tables() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("c.tsr");
    let mut w = tessera::TableWriter::create(&path).expect("w");
    w.write_values("v", &[1u32, 2, 3], tessera::ColumnOptions::auto())
        .expect("v");
    w.finish().expect("finish");
    let t = TableReader::open(&path).expect("open");
    assert_eq!(t.container().version(), (1, 0));
    let e = ArrowTableReader::new(&t, None).expect_err("no table");
    assert!(e.to_string().contains("no table section"));
}

#[test]
fn timestamps_keep_unit_and_zone() {
    let b = batch_of(columns(10, Nulls::None, 0));
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    write(
        &path,
        b.schema(),
        std::slice::from_ref(&b),
        ArrowWriteOptions::default(),
    )
    .expect("write");
    let back = read_all(&path);
    let f = back
        .schema()
        .field_with_name("ts_ns_tz")
        .expect("f")
        .clone();
    assert_eq!(
        f.data_type(),
        &DataType::Timestamp(TimeUnit::Nanosecond, Some("Europe/Oslo".into()))
    );
    assert_eq!(
        back.schema().metadata().get("origin").map(String::as_str),
        Some("test")
    );
}

/// Boolean and validity columns whose rows stop inside a byte, just under a chunk or past one:
/// a bits chunk is full at `chunk_rows` bits, not when its bytes are there.
#[test]
fn bit_columns_ending_inside_a_byte_round_trip() {
    for (n, batches) in [(511, 1), (505, 1), (1023, 2), (513, 1), (7, 3)] {
        for kind in [Nulls::None, Nulls::Some, Nulls::All] {
            round_trip(n, kind, batches, 512, DictionaryChoice::Auto);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn round_trips_at_any_size(n in 0usize..2500, kind in 0u8..3, batches in 1usize..4, chunk in 1usize..4) {
        let kind = [Nulls::None, Nulls::Some, Nulls::All][kind as usize];
        if n == 0 {
            return Ok(());
        }
        round_trip(n, kind, batches, chunk * 512, DictionaryChoice::Auto);
    }
}

/// `testdata/v1/tables/`: tables written by the writer, decoded to the batch the test builds
/// (values from the code, not from the file), and regenerated byte for byte.
fn golden_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/tables")
}

fn golden_set() -> Vec<(&'static str, Vec<RecordBatch>)> {
    let dict = {
        let mut b = StringDictionaryBuilder::<Int8Type>::new();
        for i in 0..1500 {
            if i % 17 == 0 {
                b.append_null();
            } else {
                b.append_value(["red", "green", "blue"][i % 3]);
            }
        }
        b.finish()
    };
    let d = RecordBatch::try_from_iter([("colour", Arc::new(dict) as ArrayRef)]).expect("dict");
    vec![
        (
            "all-types-some-nulls",
            vec![batch_of(columns(1500, Nulls::Some, 7))],
        ),
        (
            "all-types-no-nulls",
            vec![batch_of(columns(1500, Nulls::None, 8))],
        ),
        ("dictionary", vec![d]),
        ("floats-alp", vec![float_batch(3000, 11)]),
        ("fixed-dictionary", vec![fixed_dictionary_batch(3000, 5)]),
        ("runs", vec![runs_batch(3000, 0, 9)]),
    ]
}

/// A table sorted by date, as flights are: a constant year (with nulls), months and days in
/// runs, a constant double and decimal, a date and a timestamp in runs, and a unique key that
/// stays plain. Rows `start..start + n` of one such table, so batches continue each other's
/// runs.
fn runs_batch(n: usize, start: usize, seed: u64) -> RecordBatch {
    let rows = start..start + n;
    let year: Int64Array = rows
        .clone()
        .map(|i| (i % 11 != 3).then_some(2013))
        .collect();
    let month: UInt8Array = rows
        .clone()
        .map(|i| Some((i / 900) as u8 % 12 + 1))
        .collect();
    let day: Int32Array = rows
        .clone()
        .map(|i| Some((i / 70) as i32 % 31 + 1))
        .collect();
    let rate: Float64Array = rows.clone().map(|_| Some(0.25)).collect();
    let price = Decimal128Array::from(
        rows.clone()
            .map(|i| (i % 5 != 0).then(|| 1_999 + (i / 1000) as i128))
            .collect::<Vec<Option<i128>>>(),
    )
    .with_precision_and_scale(10, 2)
    .expect("decimal");
    let date: Date32Array = rows
        .clone()
        .map(|i| Some(15_706 + (i / 300) as i32))
        .collect();
    let ts = TimestampSecondArray::from(
        rows.clone()
            .map(|i| 1_356_998_400 + (i / 100) as i64 * 3600)
            .collect::<Vec<i64>>(),
    )
    .with_timezone("America/New_York");
    let id: Int64Array = rows
        .map(|i| Some(((i as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as i64))
        .collect();
    RecordBatch::try_from_iter([
        ("year", Arc::new(year) as ArrayRef),
        ("month", Arc::new(month) as ArrayRef),
        ("day", Arc::new(day) as ArrayRef),
        ("rate", Arc::new(rate) as ArrayRef),
        ("price", Arc::new(price) as ArrayRef),
        ("date", Arc::new(date) as ArrayRef),
        ("ts", Arc::new(ts) as ArrayRef),
        ("id", Arc::new(id) as ArrayRef),
    ])
    .expect("batch")
}

#[test]
fn runs_chosen_for_constant_and_sorted_fields_and_read_back_plain() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    // Runs that cross batches, chunks and the batches the reader hands out.
    let parts = [runs_batch(5000, 0, 1), runs_batch(3100, 5000, 1)];
    let opts = ArrowWriteOptions {
        chunk_rows: 1024,
        ..ArrowWriteOptions::default()
    };
    check_round_trip(&path, &parts, opts, "runs");
    let t = TableReader::open(&path).expect("open");
    assert_eq!(t.container().version(), (1, 6));
    let meta = t.container().directory().table.clone().expect("table");
    let chosen: Vec<&str> = meta
        .fields
        .iter()
        .filter(|f| f.is_run_encoded())
        .map(|f| f.name.as_str())
        .collect();
    eprintln!("run-encoded: {chosen:?}");
    for name in ["year", "month", "rate", "price", "date"] {
        assert!(
            chosen.contains(&name),
            "{name} is not run-encoded: {chosen:?}"
        );
    }
    assert!(!chosen.contains(&"id"));
    let year = meta.fields.iter().find(|f| f.name == "year").expect("year");
    let ends = year.column(Role::RunEnds).expect("run ends");
    assert_eq!(t.columns()[ends].value_count, 1, "nulls continue the run");
    let runs_bytes: u64 = meta
        .fields
        .iter()
        .filter(|f| f.is_run_encoded())
        .map(|f| field_storage(&path, &f.name).0)
        .sum();
    let chosen: Vec<String> = chosen.iter().map(|s| s.to_string()).collect();
    // Without runs the file is 1.5 or older and every such field is larger.
    let never = ArrowWriteOptions {
        runs: RunChoice::Never,
        ..opts
    };
    check_round_trip(&path, &parts, never, "no runs");
    let t = TableReader::open(&path).expect("open");
    assert!(t.container().version().1 <= 5);
    let meta = t.container().directory().table.clone().expect("table");
    assert!(meta.fields.iter().all(|f| !f.is_run_encoded()));
    let plain_bytes: u64 = meta
        .fields
        .iter()
        .filter(|f| chosen.contains(&f.name))
        .map(|f| field_storage(&path, &f.name).0)
        .sum();
    assert!(
        runs_bytes * 2 < plain_bytes,
        "runs {runs_bytes} bytes against {plain_bytes}"
    );
    // Runs shorter than the sample's quarter never pay: a unique column stays plain.
    let single = [RecordBatch::try_from_iter([(
        "u",
        Arc::new((0..4000).map(Some).collect::<Int32Array>()) as ArrayRef,
    )])
    .expect("batch")];
    check_round_trip(&path, &single, ArrowWriteOptions::default(), "unique");
    let t = TableReader::open(&path).expect("open");
    let meta = t.container().directory().table.clone().expect("table");
    assert!(!meta.fields[0].is_run_encoded());
}

#[test]
fn hostile_run_ends_fail_cleanly() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let read = |path: &std::path::Path| {
        let t = TableReader::open(path).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        r.read_all(&mut Engine::cpu())
    };
    common::runs_file(&path, 1000, &[4, 5, 6], &[10, 600, 1000]).expect("write");
    let b = read(&path).expect("valid file");
    let x = b
        .column(0)
        .as_any()
        .downcast_ref::<Int32Array>()
        .expect("i32");
    assert_eq!(
        (x.value(9), x.value(10), x.value(599), x.value(999)),
        (4, 5, 5, 6)
    );
    // Ends that do not ascend, stop short of the rows, reach past them, or start at 0.
    for ends in [
        [10u64, 10, 1000],
        [600, 10, 1000],
        [10, 600, 999],
        [10, 600, 1001],
        [0, 600, 1000],
    ] {
        common::runs_file(&path, 1000, &[4, 5, 6], &ends).expect("write");
        assert!(
            matches!(read(&path), Err(Error::ValueOutOfRange { .. })),
            "ends {ends:?}"
        );
    }
    // More runs than rows, or run values and ends of different counts: the directory is
    // refused (by the writer, which checks it as `Container::open` does).
    for (rows, values, ends) in [
        (2u64, vec![1, 2, 3], vec![1u64, 2, 3]),
        (1000, vec![1, 2], vec![10, 600, 1000]),
    ] {
        assert!(
            matches!(
                common::runs_file(&path, rows, &values, &ends),
                Err(Error::InvalidHeader { .. })
            ),
            "{values:?} {ends:?}"
        );
    }
}

/// Fixed-width fields with few distinct values spread over a wide range (flight numbers,
/// distances, prices, timestamps, arbitrary float bit patterns), with nulls, which the
/// automatic rule stores as codes + dictionary (`table.md` §6.1, minor 5), and a unique key
/// that stays plain.
fn fixed_dictionary_batch(n: usize, seed: u64) -> RecordBatch {
    let h = |i: usize| {
        ((i as u64) ^ seed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    };
    let flight: Int64Array = (0..n)
        .map(|i| (i % 13 != 5).then(|| 1000 + (h(i) % 300) as i64 * 37))
        .collect();
    let distance: UInt16Array = (0..n).map(|i| Some(17 + (h(i) % 50) as u16 * 97)).collect();
    let price = Decimal128Array::from(
        (0..n)
            .map(|i| (i % 7 != 0).then(|| (h(i) % 40) as i128 * 12_345 - 99_000))
            .collect::<Vec<Option<i128>>>(),
    )
    .with_precision_and_scale(12, 2)
    .expect("decimal");
    let ts = TimestampMillisecondArray::from(
        (0..n)
            .map(|i| 1_600_000_000_000 + (h(i) % 20) as i64 * 3_600_007)
            .collect::<Vec<i64>>(),
    )
    .with_timezone("UTC");
    let patterns: Vec<f64> = (0..30u64)
        .map(|k| f64::from_bits(k.wrapping_mul(0xA24B_AED4_963E_E407) | 1))
        .chain([f64::NAN, -0.0])
        .collect();
    let weird: Float64Array = (0..n)
        .map(|i| Some(patterns[(h(i) % patterns.len() as u64) as usize]))
        .collect();
    let id: Int64Array = (0..n).map(|i| Some(i as i64 * 3 + 7)).collect();
    RecordBatch::try_from_iter([
        ("flight", Arc::new(flight) as ArrayRef),
        ("distance", Arc::new(distance) as ArrayRef),
        ("price", Arc::new(price) as ArrayRef),
        ("ts", Arc::new(ts) as ArrayRef),
        ("weird", Arc::new(weird) as ArrayRef),
        ("id", Arc::new(id) as ArrayRef),
    ])
    .expect("batch")
}

#[test]
fn fixed_width_dictionaries_chosen_when_smaller_and_read_back_plain() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let parts = [
        fixed_dictionary_batch(5000, 1),
        fixed_dictionary_batch(3000, 2),
    ];
    let opts = ArrowWriteOptions {
        chunk_rows: 4096,
        ..ArrowWriteOptions::default()
    };
    check_round_trip(&path, &parts, opts, "fixed-width dictionaries");
    let t = TableReader::open(&path).expect("open");
    assert_eq!(t.container().version(), (1, 5));
    let meta = t.container().directory().table.clone().expect("table");
    for f in &meta.fields {
        assert_eq!(
            f.is_fixed_auto_dictionary(),
            f.name != "id",
            "field {}",
            f.name
        );
    }
    // Without automatic dictionaries nothing is one, and the file stays 1.4 or older.
    let never = ArrowWriteOptions {
        dictionary: DictionaryChoice::Never,
        ..opts
    };
    check_round_trip(&path, &parts, never, "no dictionaries");
    let t = TableReader::open(&path).expect("open");
    assert!(t.container().version().1 <= 4);
    let meta = t.container().directory().table.clone().expect("table");
    assert!(meta.fields.iter().all(|f| !f.is_dictionary_encoded()));
}

/// Decimal-like doubles and floats (prices, temperatures) with nulls and every kind of value
/// ALP keeps as an exception, in a 1.4 table.
fn float_batch(n: usize, seed: u64) -> RecordBatch {
    let v = |i: usize| {
        (i as u64)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(seed)
            >> 40
    };
    let specials = [
        f64::NAN,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        5e-324,
        0.1 + 0.2,
    ];
    let price: Float64Array = (0..n)
        .map(|i| {
            if i % 13 == 5 {
                None
            } else if i % 97 == 1 {
                Some(specials[i % specials.len()])
            } else {
                Some((v(i) % 100_000) as f64 / 100.0)
            }
        })
        .collect();
    let temp: Float32Array = (0..n)
        .map(|i| {
            if i % 211 == 7 {
                f32::from_bits(0x7fc0_1234)
            } else {
                ((v(i) % 900) as f32 - 300.0) / 10.0
            }
        })
        .map(Some)
        .collect();
    let ratio: Float64Array = (0..n).map(|i| Some((i as f64 + 1.0).sqrt())).collect();
    RecordBatch::try_from_iter_with_nullable([
        ("price", Arc::new(price) as ArrayRef, true),
        ("temp", Arc::new(temp) as ArrayRef, false),
        ("ratio", Arc::new(ratio) as ArrayRef, false),
    ])
    .expect("floats")
}

fn f64_batch(values: Vec<f64>) -> RecordBatch {
    RecordBatch::try_from_iter([("x", Arc::new(Float64Array::from(values)) as ArrayRef)])
        .expect("batch")
}

fn f32_batch(values: Vec<f32>) -> RecordBatch {
    RecordBatch::try_from_iter([("x", Arc::new(Float32Array::from(values)) as ArrayRef)])
        .expect("batch")
}

/// The bytes of the columns of the field named `name` and whether it is stored with ALP.
fn field_storage(path: &std::path::Path, name: &str) -> (u64, bool) {
    let t = TableReader::open(path).expect("open");
    let meta = t.container().directory().table.clone().expect("table");
    let f = meta.fields.iter().find(|f| f.name == name).expect("field");
    let bytes = f
        .columns
        .iter()
        .map(|&(_, c)| {
            t.columns()[c as usize]
                .chunks
                .iter()
                .map(|k| u64::from(k.compressed_size))
                .sum::<u64>()
        })
        .sum();
    (bytes, f.is_alp())
}

#[test]
fn floats_round_trip_bit_for_bit_as_alp() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    for rows in [1, 1023, 1024, 1025, 5000] {
        let parts = [float_batch(rows, 1), float_batch(rows / 2 + 1, 2)];
        for floats in [FloatChoice::Auto, FloatChoice::Alp, FloatChoice::Plain] {
            let opts = ArrowWriteOptions {
                chunk_rows: 512,
                floats,
                ..ArrowWriteOptions::default()
            };
            check_round_trip(&path, &parts, opts, &format!("floats, {rows} rows"));
        }
    }
}

#[test]
fn auto_picks_alp_for_decimal_doubles_and_not_for_noise() {
    let dir = tempfile::tempdir().expect("dir");
    let n = 20_000;
    let decimals: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 100_000) as f64 / 100.0)
        .collect();
    let noise: Vec<f64> = (0..n as u64)
        .map(|i| f64::from_bits(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 2))
        .collect();
    for (values, alp_wins) in [(decimals, true), (noise, false)] {
        let b = f64_batch(values);
        let mut sizes = Vec::new();
        for floats in [FloatChoice::Auto, FloatChoice::Alp, FloatChoice::Plain] {
            let path = dir.path().join(format!("{floats:?}.tsr"));
            let opts = ArrowWriteOptions {
                floats,
                ..ArrowWriteOptions::default()
            };
            write(&path, b.schema(), std::slice::from_ref(&b), opts).expect("write");
            assert_eq!(read_all(&path), b);
            sizes.push(field_storage(&path, "x"));
        }
        let (auto, alp, plain) = (sizes[0], sizes[1], sizes[2]);
        assert!(alp.1 && !plain.1);
        assert_eq!(
            auto.1, alp_wins,
            "auto's choice: ALP {} vs plain {}",
            alp.0, plain.0
        );
        assert_eq!(auto.0, if alp_wins { alp.0 } else { plain.0 });
        if alp_wins {
            // 0.00 ..= 999.99 needs 17 bits a value against 64.
            assert!(alp.0 * 3 < plain.0, "ALP {} vs plain {}", alp.0, plain.0);
        }
    }
}

#[test]
fn alp_tables_are_version_1_4_and_plain_float_tables_1_3() {
    let dir = tempfile::tempdir().expect("dir");
    let b = f64_batch((0..3000).map(|i| i as f64 / 4.0).collect());
    for (floats, minor) in [(FloatChoice::Alp, 4), (FloatChoice::Plain, 3)] {
        let path = dir.path().join("t.tsr");
        let opts = ArrowWriteOptions {
            floats,
            ..ArrowWriteOptions::default()
        };
        write(&path, b.schema(), std::slice::from_ref(&b), opts).expect("write");
        assert_eq!(
            TableReader::open(&path)
                .expect("open")
                .container()
                .version(),
            (1, minor)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_f64_bit_pattern_round_trips(bits in proptest::collection::vec(any::<u64>(), 1..3000), decimal in any::<bool>()) {
        // Half the cases: decimal-like values with arbitrary patterns mixed in.
        let values: Vec<f64> = bits
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if decimal && i % 9 != 0 {
                    (b % 2_000_000) as f64 / 1000.0 - 1000.0
                } else {
                    f64::from_bits(b)
                }
            })
            .collect();
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.tsr");
        let b = f64_batch(values);
        let opts = ArrowWriteOptions { chunk_rows: 512, floats: FloatChoice::Alp, ..ArrowWriteOptions::default() };
        check_round_trip(&path, std::slice::from_ref(&b), opts, "f64 patterns");
    }

    #[test]
    fn any_f32_bit_pattern_round_trips(bits in proptest::collection::vec(any::<u32>(), 1..3000), decimal in any::<bool>()) {
        let values: Vec<f32> = bits
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if decimal && i % 9 != 0 {
                    (b % 200_000) as f32 / 100.0
                } else {
                    f32::from_bits(b)
                }
            })
            .collect();
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.tsr");
        let b = f32_batch(values);
        let opts = ArrowWriteOptions { chunk_rows: 512, floats: FloatChoice::Alp, ..ArrowWriteOptions::default() };
        check_round_trip(&path, std::slice::from_ref(&b), opts, "f32 patterns");
    }
}

fn golden_opts(name: &str) -> ArrowWriteOptions {
    ArrowWriteOptions {
        chunk_rows: 512,
        // Tables older than 1.6 keep their fields out of runs; `runs` is the 1.6 one.
        runs: if name == "runs" {
            RunChoice::Auto
        } else {
            RunChoice::Never
        },
        // The 1.3 golden tables keep their floats as bit patterns; `floats-alp` is the 1.4 one.
        floats: if name == "floats-alp" {
            FloatChoice::Auto
        } else {
            FloatChoice::Plain
        },
        ..ArrowWriteOptions::default()
    }
}

#[test]
fn golden_tables_decode_and_regenerate() {
    let d = golden_dir();
    let regen = std::env::var("TESSERA_REGEN_GOLDEN").is_ok_and(|v| v == "1");
    let fresh = tempfile::tempdir().expect("dir");
    for (name, batches) in golden_set() {
        let file = format!("{name}.tsr");
        let new = fresh.path().join(&file);
        write(&new, batches[0].schema(), &batches, golden_opts(name)).expect("write");
        if regen {
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::copy(&new, d.join(&file)).expect("copy");
        }
        let old = d.join(&file);
        assert_eq!(
            read_all(&old),
            concat(&batches),
            "{file} decodes to its table"
        );
        assert!(
            std::fs::read(&new).expect("new") == std::fs::read(&old).expect("old"),
            "testdata/v1/tables/{file} differs from what the current writer produces"
        );
    }
}

/// `testdata/v1/tables-auto-0036/`: tables as the writer wrote them before `auto` stopped
/// taking LLL on small chunks it does not halve (decision 0037), decode-only and never
/// regenerated: they still decode to the tables the test builds, and differ from what the
/// writer writes now (the test would be empty otherwise).
#[test]
fn golden_tables_of_the_previous_auto_still_decode() {
    let d = golden_dir().join("../tables-auto-0036");
    let set = golden_set();
    let mut checked = 0;
    for name in ["all-types-no-nulls", "all-types-some-nulls"] {
        let (_, batches) = set
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a golden table of that name");
        let old = d.join(format!("{name}.tsr"));
        assert_eq!(
            read_all(&old),
            concat(batches),
            "{name}.tsr decodes to its table"
        );
        let current = golden_dir().join(format!("{name}.tsr"));
        assert!(
            std::fs::read(&old).expect("old") != std::fs::read(&current).expect("current"),
            "{name}.tsr: the decode-only copy equals the current one"
        );
        checked += 1;
    }
    assert_eq!(checked, 2);
}

/// An engine on the GPU when one opens; `None` (with the reason printed) otherwise, and a
/// failure when TESSERA_REQUIRE_GPU=1.
fn gpu_engine() -> Option<Engine> {
    Engine::open(tessera::Device::Gpu)
        .map_err(|e| tessera::gpu::testing::skipped(&e))
        .ok()
}

#[test]
fn gpu_reads_match_the_cpu() {
    let Some(mut engine) = gpu_engine() else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let parts: Vec<RecordBatch> = (0..2)
        .map(|b| batch_of(columns(300_000, Nulls::Some, b)))
        .collect();
    write(&path, parts[0].schema(), &parts, golden_opts("")).expect("write");
    gpu_matches_cpu(&path, &mut engine);
    // Fixed-width dictionaries (`table.md` §6.1): codes and dictionaries decode in the
    // batched integer launches beside the plain columns.
    let fixed = [fixed_dictionary_batch(200_000, 3)];
    write(
        &path,
        fixed[0].schema(),
        &fixed,
        ArrowWriteOptions::default(),
    )
    .expect("write");
    let t = TableReader::open(&path).expect("open");
    let meta = t.container().directory().table.clone().expect("table");
    assert!(meta.fields.iter().any(|f| f.is_fixed_auto_dictionary()));
    gpu_matches_cpu(&path, &mut engine);
}

/// A utf8 column on the device, downloaded: its ends, text and chunk tables.
fn utf8_on_device(
    gpu: &tessera::gpu::Gpu,
    c: &tessera::GpuColumn,
) -> (Vec<u8>, Vec<u8>, Vec<u64>, Vec<u64>) {
    let tessera::GpuData::Utf8 {
        ends,
        data,
        chunk_value_starts,
        chunk_data_starts,
    } = &c.data
    else {
        panic!("not utf8");
    };
    let mut e = vec![0u8; c.len as usize * 4];
    gpu.download(ends, &mut e).expect("ends");
    let mut d = vec![0u8; *chunk_data_starts.last().expect("starts") as usize];
    gpu.download(data, &mut d).expect("text");
    (e, d, chunk_value_starts.clone(), chunk_data_starts.clone())
}

/// Run-encoded fields (`table.md` §9): run values and ends decode in the batched launches and
/// expand on the device to what the CPU gives; faulty run ends are an error there too, not a
/// read out of bounds.
#[test]
fn gpu_runs_expand_on_the_device() {
    let Some(mut engine) = gpu_engine() else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let runs = [runs_batch(50_000, 0, 4), runs_batch(30_000, 50_000, 4)];
    write(&path, runs[0].schema(), &runs, ArrowWriteOptions::default()).expect("write");
    let t = TableReader::open(&path).expect("open");
    let meta = t.container().directory().table.clone().expect("table");
    assert!(meta.fields.iter().filter(|f| f.is_run_encoded()).count() >= 5);
    gpu_matches_cpu(&path, &mut engine);
    for ends in [[10u64, 10, 1000], [10, 600, 999], [10, 600, 1001]] {
        common::runs_file(&path, 1000, &[4, 5, 6], &ends).expect("write");
        let t = TableReader::open(&path).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        let gpu = engine.gpu().expect("gpu");
        assert!(
            matches!(r.read_gpu(gpu), Err(Error::ValueOutOfRange { .. })),
            "ends {ends:?}"
        );
    }
}

/// The table at `path` read through the GPU engine equals the CPU's, and every fixed-size
/// column [`ArrowTableReader::read_gpu`] leaves on the device equals the CPU's raw decode.
fn gpu_matches_cpu(path: &std::path::Path, engine: &mut Engine) {
    let t = TableReader::open(path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    // Batches decoded through the GPU engine equal the CPU's.
    let via_gpu = r.read_all(engine).expect("gpu read");
    assert_eq!(via_gpu, r.read_all(&mut Engine::cpu()).expect("cpu read"));
    // Device-resident fields: every fixed-size buffer equals the CPU's raw form.
    let gpu = engine.gpu().expect("gpu");
    let fields = r.read_gpu(gpu).expect("read_gpu");
    let mut cpu = Engine::cpu();
    for f in &fields {
        if f.meta.is_run_encoded() {
            // The device holds one value a row: the runs expanded, as the CPU expands them.
            let w = f.values.logical_type.width();
            let values = t
                .read_raw(f.meta.column(Role::Values).expect("values"), &mut cpu)
                .expect("cpu");
            let ends = t
                .read_raw(f.meta.column(Role::RunEnds).expect("ends"), &mut cpu)
                .expect("cpu");
            let mut want = Vec::new();
            let mut at = 0u64;
            for (v, e) in values.chunks_exact(w).zip(ends.chunks_exact(8)) {
                let end = u64::from_le_bytes(e.try_into().expect("u64"));
                for _ in at..end {
                    want.extend_from_slice(v);
                }
                at = end;
            }
            let tessera::GpuData::Raw(buf) = &f.values.data else {
                panic!("field {}: runs expand to raw values", f.meta.name);
            };
            let mut got = vec![0u8; want.len()];
            gpu.download(buf, &mut got).expect("download");
            assert_eq!(got, want, "field {} runs", f.meta.name);
        }
        for (role, col) in &f.meta.columns {
            let g = match role {
                Role::Values if f.meta.is_run_encoded() => continue,
                Role::RunEnds => continue,
                Role::Values => &f.values,
                Role::Validity => f.validity.as_ref().expect("validity"),
                Role::Lengths => f.lengths.as_ref().expect("lengths"),
                Role::DictValues => &f.dictionary.as_ref().expect("dict").0,
                Role::DictLengths => f
                    .dictionary
                    .as_ref()
                    .and_then(|d| d.1.as_ref())
                    .expect("dict lengths"),
                Role::AlpParams => &f.alp.as_ref().expect("alp")[0],
                Role::ExceptionRows => &f.alp.as_ref().expect("alp")[1],
                Role::ExceptionBits => &f.alp.as_ref().expect("alp")[2],
            };
            let tessera::GpuData::Raw(buf) = &g.data else {
                // utf8, decoded in the table's one batch: as the column decoded alone.
                assert_eq!(
                    utf8_on_device(gpu, g),
                    utf8_on_device(gpu, &t.read_gpu(*col as usize, gpu).expect("alone")),
                    "field {} role {}",
                    f.meta.name,
                    role.name()
                );
                continue;
            };
            let want = t.read_raw(*col as usize, &mut cpu).expect("cpu");
            let mut got = vec![0u8; want.len()];
            gpu.download(buf, &mut got).expect("download");
            assert_eq!(got, want, "field {} role {}", f.meta.name, role.name());
        }
    }
}

/// The utf8 columns of a table decode in one batch on the GPU, their end offsets checked on
/// the device: a good table equals the column-by-column decode, and a bad offset in the second
/// column is that column's error, as the CPU decoder gives it.
#[test]
fn gpu_utf8_batch_checks_offsets_on_the_device() {
    let Some(engine) = gpu_engine() else {
        return;
    };
    let gpu = engine.gpu().expect("gpu");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let good: &[u32] = &[1, 3, 3, 6];
    common::utf8_file(
        &path,
        &[("a", good, b"abcdef"), ("b", &[2, 2, 4, 5], b"vwxyz")],
    );
    let t = TableReader::open(&path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    let fields = r.read_gpu(gpu).expect("read_gpu");
    for f in &fields {
        let c = f.meta.column(Role::Values).expect("values");
        let alone = t.read_gpu(c, gpu).expect("alone");
        let (
            tessera::GpuData::Utf8 {
                ends,
                data,
                chunk_value_starts,
                chunk_data_starts,
            },
            tessera::GpuData::Utf8 {
                ends: ends1,
                data: data1,
                chunk_value_starts: vs1,
                chunk_data_starts: ds1,
            },
        ) = (&f.values.data, &alone.data)
        else {
            panic!("field {}: not utf8 on the device", f.meta.name);
        };
        assert_eq!((chunk_value_starts, chunk_data_starts), (vs1, ds1));
        let (mut e, mut e1) = (vec![0u8; 16], vec![0u8; 16]);
        gpu.download(ends, &mut e).expect("ends");
        gpu.download(ends1, &mut e1).expect("ends");
        assert_eq!(e, e1, "field {}", f.meta.name);
        let (mut d, mut d1) = (vec![0u8; 5], vec![0u8; 5]);
        gpu.download(data, &mut d).expect("data");
        gpu.download(data1, &mut d1).expect("data");
        assert_eq!(d, d1, "field {}", f.meta.name);
    }
    for bad in [[2u32, 1, 4, 5], [2, 2, 4, 4], [2, 2, 4, 6]] {
        common::utf8_file(&path, &[("a", good, b"abcdef"), ("b", &bad, b"vwxyz")]);
        let t = TableReader::open(&path).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        let cpu = r
            .read_all(&mut Engine::cpu())
            .expect_err("the CPU accepts bad ends");
        let on_gpu = r.read_gpu(gpu).expect_err("the GPU accepts bad ends");
        assert_eq!(
            on_gpu.to_string(),
            t.read_gpu(1, gpu).expect_err("alone").to_string()
        );
        assert!(on_gpu.to_string().contains("'b'"), "{on_gpu} ({cpu})");
    }
}

/// The one-wait read (`read_gpu`) queues every decoder and reads their status words back
/// after one wait: it gives the good columns as the CPU decodes them, and a corrupt
/// column found there (a bit width above its lane, a WAH fill past the bitmap's bits: what only
/// the decoder sees) is still that column's error, as the CPU decoder gives it, whether it
/// shares its batch with another column of its type (`c` beside `a`, `e` after `d`) or has one
/// of its own (`b`), and the good columns of the same table decode as they do alone.
#[test]
fn gpu_one_wait_read_names_the_corrupt_column() {
    let Some(mut engine) = gpu_engine() else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let n = 1000usize;
    let i32s = |m: i32| {
        (0..n as i32)
            .flat_map(|i| (i * m % 5000).to_le_bytes())
            .collect()
    };
    let u64s: Vec<u8> = (0..n as u64)
        .flat_map(|i| (i * 977 % 100_000).to_le_bytes())
        .collect();
    let flags: Vec<u8> = (0..n.div_ceil(8))
        .map(|i| if i % 9 < 4 { 0xFF } else { 0x5A })
        .collect();
    let fields = [
        ("a", LogicalType::I32, i32s(7), n),
        ("b", LogicalType::U64, u64s, n),
        ("c", LogicalType::I32, i32s(13), n),
        ("d", LogicalType::Bits, flags.clone(), n),
        ("e", LogicalType::Bits, flags, n),
    ];
    common::for_file(&path, &fields, None);
    gpu_matches_cpu(&path, &mut engine);
    let gpu = engine.gpu().expect("gpu");
    // The one-wait read gives every column as the CPU decodes it.
    let t = TableReader::open(&path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    for f in r.read_gpu(gpu).expect("one wait") {
        let tessera::GpuData::Raw(buf) = &f.values.data else {
            panic!("field {}: not raw", f.meta.name);
        };
        let c = f.meta.column(Role::Values).expect("values");
        let want = t.read_raw(c, &mut Engine::cpu()).expect("cpu");
        let mut got = vec![0u8; want.len()];
        gpu.download(buf, &mut got).expect("download");
        assert_eq!(got, want, "field {}", f.meta.name);
    }
    for (bad, col) in [("c", 2usize), ("b", 1), ("e", 4)] {
        common::for_file(&path, &fields, Some(bad));
        let t = TableReader::open(&path).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        let cpu = r
            .read_all(&mut Engine::cpu())
            .expect_err("the CPU accepts a bad bit width");
        let on_gpu = r
            .read_gpu(gpu)
            .expect_err("the GPU accepts a bad bit width");
        assert_eq!(
            std::mem::discriminant(&on_gpu),
            std::mem::discriminant(&cpu),
            "{on_gpu} ({cpu})"
        );
        assert_eq!(
            on_gpu.to_string(),
            t.read_gpu(col, gpu).expect_err("alone").to_string()
        );
        assert!(on_gpu.to_string().contains(&format!("'{bad}'")), "{on_gpu}");
    }
}

#[test]
fn hostile_alp_columns_fail_cleanly() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let digits: Vec<i64> = (0..1500).collect();
    let read = |path: &std::path::Path| {
        let t = TableReader::open(path).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        r.read_all(&mut Engine::cpu())
    };
    // Valid: e = 2, f = 0 (x = d / 100), one exception.
    common::alp_file(&path, &digits, &[2, 2], &[7], &[f64::NAN.to_bits()]);
    let b = read(&path).expect("valid file");
    let x = b
        .column(0)
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("f64");
    assert_eq!(x.value(5).to_bits(), (5.0f64 * 1.0 * 1e-2).to_bits());
    assert!(x.value(7).is_nan());
    // f above e, e above the type's limit.
    for bad in [0x0302u16, 19] {
        common::alp_file(&path, &digits, &[2, bad], &[], &[]);
        assert!(
            matches!(read(&path), Err(Error::ValueOutOfRange { .. })),
            "param {bad:#x}"
        );
    }
    // Exception rows that do not ascend, or reach past the table.
    for rows in [[9u64, 9], [9, 3], [9, 1500]] {
        common::alp_file(&path, &digits, &[2, 2], &rows, &[0, 0]);
        assert!(
            matches!(read(&path), Err(Error::ValueOutOfRange { .. })),
            "rows {rows:?}"
        );
    }
}

/// The one-wait read verifies checksums on the thread pool while it uploads and decodes: a
/// payload whose checksum does not match is still the read's error (the CPU read's, naming the
/// column), before anything a decoder finds in those bytes, and of two corrupt columns the first
/// in column order is the one named, as when checksums are verified first.
#[test]
fn gpu_read_reports_a_bad_checksum_first() {
    let Some(engine) = gpu_engine() else {
        return;
    };
    let gpu = engine.gpu().expect("gpu");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let n = 40_000usize;
    let i32s = |m: i32| -> Vec<u8> {
        (0..n as i32)
            .flat_map(|i| (i.wrapping_mul(m) % 1000).to_le_bytes())
            .collect()
    };
    let fields = [
        ("a", LogicalType::I32, i32s(7), n),
        ("b", LogicalType::I32, i32s(13), n),
        ("c", LogicalType::I32, i32s(17), n),
    ];
    common::for_file(&path, &fields, None);
    let bytes = std::fs::read(&path).expect("read");
    let t = TableReader::from_bytes(bytes.clone()).expect("open");
    let at = |name: &str| {
        let c = t.columns().iter().position(|m| m.name == name).expect(name);
        let ch = &t.columns()[c].chunks[0];
        assert!(ch.compressed_size > 16);
        ch.offset as usize + 8
    };
    let (b_at, c_at) = (at("b"), at("c"));
    for (flips, named) in [(vec![c_at], "'c'"), (vec![c_at, b_at], "'b'")] {
        let mut bad = bytes.clone();
        for i in flips {
            bad[i] ^= 0x5A;
        }
        let t = TableReader::from_bytes(bad).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        let cpu = r
            .read_all(&mut Engine::cpu())
            .expect_err("the CPU accepts a bad checksum");
        let on_gpu = r.read_gpu(gpu).expect_err("the GPU accepts a bad checksum");
        assert!(
            matches!(on_gpu, Error::ChecksumMismatch { .. }),
            "{on_gpu} ({cpu})"
        );
        if named == "'c'" {
            assert_eq!(on_gpu.to_string(), cpu.to_string());
        }
        assert!(on_gpu.to_string().contains(named), "{on_gpu}");
    }
    // The same table unharmed still reads.
    let r = ArrowTableReader::new(&t, None).expect("table");
    assert_eq!(r.read_gpu(gpu).expect("good file").len(), 3);
}

/// The GPU read's upload preparation (host work only, so this runs without a GPU) checks
/// every chunk header as the read does, on the thread pool or one batch after another: a
/// header the writer never wrote is the CPU decoder's error naming its column, whether the
/// column shares its batch (`c` beside `a`) or not, and a good table prepares the same batches
/// either way. The table is large enough for the read to prepare on the thread pool.
#[test]
fn gpu_upload_preparation_names_a_corrupt_header() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let n = 200_000usize;
    let i32s = |m: i64| {
        (0..n as i64)
            .flat_map(|i| ((i * m % 1_000_003) as i32).to_le_bytes())
            .collect()
    };
    let u64s: Vec<u8> = (0..n as u64)
        .flat_map(|i| (i * 977 % 10_000_019).to_le_bytes())
        .collect();
    let fields = [
        ("a", LogicalType::I32, i32s(7), n),
        ("b", LogicalType::U64, u64s, n),
        ("c", LogicalType::I32, i32s(13), n),
    ];
    common::for_file(&path, &fields, None);
    let bytes = std::fs::read(&path).expect("read");
    assert!(bytes.len() > 256 << 10, "{} bytes", bytes.len());
    let t = TableReader::from_bytes(bytes.clone()).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    assert_eq!(r.prepare_gpu_uploads(false).expect("one by one"), 2);
    assert_eq!(r.prepare_gpu_uploads(true).expect("pool"), 2);
    for (bad, col) in [("c", 2usize), ("b", 1)] {
        let payload = t
            .container()
            .chunk_payload(col, 0)
            .expect("payload")
            .to_vec();
        let at = bytes
            .windows(payload.len())
            .position(|w| w == payload.as_slice())
            .expect("the payload is in the file");
        let mut broken = bytes.clone();
        // block_size, the header's first word: 128 for GPU-FOR.
        broken[at..at + 4].copy_from_slice(&999u32.to_le_bytes());
        let t = TableReader::from_bytes(broken).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        for parallel in [false, true] {
            let e = r
                .prepare_gpu_uploads(parallel)
                .expect_err("a bad block_size passes");
            assert!(e.to_string().contains(&format!("'{bad}'")), "{e}");
            assert!(e.to_string().contains("block_size"), "{e}");
        }
    }
}
