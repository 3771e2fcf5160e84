//! The JSON Lines output of a job that may be resumed: a file holds the
//! job's results in the order they finished, so after a crash it is a
//! prefix of the stored results. Before a run, a cut last line is removed
//! and the stored results the file misses are appended; the run then
//! appends its own. No record is written twice, none is missing.
//!
//! An output never destroys what it is not: a path that is the state file
//! (or one of its companions) or a seed file is refused, and an existing
//! file that does not hold this job's records (checked record by record)
//! is refused unless `--overwrite` is given. All of this is decided before
//! anything is written. A path that is not a regular file (`/dev/null`,
//! `/dev/stdout`, a pipe) is a stream: written to, never cut or read.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crawlkeeper_crawl::{JsonlSink, Sink};
use crawlkeeper_model::CrawlRecord;
use crawlkeeper_store::{JobInfo, Store};

use crate::exit::CliError;
use crate::state::fatal;

/// Results read from the store at a time.
const PAGE: usize = 10_000;

/// A path the output must not be, and what it is.
pub struct Protected {
    /// The path.
    pub path: PathBuf,
    /// What it is, for the message ("the state file", "a seed file").
    pub what: &'static str,
}

/// Refuses `out` when it names one of `protected`.
pub fn refuse_protected(out: &Path, protected: &[Protected]) -> Result<(), CliError> {
    match protected.iter().find(|p| same_file(out, &p.path)) {
        Some(p) => Err(CliError::Usage(format!(
            "--out '{}' is {} ('{}'); writing records there would destroy it",
            out.display(),
            p.what,
            p.path.display()
        ))),
        None => Ok(()),
    }
}

/// The state file and the files SQLite and crawlkeeper keep beside it
/// (the lock file of `job`, when it is known).
pub fn state_files(state: &Path, job: Option<&str>) -> Vec<Protected> {
    let beside = |suffix: &str| {
        let mut p = state.as_os_str().to_owned();
        p.push(suffix);
        Protected {
            path: PathBuf::from(p),
            what: "a file of the crawl state",
        }
    };
    let mut files = vec![
        Protected {
            path: state.to_path_buf(),
            what: "the state file",
        },
        beside("-wal"),
        beside("-shm"),
        beside("-journal"),
    ];
    files.extend(job.map(|job| beside(&format!(".{job}.lock"))));
    files
}

/// True when `a` and `b` name the same file: the same inode if both
/// exist, the same absolute path if neither does.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        (Err(_), Err(_)) => absolute(a) == absolute(b),
        _ => false,
    }
}

/// `path` with its directory made absolute and free of links.
fn absolute(path: &Path) -> PathBuf {
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::canonicalize(&dir)
        .unwrap_or_else(|_| std::path::absolute(&dir).unwrap_or(dir))
        .join(name)
}

/// True when `path` exists and is not a regular file (a device, a pipe):
/// written as a stream, never cut, read or rewritten.
pub fn is_stream(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// Refuses an existing, non-empty regular file at `path` unless it holds
/// only records of `job` as stored (a prefix of its results, a cut last
/// line allowed), or `overwrite` is set. With no job, any content is
/// foreign.
pub fn check_existing(
    path: &Path,
    store: Option<(&mut dyn Store, &JobInfo)>,
    overwrite: bool,
) -> Result<(), CliError> {
    if overwrite || is_stream(path) {
        return Ok(());
    }
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(unwritable(path, e)),
    };
    if file.metadata().map_err(|e| unwritable(path, e))?.len() == 0 {
        return Ok(());
    }
    let holds = match store {
        Some((store, job)) => holds_records_of(&mut file, store, job)?,
        None => false,
    };
    if holds {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "output file '{}' exists and does not hold this job's records; \
         use another --out, or --overwrite to replace it",
        path.display()
    )))
}

