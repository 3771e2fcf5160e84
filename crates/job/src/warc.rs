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
use crawlkeeper_warc::scan::{first_record, scan_index};
use crawlkeeper_warc::target::{Target, open_regular, remove_if_same, what_is};
use crawlkeeper_warc::writer::{WarcWriter, WriterConfig, encode, existing_files};
use crawlkeeper_warc::{PageMetadata, Record};

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
    /// How the files of `job` are written.
    pub fn config(&self, job: &str) -> WriterConfig {
        let mut info = vec![(JOB_FIELD.to_owned(), job.to_owned())];
        info.extend(self.info.iter().cloned());
        WriterConfig {
            path: self.path.clone(),
            max_size: self.max_size,
            gzip_level: self.gzip_level,
            info,
        }
    }

    /// The first file of `job`'s output at this path that is not empty,
    /// if any.
    pub fn first_kept(&self, job: &str) -> Option<PathBuf> {
        let config = self.config(job);
        existing_files(&config)
            .into_iter()
            .map(|n| config.path_of(n))
            .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.len() > 0))
    }

    /// The paths this output writes for `job` (its files so far, the
    /// first one's whether it exists or not), and with `cdx` their
    /// indexes; later rotations are matched by name ([`WarcOptions::names`]).
    pub fn paths(&self, job: &str, cdx: bool) -> Vec<PathBuf> {
        let config = self.config(job);
        let mut numbers = existing_files(&config);
        if numbers.first() != Some(&0) {
            numbers.insert(0, 0);
        }
        let mut paths = Vec::new();
        for n in numbers {
            let warc = config.path_of(n);
            if cdx {
                paths.push(crawlkeeper_warc::cdxj::index_path(&warc));
            }
            paths.push(warc);
        }
        paths
    }

    /// What a file named `name` in this output's directory would be to
    /// it: one of its WARC files (`crawl.warc.gz`, `crawl-00007.warc.gz`)
    /// or, with `cdx`, one of their indexes (`crawl-00007.cdxj`), at any
    /// rotation; `None` when no rotation writes that name.
    pub fn names(&self, name: &str, cdx: bool) -> Option<&'static str> {
        self.file_named(name, cdx).map(|(_, index)| {
            if index {
                "a CDXJ index of the --warc output"
            } else {
                "a WARC file of the --warc output"
            }
        })
    }

    /// The rotation whose WARC file (`false`) or, with `cdx`, index
    /// (`true`) is named `name`.
    fn file_named(&self, name: &str, cdx: bool) -> Option<(u32, bool)> {
        let config = self.config("");
        let file_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
        let number = |n: u32| {
            let warc = config.path_of(n);
            if file_name(&warc).as_deref() == Some(name) {
                Some((n, false))
            } else if cdx
                && file_name(&crawlkeeper_warc::cdxj::index_path(&warc)).as_deref() == Some(name)
            {
                Some((n, true))
            } else {
                None
            }
        };
        if let Some(found) = number(0) {
            return Some(found);
        }
        // A rotation's number: the digits after `<stem>-`.
        let base = file_name(&config.path)?;
        let (stem, _) = crawlkeeper_warc::writer::split_name(&base);
        let digits: String = name
            .strip_prefix(stem)?
            .strip_prefix('-')?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if digits.len() < 5 {
            return None;
        }
        digits.parse().ok().filter(|&n| n > 0).and_then(number)
    }

    /// Refuses, before anything is written, an index (`--cdx`) of this
    /// output that may not be written: one that is not a regular file (a
    /// link, a pipe: an index is renamed into place, which would replace
    /// it), or a regular file that is not an index of the WARC file beside
    /// it, unless `overwrite`. Every rotation's index there is checked,
    /// of files to come as well.
    pub fn check_indexes(&self, job: &str, overwrite: bool) -> Result<(), OutputError> {
        let config = self.config(job);
        let mut numbers = existing_files(&config);
        numbers.push(0);
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if let Some((n, true)) = self.file_named(&e.file_name().to_string_lossy(), true) {
                    numbers.push(n);
                }
            }
        }
        numbers.sort_unstable();
        numbers.dedup();
        for n in numbers {
            let warc = config.path_of(n);
            let index = crawlkeeper_warc::cdxj::index_path(&warc);
            let what = what_is(&index).map_err(|e| io(&index, e))?;
            match what {
                Target::Missing => continue,
                Target::Regular => {}
                _ => {
                    return Err(OutputError::Foreign(format!(
                        "CDXJ index '{}' is {}, not a regular file: an index is renamed into \
                         place, which would replace it; use another --warc path",
                        index.display(),
                        what.describe()
                    )));
                }
            }
            if overwrite {
                continue;
            }
            let name = warc
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ours = crawlkeeper_warc::cdxj::indexes(&index, &name).map_err(|e| io(&index, e))?;
            if !ours {
                return Err(OutputError::Foreign(format!(
                    "CDXJ index '{}' exists and is not an index of '{name}'; use another --warc \
                     path, or --overwrite to replace it",
                    index.display()
                )));
            }
        }
        Ok(())
    }

    /// Writes a CDXJ index beside each of `job`'s WARC files at this path
    /// (see [`crawlkeeper_warc::cdxj`]); returns the indexes written.
    pub fn index(&self, job: &str) -> Result<Vec<PathBuf>, OutputError> {
        let config = self.config(job);
        let mut written = Vec::new();
        for n in existing_files(&config) {
            let warc = config.path_of(n);
            let index = crawlkeeper_warc::cdxj::index_path(&warc);
            crawlkeeper_warc::cdxj::write_index(&warc, &index)
                .map_err(|e| OutputError::Foreign(e.to_string()))?;
            written.push(index);
        }
        Ok(written)
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

/// A WARC path that is a link, a pipe or a device: a WARC output is cut
/// when a crawl resumes, so it is only ever a regular file.
pub(crate) fn not_a_file(path: &Path, what: Target) -> OutputError {
    OutputError::Foreign(format!(
        "WARC file '{}' is {}, not a regular file: a WARC output is cut and rewritten, \
         so it is never a pipe, device or link; give the path of a regular file",
        path.display(),
        what.describe()
    ))
}

fn io(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A job as the WARC output sees it: its name and how many of its URLs
/// are done in the store.
#[derive(Debug, Clone, Copy)]
pub struct JobLook<'a> {
    /// The job's name.
    pub name: &'a str,
    /// URLs with a stored result.
    pub done: u64,
}

impl<'a> JobLook<'a> {
    /// A job with no stored result (new, or started over).
    pub fn fresh(name: &'a str) -> Self {
        Self { name, done: 0 }
    }
}

/// Refuses, before anything is written, a WARC output the job cannot use:
/// existing files that are not this job's (each file's `warcinfo` must
/// name it; replaced with `overwrite` only while the job has no stored
/// result), or a job with stored results and no files (its earlier pages
/// would be missing from the archive).
pub fn check_warc(
    options: &WarcOptions,
    job: JobLook<'_>,
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
    let config = options.config(job.name);
    let files = existing_files(&config);
    if files.is_empty() && job.done > 0 {
        return Err(OutputError::Foreign(format!(
            "job {} has {} URLs done whose WARC records are not at '{}'; \
             give its --warc path, or --fresh to crawl it again into a new archive",
            job.name,
            job.done,
            options.path.display()
        )));
    }
    for n in files {
        let path = config.path_of(n);
        let what = what_is(&path).map_err(|e| io(&path, e))?;
        if what != Target::Regular {
            return Err(not_a_file(&path, what));
        }
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.len() == 0) {
            continue;
        }
        let head = first_record(&path).map_err(|e| OutputError::Foreign(e.to_string()))?;
        let belongs = head
            .as_ref()
            .filter(|r| r.kind == "warcinfo")
            .and_then(|r| warc_fields(&r.block).remove(JOB_FIELD))
            .is_some_and(|j| j == job.name);
        if belongs {
            continue;
        }
        if overwrite && job.done == 0 {
            continue;
        }
        if job.done > 0 {
            return Err(OutputError::Foreign(format!(
                "WARC file '{}' holds another crawl's records, and job {} has {} URLs done \
                 archived beside it; use another --warc path with --fresh",
                path.display(),
                job.name,
                job.done
            )));
        }
        return Err(foreign(
            &path,
            "holds another crawl's records (or is no WARC file)",
        ));
    }
    Ok(())
}

