//! The command line, parsed once into typed arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use crawlkeeper_crawl::config::CrawlConfig;

use crate::args_job::JobArgs;

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
    /// Stop a --continuous crawl cleanly: the process crawling it sees
    /// the request within a second or so, lets its requests in flight
    /// finish, stores their records and exits 0.
    Stop(StopArgs),
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
    /// A CSV table (RFC 4180), a row per record: the core columns, or
    /// url, status and the fields named by --fields.
    Csv,
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
    /// With --format csv: the columns after url and status, one per field
    /// of the records (comma-separated names, in this order).
    #[arg(long, value_name = "NAMES")]
    pub fields: Option<String>,
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

/// Options of `crawlkeeper stop`.
#[derive(Args, Debug)]
pub struct StopArgs {
    /// Where the state is.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The job (see `crawlkeeper jobs`); may be left out when there is one.
    pub job: Option<String>,
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
    #[arg(long, conflicts_with_all = ["fresh", "no_state", "take_over", "continuous"])]
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
    /// Processors this crawl may run (`--use` names them).
    #[command(flatten)]
    pub processors: crate::args_process::ProcessorArgs,
    /// The browsers of a --render crawl.
    #[command(flatten)]
    pub browsers: crate::args_render::BrowserArgs,
    /// What the crawl shows while it runs.
    #[command(flatten)]
    pub view: crate::args_view::ViewArgs,
    /// No progress, no logs but errors, no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The gzip level of WARC records unless told otherwise (measured: see
/// docs/guide/output-and-warc.md).
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

impl CrawlArgs {
    /// The crawl configuration these arguments describe.
    pub fn to_config(&self) -> CrawlConfig {
        self.job.to_config()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crawlkeeper_crawl::config::HostScope;

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
    fn meta_jsonld_and_text_go_into_the_config_of_crawl_and_submit() {
        let flags = [
            "--extract-meta",
            "--extract-jsonld",
            "--text",
            "--max-text",
            "64KiB",
            "http://a.test/",
        ];
        let crawl = parse(&[&["crawl"][..], &flags].concat()).unwrap();
        let submit = parse(
            &[
                &[
                    "submit",
                    "--zookeeper",
                    "127.0.0.1:1",
                    "--store",
                    "postgres://u@127.0.0.1:1/db",
                ][..],
                &flags,
            ]
            .concat(),
        )
        .unwrap();
        let jobs = match (crawl.command, submit.command) {
            (Command::Crawl(c), Command::Submit(s)) => [c.job, s.job],
            _ => panic!("crawl and submit expected"),
        };
        for job in jobs {
            assert_eq!(job.check(), Ok(()));
            let c = job.to_config().extract;
            assert!(c.meta && c.jsonld);
            assert_eq!(c.text, Some(65_536));
        }
        let Command::Crawl(a) = parse(&["crawl", "--text", "http://a.test/"])
            .unwrap()
            .command
        else {
            panic!("crawl expected");
        };
        assert_eq!(
            a.to_config().extract.text,
            Some(1024 * 1024),
            "default 1 MiB"
        );
        let Command::Crawl(a) = parse(&["crawl", "--max-text", "1MiB", "http://a.test/"])
            .unwrap()
            .command
        else {
            panic!("crawl expected");
        };
        assert!(a.job.check().unwrap_err().contains("--max-text"));
        let Command::Crawl(a) = parse(&["crawl", "http://a.test/"]).unwrap().command else {
            panic!("crawl expected");
        };
        assert!(
            a.to_config().extract.is_empty(),
            "nothing asked: nothing in the identity"
        );
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
