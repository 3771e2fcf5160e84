//! A coordinator whose requests can be stalled, as those of a paused
//! process are: the zombie scenario on ZooKeeper.

use std::sync::Arc;

use crawlkeeper_cluster::{
    CoordError, Coordinator, CreateMode, Op, OpResult, SessionState, Value, Version, Watch,
};
use tokio::sync::watch;

type Result<T> = std::result::Result<T, CoordError>;

#[derive(Clone)]
pub struct Stalled<C> {
    pub inner: C,
    gate: Arc<watch::Sender<bool>>,
}

impl<C: Coordinator> Stalled<C> {
    pub fn new(inner: C) -> Self {
        Stalled {
            inner,
            gate: Arc::new(watch::channel(false).0),
        }
    }

    /// Holds every request from now on.
    pub fn pause(&self) {
        self.gate.send_replace(true);
    }

    /// Lets them go.
    pub fn resume(&self) {
        self.gate.send_replace(false);
    }

    async fn pass(&self) {
        let mut rx = self.gate.subscribe();
        let _ = rx.wait_for(|paused| !paused).await;
    }
}

impl<C: Coordinator> Coordinator for Stalled<C> {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        self.pass().await;
        self.inner.create(path, data, mode).await
    }

    async fn get(&self, path: &str) -> Result<Value> {
        self.pass().await;
        self.inner.get(path).await
    }

    async fn exists(&self, path: &str) -> Result<Option<Version>> {
        self.pass().await;
        self.inner.exists(path).await
    }

    async fn set(&self, path: &str, data: &[u8], expected: Option<Version>) -> Result<Version> {
        self.pass().await;
        self.inner.set(path, data, expected).await
    }

    async fn delete(&self, path: &str, expected: Option<Version>) -> Result<()> {
        self.pass().await;
        self.inner.delete(path, expected).await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        self.pass().await;
        self.inner.children(path).await
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.pass().await;
        self.inner.multi(ops).await
    }

    async fn get_and_watch(&self, path: &str) -> Result<(Option<Value>, Watch)> {
        self.pass().await;
        self.inner.get_and_watch(path).await
    }

    async fn children_and_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        self.pass().await;
        self.inner.children_and_watch(path).await
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.inner.session_state()
    }

    async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}
