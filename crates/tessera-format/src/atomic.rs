//! Files that appear under their final name only when complete (container.md §6).
//!
//! An [`AtomicFile`] is written in the destination's folder and put in place by
//! [`AtomicFile::finish`], so a failed or interrupted write never leaves a partial file under the
//! final name. Where the data lives until then:
//!
//! - On Linux, an unnamed file (`O_TMPFILE`): nothing to clean up whatever happens to the
//!   process, since the kernel frees an unnamed file when its last descriptor closes, including
//!   after `kill -9`. `finish` gives it a name with `linkat` through `/proc/self/fd`: straight
//!   under the final name when the file must not replace anything, else under the temporary name
//!   `.NAME.tmp-PID` for the instant before the rename over the destination.
//! - Elsewhere, and on filesystems without `O_TMPFILE`, the named temporary file
//!   `.NAME.tmp-PID`. Dropping an unfinished `AtomicFile` removes it; a program that wants it
//!   removed on SIGINT or SIGTERM too calls [`remove_live_temporaries`] from its signal handling
//!   (the library installs no handler: that is the program's decision). A `kill -9` can leave
//!   one behind: [`remove_stale_temporaries`] recognises those of processes no longer running by
//!   the PID in their name.
//!
//! [`AtomicFile::create`] replaces an existing destination (a rename over it);
//! [`AtomicFile::create_new`] never does: its `finish` fails with an [`Error::Io`] of kind
//! `AlreadyExists` when something appeared under the final name meanwhile.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::{Error, Result};

/// Buffer between the writer and the file: large enough that big writes become few syscalls.
const BUF_CAPACITY: usize = 1 << 20;

/// Named temporary files of this process not yet renamed or removed, for
/// [`remove_live_temporaries`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held leaves it consistent (pushes and removes are single
    // operations), so a poisoned lock is still usable.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

fn register(path: &Path) {
    live().push(path.to_path_buf());
}

fn unregister(path: &Path) {
    live().retain(|p| p != path);
}

/// Removes every named temporary file this process is writing. Meant for a program's SIGINT and
/// SIGTERM handling (from a thread that receives the signals, not inside a signal handler: it
/// takes a lock and allocates), right before the process ends; unnamed temporary files need
/// nothing.
pub fn remove_live_temporaries() {
    for p in live().drain(..) {
        let _ = std::fs::remove_file(p);
    }
}

/// The name of `dest`'s temporary file for process `pid`: `.NAME.tmp-PID` in its folder.
fn temp_name(dest: &Path, pid: u32) -> Result<PathBuf> {
    let name = dest.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("{} does not name a file", dest.display()))
    })?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{pid}"));
    Ok(folder_of(dest).join(tmp_name))
}

/// The folder `dest` is in (`.` for a bare file name).
fn folder_of(dest: &Path) -> &Path {
    dest.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Whether process `pid` may be running. Where this cannot be known, the answer is yes, so that
/// nothing another process may be writing is removed.
fn process_may_run(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        if pid <= 0 {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists; it sends nothing.
        let r = unsafe { libc::kill(pid, 0) };
        // EPERM: it exists but belongs to someone else.
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Removes the temporary files `.NAME.tmp-PID` that earlier runs writing `dest` left in its
/// folder when they were killed (`PID` names a process that is no longer running; this
/// process's own are left alone). Returns each removed file with its PID. Files it cannot list
/// or remove are skipped: they are someone else's to deal with.
pub fn remove_stale_temporaries(dest: &Path) -> Vec<(PathBuf, u32)> {
    let Some(name) = dest.file_name() else {
        return Vec::new();
    };
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".tmp-");
    let Some(prefix) = prefix.to_str().map(str::to_owned) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(folder_of(dest)) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix.as_str()))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // Only regular files: never follow or remove anything else under such a name.
        if !entry.file_type().is_ok_and(|t| t.is_file()) || process_may_run(pid) {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            removed.push((path, pid));
        }
    }
    removed
}

/// Where the bytes are until `finish`.
#[derive(Debug)]
enum Temp {
    /// An `O_TMPFILE` file in the destination's folder.
    Unnamed,
    /// `.NAME.tmp-PID`, registered in [`LIVE`] while it exists.
    Named(PathBuf),
}

/// How [`AtomicFile`]'s temporary file is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TempKind {
    /// Unnamed (`O_TMPFILE`) where the OS and filesystem allow it, else named.
    #[default]
    Auto,
    /// Always the named `.NAME.tmp-PID` (for tests of the fallback, and filesystems on which
    /// `O_TMPFILE` misbehaves).
    Named,
}

