//! What `status` shows of a continuous job (`submit --continuous`): whether
//! it was asked to stop, and the freshness its revisits are expected to
//! keep, from the job's rate histogram in the store.

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_store::{JobInfo, Store, StoreError};
use serde::Serialize;

/// A continuous job's revisits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Continuing {
    /// It was asked to stop (`crawlkeeper stop`): its Runners are ending
    /// or ended.
    pub stopping: bool,
    /// The share of its pages whose stored copy is expected to hold the
    /// live content at any moment, at the intervals their estimated change
    /// rates get (`None` before any page's rate is estimated: a page
    /// needs two fetches).
    pub freshness: Option<f64>,
    /// Pages whose change rate is estimated (what `freshness` is over).
    pub estimated_pages: u64,
}

/// `job`'s revisits as `store` holds them; `None` for a one-shot job.
pub fn read(store: &mut dyn Store, job: &JobInfo) -> Result<Option<Continuing>, StoreError> {
    let Some(revisit) = serde_json::from_str::<CrawlConfig>(&job.options)
        .ok()
        .and_then(|c| c.revisit)
    else {
        return Ok(None);
    };
    let histogram = store.revisit_rates(job.id)?;
    Ok(Some(Continuing {
        stopping: job.stops > 0,
        freshness: revisit.expected_freshness(&histogram),
        estimated_pages: histogram.iter().map(|&(_, n)| n).sum(),
    }))
}
