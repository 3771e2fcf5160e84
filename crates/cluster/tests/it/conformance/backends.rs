//! The backends the suite runs on.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crawlkeeper_cluster::{Coordinator, MemoryCoordinator, MemoryEnsemble, ZkCoordinator};

use crate::zk_kill::Relays;

/// The session timeout of every test session.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(1);

/// A coordinator under test: sessions on one shared tree, and a way to
/// expire one as the server does when its owner dies.
pub trait Backend: Sync {
    type C: Coordinator;

    /// Opens a new session.
    fn session(&self) -> impl Future<Output = Self::C> + Send;

    /// Expires a session from outside.
    fn expire(&self, c: &Self::C) -> impl Future<Output = ()> + Send;
}

pub struct Memory {
    ensemble: MemoryEnsemble,
}

impl Memory {
    pub fn new() -> Self {
        Memory {
            ensemble: MemoryEnsemble::new(),
        }
    }
}

impl Backend for Memory {
    type C = MemoryCoordinator;

    async fn session(&self) -> MemoryCoordinator {
        self.ensemble.connect(SESSION_TIMEOUT)
    }

    async fn expire(&self, c: &MemoryCoordinator) {
        c.expire();
    }
}

pub struct Zk {
    relays: Relays,
}

static N: AtomicU32 = AtomicU32::new(0);

impl Zk {
    /// A chroot of its own on the shared test server.
    pub fn new() -> Self {
        let root = format!(
            "/conformance-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        Zk {
            relays: Relays::new(&crawlkeeper_testsite::zookeeper::shared_address(), &root),
        }
    }
}

impl Backend for Zk {
    type C = ZkCoordinator;

    /// Through a relay of its own, so that it can be killed.
    async fn session(&self) -> ZkCoordinator {
        self.relays
            .connect(SESSION_TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("ZooKeeper: {e}"))
    }

    /// As when its process crashes: the server hears nothing more.
    async fn expire(&self, c: &ZkCoordinator) {
        self.relays.kill(c).await;
    }
}
