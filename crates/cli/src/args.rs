//! The command line, parsed once into typed arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use crawlkeeper_crawl::config::{CrawlConfig, DEFAULT_MAX_WORKERS, HostScope, ResolveOverride};
use crawlkeeper_crawl::guard::Cidr;
use crawlkeeper_model::parse_duration;

/// A web crawler that runs on one machine or as a fault-tolerant cluster.
#[derive(Parser, Debug)]
#[command(name = "crawlkeeper", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Crawl URLs, or follow links from them with --follow.
    Crawl(Box<CrawlArgs>),
    /// Start the bundled test site on loopback and crawl it (works offline).
    Demo(DemoArgs),
    /// Export the stored results of a job.
    Results(ResultsArgs),
    /// List the jobs in a store, with their counts.
    Jobs(JobsArgs),
    /// Run a cluster node: a Runner or a Backup Runner of a group, until
    /// SIGINT or SIGTERM (then it hands its work over and exits 0).
    Node(Box<crate::args_cluster::NodeArgs>),
    /// Submit a crawl job to a cluster; prints its name.
    Submit(Box<crate::args_cluster::SubmitArgs>),
    /// Show a cluster: members, roles, hearts, tasks, shards, progress.
    Status(crate::args_cluster::StatusArgs),
}

/// Where crawl state is kept.
#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// The SQLite state file.
    #[arg(long, value_name = "PATH", default_value = "crawlkeeper.db")]
    pub state: std::path::PathBuf,
    /// A PostgreSQL database instead: postgres://user@host:port/db, or
    /// libpq words ('host=… dbname=… user=…'); or an existing state file.
    #[arg(long, value_name = "URL", conflicts_with = "state")]
    pub store: Option<String>,
}

impl StoreArgs {
    /// The store's location: the PostgreSQL URL or the state file's path.
    pub fn location(&self) -> String {
        self.store
            .clone()
            .unwrap_or_else(|| self.state.to_string_lossy().into_owned())
    }
}

/// Output formats of `results`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    /// One JSON record per line.
    Jsonl,
    /// WARC 1.1 files of the pages' stored records (needs --out; the job
    /// must have been crawled with --store-bodies).
    Warc,
}

/// How WARC files are written (`crawl --warc`, `results --format warc`).
#[derive(Args, Debug, Clone)]
pub struct WarcFileArgs {
    /// Begin a new WARC file (FILE-00001.warc.gz, …) past this size.
    #[arg(long, default_value_t = 1_000_000_000, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub warc_max_size: u64,
    /// The gzip level of each WARC record, 0 (none) to 9 (smallest).
    #[arg(long, default_value_t = WARC_GZIP_LEVEL, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=9))]
    pub warc_gzip_level: u32,
}

/// Options of `crawlkeeper results`.
#[derive(Args, Debug)]
pub struct ResultsArgs {
    /// Where the state is.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The job (see `crawlkeeper jobs`); may be left out when there is one.
    pub job: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: Format,
    /// Write here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing --out file that does not hold this job's records.
    #[arg(long)]
    pub overwrite: bool,
    /// Add to each record who stored it: `"writer": {"holder", "shard",
    /// "generation"}`, the node holding its shard's lease then (PostgreSQL
    /// stores; `null` where it is not known).
    #[arg(long)]
    pub writer: bool,
    /// How WARC files are written (--format warc).
    #[command(flatten)]
    pub warc: WarcFileArgs,
    /// With --format warc: a CDXJ index beside each file written.
    #[arg(long)]
    pub cdx: bool,
}

/// Options of `crawlkeeper jobs`.
#[derive(Args, Debug)]
pub struct JobsArgs {
    /// Where the state is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where links may lead.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ScopeArg {
    /// Only the seeds' hosts.
    SameHost,
    /// Hosts sharing a registrable domain with a seed.
    SameDomain,
    /// Any host.
    Any,
}

