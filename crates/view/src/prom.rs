//! The Prometheus text exposition format (version 0.0.4), written by
//! hand: `# HELP` and `# TYPE` once per family, label values escaped,
//! histograms as cumulative `_bucket`s with `_sum` and `_count`. And the
//! metrics of crawls from their live snapshots.

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
    /// Observations in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
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
            Kind::Histogram => "histogram",
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

    /// A histogram family of one histogram.
    pub fn histogram(&mut self, name: &str, help: &str, h: &Histogram) -> &mut Self {
        self.family(name, Kind::Histogram, help)
            .histogram_samples(name, &[], h)
    }

    /// The samples of one histogram with `labels`, in the family begun last.
    pub fn histogram_samples(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        h: &Histogram,
    ) -> &mut Self {
        let bucket = format!("{name}_bucket");
        for (le, n) in &h.buckets {
            let le = number(*le);
            let mut all = labels.to_vec();
            all.push(("le", &le));
            self.sample(&bucket, &all, *n as f64);
        }
        let mut all = labels.to_vec();
        all.push(("le", "+Inf"));
        self.sample(&bucket, &all, h.count as f64);
        self.sample(&format!("{name}_sum"), labels, h.sum);
        self.sample(&format!("{name}_count"), labels, h.count as f64)
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

/// Samples of one family for one crawl: (labels, value).
type Samples = Vec<(Vec<(&'static str, String)>, f64)>;

/// One metric family of a crawl's snapshot.
struct Family {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    samples: fn(&LiveCrawl) -> Samples,
}

fn one(v: f64) -> Samples {
    vec![(Vec::new(), v)]
}

fn error_kind(s: &LiveCrawl, k: &str) -> f64 {
    s.errors.get(k).copied().unwrap_or(0) as f64
}

const FAMILIES: &[Family] = &[
    Family {
        name: "crawlkeeper_crawl_running",
        kind: Kind::Gauge,
        help: "1 while the crawl runs, 0 once it has ended.",
        samples: |s| one(f64::from(u8::from(s.running))),
    },
    Family {
        name: "crawlkeeper_crawl_elapsed_seconds",
        kind: Kind::Gauge,
        help: "Time since this run of the crawl began.",
        samples: |s| one(s.elapsed_seconds),
    },
    Family {
        name: "crawlkeeper_pages_done_total",
        kind: Kind::Counter,
        help: "URLs finished by this run (a record made).",
        samples: |s| one(s.done as f64),
    },
    Family {
        name: "crawlkeeper_pages_done_before",
        kind: Kind::Gauge,
        help: "URLs finished by earlier runs of the job (resumed).",
        samples: |s| one(s.done_before as f64),
    },
    Family {
        name: "crawlkeeper_pages_per_second",
        kind: Kind::Gauge,
        help: "URLs finished per second over the last seconds.",
        samples: |s| one(s.pages_per_second),
    },
    Family {
        name: "crawlkeeper_requests_total",
        kind: Kind::Counter,
        help: "URLs requested (robots.txt excluded), by the status class of their last attempt; none: no response (failed, or refused by the SSRF guard).",
        samples: |s| {
            ["1xx", "2xx", "3xx", "4xx", "5xx", "none"]
                .iter()
                .map(|c| {
                    let n = s.status.get(*c).copied().unwrap_or(0);
                    (vec![("status", (*c).to_owned())], n as f64)
                })
                .collect()
        },
    },
    Family {
        name: "crawlkeeper_errors_total",
        kind: Kind::Counter,
        help: "Records with an error, by kind (robots_denied, skipped and blocked_address included).",
        samples: |s| {
            s.errors
                .iter()
                .map(|(k, n)| (vec![("kind", k.clone())], *n as f64))
                .collect()
        },
    },
    Family {
        name: "crawlkeeper_robots_denied_total",
        kind: Kind::Counter,
        help: "URLs not requested because robots.txt disallows them (or could not be fetched).",
        samples: |s| one(error_kind(s, "robots_denied") + error_kind(s, "robots_unavailable")),
    },
    Family {
        name: "crawlkeeper_blocked_total",
        kind: Kind::Counter,
        help: "URLs not requested because the SSRF guard refused their address.",
        samples: |s| one(error_kind(s, "blocked_address")),
    },
    Family {
        name: "crawlkeeper_retries_total",
        kind: Kind::Counter,
        help: "Requests retried after a retryable failure.",
        samples: |s| one(s.retries as f64),
    },
    Family {
        name: "crawlkeeper_response_body_bytes_total",
        kind: Kind::Counter,
        help: "Body bytes received, decoded.",
        samples: |s| one(s.bytes as f64),
    },
    Family {
        name: "crawlkeeper_requests_in_flight",
        kind: Kind::Gauge,
        help: "Requests being made now, robots.txt included.",
        samples: |s| one(s.in_flight as f64),
    },
    Family {
        name: "crawlkeeper_frontier_urls",
        kind: Kind::Gauge,
        help: "URLs admitted and not started, queued in memory or left in the store.",
        samples: |s| {
            vec![
                (vec![("where", "memory".to_owned())], s.queued_memory as f64),
                (vec![("where", "store".to_owned())], s.queued_store as f64),
            ]
        },
    },
    Family {
        name: "crawlkeeper_hosts",
        kind: Kind::Gauge,
        help: "Hosts by what they do now.",
        samples: |s| {
            let h = &s.hosts;
            [
                ("active", h.active),
                ("ready", h.ready),
                ("waiting", h.waiting),
                ("backing_off", h.backing_off),
                ("abandoned", h.abandoned),
                ("idle", h.idle),
            ]
            .iter()
            .map(|(k, n)| (vec![("state", (*k).to_owned())], *n as f64))
            .collect()
        },
    },
    Family {
        name: "crawlkeeper_store_commits_total",
        kind: Kind::Counter,
        help: "Transactions of the crawl state committed.",
        samples: |s| one(s.commits as f64),
    },
    Family {
        name: "crawlkeeper_store_commit_seconds_total",
        kind: Kind::Counter,
        help: "Time spent committing the crawl state.",
        samples: |s| one(s.commit_seconds),
    },
    Family {
        name: "crawlkeeper_store_committed_pages_total",
        kind: Kind::Counter,
        help: "Finished URLs committed (over commits: the mean batch size).",
        samples: |s| one(s.committed_pages as f64),
    },
];

/// The metrics of crawls (a node may run several jobs), from their
/// snapshots: each sample carries its job as `crawl_job` (`job` is the
/// label Prometheus gives the scrape itself).
pub fn crawls(text: &mut Text, crawls: &[(String, std::sync::Arc<LiveCrawl>)]) {
    for f in FAMILIES {
        text.family(f.name, f.kind, f.help);
        for (job, live) in crawls {
            for (labels, value) in (f.samples)(live) {
                let mut all: Vec<(&str, &str)> = vec![("crawl_job", job)];
                all.extend(labels.iter().map(|(k, v)| (*k, v.as_str())));
                text.sample(f.name, &all, value);
            }
        }
    }
    let name = "crawlkeeper_response_duration_seconds";
    text.family(
        name,
        Kind::Histogram,
        "Time from sending a request to the end of its body.",
    );
    for (job, live) in crawls {
        text.histogram_samples(name, &[("crawl_job", job)], &live.response_seconds);
    }
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
