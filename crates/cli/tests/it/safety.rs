//! A careless user's input never destroys data: outputs that would
//! overwrite the state, a seed file or someone else's file are refused;
//! every option is checked before the store or a file is touched; a
//! database of another program is left alone; secrets stay hidden; absurd
//! input is a one-line error (exit 2). Each test failed before its fix.

use crate::common;

use std::path::{Path, PathBuf};

use crawlkeeper_testsite::{SiteConfig, TestSite};
use rusqlite::Connection;

use common::*;

/// A fresh directory of its own for one test.
fn dir(name: &str) -> PathBuf {
    let dir = temp_path(&format!("safety-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file in `dir` with its content.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

fn assert_usage_error(r: &Run, mentions: &str) {
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
    assert!(r.stderr.contains(mentions), "{mentions:?} in {}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_that_is_the_state_or_a_seed_file_is_refused_untouched() {
    let site = TestSite::start(SiteConfig::uniform(1, 5)).await.unwrap();
    let d = dir("protected");
    let seed = site.url(0, "/");
    // A state file with a job in it.
    let r = run_in(
        &d,
        &["crawl", "--state", "s.db", "--out", "a.jsonl", &seed],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(d.join("seeds.txt"), format!("{seed}\n")).unwrap();
    let before = snapshot(&d);
    for args in [
        &["crawl", "--state", "s.db", "--out", "s.db", &seed][..],
        &["crawl", "--state", "s.db", "--out", "./s.db", &seed],
        &["crawl", "--state", "s.db", "--out", "s.db-wal", &seed],
        &[
            "crawl",
            "--state",
            "s.db",
            "--out",
            "seeds.txt",
            "seeds.txt",
        ],
        &["results", "--state", "s.db", "--out", "s.db"],
    ] {
        let r = run_in(&d, args, None).await;
        assert_usage_error(&r, "--out");
        assert_eq!(snapshot(&d), before, "{args:?} changed a file");
    }
    // A state file that does not exist yet is protected by its name.
    let r = run_in(
        &d,
        &["crawl", "--state", "new.db", "--out", "new.db", &seed],
        None,
    )
    .await;
    assert_usage_error(&r, "the state file");
    assert!(!d.join("new.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_output_file_is_kept_unless_overwrite_is_given() {
    let site = TestSite::start(SiteConfig::uniform(1, 5)).await.unwrap();
    let d = dir("foreign-out");
    let seed = site.url(0, "/");
    let notes = d.join("notes.txt");
    let text = "my notes\nline two\nno newline at the end";
    std::fs::write(&notes, text).unwrap();
    // A new job: refused, nothing created.
    let r = run_in(&d, &["crawl", "--out", s(&notes), &seed], None).await;
    assert_usage_error(&r, "--overwrite");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);
    assert!(!d.join("crawlkeeper.db").exists(), "no state file created");
    // A job with results: the file is checked record by record, not counted.
    let out = d.join("out.jsonl");
    let r = run_in(&d, &["crawl", "--out", s(&out), &seed], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(written.lines().count(), 1, "{written}");
    std::fs::write(&notes, "one\n").unwrap();
    let r = run_in(&d, &["crawl", "--out", s(&notes), &seed], None).await;
    assert_usage_error(&r, "does not hold this job's records");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n");
    // The job's own file, and a cut last line, are taken.
    let cut = &written[..written.len() - 10];
    std::fs::write(&out, cut).unwrap();
    let r = run_in(&d, &["crawl", "--out", s(&out), &seed], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), written);
    // --overwrite replaces a foreign file with the job's records.
    let r = run_in(
        &d,
        &["crawl", "--out", s(&notes), "--overwrite", &seed],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), written);
    // demo replaces a file of records (an earlier demo's), not notes.
    std::fs::write(&notes, "keep me too\n").unwrap();
    let r = run_in(&d, &["demo", "--out", s(&notes)], None).await;
    assert_usage_error(&r, "does not hold crawl records");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep me too\n");
    // results: the same rules.
    std::fs::write(&notes, "keep me\n").unwrap();
    let r = run_in(&d, &["results", "--out", s(&notes)], None).await;
    assert_usage_error(&r, "--overwrite");
    let r = run_in(&d, &["results", "--out", s(&out)], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_certificate_is_in_the_record_and_quiet_means_quiet() {
    // Once rustls' platform verifier wrote an ERROR line per refused
    // certificate on stderr, --quiet or not.
    let mut config = SiteConfig::uniform(1, 3);
    config.tls = true;
    let site = TestSite::start(config).await.unwrap();
    let d = dir("untrusted-tls");
    let seed = site.url(0, "/");
    assert!(seed.starts_with("https://"), "{seed}");
    let crawl = |first: &'static str| {
        let args = [
            "crawl",
            first,
            "--ignore-robots",
            "--retries",
            "0",
            "--out",
            "out.jsonl",
            &seed,
        ];
        let d = d.clone();
        async move { run_in(&d, &args, None).await }
    };
    let r = crawl("--quiet").await;
    assert_eq!(
        r.stderr, "every authority failed; each record says why\n",
        "--quiet: the exit's reason and nothing else"
    );
    assert_eq!(r.code, 1);
    let out = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let recs = records(&out);
    assert_eq!(recs.len(), 1, "{out}");
    assert_eq!(
        recs[0].error.as_ref().map(|e| e.kind),
        Some(crawlkeeper_model::ErrorKind::Certificate),
        "{out}"
    );
    let r = crawl("--fresh").await;
    assert!(
        !r.stderr.contains("ERROR") && !r.stderr.contains("rustls"),
        "{}",
        r.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_null_and_dev_stdout_are_outputs() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = dir("devices");
    let seed = site.url(0, "/");
    let r = run_in(&d, &["crawl", "--out", "/dev/null", &seed], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Resumed, with stored results: still no cutting or reading.
    let r = run_in(&d, &["crawl", "--out", "/dev/null", &seed], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run_in(
        &d,
        &["crawl", "--fresh", "--out", "/dev/stdout", &seed],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(records(&r.stdout).len(), 1, "{}", r.stdout);
    let r = run_in(&d, &["results", "--out", "/dev/null"], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_options_are_refused_before_the_store_or_a_file_is_touched() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let d = dir("validate-first");
    let seed = site.url(0, "/");
    let out = d.join("out.jsonl");
    let r = run_in(&d, &["crawl", "--out", s(&out), &seed], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = snapshot(&d);
    for (args, says) in [
        (
            &[
                "crawl",
                "--fresh",
                "--max-body",
                "0",
                "--out",
                s(&out),
                &seed,
            ][..],
            "max_body",
        ),
        (
            &[
                "crawl",
                "--fresh",
                "--timeout",
                "0s",
                "--out",
                s(&out),
                &seed,
            ],
            "run_timeout",
        ),
        (
            &[
                "crawl",
                "--fresh",
                "--include",
                "(",
                "--out",
                s(&out),
                &seed,
            ],
            "regex",
        ),
        (
            &[
                "crawl",
                "--fresh",
                "--ca-cert",
                "/no/such.pem",
                "--out",
                s(&out),
                &seed,
            ],
            "no/such.pem",
        ),
    ] {
        let r = run_in(&d, args, None).await;
        assert_usage_error(&r, says);
        assert_eq!(snapshot(&d), before, "{args:?} changed a file");
    }
    // In a directory with no state yet, nothing is created.
    let empty = dir("validate-first-empty");
    let r = run_in(
        &empty,
        &["crawl", "--timeout", "0s", "--out", "o.jsonl", &seed],
        None,
    )
    .await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(snapshot(&empty).is_empty(), "{:?}", snapshot(&empty));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_durations_are_a_one_line_error_not_a_panic() {
    for option in [
        "--timeout",
        "--delay",
        "--random-delay",
        "--request-timeout",
        "--retry-base",
    ] {
        let r = run(
            &["crawl", option, "150000000000000d", "http://127.0.0.1:9/"],
            None,
        )
        .await;
        assert_usage_error(&r, "too large");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_another_program_is_refused_untouched() {
    let d = dir("foreign-db");
    let db = d.join("app.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY); INSERT INTO users VALUES (1);")
        .unwrap();
    let before = snapshot(&d);
    for args in [
        &["crawl", "--state", s(&db), "http://127.0.0.1:9/"][..],
        &["jobs", "--state", s(&db)],
        &["results", "--state", s(&db)],
    ] {
        let r = run_in(&d, args, None).await;
        assert_usage_error(&r, "not a crawlkeeper state file");
        assert_eq!(snapshot(&d), before, "{args:?} changed the database");
    }
    // A state file that is not there is not created by reading commands.
    for command in ["jobs", "results"] {
        let r = run_in(&d, &[command, "--state", "typo.db"], None).await;
        assert_usage_error(&r, "does not exist");
        assert!(!d.join("typo.db").exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_never_appear_in_messages() {
    // Nothing listens on port 9 of loopback: the connection fails at once.
    let url = "postgres://alice:S3cretPw@127.0.0.1:9/crawl";
    for args in [&["jobs", "--store", url][..], &["results", "--store", url]] {
        let r = run(args, None).await;
        assert_ne!(r.code, 0);
        assert!(!r.stderr.is_empty());
        assert!(!r.stderr.contains("S3cretPw"), "{}", r.stderr);
        assert!(!r.stdout.contains("S3cretPw"), "{}", r.stdout);
        assert!(r.stderr.contains("alice:***@127.0.0.1:9"), "{}", r.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_seed_input_is_cut_and_escaped() {
    let d = dir("seeds");
    let mut line = String::from("http://a.test/\x1b[2J\x07");
    line.push_str(&"x".repeat(5 * 1024 * 1024));
    std::fs::write(d.join("long.txt"), format!("{line}\n")).unwrap();
    let r = run_in(&d, &["crawl", "long.txt"], None).await;
    assert_usage_error(&r, "longer than");
    assert!(r.stderr.len() < 500, "{} bytes on stderr", r.stderr.len());
    assert!(
        !r.stderr.contains('\x1b') && !r.stderr.contains('\x07'),
        "{:?}",
        r.stderr
    );
    let r = run_in(&d, &["crawl", "/dev/zero"], None).await;
    assert_usage_error(&r, "longer than");
    assert!(
        snapshot(&d).len() == 1,
        "only the seed file: {:?}",
        snapshot(&d)
    );
}
