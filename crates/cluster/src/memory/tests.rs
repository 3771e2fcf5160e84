//! Fault injection, on tokio's paused clock: every expiry happens at an
//! exact instant.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

const TIMEOUT: Duration = Duration::from_secs(2);

async fn pair() -> (MemoryCoordinator, MemoryCoordinator) {
    let owner = MemoryCoordinator::standalone(TIMEOUT);
    let other = owner.ensemble().connect(TIMEOUT);
    owner
        .create("/e", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    (owner, other)
}

#[tokio::test(start_paused = true)]
async fn a_frozen_session_expires_after_its_timeout_and_its_owner_learns_at_its_next_call() {
    let (owner, other) = pair().await;
    let (_, watch) = other.get_and_watch("/e").await.unwrap();
    let start = Instant::now();
    owner.freeze();
    // Before the timeout the owner works normally (it does not know).
    owner.set("/e", b"still here", None).await.unwrap();
    assert_eq!(watch.changed().await, WatchEvent::DataChanged);
    let (_, watch) = other.get_and_watch("/e").await.unwrap();
    assert_eq!(watch.changed().await, WatchEvent::Deleted);
    assert_eq!(start.elapsed(), TIMEOUT);
    assert_eq!(*owner.session_state().borrow(), SessionState::Connected);
    assert_eq!(owner.get("/").await, Err(CoordError::SessionExpired));
    assert_eq!(*owner.session_state().borrow(), SessionState::Expired);
}

#[tokio::test(start_paused = true)]
async fn a_session_unfrozen_in_time_lives_on() {
    let (owner, other) = pair().await;
    owner.freeze();
    tokio::time::sleep(TIMEOUT - Duration::from_millis(1)).await;
    owner.unfreeze();
    tokio::time::sleep(TIMEOUT * 3).await;
    assert_eq!(other.exists("/e").await.unwrap(), Some(0));
    owner.get("/e").await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cut_off_session_is_suspended_and_gets_its_events_when_healed_in_time() {
    let (owner, other) = pair().await;
    let (_, watch) = owner.get_and_watch("/e").await.unwrap();
    let seen = tokio::spawn(watch.changed());
    owner.cut_off();
    assert_eq!(*owner.session_state().borrow(), SessionState::Suspended);
    assert_eq!(owner.get("/e").await, Err(CoordError::ConnectionLoss));
    other.set("/e", b"changed", None).await.unwrap();
    tokio::time::sleep(TIMEOUT / 2).await;
    assert!(!seen.is_finished(), "events wait while cut off");
    owner.heal();
    assert_eq!(seen.await.unwrap(), WatchEvent::DataChanged);
    assert_eq!(*owner.session_state().borrow(), SessionState::Connected);
    assert_eq!(owner.get("/e").await.unwrap().0, b"changed");
}

#[tokio::test(start_paused = true)]
async fn a_partition_longer_than_the_timeout_expires_the_session() {
    let (owner, other) = pair().await;
    let (_, watch) = other.get_and_watch("/e").await.unwrap();
    let start = Instant::now();
    owner.cut_off();
    assert_eq!(watch.changed().await, WatchEvent::Deleted);
    assert_eq!(start.elapsed(), TIMEOUT);
    // Still cut off: the owner cannot tell yet.
    assert_eq!(owner.get("/").await, Err(CoordError::ConnectionLoss));
    assert_eq!(*owner.session_state().borrow(), SessionState::Suspended);
    owner.heal();
    assert_eq!(*owner.session_state().borrow(), SessionState::Expired);
    assert_eq!(owner.get("/").await, Err(CoordError::SessionExpired));
}

#[tokio::test(start_paused = true)]
async fn expiry_is_immediate_and_ends_the_owners_watches() {
    let (owner, other) = pair().await;
    let (_, mine) = owner.get_and_watch("/e").await.unwrap();
    let (_, theirs) = other.get_and_watch("/e").await.unwrap();
    owner.expire();
    assert_eq!(
        mine.changed().await,
        WatchEvent::Session(SessionState::Expired)
    );
    assert_eq!(theirs.changed().await, WatchEvent::Deleted);
    assert_eq!(owner.close().await, Err(CoordError::SessionExpired));
}

#[tokio::test(start_paused = true)]
async fn operations_can_be_delayed_and_failed() {
    let (owner, _) = pair().await;
    owner.delay_operations(Duration::from_millis(300));
    let start = Instant::now();
    owner.get("/e").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    owner.delay_operations(Duration::ZERO);
    owner.fail_operations(2, CoordError::ConnectionLoss);
    assert_eq!(owner.get("/e").await, Err(CoordError::ConnectionLoss));
    assert_eq!(
        owner.set("/e", b"", None).await,
        Err(CoordError::ConnectionLoss)
    );
    owner.get("/e").await.unwrap();
    // A delayed operation whose session expires meanwhile fails.
    owner.delay_operations(Duration::from_secs(1));
    let o = owner.clone();
    let op = tokio::spawn(async move { o.get("/e").await });
    tokio::task::yield_now().await;
    owner.expire();
    assert_eq!(op.await.unwrap(), Err(CoordError::SessionExpired));
}
