//! Hostile arguments to the store and the cluster's commands: a password
//! in a store location, whatever its form, never shown; a `--store` that
//! is neither PostgreSQL nor an existing state file refused without a
//! file created; group and node names checked before anything is reached
//! or written; more shards than a task holds refused, and a submission
//! that fails leaving no job behind. Each test failed before its fix.

use crate::common;

use std::path::{Path, PathBuf};

use crawlkeeper_testsite::zookeeper::shared_address;

use common::cluster::Cluster;
use common::pg::postgres_url;
use common::*;

/// The password every location below carries.
const PW: &str = "S3cretPw";

/// A fresh directory of its own for one test.
fn dir(name: &str) -> PathBuf {
    let dir = temp_path(&format!("hostile-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Locations of a PostgreSQL that refuses: a closed loopback port, or the
/// test server with a database that is not there; the password in each
/// form a user may give it.
fn refusing_stores() -> Vec<String> {
    let missing = postgres_url("ck_no_such_database");
    vec![
        format!("postgres://u@127.0.0.1:1/db?password={PW}"),
        format!("postgresql://u:{PW}@127.0.0.1:1/db"),
        format!("postgres://u@127.0.0.1:1/db?sslmode=disable&SSLPassword={PW}"),
        format!("host=127.0.0.1 port=1 user=u password={PW} dbname=x"),
        format!("host=127.0.0.1 port=1 user=u password='{PW} with spaces'"),
        format!("{missing}?password={PW}"),
        format!("host=127.0.0.1 port=5432 user=postgres dbname=ck_no_such_database password={PW}"),
    ]
}

fn assert_hidden(r: &Run, what: &str) {
    assert_ne!(r.code, 0, "{what}: {}", r.stderr);
    assert!(!r.stderr.trim().is_empty(), "{what}: says why");
    assert!(!r.stderr.contains(PW), "{what}: {}", r.stderr);
    assert!(!r.stdout.contains(PW), "{what}: {}", r.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_in_any_form_never_appear_and_no_file_is_made() {
    let zk = shared_address();
    let d = dir("passwords");
    for store in refusing_stores() {
        let s = store.as_str();
        let runs: [&[&str]; 6] = [
            &["crawl", "--store", s, "http://127.0.0.1:9/"],
            &["jobs", "--store", s],
            &["results", "--store", s],
            &[
                "status",
                "--zookeeper",
                &zk,
                "--store",
                s,
                "--window",
                "10ms",
            ],
            &["node", "--zookeeper", &zk, "--store", s, "--name", "n-1"],
            // No group here: refused before the store (see the cluster
            // test below for a submission that reaches it).
            &[
                "submit",
                "--zookeeper",
                &zk,
                "--store",
                s,
                "--group",
                "ck-no-such-group",
                "http://127.0.0.1:9/",
            ],
        ];
        for args in runs {
            let r = run_in(&d, args, None).await;
            assert_hidden(&r, &format!("{args:?}"));
            if args[0] != "submit" {
                assert!(
                    r.stderr.contains("***"),
                    "{args:?} shows where, hidden: {}",
                    r.stderr
                );
            }
        }
        assert!(files(&d).is_empty(), "{store}: {:?}", files(&d));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_neither_postgres_nor_a_state_file_is_refused_unrepeated() {
    let d = dir("not-a-store");
    for store in [
        "typo.db".to_owned(),
        format!("./password={PW}.db"),
        format!("/nonexistent/{PW}"),
    ] {
        for args in [
            &["jobs", "--store", &store][..],
            &["results", "--store", &store],
            &["crawl", "--store", &store, "http://127.0.0.1:9/"],
        ] {
            let r = run_in(&d, args, None).await;
            assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
            assert!(
                r.stderr.contains("nor an existing state file"),
                "{}",
                r.stderr
            );
            assert!(!r.stderr.contains(&store), "not repeated: {}", r.stderr);
            assert!(!r.stderr.contains(PW), "{}", r.stderr);
        }
        assert!(files(&d).is_empty(), "{:?}", files(&d));
    }
    // A PostgreSQL location that does not read (a misspelt keyword, an
    // unterminated quote) is the user's to fix: exit 2, hidden, no file.
    for store in [
        format!("hots=127.0.0.1 port=1 password={PW}"),
        format!("host=127.0.0.1 port=1 password='{PW}"),
    ] {
        for command in ["jobs", "results"] {
            let r = run_in(&d, &[command, "--store", &store], None).await;
            assert_eq!(r.code, 2, "{}", r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
            assert!(
                r.stderr.contains("invalid connection string"),
                "{}",
                r.stderr
            );
            assert!(!r.stderr.contains(PW), "{}", r.stderr);
        }
    }
    assert!(files(&d).is_empty(), "{:?}", files(&d));
    // An existing state file is still read through --store.
    let state = d.join("kept.db");
    drop(crawlkeeper_store::open(state.to_str().unwrap()).unwrap());
    let r = run_in(&d, &["jobs", "--store", "kept.db"], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(files(&d), ["kept.db"]);
    // --state is a file, even named like libpq words.
    let odd = d.join("host=odd.db");
    drop(crawlkeeper_store::SqliteStore::open(&odd).unwrap());
    let r = run_in(&d, &["jobs", "--state", "host=odd.db"], None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Bad group names, each refused by every cluster command.
const BAD_GROUPS: &[&str] = &["a/b", "", "../x", ".", "..", "a b", "g\u{1b}[2J"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_names_are_checked_before_anything_is_reached() {
    let d = dir("names");
    let long_group = "g".repeat(65);
    let mut groups: Vec<&str> = BAD_GROUPS.to_vec();
    groups.push(&long_group);
    // Nothing listens there: a command that got as far as connecting
    // would fail with exit 1, not 2.
    let place = [
        "--zookeeper",
        "127.0.0.1:1",
        "--store",
        "postgres://u@127.0.0.1:1/db",
    ];
    for group in groups {
        let commands: [&[&str]; 3] = [
            &["node", "--name", "n-1"],
            &["submit", "http://127.0.0.1:9/"],
            &["status"],
        ];
        for command in commands {
            let mut args = command.to_vec();
            args.extend(place);
            args.extend(["--group", group]);
            let r = run_in(&d, &args, None).await;
            assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
            assert!(r.stderr.contains("--group"), "{args:?}: {}", r.stderr);
        }
    }
    let long_name = format!("{}-1", "n".repeat(64));
    for name in ["a/b-1", "", "../x-1", "..", "crawler", &long_name] {
        let mut args = vec!["node", "--name", name];
        args.extend(place);
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("invalid node name"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(files(&d).is_empty(), "{:?}", files(&d));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_shards_than_a_task_holds_are_refused_before_anything() {
    let d = dir("shards");
    for shards in ["100000", "1025"] {
        let args = [
            "submit",
            "--zookeeper",
            "127.0.0.1:1",
            "--store",
            "postgres://u@127.0.0.1:1/db",
            "--shards",
            shards,
            "http://127.0.0.1:9/",
        ];
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("1..=1024"), "{}", r.stderr);
    }
}

/// On a formed group: the refused submission leaves no job; one that
/// reaches a refusing store says so without its password; the most
/// shards are accepted and listed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_formed_group_gets_no_half_submitted_job_and_the_most_shards() {
    let c = Cluster::start("hostile_shards", 1, 0, 1, 1, 2, 0).await;
    let node = c.node(1, &[]);
    c.formed().await;
    let seed = c.site.site.url(0, "/");
    let (code, _, err) = c.submit_job(&["--shards", "100000"], &[&seed]).await;
    assert_eq!(code, 2, "{err}");
    let s = c.status().await;
    assert!(s["jobs"].as_array().unwrap().is_empty(), "{s:#}");

    for store in refusing_stores() {
        let mut args = vec!["submit", "--zookeeper", &c.zookeeper, "--group", &c.group];
        args.extend(["--store", &store, &seed]);
        let (code, out, err) = c.run(&args).await;
        let r = Run {
            code,
            stdout: out,
            stderr: err,
        };
        assert_hidden(&r, &store);
        assert!(r.stderr.contains("***"), "{}", r.stderr);
    }

    let (code, name, err) = c
        .submit_job(&["--shards", "1024", "--quiet"], &[&seed])
        .await;
    assert_eq!(code, 0, "the most shards fit: {err}");
    assert_eq!(err.matches("error").count(), 0, "{err}");
    let s = c.status().await;
    let jobs = s["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{s:#}");
    assert_eq!(jobs[0]["name"], name.trim());
    assert_eq!(jobs[0]["shards"].as_array().unwrap().len(), 1024);
    drop(node);
}
