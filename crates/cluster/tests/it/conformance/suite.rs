//! The tests, written once against the `Coordinator` trait. Waits are on
//! signals (watches, session state); a generous timeout only turns a hang
//! into a failure.

use std::time::Duration;

use crawlkeeper_cluster::{
    CoordError, Coordinator, CreateMode, ErrorClass, Lock, MAX_VALUE_BYTES, Op, OpResult,
    SessionState, WatchEvent,
};

use crate::conformance::backends::Backend;

const GUARD: Duration = Duration::from_secs(20);

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn wait_state<C: Coordinator>(c: &C, want: SessionState) {
    let mut rx = c.session_state();
    within(
        &format!("session state {want:?}"),
        rx.wait_for(|s| *s == want),
    )
    .await
    .unwrap();
}

pub async fn versions_guard_every_write(b: &impl Backend) {
    let c = b.session().await;
    assert_eq!(
        c.create("/a", b"1", CreateMode::Persistent).await.unwrap(),
        "/a"
    );
    assert_eq!(c.get("/a").await.unwrap(), (b"1".to_vec(), 0));
    assert_eq!(c.set("/a", b"2", Some(0)).await.unwrap(), 1);
    assert_eq!(
        c.set("/a", b"3", Some(0)).await,
        Err(CoordError::BadVersion("/a".into()))
    );
    assert_eq!(c.get("/a").await.unwrap(), (b"2".to_vec(), 1));
    assert_eq!(c.set("/a", b"4", None).await.unwrap(), 2);
    assert_eq!(
        c.create("/a", b"", CreateMode::Persistent).await,
        Err(CoordError::NodeExists("/a".into()))
    );
    assert_eq!(
        c.create("/x/y", b"", CreateMode::Persistent).await,
        Err(CoordError::NoNode("/x/y".into()))
    );
    c.create("/a/child", b"", CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(
        c.delete("/a", Some(2)).await,
        Err(CoordError::NotEmpty("/a".into()))
    );
    c.delete("/a/child", None).await.unwrap();
    assert_eq!(
        c.delete("/a", Some(1)).await,
        Err(CoordError::BadVersion("/a".into()))
    );
    c.delete("/a", Some(2)).await.unwrap();
    assert_eq!(c.get("/a").await, Err(CoordError::NoNode("/a".into())));
    assert_eq!(c.exists("/a").await.unwrap(), None);
    assert_eq!(
        c.set("/a", b"", None).await.unwrap_err().class(),
        ErrorClass::Outcome
    );
    c.create_all("/deep/er/path").await.unwrap();
    c.create_all("/deep/er/path").await.unwrap();
    assert_eq!(c.exists("/deep/er/path").await.unwrap(), Some(0));
}

pub async fn compare_and_set_counts_every_increment_under_contention(b: &impl Backend) {
    let c = b.session().await;
    c.create("/counter", b"0", CreateMode::Persistent)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let s = b.session().await;
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..10 {
                loop {
                    let (v, version) = s.get("/counter").await.unwrap();
                    let n: u32 = String::from_utf8(v).unwrap().parse().unwrap();
                    tokio::task::yield_now().await;
                    match s
                        .set("/counter", (n + 1).to_string().as_bytes(), Some(version))
                        .await
                    {
                        Ok(_) => break,
                        Err(CoordError::BadVersion(_)) => conflicts += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            conflicts
        }));
    }
    for t in tasks {
        within("writers", t).await.unwrap();
    }
    let (v, version) = c.get("/counter").await.unwrap();
    assert_eq!(v, b"40");
    assert_eq!(version, 40);
}

