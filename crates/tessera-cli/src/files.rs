//! Inputs and outputs, handled as zstd and gzip handle theirs.
//!
//! - `-` is stdin as an input and stdout as an output, everywhere a file is taken or given.
//! - An [`Output`] is checked before any work starts: an existing regular file needs `--force`;
//!   the input itself (same device and inode, through links and symlinks) is refused; a missing
//!   or non-folder parent and a folder at the path are refused naming the path given. A `.tsr`
//!   output is not written to a terminal.
//! - Regular files are written through [`AtomicFile`]: never a partial file under the final
//!   name; on Linux an unnamed `O_TMPFILE` file that cannot outlive the process, elsewhere a
//!   named `.NAME.tmp-PID` removed on failure and, through [`install_signal_handling`], on
//!   SIGINT, SIGTERM and SIGHUP. Named temporary files of killed runs are removed when the same
//!   output is written again, with a note on stderr. `TESSERA_NAMED_TEMP_FILES=1` forces the
//!   named kind (for the tests of that fallback, and filesystems whose `O_TMPFILE` misbehaves).
//! - A symlink to a regular file is followed: the file it points to is replaced, the link stays.
//! - Special files (devices, FIFOs, `/dev/fd/N` of `>(...)`) and stdout are written directly and
//!   streamed; a `.tsr` stream declares its minor version up front
//!   ([`ContainerWriter::streaming`]).
//! - `.tsr` inputs that are not regular files (stdin, FIFOs) are read into memory whole: the
//!   directory sits at the end of the file.
//! - A closed pipe: SIGPIPE keeps its default action (see [`install_signal_handling`]), so the
//!   process ends quietly with the conventional status, 128 + 13 = 141 as a shell reports it.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use tessera_format::atomic::{self, AtomicFile, TempKind};
use tessera_format::container::{Container, ContainerWriter, MAGIC};

use crate::report::escape;
use crate::{CliError, CliResult};

/// The argument that means stdin or stdout.
pub const STDIO: &str = "-";

/// Reads and writes through the OS in pieces of this size.
const BUF_CAPACITY: usize = 1 << 20;

/// A path as messages show it: control characters escaped, so a name cannot break the line.
pub fn shown(p: &Path) -> String {
    escape(&p.display().to_string())
}

/// Whether `arg` is `-`.
pub fn is_stdio(arg: &Path) -> bool {
    arg.as_os_str() == STDIO
}

/// SIGINT, SIGTERM and SIGHUP: a thread receives them, removes the named temporary files being
/// written ([`atomic::remove_live_temporaries`]) and ends the process the way the signal would
/// have (the parent sees death by that signal). SIGPIPE: back to its default action, which Rust
/// programs otherwise ignore; then a write to a closed pipe ends the process quietly, as it
/// ends `cat` or `head`, rather than as an error about a broken pipe (the program never has a
/// temporary file open while it writes to stdout, so nothing is left behind by it).
pub fn install_signal_handling() {
    #[cfg(unix)]
    {
        // SAFETY: setting a signal's disposition to its default installs no handler code.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        // Without the handler thread, the signals keep their default action: the process still
        // ends, only a named temporary file could then stay behind.
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            let _ = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        atomic::remove_live_temporaries();
                        let _ = signal_hook::low_level::emulate_default_handler(sig);
                        // Only reached if the default action could not be restored.
                        std::process::exit(128 + sig);
                    }
                });
        }
    }
}

/// Device and inode of an open file or a path.
#[cfg(unix)]
fn identity(m: &Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_m: &Metadata) -> Option<(u64, u64)> {
    None
}

/// A duplicate of stdin's (0) or stdout's (1) descriptor as a `File`: unbuffered by Rust's
/// stdio, `Send`, with metadata.
#[cfg(unix)]
fn std_file(fd: i32) -> std::io::Result<File> {
    use std::os::fd::AsFd;
    let owned = if fd == 0 {
        std::io::stdin().as_fd().try_clone_to_owned()?
    } else {
        std::io::stdout().as_fd().try_clone_to_owned()?
    };
    Ok(File::from(owned))
}

#[cfg(not(unix))]
fn std_file(_fd: i32) -> std::io::Result<File> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "stdin and stdout as files need a Unix system",
    ))
}

/// A file given as an input: a path, or stdin for `-`.
#[derive(Debug)]
pub struct Input {
    /// `None`: stdin.
    path: Option<PathBuf>,
    file: File,
    meta: Metadata,
}

impl Input {
    /// Opens `arg` (`-`: stdin). A folder is refused.
    pub fn open(arg: &Path) -> CliResult<Input> {
        if is_stdio(arg) {
            let file = std_file(0).map_err(|e| CliError(format!("cannot read stdin: {e}")))?;
            let meta = file
                .metadata()
                .map_err(|e| CliError(format!("cannot stat stdin: {e}")))?;
            return Ok(Input {
                path: None,
                file,
                meta,
            });
        }
        let file =
            File::open(arg).map_err(|e| CliError(format!("cannot open {}: {e}", shown(arg))))?;
        let meta = file
            .metadata()
            .map_err(|e| CliError(format!("cannot stat {}: {e}", shown(arg))))?;
        if meta.is_dir() {
            return Err(CliError(format!("{} is a folder, not a file", shown(arg))));
        }
        Ok(Input {
            path: Some(arg.to_path_buf()),
            file,
            meta,
        })
    }