/// The options that define a crawl job (`crawl` and `submit`).
#[derive(Args, Debug, Clone)]
pub struct JobArgs {
    /// Follow links found on pages (without it only the seeds are fetched).
    #[arg(long)]
    pub follow: bool,
    /// Read each host's sitemaps (robots.txt `Sitemap:` lines and
    /// /sitemap.xml) after its robots.txt; their URLs are crawled at depth 1.
    #[arg(long)]
    pub sitemaps: bool,
    /// Keep each page's WARC records (request, response headers and body
    /// as received, metadata) in the state store, for
    /// `crawlkeeper results --format warc`.
    #[arg(long)]
    pub store_bodies: bool,
    /// Maximum link depth from a seed.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub depth: u32,
    /// Stop queueing after this many URLs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_pages: Option<u64>,
    /// Which hosts links may lead to.
    #[arg(long, value_enum, default_value = "same-host")]
    pub scope: ScopeArg,
    /// A host that is always in scope (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Only URLs matching this regex (repeatable: any may match).
    #[arg(long, value_name = "RE")]
    pub include: Vec<String>,
    /// Never URLs matching this regex (repeatable).
    #[arg(long, value_name = "RE")]
    pub exclude: Vec<String>,
    /// The User-Agent header.
    #[arg(long, value_name = "S")]
    pub user_agent: Option<String>,
    /// Do not fetch or obey robots.txt.
    #[arg(long)]
    pub ignore_robots: bool,
    /// Requests in flight across all hosts.
    #[arg(long, env = "CRAWLKEEPER_MAX_WORKERS", default_value_t = DEFAULT_MAX_WORKERS,
          value_name = "N", value_parser = positive_usize)]
    pub max_workers: usize,
    /// Requests in flight per host.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = positive_usize)]
    pub per_host: usize,
    /// Stop the whole run after this long (e.g. 90s, 6h) and exit 124.
    #[arg(long, env = "CRAWLKEEPER_RUN_TIMEOUT", value_name = "DURATION",
          default_value = "6h", value_parser = duration)]
    pub timeout: Duration,
    /// Time allowed for one request, body included.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = duration)]
    pub request_timeout: Duration,
    /// Time allowed to connect.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = duration)]
    pub connect_timeout: Duration,
    /// Bodies longer than this many bytes are cut (after decompression).
    #[arg(long, default_value_t = 10 * 1024 * 1024, value_name = "BYTES")]
    pub max_body: u64,
    /// Links taken from one page; the record counts the rest (links_dropped).
    #[arg(long, default_value_t = crawlkeeper_crawl::config::DEFAULT_MAX_LINKS_PER_PAGE,
          value_name = "N", value_parser = positive_usize)]
    pub max_links_per_page: usize,
    /// Time allowed for finding the links of one page; past it the page is
    /// recorded with the links found so far (error kind extract_limit).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = duration)]
    pub extract_timeout: Duration,
    /// Query parameter removed from URLs (repeatable; `name*` is a prefix).
    /// Replaces the default list utm_*, fbclid, gclid.
    #[arg(long = "strip-param", value_name = "NAME")]
    pub strip_params: Vec<String>,
    /// Keep every query parameter.
    #[arg(long, conflicts_with = "strip_params")]
    pub keep_params: bool,
    /// Also trust the certificate authorities in this PEM file (repeatable).
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// Always allow connections into this network (CIDR, repeatable),
    /// despite the SSRF guard.
    #[arg(long = "allow-net", value_name = "CIDR", value_parser = cidr)]
    pub allow_nets: Vec<Cidr>,
    /// Never connect into this network (CIDR, repeatable), seeds included.
    #[arg(long = "deny-net", value_name = "CIDR", value_parser = cidr)]
    pub deny_nets: Vec<Cidr>,
    /// Turn the SSRF guard off: links may lead to private, loopback and
    /// link-local addresses (--deny-net still applies).
    #[arg(long)]
    pub allow_private: bool,
    /// Resolve HOST to IP instead of asking DNS (repeatable), like curl's --resolve.
    #[arg(long, value_name = "HOST=IP", value_parser = resolve_override)]
    pub resolve: Vec<ResolveOverride>,
    /// Percent of the time (1-100) the crawler may keep one host busy; the
    /// delay between requests adapts to response times. 100: no delay.
    #[arg(long, default_value_t = 50, value_name = "L",
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub max_load: u8,
    /// The least delay between two requests to one host.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = duration)]
    pub delay: Duration,
    /// A random extra delay per request, with this mean.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = duration)]
    pub random_delay: Duration,
    /// The longest robots.txt Crawl-delay obeyed.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = duration)]
    pub max_crawl_delay: Duration,
    /// Retries after a timeout, connection error, 429 or 5xx.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// Backoff before the first retry (doubled each time, with jitter).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = duration)]
    pub retry_base: Duration,
    /// Give up a host after this many failures in a row; its URLs are
    /// recorded as skipped.
    #[arg(long, default_value_t = 20, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_host_errors: u32,
    /// URL keys remembered in memory; past this the store is asked.
    #[arg(long, default_value_t = crawlkeeper_crawl::config::DEFAULT_SEEN_CACHE, value_name = "N")]
    pub seen_cache: usize,
    /// URLs queued in memory; more wait in the store.
    #[arg(long, default_value_t = crawlkeeper_crawl::config::DEFAULT_MAX_QUEUED, value_name = "N",
          value_parser = positive_usize)]
    pub max_queued: usize,
}

