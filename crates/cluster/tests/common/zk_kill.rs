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

/// Sessions opened through relays, by session id.
#[derive(Default)]
pub struct Relays(Mutex<HashMap<i64, Relay>>);

static PROBES: AtomicU32 = AtomicU32::new(0);

impl Relays {
    /// Opens a session on `server` (`host:port`) under `root`, through a
    /// relay of its own.
    pub async fn connect(
        &self,
        server: &str,
        root: &str,
        timeout: Duration,
    ) -> Result<ZkCoordinator, CoordError> {
        let relay = Relay::start(server)
            .await
            .map_err(|e| CoordError::Backend(format!("relay: {e}")))?;
        let c = ZkCoordinator::connect(&format!("{}{root}", relay.address()), timeout).await?;
        self.0.lock().unwrap().insert(c.session_id()?, relay);
        Ok(c)
    }

    /// Kills `victim`'s session; `observer` is a session of its own under
    /// the same root.
    pub async fn kill(&self, victim: &ZkCoordinator, observer: &ZkCoordinator) {
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
        let relay = self.0.lock().unwrap().remove(&id);
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
