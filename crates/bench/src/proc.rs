//! Processes the benchmarks run: finding the release binaries, reading the
//! test site's origins, and the kernel's account of a child's CPU and memory.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// The directory of the release binaries (next to this one).
pub fn binaries_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("no parent dir")?.to_path_buf();
    for bin in ["crawlkeeper", "crawlkeeper-testsite"] {
        if !dir.join(bin).exists() {
            bail!(
                "{} not found: run scripts/bench.sh (it builds the release binaries)",
                dir.join(bin).display()
            );
        }
    }
    Ok(dir)
}

/// The origins the test site prints, up to its `ready` line.
pub fn read_origins(site: &mut Child) -> Result<Vec<String>> {
    let stdout = site.stdout.take().context("no stdout")?;
    let mut origins = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line == "ready" {
            return Ok(origins);
        }
        origins.push(line);
    }
    bail!("the test site exited before it was ready")
}

/// Stops the test site.
pub fn stop(mut site: Child) {
    let pid = libc::pid_t::try_from(site.id()).unwrap_or(0);
    // SAFETY: sending a signal to a child we own has no memory effects.
    unsafe { libc::kill(pid, libc::SIGINT) };
    if site.wait().is_err() {
        let _ = site.kill();
    }
}

/// Waits for `pid` and returns its exit status, CPU time (user + system)
/// and peak RSS in KiB.
pub fn wait_with_rusage(pid: u32) -> Result<(i32, Duration, i64)> {
    let mut status = 0;
    // SAFETY: rusage is plain data, zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(pid)?;
    // SAFETY: pointers are to live locals; pid is our child.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r < 0 {
        bail!("wait4 failed: {}", std::io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec * 1000) as u32);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok((
        code,
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_maxrss,
    ))
}

/// CPU time (user + system) this process has used so far.
pub fn own_cpu() -> Duration {
    // SAFETY: rusage is plain data, zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_usec * 1000).unwrap_or(0),
        )
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A field of `/proc/self/io`.
pub(crate) fn self_io(field: &str) -> Result<u64> {
    let io = std::fs::read_to_string("/proc/self/io")?;
    io.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("no {field} in /proc/self/io"))
}