/// Options of `crawlkeeper crawl`.
#[derive(Args, Debug)]
pub struct CrawlArgs {
    /// URLs, or files of URLs one per line (`-` reads standard input).
    #[arg(required = true, value_name = "SEED")]
    pub seeds: Vec<String>,
    /// What the crawl fetches, and how.
    #[command(flatten)]
    pub job: JobArgs,
    /// Write JSON Lines records here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where the crawl's state is kept (resume by running the same command).
    #[command(flatten)]
    pub store: StoreArgs,
    /// Forget this job's stored state and start over.
    #[arg(long)]
    pub fresh: bool,
    /// Crawl a finished job again: every URL it stored is asked again,
    /// conditionally (If-None-Match, If-Modified-Since) where the earlier
    /// copy had validators; unchanged pages answer 304 (recorded as not
    /// modified, as WARC revisits), new links on changed pages are
    /// followed. Writes new --out and --warc files.
    #[arg(long, conflicts_with_all = ["fresh", "no_state", "take_over"])]
    pub recrawl: bool,
    /// Replace an existing --out file that does not hold this job's records.
    #[arg(long)]
    pub overwrite: bool,
    /// Keep the state in memory only: no state file, no resume.
    #[arg(long, conflicts_with_all = ["fresh", "store"])]
    pub no_state: bool,
    /// Split the job's hosts into N shards, crawled by N processes sharing
    /// a PostgreSQL --store (each given its --shard). Part of the job's
    /// identity.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crawlkeeper_model::shard::MAX_SHARDS)))]
    pub shards: u32,
    /// Which shards of the job this process crawls (0 to N-1; a comma
    /// list or repeated for several, crawled by one engine).
    #[arg(long, value_name = "I", requires = "shards", value_delimiter = ',')]
    pub shard: Vec<u32>,
    /// Take the shard even from a live process, which stops (exit 3).
    #[arg(long)]
    pub take_over: bool,
    /// WARC output.
    #[command(flatten)]
    pub warc: WarcArgs,
    /// What the crawl shows while it runs.
    #[command(flatten)]
    pub view: crate::args_view::ViewArgs,
    /// No progress, no logs but errors, no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The gzip level of WARC records unless told otherwise (measured: see
/// the README's WARC section).
pub const WARC_GZIP_LEVEL: u32 = 1;

/// WARC output of `crawl`.
#[derive(Args, Debug, Clone)]
pub struct WarcArgs {
    /// Write every request and response as WARC 1.1 records to FILE, each
    /// record its own gzip member when the name ends with .gz.
    #[arg(long, value_name = "FILE")]
    pub warc: Option<PathBuf>,
    /// How the WARC files are written.
    #[command(flatten)]
    pub files: WarcFileArgs,
    /// Archive a response whose payload this run archived before as a
    /// revisit record (headers only).
    #[arg(long)]
    pub warc_dedup: bool,
    /// At the end of the run, write a CDXJ index (as pywb reads it) beside
    /// each WARC file: crawl.warc.gz → crawl.cdxj.
    #[arg(long, requires = "warc")]
    pub cdx: bool,
}

/// Options of `crawlkeeper demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Write JSON Lines records here instead of standard output (a file
    /// of an earlier demo's records is replaced).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing --out file that does not hold crawl records.
    #[arg(long)]
    pub overwrite: bool,
    /// What the crawl shows while it runs.
    #[command(flatten)]
    pub view: crate::args_view::ViewArgs,
    /// No progress, no logs but errors, no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

fn cidr(s: &str) -> Result<Cidr, String> {
    s.parse()
        .map_err(|e: crawlkeeper_crawl::guard::CidrError| e.to_string())
}

pub fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn resolve_override(s: &str) -> Result<ResolveOverride, String> {
    let (host, ip) = s
        .split_once('=')
        .ok_or_else(|| format!("expected HOST=IP, got '{s}'"))?;
    let ip: std::net::IpAddr = ip
        .parse()
        .map_err(|e| format!("bad IP address '{ip}': {e}"))?;
    if host.is_empty() {
        return Err("empty host name".to_owned());
    }
    Ok(ResolveOverride {
        host: host.to_ascii_lowercase(),
        addr: std::net::SocketAddr::new(ip, 0),
    })
}

impl CrawlArgs {
    /// The crawl configuration these arguments describe.
    pub fn to_config(&self) -> CrawlConfig {
        self.job.to_config()
    }
}

impl JobArgs {
    /// The crawl configuration these arguments describe.
    pub fn to_config(&self) -> CrawlConfig {
        let mut c = CrawlConfig::default();
        c.scope.follow = self.follow;
        c.scope.sitemaps = self.sitemaps;
        c.archive.store_bodies = self.store_bodies;
        c.fetch.capture = self.store_bodies;
        c.scope.max_depth = self.depth;
        c.scope.max_pages = self.max_pages;
        c.scope.hosts = match self.scope {
            ScopeArg::SameHost => HostScope::SameHost,
            ScopeArg::SameDomain => HostScope::SameDomain,
            ScopeArg::Any => HostScope::Any,
        };
        c.scope.allow_hosts = self.allow_hosts.clone();
        c.scope.include = self.include.clone();
        c.scope.exclude = self.exclude.clone();
        c.scope.respect_robots = !self.ignore_robots;
        if self.keep_params {
            c.scope.strip_params.clear();
        } else if !self.strip_params.is_empty() {
            c.scope.strip_params = self.strip_params.clone();
        }
        if let Some(ua) = &self.user_agent {
            c.fetch.user_agent = ua.clone();
        }
        c.fetch.request_timeout = self.request_timeout;
        c.fetch.connect_timeout = self.connect_timeout;
        c.fetch.max_body_bytes = self.max_body;
        c.fetch.resolve = self.resolve.clone();
        c.fetch.ca_certs = self.ca_certs.clone();
        c.fetch.allow_nets = self.allow_nets.clone();
        c.fetch.deny_nets = self.deny_nets.clone();
        c.fetch.allow_private = self.allow_private;
        c.engine.max_workers = self.max_workers;
        c.engine.per_host = self.per_host;
        c.engine.run_timeout = self.timeout;
        c.politeness.max_load = self.max_load;
        c.politeness.delay = self.delay;
        c.politeness.random_delay = self.random_delay;
        c.politeness.max_crawl_delay = self.max_crawl_delay;
        c.politeness.retries = self.retries;
        c.politeness.retry_base = self.retry_base;
        c.politeness.max_host_errors = self.max_host_errors;
        c.engine.seen_cache = self.seen_cache;
        c.engine.max_queued = self.max_queued;
        c.engine.max_links_per_page = self.max_links_per_page;
        c.engine.extract_timeout = self.extract_timeout;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("crawlkeeper").chain(args.iter().copied()))
    }

