//! [`ChildProcessor`]: a processor run as long-lived child processes of
//! the operator's command, one page at a time each, speaking [`wire`].
//!
//! Each worker is one child, started when a page first needs it. A child
//! that fails a page in a way that leaves it out of step (no answer in
//! time, garbage, an answer for another page, too long a line, an exit)
//! is killed and started again for a later page, after a backoff that
//! doubles with each failure in a row. When the processor has failed
//! [`FAILING_AFTER`] pages in a row, its pages get the error at once
//! (no page waits out a deadline on a processor known broken) until a
//! probe page, let through after a backoff, is answered again.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::wire::{self, Answered};
use super::{Addition, Processor, ProcessorCommand, ProcessorError, ProcessorPage};

/// Pages failed in a row after which the processor is reported failing.
pub const FAILING_AFTER: u32 = 5;
/// The longest wait before a failed child is started again.
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(10);
/// The longest wait before a failing processor is tried again.
const MAX_PROBE_BACKOFF: Duration = Duration::from_secs(60);
/// How long a child may take to exit after its stdin closes, at the end.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How a processor's children run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildSettings {
    /// Children (pages processed at once).
    pub workers: usize,
    /// The deadline of one page, waiting for a free child included.
    pub timeout: Duration,
    /// The most body bytes sent.
    pub max_body: u64,
}

/// A processor run as child processes of a command.
pub struct ChildProcessor {
    command: ProcessorCommand,
    settings: ChildSettings,
    slots: Semaphore,
    idle: Mutex<Vec<Worker>>,
    next_id: AtomicU64,
    health: Mutex<Health>,
}

/// Failures of the processor as a whole.
#[derive(Default)]
struct Health {
    /// Pages failed in a row.
    failures: u32,
    last: String,
    /// While failing: when the next probe page may go through.
    probe_at: Option<Instant>,
    probe_backoff: Duration,
}

