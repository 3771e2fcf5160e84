//! `crawlkeeper-bench`: the benchmarks of crawlkeeper, run as a user runs
//! the crawler. Use `scripts/bench.sh` (it builds release binaries first).
//!
//! | subcommand | measures |
//! |---|---|
//! | `engine` | pages/s, CPU per page and peak RSS of `crawl` against the test site |
//! | `shards` | one job crawled by 1, 2, … processes sharing PostgreSQL: pages/s, speed-up, crawler and PostgreSQL CPU |
//! | `freshness` | revisit rules (fixed, StormCrawler's, Nutch's, crawlkeeper's) on simulated pages changing at known rates: requests and mean freshness |
//! | `recrawl` | a `--recrawl` of a site with 10% of pages changed against a fresh crawl: requests, bytes, time |
//! | `render` | `--render` against the served HTML on the same site: pages/s, the crawler's and the browsers' CPU per page, the browsers' memory |
//! | `memory` | peak RSS of a crawl that has seen 1,000,000 URLs |
//! | `client` | CPU per request of the crawler's fetcher, of reqwest (its client before #31) and of hyper-util's client alone, on loopback |
//! | `commit` | a store's cost per transaction and per page, replaying the engine's commits |
//! | `store` | frontier insert and load rates, seen-set lookups, disk per URL, per backend; `--scale`: the same on a job seeded with 1 M to 50 M URLs, and its resume |
//! | `failover` | time from a Runner's death to its backup's next item; false deaths under load |
//! | `cluster` | real `crawlkeeper node` processes: fail-over after `kill -9`, scale-out over Runners, ZooKeeper requests per node |
//! | `coord` | compare-and-set writes/s, watch latency, session-expiry detection, per coordinator |

mod children;
mod client;
mod cluster;
mod commit;
mod coord;
mod engine;
mod failover;
mod freshness;
mod memory;
mod proc;
mod recrawl;
mod render;
mod shards;
mod store;
mod store_args;
mod store_data;
mod store_scale;
mod store_scale_explain;
mod store_scale_table;
mod store_seed;
mod store_warm;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Benchmarks of crawlkeeper.
#[derive(Parser, Debug)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The crawl engine against the test site.
    Engine(engine::EngineArgs),
    /// Revisit rules on a simulated site of pages changing at known rates.
    Freshness(freshness::FreshnessArgs),
    /// One job crawled by several processes sharing PostgreSQL.
    Shards(shards::ShardsArgs),
    /// A re-crawl with conditional requests against a fresh crawl.
    Recrawl(recrawl::RecrawlArgs),
    /// `--render` against the served HTML on the same site.
    Render(render::RenderArgs),
    /// Peak memory of a crawl with a million URLs seen.
    Memory(memory::MemoryArgs),
    /// The HTTP client stacks' CPU per request on loopback.
    Client(client::ClientArgs),
    /// A store's cost per transaction and per page, replaying the engine's commits.
    Commit(commit::CommitArgs),
    /// The stores' frontier, seen set and disk use.
    Store(store_args::StoreArgs),
    /// The coordinators: compare-and-set rate, watch latency, expiry detection.
    Coord(coord::CoordArgs),
    /// The cluster protocol's fail-over on ZooKeeper.
    Failover(failover::FailoverArgs),
    /// The cluster of `crawlkeeper node` processes: fail-over, scale-out, coordination cost.
    Cluster(cluster::ClusterArgs),
    /// (internal) Opens a seeded store and resumes its job: time and memory.
    #[command(hide = true)]
    StoreResume(store_scale::ResumeArgs),
    /// (internal) A ZooKeeper session holding an ephemeral node until killed.
    #[command(hide = true)]
    CoordChild(coord::ChildArgs),
}

fn main() -> Result<()> {
    // The libraries' own events, when asked for (`RUST_LOG`): e.g.
    // `RUST_LOG=crawlkeeper_store::checkpoint=debug` times each of the
    // SQLite store's checkpoints during `store --scale`.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    }
    match Cli::parse().command {
        Command::Engine(a) => engine::run(a),
        Command::Freshness(a) => freshness::run(a),
        Command::Shards(a) => shards::run(a),
        Command::Recrawl(a) => recrawl::run(a),
        Command::Render(a) => render::run(a),
        Command::Memory(a) => memory::run(a),
        Command::Client(a) => client::run(a),
        Command::Commit(a) => commit::run(a),
        Command::Store(a) => store::run(a),
        Command::Coord(a) => coord::run(a),
        Command::Failover(a) => failover::run(a),
        Command::Cluster(a) => cluster::run(a),
        Command::CoordChild(a) => coord::child(a),
        Command::StoreResume(a) => store_scale::resume_child(a),
    }
}
