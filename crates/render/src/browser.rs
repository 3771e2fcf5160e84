//! One Chromium process: started headless with the DevTools protocol on a
//! pipe, in a process group of its own, with a profile directory of its
//! own, and killed (the whole group) when dropped. Set so that it can
//! reach nothing by itself: every request a page makes is paused and
//! answered by the crawler ([`crate::tab`]); whatever is not (a WebSocket,
//! WebRTC, the browser's own background traffic) goes to a proxy address
//! that is never served, and no host name resolves.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::net::unix::pipe;

use crate::cdp::Connection;
use crate::{RenderConfig, RenderError};

/// How long a new browser has to answer its first command.
const START_WITHIN: Duration = Duration::from_secs(30);

/// A running browser.
pub(crate) struct Browser {
    pub(crate) conn: Arc<Connection>,
    child: tokio::process::Child,
    pid: Option<libc::pid_t>,
    profile: PathBuf,
    /// Pages rendered (or begun) in it.
    pub(crate) pages: AtomicU32,
    /// Set when it stopped answering: no new page goes to it.
    pub(crate) broken: AtomicBool,
    /// Its open tabs not rendering a page now, blank, ready for the next.
    pub(crate) idle: std::sync::Mutex<Vec<crate::tab::Tab>>,
}

impl Browser {
    /// Starts a browser as `config` says and waits for it to answer.
    pub(crate) async fn launch(config: &RenderConfig) -> Result<Self, RenderError> {
        let profile = profile_dir()?;
        let (browser_reads, to_browser) = pipe_pair()?;
        let (from_browser, browser_writes) = pipe_pair()?;
        let mut cmd = tokio::process::Command::new(&config.chromium);
        cmd.args(flags(config))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let (r, w) = (browser_reads.as_raw_fd(), browser_writes.as_raw_fd());
        // SAFETY: between fork and exec only async-signal-safe calls
        // (fcntl, dup2, prctl) on descriptors the parent still holds open;
        // no memory of the parent is touched.
        unsafe {
            cmd.pre_exec(move || {
                // Moved above 4 first: either end may itself be 3 or 4.
                let r2 = libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The browser dies with the crawler, even on SIGKILL.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let spawned = cmd.spawn();
        drop((browser_reads, browser_writes));
        let mut child = spawned.map_err(|e| {
            let _ = std::fs::remove_dir_all(&profile);
            RenderError::NoBrowser(format!("{}: {e}", config.chromium.display()))
        })?;
        let pid = child.id().and_then(|p| libc::pid_t::try_from(p).ok());
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(drain(stderr, pid));
        }
        let writer = pipe::Sender::from_owned_fd(to_browser).map_err(RenderError::Io)?;
        let reader = pipe::Receiver::from_owned_fd(from_browser).map_err(RenderError::Io)?;
        let browser = Self {
            conn: Connection::start(writer, reader),
            child,
            pid,
            profile,
            pages: AtomicU32::new(0),
            broken: AtomicBool::new(false),
            idle: std::sync::Mutex::new(Vec::new()),
        };
        match browser
            .conn
            .call(
                None,
                "Browser.getVersion",
                serde_json::json!({}),
                START_WITHIN,
            )
            .await
        {
            Ok(v) => {
                tracing::info!(
                    pid,
                    product = v.get("product").and_then(|p| p.as_str()).unwrap_or("?"),
                    "browser started"
                );
                Ok(browser)
            }
            Err(e) => Err(RenderError::NoBrowser(format!(
                "{} did not start: {e}",
                config.chromium.display()
            ))),
        }
    }

    /// An idle tab, if it has one.
    pub(crate) fn take_idle(&self) -> Option<crate::tab::Tab> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
    }

    /// Keeps `tab` for the next page.
    pub(crate) fn keep_idle(&self, tab: crate::tab::Tab) {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(tab);
    }

    /// True while new pages may go to it.
    pub(crate) fn usable(&self, recycle_after: u32) -> bool {
        !self.broken.load(Ordering::Relaxed)
            && !self.conn.is_closed()
            && self.pages.load(Ordering::Relaxed) < recycle_after
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            // SAFETY: killpg only sends a signal, to the browser's own
            // group (started with `process_group(0)`), whose leader is not
            // reaped yet, so its id cannot have been reused.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.profile);
        tracing::debug!(pid = self.pid, "browser stopped");
    }
}

/// The command-line switches of every browser.
fn flags(config: &RenderConfig) -> Vec<String> {
    let mut f: Vec<String> = [
        "--headless",
        "--remote-debugging-pipe",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--mute-audio",
        "--no-first-run",
        "--no-default-browser-check",
        "--no-pings",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-renderer-backgrounding",
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        "--password-store=basic",
        "--use-mock-keychain",
        // Anything not answered by the crawler goes to a proxy on a port
        // nobody serves (loopback included), and no name resolves.
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--window-size=1280,1000",
        // A tab kept for the next page navigates to it in the renderer
        // it has (site isolation kept): swapping to a new one on every
        // navigation started new renderer processes, and the benchmark
        // (`crawlkeeper-bench render`) went from 5.9 to 8.5 pages/s
        // without it.
        "--disable-features=ProactivelySwapBrowsingInstance,BackForwardCache,RenderDocument",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    f.push(format!(
        "--js-flags=--max-old-space-size={}",
        config.js_heap_mb
    ));
    // Chromium's sandbox refuses to run as root.
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        f.push("--no-sandbox".into());
    }
    f
}

/// A fresh, private profile directory.
fn profile_dir() -> Result<PathBuf, RenderError> {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep(&std::env::temp_dir()));
    let dir = std::env::temp_dir().join(format!(
        "{PROFILE_PREFIX}{}-{}-{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        fastrand_u64()
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(RenderError::Io)?;
    Ok(dir)
}

/// How a profile directory's name starts; the process's id follows.
const PROFILE_PREFIX: &str = "crawlkeeper-chromium-";

/// Removes the profile directories under `dir` that processes killed
/// before they could remove their own left (`kill -9`): those of ours
/// whose process is gone. Not followed through links; another user's
/// are not ours to remove.
fn sweep(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // SAFETY: geteuid cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROFILE_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A number no other process guesses: the clock's nanoseconds mixed with
/// a stack address.
fn fastrand_u64() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let here = &t as *const u64 as u64;
    t ^ here.rotate_left(29)
}

/// A pipe: its reading end and its writing end, both close-on-exec.
fn pipe_pair() -> Result<(OwnedFd, OwnedFd), RenderError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(RenderError::Io(std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by
    // nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Logs the browser's standard error at debug level, line by line.
async fn drain(stderr: tokio::process::ChildStderr, pid: Option<libc::pid_t>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = line.chars().take(500).collect();
        tracing::debug!(pid, "chromium: {line}");
    }
}

/// The browser a crawl runs: `explicit` if given, else the first of
/// Debian's `chromium` and the usual other names found on `PATH`.
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf, RenderError> {
    if let Some(p) = explicit {
        return if is_executable(p) || which(p).is_some() {
            Ok(p.to_owned())
        } else {
            Err(RenderError::NoBrowser(format!(
                "{} is not an executable",
                p.display()
            )))
        };
    }
    ["chromium", "chromium-browser", "google-chrome", "chrome"]
        .iter()
        .find_map(|n| which(Path::new(n)))
        .ok_or_else(|| {
            RenderError::NoBrowser(
                "no chromium on PATH (Debian: apt-get install chromium; or --chromium PATH)".into(),
            )
        })
}

fn which(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return is_executable(name).then(|| name.to_owned());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_processs_profile_is_swept_a_live_ones_kept() {
        let root = std::env::temp_dir().join(format!("ck-sweep-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        // No process has an id this large (the kernel's limit is 2^22).
        let dead = root.join(format!("{PROFILE_PREFIX}{}-0-ab", u32::MAX - 1));
        let live = root.join(format!("{PROFILE_PREFIX}{}-0-cd", std::process::id()));
        let other = root.join("something-else-1");
        for d in [&dead, &live, &other] {
            std::fs::create_dir_all(d.join("Default")).unwrap();
        }
        sweep(&root);
        assert!(!dead.exists(), "the dead process's profile");
        assert!(live.exists() && other.exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