/// One child, started when needed.
#[derive(Default)]
struct Worker {
    running: Option<Running>,
    /// Failures of this worker in a row.
    failures: u32,
    /// Not started again before this.
    start_after: Option<Instant>,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl ChildProcessor {
    /// A processor running `command` with `settings`; no child starts
    /// before the first page.
    pub fn new(command: ProcessorCommand, settings: ChildSettings) -> Self {
        let workers = settings.workers.max(1);
        Self {
            command,
            settings: ChildSettings {
                workers,
                ..settings
            },
            slots: Semaphore::new(workers),
            idle: Mutex::new((0..workers).map(|_| Worker::default()).collect()),
            next_id: AtomicU64::new(1),
            health: Mutex::default(),
        }
    }

    fn name(&self) -> &str {
        &self.command.name
    }

    /// The error for a page while the processor is failing, unless this
    /// page is the probe.
    fn failing_now(&self) -> Option<ProcessorError> {
        let mut h = lock(&self.health);
        let probe_at = h.probe_at?;
        let now = Instant::now();
        if now >= probe_at {
            // This page is the probe; the others fail fast until it ends.
            h.probe_backoff =
                (h.probe_backoff * 2).clamp(Duration::from_secs(1), MAX_PROBE_BACKOFF);
            h.probe_at = Some(now + h.probe_backoff);
            return None;
        }
        Some(ProcessorError::KeepsFailing {
            name: self.name().to_owned(),
            failures: h.failures,
            last: h.last.clone(),
        })
    }

    /// Counts a page's outcome towards the processor's health.
    fn note(&self, outcome: &Result<Answered, ProcessorError>) {
        let mut h = lock(&self.health);
        match outcome {
            Ok(_) => {
                if h.probe_at.is_some() {
                    tracing::info!(processor = %self.name(), "processor answers again");
                }
                *h = Health::default();
            }
            Err(e) => {
                h.failures = h.failures.saturating_add(1);
                h.last = e.to_string();
                if h.failures >= FAILING_AFTER && h.probe_at.is_none() {
                    tracing::warn!(processor = %self.name(), failures = h.failures, last = %h.last,
                        "processor keeps failing: its pages get the error at once until a retry succeeds");
                    h.probe_backoff = Duration::from_secs(1);
                    h.probe_at = Some(Instant::now() + h.probe_backoff);
                }
            }
        }
    }

    fn timeout(&self) -> ProcessorError {
        ProcessorError::Timeout {
            name: self.name().to_owned(),
            after: crawlkeeper_model::format_duration(self.settings.timeout),
        }
    }

    fn not_running(&self, why: String) -> ProcessorError {
        ProcessorError::NotRunning {
            name: self.name().to_owned(),
            why,
        }
    }

    fn bad_answer(&self, why: String) -> ProcessorError {
        ProcessorError::BadAnswer {
            name: self.name().to_owned(),
            why,
        }
    }

    fn spawn(&self) -> Result<Running, ProcessorError> {
        let argv = &self.command.argv;
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            // Its own process group: a terminal's Ctrl-C reaches the
            // crawler, which ends its children in turn.
            .process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: prctl is async-signal-safe, and the closure touches no
        // memory of the parent: it only asks the kernel to kill the child
        // when its parent dies (a crawler killed with SIGKILL leaves no
        // processor behind).
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| self.not_running(format!("could not start '{}': {e}", argv[0])))?;
        let pid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.not_running("started without its pipes".into()));
        };
        tokio::spawn(super::stderr::drain(self.name().to_owned(), pid, stderr));
        tracing::info!(processor = %self.name(), pid, "processor started");
        Ok(Running {
            child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
        })
    }

    /// One request and its answer on `worker`'s child (started first if
    /// it is not running).
    async fn exchange(
        &self,
        worker: &mut Worker,
        id: &str,
        line: &[u8],
    ) -> Result<Answered, ProcessorError> {
        if worker.running.is_none() {
            if let Some(after) = worker.start_after {
                tokio::time::sleep_until(after).await;
            }
            worker.running = Some(self.spawn()?);
        }
        let Some(r) = worker.running.as_mut() else {
            return Err(self.not_running("not started".into()));
        };
        let written = async {
            r.stdin.write_all(line).await?;
            r.stdin.flush().await
        };
        if let Err(e) = written.await {
            return Err(self.not_running(exited(&mut r.child, &e.to_string()).await));
        }
        let answer = match read_line(&mut r.stdout, wire::MAX_ANSWER_BYTES).await {
            Ok(Line::Full(line)) => line,
            Ok(Line::End) => {
                return Err(self.not_running(exited(&mut r.child, "closed its stdout").await));
            }
            Ok(Line::TooLong) => {
                return Err(self.bad_answer(format!(
                    "answered a line longer than {} bytes",
                    wire::MAX_ANSWER_BYTES
                )));
            }
            Err(e) => return Err(self.not_running(exited(&mut r.child, &e.to_string()).await)),
        };
        wire::answer(id, &answer).map_err(|e| self.bad_answer(e.to_string()))
    }
}

/// What [`read_line`] read.
enum Line {
    Full(Vec<u8>),
    End,
    TooLong,
}

/// One line (without its newline) of at most `max` bytes.
async fn read_line(r: &mut BufReader<ChildStdout>, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(Line::End);
        }
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            if line.len() + i > max {
                return Ok(Line::TooLong);
            }
            line.extend_from_slice(&buf[..i]);
            r.consume(i + 1);
            return Ok(Line::Full(line));
        }
        let n = buf.len();
        if line.len() + n > max {
            return Ok(Line::TooLong);
        }
        line.extend_from_slice(buf);
        r.consume(n);
    }
}

/// Why a child stopped talking: its exit status if it ends at once (it
/// closed its pipes to exit; what it started is killed with its group
/// before it is reaped), else `io`.
async fn exited(child: &mut Child, io: &str) -> String {
    if exits_within(child, Duration::from_millis(200)).await {
        kill_group(child);
        if let Ok(status) = child.wait().await {
            return format!("the process ended ({status})");
        }
    }
    format!("the process stopped talking ({io})")
}

