//! Where the command's records go, and what they must never overwrite: a
//! path that is the state file (or one of its companions) or a seed file
//! is refused, and so is an existing file of something else than records
//! (the resumable output itself is [`crawlkeeper_job::output`]). All of
//! this is decided before anything is written.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crawlkeeper_crawl::{JsonlSink, Sink};
use crawlkeeper_job::OutputError;
pub use crawlkeeper_job::output::{Part, check_existing, is_stream, lock_existing, open_output};
use crawlkeeper_model::CrawlRecord;

use crate::exit::CliError;

impl From<OutputError> for CliError {
    fn from(e: OutputError) -> Self {
        match e {
            OutputError::Store(e) => CliError::Fatal(e.into()),
            e => CliError::Usage(e.to_string()),
        }
    }
}

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
