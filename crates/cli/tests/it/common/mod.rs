//! Helpers shared by the binary's end-to-end tests.

pub mod browser;
pub mod cluster;
pub mod continuous;
pub mod http;
pub mod measure;
pub mod pg;
pub mod pywb;
pub mod sharded;
pub mod tinyproxy;
pub mod warc;
pub mod writers;

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};

use crawlkeeper_model::CrawlRecord;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary in a directory of its own, so the default state file
/// (`crawlkeeper.db` in the working directory) is its own too.
pub async fn run(args: &[&str], stdin: Option<&str>) -> Run {
    let dir = temp_path(&format!("run-{}", RUNS.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    run_in(&dir, args, stdin).await
}

static RUNS: AtomicUsize = AtomicUsize::new(0);

pub async fn run_in(dir: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(dir)
        .args(args)
        .env_remove("CRAWLKEEPER_MAX_WORKERS")
        .env_remove("CRAWLKEEPER_RUN_TIMEOUT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.unwrap();
    }
    drop(input);
    let out = child.wait_with_output().await.unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn records(jsonl: &str) -> Vec<CrawlRecord> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

pub fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("crawlkeeper-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Sends `sig` (`-KILL`, `-STOP`, …) to `child`.
pub fn signal(child: &tokio::process::Child, sig: &str) {
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success()
    );
}

/// A new empty directory for a test (`<kind>-<name>` in the temporary
/// directory, this process's own).
pub fn fresh_dir(kind: &str, name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("crawlkeeper-{kind}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The environment variables that name proxies (as curl reads them).
pub const PROXY_VARS: [&str; 7] = [
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// The binary with `args` in `dir`, stderr piped, stdin and stdout null.
pub fn command_in(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"));
    c.current_dir(dir).args(args).env_remove("RUST_LOG");
    // Tests speak to loopback servers directly unless they say otherwise.
    for var in PROXY_VARS {
        c.env_remove(var);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// `crawl --follow --quiet --out out.jsonl --state state.db EXTRA SEED`
/// in `dir`, stderr piped.
pub fn crawl_in(dir: &std::path::Path, seed: &str, extra: &[&str]) -> Command {
    let mut c = command_in(
        dir,
        &[
            "crawl",
            "--follow",
            "--quiet",
            "--out",
            "out.jsonl",
            "--state",
            "state.db",
        ],
    );
    c.args(extra).arg(seed);
    c
}

/// Runs crawl command `c` (from [`crawl_in`]) to its end, within
/// `limit`: it must succeed. Its records (`out.jsonl` in `dir`) and its
/// stderr.
pub async fn crawl_to_end(
    dir: &std::path::Path,
    mut c: Command,
    limit: std::time::Duration,
) -> (Vec<CrawlRecord>, String) {
    let out = tokio::time::timeout(limit, c.output())
        .await
        .expect("the crawl ends in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let jsonl = std::fs::read_to_string(dir.join("out.jsonl")).unwrap();
    (records(&jsonl), stderr)
}

/// How long a test waits for a site to see requests before it fails.
pub const ARRIVAL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Waits until `log` holds at least `n` requests; fails the test, saying
/// how many came, if they do not come within [`ARRIVAL_DEADLINE`].
pub async fn arrived(log: &crawlkeeper_testsite::RequestLog, n: usize) {
    tokio::time::timeout(ARRIVAL_DEADLINE, log.wait_for(n))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the site saw {} requests within {ARRIVAL_DEADLINE:?}, not the {n} waited for",
                log.len()
            )
        });
}

/// Starts the test site `config`, over TLS if `tls`, writing its
/// throw-away authority's certificate to `ca.pem` in `d` (for
/// `--ca-cert ca.pem`).
pub async fn site_in(
    mut config: crawlkeeper_testsite::site::SiteConfig,
    tls: bool,
    d: &std::path::Path,
) -> crawlkeeper_testsite::TestSite {
    config.tls = tls;
    let site = crawlkeeper_testsite::TestSite::start(config).await.unwrap();
    if let Some(pem) = site.ca_pem() {
        std::fs::write(d.join("ca.pem"), pem).unwrap();
    }
    site
}
