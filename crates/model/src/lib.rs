//! Plain data shared by every crawlkeeper crate. Nothing here does I/O.
//!
//! | module | what it does |
//! |---|---|
//! | [`authority`] | scheme + host + port: the unit of politeness and scheduling |
//! | [`record`] | the record written for every URL the crawler requested |
//! | [`text`] | text cut to a size at a character boundary |
//! | [`known`] | what is known of a URL before it is requested: sitemap `lastmod`, an earlier copy's validators |
//! | [`key`] | URL keys: maps and sets that do not hash them again |
//! | [`duration`] | durations written like `500ms`, `2s`, `1m`, `6h` |
//! | [`cluster`] | the cluster's meta-data: GroupState, NodeState, Task, Heartbeat, node names |
//! | [`state`] | durable crawl state: frontier entries, finished URLs, per-authority state |
//! | [`shard`] | a job's hosts split in shards, one holder each |
//! | [`response`] | a fetched response: status, headers, body, and the exchange as sent |
//! | [`revisit`] | when to fetch a page again: its change rate estimated, a budget spread for the most freshness, a page's schedule |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod authority;
pub mod cluster;
pub mod duration;
pub mod key;
pub mod known;
pub mod record;
pub mod response;
pub mod revisit;
pub mod shard;
pub mod state;
pub mod text;

/// The product token robots.txt groups and `<meta name=...>` robots tags
/// are matched against.
pub const PRODUCT_TOKEN: &str = "crawlkeeper";

pub use authority::Authority;
pub use duration::{
    DurationError, MAX_DURATION, format_duration, parse_duration, parse_positive_duration,
};
pub use known::Known;
pub use record::{CrawlRecord, ErrorKind, RecordError, Rendering, Via};
pub use response::{FetchResponse, WireCapture};
pub use shard::{Partition, shard_of};
pub use state::{
    AuthorityState, Fence, FinishedUrl, FrontierEntry, JobCounts, NextFetch, RobotsSnapshot,
};
