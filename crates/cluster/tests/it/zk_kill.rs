//! Killing a ZooKeeper session the way a crashed process loses it: every
//! session a test may kill talks to the server through a [`Relay`]; the
//! kill cuts it, and returns once the server has ended the session (an
//! ephemeral probe of the session is gone, seen from an observer) and the
//! session's own client has learned it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crawlkeeper_cluster::{CoordError, Coordinator, CreateMode, ZkCoordinator};
use crawlkeeper_testsite::relay::Relay;

/// Sessions on one server under one root, opened through relays.
pub struct Relays {
    server: String,
    root: String,
    /// By session id.
    relays: Mutex<HashMap<i64, Relay>>,
    /// A session of the test's own (no relay), to watch kills end.
    observer: tokio::sync::OnceCell<ZkCoordinator>,
}

static PROBES: AtomicU32 = AtomicU32::new(0);

impl Relays {
    /// Sessions on `server` (`host:port`) under `root`.
    pub fn new(server: &str, root: &str) -> Self {
        Relays {
            server: server.to_owned(),
            root: root.to_owned(),
            relays: Mutex::default(),
            observer: tokio::sync::OnceCell::new(),
        }
    }

    /// Opens a session through a relay of its own.
    pub async fn connect(&self, timeout: Duration) -> Result<ZkCoordinator, CoordError> {
        let relay = Relay::start(&self.server)
            .await
            .map_err(|e| CoordError::Backend(format!("relay: {e}")))?;
        let at = format!("{}{}", relay.address(), self.root);
        let c = ZkCoordinator::connect(&at, timeout).await?;
        self.relays.lock().unwrap().insert(c.session_id()?, relay);
        Ok(c)
    }

    /// Kills `victim`'s session, as its process's crash would.
    pub async fn kill(&self, victim: &ZkCoordinator) {
        let observer = self
            .observer
            .get_or_init(|| async {
                let at = format!("{}{}", self.server, self.root);
                ZkCoordinator::connect(&at, Duration::from_secs(10))
                    .await
                    .unwrap()
            })
            .await;
        let probe = format!(
            "/kill-probe-{}-{}",
            std::process::id(),
            PROBES.fetch_add(1, Ordering::SeqCst)
        );
        victim
            .create(&probe, b"", CreateMode::Ephemeral)
            .await
            .expect("the victim is alive before the kill");
        let id = victim.session_id().unwrap();
        let relay = self.relays.lock().unwrap().remove(&id);
        relay.expect("a session opened through a relay").cut();
        let gone = async {
            loop {
                let (value, watch) = observer.get_and_watch(&probe).await.unwrap();
                if value.is_none() {
                    return;
                }
                watch.changed().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), gone)
            .await
            .expect("the server ends a session it no longer hears from");
        let mut state = victim.session_state();
        tokio::time::timeout(Duration::from_secs(60), state.wait_for(|s| s.is_terminal()))
            .await
            .expect("the client learns its session ended")
            .unwrap();
    }
}
