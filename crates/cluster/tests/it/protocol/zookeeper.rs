//! The start-up, kill-mid-task, zombie, two-deaths and outage scenarios on
//! a real ZooKeeper: several nodes in this process, each with its own
//! session, on the test script's server (a chroot per test) or, for the
//! outages, on a server of the test's own that is stopped and restarted.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crawlkeeper_cluster::{CoordError, Coordinator, Layout, SessionState, ZkCoordinator};
use crawlkeeper_model::cluster::{CrawlerRole, HeartState, Heartbeat};
use crawlkeeper_testsite::zookeeper::{ZkServer, shared_address};

use crate::protocol::harness::*;
use crate::protocol::stalled::Stalled;
use crate::zk_kill::Relays;

pub struct Zk {
    timeout: Duration,
    relays: Arc<Relays>,
}

impl Backend for Zk {
    type C = Stalled<ZkCoordinator>;

    /// Through a relay of its own, so that it can be killed.
    fn open(&self) -> Pin<Box<dyn Future<Output = Result<Self::C, CoordError>> + Send>> {
        let (relays, timeout) = (self.relays.clone(), self.timeout);
        Box::pin(async move { Ok(Stalled::new(relays.connect(timeout).await?)) })
    }

    /// As when its process crashes: the server hears nothing more.
    async fn kill(&self, c: &Self::C) {
        self.relays.kill(&c.inner).await;
    }
}

static N: AtomicU32 = AtomicU32::new(0);

