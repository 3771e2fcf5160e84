//! The crawl engine of crawlkeeper: Spyder's pipeline (fetcher → extractor
//! chain → scoper chain) driven by a per-authority scheduler.
//!
//! The fetcher is `crawlkeeper-fetch` and the extractors are
//! `crawlkeeper-extract`: this crate joins them. The types a library user
//! needs from them to add a processor are re-exported here
//! ([`Extractor`], [`Page`], [`Extracted`], [`Fetcher`], ...).
//!
//! | module | what it does |
//! |---|---|
//! | [`config`] | every setting, with documented defaults, validated once |
//! | [`archive`] | the WARC records of fetched pages, made on the request's task |
//! | [`normalize`] | one spelling per URL, for dedup |
//! | [`requisites`] | a page's requisite tree: one budget shared down its hops |
//! | [`revisit`] | when to fetch a page again (re-exported from the model) |
//! | [`redact`] | the configuration as archives show it: every secret as `***` |
//! | [`robots`] | robots.txt rules per authority (RFC 9309) |
//! | [`scope`] | the [`Scoper`] trait, the built-in rules, dispositions |
//! | [`pipeline`] | one job through robots, fetch, extract and scope |
//! | [`politeness`] | delays between requests, retry backoff, `Retry-After` |
//! | [`registry`] | processors by name; builds a pipeline from a config |
//! | [`render`] | `--render`: pages rendered in a browser, their requests answered by the crawl |
//! | [`engine`] | the frontier and the run loop |
//! | [`sink`] | where records go (JSON Lines, memory, several) |
//! | [`sitemap`] | sitemaps read as hostile input, and an authority's URLs from them |
//! | [`state`] | durable crawl state: the port a store implements, the worker that commits |
//! | [`name`] | what a name a user gives (a processor's) may be |
//! | [`process`] | processors by name after the extractors: the trait, child processes speaking JSON Lines |
//! | [`live`] | a snapshot of the running crawl: counts, rates, hosts (progress view, metrics, status page) |
//! | [`summary`] | per-authority counts and the end-of-run table |
//!
//! A library user adds a processor by implementing [`Extractor`] or
//! [`Scoper`], registering a factory under a name with
//! [`Registry::add_extractor`] or [`Registry::add_scoper`], and naming it in
//! [`config::PipelineConfig`].

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod archive;
pub mod config;
pub mod engine;
pub mod live;
pub mod name;
pub mod normalize;
pub mod pipeline;
pub mod politeness;
pub mod process;
pub mod redact;
pub mod registry;
pub mod render;
pub mod requisites;
pub use crawlkeeper_model::revisit;
pub mod robots;
pub mod scope;
pub mod sink;
pub mod sitemap;
pub mod state;
pub mod summary;

pub use archive::Archiver;
pub use config::{CrawlConfig, SignatureOf};
pub use crawlkeeper_extract::{Extracted, Extractor, FieldSpec, FieldValue, Page};
pub use crawlkeeper_fetch::{
    FetchError, FetchResponse, Fetcher, HttpFetcher, Politeness, WireCapture,
};
pub use engine::{Control, Engine, EngineError};
pub use registry::Registry;
pub use scope::{Candidate, Disposition, ScopeReason, Scoper, Verdict};
pub use sink::{JsonlSink, MemorySink, Sink};
pub use summary::{AuthorityStats, StopReason, Summary};
