//! A distributed lock, written once on top of [`Coordinator`] so that both
//! backends share it: ZooKeeper's recipe of ephemeral sequential nodes.
//! Each contender creates `<dir>/lock-<n>`; the smallest `n` holds the
//! lock; the others each watch the node just before theirs (no herd).
//! The nodes are ephemeral, so a holder whose session ends releases it.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::coordinator::{Coordinator, CreateMode, WatchEvent};
use crate::error::{CoordError, Result};
use crate::path;

/// A lock under a directory node.
#[derive(Debug, Clone)]
pub struct Lock<C> {
    coord: C,
    dir: String,
}

/// Proof of holding a [`Lock`]. Release it with [`LockGuard::release`];
/// dropping it releases it in the background.
pub struct LockGuard<C: Coordinator> {
    coord: C,
    node: Option<String>,
}

impl<C: Coordinator> Lock<C> {
    /// A lock whose contenders queue under `dir` (created if missing).
    pub fn new(coord: C, dir: impl Into<String>) -> Self {
        Lock {
            coord,
            dir: dir.into(),
        }
    }

    /// Waits for the lock, at most `timeout`.
    pub async fn acquire(&self, timeout: Duration) -> Result<LockGuard<C>> {
        let deadline = Instant::now() + timeout;
        self.coord.create_all(&self.dir).await?;
        let node = self
            .coord
            .create(
                &path::join(&self.dir, "lock-"),
                b"",
                CreateMode::EphemeralSequential,
            )
            .await?;
        let guard = LockGuard {
            coord: self.coord.clone(),
            node: Some(node),
        };
        match self.wait_turn(&guard, deadline, timeout).await {
            Ok(()) => Ok(guard),
            Err(e) => {
                guard.release().await.ok();
                Err(e)
            }
        }
    }

    /// Runs `work` while holding the lock (SmoothCrawler-Cluster's `strongly_run`).
    pub async fn run<T>(&self, timeout: Duration, work: impl Future<Output = T>) -> Result<T> {
        let guard = self.acquire(timeout).await?;
        let out = work.await;
        guard.release().await?;
        Ok(out)
    }

    async fn wait_turn(
        &self,
        guard: &LockGuard<C>,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<()> {
        let mine = guard.path();
        let my_name = &mine[self.dir.len() + 1..];
        loop {
            let queue = self.coord.children(&self.dir).await?;
            let Some(at) = queue.iter().position(|c| c == my_name) else {
                // Our node is gone: the session ended under us.
                return Err(CoordError::SessionExpired);
            };
            if at == 0 {
                return Ok(());
            }
            let before = path::join(&self.dir, &queue[at - 1]);
            let (value, watch) = self.coord.get_and_watch(&before).await?;
            if value.is_none() {
                continue;
            }
            match tokio::time::timeout_at(deadline, watch.changed()).await {
                Ok(WatchEvent::Session(state)) if state.is_terminal() => {
                    return Err(CoordError::SessionExpired);
                }
                Ok(_) => {}
                Err(_) => {
                    return Err(CoordError::LockTimeout {
                        path: self.dir.clone(),
                        waited: timeout,
                    });
                }
            }
        }
    }
}

impl<C: Coordinator> LockGuard<C> {
    /// The node that holds the lock.
    pub fn path(&self) -> &str {
        self.node.as_deref().unwrap_or_default()
    }

    /// Releases the lock.
    pub async fn release(mut self) -> Result<()> {
        match self.node.take() {
            Some(node) => match self.coord.delete(&node, None).await {
                Ok(()) | Err(CoordError::NoNode(_)) => Ok(()),
                Err(e) if e.is_fatal() => Ok(()), // the session's nodes are gone with it
                Err(e) => {
                    release_later(self.coord.clone(), node);
                    Err(e)
                }
            },
            None => Ok(()),
        }
    }
}

impl<C: Coordinator> std::fmt::Debug for LockGuard<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("node", &self.node)
            .finish()
    }
}

impl<C: Coordinator> Drop for LockGuard<C> {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            release_later(self.coord.clone(), node);
        }
    }
}

/// Deletes a lock node in the background, retrying while the connection is
/// down, until it is gone or the session ends (which deletes it too).
fn release_later<C: Coordinator>(coord: C, node: String) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    handle.spawn(async move {
        let mut pause = Duration::from_millis(50);
        loop {
            match coord.delete(&node, None).await {
                Err(e) if e.is_retryable() => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                _ => return,
            }
        }
    });
}
