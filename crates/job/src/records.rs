//! `results`: a job's stored records as JSON Lines, in the order they
//! finished, each with who stored it if asked.

use std::io::Write;

use crawlkeeper_store::{JobInfo, Store, StoreError, Writer};

/// Results read from the store at a time. A record may hold up to a few
/// MiB of fields (1 MiB of selectors', 1 MiB per processor), so a page is
/// kept small: 500 such records are a bounded few GiB at the very worst,
/// and a few hundred KiB as records usually are.
const PAGE: usize = 500;

/// Why the records could not be written out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The output failed.
    #[error("cannot write the records")]
    Write(#[from] std::io::Error),
}

/// Writes every stored record of `job` to `out`, one per line, in the
/// order the results finished; with `writer`, each gains a last member
/// `"writer"` (see [`with_writer`]). Returns how many were written.
pub fn write_records(
    store: &mut dyn Store,
    job: &JobInfo,
    out: &mut dyn Write,
    writer: bool,
) -> Result<u64, RecordsError> {
    each_result(store, job, |json, who| {
        if writer {
            writeln!(out, "{}", with_writer(json, who))?;
        } else {
            writeln!(out, "{json}")?;
        }
        Ok(())
    })
    .and_then(|written| {
        out.flush()?;
        Ok(written)
    })
}

/// Calls `write` with every stored record of `job` (its JSON and who
/// stored it), in the order the results finished, a page of results in
/// memory at a time; returns how many there were.
pub(crate) fn each_result(
    store: &mut dyn Store,
    job: &JobInfo,
    mut write: impl FnMut(&str, Option<&Writer>) -> Result<(), RecordsError>,
) -> Result<u64, RecordsError> {
    let (mut after, mut written) = (0, 0);
    loop {
        let page = store.results_by(job.id, after, PAGE)?;
        let Some((last, _, _)) = page.last() else {
            break;
        };
        after = *last;
        for (_, json, who) in &page {
            write(json, who.as_ref())?;
            written += 1;
        }
    }
    Ok(written)
}

/// `record` (a JSON object) with a last member `"writer"`: who stored it
/// (`null` when the store does not know).
pub fn with_writer(record: &str, writer: Option<&Writer>) -> String {
    let writer = serde_json::to_string(&writer).unwrap_or_else(|_| "null".to_owned());
    match record.trim_end().strip_suffix('}') {
        Some(open) if open.trim_end().ends_with('{') => format!(r#"{open}"writer":{writer}}}"#),
        Some(open) => format!(r#"{open},"writer":{writer}}}"#),
        // Not an object (this build never stores one): left as it is.
        None => record.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_is_the_records_last_member() {
        let w = Writer {
            holder: "crawler_1@box:7".into(),
            shard: 2,
            generation: 3,
        };
        let line = with_writer(r#"{"url":"http://a/","status":200}"#, Some(&w));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["url"], "http://a/");
        assert_eq!(v["writer"]["holder"], "crawler_1@box:7");
        assert_eq!(v["writer"]["shard"], 2);
        assert_eq!(v["writer"]["generation"], 3);
        let none: serde_json::Value = serde_json::from_str(&with_writer("{}", None)).unwrap();
        assert_eq!(none, serde_json::json!({"writer": null}));
    }
}