/// Refuses an existing, non-empty regular file at `path` whose first line
/// is not a crawl record, unless `overwrite` is set: a file of an earlier
/// run's records may be replaced, anything else is the user's.
pub fn check_replaceable(path: &Path, overwrite: bool) -> Result<(), CliError> {
    if overwrite || is_stream(path) {
        return Ok(());
    }
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(unwritable(path, e)),
    };
    let mut first = Vec::new();
    BufReader::new(file.take(1 << 20))
        .read_until(b'\n', &mut first)
        .map_err(|e| unwritable(path, e))?;
    if first.is_empty() || serde_json::from_slice::<CrawlRecord>(&first).is_ok() {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "output file '{}' exists and does not hold crawl records; \
         use another --out, or --overwrite to replace it",
        path.display()
    )))
}

/// True when every line of `file` is the stored record at its position.
fn holds_records_of(
    file: &mut File,
    store: &mut dyn Store,
    job: &JobInfo,
) -> Result<bool, CliError> {
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut stored: VecDeque<String> = VecDeque::new();
    let mut after = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| CliError::Fatal(e.into()))?;
        if n == 0 {
            return Ok(true);
        }
        if stored.is_empty() {
            let page = store.results(job.id, None, after, PAGE).map_err(fatal)?;
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

/// Opens `path` for the job's records, brought up to date with the store:
/// a cut last line removed and the stored records it misses appended
/// (all of them with `overwrite`, which first empties the file). The
/// caller has checked the file with [`check_existing`].
pub fn open_output(
    path: &Path,
    store: &mut dyn Store,
    job: &JobInfo,
    overwrite: bool,
) -> Result<File, CliError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| unwritable(path, e))?;
    if overwrite || job.counts.done == 0 {
        file.set_len(0).map_err(|e| unwritable(path, e))?;
    }
    let (lines, complete_len) = complete_lines(&mut file).map_err(|e| unwritable(path, e))?;
    if lines > job.counts.done {
        return Err(CliError::Usage(format!(
            "output file '{}' has {lines} records but job {} has {}; it belongs to another crawl \
             (use another --out, or --fresh to start over)",
            path.display(),
            job.name,
            job.counts.done
        )));
    }
    file.set_len(complete_len)
        .map_err(|e| unwritable(path, e))?;
    file.seek(SeekFrom::End(0))
        .map_err(|e| unwritable(path, e))?;
    // Positions may skip numbers: the file's records are counted off.
    let mut skip = lines;
    let mut after = 0;
    loop {
        let page = store.results(job.id, None, after, PAGE).map_err(fatal)?;
        let Some((last, _)) = page.last() else { break };
        after = *last;
        let from = usize::try_from(skip).unwrap_or(usize::MAX).min(page.len());
        skip -= from as u64;
        for (_, json) in &page[from..] {
            file.write_all(json.as_bytes())
                .map_err(|e| unwritable(path, e))?;
            file.write_all(b"\n").map_err(|e| unwritable(path, e))?;
        }
    }
    file.flush().map_err(|e| unwritable(path, e))?;
    Ok(file)
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

fn unwritable(path: &Path, e: std::io::Error) -> CliError {
    CliError::Usage(format!(
        "cannot write output file '{}': {e}",
        path.display()
    ))
}

/// Opens `path` to write records from its start: a regular file is
/// created or emptied, a stream is opened as it is.
pub fn create(path: &Path) -> Result<File, CliError> {
    let result = if is_stream(path) {
        OpenOptions::new().write(true).open(path)
    } else {
        File::create(path)
    };
    result.map_err(|e| unwritable(path, e))
}

/// A JSON Lines sink to `out` from its start, or to standard output.
pub fn fresh_sink(out: Option<&Path>) -> Result<Box<dyn Sink>, CliError> {
    Ok(match out {
        Some(path) => Box::new(JsonlSink::new(create(path)?)),
        None => Box::new(JsonlSink::new(std::io::stdout())),
    })
}
