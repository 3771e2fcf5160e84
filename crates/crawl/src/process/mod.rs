//! The fourth stage of the pipeline, after the extractors: processors by
//! name (Spyder's processors, SmoothCrawler's user components). A
//! [`Processor`] sees every fetched 2xx page with what the extractors
//! found, and may add fields, add links, or drop the page's links.
//!
//! The built-in kind is a command the operator configured
//! (`--processor NAME=COMMAND`), run as long-lived child processes that
//! speak JSON Lines ([`wire`]); a library user may add their own kind to
//! the [`Registry`](crate::Registry). A job names the processors it uses
//! (`--use NAME`), never their commands: a node runs only what its
//! operator configured.
//!
//! A processor is hostile input: it may never answer, answer garbage, for
//! another page, or a gigabyte. A page it fails is recorded with the error
//! kind `processor`, its record and links kept without its additions, and
//! the crawl goes on.

mod child;
mod command;
mod stderr;
pub mod wire;

use std::collections::BTreeMap;
use std::time::Duration;

use crawlkeeper_model::CrawlRecord;
use url::Url;

use crawlkeeper_fetch::FetchResponse;

pub use child::{ChildProcessor, ChildSettings, FAILING_AFTER};
pub use command::{CommandError, ProcessorCommand};

/// The deadline of one page's processing by one processor, by default.
pub const DEFAULT_PROCESSOR_TIMEOUT: Duration = Duration::from_secs(30);
/// The most body bytes sent to a processor, by default.
pub const DEFAULT_PROCESSOR_MAX_BODY: u64 = 10 * 1024 * 1024;
/// Child processes per processor, by default.
pub const DEFAULT_PROCESSOR_WORKERS: usize = 1;

/// A page as a processor sees it: the response and what the extractors
/// (and processors before this one) made of it.
#[derive(Debug, Clone, Copy)]
pub struct ProcessorPage<'a> {
    /// The URL requested (normalised).
    pub url: &'a Url,
    /// The response (2xx).
    pub response: &'a FetchResponse,
    /// The record so far: title, fields, links counted.
    pub record: &'a CrawlRecord,
}

/// What a processor adds to a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Addition {
    /// Fields merged into the record's (a name given again replaces the
    /// value before).
    pub fields: BTreeMap<String, serde_json::Value>,
    /// More URLs to follow, resolved against the page's URL, through scope
    /// and dedup like any link.
    pub links: Vec<String>,
    /// Follow none of the links found before this processor (the page's
    /// own and earlier processors').
    pub drop_links: bool,
}

/// Why a processor failed one page; the page gets the error kind
/// `processor` with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessorError {
    /// No answer within the page's deadline.
    #[error("processor '{name}' did not answer within {after}")]
    Timeout {
        /// The processor.
        name: String,
        /// The deadline, as a duration.
        after: String,
    },
    /// The answer could not be used (not JSON, wrong id, too large …).
    #[error("processor '{name}': {why}")]
    BadAnswer {
        /// The processor.
        name: String,
        /// What was wrong with it.
        why: String,
    },
    /// The processor said it could not process the page.
    #[error("processor '{name}' failed the page: {message}")]
    Refused {
        /// The processor.
        name: String,
        /// Its `error` text, cut.
        message: String,
    },
    /// The child process could not be started, or it ended.
    #[error("processor '{name}': {why}")]
    NotRunning {
        /// The processor.
        name: String,
        /// What happened to it.
        why: String,
    },
    /// It failed page after page: its pages get this error at once until
    /// a retry succeeds.
    #[error(
        "processor '{name}' keeps failing ({failures} pages in a row; last: {last}); its pages are recorded with this error until it answers again"
    )]
    KeepsFailing {
        /// The processor.
        name: String,
        /// Pages failed in a row.
        failures: u32,
        /// The last failure.
        last: String,
    },
}

/// Processes fetched pages after the extractors.
#[async_trait::async_trait]
pub trait Processor: Send + Sync {
    /// The name jobs use it by (`--use NAME`).
    fn name(&self) -> &str;

    /// What it adds to `page`, or why it could not.
    async fn process(&self, page: &ProcessorPage<'_>) -> Result<Addition, ProcessorError>;
}
