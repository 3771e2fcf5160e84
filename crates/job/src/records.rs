//! `results`: a job's stored records as JSON Lines, in the order they
//! finished, each with who stored it if asked.

use std::io::Write;

use crawlkeeper_store::{JobInfo, Store, StoreError, Writer};

/// Results read from the store at a time.
const PAGE: usize = 10_000;

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
    let (mut after, mut written) = (0, 0);
    loop {
        let page = store.results_by(job.id, after, PAGE)?;
        let Some((last, _, _)) = page.last() else {
            break;
        };
        after = *last;
        for (_, json, who) in &page {
            if writer {
                writeln!(out, "{}", with_writer(json, who.as_ref()))?;
            } else {
                writeln!(out, "{json}")?;
            }
            written += 1;
        }
    }
    out.flush()?;
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
