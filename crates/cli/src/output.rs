//! The JSON Lines output of a job that may be resumed: a file holds the
//! job's results in the order they finished, so after a crash it is a
//! prefix of the stored results. Before a run, a cut last line is removed
//! and the stored results the file misses are appended; the run then
//! appends its own. No record is written twice, none is missing.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use crawlkeeper_crawl::{JsonlSink, Sink};
use crawlkeeper_store::{JobInfo, Store};

use crate::exit::CliError;
use crate::state::fatal;

/// Results read from the store at a time.
const PAGE: usize = 10_000;

/// Opens `path` for the job's records, brought up to date with the store.
/// With `fresh` (or a job with no results yet) the file starts empty.
pub fn open_output(
    path: &Path,
    store: &mut dyn Store,
    job: &JobInfo,
    fresh: bool,
) -> Result<File, CliError> {
    let unwritable = |e: std::io::Error| {
        CliError::Usage(format!(
            "cannot write output file '{}': {e}",
            path.display()
        ))
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(unwritable)?;
    if fresh || job.counts.done == 0 {
        file.set_len(0).map_err(unwritable)?;
        return Ok(file);
    }
    let (lines, complete_len) = complete_lines(&mut file).map_err(unwritable)?;
    if lines > job.counts.done {
        return Err(CliError::Usage(format!(
            "output file '{}' has {lines} records but job {} has {}; it belongs to another crawl \
             (use another --out, or --fresh to start over)",
            path.display(),
            job.name,
            job.counts.done
        )));
    }
    file.set_len(complete_len).map_err(unwritable)?;
    file.seek(SeekFrom::End(0)).map_err(unwritable)?;
    let mut after = lines;
    loop {
        let page = store.results(job.id, after, PAGE).map_err(fatal)?;
        let Some((last, _)) = page.last() else { break };
        after = *last;
        for (_, json) in &page {
            file.write_all(json.as_bytes()).map_err(unwritable)?;
            file.write_all(b"\n").map_err(unwritable)?;
        }
    }
    file.flush().map_err(unwritable)?;
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

/// Creates (or truncates) `path` for writing; a failure is a usage error.
pub fn create(path: &Path) -> Result<File, CliError> {
    File::create(path).map_err(|e| {
        CliError::Usage(format!(
            "cannot write output file '{}': {e}",
            path.display()
        ))
    })
}

/// A JSON Lines sink to a new file at `out`, or to standard output.
pub fn fresh_sink(out: Option<&Path>) -> Result<Box<dyn Sink>, CliError> {
    Ok(match out {
        Some(path) => Box::new(JsonlSink::new(create(path)?)),
        None => Box::new(JsonlSink::new(std::io::stdout())),
    })
}
