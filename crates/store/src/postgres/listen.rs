//! Hearing of news at once: a thread with a connection of its own listens
//! on the job's channel (`LISTEN`), on which a transaction that leaves
//! notes for other shards' holders, or finds the job complete, notifies
//! at commit. Notifications only hasten what the holders' polls would
//! find anyway: one missed (a lost connection) costs at most a poll
//! interval.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};
use tracing::debug;

/// How often the thread looks at its stop flag while nothing arrives.
const TICK: Duration = Duration::from_millis(250);

/// A listening thread; it stops when this is dropped.
pub struct Listener {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Listens on `channel` of the database at `url`, calling `wake` for
    /// every notification (and after each reconnection, in case one was
    /// missed).
    pub fn start(url: &str, channel: String, wake: Box<dyn Fn() + Send>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, url) = (stop.clone(), url.to_owned());
            std::thread::Builder::new()
                .name("pg-listen".into())
                .spawn(move || run(&url, &channel, wake.as_ref(), &stop))?
        };
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Not joined: the thread may be connecting to a server that does
        // not answer; it ends at its next look at the flag, or with the
        // process.
        self.stop.store(true, Ordering::Release);
        drop(self.thread.take());
    }
}

/// Sleeps `d` in ticks, returning early when `stop` is set.
fn pause(d: Duration, stop: &AtomicBool) {
    let mut left = d;
    while !left.is_zero() && !stop.load(Ordering::Acquire) {
        let step = left.min(TICK);
        std::thread::sleep(step);
        left -= step;
    }
}

fn run(url: &str, channel: &str, wake: &dyn Fn(), stop: &AtomicBool) {
    let mut backoff = TICK;
    let mut first = true;
    while !stop.load(Ordering::Acquire) {
        let mut client = match Client::connect(url, NoTls)
            .and_then(|mut c| c.batch_execute(&format!("LISTEN {channel}")).map(|()| c))
        {
            Ok(c) => c,
            Err(e) => {
                let error = crate::location::scrub(&e.to_string(), url);
                debug!(%error, "cannot listen for news; the polls go on");
                pause(backoff, stop);
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = TICK;
        if !first {
            wake();
        }
        first = false;
        while !stop.load(Ordering::Acquire) {
            let mut notifications = client.notifications();
            let mut iter = notifications.timeout_iter(TICK);
            match iter.next() {
                Ok(Some(_)) => wake(),
                Ok(None) => {}
                Err(e) => {
                    let error = crate::location::scrub(&e.to_string(), url);
                    debug!(%error, "lost the listening connection");
                    break;
                }
            }
        }
    }
}