/// Kills `child`'s process group: the child and whatever it started (a
/// wrapper script's worker, say), which would otherwise live on, hung and
/// reparented. Called while the child is not yet waited for, so its
/// process id (the group's) cannot have been taken by another process.
fn kill_group(child: &mut Child) {
    if let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal; the group is the child's own
        // (it was started with `process_group(0)`).
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
    let _ = child.start_kill();
}

impl Worker {
    /// Kills the child (out of step or hung) and its process group, and
    /// sets when it may start again.
    fn fail(&mut self) {
        if let Some(mut r) = self.running.take() {
            kill_group(&mut r.child);
            tokio::spawn(async move {
                let _ = r.child.wait().await;
            });
        }
        self.failures = self.failures.saturating_add(1);
        let backoff = Duration::from_millis(100)
            .saturating_mul(1u32 << self.failures.saturating_sub(1).min(16))
            .min(MAX_RESTART_BACKOFF);
        self.start_after = Some(Instant::now() + backoff);
    }
}

#[async_trait::async_trait]
impl Processor for ChildProcessor {
    fn name(&self) -> &str {
        &self.command.name
    }

    async fn process(&self, page: &ProcessorPage<'_>) -> Result<Addition, ProcessorError> {
        if let Some(e) = self.failing_now() {
            return Err(e);
        }
        let deadline = Instant::now() + self.settings.timeout;
        let Ok(Ok(_permit)) = tokio::time::timeout_at(deadline, self.slots.acquire()).await else {
            let e = self.timeout();
            self.note(&Err(e.clone()));
            return Err(e);
        };
        let mut worker = lock(&self.idle).pop().unwrap_or_default();
        let id = self.next_id.fetch_add(1, Relaxed).to_string();
        let line = wire::request(&id, page, self.settings.max_body);
        let outcome =
            match tokio::time::timeout_at(deadline, self.exchange(&mut worker, &id, &line)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(self.timeout()),
            };
        match &outcome {
            Ok(_) => worker.failures = 0,
            Err(_) => worker.fail(),
        }
        lock(&self.idle).push(worker);
        self.note(&outcome);
        match outcome? {
            Answered::Done(addition) => Ok(addition),
            Answered::Failed(message) => Err(ProcessorError::Refused {
                name: self.name().to_owned(),
                message,
            }),
        }
    }
}

impl Drop for ChildProcessor {
    /// Ends the children: their stdin closes (a processor's cue to end);
    /// any still running after [`EXIT_GRACE`] is killed; then what is left
    /// of each child's process group (workers it started) is killed. Done
    /// here, not in a task: at the end of a crawl the process exits next,
    /// and a task would never run. A processor ends in milliseconds once
    /// its input closes; only a hung one holds this for the grace.
    fn drop(&mut self) {
        let workers = std::mem::take(&mut *lock(&self.idle));
        let mut children: Vec<Child> = workers
            .into_iter()
            .filter_map(|w| w.running)
            .map(|r| {
                drop(r.stdin);
                r.child
            })
            .collect();
        let deadline = std::time::Instant::now() + EXIT_GRACE;
        let mut pause = Duration::from_millis(1);
        while !children.iter().all(has_exited) && std::time::Instant::now() < deadline {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        for child in &mut children {
            if !has_exited(child) {
                tracing::warn!(processor = %self.name(), "processor did not end when its input closed: killed");
            }
            kill_group(child);
        }
    }
}

/// Whether `child` has exited, without reaping it (so that its process id
/// still names its group).
fn has_exited(child: &Child) -> bool {
    let Some(pid) = child.id().and_then(|p| libc::id_t::try_from(p).ok()) else {
        return true;
    };
    // SAFETY: waitid with WNOWAIT only reads the child's state into
    // `info`, a zeroed siginfo_t owned here; the child stays waitable.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PID,
            pid,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
            && info.si_pid() != 0
    }
}

/// Waits up to `grace` for `child` to exit, without reaping it: true when
/// it did.
async fn exits_within(child: &mut Child, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    let mut pause = Duration::from_millis(1);
    loop {
        if has_exited(child) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