    /// `stdin`, or the path as messages show it.
    pub fn shown(&self) -> String {
        self.path.as_deref().map_or_else(|| "stdin".into(), shown)
    }

    /// The path (`None` for stdin).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The size of a regular file (`None` for pipes, devices and terminals).
    pub fn regular_len(&self) -> Option<u64> {
        self.meta.is_file().then_some(self.meta.len())
    }

    /// The raw contents, buffered.
    pub fn reader(self) -> Box<dyn BufRead + Send> {
        Box::new(BufReader::with_capacity(BUF_CAPACITY, self.file))
    }

    /// Opens the input as a `.tsr` file: a regular file is mapped, anything else read whole.
    /// Errors name the input; a file of another kind is "not a .tsr file".
    pub fn container(mut self) -> CliResult<Container> {
        let name = self.shown();
        if let (Some(path), true) = (&self.path, self.meta.is_file()) {
            return Container::open(path).map_err(|e| match e {
                // I/O errors already name the file.
                tessera_format::Error::Io { .. } => e.into(),
                other => {
                    let mut head = Vec::new();
                    let _ = (&self.file).take(MAGIC.len() as u64).read_to_end(&mut head);
                    container_error(&name, other, &head)
                }
            });
        }
        if self.path.is_none() && std::io::stdin().is_terminal() {
            return Err(CliError(
                "stdin is a terminal: pipe a .tsr file in or give its path".into(),
            ));
        }
        let mut bytes = Vec::new();
        self.file
            .read_to_end(&mut bytes)
            .map_err(|e| CliError(format!("cannot read {name}: {e}")))?;
        let head = bytes[..bytes.len().min(MAGIC.len())].to_vec();
        Container::from_bytes(bytes).map_err(|e| container_error(&name, e, &head))
    }
}

/// A container error naming the input; a file that does not start like a `.tsr` file is
/// reported as such rather than through the first check it failed.
fn container_error(name: &str, e: tessera_format::Error, head: &[u8]) -> CliError {
    use tessera_format::Error;
    let not_tsr = head != &MAGIC[..head.len().min(MAGIC.len())];
    match e {
        Error::Truncated {
            what: "file",
            available: 0,
            ..
        } => CliError(format!("{name}: empty file, not a .tsr file")),
        Error::BadMagic { offset: 0, .. } => CliError(format!("{name}: not a .tsr file")),
        Error::Truncated { what: "file", .. } if not_tsr => {
            CliError(format!("{name}: not a .tsr file"))
        }
        other => CliError(format!("{name}: {other}")),
    }
}

/// What an output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// A `.tsr` file: never written to a terminal.
    Tsr,
    /// Raw values.
    Raw,
}

/// Where an output's bytes go.
#[derive(Debug)]
enum Sink {
    /// A regular file, put under its name by `finish`.
    Atomic(AtomicFile),
    /// Stdout or a special file, written as it comes.
    Direct(BufWriter),
}

/// A buffered direct writer whose errors name the output.
#[derive(Debug)]
struct BufWriter {
    out: std::io::BufWriter<File>,
    name: String,
}

impl Write for BufWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf).map_err(|e| named(&self.name, e))
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf).map_err(|e| named(&self.name, e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().map_err(|e| named(&self.name, e))
    }
}

fn named(name: &str, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{name}: {e}"))
}

/// A file given as an output: a path, or stdout for `-`.
#[derive(Debug)]
pub struct Output {
    name: String,
    stdout: bool,
    sink: Sink,
}

