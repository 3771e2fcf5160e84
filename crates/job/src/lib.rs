//! A crawl job kept in a store, as the `crawl` command and a cluster node
//! both run it: what identifies it, the engine's durable state in the
//! store, and its JSON Lines output that survives crashes.
//!
//! | module | job |
//! |---|---|
//! | [`identity`] | a job's name from its seeds, scope and shard count |
//! | [`state`] | [`StoreState`]: the engine's [`crawlkeeper_crawl::state::CrawlState`] in a store, shards and all |
//! | [`output`] | the JSON Lines output of a job that may be resumed |
//! | [`export`] | a job's stored WARC records written out as WARC files (`results --format warc`) |
//! | [`warc`] | the WARC output of a job: records before commits, cut after a crash |

pub mod export;
pub mod identity;
pub mod output;
pub mod state;
pub mod warc;

pub use identity::job_spec;
pub use output::OutputError;
pub use state::StoreState;
