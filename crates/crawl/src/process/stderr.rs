//! A child's stderr, read to its end so the child never blocks on it, and
//! logged at a bounded rate: a processor that floods stderr costs a read
//! loop, not the log.

use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// Lines logged per [`WINDOW`] at most; the rest are counted.
const LINES_PER_WINDOW: u32 = 20;
const WINDOW: Duration = Duration::from_secs(60);
/// The most of one line logged.
const MAX_LINE: usize = 512;

/// Reads `stderr` of processor `name`'s child `pid` until it closes.
pub(super) async fn drain(name: String, pid: u32, mut stderr: ChildStderr) {
    let mut buf = vec![0u8; 8192];
    let mut line = Vec::new();
    let mut window = Instant::now();
    let (mut logged, mut hidden) = (0u32, 0u64);
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b != b'\n' {
                if line.len() < MAX_LINE {
                    line.push(b);
                }
                continue;
            }
            if window.elapsed() >= WINDOW {
                if hidden > 0 {
                    tracing::warn!(processor = %name, pid, lines = hidden, "stderr lines not logged (more than {LINES_PER_WINDOW} a minute)");
                }
                window = Instant::now();
                (logged, hidden) = (0, 0);
            }
            if logged < LINES_PER_WINDOW {
                logged += 1;
                tracing::info!(processor = %name, pid, "stderr: {}", String::from_utf8_lossy(&line));
            } else {
                hidden += 1;
            }
            line.clear();
        }
    }
    if hidden > 0 {
        tracing::warn!(processor = %name, pid, lines = hidden, "stderr lines not logged (more than {LINES_PER_WINDOW} a minute)");
    }
}