/// A file that appears under its final name only when [`AtomicFile::finish`] succeeds.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    temp: Temp,
    /// Rename over an existing destination (`create`) or refuse to (`create_new`).
    replace: bool,
    /// `None` once finished; `Drop` then has nothing to clean up.
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file in `dest`'s folder; [`AtomicFile::finish`] replaces `dest`.
    pub fn create(dest: impl AsRef<Path>) -> Result<AtomicFile> {
        Self::with_options(dest.as_ref(), true, TempKind::Auto)
    }

    /// Like [`AtomicFile::create`], but `finish` fails rather than replace anything at `dest`.
    pub fn create_new(dest: impl AsRef<Path>) -> Result<AtomicFile> {
        Self::with_options(dest.as_ref(), false, TempKind::Auto)
    }

    /// [`AtomicFile::create`] (`replace`) or [`AtomicFile::create_new`], with the temporary
    /// file of `kind`.
    pub fn with_options(dest: &Path, replace: bool, kind: TempKind) -> Result<AtomicFile> {
        let dest = dest.to_path_buf();
        // Checked up front so both kinds refuse the same paths (`/`, `..`).
        let named = temp_name(&dest, std::process::id())?;
        let cannot_create = |e| {
            Error::io(
                format!(
                    "cannot create a temporary file for {} in {}",
                    dest.display(),
                    folder_of(&dest).display()
                ),
                e,
            )
        };
        let (file, temp) = match kind {
            TempKind::Auto => match open_unnamed(folder_of(&dest)) {
                Ok(Some(f)) => (f, Temp::Unnamed),
                Ok(None) => (
                    open_named(&named).map_err(cannot_create)?,
                    Temp::Named(named),
                ),
                Err(e) => return Err(cannot_create(e)),
            },
            TempKind::Named => (
                open_named(&named).map_err(cannot_create)?,
                Temp::Named(named),
            ),
        };
        Ok(AtomicFile {
            dest,
            temp,
            replace,
            file: Some(BufWriter::with_capacity(BUF_CAPACITY, file)),
        })
    }

    /// The final path.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The named temporary file written until [`AtomicFile::finish`], if the data is in one
    /// (`None` for an unnamed file).
    pub fn temp_path(&self) -> Option<&Path> {
        match &self.temp {
            Temp::Named(p) => Some(p),
            Temp::Unnamed => None,
        }
    }

    fn write_context(&self) -> String {
        format!("cannot write {}", self.dest.display())
    }

    /// Writes all of `bytes`, mapping failure to [`Error::Io`] naming the destination.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes)
            .map_err(|e| Error::io(self.write_context(), e))
    }

    /// Overwrites `bytes` at `offset` (inside what was written already), then goes on appending
    /// at the end. The container writer uses it to patch the header's minor version.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let context = self.write_context();
        let io = |e| Error::io(context.clone(), e);
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

    /// Flushes, syncs and puts the file under its final name, then syncs the folder (best
    /// effort: not every platform can open a folder) so the new name itself is durable.
    pub fn finish(mut self) -> Result<()> {
        let w = self
            .file
            .take()
            .ok_or_else(|| Error::InvalidArgument("output already finished".into()))?;
        // From here on `Drop` has no file; the named temporary file (if any) is removed below
        // on every failure.
        let result = self.commit(w);
        if let Temp::Named(tmp) = &self.temp {
            if result.is_err() {
                let _ = std::fs::remove_file(tmp);
            }
            unregister(tmp);
        }
        result?;
        if let Ok(dir) = File::open(folder_of(&self.dest)) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    fn commit(&self, w: BufWriter<File>) -> Result<()> {
        let file = w
            .into_inner()
            .map_err(|e| Error::io(self.write_context(), e.into_error()))?;
        file.sync_all()
            .map_err(|e| Error::io(format!("cannot sync {}", self.dest.display()), e))?;
        let exists = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::io(
                    format!("cannot write {}", self.dest.display()),
                    std::io::Error::new(
                        e.kind(),
                        "a file appeared under that name while it was being written",
                    ),
                )
            } else {
                Error::io(format!("cannot create {}", self.dest.display()), e)
            }
        };
        match &self.temp {
            Temp::Named(tmp) => {
                drop(file);
                if self.replace {
                    std::fs::rename(tmp, &self.dest).map_err(|e| {
                        Error::io(format!("cannot replace {}", self.dest.display()), e)
                    })
                } else {
                    // A hard link fails rather than replace; the named file then goes.
                    std::fs::hard_link(tmp, &self.dest).map_err(exists)?;
                    let _ = std::fs::remove_file(tmp);
                    Ok(())
                }
            }
            Temp::Unnamed => {
                if !self.replace {
                    return link_unnamed(&file, &self.dest).map_err(exists);
                }
                // A link cannot replace a file: name it `.NAME.tmp-PID` for the instant before
                // the rename. A leftover of that name from a recycled PID is stale.
                let tmp = temp_name(&self.dest, std::process::id())?;
                register(&tmp);
                let linked = match link_unnamed(&file, &tmp) {
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let _ = std::fs::remove_file(&tmp);
                        link_unnamed(&file, &tmp)
                    }
                    other => other,
                };
                let result = linked
                    .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))
                    .and_then(|()| {
                        std::fs::rename(&tmp, &self.dest).map_err(|e| {
                            let _ = std::fs::remove_file(&tmp);
                            Error::io(format!("cannot replace {}", self.dest.display()), e)
                        })
                    });
                unregister(&tmp);
                result
            }
        }
    }
}