async fn cluster(address: &str, session: Duration, runners: usize, backups: usize) -> Cluster<Zk> {
    let root = format!(
        "/protocol-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let backend = Zk {
        timeout: session,
        relays: Arc::new(Relays::new(address, &root)),
    };
    Cluster {
        observer: std::sync::Mutex::new(backend.open().await.unwrap()),
        backend: Arc::new(backend),
        layout: Layout::new(GROUP).unwrap(),
        runner: FakeRunner {
            runs: Default::default(),
            work: Duration::from_millis(300),
        },
        runners,
        backups,
        // Generous judgement: these tests share two cores with the rest of the
        // suite; a killed session ends when the server expires it.
        heartbeat: Heartbeat::new(Duration::from_millis(200), Duration::from_secs(2), 3).unwrap(),
        formation_timeout: Duration::from_secs(3),
        leave_timeout: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_start_up_and_a_late_joiner() {
    let c = cluster(&shared_address(), Duration::from_secs(4), 2, 1).await;
    let _m = [c.start(3).await, c.start(1).await, c.start(2).await];
    c.elected(2).await;
    let g = c.group().await;
    assert_eq!(g.current_runner, names(&["c_1", "c_2"]));
    assert_eq!(g.current_backup, names(&["c_3"]));
    assert_eq!(g.standby_id, 3);
    c.until("roles", LIMIT, || async {
        c.node_state(&n("c_3")).await.role == CrawlerRole::BackupRunner
    })
    .await;
    let _late = c.start(0).await;
    c.until("the late joiner", LIMIT, || async {
        c.group().await.total_crawler == 4
    })
    .await;
    assert_eq!(c.group().await.standby_id, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_a_killed_runners_task_is_finished_by_the_backup() {
    let c = cluster(&shared_address(), Duration::from_secs(4), 1, 1).await;
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 6).await;
    c.recorded(&n("c_1"), 2).await;
    c.kill(&m1).await;
    c.finished(&n("c_2")).await;
    let g = c.group().await;
    assert_eq!(
        (g.current_runner.clone(), g.fail_runner.clone()),
        (names(&["c_2"]), names(&["c_1"]))
    );
    assert_eq!(
        c.heartbeat(&n("c_1")).await.healthy_state,
        HeartState::Asystole
    );
    assert_eq!(recorded(&c.task(&n("c_2")).await.0), 6);
    each_ran_once(&c, 6, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_a_zombie_is_fenced_and_rejoins_as_a_backup() {
    let c = cluster(&shared_address(), Duration::from_secs(4), 1, 1).await;
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 8).await;
    c.recorded(&n("c_1"), 2).await;
    // Paused longer than its session: its requests stall, the server ends
    // its session.
    let zombie = m1.session();
    zombie.pause();
    c.backend.kill(&zombie).await;
    c.runners_become("the take-over", &["c_2"]).await;
    zombie.resume();
    c.finished(&n("c_2")).await;
    c.until("the zombie's return", LIMIT, || async {
        c.group().await.current_backup == names(&["c_1"])
    })
    .await;
    assert!(c.task(&n("c_1")).await.0.running_content.is_empty());
    assert_eq!(recorded(&c.task(&n("c_2")).await.0), 8);
    each_ran_once(&c, 8, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_two_runners_dying_at_once_are_both_replaced() {
    let c = cluster(&shared_address(), Duration::from_secs(4), 3, 2).await;
    let mut m = Vec::new();
    for i in 1..=5 {
        m.push(c.start(i).await);
    }
    c.elected(3).await;
    c.give(&n("c_1"), 4).await;
    c.give(&n("c_2"), 4).await;
    c.recorded(&n("c_2"), 1).await;
    c.kill(&m[0]).await;
    c.kill(&m[1]).await;
    c.runners_become("both take-overs", &["c_3", "c_4", "c_5"])
        .await;
    // Every item of both tasks is recorded once, wherever it ended: a task
    // that finished before its Runner was killed keeps its record in that
    // Runner's node; one taken over is finished by the heir.
    let recorded_everywhere = || async {
        let mut total = 0;
        for r in ["c_1", "c_2", "c_3", "c_4", "c_5"] {
            total += recorded(&c.task(&n(r)).await.0);
        }
        total
    };
    let start = tokio::time::Instant::now();
    while recorded_everywhere().await < 8 {
        if start.elapsed() > Duration::from_secs(120) {
            let mut tasks = Vec::new();
            for r in ["c_1", "c_2", "c_3", "c_4", "c_5"] {
                let t = c.task(&n(r)).await.0;
                tasks.push((
                    r,
                    t.running_content.len(),
                    t.result_detail.len(),
                    t.running_status,
                    t.owner,
                    t.epoch,
                ));
            }
            panic!(
                "items not all recorded: group {:?}; tasks {tasks:?}",
                c.group().await
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let g = c.group().await;
    assert!(
        g.fail_runner.contains(&n("c_1")) && g.fail_runner.contains(&n("c_2")),
        "{g:?}"
    );
    each_ran_once(&c, 8, 2);
}

/// The ZooKeeper session id a member uses now.
fn session_id(m: &Member<Stalled<ZkCoordinator>>) -> i64 {
    m.session().inner.session_id().unwrap()
}

/// The server stopped while a Runner runs a task, then restarted; when
/// `expire`, only once every member's client has declared its session
/// expired (the outage is then longer than the session timeout, by the
/// clients' own clocks). Nobody dies of it and every item runs once; the
/// members keep their sessions through a short outage and register new
/// ones after a long one.
async fn outage(session: Duration, expire: bool) {
    let server = Arc::new(tokio::task::spawn_blocking(ZkServer::start).await.unwrap());
    let c = cluster(server.address(), session, 1, 1).await;
    let m1 = c.start(1).await;
    let m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 12).await;
    c.recorded(&n("c_1"), 2).await;
    let before = [session_id(&m1), session_id(&m2)];
    let s = server.clone();
    tokio::task::spawn_blocking(move || s.halt()).await.unwrap();
    if expire {
        for m in [&m1, &m2] {
            let mut state = m.session().inner.session_state();
            tokio::time::timeout(LIMIT, state.wait_for(|s| *s == SessionState::Expired))
                .await
                .unwrap_or_else(|_| panic!("{} not expired within {LIMIT:?}", m.name))
                .unwrap();
        }
    }
    let s = server.clone();
    tokio::task::spawn_blocking(move || s.restart())
        .await
        .unwrap();
    c.finished(&n("c_1")).await;
    let after = [session_id(&m1), session_id(&m2)];
    if expire {
        assert!(
            before.iter().zip(&after).all(|(b, a)| b != a),
            "every member registered again on a new session: {before:?} -> {after:?}"
        );
        for m in ["c_1", "c_2"] {
            assert!(
                exists(&c.obs(), &c.layout.node_state(&n(m))).await,
                "{m} is registered again"
            );
        }
    } else {
        assert_eq!(before, after, "the same sessions rode the outage out");
    }
    let g = c.group().await;
    assert!(
        g.fail_crawler.is_empty(),
        "nobody died of the outage: {g:?}"
    );
    assert_eq!(g.current_runner, names(&["c_1"]));
    assert_eq!(recorded(&c.task(&n("c_1")).await.0), 12);
    each_ran_once(&c, 12, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_an_outage_shorter_than_the_session_timeout_changes_nothing() {
    outage(Duration::from_secs(20), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_an_outage_longer_than_the_session_timeout_makes_nodes_register_again() {
    outage(Duration::from_secs(1), true).await;
}
