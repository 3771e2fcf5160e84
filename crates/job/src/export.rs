//! `results --format warc`: a job's stored WARC records (kept with
//! `--store-bodies`) written out as WARC files, in the order the results
//! finished, every shard's merged: a `warcinfo` at the head of each file,
//! then each result's records (request, response or revisit, metadata);
//! a URL that got no response gets the `metadata` record its result
//! describes, as the live output writes it.

use std::collections::VecDeque;
use std::path::PathBuf;

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_store::{JobInfo, Store};
use crawlkeeper_warc::gzip::reencode;
use crawlkeeper_warc::target::{Target, what_is};
use crawlkeeper_warc::writer::{WarcWriter, encode, existing_files};

use crate::output::OutputError;
use crate::warc::{WarcOptions, no_response, not_a_file, remove_rotations};

/// Results read from the store at a time.
const PAGE: usize = 2_000;
/// Stored archives read at a time: a page's records may be megabytes.
const ARCHIVES: usize = 32;

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Results of the job.
    pub results: u64,
    /// Results written with their stored records.
    pub archived: u64,
    /// Results with no response, written as a `metadata` record.
    pub no_response: u64,
    /// Results with a response whose records were not stored (crawled
    /// without `--store-bodies`): left out.
    pub missing: u64,
    /// The files written.
    pub files: Vec<PathBuf>,
}

/// Refuses, before anything is written, an export over existing files
/// (unless `overwrite`, which replaces them), and over anything that is
/// not a regular file (a link, a pipe, a device), `overwrite` or not.
pub fn check_export(options: &WarcOptions, job: &str, overwrite: bool) -> Result<(), OutputError> {
    let config = options.config(job);
    let files = existing_files(&config);
    for &n in &files {
        let path = config.path_of(n);
        let what = what_is(&path).map_err(|e| io(&path, e))?;
        if what != Target::Regular {
            return Err(not_a_file(&path, what));
        }
    }
    if !files.is_empty() && !overwrite {
        return Err(OutputError::Foreign(format!(
            "'{}' exists; use another --out path, or --overwrite to replace it",
            config.path_of(files[0]).display()
        )));
    }
    if options.path.is_dir() {
        return Err(OutputError::Foreign(format!(
            "'{}' is a directory",
            options.path.display()
        )));
    }
    Ok(())
}

/// Writes `job`'s stored records as WARC files at `options.path`
/// (checked with [`check_export`]).
pub fn export_warc(
    store: &mut dyn Store,
    job: &JobInfo,
    options: &WarcOptions,
) -> Result<Exported, OutputError> {
    let config = options.config(&job.name);
    let level = config.gzip().then_some(config.gzip_level);
    // The first file is emptied by the writer (a regular file only);
    // later ones go.
    remove_rotations(&config, &existing_files(&config))?;
    let first = config.path_of(0);
    let mut writer = WarcWriter::open(config, 0, 0).map_err(|e| io(&first, e))?;
    let mut files = vec![writer.current_path()];
    let mut done = Exported::default();
    let (mut results, mut archives) = (VecDeque::new(), VecDeque::new());
    let (mut after_result, mut after_archive) = (0, 0);
    let mut exhausted = false;
    loop {
        if results.is_empty() {
            results.extend(store.results(job.id, None, after_result, PAGE)?);
        }
        let Some((seq, json)) = results.pop_front() else {
            break;
        };
        after_result = seq;
        done.results += 1;
        // The archives come in the same order; one is this result's or later.
        let archive = loop {
            if archives.is_empty() && !exhausted {
                let page = store.archives(job.id, after_archive, ARCHIVES)?;
                // Fewer than asked: none is left after them.
                exhausted = page.len() < ARCHIVES;
                archives.extend(page);
            }
            match archives.front() {
                Some(&(s, _)) if s < seq => {
                    after_archive = s;
                    archives.pop_front();
                }
                Some(&(s, _)) if s == seq => {
                    after_archive = s;
                    break archives.pop_front().map(|(_, data)| data);
                }
                _ => break None,
            }
        };
        writer.begin_group().map_err(|e| io(&first, e))?;
        match archive {
            Some(data) => {
                let bytes = reencode(&data, level).ok_or_else(|| {
                    OutputError::Foreign(format!(
                        "job {}: the stored records of result {seq} do not read as WARC",
                        job.name
                    ))
                })?;
                writer.append(&bytes).map_err(|e| io(&first, e))?;
                done.archived += 1;
            }
            None => {
                let record: CrawlRecord = serde_json::from_str(&json).map_err(|e| {
                    OutputError::Foreign(format!("job {}: stored record {seq}: {e}", job.name))
                })?;
                if record.status.is_some() {
                    done.missing += 1;
                    continue;
                }
                writer
                    .append(&encode(&[no_response(&record)], level))
                    .map_err(|e| io(&first, e))?;
                done.no_response += 1;
            }
        }
        if files.last() != Some(&writer.current_path()) {
            files.push(writer.current_path());
        }
    }
    writer.flush().map_err(|e| io(&first, e))?;
    done.files = files;
    Ok(done)
}

fn io(path: &std::path::Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}
