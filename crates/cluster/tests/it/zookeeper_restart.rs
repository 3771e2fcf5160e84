//! The ZooKeeper server restarted in the middle of a test (a server of the
//! test's own, by `scripts/zookeeper.sh`): a short outage is ridden out on
//! the same session; an outage longer than the session timeout is reported
//! as expiry, and a new session works once the server is back.

use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_cluster::{
    CoordError, Coordinator, CreateMode, SessionState, WatchEvent, ZkCoordinator,
};
use crawlkeeper_testsite::zookeeper::ZkServer;

const GUARD: Duration = Duration::from_secs(60);

async fn wait_state(c: &ZkCoordinator, want: SessionState) {
    let mut rx = c.session_state();
    tokio::time::timeout(GUARD, rx.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("no {want:?} within {GUARD:?}"))
        .unwrap();
}

async fn blocking(server: &Arc<ZkServer>, f: fn(&ZkServer)) {
    let s = server.clone();
    tokio::task::spawn_blocking(move || f(&s)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_shorter_than_the_session_timeout_keeps_the_session() {
    let server = Arc::new(tokio::task::spawn_blocking(ZkServer::start).await.unwrap());
    let c = ZkCoordinator::connect(
        &format!("{}/restart", server.address()),
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    c.create("/mine", b"ephemeral", CreateMode::Ephemeral)
        .await
        .unwrap();
    c.create("/kept", b"persistent", CreateMode::Persistent)
        .await
        .unwrap();
    let (_, watch) = c.get_and_watch("/kept").await.unwrap();

    blocking(&server, ZkServer::halt).await;
    wait_state(&c, SessionState::Suspended).await;
    assert_eq!(c.get("/kept").await, Err(CoordError::ConnectionLoss));
    blocking(&server, ZkServer::restart).await;
    wait_state(&c, SessionState::Connected).await;

    // Same session: its ephemeral node and its watch survived.
    assert_eq!(c.get("/mine").await.unwrap().0, b"ephemeral");
    c.set("/kept", b"changed", None).await.unwrap();
    assert_eq!(
        tokio::time::timeout(GUARD, watch.changed()).await.unwrap(),
        WatchEvent::DataChanged
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_session_timeout_is_reported_as_expiry() {
    let server = Arc::new(tokio::task::spawn_blocking(ZkServer::start).await.unwrap());
    let connect = format!("{}/outage", server.address());
    let c = ZkCoordinator::connect(&connect, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(c.session_timeout().unwrap(), Duration::from_secs(1));
    c.create("/mine", b"", CreateMode::Ephemeral).await.unwrap();

    blocking(&server, ZkServer::halt).await;
    // Suspended first, then expired by the client's own clock (the server
    // is down and cannot say).
    wait_state(&c, SessionState::Expired).await;
    blocking(&server, ZkServer::restart).await;

    let err = c.get("/").await.unwrap_err();
    assert!(err.is_fatal(), "{err}");
    // A new session works, and the old session's node goes once the
    // server expires it.
    let fresh = ZkCoordinator::connect(&connect, Duration::from_secs(1))
        .await
        .unwrap();
    let (value, watch) = fresh.get_and_watch("/mine").await.unwrap();
    if value.is_some() {
        assert_eq!(
            tokio::time::timeout(GUARD, watch.changed()).await.unwrap(),
            WatchEvent::Deleted
        );
    }
    assert_eq!(fresh.exists("/mine").await.unwrap(), None);
}
