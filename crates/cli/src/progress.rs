//! The live progress of `crawl` on stderr: on a terminal, a status line
//! redrawn in place (indicatif, at most ten times a second) that log lines
//! never tear (each is written with the line cleared, then the line is
//! drawn again); elsewhere, or with `--progress plain`, one plain status
//! line every few seconds. Log lines carry colours only on a terminal, and
//! never when `NO_COLOR` is set.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crawlkeeper_crawl::live::LiveCrawl;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A live line on a terminal; nothing when stderr is not one.
    Auto,
    /// One plain line every `--progress-every`.
    Plain,
    /// No progress.
    Off,
}

/// The bar log lines must not tear, while one is drawn.
static BAR: OnceLock<Mutex<Option<ProgressBar>>> = OnceLock::new();

fn bar_slot() -> &'static Mutex<Option<ProgressBar>> {
    BAR.get_or_init(|| Mutex::new(None))
}

/// Whether log lines may carry ANSI colours: stderr is a terminal and
/// `NO_COLOR` is not set (<https://no-color.org>).
pub fn colours() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Where log lines go: stderr, with the progress line cleared around
/// each.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let bar = bar_slot().lock().unwrap_or_else(|p| p.into_inner()).clone();
        match bar {
            Some(bar) => bar.suspend(|| std::io::stderr().write_all(buf))?,
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

/// The progress shown while a crawl runs.
pub struct Progress {
    task: Option<JoinHandle<()>>,
    stop: Arc<tokio::sync::Notify>,
}

impl Progress {
    /// Shows `live` as `mode` says (plain lines every `every`).
    pub fn start(
        mode: ProgressMode,
        every: Duration,
        live: watch::Receiver<Arc<LiveCrawl>>,
    ) -> Self {
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = match mode {
            ProgressMode::Off => None,
            ProgressMode::Auto if std::io::stderr().is_terminal() => {
                Some(tokio::spawn(draw(live, stop.clone())))
            }
            ProgressMode::Auto => None,
            ProgressMode::Plain => Some(tokio::spawn(plain(live, every, stop.clone()))),
        };
        Self { task, stop }
    }

    /// Ends the view: the live line is cleared.
    pub async fn finish(mut self) {
        self.stop.notify_one();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Redraws the live line until stopped.
async fn draw(mut live: watch::Receiver<Arc<LiveCrawl>>, stop: Arc<tokio::sync::Notify>) {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
    bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
    *bar_slot().lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            () = stop.notified() => break,
            _ = tick.tick() => {}
            changed = live.changed() => if changed.is_err() { break },
        }
        let snapshot = live.borrow_and_update().clone();
        bar.set_message(line(&snapshot));
        bar.tick();
    }
    *bar_slot().lock().unwrap_or_else(|p| p.into_inner()) = None;
    bar.finish_and_clear();
}

/// Prints a plain status line every `every` until stopped.
async fn plain(
    live: watch::Receiver<Arc<LiveCrawl>>,
    every: Duration,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tokio::select! {
            () = stop.notified() => break,
            _ = tick.tick() => {}
        }
        let snapshot = live.borrow().clone();
        let _ = LogWriter.write_all(format!("progress: {}\n", line(&snapshot)).as_bytes());
    }
}

/// The status line of a snapshot.
pub fn line(s: &LiveCrawl) -> String {
    let mut out = format!(
        "{} done, {} queued, {} errors | {:.0} pages/s, {}/s | hosts {} active, {} waiting, {} abandoned | {}",
        s.done_total(),
        s.queued(),
        s.failed(),
        s.pages_per_second,
        bytes(s.bytes_per_second),
        s.hosts.active,
        s.hosts.waiting + s.hosts.backing_off,
        s.hosts.abandoned,
        clock(s.elapsed_seconds),
    );
    if let Some(eta) = s.eta_seconds() {
        out.push_str(&format!(", about {} left", clock(eta)));
    }
    out
}

fn bytes(per_second: f64) -> String {
    match per_second {
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.0} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

/// `1:02:03` or `2:03`.
fn clock(seconds: f64) -> String {
    let s = seconds.clamp(0.0, 1e9) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_figures_and_an_estimate_under_a_page_limit() {
        let mut s = LiveCrawl {
            done: 40,
            done_before: 10,
            queued_memory: 30,
            queued_store: 20,
            pages_per_second: 10.0,
            bytes_per_second: 2_500_000.0,
            elapsed_seconds: 3725.0,
            ..LiveCrawl::default()
        };
        s.errors.insert("timeout".into(), 2);
        s.errors.insert("robots_denied".into(), 5);
        s.hosts.active = 3;
        let l = line(&s);
        assert!(
            l.starts_with("50 done, 50 queued, 2 errors | 10 pages/s, 2.5 MB/s"),
            "{l}"
        );
        assert!(
            l.contains("hosts 3 active") && l.ends_with("1:02:05"),
            "{l}"
        );
        s.max_pages = Some(100);
        assert!(line(&s).ends_with("about 0:05 left"), "{}", line(&s));
    }
}
