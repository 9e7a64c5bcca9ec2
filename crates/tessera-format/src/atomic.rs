//! Files that appear under their final name only when complete (container.md §6).
//!
//! [`AtomicFile`] writes to `.NAME.tmp-PID` in the destination's folder; [`AtomicFile::finish`]
//! flushes, syncs, renames it over the destination and syncs the folder (best effort). Dropping
//! an unfinished `AtomicFile` removes the temporary file, so a failed or interrupted write never
//! leaves a partial file under the final name. The container writer and the CLI's raw outputs
//! both write through it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Buffer between the writer and the file: large enough that big writes become few syscalls.
const BUF_CAPACITY: usize = 1 << 20;

/// A file that appears under its final name only when [`AtomicFile::finish`] succeeds.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    /// `None` once finished; `Drop` then has nothing to clean up.
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file next to `dest`.
    pub fn create(dest: impl AsRef<Path>) -> Result<AtomicFile> {
        let dest = dest.as_ref().to_path_buf();
        let name = dest.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!("{} does not name a file", dest.display()))
        })?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.join(tmp_name),
            _ => PathBuf::from(tmp_name),
        };
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?;
        Ok(AtomicFile {
            dest,
            tmp,
            file: Some(BufWriter::with_capacity(BUF_CAPACITY, file)),
        })
    }

    /// The final path.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The temporary path written until [`AtomicFile::finish`].
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Writes all of `bytes`, mapping failure to [`Error::Io`] naming the temporary file.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes)
            .map_err(|e| Error::io(format!("cannot write {}", self.tmp.display()), e))
    }

    /// Overwrites `bytes` at `offset` (inside what was written already), then goes on appending
    /// at the end. The container writer uses it to patch the header's minor version.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let tmp = self.tmp.clone();
        let io = |e| Error::io(format!("cannot write {}", tmp.display()), e);
        let w = self
            .file
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("output already finished".into()))?;
        let end = w.stream_position().map_err(io)?;
        w.seek(SeekFrom::Start(offset)).map_err(io)?;
        w.write_all(bytes).map_err(io)?;
        w.seek(SeekFrom::Start(end)).map_err(io)?;
        Ok(())
    }

    /// Flushes, syncs and renames over the destination, then syncs the folder (best effort: not
    /// every platform can open a folder) so the rename itself is durable.
    pub fn finish(mut self) -> Result<()> {
        let w = self
            .file
            .take()
            .ok_or_else(|| Error::InvalidArgument("output already finished".into()))?;
        let cleanup = |e: Error, tmp: &Path| {
            let _ = std::fs::remove_file(tmp);
            e
        };
        let file = w.into_inner().map_err(|e| {
            cleanup(
                Error::io(
                    format!("cannot write {}", self.tmp.display()),
                    e.into_error(),
                ),
                &self.tmp,
            )
        })?;
        file.sync_all().map_err(|e| {
            cleanup(
                Error::io(format!("cannot sync {}", self.tmp.display()), e),
                &self.tmp,
            )
        })?;
        drop(file);
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| {
            let msg = format!(
                "cannot rename {} to {}",
                self.tmp.display(),
                self.dest.display()
            );
            cleanup(Error::io(msg, e), &self.tmp)
        })?;
        let parent = self
            .dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let Ok(dir) = File::open(parent) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(std::io::Error::other("output already finished")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(buf),
            None => Err(std::io::Error::other("output already finished")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(w) = self.file.take() {
            // Close before removing (required on some platforms), without flushing the buffer:
            // the file is being thrown away.
            drop(w.into_parts());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
