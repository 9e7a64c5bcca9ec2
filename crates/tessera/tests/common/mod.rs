//! Helpers shared by the Arrow table tests.

use tessera::format::container::ContainerWriter;

/// Writes each `(name, type, raw little-endian values, count)` as one column of one chunk
/// (encoded by `auto`; no chunk when the count is 0); the columns' indexes.
fn write_columns<const N: usize>(
    w: &mut ContainerWriter,
    columns: [(&str, tessera::LogicalType, Vec<u8>, usize); N],
) -> Vec<u32> {
    use tessera::codecs::column::encode_values_with;
    let mut cols = Vec::with_capacity(N);
    for (name, ty, raw, n) in columns {
        let c = w.add_column(name, ty, None).expect("column");
        if n > 0 {
            let mut out = Vec::new();
            let codec = encode_values_with(ty, None, &raw, n as u64, &mut out, Default::default())
                .expect("encode");
            w.write_chunk_to(c, codec, n as u32, &out).expect("chunk");
        }
        cols.push(c as u32);
    }
    cols
}

/// An ALP Float64 field of `digits.len()` rows written column by column, so that its params and
/// exceptions can hold what no writer writes.
pub fn alp_file(
    path: &std::path::Path,
    digits: &[i64],
    params: &[u16],
    rows: &[u64],
    bits: &[u64],
) {
    use tessera::arrow::Role;
    use tessera::format::table::{FieldMeta, FieldType, TableMeta};
    use tessera::LogicalType;
    let mut w = ContainerWriter::create(path).expect("create");
    let columns = [
        (
            "x",
            LogicalType::I64,
            digits
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
            digits.len(),
        ),
        (
            "x.alp_params",
            LogicalType::U16,
            params.iter().flat_map(|v| v.to_le_bytes()).collect(),
            params.len(),
        ),
        (
            "x.exception_rows",
            LogicalType::U64,
            rows.iter().flat_map(|v| v.to_le_bytes()).collect(),
            rows.len(),
        ),
        (
            "x.exception_bits",
            LogicalType::U64,
            bits.iter().flat_map(|v| v.to_le_bytes()).collect(),
            bits.len(),
        ),
    ];
    let cols = write_columns(&mut w, columns);
    w.set_table(TableMeta {
        row_count: digits.len() as u64,
        metadata: vec![],
        fields: vec![FieldMeta {
            name: "x".into(),
            ty: FieldType::Float64,
            nullable: false,
            arrow_dictionary: None,
            metadata: vec![],
            columns: vec![
                (Role::Values, cols[0]),
                (Role::AlpParams, cols[1]),
                (Role::ExceptionRows, cols[2]),
                (Role::ExceptionBits, cols[3]),
            ],
        }],
    })
    .expect("table");
    w.finish().expect("finish");
}

/// A run-encoded Int32 field (`table.md` §9) of `rows` rows written column by column, so that
/// its run ends can hold what no writer writes. Fails where the directory itself is wrong (the
/// writer checks it as readers do).
// Each test crate compiles this module whole; only some use every helper.
#[allow(dead_code)]
pub fn runs_file(
    path: &std::path::Path,
    rows: u64,
    values: &[i32],
    ends: &[u64],
) -> tessera::Result<()> {
    use tessera::arrow::Role;
    use tessera::format::table::{FieldMeta, FieldType, TableMeta};
    use tessera::LogicalType;
    let mut w = ContainerWriter::create(path).expect("create");
    let columns = [
        (
            "x",
            LogicalType::I32,
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
            values.len(),
        ),
        (
            "x.run_ends",
            LogicalType::U64,
            ends.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ends.len(),
        ),
    ];
    let cols = write_columns(&mut w, columns);
    w.set_table(TableMeta {
        row_count: rows,
        metadata: vec![],
        fields: vec![FieldMeta {
            name: "x".into(),
            ty: FieldType::Int(LogicalType::I32),
            nullable: false,
            arrow_dictionary: None,
            metadata: vec![],
            columns: vec![(Role::Values, cols[0]), (Role::RunEnds, cols[1])],
        }],
    })?;
    w.finish().map(|_| ())
}

