//! What a running crawl looks like now: a snapshot the engine publishes
//! a few times a second (see [`crate::Engine::live`]) for the progress
//! view, the metrics and the status page. Totals only grow during a run;
//! rates are over the last few seconds.

use std::collections::BTreeMap;

use serde::Serialize;

/// Upper bounds, in seconds, of the response-time histogram's buckets
/// (the last, `+Inf`, is implied).
pub const RESPONSE_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Rows of the per-host table at most (the busiest hosts).
pub const HOST_ROWS: usize = 200;

/// A running crawl, as of its last snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LiveCrawl {
    /// Since the run began, in seconds.
    pub elapsed_seconds: f64,
    /// False once the run has ended.
    pub running: bool,
    /// URLs finished in this run (a record made).
    pub done: u64,
    /// URLs finished by earlier runs of the job (resumed).
    pub done_before: u64,
    /// URLs admitted and not started: queued in memory, waiting for a
    /// retry, or held back.
    pub queued_memory: u64,
    /// URLs admitted and left in the store, not loaded.
    pub queued_store: u64,
    /// Requests being made now (robots.txt included).
    pub in_flight: u64,
    /// The crawl's page limit, if any.
    pub max_pages: Option<u64>,
    /// Finished URLs per second over the last seconds.
    pub pages_per_second: f64,
    /// Body bytes per second over the last seconds.
    pub bytes_per_second: f64,
    /// Requests sent (robots.txt excluded).
    pub requests: u64,
    /// Responses by status class: `1xx` … `5xx`, and `none` (no response).
    pub status: BTreeMap<String, u64>,
    /// Records with an error, by kind (robots and skipped included).
    pub errors: BTreeMap<String, u64>,
    /// Retries scheduled.
    pub retries: u64,
    /// Body bytes received (decoded).
    pub bytes: u64,
    /// Response times.
    pub response_seconds: Histogram,
    /// Transactions of the crawl state committed.
    pub commits: u64,
    /// Time spent committing, in seconds.
    pub commit_seconds: f64,
    /// Finished URLs committed (over `commits`, the mean batch size).
    pub committed_pages: u64,
    /// Hosts by what they do now.
    pub hosts: HostCounts,
    /// The busiest hosts (at most [`HOST_ROWS`]), most requests first.
    pub host_table: Vec<HostRow>,
}

/// Counts of observations in buckets, cumulative as Prometheus keeps them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Histogram {
    /// (upper bound in seconds, observations at or below it), ascending;
    /// the `+Inf` bucket is `count`.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of the observations.
    pub sum: f64,
    /// Observations.
    pub count: u64,
}

/// Hosts by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostCounts {
    /// With a request in flight.
    pub active: u64,
    /// With URLs that may start now.
    pub ready: u64,
    /// Waiting for their politeness delay to pass.
    pub waiting: u64,
    /// Waiting after failures (a retry's backoff, failures in a row).
    pub backing_off: u64,
    /// Given up after too many failures in a row.
    pub abandoned: u64,
    /// Nothing queued here.
    pub idle: u64,
}

/// One host in the per-host table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostRow {
    /// Scheme, host and port.
    pub authority: String,
    /// What it does now: `active`, `ready`, `waiting`, `backing_off`,
    /// `abandoned` or `idle`.
    pub state: &'static str,
    /// Requests sent.
    pub requests: u64,
    /// Records with an error (robots aside).
    pub errors: u64,
    /// URLs queued for it (in memory and in the store).
    pub queued: u64,
    /// The delay between its requests now, in milliseconds.
    pub delay_ms: u64,
    /// Failures in a row.
    pub failures: u32,
    /// Mean response time, in milliseconds.
    pub mean_response_ms: f64,
}

impl LiveCrawl {
    /// URLs finished, this run and earlier ones.
    pub fn done_total(&self) -> u64 {
        self.done + self.done_before
    }

    /// URLs admitted and not finished.
    pub fn queued(&self) -> u64 {
        self.queued_memory + self.queued_store
    }

    /// Records with an error other than robots.txt rules and skipping.
    pub fn failed(&self) -> u64 {
        self.errors
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "robots_denied" | "robots_unavailable"))
            .map(|(_, n)| n)
            .sum()
    }

    /// Seconds left at the current rate when a page limit bounds the run.
    pub fn eta_seconds(&self) -> Option<f64> {
        let max = self.max_pages?;
        let left = max
            .saturating_sub(self.done_total())
            .min(self.queued() + self.in_flight);
        (self.pages_per_second > 0.0).then(|| left as f64 / self.pages_per_second)
    }
}