impl Output {
    /// Checks `arg` and opens it for writing, before any work: see the module docs. `inputs` are
    /// the files the output must not be.
    pub fn create(arg: &Path, force: bool, inputs: &[&Input], data: Data) -> CliResult<Output> {
        if is_stdio(arg) {
            return Self::stdout(inputs, data);
        }
        let name = shown(arg);
        let (target, meta) = match std::fs::symlink_metadata(arg) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::metadata(arg) {
                Ok(target_meta) => {
                    let target = std::fs::canonicalize(arg)
                        .map_err(|e| CliError(format!("cannot resolve {name}: {e}")))?;
                    (target, Some(target_meta))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(CliError(format!(
                        "{name} is a symbolic link to a missing file"
                    )))
                }
                Err(e) => return Err(CliError(format!("cannot write {name}: {e}"))),
            },
            Ok(m) => (arg.to_path_buf(), Some(m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (arg.to_path_buf(), None),
            Err(e) => return Err(CliError(format!("cannot write {name}: {e}"))),
        };
        let Some(meta) = meta else {
            check_folder(arg, &name)?;
            return Self::atomic(&target, name, false);
        };
        if meta.is_dir() {
            return Err(CliError(format!(
                "{name} is a folder; give the output file's path"
            )));
        }
        refuse_inputs(&meta, &name, inputs)?;
        if meta.is_file() {
            if !force {
                return Err(CliError(format!(
                    "{name} already exists; use --force (-f) to overwrite it"
                )));
            }
            return Self::atomic(&target, name, true);
        }
        // A device or FIFO: written in place, as `cat > /dev/null` would (opening a FIFO waits
        // for its reader).
        let file = OpenOptions::new()
            .write(true)
            .open(arg)
            .map_err(|e| CliError(format!("cannot open {name} for writing: {e}")))?;
        if data == Data::Tsr && file.is_terminal() {
            return Err(CliError(format!(
                "{name} is a terminal; .tsr data is not written to terminals"
            )));
        }
        Ok(Output {
            sink: Sink::Direct(BufWriter {
                out: std::io::BufWriter::with_capacity(BUF_CAPACITY, file),
                name: name.clone(),
            }),
            name,
            stdout: false,
        })
    }

    fn stdout(inputs: &[&Input], data: Data) -> CliResult<Output> {
        let name = "stdout".to_owned();
        if data == Data::Tsr && std::io::stdout().is_terminal() {
            return Err(CliError(
                "stdout is a terminal; .tsr data is not written to terminals (redirect it or give an output file)"
                    .into(),
            ));
        }
        let file = std_file(1).map_err(|e| CliError(format!("cannot write stdout: {e}")))?;
        if let Ok(meta) = file.metadata() {
            refuse_inputs(&meta, &name, inputs)?;
        }
        Ok(Output {
            sink: Sink::Direct(BufWriter {
                out: std::io::BufWriter::with_capacity(BUF_CAPACITY, file),
                name: name.clone(),
            }),
            name,
            stdout: true,
        })
    }

    /// A regular file through an [`AtomicFile`], after removing what killed runs left.
    fn atomic(target: &Path, name: String, replace: bool) -> CliResult<Output> {
        for (path, pid) in atomic::remove_stale_temporaries(target) {
            eprintln!(
                "tessera: removed {}, a temporary file left by an interrupted run (process {pid})",
                shown(&path)
            );
        }
        let kind = if std::env::var_os("TESSERA_NAMED_TEMP_FILES").is_some_and(|v| v == "1") {
            TempKind::Named
        } else {
            TempKind::Auto
        };
        let file = AtomicFile::with_options(target, replace, kind)?;
        Ok(Output {
            sink: Sink::Atomic(file),
            name,
            stdout: false,
        })
    }

    /// The output as messages show it (`stdout` for `-`).
    pub fn shown(&self) -> &str {
        &self.name
    }

    /// Whether the output is stdout (a summary then goes to stderr).
    pub fn is_stdout(&self) -> bool {
        self.stdout
    }

    /// A `.tsr` writer into this output. A stream's header says version 1.`minor`, which must
    /// cover every column written (a file's header is patched at the end instead).
    pub fn container_writer(self, minor: u16) -> CliResult<ContainerWriter> {
        Ok(match self.sink {
            Sink::Atomic(file) => ContainerWriter::with_file(file)?,
            Sink::Direct(w) => ContainerWriter::streaming(Box::new(w), minor)?,
        })
    }

    /// Completes the output: a regular file appears under its name, a stream is flushed.
    pub fn finish(self) -> CliResult<()> {
        match self.sink {
            Sink::Atomic(file) => file.finish()?,
            Sink::Direct(mut w) => w
                .flush()
                .map_err(|e| CliError(format!("cannot write {e}")))?,
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.sink {
            Sink::Atomic(f) => f.write(buf).map_err(|e| named(&self.name, e)),
            Sink::Direct(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Atomic(f) => f.write_all(buf).map_err(|e| named(&self.name, e)),
            Sink::Direct(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Atomic(f) => f.flush().map_err(|e| named(&self.name, e)),
            Sink::Direct(w) => w.flush(),
        }
    }
}

/// Refuses an output that is one of the inputs.
fn refuse_inputs(out: &Metadata, name: &str, inputs: &[&Input]) -> CliResult<()> {
    let Some(id) = identity(out) else {
        return Ok(());
    };
    if let Some(input) = inputs.iter().find(|i| identity(&i.meta) == Some(id)) {
        return Err(CliError(format!(
            "{name} is the input {}; writing it would destroy the input",
            input.shown()
        )));
    }
    Ok(())
}

/// The folder a new output goes in must exist.
fn check_folder(arg: &Path, name: &str) -> CliResult<()> {
    let folder = arg
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match std::fs::metadata(folder) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(CliError(format!(
            "cannot write {name}: {} is not a folder",
            shown(folder)
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CliError(format!(
            "cannot write {name}: folder {} does not exist",
            shown(folder)
        ))),
        Err(e) => Err(CliError(format!(
            "cannot write {name}: {}: {e}",
            shown(folder)
        ))),
    }
}
