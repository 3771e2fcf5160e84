//! The JSON Lines output of a job that may be resumed: a file holds the
//! job's results (or one shard's) in the order they finished, so after a
//! crash it is a prefix of the stored results. Before a run, a cut last
//! line is removed and the stored results the file misses are appended;
//! the run then appends its own. No record is written twice, none is
//! missing.
//!
//! An output never destroys what it is not: an existing file that does
//! not hold this job's records (checked record by record) is refused
//! unless the caller says to overwrite it, before anything is written. A
//! pipe, a character device or a socket (`/dev/null`, a FIFO), or a link
//! to one (`/dev/stdout`), is a stream: written to, never cut or read. A
//! link to anything else (a regular file, nothing) is refused: the file
//! would be cut through it. Files are opened without following a link
//! and checked once open.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use crawlkeeper_store::{JobInfo, Store, StoreError};
use crawlkeeper_warc::target::{Target, open_regular, what_is, what_it_leads_to};

/// Results read from the store at a time.
const PAGE: usize = 10_000;

/// An output file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The file holds something else than this job's records: the user
    /// must choose another path or say to overwrite it.
    #[error("{0}")]
    Foreign(String),
    /// The file cannot be read or written.
    #[error("cannot write output file '{path}': {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// True when `path` is a pipe, a character device or a socket, or a
/// link to one (`/dev/stdout`): written as a stream, never cut, read or
/// rewritten.
pub fn is_stream(path: &Path) -> bool {
    if own_descriptor(path).is_some() {
        return true;
    }
    match what_is(path) {
        Ok(Target::Stream) => true,
        Ok(Target::Link) => matches!(what_it_leads_to(path), Ok(Target::Stream)),
        _ => false,
    }
}

/// The descriptor of this process that `path` names, for `/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N` and `/proc/self/fd/N`: what the user's shell
/// set up (`--out /dev/stdout > pages.jsonl`). Written to as a stream
/// through that descriptor itself, whatever it leads to: never reopened
/// (which would start at offset 0 of a file the shell appends to), cut
/// or read.
pub fn own_descriptor(path: &Path) -> Option<i32> {
    let s = path.to_str()?;
    match s {
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        _ => s
            .strip_prefix("/dev/fd/")
            .or_else(|| s.strip_prefix("/proc/self/fd/"))
            .and_then(|n| n.parse::<i32>().ok())
            .filter(|n| (1..=1024).contains(n)),
    }
}

/// A copy of the descriptor `path` names ([`own_descriptor`]), to write
/// to where it writes; `None` when `path` names none.
pub fn open_own_descriptor(path: &Path) -> Option<std::io::Result<File>> {
    let fd = own_descriptor(path)?;
    // SAFETY: dup(2) of a descriptor number: it fails with EBADF when that
    // number is not open, and otherwise returns a new one that is ours.
    let copy = unsafe { libc::dup(fd) };
    if copy < 0 {
        return Some(Err(std::io::Error::last_os_error()));
    }
    // SAFETY: `copy` is a fresh descriptor nothing else owns.
    Some(Ok(unsafe {
        <File as std::os::fd::FromRawFd>::from_raw_fd(copy)
    }))
}

/// Refuses an output path that is neither missing, a regular file nor a
/// stream ([`is_stream`]): a link to a file (or to nothing), a directory,
/// a block device. Nothing is written through a link but to a stream.
pub fn check_target(path: &Path) -> Result<(), OutputError> {
    let what = what_is(path).map_err(|e| io(path, e))?;
    match what {
        Target::Missing | Target::Regular | Target::Stream => Ok(()),
        Target::Link if is_stream(path) => Ok(()),
        Target::Link => Err(OutputError::Foreign(format!(
            "output file '{}' is a symbolic link to {}; a link is written through only to a \
             pipe or device (like /dev/stdout): give the file's own path",
            path.display(),
            match what_it_leads_to(path) {
                Ok(Target::Missing) => "nothing",
                Ok(t) => t.describe(),
                Err(_) => "something unreadable",
            }
        ))),
        Target::Other => Err(OutputError::Foreign(format!(
            "output file '{}' is {}",
            path.display(),
            what.describe()
        ))),
    }
}

/// Opens the regular file at `path` (never through a link: see
/// [`crawlkeeper_warc::target::open_regular`]).
fn open_file(path: &Path, options: &mut OpenOptions) -> Result<File, OutputError> {
    open_regular(path, options).map_err(|e| io(path, e))
}

/// The records of a job an output holds: all of them, or some shards'.
#[derive(Clone, Copy)]
pub struct Part<'a> {
    /// The job.
    pub job: &'a JobInfo,
    /// Its shards, or `None` for the whole job.
    pub shards: Option<&'a [u32]>,
}

