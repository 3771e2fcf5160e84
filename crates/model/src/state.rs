//! Plain data of durable crawl state, shared by the engine (which produces
//! it) and the stores (which keep it).

use serde::{Deserialize, Serialize};

use crate::{Authority, CrawlRecord, Known};

/// A URL in the frontier: admitted, not yet finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontierEntry {
    /// The dedup key of the normalised URL (128-bit hash).
    pub key: u128,
    /// The normalised URL.
    pub url: String,
    /// Links followed from a seed.
    pub depth: u32,
    /// The page that linked here.
    pub parent: Option<String>,
    /// Redirect hops that led here, oldest first.
    pub redirect_chain: Vec<String>,
    /// What is known of it before it is requested (a sitemap's
    /// `lastmod`, an earlier pass's validators).
    pub known: Option<Known>,
}

impl FrontierEntry {
    /// Whether the URL is a page requisite (`--requisites`) that
    /// `--max-pages` does not count (a frame counts as a page).
    pub fn is_requisite(&self) -> bool {
        self.known
            .as_ref()
            .is_some_and(|k| k.is_uncounted_requisite())
    }
}

/// The store's fence: a shard this process held was taken over by
/// another process, which must stop writing and fetching at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard {shard} of job '{job}' was taken over by {by}")]
pub struct Fence {
    /// The job's name.
    pub job: String,
    /// The shard.
    pub shard: u32,
    /// Who holds it now.
    pub by: String,
}

/// A finished URL: its record, stored once per job and key.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedUrl {
    /// The dedup key of the URL.
    pub key: u128,
    /// What happened.
    pub record: CrawlRecord,
    /// The record as JSON, made once: stored and written out as it is.
    pub json: String,
    /// Its WARC records, encoded, when the crawl archives (else empty).
    pub archive: Vec<u8>,
    /// In a continuous crawl: when the URL is fetched again, and what its
    /// entry carries to that fetch. `None`: never again (a one-shot
    /// crawl, a retired page).
    pub next: Option<Box<NextFetch>>,
    /// In a continuous crawl: how the URL moved in its job's rate
    /// histogram (applied when its record is stored).
    pub moved: Option<crate::revisit::RateMove>,
}

/// When a finished URL of a continuous crawl is fetched again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextFetch {
    /// When it is due, in milliseconds since the Unix epoch.
    pub due_ms: i64,
    /// Its entry as the next fetch takes it: what is known of it then
    /// (validators, its schedule) in `known`.
    pub entry: FrontierEntry,
    /// Its authority.
    pub authority: Authority,
}

impl FinishedUrl {
    /// A finished URL with its record serialised.
    pub fn new(key: u128, record: CrawlRecord) -> Self {
        let json = record.to_json();
        Self {
            key,
            record,
            json,
            archive: Vec::new(),
            next: None,
            moved: None,
        }
    }
}

/// What robots.txt said, as kept across runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RobotsSnapshot {
    /// Everything allowed (no robots.txt, or a 4xx).
    AllowAll,
    /// The body of a robots.txt served with 2xx.
    Body(String),
}

/// Per-authority state that must survive a restart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuthorityState {
    /// The authority.
    pub authority: Authority,
    /// Its robots.txt, once fetched (an unavailable one is fetched again).
    pub robots: Option<RobotsSnapshot>,
    /// When it was fetched, in milliseconds since the Unix epoch (absent
    /// in state saved before this was kept): a copy older than
    /// [`ROBOTS_MAX_AGE`] is fetched again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robots_at_ms: Option<i64>,
    /// The adaptive delay after the last response, in milliseconds.
    pub delay_ms: u64,
    /// Failures in a row.
    pub consecutive_failures: u32,
    /// Given up after too many failures in a row.
    pub abandoned: bool,
}

/// How long a robots.txt is trusted: RFC 9309 (2.4) asks crawlers not to
/// use a cached copy for more than 24 hours. A crawl that runs longer (a
/// continuous one), or resumes later, fetches it again.
pub const ROBOTS_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Counts of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounts {
    /// Distinct URLs admitted (the seen set).
    pub seen: u64,
    /// URLs finished (with a stored record).
    pub done: u64,
    /// Finished URLs whose record has an error.
    pub errors: u64,
    /// Of `seen`, page requisites (`--requisites`), counted job-wide only
    /// (a shard's counts leave it 0): `--max-pages` counts the others.
    #[serde(default)]
    pub requisites: u64,
}

impl JobCounts {
    /// URLs admitted and not finished.
    pub fn pending(&self) -> u64 {
        self.seen - self.done
    }

