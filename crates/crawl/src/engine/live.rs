//! The engine's live snapshot ([`crate::live::LiveCrawl`]): counts kept as
//! records are made, and the frontier's hosts read a few times a second.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crawlkeeper_model::{CrawlRecord, ErrorKind};
use tokio::sync::watch;
use tokio::time::Instant;

use super::Engine;
use super::slot::AuthoritySlot;
use crate::live::{HOST_ROWS, Histogram, HostCounts, HostRow, LiveCrawl, RESPONSE_BUCKETS};
use crate::state::CommitStats;

/// How often the snapshot is made.
pub(super) const LIVE_EVERY: Duration = Duration::from_millis(250);
/// Rates are over this long.
const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Counts the engine keeps for its snapshots, and where it sends them.
pub(super) struct Publisher {
    tx: watch::Sender<Arc<LiveCrawl>>,
    pub done_before: u64,
    /// Responses by class: `1xx` … `5xx`, then none.
    status: [u64; 6],
    errors: HashMap<ErrorKind, u64>,
    bytes: u64,
    /// Observations per bucket (not cumulative); the last is `+Inf`.
    buckets: [u64; RESPONSE_BUCKETS.len() + 1],
    sum: f64,
    /// (when, URLs done, bytes) of recent snapshots, for the rates.
    window: VecDeque<(Instant, u64, u64)>,
}

impl Publisher {
    pub fn new() -> (Self, watch::Receiver<Arc<LiveCrawl>>) {
        let (tx, rx) = watch::channel(Arc::new(LiveCrawl::default()));
        let publisher = Self {
            tx,
            done_before: 0,
            status: [0; 6],
            errors: HashMap::new(),
            bytes: 0,
            buckets: [0; RESPONSE_BUCKETS.len() + 1],
            sum: 0.0,
            window: VecDeque::new(),
        };
        (publisher, rx)
    }

    /// Counts one record.
    pub fn observe(&mut self, r: &CrawlRecord) {
        if let Some(e) = &r.error {
            *self.errors.entry(e.kind).or_default() += 1;
            if e.kind.is_robots() || e.kind == ErrorKind::Skipped {
                return;
            }
        }
        let class = match r.status {
            Some(s) => usize::from((s / 100).clamp(1, 5)) - 1,
            None => 5,
        };
        self.status[class] += 1;
        self.bytes += r.bytes;
        if let Some(ms) = r.response_ms {
            let secs = ms as f64 / 1000.0;
            let i = RESPONSE_BUCKETS
                .iter()
                .position(|b| secs <= *b)
                .unwrap_or(RESPONSE_BUCKETS.len());
            self.buckets[i] += 1;
            self.sum += secs;
        }
    }

    /// Responses by class, named.
    fn status(&self) -> BTreeMap<String, u64> {
        ["1xx", "2xx", "3xx", "4xx", "5xx", "none"]
            .iter()
            .zip(self.status)
            .map(|(k, n)| ((*k).to_owned(), n))
            .collect()
    }

    /// Errors by kind, named as in records.
    fn errors(&self) -> BTreeMap<String, u64> {
        self.errors
            .iter()
            .map(|(kind, n)| {
                let name = serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                (name, *n)
            })
            .collect()
    }

    fn histogram(&self) -> Histogram {
        let mut cumulative = 0;
        let buckets = RESPONSE_BUCKETS
            .iter()
            .zip(self.buckets)
            .map(|(b, n)| {
                cumulative += n;
                (*b, cumulative)
            })
            .collect();
        Histogram {
            buckets,
            sum: self.sum,
            count: self.buckets.iter().sum(),
        }
    }

    /// Rates over the window, with this snapshot's figures.
    fn rates(&mut self, now: Instant, done: u64) -> (f64, f64) {
        self.window.push_back((now, done, self.bytes));
        while self
            .window
            .front()
            .is_some_and(|(t, _, _)| now.duration_since(*t) > RATE_WINDOW)
        {
            self.window.pop_front();
        }
        let &(t0, d0, b0) = self.window.front().expect("pushed above");
        let secs = now.duration_since(t0).as_secs_f64();
        if secs <= 0.0 {
            return (0.0, 0.0);
        }
        ((done - d0) as f64 / secs, (self.bytes - b0) as f64 / secs)
    }
}

