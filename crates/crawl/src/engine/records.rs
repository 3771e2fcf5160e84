//! Records the engine writes itself, for jobs that produced no response.

use crawlkeeper_model::{CrawlRecord, ErrorKind, RecordError};
use tracing::error;

use crate::pipeline::{Job, Processed, blank_record};

/// A record for `job` with no response and `error`.
fn without_response(job: &Job, error: RecordError) -> CrawlRecord {
    let mut record = blank_record(job);
    record.error = Some(error);
    record
}

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The outcome of a job whose processing panicked.
pub fn internal_error(job: &Job, why: &str) -> Processed {
    error!(url = %job.url, panic = why, "processing panicked; recording an error");
    Processed {
        record: without_response(
            job,
            RecordError::new(ErrorKind::Internal, format!("internal error: {why}")),
        ),
        discovered: Vec::new(),
        retry: None,
        archive: Vec::new(),
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
