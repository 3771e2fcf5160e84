//! A real ZooKeeper server for tests and benchmarks, run by
//! `scripts/zookeeper.sh` (standalone, in a temporary directory, on a free
//! loopback port). Tests that only need *a* server use the one the test
//! script starts ([`shared_address`]); tests that stop and restart the
//! server start their own ([`ZkServer::start`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable naming the server started by `scripts/test.sh`.
pub const ENV: &str = "CRAWLKEEPER_TEST_ZOOKEEPER";

/// The address (`127.0.0.1:PORT`) of the server started by the test
/// script. Panics with the way to start one when it is not set: a missing
/// ZooKeeper fails a test, it never skips it.
pub fn shared_address() -> String {
    std::env::var(ENV).unwrap_or_else(|_| {
        panic!(
            "{ENV} is not set: these tests need a real ZooKeeper. Run them with scripts/test.sh, \
             or start one with `scripts/zookeeper.sh start` and export {ENV}=127.0.0.1:PORT"
        )
    })
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/zookeeper.sh")
}

fn run(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .expect("run scripts/zookeeper.sh");
    assert!(
        out.status.success(),
        "scripts/zookeeper.sh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A ZooKeeper server of one's own, stopped and deleted on drop.
#[derive(Debug)]
pub struct ZkServer {
    address: String,
    dir: String,
}

impl ZkServer {
    /// Starts a new server and waits until it answers.
    pub fn start() -> Self {
        let out = run(&["start"]);
        let line = out.lines().last().unwrap_or_default();
        let (address, dir) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("unexpected output of scripts/zookeeper.sh: {out}"));
        ZkServer {
            address: address.to_owned(),
            dir: dir.to_owned(),
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Stops the server; its data and port are kept for [`restart`](Self::restart).
    pub fn halt(&self) {
        run(&["halt", &self.dir]);
    }

    /// Starts a halted server again, on the same port with the same data,
    /// and waits until it answers.
    pub fn restart(&self) {
        run(&["restart", &self.dir]);
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["stop", &self.dir])
            .output();
    }
}