impl Engine {
    /// Makes and sends the snapshot, when one is watched.
    pub(super) fn publish_live(
        &mut self,
        started: Instant,
        in_flight: usize,
        commits: &CommitStats,
        running: bool,
    ) {
        let now = Instant::now();
        let Some(mut live) = self.live.take() else {
            return;
        };
        let (pages_per_second, bytes_per_second) = live.rates(now, self.done);
        let mut hosts = HostCounts::default();
        let (mut queued_memory, mut queued_store) = (0, 0);
        // (requests, slot, state, queued) of every host; rows are made for
        // the busiest only, so a crawl of many hosts costs little here.
        let mut ranked = Vec::with_capacity(self.frontier.hosts().len());
        for (slot, s) in self.frontier.hosts().iter().enumerate() {
            if s.foreign {
                continue;
            }
            let held: usize = s.held.iter().map(|(_, b, _)| b.len()).sum();
            let memory = (s.queue.len() + s.retries.len() + held) as u64;
            queued_memory += memory;
            queued_store += s.stored;
            let state = host_state(s, memory + s.stored, now);
            match state {
                "active" => hosts.active += 1,
                "ready" => hosts.ready += 1,
                "waiting" => hosts.waiting += 1,
                "backing_off" => hosts.backing_off += 1,
                "abandoned" => hosts.abandoned += 1,
                _ => hosts.idle += 1,
            }
            let requests = self.stats.get(slot).map_or(0, |st| st.requests);
            ranked.push((requests, slot, state, memory + s.stored));
        }
        let busiest = |a: &(u64, usize, &str, u64), b: &(u64, usize, &str, u64)| {
            b.0.cmp(&a.0).then(a.1.cmp(&b.1))
        };
        if ranked.len() > HOST_ROWS {
            ranked.select_nth_unstable_by(HOST_ROWS, busiest);
            ranked.truncate(HOST_ROWS);
        }
        ranked.sort_by(busiest);
        let rows = ranked
            .into_iter()
            .map(|(_, slot, state, queued)| {
                let s = &self.frontier.hosts()[slot];
                let stats = self.stats.get(slot).cloned().unwrap_or_default();
                let delay = s
                    .timing
                    .crawl_delay
                    .unwrap_or(s.timing.adaptive)
                    .max(self.config.politeness.delay);
                HostRow {
                    authority: s.authority.to_string(),
                    state,
                    requests: stats.requests,
                    errors: stats.errors,
                    queued,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    failures: s.consecutive_failures,
                    mean_response_ms: stats.mean_response_ms(),
                }
            })
            .collect();
        let totals = self
            .stats
            .iter()
            .fold((0, 0), |(r, t), s| (r + s.requests, t + s.retries));
        let snapshot = LiveCrawl {
            elapsed_seconds: now.duration_since(started).as_secs_f64(),
            running,
            done: self.done,
            done_before: live.done_before,
            queued_memory,
            queued_store,
            in_flight: in_flight as u64,
            max_pages: self.config.scope.max_pages,
            pages_per_second,
            bytes_per_second,
            requests: totals.0,
            status: live.status(),
            errors: live.errors(),
            retries: totals.1,
            bytes: live.bytes,
            response_seconds: live.histogram(),
            commits: commits.commits.load(Ordering::Relaxed),
            commit_seconds: commits.nanos.load(Ordering::Relaxed) as f64 / 1e9,
            committed_pages: commits.pages.load(Ordering::Relaxed),
            hosts,
            host_table: rows,
        };
        live.tx.send_replace(Arc::new(snapshot));
        self.live = Some(live);
    }
}

/// What a host does now.
fn host_state(s: &AuthoritySlot, queued: u64, now: Instant) -> &'static str {
    if s.abandoned {
        "abandoned"
    } else if s.in_flight > 0 {
        "active"
    } else if queued == 0 {
        "idle"
    } else if s.not_before.is_some_and(|t| t > now) {
        if s.consecutive_failures > 0 || (s.queue.is_empty() && !s.retries.is_empty()) {
            "backing_off"
        } else {
            "waiting"
        }
    } else {
        "ready"
    }
}

#[cfg(test)]
mod tests {
    use crawlkeeper_model::RecordError;

    use super::*;

    fn record(status: Option<u16>, ms: u64, error: Option<ErrorKind>) -> CrawlRecord {
        let mut r: CrawlRecord = serde_json::from_str(
            r#"{"url":"http://a.test/","final_url":"http://a.test/","status":null,"depth":0,
            "parent":null,"authority":"http://a.test:80","fetched_at":"2026-11-25T00:00:00.000Z",
            "response_ms":null,"content_type":null,"bytes":10,"title":null,"links":0,
            "truncated":false,"error":null}"#,
        )
        .unwrap();
        r.status = status;
        r.response_ms = Some(ms);
        r.error = error.map(|k| RecordError::new(k, "x"));
        r
    }

    #[test]
    fn records_are_counted_by_class_kind_and_bucket() {
        let (mut p, _rx) = Publisher::new();
        p.observe(&record(Some(200), 3, None));
        p.observe(&record(Some(404), 40, None));
        p.observe(&record(None, 2_000, Some(ErrorKind::Timeout)));
        p.observe(&record(None, 0, Some(ErrorKind::RobotsDenied)));
        let status = p.status();
        assert_eq!((status["2xx"], status["4xx"], status["none"]), (1, 1, 1));
        let errors = p.errors();
        assert_eq!((errors["timeout"], errors["robots_denied"]), (1, 1));
        let h = p.histogram();
        assert_eq!(h.count, 3, "a URL robots.txt refused was not requested");
        assert_eq!(h.buckets[0], (0.005, 1));
        assert_eq!(h.buckets.last().unwrap().1, 3);
        assert_eq!(p.bytes, 30);
    }

    #[test]
    fn rates_are_over_the_window() {
        let (mut p, _rx) = Publisher::new();
        let t = Instant::now();
        assert_eq!(p.rates(t, 0), (0.0, 0.0));
        p.bytes = 1_000;
        let (pages, bytes) = p.rates(t + Duration::from_secs(2), 100);
        assert_eq!((pages, bytes), (50.0, 500.0));
        // Ten seconds on, the first look has left the window.
        let (pages, _) = p.rates(t + Duration::from_secs(12), 100);
        assert_eq!(pages, 0.0);
    }

    #[test]
    fn hosts_are_told_apart_by_what_they_do_now() {
        let now = Instant::now();
        let authority = crawlkeeper_model::Authority::try_from("http://a.test".to_owned()).unwrap();
        let mut s = AuthoritySlot::new(authority, true);
        assert_eq!(host_state(&s, 0, now), "idle");
        assert_eq!(host_state(&s, 3, now), "ready");
        s.not_before = Some(now + Duration::from_secs(1));
        assert_eq!(host_state(&s, 3, now), "waiting", "its politeness delay");
        s.consecutive_failures = 2;
        assert_eq!(host_state(&s, 3, now), "backing_off", "failures in a row");
        s.in_flight = 1;
        assert_eq!(host_state(&s, 3, now), "active");
        s.abandoned = true;
        assert_eq!(host_state(&s, 3, now), "abandoned");
    }
}