    #[test]
    fn crawl_defaults() {
        let Command::Crawl(a) = parse(&["crawl", "http://a.test/"]).unwrap().command else {
            panic!("crawl expected");
        };
        let c = a.to_config();
        assert!(!c.scope.follow);
        assert_eq!(c.scope.max_depth, 5);
        assert_eq!(c.engine.per_host, 1);
        assert_eq!(c.engine.run_timeout, Duration::from_secs(6 * 3600));
        assert_eq!(c.scope.strip_params, ["utm_*", "fbclid", "gclid"]);
        assert_eq!(
            c.politeness,
            crawlkeeper_crawl::config::PolitenessConfig::default()
        );
    }

    #[test]
    fn options_map_to_config() {
        let Command::Crawl(a) = parse(&[
            "crawl",
            "--follow",
            "--depth",
            "2",
            "--scope",
            "same-domain",
            "--timeout",
            "90s",
            "--per-host",
            "4",
            "--max-workers",
            "8",
            "--resolve",
            "www.a.test=127.0.0.1",
            "--strip-param",
            "sid",
            "--ca-cert",
            "/etc/ssl/extra.pem",
            "--ignore-robots",
            "http://a.test/",
        ])
        .unwrap()
        .command
        else {
            panic!("crawl expected");
        };
        let c = a.to_config();
        assert!(c.scope.follow);
        assert_eq!(c.scope.max_depth, 2);
        assert_eq!(c.scope.hosts, HostScope::SameDomain);
        assert_eq!(c.engine.run_timeout, Duration::from_secs(90));
        assert_eq!((c.engine.per_host, c.engine.max_workers), (4, 8));
        assert_eq!(c.fetch.resolve[0].host, "www.a.test");
        assert_eq!(c.scope.strip_params, ["sid"]);
        assert_eq!(c.fetch.ca_certs, [PathBuf::from("/etc/ssl/extra.pem")]);
        assert!(!c.scope.respect_robots);
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse(&["crawl", "--timeout", "soon", "http://a.test/"]).is_err());
        assert!(parse(&["crawl", "--per-host", "0", "http://a.test/"]).is_err());
        assert!(parse(&["crawl", "--resolve", "nohost", "http://a.test/"]).is_err());
        assert!(parse(&["crawl", "--bogus", "http://a.test/"]).is_err());
        assert!(parse(&["crawl", "--max-load", "0", "http://a.test/"]).is_err());
        assert!(parse(&["crawl", "--max-load", "101", "http://a.test/"]).is_err());
        assert!(parse(&["crawl", "--max-host-errors", "0", "http://a.test/"]).is_err());
        assert!(parse(&["crawl"]).is_err());
    }
}