/// `name: value` lines of an `application/warc-fields` block.
fn warc_fields(block: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(block)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Opens the WARC output of `job` (checked with [`check_warc`]): while the
/// job has no stored result, its files (or, with `overwrite`, any) are
/// removed and a new file begun; otherwise the last file is cut after the
/// last URL stored in `stored`.
pub fn open_warc(
    options: &WarcOptions,
    job: JobLook<'_>,
    stored: Option<(&mut dyn Store, Part<'_>)>,
) -> Result<WarcSink, OutputError> {
    let config = options.config(job.name);
    let files = existing_files(&config);
    let (number, size) = match (files.last(), stored) {
        (Some(&last), Some((store, part))) if job.done > 0 => {
            (last, cut_point(&config.path_of(last), store, part)?)
        }
        _ => {
            // The first file is emptied by the writer; later ones go.
            remove_rotations(&config, &files)?;
            (0, 0)
        }
    };
    let path = config.path_of(number);
    let writer = WarcWriter::open(config, number, size).map_err(|e| io(&path, e))?;
    let mark = writer.position();
    Ok(WarcSink { writer, mark })
}

/// Removes the files numbered 1 and up of `files` (checked regular by the
/// caller): each is opened without following a link and removed only if
/// the path still names the regular file opened.
pub(crate) fn remove_rotations(config: &WriterConfig, files: &[u32]) -> Result<(), OutputError> {
    for &n in files.iter().filter(|&&n| n > 0) {
        let p = config.path_of(n);
        let file =
            open_regular(&p, std::fs::OpenOptions::new().read(true)).map_err(|e| io(&p, e))?;
        remove_if_same(&p, &file).map_err(|e| io(&p, e))?;
    }
    Ok(())
}

/// Where the file at `path` is cut before a run: after the `metadata`
/// record of the last URL whose result is stored (each URL's records end
/// with one, a URL without a response has only that), or after the
/// `warcinfo` when it has none.
fn cut_point(path: &Path, store: &mut dyn Store, part: Part<'_>) -> Result<u64, OutputError> {
    let scanned = scan_index(path).map_err(|e| OutputError::Foreign(e.to_string()))?;
    let mut ends: HashMap<String, u64> = HashMap::new();
    for r in &scanned.records {
        if r.kind == "metadata"
            && let Some(uri) = &r.target_uri
        {
            // The first: a later one is a copy past the last commit.
            ends.entry(uri.clone()).or_insert(r.offset + r.length);
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

/// The `metadata` record of a URL that got no response.
pub(crate) fn no_response(record: &CrawlRecord) -> Record {
    let error = record.error.as_ref().map(|e| {
        let kind = serde_json::to_value(e.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        (kind, e.message.clone())
    });
    let date = chrono::DateTime::parse_from_rfc3339(&record.fetched_at)
        .map(|d| d.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now());
    PageMetadata {
        depth: record.depth,
        parent: record.parent.clone(),
        error,
        ..PageMetadata::default()
    }
    .record(&record.url, date, None)
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
        for bytes in extra.iter().filter(|b| !b.is_empty()) {
            self.writer.append(bytes)?;
        }
        for f in finished {
            if f.archive.is_empty() {
                // No response (an error, robots-denied, skipped): a metadata
                // record says so, and marks the URL's place for the cut.
                let level = self.writer.gzip_level();
                self.writer
                    .append(&encode(&[no_response(&f.record)], level))?;
            } else {
                self.writer.append(&f.archive)?;
            }
        }
        self.writer.flush()?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.writer.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rotation_and_index_is_known_by_name() {
        let w = WarcOptions {
            path: PathBuf::from("/x/crawl.warc.gz"),
            max_size: 1,
            gzip_level: 6,
            info: Vec::new(),
        };
        let warc = Some("a WARC file of the --warc output");
        let index = Some("a CDXJ index of the --warc output");
        assert_eq!(w.names("crawl.warc.gz", false), warc);
        assert_eq!(w.names("crawl-00007.warc.gz", false), warc);
        assert_eq!(w.names("crawl-123456.warc.gz", false), warc);
        assert_eq!(w.names("crawl.cdxj", true), index);
        assert_eq!(w.names("crawl-00002.cdxj", true), index);
        assert_eq!(w.names("crawl-00002.cdxj", false), None);
        for other in [
            "crawl-7.cdxj",
            "crawl-000070.cdxj",
            "crawl-00000.warc.gz",
            "crawl-00002.warc",
            "other.cdxj",
            "crawl.db",
        ] {
            assert_eq!(w.names(other, true), None, "{other}");
        }
    }
}
