//! The cluster's commands: `node`, `submit`, `status`.

use std::net::IpAddr;
use std::time::Duration;

use clap::Args;
use crawlkeeper_cluster::GroupName;
use crawlkeeper_crawl::config::DEFAULT_MAX_WORKERS;
use crawlkeeper_model::cluster::NodeName;

use crate::args_job::JobArgs;
use crate::values::{duration, positive_usize};

/// Where the cluster is: its coordinator, its store, its group.
#[derive(Args, Debug, Clone)]
pub struct ClusterArgs {
    /// ZooKeeper: host:port[,host:port…][/chroot].
    #[arg(long, env = "CRAWLKEEPER_ZOOKEEPER", value_name = "CONNECT")]
    pub zookeeper: String,
    /// The PostgreSQL database every node shares: postgres://user@host:port/db,
    /// or libpq words ('host=… dbname=… user=…').
    #[arg(long, env = "CRAWLKEEPER_STORE", value_name = "URL")]
    pub store: String,
    /// The group (one cluster in the ZooKeeper tree): 1 to 64 of
    /// `A-Z a-z 0-9 . _ -`, not `.` or `..`.
    #[arg(long, default_value = "default", value_name = "G")]
    pub group: GroupName,
    /// ZooKeeper's session timeout: a node whose session lapses is dead at once.
    #[arg(long, default_value = "4s", value_name = "DURATION", value_parser = duration)]
    pub session_timeout: Duration,
}

/// Options of `crawlkeeper node`.
#[derive(Args, Debug)]
pub struct NodeArgs {
    /// Where the cluster is.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// This node's name, `<name>_<index>` or `<name>-<index>` (unique in the
    /// group): 1 to 64 of `A-Z a-z 0-9 . _ -`.
    #[arg(long, value_name = "NAME")]
    pub name: NodeName,
    /// How many Runners the group elects (the same on every node).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runners: u32,
    /// How many Backup Runners the group expects (the same on every node).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub backups: u32,
    /// How often this node refreshes its heartbeat.
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = duration)]
    pub update_time: Duration,
    /// A Runner whose heartbeat was not refreshed for this long is late.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = duration)]
    pub update_timeout: Duration,
    /// A Runner late this many checks in a row is dead.
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub heart_rhythm_timeout: u32,
    /// Requests in flight at once, per job, on this node.
    #[arg(long, env = "CRAWLKEEPER_MAX_WORKERS", default_value_t = DEFAULT_MAX_WORKERS,
          value_name = "N", value_parser = positive_usize)]
    pub max_workers: usize,
    /// The local address requests leave from (a machine with several).
    #[arg(long, value_name = "IP")]
    pub bind_address: Option<IpAddr>,
    /// How long to wait for the expected members before electing anyway.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = duration)]
    pub formation_timeout: Duration,
    /// Metrics and the status page of this node.
    #[command(flatten)]
    pub serve: crate::args_view::ServeArgs,
    /// Processors this node runs for the jobs that name them (`--use`).
    #[command(flatten)]
    pub processors: crate::args_process::ProcessorArgs,
    /// The browsers this node renders --render jobs' pages with (started
    /// with the first page to render).
    #[command(flatten)]
    pub browsers: crate::args_render::BrowserArgs,
}

/// Options of `crawlkeeper submit`.
#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// Where the cluster is.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// URLs, or files of URLs one per line (`-` reads standard input).
    #[arg(required = true, value_name = "SEED")]
    pub seeds: Vec<String>,
    /// What the crawl fetches, and how.
    #[command(flatten)]
    pub job: JobArgs,
    /// Split the job's hosts into N shards, at most 1024 (default: the
    /// number of Runners now). Part of the job's identity.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crawlkeeper_node::submit::MAX_SHARDS)))]
    pub shards: Option<u32>,
    /// Wait until the job is complete: exit 0, or 1 if it failed.
    #[arg(long)]
    pub wait: bool,
    /// Print only the job's name.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Options of `crawlkeeper status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Where the cluster is.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// JSON instead of text (SmoothCrawler-Cluster's objects by their field names).
    #[arg(long)]
    pub json: bool,
    /// Refresh in place until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// Hearts and rates are judged over this long.
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = duration)]
    pub window: Duration,
}
