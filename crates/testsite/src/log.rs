//! The request log: every request the site received, in arrival order,
//! per-host concurrency and TLS handshakes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Index of the host (listener) that received it.
    pub host: usize,
    /// Path and query as requested.
    pub target: String,
    /// When it arrived.
    pub at: Instant,
    /// When it arrived, by the wall clock: to compare with the time stamps
    /// of other processes' logs on this machine.
    pub wall: std::time::SystemTime,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// The address the request came from.
    pub peer: std::net::IpAddr,
    /// The HTTP version, like `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
}

#[derive(Debug, Default)]
struct HostGauge {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// TLS handshakes completed: connections a client set up.
    handshakes: AtomicUsize,
    /// Of those, the ones that resumed an earlier session.
    resumed: AtomicUsize,
}

/// Shared, append-only record of requests.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    entries: Arc<Mutex<Vec<LogEntry>>>,
    gauges: Arc<Vec<HostGauge>>,
    arrived: Arc<tokio::sync::Notify>,
    bytes: Arc<AtomicU64>,
}

/// Decrements a host's in-flight gauge when the response is done.
pub struct InFlight {
    gauges: Arc<Vec<HostGauge>>,
    host: usize,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauges[self.host]
            .in_flight
            .fetch_sub(1, Ordering::SeqCst);
    }
}

impl RequestLog {
    /// A log for `hosts` hosts.
    pub fn new(hosts: usize) -> Self {
        Self {
            entries: Arc::default(),
            gauges: Arc::new((0..hosts).map(|_| HostGauge::default()).collect()),
            arrived: Arc::default(),
            bytes: Arc::default(),
        }
    }

    /// Counts `n` bytes of response body served.
    pub fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Bytes of response bodies served so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Records a request and counts it in flight until the guard drops.
    pub fn record(&self, entry: LogEntry) -> InFlight {
        let g = &self.gauges[entry.host];
        let now = g.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        g.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let host = entry.host;
        self.lock().push(entry);
        self.arrived.notify_waiters();
        InFlight {
            gauges: self.gauges.clone(),
            host,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<LogEntry>> {
        // A panic while pushing cannot leave the Vec inconsistent.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of every entry so far.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.lock().clone()
    }

    /// The targets requested from `host`, in order.
    pub fn targets(&self, host: usize) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|e| e.host == host)
            .map(|e| e.target.clone())
            .collect()
    }

    /// How many times `target` was requested from `host`.
    pub fn count(&self, host: usize, target: &str) -> usize {
        self.lock()
            .iter()
            .filter(|e| e.host == host && e.target == target)
            .count()
    }

    /// Completes once at least `n` requests have arrived: a test waits for
    /// the crawl to be under way without sleeping.
    pub async fn wait_for(&self, n: usize) {
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if self.len() >= n {
                return;
            }
            arrived.await;
        }
    }

    /// Number of requests received.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no request arrived.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts a TLS handshake `host` completed (a new connection);
    /// `resumed` when it resumed an earlier session (no certificate sent).
    pub fn handshake(&self, host: usize, resumed: bool) {
        let g = &self.gauges[host];
        if resumed {
            g.resumed.fetch_add(1, Ordering::SeqCst);
        }
        g.handshakes.fetch_add(1, Ordering::SeqCst);
    }

    /// The TLS handshakes `host` completed: the connections a client made
    /// to it over HTTPS (each carries any number of requests).
    pub fn handshakes(&self, host: usize) -> usize {
        self.gauges[host].handshakes.load(Ordering::SeqCst)
    }

    /// Of [`RequestLog::handshakes`], those that resumed a TLS session
    /// the client had from an earlier connection.
    pub fn resumed(&self, host: usize) -> usize {
        self.gauges[host].resumed.load(Ordering::SeqCst)
    }

    /// Requests `host` is answering now.
    pub fn in_flight(&self, host: usize) -> usize {
        self.gauges[host].in_flight.load(Ordering::SeqCst)
    }

    /// The most requests `host` ever had in flight at once.
    pub fn max_in_flight(&self, host: usize) -> usize {
        self.gauges[host].max_in_flight.load(Ordering::SeqCst)
    }
}
