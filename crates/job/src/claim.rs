//! Claiming shards of a job: the one way the `crawl` command, a cluster's
//! Runner and an engine taking more shards all do it.

use crawlkeeper_crawl::state::LEASE_BOUND;
use crawlkeeper_store::{Claim, Claimed, JobInfo, Store, StoreError};

/// Claims `claim` in `store`. When a shard was taken from a live process
/// (fenced off now, but perhaps with a request past its lease gate), it
/// waits out the gate's bound before returning: the displaced process
/// sends nothing once its lease's last confirmation is older than that,
/// so two processes never crawl a shard's hosts at once. A shard whose
/// holder is gone (killed: its lock went with its session) is taken at
/// once. Blocking.
pub fn claim_shards(
    store: &mut dyn Store,
    job: &JobInfo,
    claim: &Claim,
) -> Result<Claimed, StoreError> {
    let claimed = store.claim(job, claim)?;
    if !claimed.displaced.is_empty() {
        tracing::info!(
            job = %job.name,
            shards = ?claimed.displaced,
            wait = ?LEASE_BOUND,
            "took shards from a live process; waiting out its lease gate"
        );
        std::thread::sleep(LEASE_BOUND);
    }
    Ok(claimed)
}
