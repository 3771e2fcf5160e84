//! End-to-end tests of the `crawlkeeper` binary against the test site.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::Command;

use crate::common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_crawl_writes_one_valid_record_per_request() {
    let site = TestSite::start(SiteConfig::uniform(2, 30)).await.unwrap();
    let out = temp_path("follow.jsonl");
    let seed = site.url(0, "/");
    let r = run(
        &[
            "crawl",
            "--follow",
            "--per-host",
            "4",
            "--out",
            out.to_str().unwrap(),
            &seed,
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "records go to --out");
    let recs = records(&std::fs::read_to_string(&out).unwrap());
    let requests = site
        .log()
        .targets(0)
        .iter()
        .filter(|t| *t != "/robots.txt")
        .count();
    assert_eq!(recs.len(), 31);
    assert_eq!(requests, 31);
    assert!(
        recs.iter()
            .all(|r| r.status == Some(200) && r.error.is_none())
    );
    let raw: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    for field in [
        "url",
        "final_url",
        "status",
        "depth",
        "parent",
        "authority",
        "fetched_at",
        "response_ms",
        "content_type",
        "bytes",
        "title",
        "links",
        "error",
    ] {
        assert!(raw.get(field).is_some(), "missing {field}");
    }
    assert!(
        r.stderr.contains("authority"),
        "summary table on stderr: {}",
        r.stderr
    );
    assert!(r.stderr.contains(site.origin(0)), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_crawl_reads_seeds_from_stdin_and_files() {
    let site = TestSite::start(SiteConfig::uniform(1, 30)).await.unwrap();
    let file = temp_path("seeds.txt");
    std::fs::write(&file, format!("# seeds\n{}\n\n", site.url(0, "/p/2"))).unwrap();
    let stdin = format!("{}\n{}\n", site.url(0, "/p/5"), site.url(0, "/p/6"));
    let r = run(
        &["crawl", "--quiet", file.to_str().unwrap(), "-"],
        Some(&stdin),
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.is_empty(), "--quiet prints nothing: {}", r.stderr);
    let mut urls: Vec<String> = records(&r.stdout).into_iter().map(|r| r.url).collect();
    urls.sort();
    assert_eq!(
        urls,
        [
            site.url(0, "/p/2"),
            site.url(0, "/p/5"),
            site.url(0, "/p/6")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_one_line_error_with_exit_2() {
    let cases: [&[&str]; 9] = [
        &["crawl", "http://[::1"],
        &[
            "crawl",
            "--sitemaps",
            "--ignore-robots",
            "http://127.0.0.1:9/",
        ],
        &["crawl", "--warc-gzip-level", "12", "http://127.0.0.1:9/"],
        &[
            "crawl",
            "--warc",
            "/no/such/dir/c.warc.gz",
            "http://127.0.0.1:9/",
        ],
        &["crawl", "/no/such/seed-file.txt"],
        &["crawl", "--no-such-option", "http://127.0.0.1:9/"],
        &["crawl", "--include", "(", "http://127.0.0.1:9/"],
        &["crawl", "--timeout", "soon", "http://127.0.0.1:9/"],
        &[
            "crawl",
            "--out",
            "/no/such/dir/out.jsonl",
            "http://127.0.0.1:9/",
        ],
    ];
    for args in cases {
        let r = run(args, None).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with("error"), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty());
    }
    let r = run(&["crawl", "-"], Some("http://127.0.0.1:9/\nnot a url\n")).await;
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("line 2"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_hosts_only_exit_1_with_error_records() {
    // Port 9 (discard) on a loopback address where nothing listens.
    let r = run(
        &[
            "crawl",
            "--ignore-robots",
            "--retries",
            "0",
            "http://127.0.0.1:9/",
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    let recs = records(&r.stdout);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        recs[0].error.as_ref().unwrap().kind,
        crawlkeeper_model::ErrorKind::Connect
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_timeout_exits_124_with_complete_output() {
    let mut config = SiteConfig::uniform(1, 2000);
    config.hosts[0].delay = Duration::from_millis(100);
    let site = TestSite::start(config).await.unwrap();
    let out = temp_path("timeout.jsonl");
    let started = Instant::now();
    let seed = site.url(0, "/");
    let r = run(
        &[
            "crawl",
            "--follow",
            "--timeout",
            "2s",
            "--out",
            out.to_str().unwrap(),
            &seed,
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 124, "{}", r.stderr);
    // The site's 2,000 pages at 100 ms each, one at a time, take 200 s:
    // a crawl that ignored its 2 s timeout could not end within 30 s, and
    // one that obeyed it ends in 2 s plus the grace for in-flight requests
    // and start-up, however busy the machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        site.log().len() < 400,
        "stopped early: {} requests",
        site.log().len()
    );
    assert!(
        r.stderr.contains("run timeout of 2s exceeded"),
        "{}",
        r.stderr
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.ends_with('\n'));
    let recs = records(&text);
    assert!(!recs.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_crawls_the_bundled_site() {
    let out = temp_path("demo.jsonl");
    let r = run(&["demo", "--out", out.to_str().unwrap()], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = records(&std::fs::read_to_string(&out).unwrap());
    assert!(recs.len() > 80, "{}", recs.len());
    assert!(r.stderr.contains("requests in"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_and_sigterm_stop_in_order_with_130_and_143() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mut config = SiteConfig::uniform(1, 2000);
        config.hosts[0].delay = Duration::from_millis(50);
        let site = TestSite::start(config).await.unwrap();
        let out = temp_path(&format!("signal{code}.jsonl"));
        let child = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
            .args(["crawl", "--follow", "--per-host", "4", "--out"])
            .arg(&out)
            .arg("--state")
            .arg(temp_path(&format!("signal{code}.db")))
            .arg(site.url(0, "/"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        common::arrived(site.log(), 10).await;
        let pid = child.id().unwrap().to_string();
        let killed = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        let output = child.wait_with_output().await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains("still queued"),
            "the summary is printed: {stderr}"
        );
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.ends_with('\n'));
        let recs = records(&text);
        assert!(recs.len() >= 9, "{} records", recs.len());
        let requested = site
            .log()
            .targets(0)
            .iter()
            .filter(|t| *t != "/robots.txt")
            .count();
        assert_eq!(
            recs.len(),
            requested,
            "in-flight requests finished and were written"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_state_keeps_nothing_on_disk() {
    let site = TestSite::start(SiteConfig::uniform(1, 5)).await.unwrap();
    let dir = temp_path("no-state");
    std::fs::create_dir_all(&dir).unwrap();
    let seed = site.url(0, "/");
    let r = run_in(
        &dir,
        &["crawl", "--follow", "--no-state", "--quiet", &seed],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(records(&r.stdout).len(), 6);
    assert!(!dir.join("crawlkeeper.db").exists());
    let r = run_in(&dir, &["crawl", "--follow", "--quiet", &seed], None).await;
    assert_eq!(
        records(&r.stdout).len(),
        6,
        "and a crawl with state starts from nothing"
    );
    assert!(dir.join("crawlkeeper.db").exists());
}

/// The jemalloc options `main.rs` compiles in: what jemalloc itself
/// reports at exit (`stats_print`), for the binary as built.
async fn jemalloc_narenas(conf: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", conf)
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("opt.narenas: "))
        .unwrap_or_else(|| panic!("jemalloc printed no opt.narenas:\n{text}"))
        .to_owned()
}

#[tokio::test]
async fn the_binary_allocates_from_one_arena_unless_the_environment_says_otherwise() {
    assert_eq!(jemalloc_narenas("stats_print:true").await, "1");
    assert_eq!(jemalloc_narenas("narenas:3,stats_print:true").await, "3");
}
