//! What a running crawl shows: the progress view under a pseudo-terminal
//! (`script` from util-linux gives the crawl a real pty), plain lines and
//! no escape codes when stderr is not a terminal or `NO_COLOR` is set, no
//! lock files left behind, and the Prometheus metrics, read with a real
//! parser and checked against the JSON Lines records.

use std::collections::BTreeMap;
use std::time::Duration;

use crawlkeeper_testsite::{SiteConfig, TestSite};

use crate::common;

use common::http::{free_addr, get, wait_for};
use common::warc::{dir, records, run};

/// A site whose crawl takes a couple of seconds.
async fn slow_site(pages: u32) -> TestSite {
    let mut config = SiteConfig::uniform(2, pages);
    for h in &mut config.hosts {
        h.delay = Duration::from_millis(15);
        h.cross_links = true;
    }
    TestSite::start(config).await.unwrap()
}

/// Runs `crawlkeeper ARGS` under a pseudo-terminal; what the terminal got.
async fn under_pty(dir: &std::path::Path, args: &[String], no_color: bool) -> String {
    let bin = env!("CARGO_BIN_EXE_crawlkeeper");
    let line = std::iter::once(bin.to_owned())
        .chain(args.iter().cloned())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = tokio::process::Command::new("script");
    c.current_dir(dir)
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("RUST_LOG")
        .env_remove("CRAWLKEEPER_RUN_TIMEOUT")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null());
    if no_color {
        c.env("NO_COLOR", "1");
    }
    let out = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("the crawl ends in time")
        .expect("script (util-linux) runs");
    assert!(
        matches!(out.status.code(), Some(0 | 124)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn crawl_args(site: &TestSite, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "crawl",
        "--follow",
        "--state",
        "state.db",
        "--out",
        "out.jsonl",
    ]
    .iter()
    .chain(extra)
    .map(|s| (*s).to_owned())
    .collect();
    a.push(site.url(0, "/"));
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_view_shows_and_ends_cleanly() {
    let site = slow_site(60).await;
    let d = dir("pty");
    // A run cut by its timeout logs an INFO line through the view.
    let screen = under_pty(&d, &crawl_args(&site, &["--timeout", "1s"]), false).await;
    assert!(
        screen.contains(" done, ") && screen.contains("pages/s"),
        "{screen}"
    );
    let last_view = screen.rfind("pages/s").unwrap();
    let table = screen.rfind("authority ").expect("the summary");
    assert!(table > last_view, "the summary comes after the view");
    assert!(
        screen[last_view..table].contains("\x1b[2K"),
        "the view's line is cleared before the summary"
    );
    let info = screen
        .lines()
        .find(|l| l.contains("stopping"))
        .expect("a log line");
    let text = log_text(info).expect("the log line's timestamp");
    assert!(text.contains("\x1b[32m"), "colours on a terminal: {info:?}");
    // Each log line starts on a line the view cleared (what follows the
    // last carriage return is what the terminal shows): never torn.
    for l in screen.lines().filter(|l| l.contains("INFO")) {
        let at = l.find("INFO").unwrap();
        let shown = l[..at].rsplit('\r').next().unwrap_or("");
        assert!(
            !shown.contains("pages/s"),
            "a log line inside the view: {shown:?}"
        );
    }
    assert!(
        std::fs::read_dir(&d).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".lock")),
        "no lock file is left beside the state file"
    );

    // NO_COLOR: the view stays, log lines lose their colours.
    let d = dir("pty-no-color");
    let screen = under_pty(&d, &crawl_args(&site, &["--timeout", "1s"]), true).await;
    let info = screen
        .lines()
        .find(|l| l.contains("stopping"))
        .expect("a log line");
    let text = log_text(info).expect("the log line's timestamp");
    assert!(!text.contains('\x1b'), "NO_COLOR: {info:?}");
}

