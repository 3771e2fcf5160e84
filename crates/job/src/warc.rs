//! The WARC output of a job (`crawl --warc`): records are appended before
//! the results they belong to commit (see `Sink::before_commit`), so after
//! a crash a file may end with records of results the store never got, or
//! inside a record. Before a run, the last file is cut after the last
//! page whose result is stored; the pages cut are crawled again. So every
//! stored result with a response has its records once, and no page is in
//! the files twice, after any number of kills and resumes.
//!
//! An existing file is never written over unless it belongs to this job
//! (its `warcinfo` names the job) or the user says to overwrite it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crawlkeeper_crawl::Sink;
use crawlkeeper_crawl::sink::SinkError;
use crawlkeeper_model::{CrawlRecord, FinishedUrl};
use crawlkeeper_store::Store;
use crawlkeeper_warc::scan::{first_record, scan_file};
use crawlkeeper_warc::writer::{WarcWriter, WriterConfig, existing_files};

use crate::output::{OutputError, Part};

/// Results read from the store at a time while looking for the cut.
const PAGE: usize = 10_000;

/// The `warcinfo` field naming the job a file belongs to.
pub const JOB_FIELD: &str = "crawlkeeper-job";

/// Where and how a job's WARC files are written.
#[derive(Debug, Clone)]
pub struct WarcOptions {
    /// The first file (`crawl.warc.gz`); later ones are numbered beside it.
    pub path: PathBuf,
    /// A file is closed and the next begun past this size.
    pub max_size: u64,
    /// The gzip level of each record (when the name ends with `.gz`).
    pub gzip_level: u32,
    /// Fields of the `warcinfo` record heading each file, besides the job.
    pub info: Vec<(String, String)>,
}

impl WarcOptions {
    fn config(&self, job: &str) -> WriterConfig {
        let mut info = vec![(JOB_FIELD.to_owned(), job.to_owned())];
        info.extend(self.info.iter().cloned());
        WriterConfig {
            path: self.path.clone(),
            max_size: self.max_size,
            gzip_level: self.gzip_level,
            info,
        }
    }

    /// The gzip level records must be encoded with (`None`: plain WARC).
    pub fn encoding(&self) -> Option<u32> {
        self.config("").gzip().then_some(self.gzip_level)
    }
}

fn foreign(path: &Path, why: &str) -> OutputError {
    OutputError::Foreign(format!(
        "WARC file '{}' {why}; use another --warc path, or --overwrite to replace it",
        path.display()
    ))
}

fn io(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Refuses, before anything is written, WARC files at the options' path
/// that do not belong to `job` (`None`: a job that starts now, to which no
/// existing file belongs), unless `overwrite`.
pub fn check_warc(
    options: &WarcOptions,
    job: Option<&str>,
    overwrite: bool,
) -> Result<(), OutputError> {
    if options.path.is_dir() {
        return Err(foreign(&options.path, "is a directory"));
    }
    if let Some(parent) = options.path.parent()
        && !parent.as_os_str().is_empty()
        && !parent.is_dir()
    {
        return Err(io(
            &options.path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "its directory does not exist"),
        ));
    }
    if overwrite {
        return Ok(());
    }
    let config = options.config(job.unwrap_or(""));
    let Some(&first) = existing_files(&config).first() else {
        return Ok(());
    };
    let path = config.path_of(first);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
        return Ok(());
    }
    let Some(job) = job else {
        return Err(foreign(&path, "exists"));
    };
    let head = first_record(&path).map_err(|e| OutputError::Foreign(e.to_string()))?;
    let belongs = head
        .as_ref()
        .filter(|r| r.kind == "warcinfo")
        .and_then(|r| warc_fields(&r.block).remove(JOB_FIELD))
        .is_some_and(|j| j == job);
    if belongs {
        Ok(())
    } else {
        Err(foreign(&path, "holds another crawl's records"))
    }
}

/// `name: value` lines of an `application/warc-fields` block.
fn warc_fields(block: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(block)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Opens the WARC output of `job` (checked with [`check_warc`]): a new
/// file, or the last one cut after the last page stored in `stored`
/// (every file is replaced when `overwrite`).
pub fn open_warc(
    options: &WarcOptions,
    job: &str,
    stored: Option<(&mut dyn Store, Part<'_>)>,
    overwrite: bool,
) -> Result<WarcSink, OutputError> {
    let config = options.config(job);
    let files = existing_files(&config);
    let (number, size) = match (files.last(), stored) {
        (Some(&last), Some((store, part))) if !overwrite => {
            (last, cut_point(&config.path_of(last), store, part)?)
        }
        (Some(_), _) => {
            for &n in &files {
                let p = config.path_of(n);
                std::fs::remove_file(&p).map_err(|e| io(&p, e))?;
            }
            (0, 0)
        }
        (None, _) => (0, 0),
    };
    let path = config.path_of(number);
    let writer = WarcWriter::open(config, number, size).map_err(|e| io(&path, e))?;
    let mark = writer.position();
    Ok(WarcSink { writer, mark })
}

/// Where the file at `path` is cut before a run: after the `metadata`
/// record of the last page whose result is stored (each page's records
/// end with it), or after the `warcinfo` when it has none.
fn cut_point(path: &Path, store: &mut dyn Store, part: Part<'_>) -> Result<u64, OutputError> {
    let scanned = scan_file(path).map_err(|e| OutputError::Foreign(e.to_string()))?;
    let mut ends: HashMap<String, u64> = HashMap::new();
    for r in &scanned.records {
        if r.kind == "metadata"
            && let Some(uri) = &r.target_uri
        {
            ends.insert(uri.clone(), r.offset + r.length);
        }
    }
    let mut cut = scanned
        .records
        .first()
        .filter(|r| r.kind == "warcinfo")
        .map_or(0, |r| r.offset + r.length);
    let mut after = 0;
    while !ends.is_empty() {
        let page = store.results(part.job.id, part.shards, after, PAGE)?;
        let Some(&(last, _)) = page.last() else {
            break;
        };
        after = last;
        for (_, json) in &page {
            let Ok(record) = serde_json::from_str::<CrawlRecord>(json) else {
                continue;
            };
            if let Some(end) = ends.remove(&record.url) {
                cut = cut.max(end);
            }
        }
    }
    Ok(cut)
}

/// The sink that writes each page's WARC records before its result commits.
pub struct WarcSink {
    writer: WarcWriter,
    /// Where the transaction being committed began writing.
    mark: (u32, u64),
}

impl WarcSink {
    /// The file being written.
    pub fn current_path(&self) -> PathBuf {
        self.writer.current_path()
    }
}

impl Sink for WarcSink {
    fn write(&mut self, _record: &CrawlRecord) -> Result<(), SinkError> {
        // Written before the commit.
        Ok(())
    }

    fn before_commit(
        &mut self,
        finished: &[FinishedUrl],
        extra: &[Vec<u8>],
        retry: bool,
    ) -> Result<(), SinkError> {
        if retry {
            // The attempt that failed may have committed nothing: what it
            // wrote goes, and is written again.
            self.writer.rewind(self.mark)?;
        } else {
            self.writer.begin_group()?;
            self.mark = self.writer.position();
        }
        for bytes in extra
            .iter()
            .chain(finished.iter().map(|f| &f.archive))
            .filter(|b| !b.is_empty())
        {
            self.writer.append(bytes)?;
        }
        self.writer.flush()?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.writer.flush()?;
        Ok(())
    }
}
