//! [`StoreState`]: the crawl engine's durable state, kept in a store for
//! one job (or the shards of it this process holds).

use std::time::Duration;

use crawlkeeper_crawl::state::{Batch, CrawlState, Resumed, Sharing, StateError};
use crawlkeeper_model::Fence;
use crawlkeeper_store::{Claim, Holder, JobId, JobInfo, Store, StoreError};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::claim::claim_shards;

/// Longest a commit is held back to gather more finished pages: a store's
/// transaction has a fixed cost (its round trips, log write and flush,
/// locks) that a commit per page pays again and again. At a few thousand
/// pages per second a millisecond gathers tens of them; at a few hundred
/// (a Runner of 50 workers on 50 ms responses) 10 ms gathers 7 or 8 where
/// 1 ms gathered 2, halving PostgreSQL's CPU per page (`bench cluster
/// --parts scale`). The engine's group-commit policy waits only when the
/// recent rate promises at least two more pages within the wait, and,
/// while every worker is busy (a crawl bound by its workers, where a
/// record's wait delays no other request), up to six times as long for a
/// page from every worker: 33–34 pages a commit there where three times
/// as long for half the workers' gathered 19, PostgreSQL's CPU per page
/// another fifth to quarter lower.
pub const COMMIT_WAIT: Duration = Duration::from_millis(10);

/// The engine's state, in a store, for one job.
pub struct StoreState {
    store: Box<dyn Store>,
    job: JobId,
    /// The job as the store described it, when its shards may be taken.
    info: Option<JobInfo>,
    sharing: Option<Sharing>,
    admit_limit: Option<u64>,
    wakeups: Option<UnboundedReceiver<()>>,
    /// Who this process is to the others (see [`Claim::holder`]).
    holder: Holder,
    /// Keep each finished page's WARC records in the store.
    keep_archives: bool,
}

impl StoreState {
    /// The state of `job` in `store`, crawled whole by this process.
    pub fn new(store: Box<dyn Store>, job: JobId) -> Self {
        Self {
            store,
            job,
            info: None,
            sharing: None,
            admit_limit: None,
            wakeups: None,
            holder: Holder::this_process(),
            keep_archives: false,
        }
    }

    /// The state of the shards of `job` this process claimed in `store`
    /// (see [`Store::claim`]), shared with the processes holding the
    /// others (or taking it over). With other shards, `max_pages` is
    /// counted job-wide, by the store.
    pub fn shared(
        mut store: Box<dyn Store>,
        info: JobInfo,
        sharing: Sharing,
        max_pages: Option<u64>,
    ) -> Result<Self, StoreError> {
        let job = info.id;
        let (tx, rx) = unbounded_channel();
        store.subscribe(
            job,
            Box::new(move || {
                let _ = tx.send(());
            }),
        )?;
        let whole = sharing.partition.is_whole();
        Ok(Self {
            store,
            job,
            info: Some(info),
            sharing: Some(sharing),
            admit_limit: if whole { None } else { max_pages },
            wakeups: Some(rx),
            holder: Holder::this_process(),
            keep_archives: false,
        })
    }

    /// Keeps each finished page's WARC records in the store when `keep`
    /// (the job's `--store-bodies`), for exporting the job as WARC.
    pub fn keeping_archives(mut self, keep: bool) -> Self {
        self.keep_archives = keep;
        self
    }

    /// Claims shards taken later as `holder` (default: host and process id),
    /// as the shards were claimed first.
    pub fn with_holder(mut self, holder: Holder) -> Self {
        self.holder = holder;
        self
    }
}

/// A store error as the engine's: retryable ones are retried, a fence
/// stops the crawl at once.
pub fn state_error(e: StoreError) -> StateError {
    match e {
        StoreError::Fenced { job, shard, by } => StateError::Fenced(Fence { job, shard, by }),
        e if e.is_retryable() => StateError::Unavailable(e.to_string()),
        e => StateError::Fatal(e.to_string()),
    }
}

impl CrawlState for StoreState {
    fn resume(&mut self) -> Result<Resumed, StateError> {
        self.store.resume(self.job).map_err(state_error)
    }

    fn apply(&mut self, batch: &mut Batch) -> Result<(), StateError> {
        batch.admit_limit = self.admit_limit;
        batch.keep_archives = self.keep_archives;
        self.store.apply(self.job, batch).map_err(state_error)
    }

    fn commit_wait(&self) -> Duration {
        COMMIT_WAIT
    }

    fn survives_crash(&self) -> bool {
        true
    }

    fn sharing(&self) -> Option<Sharing> {
        self.sharing.clone()
    }

    fn wakeups(&mut self) -> Option<UnboundedReceiver<()>> {
        self.wakeups.take()
    }

    fn take_shards(&mut self, shards: &[u32]) -> Result<Resumed, StateError> {
        let Some(info) = &self.info else {
            return Err(StateError::Fatal(
                "a job crawled whole has no shards to take".into(),
            ));
        };
        // Taken from a holder that is gone, or fenced off if it is not.
        let claim = Claim {
            shards: shards.to_vec(),
            holder: self.holder.clone(),
            take_over: true,
        };
        claim_shards(self.store.as_mut(), info, &claim).map_err(state_error)?;
        self.store
            .resume_shards(self.job, shards)
            .map_err(state_error)
    }
}
