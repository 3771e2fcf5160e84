//! Records the engine writes itself, for requests that produced no response.

use crawlkeeper_model::{CrawlRecord, ErrorKind, RecordError};
use tracing::error;

use crate::pipeline::{Processed, Request, blank_record};

/// A record for `request` with no response and `error`.
fn without_response(request: &Request, error: RecordError) -> CrawlRecord {
    let mut record = blank_record(request);
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

/// The outcome of a request whose processing panicked.
pub fn internal_error(request: &Request, why: &str) -> Processed {
    error!(url = %request.url, panic = why, "processing panicked; recording an error");
    Processed {
        record: without_response(
            request,
            RecordError::new(ErrorKind::Internal, format!("internal error: {why}")),
        ),
        discovered: Vec::new(),
        retry: None,
        archive: Vec::new(),
        observed: crawlkeeper_model::revisit::Observed::Failed,
    }
}

/// The record of a URL not requested because its authority was abandoned.
pub fn skipped(request: &Request, failures: u32) -> CrawlRecord {
    without_response(
        request,
        RecordError::new(
            ErrorKind::Skipped,
            format!("authority abandoned after {failures} consecutive failures"),
        ),
    )
}