pub async fn ephemeral_nodes_vanish_when_their_session_expires(b: &impl Backend) {
    let owner = b.session().await;
    let other = b.session().await;
    owner
        .create("/e", b"alive", CreateMode::Ephemeral)
        .await
        .unwrap();
    owner
        .create("/p", b"", CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(
        owner.create("/e/child", b"", CreateMode::Persistent).await,
        Err(CoordError::NoChildrenForEphemerals("/e/child".into()))
    );
    let (value, watch) = other.get_and_watch("/e").await.unwrap();
    assert_eq!(value, Some((b"alive".to_vec(), 0)));
    b.expire(&owner).await;
    assert_eq!(
        within("the ephemeral's deletion", watch.changed()).await,
        WatchEvent::Deleted
    );
    assert_eq!(other.exists("/e").await.unwrap(), None);
    assert_eq!(other.exists("/p").await.unwrap(), Some(0));
    wait_state(&owner, SessionState::Expired).await;
    let err = owner.get("/p").await.unwrap_err();
    assert_eq!(err, CoordError::SessionExpired);
    assert!(err.is_fatal());
}

pub async fn sequential_nodes_are_ordered(b: &impl Backend) {
    let s1 = b.session().await;
    let s2 = b.session().await;
    s1.create("/q", b"", CreateMode::Persistent).await.unwrap();
    let mut created = Vec::new();
    for i in 0..6 {
        let (s, mode) = if i % 2 == 0 {
            (&s1, CreateMode::PersistentSequential)
        } else {
            (&s2, CreateMode::EphemeralSequential)
        };
        created.push(s.create("/q/item-", b"", mode).await.unwrap());
    }
    for (i, path) in created.iter().enumerate() {
        assert!(path.starts_with("/q/item-"), "{path}");
        assert_eq!(path.len(), "/q/item-".len() + 10, "{path}");
        if i > 0 {
            assert!(created[i - 1] < *path, "{created:?}");
        }
    }
    let names: Vec<String> = created.iter().map(|p| p[3..].to_owned()).collect();
    assert_eq!(s2.children("/q").await.unwrap(), names);
}

pub async fn watches_fire_once_per_change(b: &impl Backend) {
    let writer = b.session().await;
    let reader = b.session().await;
    // Creation of an absent node.
    let (value, created) = reader.get_and_watch("/w").await.unwrap();
    assert_eq!(value, None);
    writer
        .create("/w", b"0", CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(
        within("creation", created.changed()).await,
        WatchEvent::Created
    );
    // Two watches on one node both fire, once, for one change.
    let (_, w1) = reader.get_and_watch("/w").await.unwrap();
    let (_, w2) = writer.get_and_watch("/w").await.unwrap();
    writer.set("/w", b"1", None).await.unwrap();
    writer.set("/w", b"2", None).await.unwrap();
    assert_eq!(within("w1", w1.changed()).await, WatchEvent::DataChanged);
    assert_eq!(within("w2", w2.changed()).await, WatchEvent::DataChanged);
    // A watch set after those changes waits for the next one.
    let (value, w3) = reader.get_and_watch("/w").await.unwrap();
    assert_eq!(value, Some((b"2".to_vec(), 2)));
    let reader2 = reader.clone();
    let next = tokio::spawn(async move { w3.changed().await });
    writer.set("/w", b"3", None).await.unwrap();
    assert_eq!(within("w3", next).await.unwrap(), WatchEvent::DataChanged);
    assert_eq!(reader2.get("/w").await.unwrap().1, 3);
    // Children.
    let (children, cw) = reader.children_and_watch("/w").await.unwrap();
    assert!(children.is_empty());
    writer
        .create("/w/c", b"", CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(
        within("child", cw.changed()).await,
        WatchEvent::ChildrenChanged
    );
    let (children, cw) = reader.children_and_watch("/w").await.unwrap();
    assert_eq!(children, ["c"]);
    let (_, dw) = reader.get_and_watch("/w/c").await.unwrap();
    writer.delete("/w/c", None).await.unwrap();
    assert_eq!(
        within("child gone", cw.changed()).await,
        WatchEvent::ChildrenChanged
    );
    assert_eq!(within("deletion", dw.changed()).await, WatchEvent::Deleted);
    assert_eq!(
        reader.children_and_watch("/nothing").await.unwrap_err(),
        CoordError::NoNode("/nothing".into())
    );
}

pub async fn transactions_are_atomic(b: &impl Backend) {
    let c = b.session().await;
    c.create("/t", b"", CreateMode::Persistent).await.unwrap();
    c.create("/t/b", b"b0", CreateMode::Persistent)
        .await
        .unwrap();
    let (_, watch) = c.get_and_watch("/t/a").await.unwrap();
    let failed = c
        .multi(&[
            Op::Create {
                path: "/t/a".into(),
                data: b"a".to_vec(),
                mode: CreateMode::Persistent,
            },
            Op::Set {
                path: "/t/b".into(),
                data: b"b1".to_vec(),
                version: Some(5),
            },
        ])
        .await;
    assert_eq!(failed, Err(CoordError::BadVersion("/t/b".into())));
    assert_eq!(c.exists("/t/a").await.unwrap(), None);
    assert_eq!(c.get("/t/b").await.unwrap(), (b"b0".to_vec(), 0));
    let done = c
        .multi(&[
            Op::Check {
                path: "/t/b".into(),
                version: 0,
            },
            Op::Create {
                path: "/t/a".into(),
                data: b"a".to_vec(),
                mode: CreateMode::Persistent,
            },
            Op::Create {
                path: "/t/s-".into(),
                data: vec![],
                mode: CreateMode::PersistentSequential,
            },
            Op::Set {
                path: "/t/b".into(),
                data: b"b1".to_vec(),
                version: Some(0),
            },
            Op::Delete {
                path: "/t/a".into(),
                version: Some(0),
            },
        ])
        .await
        .unwrap();
    assert_eq!(done.len(), 5);
    assert_eq!(done[0], OpResult::Check);
    assert_eq!(done[1], OpResult::Create("/t/a".into()));
    assert!(matches!(&done[2], OpResult::Create(p) if p.starts_with("/t/s-")));
    assert_eq!(done[3], OpResult::Set(1));
    assert_eq!(done[4], OpResult::Delete);
    // The failed transaction raised no event; the committed one did.
    assert_eq!(within("commit", watch.changed()).await, WatchEvent::Created);
}

pub async fn the_lock_is_exclusive_and_released_on_session_loss(b: &impl Backend) {
    let holder = b.session().await;
    let guard = Lock::new(holder.clone(), "/locks/group")
        .acquire(Duration::from_secs(5))
        .await
        .unwrap();
    assert!(guard.path().starts_with("/locks/group/lock-"));
    let waiter = b.session().await;
    let lock = Lock::new(waiter.clone(), "/locks/group");
    let pending = tokio::spawn(async move { lock.acquire(Duration::from_secs(15)).await });
    // The waiter queues behind the holder.
    let mut rx = waiter.children_and_watch("/locks/group").await.unwrap();
    while rx.0.len() < 2 {
        within("the waiter to queue", rx.1.changed()).await;
        rx = waiter.children_and_watch("/locks/group").await.unwrap();
    }
    assert!(!pending.is_finished());
    b.expire(&holder).await;
    let got = within("the lock after the holder's session ended", pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(waiter.children("/locks/group").await.unwrap().len(), 1);
    got.release().await.unwrap();
    assert!(waiter.children("/locks/group").await.unwrap().is_empty());
    drop(guard);

    // Exclusive: read-modify-write without versions, under the lock, from
    // four sessions, loses no update.
    waiter
        .create("/count", b"0", CreateMode::Persistent)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let s = b.session().await;
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(s.clone(), "/locks/count");
            for _ in 0..5 {
                lock.run(Duration::from_secs(15), async {
                    let (v, _) = s.get("/count").await.unwrap();
                    let n: u32 = String::from_utf8(v).unwrap().parse().unwrap();
                    tokio::task::yield_now().await;
                    s.set("/count", (n + 1).to_string().as_bytes(), None)
                        .await
                        .unwrap();
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        within("lock users", t).await.unwrap();
    }
    assert_eq!(waiter.get("/count").await.unwrap().0, b"20");
}

pub async fn the_lock_times_out(b: &impl Backend) {
    let holder = b.session().await;
    let _guard = Lock::new(holder, "/l")
        .acquire(Duration::from_secs(5))
        .await
        .unwrap();
    let other = b.session().await;
    let err = Lock::new(other.clone(), "/l")
        .acquire(Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CoordError::LockTimeout {
            path: "/l".into(),
            waited: Duration::from_millis(300)
        }
    );
    assert!(err.is_retryable());
    // The timed-out contender left the queue.
    assert_eq!(other.children("/l").await.unwrap().len(), 1);
}

pub async fn large_values_are_rejected_cleanly(b: &impl Backend) {
    let c = b.session().await;
    c.create("/big", b"small", CreateMode::Persistent)
        .await
        .unwrap();
    let big = vec![b'x'; MAX_VALUE_BYTES + 1];
    let err = c.set("/big", &big, None).await.unwrap_err();
    assert!(matches!(err, CoordError::TooLarge { size, .. } if size == MAX_VALUE_BYTES + 1));
    assert!(err.to_string().contains("control state only"), "{err}");
    assert!(matches!(
        c.create("/big2", &big, CreateMode::Persistent).await,
        Err(CoordError::TooLarge { .. })
    ));
    assert!(matches!(
        c.multi(&[Op::Set {
            path: "/big".into(),
            data: big,
            version: None
        }])
        .await,
        Err(CoordError::TooLarge { .. })
    ));
    // Nothing changed, and the session is fine.
    assert_eq!(c.get("/big").await.unwrap(), (b"small".to_vec(), 0));
    assert_eq!(c.exists("/big2").await.unwrap(), None);
    let at_limit = vec![b'y'; MAX_VALUE_BYTES];
    c.set("/big", &at_limit, Some(0)).await.unwrap();
    assert_eq!(c.get("/big").await.unwrap().0.len(), MAX_VALUE_BYTES);
}

pub async fn bad_paths_are_rejected(b: &impl Backend) {
    let c = b.session().await;
    for bad in ["", "relative", "/trailing/", "/double//slash", "/dot/./x"] {
        assert!(
            matches!(
                c.create(bad, b"", CreateMode::Persistent).await,
                Err(CoordError::InvalidPath { .. })
            ),
            "{bad:?}"
        );
        assert!(
            matches!(c.get(bad).await, Err(CoordError::InvalidPath { .. })),
            "{bad:?}"
        );
    }
}

pub async fn a_closed_session_takes_its_ephemeral_nodes(b: &impl Backend) {
    let owner = b.session().await;
    let other = b.session().await;
    owner
        .create("/bye", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, watch) = other.get_and_watch("/bye").await.unwrap();
    owner.close().await.unwrap();
    assert_eq!(
        within("deletion", watch.changed()).await,
        WatchEvent::Deleted
    );
    assert!(owner.get("/bye").await.unwrap_err().is_fatal());
}

pub async fn meta_data_lives_at_smoothcrawler_clusters_paths(b: &impl Backend) {
    use crawlkeeper_cluster::{Layout, MetaError, metadata};
    use crawlkeeper_model::cluster::{
        CrawlerRole, GroupState, Heartbeat, NodeName, NodeState, Task,
    };

    let c = b.session().await;
    let layout = Layout::new("sc-crawler-cluster").unwrap();
    let name: NodeName = "sc-crawler_1".parse().unwrap();
    c.create_all(&layout.node(&name)).await.unwrap();
    c.create_all(&path_parent(&layout.group_state()))
        .await
        .unwrap();
    let state = NodeState {
        group: "sc-crawler-cluster".into(),
        role: CrawlerRole::Initial,
    };
    metadata::create(
        &c,
        &layout.node_state(&name),
        &state,
        CreateMode::Persistent,
    )
    .await
    .unwrap();
    metadata::create(
        &c,
        &layout.task(&name),
        &Task::default(),
        CreateMode::Persistent,
    )
    .await
    .unwrap();
    metadata::create(
        &c,
        &layout.heartbeat(&name),
        &Heartbeat::default(),
        CreateMode::Persistent,
    )
    .await
    .unwrap();
    let group = GroupState {
        total_crawler: 1,
        current_crawler: vec![name.clone()],
        ..GroupState::default()
    };
    metadata::create(&c, &layout.group_state(), &group, CreateMode::Persistent)
        .await
        .unwrap();

    assert_eq!(
        c.children("/crawlkeeper/sc-crawler-cluster/node/sc-crawler_1")
            .await
            .unwrap(),
        ["heartbeat", "state", "task"]
    );
    let raw = c
        .get("/crawlkeeper/sc-crawler-cluster/node/sc-crawler_1/state")
        .await
        .unwrap()
        .0;
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&raw).unwrap(),
        serde_json::json!({"group": "sc-crawler-cluster", "role": "initial"})
    );
    let (read, version) =
        metadata::read::<GroupState>(&c, "/crawlkeeper/sc-crawler-cluster/group/state")
            .await
            .unwrap()
            .unwrap();
    assert_eq!(read, group);
    let runner = NodeState {
        role: CrawlerRole::Runner,
        ..state
    };
    metadata::write(&c, &layout.node_state(&name), &runner, Some(0))
        .await
        .unwrap();
    assert!(matches!(
        metadata::write(&c, &layout.node_state(&name), &runner, Some(0)).await,
        Err(MetaError::Coord(CoordError::BadVersion(_)))
    ));
    assert_eq!(version, 0);
    assert!(
        metadata::read::<Task>(&c, "/nowhere")
            .await
            .unwrap()
            .is_none()
    );

    c.set(
        &layout.heartbeat(&name),
        br#"{"update_time": "soon"}"#,
        None,
    )
    .await
    .unwrap();
    let err = metadata::read::<Heartbeat>(&c, &layout.heartbeat(&name))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("meta-data at /crawlkeeper/sc-crawler-cluster/node/sc-crawler_1/heartbeat is not a valid Heartbeat"),
        "{err}"
    );
}

fn path_parent(p: &str) -> String {
    p[..p.rfind('/').unwrap()].to_owned()
}