/// The log line within a line of the terminal: from its RFC 3339
/// timestamp (`2026-11-27T`) on, past what the view wrote before it.
fn log_text(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let stamp = |i: usize| {
        let d = |k: usize| b.get(i + k).is_some_and(u8::is_ascii_digit);
        (0..4).all(d)
            && b.get(i + 4) == Some(&b'-')
            && (5..7).all(d)
            && b.get(i + 7) == Some(&b'-')
            && (8..10).all(d)
            && b.get(i + 10) == Some(&b'T')
    };
    (0..b.len()).find(|&i| stamp(i)).map(|i| &line[i..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_a_terminal_there_are_plain_lines_and_no_escape_codes() {
    let site = slow_site(300).await;
    let d = dir("plain");
    let mut c = common::command_in(&d, &[]);
    c.args(crawl_args(
        &site,
        &[
            "--timeout",
            "1500ms",
            "--progress",
            "plain",
            "--progress-every",
            "200ms",
        ],
    ));
    let (code, err) = run(c).await;
    assert_eq!(code, 124, "stopped by its timeout: {err}");
    assert!(
        !err.contains('\x1b'),
        "escape codes in piped stderr: {err:?}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("progress: ") && l.contains("pages/s")),
        "{err}"
    );
    assert!(err.contains("INFO"), "log lines are there: {err}");
    // Without --progress, nothing of the view.
    let d = dir("auto-piped");
    let mut c = common::command_in(&d, &[]);
    c.args(crawl_args(&site, &["--timeout", "500ms"]));
    let (_, err) = run(c).await;
    assert!(!err.contains("pages/s |") && !err.contains('\x1b'), "{err}");
}

/// Samples of a scrape by name and labels.
fn scrape(text: &str) -> BTreeMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let parsed = prometheus_parse::Scrape::parse(lines).expect("a Prometheus text page");
    parsed
        .samples
        .into_iter()
        .filter_map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => return None,
            };
            // One crawl: its job's label left out of the key.
            let mut labels: Vec<String> = s
                .labels
                .iter()
                .filter(|(k, _)| k.as_str() != "crawl_job")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            labels.sort();
            Some((format!("{}{{{}}}", s.metric, labels.join(",")), value))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_during_the_crawl_and_agree_with_the_records_at_its_end() {
    // Three hosts: the seed's links lead to the second, whose robots.txt
    // answers 503 (its URLs are robots-denied); the third, a second seed,
    // is in a denied network (blocked): every error counter has something
    // to count.
    let mut config = SiteConfig::uniform(3, 80);
    for h in &mut config.hosts {
        h.delay = Duration::from_millis(15);
        h.cross_links = true;
    }
    config.hosts[1].robots = crawlkeeper_testsite::site::RobotsMode::Unavailable;
    let site = TestSite::start(config).await.unwrap();
    let denied = url::Url::parse(&site.url(2, "/")).unwrap();
    let denied = format!("{}/32", denied.host_str().unwrap());
    let d = dir("metrics");
    let addr = free_addr();
    let a = addr.to_string();
    let mut c = common::command_in(&d, &[]);
    c.args(crawl_args(
        &site,
        &[
            "--quiet",
            "--metrics",
            &a,
            "--linger",
            "30s",
            "--scope",
            "any",
            "--deny-net",
            &denied,
            "--retries",
            "0",
        ],
    ));
    c.arg(site.url(2, "/"));
    let child = c.spawn().unwrap();
    common::arrived(site.log(), 5).await;
    let during = wait_for(addr, "/metrics", Duration::from_secs(60), |t| {
        scrape(t)
            .get("crawlkeeper_pages_done_total{}")
            .is_some_and(|v| *v > 0.0)
    })
    .await;
    let during = scrape(&during);
    assert_eq!(during["crawlkeeper_crawl_running{}"], 1.0);
    // The status page is not served where only metrics were asked for.
    assert_eq!(get(addr, "/api/status").map(|r| r.0), Some(404));
    let end = wait_for(addr, "/metrics", Duration::from_secs(60), |t| {
        scrape(t).get("crawlkeeper_crawl_running{}") == Some(&0.0)
    })
    .await;
    assert!(end.contains("crawl_job=\""), "each sample names its job");
    let end = scrape(&end);
    common::signal(&child, "-INT");
    let (code, err) = run_child(child).await;
    assert_eq!(code, 0, "{err}");
    let pages = records(&d.join("out.jsonl"));
    assert_eq!(end["crawlkeeper_pages_done_total{}"], pages.len() as f64);
    let status = |class: &str| end[&format!("crawlkeeper_requests_total{{status={class}}}")];
    let count = |lo: u16| {
        pages
            .iter()
            .filter(|p| p.status.is_some_and(|s| (lo..lo + 100).contains(&s)))
            .count() as f64
    };
    assert_eq!(status("2xx"), count(200));
    assert_eq!(status("4xx"), count(400));
    let bytes: u64 = pages.iter().map(|p| p.bytes).sum();
    assert_eq!(end["crawlkeeper_response_body_bytes_total{}"], bytes as f64);
    // One response time for each record with a response.
    let answered = pages.iter().filter(|p| p.response_ms.is_some()).count();
    assert_eq!(
        end["crawlkeeper_response_duration_seconds_count{}"],
        answered as f64
    );
    // Errors by kind, robots-denied and blocked URLs: as the records say,
    // and not all zero.
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    for p in &pages {
        if let Some(e) = &p.error {
            let kind = serde_json::to_value(e.kind).unwrap();
            *kinds.entry(kind.as_str().unwrap().to_owned()).or_default() += 1.0;
        }
    }
    let counted = |name: &str| end.get(name).copied().unwrap_or(0.0);
    for (kind, n) in &kinds {
        assert_eq!(
            counted(&format!("crawlkeeper_errors_total{{kind={kind}}}")),
            *n,
            "{kind}"
        );
    }
    let robots = kinds.get("robots_denied").unwrap_or(&0.0)
        + kinds.get("robots_unavailable").unwrap_or(&0.0);
    let blocked = *kinds.get("blocked_address").unwrap_or(&0.0);
    assert!(
        robots > 0.0 && blocked > 0.0,
        "the crawl met both: {kinds:?}"
    );
    assert_eq!(counted("crawlkeeper_robots_denied_total{}"), robots);
    assert_eq!(counted("crawlkeeper_blocked_total{}"), blocked);
    assert!(end["crawlkeeper_store_commits_total{}"] > 0.0);
    assert_eq!(end["crawlkeeper_requests_in_flight{}"], 0.0);
    assert!(during["crawlkeeper_pages_done_total{}"] <= end["crawlkeeper_pages_done_total{}"]);
}

async fn run_child(child: tokio::process::Child) -> (i32, String) {
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("it ends")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_listen_addresses_are_refused_before_anything_is_written() {
    let d = dir("listen-bad");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (args, says) in [
        (vec!["--metrics", "0.0.0.0:9"], "--listen-public"),
        (
            vec!["--status", "10.1.2.3:9", "--listen-public"],
            "--status-token",
        ),
        (vec!["--status", &taken], "cannot listen"),
        (vec!["--metrics", "not-an-address"], "invalid"),
    ] {
        let mut all = vec!["crawl", "--state", "state.db", "--out", "out.jsonl"];
        all.extend(args.iter().copied());
        all.push("http://127.0.0.1:9/");
        let r = common::run_in(&d, &all, None).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert!(!d.join("state.db").exists() && !d.join("out.jsonl").exists());
    }
}
