//! The options of `crawlkeeper-bench store`, its scale mode's included.

use std::path::PathBuf;

use clap::Args;

/// Options of `crawlkeeper-bench store`.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Backends to measure: sqlite, postgres.
    #[arg(long, default_value = "sqlite,postgres", value_delimiter = ',')]
    pub(crate) backend: Vec<String>,
    /// URLs in the job.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) urls: u64,
    /// Authorities they are spread over.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) authorities: u64,
    /// URLs per transaction (the engine groups commands the same way).
    #[arg(long, default_value_t = 1000)]
    pub(crate) batch: usize,
    /// The PostgreSQL server (a fresh schema is used and dropped).
    #[arg(
        long,
        env = "CRAWLKEEPER_TEST_POSTGRES",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub(crate) postgres: String,
    /// Scale mode: the job sizes (URLs) to seed and measure, e.g.
    /// `1000000,10000000,50000000` (see `store_scale`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scale: Vec<u64>,
    /// Scale mode: the options of the measured operations.
    #[command(flatten)]
    pub(crate) scale_opts: ScaleOpts,
}

/// Options of the measured operations of `store --scale`.
#[derive(Args, Debug)]
pub struct ScaleOpts {
    /// URLs admitted new, admitted known and finished at each size (a
    /// multiple of 65,536 makes the SQLite store merge its keys a whole
    /// number of times).
    #[arg(long = "scale-ops", default_value_t = 131_072)]
    pub(crate) ops: u64,
    /// URLs per transaction (the engine's are of about 250).
    #[arg(long = "scale-batch", default_value_t = 256)]
    pub(crate) per_txn: usize,
    /// New URLs of one host in a row (a page's links to its own host,
    /// admitted together); 1 puts each URL on another host than the one
    /// before, as this benchmark did before session 22.
    #[arg(long = "scale-run", default_value_t = 16)]
    pub(crate) run: u64,
    /// How URLs are keyed: `host` (host-prefixed, as the crawler keys
    /// them) or `flat` (a hash of the URL alone, as before schema 8/5).
    #[arg(long = "scale-keys", value_enum, default_value_t = crate::store_data::Keys::Host)]
    pub(crate) keys: crate::store_data::Keys,
    /// Loads measured (hosts with URLs, at random, 16 to a transaction).
    #[arg(long = "scale-loads", default_value_t = 4096)]
    pub(crate) loads: u64,
    /// URLs each load asks for.
    #[arg(long = "scale-load-limit", default_value_t = 64)]
    pub(crate) load_limit: usize,
    /// Directory for the SQLite files (default: the temporary directory).
    #[arg(long = "scale-dir")]
    pub(crate) dir: Option<PathBuf>,
    /// Free disk to leave, in GB: a size that would not leave it is skipped.
    #[arg(long = "scale-spare-gb", default_value_t = 10)]
    pub(crate) spare_gb: u64,
    /// Prints the plans of the statements of resume and load at each size
    /// (PostgreSQL: EXPLAIN (ANALYZE, BUFFERS); SQLite: EXPLAIN QUERY PLAN).
    #[arg(long = "scale-explain")]
    pub(crate) explain: bool,
    /// Appends each size's figures to this file as a JSON line.
    #[arg(long = "scale-json")]
    pub(crate) json: Option<PathBuf>,
    /// Prints the tables of figures saved with `--scale-json` in this file
    /// instead of measuring.
    #[arg(long = "scale-from")]
    pub(crate) from: Option<PathBuf>,
    /// Keeps the last size's file or schema (for EXPLAIN by hand).
    #[arg(long = "scale-keep")]
    pub(crate) keep: bool,
    /// Before the operations, reads the job's frontier and seen set into
    /// the operating system's cache, as a crawl that has run a while
    /// keeps the pages it uses again and again on a machine with memory
    /// for them: PostgreSQL's tables `urls` and `authorities` and their
    /// indexes (`pg_prewarm`), SQLite's `urls`, `urls_queued`,
    /// `url_keys`, `done_bits` and `authorities` (the hosts, since
    /// session 28). A crawl never reads its results back: PostgreSQL's
    /// (table, TOAST, indexes) are dropped from the cache first, where
    /// the server's files are readable (since session 28); SQLite's share
    /// the file and stay as the seed left them. Without
    /// it the operations start from what the bulk load left in memory
    /// (at 50 million URLs, larger than this machine's memory, mostly
    /// what it wrote last).
    #[arg(long = "scale-warm")]
    pub(crate) warm: bool,
}
