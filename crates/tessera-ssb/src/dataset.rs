//! A generated SSB data set on disk: the five `.tsr` tables and the dictionaries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tessera::{Engine, LogicalType, Result, TableReader};

use crate::schema::{Dictionaries, DICTIONARY_NAMES};

/// The tables of a data set directory, opened.
#[derive(Debug)]
pub struct Dataset {
    pub dir: PathBuf,
    pub tables: HashMap<String, TableReader>,
    pub dict: Dictionaries,
}

/// The tables of the schema.
pub const TABLES: [&str; 5] = ["lineorder", "date", "customer", "supplier", "part"];

impl Dataset {
    /// Opens `DIR/{lineorder,date,customer,supplier,part,dict}.tsr`.
    pub fn open(dir: &Path) -> Result<Dataset> {
        let mut tables = HashMap::new();
        for t in TABLES {
            let r = TableReader::open(dir.join(format!("{t}.tsr")))?;
            for c in r.columns() {
                if c.logical_type != LogicalType::U32 {
                    return Err(tessera::Error::InvalidArgument(format!(
                        "{t}.{}: SSB columns are u32, not {}",
                        c.name,
                        c.logical_type.name()
                    )));
                }
            }
            tables.insert(t.to_string(), r);
        }
        let d = TableReader::open(dir.join("dict.tsr"))?;
        let mut engine = Engine::cpu();
        let mut read = |name: &str| -> Result<Vec<String>> {
            let i = d.column_index(name)?;
            let n = d.columns()[i].chunks.len();
            let s = d.read_strings(i, 0..n, &mut engine)?;
            Ok((0..s.len())
                .filter_map(|k| s.get(k).map(str::to_string))
                .collect())
        };
        let mut dict = Dictionaries::standard();
        for name in DICTIONARY_NAMES {
            let v = read(name)?;
            match name {
                "region" => dict.region = v,
                "nation" => dict.nation = v,
                "city" => dict.city = v,
                "mfgr" => dict.mfgr = v,
                "category" => dict.category = v,
                "brand1" => dict.brand1 = v,
                _ => dict.yearmonth = v,
            }
        }
        Ok(Dataset {
            dir: dir.to_path_buf(),
            tables,
            dict,
        })
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Result<&TableReader> {
        self.tables
            .get(name)
            .ok_or_else(|| tessera::Error::InvalidArgument(format!("no table {name}")))
    }

    /// A whole column, decoded on the CPU.
    pub fn column(&self, table: &str, column: &str) -> Result<Vec<u32>> {
        let t = self.table(table)?;
        let i = t.column_index(column)?;
        t.read_values::<u32>(i, &mut Engine::cpu())
    }
}
