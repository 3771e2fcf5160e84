//! The CPU a process's children spend (the crawler's processors), sampled
//! from `/proc` while it runs: each child's user and system time, the
//! last value seen of each, summed. A child that ends between two samples
//! loses at most a sample's interval of CPU from the account.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the children are looked at.
const INTERVAL: Duration = Duration::from_millis(100);

/// A sampler of one process's children, on a thread of its own.
pub struct ChildrenCpu {
    done: Arc<AtomicBool>,
    thread: JoinHandle<(u64, BTreeMap<u32, u64>)>,
}

impl ChildrenCpu {
    /// Starts sampling the children of `pid`.
    pub fn start(pid: u32) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let mut seen: BTreeMap<u32, u64> = BTreeMap::new();
            let mut own = 0;
            while !stop.load(Ordering::Relaxed) {
                own = cpu_ticks(pid).unwrap_or(own);
                for child in children(pid) {
                    if let Some(ticks) = cpu_ticks(child) {
                        seen.insert(child, ticks);
                    }
                }
                std::thread::sleep(INTERVAL);
            }
            (own, seen)
        });
        Self { done, thread }
    }

    /// Stops sampling: the process's own CPU (its children's not
    /// included), its children's, and how many children there were.
    pub fn finish(self) -> (Duration, Duration, usize) {
        self.done.store(true, Ordering::Relaxed);
        let (own, seen) = self.thread.join().unwrap_or_default();
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let time = |ticks: u64| Duration::from_millis(ticks * 1000 / hz);
        (time(own), time(seen.values().sum()), seen.len())
    }
}

/// The children of every thread of `pid`.
pub(crate) fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// User and system time of `pid`, in clock ticks (fields 14 and 15 of
/// `/proc/PID/stat`, after the command's closing parenthesis).
pub(crate) fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}
