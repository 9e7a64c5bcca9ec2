//! Fuzzes the ORC file reader (`tessera_orc`): the input is a whole file. Opening checks the
//! tail; every column of every stripe is then decoded. Any result is fine but a panic; a file
//! that reads must give batches of the rows its footer announces.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tessera_orc::{OrcFile, OrcReader};

fuzz_target!(|data: &[u8]| {
    let Ok(f) = OrcFile::from_bytes(data.to_vec()) else {
        return;
    };
    let Ok(r) = OrcReader::new(&f, None) else {
        return;
    };
    if let Ok(b) = r.read_all() {
        let rows: usize = b.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows as u64, f.rows());
    }
});
