//! CSV export of an SSB data set, strings restored from their dictionary codes, so that a SQL
//! engine can run the standard SSB SQL on the same data. [`crate::parquet`] writes the same
//! columns and values as Parquet (what the DuckDB check reads); both name a column's dictionary
//! with [`column_dictionary`].

use std::fmt::Write as _;
use std::path::Path;

use tessera::Result;

use crate::gen::{write_atomic, Generated, Table};
use crate::schema::Dictionaries;

/// The dictionary a column's codes index, if it is a coded string column.
pub fn column_dictionary(column: &str) -> Option<&'static str> {
    Some(match column {
        "c_city" | "s_city" => "city",
        "c_nation" | "s_nation" => "nation",
        "c_region" | "s_region" => "region",
        "p_mfgr" => "mfgr",
        "p_category" => "category",
        "p_brand1" => "brand1",
        "d_yearmonth" => "yearmonth",
        _ => return None,
    })
}

fn table_csv(t: &Table, dict: &Dictionaries) -> Result<String> {
    let mut out = String::new();
    let header: Vec<&str> = t.columns.iter().map(|c| c.0).collect();
    out.push_str(&header.join(","));
    out.push('\n');
    let dicts: Vec<Option<&[String]>> = t
        .columns
        .iter()
        .map(|c| column_dictionary(c.0).and_then(|d| dict.get(d)))
        .collect();
    for r in 0..t.rows() {
        for (i, (name, values)) in t.columns.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let v = values[r];
            match dicts[i] {
                Some(d) => {
                    let s = d.get(v as usize).ok_or_else(|| {
                        tessera::Error::InvalidArgument(format!(
                            "{name}: code {v} outside its dictionary"
                        ))
                    })?;
                    let _ = write!(out, "\"{s}\"");
                }
                None => {
                    let _ = write!(out, "{v}");
                }
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// Writes `DIR/<table>.csv` for every table, with a header line.
pub fn export(dir: &Path, g: &Generated) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| tessera::Error::io(dir.display().to_string(), e))?;
    let dict = Dictionaries::standard();
    for t in g.tables() {
        write_atomic(
            &dir.join(format!("{}.csv", t.name)),
            table_csv(t, &dict)?.as_bytes(),
        )?;
    }
    Ok(())
}
