//! Processors by name (`--processor NAME=COMMAND`, `--use NAME`, issue
//! #27): the example processor's fields in the records, links a processor
//! adds or drops, and every way a processor can misbehave (no answer,
//! garbage, another page's id, a gigabyte, a crash, a hang at start, a
//! flood of stderr), each with the crawl completing and every page
//! recorded once. Children end with the crawl, even one killed.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::site::{PRODUCTS, product};
use crawlkeeper_testsite::{SiteConfig, TestSite};
use serde_json::json;

use common::measure::measured;
use common::*;

/// A fresh directory of its own for one test.
fn dir(name: &str) -> PathBuf {
    let dir = temp_path(&format!("processors-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// `--processor` for the test processor in `mode`, its pids written to `pids`.
fn behave(mode: &str, pids: &std::path::Path) -> String {
    format!(
        "p=python3 {} {mode} {}",
        repo("crates/cli/tests/it/processors/behave.py"),
        pids.display()
    )
}

fn by_url(records: &[CrawlRecord]) -> BTreeMap<String, &CrawlRecord> {
    let mut map = BTreeMap::new();
    for r in records {
        assert!(
            map.insert(r.url.clone(), r).is_none(),
            "{} recorded twice",
            r.url
        );
    }
    map
}

fn product_urls(site: &TestSite) -> Vec<String> {
    (1..=PRODUCTS)
        .map(|n| site.url(0, &format!("/product/{n}")))
        .collect()
}

/// The pids a test processor wrote.
fn pids(path: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits (bounded) until none of `pids` is a live process; a zombie not
/// yet reaped by its parent counts as ended.
async fn ended(pids: &[u32], within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let alive: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    !s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
            })
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes still running: {alive:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_processor_adds_product_fields_beside_the_selectors() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("example");
    let example = format!(
        "products=python3 {}",
        repo("examples/processors/products.py")
    );
    let mut args = vec![
        "crawl",
        "--state",
        "state.db",
        "--out",
        "out.jsonl",
        "--processor",
        &example,
        "--processor-workers",
        "2",
        "--use",
        "products",
        "--extract",
        "name=h1.product-title",
    ];
    let urls = product_urls(&site);
    args.extend(urls.iter().map(String::as_str));
    let missing = site.url(0, "/missing");
    let json = site.url(0, "/data.json");
    args.extend([missing.as_str(), json.as_str()]);
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let recs = records(&written);
    let recs = by_url(&recs);
    assert_eq!(recs.len(), PRODUCTS as usize + 2);
    for n in 1..=PRODUCTS {
        let rec = recs[&site.url(0, &format!("/product/{n}"))];
        assert_eq!(rec.error, None, "product {n}");
        let fields = rec.fields.as_ref().expect("fields");
        let price: f64 = product(n).price.parse().unwrap();
        assert_eq!(
            fields["product"],
            json!({"name": format!("Kettle & Cup No. {n}"),
                   "price_cents": (price * 100.0).round() as i64, "images": 2}),
            "product {n}"
        );
        assert!(fields["words"].as_u64().unwrap() > 5, "{fields:?}");
        // The selector's field is there too: one record, both layers.
        assert_eq!(fields["name"], json!(format!("Kettle & Cup No. {n}")));
    }
    // A 404 is not processed; a JSON page is, and gets nothing.
    assert_eq!(recs[&missing].fields, None);
    assert_eq!(recs[&missing].error, None);
    assert_eq!(recs[&json].error, None);
    // The store holds what was written.
    let back = run_in(&d, &["results", "--state", "state.db"], None).await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert_eq!(back.stdout.lines().count(), recs.len());
    assert!(
        back.stdout.contains("\"price_cents\":1999"),
        "{}",
        back.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_sees_the_page_and_adds_or_drops_links() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("links");
    let pid_file = d.join("pids");
    let links = behave("links", &pid_file);
    let index = site.url(0, "/");
    let first = site.url(0, "/product/1");
    let r = run_in(
        &d,
        &[
            "crawl",
            "--no-state",
            "--follow",
            "--processor",
            &links,
            "--use",
            "p",
            &index,
            &first,
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = records(&r.stdout);
    let recs = by_url(&recs);
    // `/` dropped its links; product 1 added product 2, which added 3.
    let want: Vec<String> = ["/", "/product/1", "/product/2", "/product/3"]
        .iter()
        .map(|p| site.url(0, p))
        .collect();
    assert_eq!(
        recs.keys().cloned().collect::<Vec<_>>(),
        want,
        "{}",
        r.stdout
    );
    assert_eq!(
        recs[&index].fields.as_ref().unwrap()["dropped"],
        json!(true)
    );
    assert_eq!(recs[&want[2]].parent.as_deref(), Some(first.as_str()));
    assert_eq!(recs[&want[3]].parent.as_deref(), Some(want[2].as_str()));
    assert_eq!(recs[&want[3]].depth, 2);

    // The echo processor got the page whole, and the fields before it.
    let echo = behave("echo", &pid_file);
    let r = run_in(
        &d,
        &[
            "crawl",
            "--no-state",
            "--processor",
            &echo,
            "--use",
            "p",
            "--extract",
            "t=title",
            &first,
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rec = &records(&r.stdout)[0];
    let body_bytes = rec.bytes;
    assert_eq!(
        rec.fields.as_ref().unwrap()["echo"],
        json!({"url": first, "status": 200, "bytes": body_bytes, "seen_fields": ["t"]})
    );
}

/// What a misbehaving processor must leave: the crawl complete, every
/// page recorded once, each product page failed with the error kind
/// `processor` saying `says`, and no process it started still running.
/// `mode` may carry the processor's third argument after a space.
async fn misbehaving(mode: &str, says: &str) {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir(&mode.replace(' ', "-"));
    let pid_file = d.join("pids");
    let p = match mode.split_once(' ') {
        Some((mode, arg)) => format!("{} {arg}", behave(mode, &pid_file)),
        None => behave(mode, &pid_file),
    };
    let mut args = vec![
        "crawl",
        "--no-state",
        "--processor",
        &p,
        "--use",
        "p",
        "--processor-timeout",
        "2s",
    ];
    let urls = product_urls(&site);
    args.extend(urls.iter().map(String::as_str));
    let missing = site.url(0, "/missing");
    args.push(&missing);
    let started = Instant::now();
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{mode}: {}", r.stderr);
    let recs = records(&r.stdout);
    let recs = by_url(&recs);
    assert_eq!(recs.len(), urls.len() + 1, "{mode}: {}", r.stdout);
    for url in &urls {
        let rec = recs[url];
        let e = rec
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{mode}: {url} has no error"));
        assert_eq!(e.kind, ErrorKind::Processor, "{mode}: {e:?}");
        assert!(e.message.contains(says), "{mode}: {}", e.message);
        assert_eq!(rec.status, Some(200), "{mode}: the page itself was fetched");
        assert_eq!(rec.fields, None, "{mode}: no additions from a failed page");
    }
    assert_eq!(recs[&missing].error, None, "{mode}: a 404 is not processed");
    // Bounded: three pages at most one deadline each, and restarts.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{mode}: {:?}",
        started.elapsed()
    );
    ended(&pids(&pid_file), Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_that_never_answers_fails_its_pages_at_the_deadline() {
    misbehaving("silent", "did not answer within 2s").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_processor_s_own_workers_are_killed_with_it() {
    // Each child starts a worker of its own (a wrapper script's, say) in
    // its process group: the deadline kills the group, not the child only.
    misbehaving("orphan silent", "did not answer within 2s").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_s_own_workers_end_with_the_crawl() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("orphan-ok");
    let pid_file = d.join("pids");
    let p = behave("orphan", &pid_file) + " ok";
    let mut args = vec!["crawl", "--no-state", "--processor", &p, "--use", "p"];
    args.extend(["--processor-workers", "2", "--per-host", "2"]);
    let urls = product_urls(&site);
    args.extend(urls.iter().map(String::as_str));
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(records(&r.stdout).len(), urls.len(), "{}", r.stdout);
    let started = pids(&pid_file);
    assert!(
        started.len() >= 2,
        "children and their workers: {started:?}"
    );
    ended(&started, Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_a_processor_adds_on_a_nofollow_page_are_not_followed() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("nofollow");
    let p = behave("nofollow", &d.join("pids"));
    for (page, followed) in [("/meta-nofollow", false), ("/product/1", true)] {
        let seed = site.url(0, page);
        let args = ["crawl", "--no-state", "--follow", "--depth", "1"];
        let mut args = args.to_vec();
        args.extend(["--processor", &p, "--use", "p", &seed]);
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let recs = records(&r.stdout);
        let third = site.url(0, "/product/3");
        assert_eq!(
            recs.iter().any(|r| r.url == third),
            followed,
            "{page}: {}",
            r.stdout
        );
    }
}

/// The peak resident memory, in MiB, of `crawlkeeper ARGS` run in `dir`.
async fn peak_rss_mib(dir: &std::path::Path, args: &[String]) -> u64 {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = measured(dir, &args, Duration::from_secs(120)).await;
    // 1: every page failed (the hostile answers' pages do).
    assert!(matches!(run.code, 0 | 1), "{}: {}", run.code, run.stderr);
    run.peak >> 20
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_at_the_line_cap_cost_little_memory() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("near-cap");
    let pid_file = d.join("pids");
    let cap = crawlkeeper_crawl::process::wire::MAX_ANSWER_BYTES;
    let mut urls = product_urls(&site);
    urls.extend(["/", "/only-in-sitemap", "/base/page", "/refresh"].map(|p| site.url(0, p)));
    let run = |p: String| {
        let mut args: Vec<String> = ["crawl", "--no-state", "--processor", &p, "--use", "p"]
            .map(String::from)
            .to_vec();
        for a in [
            "--processor-workers",
            "4",
            "--per-host",
            "4",
            "--max-workers",
            "4",
        ] {
            args.push(a.to_owned());
        }
        args.extend(urls.iter().cloned());
        args
    };
    let plain = peak_rss_mib(&d, &run(behave("echo", &pid_file))).await;
    let hostile = run(format!("{} {}", behave("near-cap", &pid_file), cap - 16));
    let hostile = peak_rss_mib(&d, &hostile).await;
    eprintln!("peak RSS: {plain} MiB with plain answers, {hostile} MiB with {cap}-byte ones");
    assert!(
        hostile <= plain + 100,
        "answers of {cap} bytes: peak {hostile} MiB, {plain} MiB with plain answers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_that_hangs_at_start_fails_its_pages_at_the_deadline() {
    misbehaving("hang-start", "did not answer within 2s").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_answering_garbage_is_restarted() {
    misbehaving("garbage", "not a protocol answer").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_for_another_page_is_refused() {
    misbehaving("other-id", "answered for id").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_answer_is_cut_off() {
    misbehaving("huge", "answered a line longer than").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_processor_is_restarted_and_its_pages_recorded() {
    misbehaving("crash", "the process ended").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_error_is_the_page_error() {
    misbehaving("refuse", "failed the page: no price on").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_flooding_stderr_still_answers() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("stderr");
    let pid_file = d.join("pids");
    let p = behave("stderr-flood", &pid_file);
    let mut args = vec!["crawl", "--no-state", "--processor", &p, "--use", "p"];
    let urls = product_urls(&site);
    args.extend(urls.iter().map(String::as_str));
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = records(&r.stdout);
    assert_eq!(recs.len(), urls.len());
    for rec in &recs {
        assert_eq!(rec.error, None, "{}", rec.url);
        assert_eq!(rec.fields.as_ref().unwrap()["ok"], json!(true));
    }
    // 60,000 lines of noise, a few logged: the log is not flooded.
    let noise = r.stderr.matches("noise ").count();
    assert!(noise <= 25, "{noise} stderr lines logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processor_that_keeps_failing_fails_its_pages_at_once() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("keeps-failing");
    let pid_file = d.join("pids");
    let p = behave("silent", &pid_file);
    let start = site.url(1, "/");
    let started = Instant::now();
    let r = run_in(
        &d,
        &[
            "crawl",
            "--no-state",
            "--follow",
            "--processor",
            &p,
            "--use",
            "p",
            "--processor-timeout",
            "1s",
            &start,
        ],
        None,
    )
    .await;
    // Every page failed: exit 1, as for any crawl whose every URL failed.
    assert_eq!(r.code, 1, "{}", r.stderr);
    let recs = records(&r.stdout);
    let recs = by_url(&recs);
    // A page a processor failed keeps its links: the whole site is crawled.
    assert_eq!(recs.len(), 21, "{}", r.stdout);
    let fast = recs
        .values()
        .filter(|r| {
            r.error.as_ref().is_some_and(|e| {
                e.kind == ErrorKind::Processor && e.message.contains("keeps failing")
            })
        })
        .count();
    assert!(recs.values().all(|r| {
        r.error
            .as_ref()
            .is_some_and(|e| e.kind == ErrorKind::Processor)
    }));
    assert!(fast >= 10, "{fast} pages failed at once");
    // 21 pages at a 1 s deadline each would be 21 s.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(r.stderr.contains("processor keeps failing"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processors_end_with_the_crawl_stopped_or_killed() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    for (sig, name) in [("-TERM", "term"), ("-KILL", "kill")] {
        let d = dir(&format!("end-{name}"));
        let pid_file = d.join("pids");
        let p = behave("slow", &pid_file) + " 30";
        let urls = product_urls(&site);
        let mut args = vec![
            "crawl",
            "--no-state",
            "--quiet",
            "--processor",
            &p,
            "--use",
            "p",
            "--processor-workers",
            "3",
            "--max-workers",
            "3",
            "--per-host",
            "3",
        ];
        args.extend(urls.iter().map(String::as_str));
        let mut child = command_in(&d, &args).spawn().unwrap();
        // Wait (bounded) for all three children to have started.
        let deadline = Instant::now() + Duration::from_secs(20);
        while pids(&pid_file).len() < 3 {
            assert!(Instant::now() < deadline, "processors did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        signal(&child, sig);
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .expect("the crawl ends")
            .unwrap();
        assert!(sig == "-KILL" || status.code().is_some(), "{status:?}");
        ended(&pids(&pid_file), Duration::from_secs(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_or_bad_processor_is_refused_before_anything_is_written() {
    let d = dir("refused");
    let seed = "http://127.0.0.1:9/";
    for (args, says) in [
        (
            vec!["crawl", "--use", "nope", seed],
            "unknown processor 'nope' (none is configured here",
        ),
        (
            vec!["crawl", "--processor", "a=python3 x.py", "--use", "b", seed],
            "unknown processor 'b' (configured here: a)",
        ),
        (
            vec!["crawl", "--processor", "python3 x.py", seed],
            "expected NAME=COMMAND",
        ),
        (
            vec!["crawl", "--processor", "a=python3 'x.py", seed],
            "a quote is not closed",
        ),
        (
            vec![
                "crawl",
                "--processor",
                "a=x",
                "--processor",
                "a=y",
                "--use",
                "a",
                seed,
            ],
            "configured twice",
        ),
        (
            vec![
                "crawl",
                "--processor",
                "a=x",
                "--use",
                "a",
                "--use",
                "a",
                seed,
            ],
            "used twice",
        ),
        (
            vec!["crawl", "--processor-timeout", "0s", seed],
            "must be more than zero",
        ),
    ] {
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            0,
            "{args:?} wrote something"
        );
    }
}