/// A table of utf8 fields, one chunk each (`utf8.md` §1) made by hand: `(name, ends, text)`,
/// the text stored plain, so that the end offsets can hold what no writer writes.
// Each test crate compiles this module whole; only some use every helper.
#[allow(dead_code)]
pub fn utf8_file(path: &std::path::Path, fields: &[(&str, &[u32], &[u8])]) {
    use tessera::arrow::Role;
    use tessera::codecs::column::encode_values_with;
    use tessera::format::table::{FieldMeta, FieldType, TableMeta};
    use tessera::{CodecId, LogicalType};
    let mut w = ContainerWriter::create(path).expect("create");
    let mut metas = Vec::new();
    for (name, ends, text) in fields {
        let raw: Vec<u8> = ends.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut offsets = Vec::new();
        encode_values_with(
            LogicalType::U32,
            Some(CodecId::Dfor),
            &raw,
            ends.len() as u64,
            &mut offsets,
            Default::default(),
        )
        .expect("encode");
        let mut payload = Vec::new();
        payload.extend_from_slice(&(offsets.len() as u32).to_le_bytes());
        payload.extend_from_slice(&(text.len() as u32).to_le_bytes());
        payload.extend_from_slice(&offsets);
        payload.extend_from_slice(text);
        let c = w.add_column(name, LogicalType::Utf8, None).expect("column");
        w.write_chunk_to(c, CodecId::Plain, ends.len() as u32, &payload)
            .expect("chunk");
        metas.push(FieldMeta {
            name: (*name).into(),
            ty: FieldType::Utf8,
            nullable: false,
            arrow_dictionary: None,
            metadata: vec![],
            columns: vec![(Role::Values, c as u32)],
        });
    }
    w.set_table(TableMeta {
        row_count: fields.first().map_or(0, |f| f.1.len() as u64),
        metadata: vec![],
        fields: metas,
    })
    .expect("table");
    w.finish().expect("finish");
}

/// A table of integer fields, one FOR chunk each (`(name, type, raw little-endian values,
/// count)`), and boolean fields (type `Bits`, raw packed bits), one WAH chunk each, where the
/// field named `corrupt` (if any) has the bit width of its second block raised above its lane,
/// or, a boolean one, its first word made a fill of more groups than its bits: payloads whose
/// header and checksum are valid and that only the decoder finds wrong (the CPU decoder, and a
/// GPU kernel in its status word).
// Each test crate compiles this module whole; only some use every helper.
#[allow(dead_code)]
pub fn for_file(
    path: &std::path::Path,
    fields: &[(&str, tessera::LogicalType, Vec<u8>, usize)],
    corrupt: Option<&str>,
) {
    use tessera::arrow::Role;
    use tessera::codecs::column::encode_values_with;
    use tessera::format::table::{FieldMeta, FieldType, TableMeta};
    use tessera::CodecId;
    let mut w = ContainerWriter::create(path).expect("create");
    let mut metas = Vec::new();
    for (name, ty, raw, n) in fields {
        let bits = *ty == tessera::LogicalType::Bits;
        let codec = if bits { CodecId::Wah } else { CodecId::For };
        let mut p = Vec::new();
        encode_values_with(*ty, Some(codec), raw, *n as u64, &mut p, Default::default())
            .expect("encode");
        if bits && corrupt == Some(*name) {
            // A WAH fill word (flag bit 31) of 2^14 - 1 groups, after the 16-byte header.
            p[16..20].copy_from_slice(&(0x8000_0000u32 | 0x3FFF).to_le_bytes());
        } else if corrupt == Some(*name) {
            // Header (4 words), block_starts (blocks + 1), then the blocks: block 1's bit
            // width word follows its reference (one word a 32-bit lane, two a 64-bit one).
            let word =
                |p: &[u8], i: usize| u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().expect("4"));
            let blocks = n.div_ceil(128);
            assert!(blocks >= 2, "a corrupt field needs two blocks");
            let data = 4 + blocks + 1;
            let ref_words = if ty.width() == 8 { 2 } else { 1 };
            let at = data + word(&p, 4 + 1) as usize + ref_words;
            let bw = word(&p, at) | 0xFF;
            p[4 * at..4 * at + 4].copy_from_slice(&bw.to_le_bytes());
        }
        let c = w.add_column(name, *ty, None).expect("column");
        w.write_chunk_to(c, codec, *n as u32, &p).expect("chunk");
        metas.push(FieldMeta {
            name: (*name).into(),
            ty: if bits {
                FieldType::Boolean
            } else {
                FieldType::Int(*ty)
            },
            nullable: false,
            arrow_dictionary: None,
            metadata: vec![],
            columns: vec![(Role::Values, c as u32)],
        });
    }
    w.set_table(TableMeta {
        row_count: fields.first().map_or(0, |f| f.3 as u64),
        metadata: vec![],
        fields: metas,
    })
    .expect("table");
    w.finish().expect("finish");
}
