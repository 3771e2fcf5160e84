//! Records the engine writes itself, for jobs that produced no response.

use crawlkeeper_model::{Authority, CrawlRecord, ErrorKind, RecordError};
use tracing::error;

use crate::pipeline::{Job, Processed};

/// A record for `job` with no response and `error`.
fn without_response(job: &Job, error: RecordError) -> CrawlRecord {
    CrawlRecord {
        url: job.url.to_string(),
        final_url: job.url.to_string(),
        status: None,
        depth: job.depth,
        parent: job.parent.as_deref().map(str::to_owned),
        // Jobs only hold http(s) URLs with a host.
        authority: Authority::of(&job.url).expect("job URLs have an authority"),
        fetched_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        response_ms: None,
        content_type: None,
        bytes: 0,
        title: None,
        links: 0,
        truncated: false,
        error: Some(error),
    }
}

/// The outcome of a job whose processing panicked.
pub fn internal_error(job: &Job, why: &str) -> Processed {
    error!(url = %job.url, panic = why, "processing panicked; recording an error");
    Processed {
        record: without_response(
            job,
            RecordError::new(ErrorKind::Http, format!("internal error: {why}")),
        ),
        discovered: Vec::new(),
        retry: None,
    }
}

/// The record of a URL not requested because its authority was abandoned.
pub fn skipped(job: &Job, failures: u32) -> CrawlRecord {
    without_response(
        job,
        RecordError::new(
            ErrorKind::Skipped,
            format!("authority abandoned after {failures} consecutive failures"),
        ),
    )
}
