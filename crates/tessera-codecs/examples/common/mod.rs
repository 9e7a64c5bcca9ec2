//! What the LLL speed examples (`lll_decode_speed`, `lll_encode_speed`) share: the thread's CPU
//! clock and the default list of bench files.

/// Nanoseconds this thread has run on a CPU (`/proc/thread-self/schedstat`, Linux), so that a
/// busy shared machine's other work does not count; `None` where it is missing (callers fall
/// back to wall-clock time).
pub fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// `files` as given, or, when none were, every `.gray`, `.txt` and `.xml` file of the
/// repository's `bench/data`, sorted.
pub fn bench_files(files: Vec<String>) -> Vec<String> {
    if !files.is_empty() {
        return files;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/data");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("bench/data")
        .filter_map(|e| e.ok())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".gray") || p.ends_with(".txt") || p.ends_with(".xml"))
        .collect();
    v.sort();
    v
}
