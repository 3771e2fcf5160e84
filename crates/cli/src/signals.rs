//! Ctrl-C and SIGTERM: the first asks for an orderly stop, a second
//! Ctrl-C exits at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;
use tracing::warn;

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// Listens for stop signals for the whole run.
pub struct Shutdown {
    received: Arc<AtomicI32>,
    notify: Arc<Notify>,
}

impl Shutdown {
    /// Installs the handlers.
    pub fn install() -> std::io::Result<Self> {
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let received = Arc::new(AtomicI32::new(0));
        let notify = Arc::new(Notify::new());
        let (r, n) = (received.clone(), notify.clone());
        tokio::spawn(async move {
            let first = tokio::select! {
                _ = int.recv() => SIGINT,
                _ = term.recv() => SIGTERM,
            };
            r.store(first, Ordering::SeqCst);
            n.notify_one();
            warn!("stopping: finishing in-flight requests (Ctrl-C again to quit at once)");
            int.recv().await;
            std::process::exit(128 + SIGINT);
        });
        Ok(Self { received, notify })
    }

    /// Completes when a stop was requested. It owns what it waits on, so
    /// that it can go to a spawned task (the crawl's engine).
    pub fn requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let notify = self.notify.clone();
        async move { notify.notified().await }
    }

    /// The signal that asked for a stop, if one did.
    pub fn received(&self) -> Option<i32> {
        match self.received.load(Ordering::SeqCst) {
            0 => None,
            n => Some(n),
        }
    }

    /// The signal that asked for the stop (2 or 15), 2 if none did.
    pub fn signal(&self) -> i32 {
        match self.received.load(Ordering::SeqCst) {
            0 => SIGINT,
            n => n,
        }
    }
}