    /// URLs admitted that are pages, not requisites: what `--max-pages`
    /// counts.
    pub fn pages(&self) -> u64 {
        self.seen.saturating_sub(self.requisites)
    }
}

/// What earlier runs of the job left.
#[derive(Debug, Clone, Default)]
pub struct Resumed {
    /// Counts of the job.
    pub counts: JobCounts,
    /// Saved per-authority state.
    pub authorities: Vec<AuthorityState>,
    /// Authorities with queued URLs, and how many.
    pub queued: Vec<(Authority, u64)>,
    /// How many times the job was asked to stop so far: a run stops when
    /// a poll finds more.
    pub stops: u64,
}

/// One transaction's worth of changes.
#[derive(Debug, Default)]
pub struct Batch {
    /// In: records of finished URLs. Idempotent: a key already finished
    /// keeps its first record.
    pub finished: Vec<FinishedUrl>,
    /// Out: for each finished URL, true if its record was stored now (false
    /// if it had one already, so it must not be written out again).
    pub recorded: Vec<bool>,
    /// In: keep each finished URL's WARC records (its `archive`) in the
    /// store beside its record, for exporting the job as WARC.
    pub keep_archives: bool,
    /// In: candidate URLs with their authority and whether the engine keeps
    /// them in memory (loaded) or leaves them in the store (queued).
    pub admit: Vec<(FrontierEntry, Authority, bool)>,
    /// Out: for each candidate, true if it was new to the job.
    pub admitted: Vec<bool>,
    /// In: load up to `limit` queued URLs of an authority, shallowest first.
    pub load: Vec<(Authority, usize)>,
    /// Out: for each load, the entries now marked loaded.
    pub loaded: Vec<Vec<FrontierEntry>>,
    /// In: per-authority state to save.
    pub authorities: Vec<AuthorityState>,
    /// Set by the store on the first attempt: the first result position it
    /// gave out. If the connection is lost while committing, a retry cannot
    /// know whether the commit happened; results found done at or past this
    /// position were stored by that attempt and still count as recorded.
    pub first_position: Option<u64>,
    /// In: the most pages the whole job may admit (`--max-pages`, counted
    /// job-wide when several processes share the job): candidates past it
    /// are not admitted. Requisites are admitted whatever the count.
    pub admit_limit: Option<u64>,
    /// In: look for work other processes left for the held shards, and
    /// whether the job is complete (filling `news`, `open` and `job_seen`).
    pub poll: bool,
    /// In (with `poll`): this process holds no URL in memory. URLs of the
    /// held shards still marked held by it are orphans (of a commit whose
    /// answer was lost) and are queued again, and `news` lists every
    /// authority of the held shards with queued URLs, not only those other
    /// processes noted: nothing can be left behind in the store.
    pub sweep: bool,
    /// In: confirm that the held shards are still this process's, even if
    /// nothing else is to be done (every transaction confirms it anyway).
    pub verify: bool,
    /// Out (with `poll`): authorities of the held shards to which other
    /// processes added URLs, with how many are queued now.
    pub news: Vec<(Authority, u64)>,
    /// Out (with `poll`): whether any URL of the job, in any shard, is
    /// queued or held by a crawler. False means the job is complete.
    pub open: Option<bool>,
    /// Out (with `poll`, when the store counts it): pages (not requisites)
    /// admitted to the whole job so far.
    pub job_seen: Option<u64>,
    /// Out (with `poll`, when the store counts it): requisites (frames
    /// aside) admitted to the whole job so far.
    pub job_requisites: Option<u64>,
    /// In (a continuous crawl): queue again the finished URLs of the
    /// held shards due at or before this time (milliseconds since the
    /// Unix epoch), at most [`DUE_BATCH`] of them (filling `requeued`).
    pub due: Option<i64>,
    /// Out (with `due`): authorities with URLs queued again, and how many
    /// each (added to what the store held queued before).
    pub requeued: Vec<(Authority, u64)>,
    /// Out (with `due`): the earliest due time left in the held shards.
    pub next_due: Option<i64>,
    /// Out (with `due`): the job's rate histogram, every shard's: how
    /// many of its pages are counted in each bucket
    /// ([`crate::revisit::rate_bucket`]).
    pub rates: Vec<(i16, u64)>,
    /// Out (with `poll`, when the store counts them): how many times the
    /// job was asked to stop (`crawlkeeper stop`) so far.
    pub stops: Option<u64>,
}

/// The most URLs a batch queues again because they are due.
pub const DUE_BATCH: usize = 10_000;

impl Batch {
    /// True when the batch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.finished.is_empty()
            && self.admit.is_empty()
            && self.load.is_empty()
            && self.authorities.is_empty()
            && !self.poll
            && !self.verify
            && self.due.is_none()
    }
}