/// Opens `.NAME.tmp-PID` new, registered for [`remove_live_temporaries`]. One left by an
/// earlier process with this PID is stale and replaced.
fn open_named(tmp: &Path) -> std::io::Result<File> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            .open(tmp)
    };
    let file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(tmp)?;
            open()?
        }
        other => other?,
    };
    register(tmp);
    Ok(file)
}

/// An unnamed file in `folder`, or `None` where the OS or the filesystem has none (the caller
/// then uses a named one). Errors are those that a named file would meet too (no such folder,
/// no permission).
#[cfg(target_os = "linux")]
fn open_unnamed(folder: &Path) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    // `finish` names the file through /proc; without it the file could never be named.
    if !Path::new("/proc/self/fd").is_dir() {
        return Ok(None);
    }
    match OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o666)
        .custom_flags(libc::O_TMPFILE)
        .open(folder)
    {
        Ok(f) => Ok(Some(f)),
        // The filesystem (EOPNOTSUPP) or the kernel (EISDIR, EINVAL) has no O_TMPFILE.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_unnamed(_folder: &Path) -> std::io::Result<Option<File>> {
    Ok(None)
}

/// Gives the unnamed `file` the name `to`; fails with `AlreadyExists` rather than replace.
#[cfg(target_os = "linux")]
fn link_unnamed(file: &File, to: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(std::io::Error::other)?;
    let to = CString::new(to.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: both are NUL-terminated strings that outlive the call. Linking the /proc entry with
    // AT_SYMLINK_FOLLOW is the documented way to name an O_TMPFILE file without privileges.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn link_unnamed(_file: &File, _to: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
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
            // the file is being thrown away. An unnamed file simply vanishes.
            drop(w.into_parts());
            if let Temp::Named(tmp) = &self.temp {
                let _ = std::fs::remove_file(tmp);
                unregister(tmp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "tests: a failed unwrap is a failed test"
    )]
    use super::*;

    /// `remove_live_temporaries` removes every named temporary file of the process: tests that
    /// make named ones take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn both_kinds_replace_or_refuse_as_asked() {
        let _turn = serial();
        for kind in [TempKind::Auto, TempKind::Named] {
            let dir = tempfile::tempdir().unwrap();
            let dest = dir.path().join("out.bin");
            let mut f = AtomicFile::with_options(&dest, false, kind).unwrap();
            f.write_bytes(b"first").unwrap();
            assert!(!dest.exists(), "{kind:?}: nothing under the final name yet");
            f.finish().unwrap();
            assert_eq!(std::fs::read(&dest).unwrap(), b"first");

            // create_new refuses what is there by the time it finishes.
            let mut f = AtomicFile::with_options(&dest, false, kind).unwrap();
            f.write_bytes(b"second").unwrap();
            let err = f.finish().unwrap_err();
            assert!(
                matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists),
                "{kind:?}: {err}"
            );
            assert_eq!(std::fs::read(&dest).unwrap(), b"first");

            // create replaces it, patching in place first.
            let mut f = AtomicFile::with_options(&dest, true, kind).unwrap();
            f.write_bytes(b"third").unwrap();
            f.write_at(0, b"T").unwrap();
            f.write_bytes(b"!").unwrap();
            f.finish().unwrap();
            assert_eq!(std::fs::read(&dest).unwrap(), b"Third!");
            assert_eq!(names(dir.path()), ["out.bin"], "{kind:?}");
        }
    }

    #[test]
    fn named_temporaries_are_listed_until_finished_or_dropped() {
        let _turn = serial();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x.tsr");
        let f = AtomicFile::with_options(&dest, true, TempKind::Named).unwrap();
        let tmp = f.temp_path().unwrap().to_path_buf();
        assert!(tmp.exists() && live().contains(&tmp));
        drop(f);
        assert!(!tmp.exists() && !live().contains(&tmp));

        let f = AtomicFile::with_options(&dest, true, TempKind::Named).unwrap();
        let tmp = f.temp_path().unwrap().to_path_buf();
        remove_live_temporaries();
        assert!(!tmp.exists());
        drop(f);
        assert_eq!(names(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn stale_temporaries_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("v.bin");
        // A process that has exited: its PID is free until reused.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = dir.path().join(format!(".v.bin.tmp-{dead}"));
        let mine = dir
            .path()
            .join(format!(".v.bin.tmp-{}", std::process::id()));
        let other = dir.path().join(format!(".w.bin.tmp-{dead}"));
        let odd = dir.path().join(".v.bin.tmp-12x");
        for p in [&stale, &mine, &other, &odd] {
            std::fs::write(p, b"x").unwrap();
        }
        let removed = remove_stale_temporaries(&dest);
        assert_eq!(removed, vec![(stale.clone(), dead)]);
        assert!(!stale.exists() && mine.exists() && other.exists() && odd.exists());
    }

    #[test]
    fn errors_name_the_destination() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("no-such-folder").join("out.bin");
        let err = AtomicFile::create(&dest).unwrap_err().to_string();
        assert!(err.contains(&dest.display().to_string()), "{err}");
        assert!(AtomicFile::create("/").is_err());
    }
}
