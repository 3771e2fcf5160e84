//! A crawl job kept in a store, as the `crawl` command and a cluster node
//! both run it: what identifies it, the engine's durable state in the
//! store, and its JSON Lines output that survives crashes.
//!
//! | module | what it does |
//! |---|---|
//! | [`open`] | [`open()`]: the one way a job is opened to crawl it, by `crawl` and by a Runner |
//! | [`opening`] | what [`open()`] is asked ([`Opening`]) and hands back ([`Opened`]) |
//! | [`location`] | [`Location`]: where a job's state is kept (a file, a store, or memory), opened with errors fit for a user |
//! | `memory` | a job kept in memory only (`crawl --no-state`), opened by [`open()`] like the others |
//! | [`claim`] | [`claim_shards`]: claiming shards, waiting out a displaced live holder's lease gate |
//! | [`guard`] | what outputs must never overwrite: the state, seed files, other files |
//! | [`error`] | [`JobError`]: why a job could not be opened, typed where callers decide by it |
//! | [`identity`] | a job's name from its seeds, scope and shard count |
//! | [`state`] | [`StoreState`]: the engine's [`crawlkeeper_crawl::state::CrawlState`] in a store, shards and all |
//! | [`polite`] | [`polite::keep`]: a process's share of the cluster's bounds per host and per IP, kept through PostgreSQL |
//! | [`output`] | the JSON Lines output of a job that may be resumed |
//! | [`seeds`] | a job's seeds from the command line: URLs, files of URLs, standard input (bounded lines) |
//! | [`records`] | a job's stored records as JSON Lines (`results`), with who stored each if asked |
//! | [`table`] | a job's stored records as a CSV table (`results --format csv`), formulas defused |
//! | [`export`] | a job's stored WARC records written out as WARC files (`results --format warc`) |
//! | [`warc`] | the WARC output of a job: records before commits, cut after a crash |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod claim;
pub mod error;
pub mod export;
pub mod guard;
pub mod identity;
pub mod location;
mod memory;
pub mod open;
pub mod opening;
pub mod output;
pub mod polite;
pub mod records;
pub mod seeds;
pub mod state;
pub mod table;
pub mod warc;

pub use claim::claim_shards;
pub use error::JobError;
pub use identity::job_spec;
pub use location::Location;
pub use open::open;
pub use opening::{Opened, Opening};
pub use output::OutputError;
pub use state::StoreState;
