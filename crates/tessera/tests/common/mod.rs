//! Helpers shared by the Arrow table tests.

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
    use tessera::codecs::column::encode_values_with;
    use tessera::format::container::ContainerWriter;
    use tessera::format::table::{FieldMeta, FieldType, TableMeta};
    use tessera::LogicalType;
    let mut w = ContainerWriter::create(path).expect("create");
    let mut cols = Vec::new();
    for (name, ty, raw, n) in [
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
    ] {
        let c = w.add_column(name, ty, None).expect("column");
        if n > 0 {
            let mut out = Vec::new();
            let codec = encode_values_with(ty, None, &raw, n as u64, &mut out, Default::default())
                .expect("encode");
            w.write_chunk_to(c, codec, n as u32, &out).expect("chunk");
        }
        cols.push(c as u32);
    }
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
