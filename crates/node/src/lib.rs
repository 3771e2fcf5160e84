//! The cluster crawler: a crawl job's shards are the cluster's tasks. A
//! Runner ([`CrawlRunner`]) crawls every shard it holds, one engine per
//! job, with the shard leases of the store fencing it; [`submit`] writes a
//! job to the store and spreads its shards over the Runners; [`status`]
//! gathers what the coordinator and the store say of the cluster.
//!
//! | module | what it does |
//! |---|---|
//! | [`continuing`] | a continuous job's stop and expected freshness, for `status` |
//! | [`group`] | what the nodes of a group must agree on, checked before joining |
//! | [`item`] | a shard of a job as a task item ([`ShardItem`]) |
//! | [`offer`] | the processors each node runs, for `submit` and `status` |
//! | [`runner`] | [`CrawlRunner`]: the engine as the cluster's task runner |
//! | [`submit`] | a job into the store, its shards to the Runners |
//! | [`status`] | members, roles, hearts, tasks, shards and progress |
//! | [`status_json`] | that, every list capped, for a status page |
//! | [`tasks`] | the group's tasks, their pending shards, whether a job is done |
//! | [`view`] | a node's engines and shard events, for its status page and metrics |
//! | [`status_page`] | [`status_page::NodeSource`]: a node's status page and metrics, the cluster looked at in the background |
//! | [`wait`] | waiting for a submitted job's end: complete, or a shard failed on its Runner |
//! | [`reach`] | reaching a cluster's ZooKeeper and store, each failure one clear line |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod continuing;
pub mod group;
pub mod item;
pub mod offer;
pub mod reach;
pub mod runner;
pub mod status;
pub mod status_json;
pub mod status_page;
pub mod submit;
pub mod tasks;
pub mod view;
pub mod wait;

pub use item::ShardItem;

/// Lets go of a store off the async threads: closing a PostgreSQL client
/// blocks (it runs a runtime of its own), which must not happen on a
/// thread that drives futures.
pub fn release(store: Box<dyn crawlkeeper_store::Store>) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(move || drop(store))),
        Err(_) => drop(store),
    }
}
pub use runner::{CrawlRunner, NodeSettings};

/// A store let go of off the async threads however its owner ends (a
/// future dropped between two awaits included).
pub struct Releasing(pub Option<Box<dyn crawlkeeper_store::Store>>);

impl Drop for Releasing {
    fn drop(&mut self) {
        if let Some(store) = self.0.take() {
            release(store);
        }
    }
}
