//! pywb (webrecorder's Wayback Machine, `wayback` from PyPI;
//! `scripts/test.sh` installs it) replaying a crawl's WARC file: a
//! collection directory made by hand from the WARC file and the CDXJ
//! index `--cdx` wrote (as-is), `wayback` on 127.0.0.1 only, and its
//! access log.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// How long `wayback` may take to answer once started.
pub const START_DEADLINE: Duration = Duration::from_secs(60);

/// The collection `name` under `root` (`collections/NAME/archive/` holding
/// `warc`, `collections/NAME/indexes/index.cdxj` a copy of `cdxj`), and a
/// `config.yaml` beside `collections/` that turns framed replay off, so
/// that a replay URL answers with the archived page itself.
pub fn collection(root: &Path, name: &str, warc: &Path, cdxj: &Path) {
    let coll = root.join("collections").join(name);
    std::fs::create_dir_all(coll.join("archive")).unwrap();
    std::fs::create_dir_all(coll.join("indexes")).unwrap();
    std::fs::copy(warc, coll.join("archive").join(warc.file_name().unwrap())).unwrap();
    std::fs::copy(cdxj, coll.join("indexes").join("index.cdxj")).unwrap();
    std::fs::write(root.join("config.yaml"), "framed_replay: false\n").unwrap();
}

/// A running `wayback`, killed when dropped.
pub struct Wayback {
    /// Where it listens: 127.0.0.1 and a port that was free.
    pub addr: SocketAddr,
    log: PathBuf,
    _child: Child,
}

impl Wayback {
    /// Starts `wayback -b 127.0.0.1 -p PORT` in `root` (the directory of
    /// `collections/` and `config.yaml`), its output (the access log
    /// among it) in `root/wayback.log`, and waits until it answers.
    pub async fn start(root: &Path) -> Self {
        let addr = super::http::free_addr();
        let log = root.join("wayback.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new("wayback")
            .current_dir(root)
            .args(["-b", "127.0.0.1", "-p", &addr.port().to_string()])
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("wayback is needed (scripts/test.sh installs pywb with pip): {e}")
            });
        super::http::wait_for(addr, "/", START_DEADLINE, |_| true).await;
        Self {
            addr,
            log,
            _child: child,
        }
    }

    /// The replay URL of `url` as captured at `timestamp` in collection
    /// `name`, with modifier `modifier` (`""` for the page as a browser
    /// shows it, `id_` for the bytes as archived).
    pub fn url(&self, name: &str, timestamp: &str, modifier: &str, url: &str) -> String {
        format!("http://{}/{name}/{timestamp}{modifier}/{url}", self.addr)
    }

    /// Everything `wayback` wrote so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The requests of its access log: target and status, in order
    /// (gevent's lines on stderr: `127.0.0.1 - - [date] "GET /target
    /// HTTP/1.1" 200 bytes seconds`).
    pub fn requests(&self) -> Vec<(String, u16)> {
        self.output().lines().filter_map(access).collect()
    }
}

/// The target and status of one access log line (any method: pywb asks
/// itself for some with `POST`).
fn access(line: &str) -> Option<(String, u16)> {
    let (_, request) = line.split_once("] \"")?;
    let (request, after) = request.split_once("\" ")?;
    let mut parts = request.split(' ');
    let (_method, target) = (parts.next()?, parts.next()?);
    let status = after.split_whitespace().next()?.parse().ok()?;
    Some((target.to_owned(), status))
}

/// The timestamp of the capture of `url` in a CDXJ index (its second
/// field).
pub fn timestamp(cdxj: &str, url: &str) -> Option<String> {
    let needle = format!("\"url\": \"{url}\"");
    cdxj.lines()
        .find(|l| l.contains(&needle))
        .and_then(|l| l.split(' ').nth(1))
        .map(str::to_owned)
}

/// pywb serving the crawl at `d` (its `out.warc.gz` and CDXJ index,
/// checked against cdxj-indexer's first) as collection `name`, and the
/// replay address of `seed` at the time it was archived.
pub async fn replay(d: &Path, name: &str, seed: &str) -> (Wayback, String) {
    let warc = d.join("out.warc.gz");
    let cdxj = crawlkeeper_warc::cdxj::index_path(&warc);
    // The index is the one cdxj-indexer makes, the one pywb reads.
    super::warc::check_cdx(&warc);
    let root = d.join("pywb");
    collection(&root, name, &warc, &cdxj);
    let wayback = Wayback::start(&root).await;
    let index = std::fs::read_to_string(&cdxj).unwrap();
    let at =
        timestamp(&index, seed).unwrap_or_else(|| panic!("{seed} is not in the index:\n{index}"));
    let url = wayback.url(name, &at, "", seed);
    (wayback, url)
}
