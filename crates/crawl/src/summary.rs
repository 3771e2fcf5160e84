//! Per-authority counts of a crawl and the table printed at its end.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crawlkeeper_model::{Authority, CrawlRecord, ErrorKind, RecordError};

/// Counts for one authority.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorityStats {
    /// Requests sent (robots.txt excluded, sitemap files included).
    pub requests: u64,
    /// Of those, sitemap files (`"via": "sitemap"` records).
    pub sitemaps: u64,
    /// Of those, page requisites (`"via": "embed"` records).
    pub requisites: u64,
    /// Responses by status class.
    pub status_2xx: u64,
    /// 3xx responses.
    pub status_3xx: u64,
    /// 4xx responses.
    pub status_4xx: u64,
    /// 5xx responses.
    pub status_5xx: u64,
    /// Records with an error other than robots.
    pub errors: u64,
    /// URLs not requested because of robots.txt.
    pub robots_denied: u64,
    /// Requests retried after a retryable failure (each retry counts).
    pub retries: u64,
    /// URLs not requested because the authority was abandoned.
    pub skipped: u64,
    /// URLs not requested because the SSRF guard refused their address.
    pub blocked: u64,
    /// True when the authority was abandoned after too many failures in a row.
    pub abandoned: bool,
    /// When the first error or failed request was seen (RFC 3339).
    pub first_error_at: Option<String>,
    /// Sum of response times, for the mean.
    pub response_ms_total: u64,
    /// The most recent error or failed request, for the operator.
    pub last_error: Option<RecordError>,
}

impl AuthorityStats {
    /// Counts one record.
    pub fn add(&mut self, r: &CrawlRecord) {
        if let Some(e) = &r.error {
            if e.kind.is_robots() {
                self.robots_denied += 1;
                return;
            }
            if e.kind == ErrorKind::Skipped {
                self.skipped += 1;
                return;
            }
            if e.kind == ErrorKind::BlockedAddress {
                self.blocked += 1;
                self.note_failure(r);
                return;
            }
        }
        self.requests += 1;
        match r.via {
            Some(crawlkeeper_model::Via::Sitemap) => self.sitemaps += 1,
            Some(crawlkeeper_model::Via::Embed) => self.requisites += 1,
            None => {}
        }
        self.response_ms_total += r.response_ms.unwrap_or(0);
        match r.status {
            Some(200..=299) => self.status_2xx += 1,
            Some(300..=399) => self.status_3xx += 1,
            Some(400..=499) => self.status_4xx += 1,
            Some(500..=599) => self.status_5xx += 1,
            _ => {}
        }
        if r.error.is_some() {
            self.errors += 1;
            self.note_failure(r);
        }
    }

    /// Keeps a failed request (an error, or a 429/5xx answer, retried or
    /// not) as the authority's last error, and the time of its first.
    pub fn note_failure(&mut self, r: &CrawlRecord) {
        let error = match (&r.error, r.status) {
            (Some(e), _) => e.clone(),
            (None, Some(status)) => {
                RecordError::new(ErrorKind::Http, format!("HTTP status {status}"))
            }
            (None, None) => return,
        };
        self.last_error = Some(error);
        if self.first_error_at.is_none() {
            self.first_error_at = Some(r.fetched_at.clone());
        }
    }

    /// Mean response time in milliseconds.
    pub fn mean_response_ms(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.response_ms_total as f64 / self.requests as f64
        }
    }

    fn merge(&mut self, o: &AuthorityStats) {
        self.requests += o.requests;
        self.sitemaps += o.sitemaps;
        self.requisites += o.requisites;
        self.status_2xx += o.status_2xx;
        self.status_3xx += o.status_3xx;
        self.status_4xx += o.status_4xx;
        self.status_5xx += o.status_5xx;
        self.errors += o.errors;
        self.robots_denied += o.robots_denied;
        self.retries += o.retries;
        self.skipped += o.skipped;
        self.blocked += o.blocked;
        self.response_ms_total += o.response_ms_total;
    }
}

/// Why a crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Nothing left to fetch.
    Finished,
    /// The run timeout expired.
    Timeout,
    /// A shutdown was requested (Ctrl-C, SIGTERM).
    Interrupted,
    /// The job was asked to stop (`crawlkeeper stop`): a continuous
    /// crawl's end.
    Stopped,
}

/// The result of a crawl.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Counts per authority, sorted.
    pub authorities: BTreeMap<Authority, AuthorityStats>,
    /// Wall-clock time of the crawl.
    pub elapsed: Duration,
    /// Why it ended.
    pub stop: StopReason,
    /// URLs still queued when it ended.
    pub pending: u64,
}

impl Summary {
    /// All authorities added up.
    pub fn total(&self) -> AuthorityStats {
        let mut t = AuthorityStats::default();
        for s in self.authorities.values() {
            t.merge(s);
        }
        t
    }

    /// Requests per second over the whole crawl.
    pub fn rate(&self) -> f64 {
        self.total().requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// True when no authority got a single response without error.
    pub fn all_failed(&self) -> bool {
        !self.authorities.is_empty()
            && self
                .authorities
                .values()
                .all(|s| s.abandoned || (s.requests == s.errors && s.robots_denied == 0))
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .authorities
            .keys()
            .map(|a| a.to_string().len())
            .max()
            .unwrap_or(0)
            .max(9);
        writeln!(
            f,
            "{:<width$} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8}",
            "authority",
            "requests",
            "2xx",
            "3xx",
            "4xx",
            "5xx",
            "errors",
            "retries",
            "robots",
            "skipped",
            "blocked",
            "mean ms"
        )?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, s: &AuthorityStats| {
            writeln!(
                f,
                "{:<width$} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8.1}",
                name,
                s.requests,
                s.status_2xx,
                s.status_3xx,
                s.status_4xx,
                s.status_5xx,
                s.errors,
                s.retries,
                s.robots_denied,
                s.skipped,
                s.blocked,
                s.mean_response_ms()
            )
        };
        for (a, s) in &self.authorities {
            row(f, &a.to_string(), s)?;
        }
        if self.authorities.len() > 1 {
            row(f, "total", &self.total())?;
        }
        for (a, s) in &self.authorities {
            if let Some(e) = &s.last_error {
                writeln!(
                    f,
                    "{a}: {} errors, {} retries since {}; last: {} ({}){}",
                    s.errors,
                    s.retries,
                    s.first_error_at.as_deref().unwrap_or("?"),
                    e.message,
                    kind_name(e.kind),
                    if s.abandoned { "; abandoned" } else { "" }
                )?;
            }
        }
        let total = self.total();
        if total.requisites > 0 {
            writeln!(
                f,
                "pages: {}, requisites (images, scripts, styles, fonts, frames): {}",
                total
                    .requests
                    .saturating_sub(total.requisites + total.sitemaps),
                total.requisites
            )?;
        }
        if total.sitemaps > 0 {
            writeln!(f, "sitemap files read: {}", total.sitemaps)?;
        }
        write!(
            f,
            "{} requests in {:.1}s ({:.0}/s), {} still queued",
            total.requests,
            self.elapsed.as_secs_f64(),
            self.rate(),
            self.pending
        )
    }
}

fn kind_name(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
