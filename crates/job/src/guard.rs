//! What a job's outputs must never overwrite, decided before anything is
//! written: a path that is the state file (or one of its companions) or a
//! seed file is refused, and so is an existing file of something else than
//! records (the resumable output itself is [`crate::output`]).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crawlkeeper_crawl::{JsonlSink, Sink};
use crawlkeeper_model::CrawlRecord;
use crawlkeeper_warc::target::{Target, open_regular, what_is};

use crate::OutputError;
use crate::output::{check_target, is_stream, open_own_descriptor};
use crate::warc::WarcOptions;

/// A path the output must not be, and what it is.
pub struct Protected {
    /// The path.
    pub path: PathBuf,
    /// What it is, for the message ("the state file", "a seed file").
    pub what: &'static str,
}

/// Refuses `out` when it names one of `protected`.
pub fn refuse_protected(out: &Path, protected: &[Protected]) -> Result<(), OutputError> {
    match protected.iter().find(|p| same_file(out, &p.path)) {
        Some(p) => Err(OutputError::Foreign(format!(
            "--out '{}' is {} ('{}'); writing records there would destroy it",
            out.display(),
            p.what,
            p.path.display()
        ))),
        None => Ok(()),
    }
}

/// Refuses a WARC output (`--warc`, `results --format warc --out`) that
/// would write one of `protected`: its first file, a later rotation, or
/// with `cdx` the CDXJ index of any of them. Matched by name in the
/// output's directory (rotations to come), and by inode for the files
/// there already.
pub fn refuse_protected_warc(
    w: &WarcOptions,
    job: &str,
    cdx: bool,
    flag: &str,
    protected: &[Protected],
) -> Result<(), OutputError> {
    let paths = w.paths(job, cdx);
    let dir = |p: &Path| absolute(p).parent().map(Path::to_path_buf);
    for p in protected {
        let by_name = (dir(&p.path) == dir(&w.path))
            .then(|| p.path.file_name().and_then(|n| n.to_str()))
            .flatten()
            .and_then(|n| w.names(n, cdx));
        let by_file = paths
            .iter()
            .find(|c| same_file(c, &p.path))
            .and_then(|c| c.file_name().and_then(|n| n.to_str()))
            .and_then(|n| w.names(n, cdx));
        if let Some(what) = by_name.or(by_file) {
            return Err(OutputError::Foreign(format!(
                "{flag} '{}' would write '{}' ({what}), which is {}; that would destroy it: \
                 use another {flag} path",
                w.path.display(),
                p.path.display(),
                p.what
            )));
        }
    }
    Ok(())
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

/// Refuses a lock file of `job` beside the state file `state` that is
/// not a regular file (a link, a pipe): the lock is never taken through
/// it, and the user must see why.
pub fn refuse_odd_lock(state: &Path, job: &str) -> Result<(), OutputError> {
    let mut lock = state.as_os_str().to_owned();
    lock.push(format!(".{job}.lock"));
    let lock = PathBuf::from(lock);
    match what_is(&lock) {
        Ok(Target::Missing | Target::Regular) => Ok(()),
        Ok(what) => Err(OutputError::Foreign(format!(
            "lock file '{}' is {}, not a regular file; remove it (crawlkeeper never writes \
             through it)",
            lock.display(),
            what.describe()
        ))),
        Err(e) => Err(unwritable(&lock, e)),
    }
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

/// Refuses an existing, non-empty regular file at `path` whose first line
/// is not a crawl record, unless `overwrite` is set: a file of an earlier
/// run's records may be replaced, anything else is the user's.
pub fn check_replaceable(path: &Path, overwrite: bool) -> Result<(), OutputError> {
    check_target(path)?;
    if overwrite || is_stream(path) {
        return Ok(());
    }
    let file = match open_regular(path, OpenOptions::new().read(true)) {
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
    Err(OutputError::Foreign(format!(
        "output file '{}' exists and does not hold crawl records; \
         use another --out, or --overwrite to replace it",
        path.display()
    )))
}

fn unwritable(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Opens `path` to write records from its start: a regular file is
/// created or emptied (never through a link), a stream is opened as it is
/// (and must still be one once open).
pub fn create(path: &Path) -> Result<File, OutputError> {
    if let Some(own) = open_own_descriptor(path) {
        return own.map_err(|e| unwritable(path, e));
    }
    let result = if is_stream(path) {
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| match f.metadata() {
                Ok(m) if m.is_file() => Err(std::io::Error::other(
                    "it became a regular file while being opened",
                )),
                Ok(_) => Ok(f),
                Err(e) => Err(e),
            })
    } else {
        open_regular(path, OpenOptions::new().write(true).create(true))
            .and_then(|f| f.set_len(0).map(|()| f))
    };
    result.map_err(|e| unwritable(path, e))
}

/// A JSON Lines sink to `out` from its start, or to standard output.
pub fn fresh_sink(out: Option<&Path>) -> Result<Box<dyn Sink>, OutputError> {
    Ok(match out {
        Some(path) => Box::new(JsonlSink::new(create(path)?)),
        None => Box::new(JsonlSink::new(std::io::stdout())),
    })
}