/// Refuses an existing, non-empty regular file at `path` unless it holds
/// only records of `part` as stored (a prefix of its results, a cut last
/// line allowed), or `overwrite` is set. With no job, any content is
/// foreign.
pub fn check_existing(
    path: &Path,
    stored: Option<(&mut dyn Store, Part<'_>)>,
    overwrite: bool,
) -> Result<(), OutputError> {
    check_target(path)?;
    if overwrite || is_stream(path) {
        return Ok(());
    }
    let mut file = match open_regular(path, OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(path, e)),
    };
    if file.metadata().map_err(|e| io(path, e))?.len() == 0 {
        return Ok(());
    }
    let holds = match stored {
        Some((store, part)) => holds_records_of(&mut file, path, store, part)?,
        None => false,
    };
    if holds {
        return Ok(());
    }
    Err(OutputError::Foreign(format!(
        "output file '{}' exists and does not hold this job's records; \
         use another --out, or --overwrite to replace it",
        path.display()
    )))
}

/// True when every line of `file` is the stored record at its position.
fn holds_records_of(
    file: &mut File,
    path: &Path,
    store: &mut dyn Store,
    part: Part<'_>,
) -> Result<bool, OutputError> {
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut stored: VecDeque<String> = VecDeque::new();
    let mut after = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io(path, e))?;
        if n == 0 {
            return Ok(true);
        }
        if stored.is_empty() {
            let page = store.results(part.job.id, part.shards, after, PAGE)?;
            if let Some((last, _)) = page.last() {
                after = *last;
            }
            stored.extend(page.into_iter().map(|(_, json)| json));
        }
        let Some(record) = stored.pop_front() else {
            return Ok(false);
        };
        let same = match line.strip_suffix(b"\n") {
            Some(complete) => complete == record.as_bytes(),
            // A last line cut by a crash is the start of its record.
            None => record.as_bytes().starts_with(&line),
        };
        if !same {
            return Ok(false);
        }
    }
}

/// Takes `file` for this process alone (an exclusive `flock`, held while
/// the file is open): two processes appending to one file would write
/// records twice or over each other.
fn lock(file: File, path: &Path) -> Result<File, OutputError> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own; released when the file closes.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(file);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        return Err(OutputError::Foreign(format!(
            "output file '{}' is being written by another process; use another --out",
            path.display()
        )));
    }
    Err(io(path, e))
}

/// Takes an existing output file at `path` for this process, before
/// anything else is changed (see [`open_output`]); `None` when there is
/// no file yet.
pub fn lock_existing(path: &Path) -> Result<Option<File>, OutputError> {
    match open_regular(path, OpenOptions::new().read(true).write(true)) {
        Ok(f) => lock(f, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path, e)),
    }
}

/// Opens `path` for the records of `part`, brought up to date with the
/// store: a cut last line removed and the stored records it misses
/// appended (all of them with `overwrite`, which first empties the file).
/// The caller has checked the file with [`check_existing`], and may have
/// taken it already with [`lock_existing`] (`locked`).
pub fn open_output(
    path: &Path,
    locked: Option<File>,
    store: &mut dyn Store,
    part: Part<'_>,
    overwrite: bool,
) -> Result<File, OutputError> {
    let done = stored_results(store, part)?;
    let mut file = match locked {
        Some(f) => f,
        None => {
            let f = open_file(
                path,
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
            )?;
            lock(f, path)?
        }
    };
    if overwrite || done == 0 {
        file.set_len(0).map_err(|e| io(path, e))?;
    }
    let (lines, complete_len) = complete_lines(&mut file).map_err(|e| io(path, e))?;
    if lines > done {
        return Err(OutputError::Foreign(format!(
            "output file '{}' has {lines} records but job {} has {done}; it belongs to another crawl \
             (use another --out, or --fresh to start over)",
            path.display(),
            part.job.name,
        )));
    }
    file.set_len(complete_len).map_err(|e| io(path, e))?;
    file.seek(SeekFrom::End(0)).map_err(|e| io(path, e))?;
    // Positions may skip numbers: the file's records are counted off.
    let mut skip = lines;
    let mut after = 0;
    loop {
        let page = store.results(part.job.id, part.shards, after, PAGE)?;
        let Some((last, _)) = page.last() else { break };
        after = *last;
        let from = usize::try_from(skip).unwrap_or(usize::MAX).min(page.len());
        skip -= from as u64;
        for (_, json) in &page[from..] {
            file.write_all(json.as_bytes()).map_err(|e| io(path, e))?;
            file.write_all(b"\n").map_err(|e| io(path, e))?;
        }
    }
    file.flush().map_err(|e| io(path, e))?;
    Ok(file)
}

/// How many results of `part` the store holds: its URLs done, or, for a
/// continuous crawl (a result per fetch), every fetch.
pub fn stored_results(store: &mut dyn Store, part: Part<'_>) -> Result<u64, StoreError> {
    if crate::identity::is_continuous(part.job) {
        return store.results_count(part.job.id, part.shards);
    }
    Ok(match part.shards {
        None => part.job.counts.done,
        Some(held) => store
            .shards(part.job)?
            .iter()
            .filter(|s| held.contains(&s.shard))
            .map(|s| s.counts.done)
            .sum(),
    })
}

/// Counts the complete lines of `file` and the length they end at.
fn complete_lines(file: &mut File) -> std::io::Result<(u64, u64)> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(1 << 16, &mut *file);
    let (mut lines, mut len) = (0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            return Ok((lines, len));
        }
        lines += 1;
        len += n as u64;
    }
}
