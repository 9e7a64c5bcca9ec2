//! Raw output files written like the container (container.md §6): to `.NAME.tmp-PID` in the
//! destination's folder, then flushed, synced and renamed, so a failed or interrupted
//! `decompress` never leaves a partial file under the final name. Dropping an unfinished
//! [`AtomicFile`] removes the temporary file.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tessera_format::{Error, Result};

/// A file that appears under its final name only when [`AtomicFile::finish`] succeeds.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
    renamed: bool,
}

impl AtomicFile {
    /// Creates the temporary file next to `dest`.
    pub fn create(dest: &Path) -> Result<AtomicFile> {
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
            dest: dest.to_path_buf(),
            tmp,
            file: Some(BufWriter::with_capacity(1 << 20, file)),
            renamed: false,
        })
    }

    /// Flushes, syncs and renames over the destination.
    pub fn finish(mut self) -> Result<()> {
        let w = self
            .file
            .take()
            .ok_or_else(|| Error::InvalidArgument("output already finished".into()))?;
        let file = w.into_inner().map_err(|e| {
            Error::io(
                format!("cannot write {}", self.tmp.display()),
                e.into_error(),
            )
        })?;
        file.sync_all()
            .map_err(|e| Error::io(format!("cannot sync {}", self.tmp.display()), e))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| {
            Error::io(
                format!(
                    "cannot rename {} to {}",
                    self.tmp.display(),
                    self.dest.display()
                ),
                e,
            )
        })?;
        self.renamed = true;
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
        if !self.renamed {
            if let Some(w) = self.file.take() {
                drop(w.into_parts()); // no flush: the file is thrown away
            }
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
