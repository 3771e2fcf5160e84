//! The lease gate: a crawl sharing its job with other processes sends no
//! request unless its shards were confirmed as its own recently. A
//! process that was paused (SIGSTOP, a stall, a partition) finds on
//! waking that the last confirmation is old, and every request waits,
//! even one whose task was started just before the pause, until the state
//! confirms the lease again (or reports it lost, and the crawl stops).
//!
//! Time is the process's monotonic clock, which runs on while the process
//! is stopped; a confirmation counts from the instant its transaction
//! began, not from when its answer arrived.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crawlkeeper_model::Known;
use tokio::sync::Notify;
use url::Url;

use crawlkeeper_fetch::{FetchError, FetchResponse, Fetcher};

/// When the shards were last confirmed, and how long that is good for.
#[derive(Debug)]
pub struct LeaseGate {
    base: Instant,
    /// Microseconds from `base` to the start of the newest confirming
    /// transaction; 0 before the first.
    confirmed: AtomicU64,
    bound: Duration,
    notify: Notify,
}

impl LeaseGate {
    /// A gate that opens for `bound` after each confirmation.
    pub fn new(bound: Duration) -> Self {
        Self {
            base: Instant::now(),
            confirmed: AtomicU64::new(0),
            bound,
            notify: Notify::new(),
        }
    }

    /// True when a confirmation began within the bound.
    pub fn is_open(&self) -> bool {
        let at = self.confirmed.load(Ordering::Acquire);
        at > 0 && self.base.elapsed() <= Duration::from_micros(at) + self.bound
    }

    /// A transaction that began at `began` confirmed the lease.
    pub fn confirm(&self, began: Instant) {
        let micros = began.saturating_duration_since(self.base).as_micros();
        let micros = u64::try_from(micros).unwrap_or(u64::MAX).max(1);
        self.confirmed.fetch_max(micros, Ordering::AcqRel);
        self.notify.notify_waiters();
    }

    /// Waits until the gate is open.
    pub async fn open(&self) {
        // The common case, on every request: no waiter registered.
        if self.is_open() {
            return;
        }
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_open() {
                return;
            }
            notified.await;
        }
    }
}

/// A fetcher that sends nothing while the lease gate is closed: every
/// request (pages, robots.txt and its redirects) waits at the gate as late
/// as the crawler can hold it, just before the HTTP client.
pub struct GatedFetcher {
    /// The fetcher that sends.
    pub inner: Arc<dyn Fetcher>,
    /// The gate.
    pub gate: Arc<LeaseGate>,
}

#[async_trait::async_trait]
impl Fetcher for GatedFetcher {
    async fn fetch(&self, url: &Url) -> Result<FetchResponse, FetchError> {
        self.gate.open().await;
        self.inner.fetch(url).await
    }

    async fn fetch_known(
        &self,
        url: &Url,
        known: Option<&Known>,
    ) -> Result<FetchResponse, FetchError> {
        self.gate.open().await;
        self.inner.fetch_known(url, known).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_until_confirmed_and_after_the_bound() {
        let gate = LeaseGate::new(Duration::from_millis(50));
        assert!(!gate.is_open(), "nothing confirmed yet");
        gate.confirm(Instant::now());
        assert!(gate.is_open());
        // An older confirmation does not move it back.
        gate.confirm(gate.base);
        assert!(gate.is_open());
        let stale = LeaseGate {
            base: Instant::now() - Duration::from_millis(200),
            ..LeaseGate::new(Duration::from_millis(50))
        };
        stale.confirm(stale.base + Duration::from_millis(100));
        assert!(!stale.is_open(), "confirmed longer ago than the bound");
    }

    #[tokio::test]
    async fn a_waiting_request_goes_when_confirmed() {
        let gate = std::sync::Arc::new(LeaseGate::new(Duration::from_secs(5)));
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.open().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        gate.confirm(Instant::now());
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("opened")
            .unwrap();
    }
}
