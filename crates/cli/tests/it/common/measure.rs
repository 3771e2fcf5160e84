//! A run of the binary whose peak resident memory is measured: the crawl's
//! own, not this test process's.
//!
//! Linux counts into a child's `ru_maxrss` the memory of the process it
//! was started from: a child started with `posix_spawn` (as `Command`
//! does) or `fork` begins with its parent's high-water mark. The test
//! binary runs every end-to-end test in one process and is large, so the
//! crawler is started from a small Python process instead, which reports
//! what `wait4` says of it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Forks and execs its arguments, waits for the child and writes its exit
/// code (negative: the signal that ended it) and peak RSS in KiB.
const MEASURE: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"#;

/// How a measured run ended.
pub struct Measured {
    /// The exit code (negative: killed by that signal).
    pub code: i32,
    /// What it wrote to standard error.
    pub stderr: String,
    /// Its peak resident memory, in bytes.
    pub peak: u64,
}

/// Runs `crawlkeeper ARGS` in `dir` to its end; past `deadline` its
/// process group is killed and the test fails.
pub async fn measured(dir: &Path, args: &[&str], deadline: Duration) -> Measured {
    let err_path = dir.join("stderr.txt");
    let report = dir.join("measured.txt");
    let mut child = tokio::process::Command::new("python3")
        .arg("-c")
        .arg(MEASURE)
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_crawlkeeper"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("CRAWLKEEPER_MAX_WORKERS")
        .env_remove("CRAWLKEEPER_RUN_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs");
    let pgid = child.id().expect("a running child");
    let status = match tokio::time::timeout(deadline, child.wait()).await {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &format!("-{pgid}")])
                .status();
            panic!(
                "`crawlkeeper {}` did not end within {deadline:?}",
                args.join(" ")
            );
        }
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        status.success(),
        "the measuring python3 failed: {status}: {stderr}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let (code, kib) = text.split_once(' ').unwrap();
    Measured {
        code: code.parse().unwrap(),
        stderr,
        peak: kib.parse::<u64>().unwrap() * 1024,
    }
}
