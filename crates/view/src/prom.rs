//! The Prometheus text exposition format (version 0.0.4), written by
//! hand: `# HELP` and `# TYPE` once per family, label values escaped,
//! histograms as cumulative `_bucket`s with `_sum` and `_count`. And the
//! metrics of a crawl from its live snapshot.

use std::fmt::Write;

use crawlkeeper_crawl::live::{Histogram, LiveCrawl};

/// A metrics page being written.
#[derive(Debug, Default)]
pub struct Text {
    out: String,
}

/// The kind of a metric family.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Only grows.
    Counter,
    /// Goes up and down.
    Gauge,
}

impl Text {
    /// An empty page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Begins a family.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Self {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        self
    }

    /// One sample of the family begun last.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> &mut Self {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_value(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
        self
    }

    /// A family of one sample.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: f64) -> &mut Self {
        self.family(name, kind, help).sample(name, &[], value)
    }

    /// A histogram family.
    pub fn histogram(&mut self, name: &str, help: &str, h: &Histogram) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} histogram");
        let bucket = format!("{name}_bucket");
        for (le, n) in &h.buckets {
            self.sample(&bucket, &[("le", &number(*le))], *n as f64);
        }
        self.sample(&bucket, &[("le", "+Inf")], h.count as f64);
        self.sample(&format!("{name}_sum"), &[], h.sum);
        self.sample(&format!("{name}_count"), &[], h.count as f64)
    }

    /// The page.
    pub fn finish(self) -> String {
        self.out
    }
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{v}")
    }
}

fn escape_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The metrics of a crawl, from its snapshot; `labels` go on every
/// sample (a node names its job).
pub fn crawl(text: &mut Text, s: &LiveCrawl) {
    use Kind::{Counter, Gauge};
    text.single(
        "crawlkeeper_crawl_running",
        Gauge,
        "1 while the crawl runs, 0 once it has ended.",
        f64::from(u8::from(s.running)),
    );
    text.single(
        "crawlkeeper_crawl_elapsed_seconds",
        Gauge,
        "Time since this run of the crawl began.",
        s.elapsed_seconds,
    );
    text.single(
        "crawlkeeper_pages_done_total",
        Counter,
        "URLs finished by this run (a record made).",
        s.done as f64,
    );
    text.single(
        "crawlkeeper_pages_done_before",
        Gauge,
        "URLs finished by earlier runs of the job (resumed).",
        s.done_before as f64,
    );
    text.single(
        "crawlkeeper_pages_per_second",
        Gauge,
        "URLs finished per second over the last seconds.",
        s.pages_per_second,
    );
    text.family(
        "crawlkeeper_requests_total",
        Counter,
        "Requests sent (robots.txt excluded), by status class; none: no response.",
    );
    for class in ["1xx", "2xx", "3xx", "4xx", "5xx", "none"] {
        let n = s.status.get(class).copied().unwrap_or(0);
        text.sample("crawlkeeper_requests_total", &[("status", class)], n as f64);
    }
    text.family(
        "crawlkeeper_errors_total",
        Counter,
        "Records with an error, by kind (robots_denied, skipped and blocked_address included).",
    );
    for (kind, n) in &s.errors {
        text.sample("crawlkeeper_errors_total", &[("kind", kind)], *n as f64);
    }
    let kind = |k: &str| s.errors.get(k).copied().unwrap_or(0) as f64;
    text.single(
        "crawlkeeper_robots_denied_total",
        Counter,
        "URLs not requested because robots.txt disallows them (or could not be fetched).",
        kind("robots_denied") + kind("robots_unavailable"),
    );
    text.single(
        "crawlkeeper_blocked_total",
        Counter,
        "URLs not requested because the SSRF guard refused their address.",
        kind("blocked_address"),
    );
    text.single(
        "crawlkeeper_retries_total",
        Counter,
        "Requests retried after a retryable failure.",
        s.retries as f64,
    );
    text.single(
        "crawlkeeper_response_body_bytes_total",
        Counter,
        "Body bytes received, decoded.",
        s.bytes as f64,
    );
    text.histogram(
        "crawlkeeper_response_duration_seconds",
        "Time from sending a request to the end of its body.",
        &s.response_seconds,
    );
    text.single(
        "crawlkeeper_requests_in_flight",
        Gauge,
        "Requests being made now, robots.txt included.",
        s.in_flight as f64,
    );
    text.family(
        "crawlkeeper_frontier_urls",
        Gauge,
        "URLs admitted and not started, queued in memory or left in the store.",
    );
    text.sample(
        "crawlkeeper_frontier_urls",
        &[("where", "memory")],
        s.queued_memory as f64,
    );
    text.sample(
        "crawlkeeper_frontier_urls",
        &[("where", "store")],
        s.queued_store as f64,
    );
    text.family("crawlkeeper_hosts", Gauge, "Hosts by what they do now.");
    for (state, n) in [
        ("active", s.hosts.active),
        ("ready", s.hosts.ready),
        ("waiting", s.hosts.waiting),
        ("backing_off", s.hosts.backing_off),
        ("abandoned", s.hosts.abandoned),
        ("idle", s.hosts.idle),
    ] {
        text.sample("crawlkeeper_hosts", &[("state", state)], n as f64);
    }
    text.single(
        "crawlkeeper_store_commits_total",
        Counter,
        "Transactions of the crawl state committed.",
        s.commits as f64,
    );
    text.single(
        "crawlkeeper_store_commit_seconds_total",
        Counter,
        "Time spent committing the crawl state.",
        s.commit_seconds,
    );
    text.single(
        "crawlkeeper_store_committed_pages_total",
        Counter,
        "Finished URLs committed (over commits: the mean batch size).",
        s.committed_pages as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escapes() {
        let mut t = Text::new();
        t.family("x_total", Kind::Counter, "Help with \\ and\nnewline.")
            .sample("x_total", &[("a", "q\"uote\\")], 3.0);
        t.histogram(
            "h_seconds",
            "H.",
            &Histogram {
                buckets: vec![(0.5, 1), (1.0, 2)],
                sum: 1.25,
                count: 3,
            },
        );
        let page = t.finish();
        assert!(
            page.contains("# HELP x_total Help with \\\\ and\\nnewline.\n"),
            "{page}"
        );
        assert!(page.contains("x_total{a=\"q\\\"uote\\\\\"} 3\n"), "{page}");
        assert!(page.contains("h_seconds_bucket{le=\"0.5\"} 1\n"));
        assert!(page.contains("h_seconds_bucket{le=\"+Inf\"} 3\n"));
        assert!(page.contains("h_seconds_sum 1.25\nh_seconds_count 3\n"));
    }
}
