//! The scenarios of the protocol.

use std::time::Duration;

use crawlkeeper_cluster::Coordinator;
use crawlkeeper_cluster::node::{Exit, NodeConfig};
use crawlkeeper_model::cluster::{CrawlerRole, HeartState, TaskState};

use crate::protocol::harness::*;

#[tokio::test(start_paused = true)]
async fn start_up_elects_the_smallest_indices_and_a_late_joiner_stands_by() {
    let c = Cluster::new(2, 1, Duration::from_secs(1));
    let _m3 = c.start(3).await;
    let _m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(2).await;
    let g = c.group().await;
    assert_eq!(g.current_runner, names(&["c_1", "c_2"]));
    assert_eq!(g.current_backup, names(&["c_3"]));
    assert_eq!(g.current_crawler, names(&["c_1", "c_2", "c_3"]));
    assert_eq!((g.total_crawler, g.total_backup, g.standby_id), (3, 1, 3));
    for (name, role) in [
        ("c_1", CrawlerRole::Runner),
        ("c_2", CrawlerRole::Runner),
        ("c_3", CrawlerRole::BackupRunner),
    ] {
        c.until("roles", LIMIT, || async {
            c.node_state(&n(name)).await.role == role
        })
        .await;
    }
    c.until("beats", LIMIT, || async {
        c.heartbeat(&n("c_1")).await.healthy_state == HeartState::Healthy
    })
    .await;

    let _m0 = c.start(0).await;
    c.until("the late joiner", LIMIT, || async {
        c.group().await.total_crawler == 4
    })
    .await;
    let g = c.group().await;
    assert_eq!(g.current_backup, names(&["c_3", "c_0"]));
    assert_eq!(g.standby_id, 3, "a late joiner never resets standby_id");
    assert_eq!(g.current_runner, names(&["c_1", "c_2"]));
}

#[tokio::test(start_paused = true)]
async fn a_runner_runs_every_item_of_its_task_once_and_records_each() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let _m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 5).await;
    c.finished(&n("c_1")).await;
    let (t, _) = c.task(&n("c_1")).await;
    assert_eq!(recorded(&t), 5);
    assert_eq!(t.running_result.success_count, 5);
    assert!(t.result_detail.iter().all(|d| d.status_code == Some(200)));
    assert!(c.runs().values().all(|&r| r == 1), "{:?}", c.runs());
    assert_eq!(c.runs().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_killed_runners_task_is_taken_over_and_finished_once() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 6).await;
    c.until("two items", LIMIT, || async {
        c.task(&n("c_1")).await.0.result_detail.len() == 2
    })
    .await;
    c.kill(&m1).await;
    c.runners_become("the take-over", &["c_2"]).await;
    c.finished(&n("c_2")).await;
    let g = c.group().await;
    assert_eq!(g.fail_runner, names(&["c_1"]));
    assert_eq!(g.fail_crawler, names(&["c_1"]));
    assert!(g.current_backup.is_empty());
    assert_eq!(c.node_state(&n("c_1")).await.role, CrawlerRole::DeadRunner);
    assert_eq!(c.node_state(&n("c_2")).await.role, CrawlerRole::Runner);
    assert_eq!(
        c.heartbeat(&n("c_1")).await.healthy_state,
        HeartState::Asystole
    );
    let (t, _) = c.task(&n("c_2")).await;
    assert_eq!(recorded(&t), 6, "every item recorded once");
    let (old, _) = c.task(&n("c_1")).await;
    assert!(old.running_content.is_empty() && old.epoch == 1 && old.owner == Some(n("c_2")));
    let runs = c.runs();
    assert_eq!(runs.len(), 6);
    let twice: Vec<_> = runs.iter().filter(|(_, r)| **r > 1).collect();
    assert!(
        twice.len() <= 1,
        "only the item in flight may run twice: {runs:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_zombie_runner_is_fenced_and_rejoins_as_a_backup() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 8).await;
    c.until("two items", LIMIT, || async {
        c.task(&n("c_1")).await.0.result_detail.len() == 2
    })
    .await;
    // A long pause: its session stops refreshing and its requests stall;
    // it does not know.
    m1.session().freeze();
    m1.session().delay_operations(Duration::from_secs(10));
    c.runners_become("the take-over", &["c_2"]).await;
    c.finished(&n("c_2")).await;
    m1.session().delay_operations(Duration::ZERO);
    c.until("the zombie's return as a backup", LIMIT, || async {
        c.group().await.current_backup == names(&["c_1"])
    })
    .await;
    let (t, _) = c.task(&n("c_2")).await;
    assert_eq!(recorded(&t), 8);
    let runs = c.runs();
    assert_eq!(runs.len(), 8);
    assert!(runs.values().filter(|&&r| r > 1).count() <= 1, "{runs:?}");
    assert_eq!(
        c.node_state(&n("c_1")).await.role,
        CrawlerRole::BackupRunner
    );
    let (old, _) = c.task(&n("c_1")).await;
    assert!(old.running_content.is_empty(), "the zombie holds no task");
}

#[tokio::test(start_paused = true)]
async fn two_runners_dying_at_once_are_replaced_in_index_order() {
    let c = Cluster::new(3, 2, Duration::from_secs(1));
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
    let g = c.group().await;
    assert_eq!(g.fail_runner, names(&["c_1", "c_2"]));
    assert!(g.current_backup.is_empty());
    assert_eq!((g.total_crawler, g.total_runner, g.total_backup), (3, 3, 0));
    // c_1's task went to c_4 (the primary), c_2's to c_5.
    for (heir, tag) in [("c_4", "c_1"), ("c_5", "c_2")] {
        c.finished(&n(heir)).await;
        let (t, _) = c.task(&n(heir)).await;
        assert_eq!(recorded(&t), 4);
        assert!(
            t.running_content[0].url.contains(tag),
            "{heir} got {tag}'s task"
        );
    }
    each_ran_once(&c, 8, 2);
}

#[tokio::test(start_paused = true)]
async fn a_dead_primary_backup_is_recorded_and_the_next_backup_handles_the_next_death() {
    let c = Cluster::new(1, 2, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let m2 = c.start(2).await;
    let _m3 = c.start(3).await;
    c.until("the election", LIMIT, || async {
        c.group().await.standby_id == 2
    })
    .await;
    c.kill(&m2).await;
    c.until("the dead backup", LIMIT, || async {
        c.group().await.fail_backup == names(&["c_2"])
    })
    .await;
    let g = c.group().await;
    assert_eq!(g.standby_id, 3);
    assert_eq!(g.current_backup, names(&["c_3"]));
    assert_eq!(
        c.node_state(&n("c_2")).await.role,
        CrawlerRole::DeadBackupRunner
    );
    assert_eq!(
        c.heartbeat(&n("c_2")).await.healthy_state,
        HeartState::Asystole
    );

    c.give(&n("c_1"), 3).await;
    c.recorded(&n("c_1"), 1).await;
    c.kill(&m1).await;
    c.runners_become("the take-over", &["c_3"]).await;
    c.finished(&n("c_3")).await;
    assert_eq!(recorded(&c.task(&n("c_3")).await.0), 3);
    each_ran_once(&c, 3, 1);
}

#[tokio::test(start_paused = true)]
async fn with_no_backup_left_a_dead_runners_task_is_queued_and_claimed() {
    let c = Cluster::new(2, 0, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(2).await;
    c.give(&n("c_1"), 4).await;
    c.recorded(&n("c_1"), 2).await;
    c.kill(&m1).await;
    c.finished(&n("c_2")).await;
    let g = c.group().await;
    assert_eq!(g.current_runner, names(&["c_2"]));
    assert_eq!(g.fail_runner, names(&["c_1"]));
    let (t, _) = c.task(&n("c_2")).await;
    assert_eq!(recorded(&t), 4, "resumed after the last recorded item");
    assert!(
        c.obs()
            .children(&c.layout.queue())
            .await
            .unwrap()
            .is_empty()
    );
    each_ran_once(&c, 4, 1);
}

#[tokio::test(start_paused = true)]
async fn a_graceful_leave_hands_the_task_over_at_once() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 6).await;
    c.recorded(&n("c_1"), 2).await;
    let asked = tokio::time::Instant::now();
    m1.stop.send(true).unwrap();
    c.runners_become("the hand-over", &["c_2"]).await;
    // No heartbeat timeout was waited for: the item in flight (1 s) and a
    // few coordinator round trips.
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    c.finished(&n("c_2")).await;
    let g = c.group().await;
    assert!(
        g.fail_runner.is_empty() && g.fail_crawler.is_empty(),
        "a leave is no failure"
    );
    assert_eq!(g.current_crawler, names(&["c_2"]));
    assert_eq!(
        c.heartbeat(&n("c_1")).await.healthy_state,
        HeartState::ApparentDeath
    );
    assert_eq!(recorded(&c.task(&n("c_2")).await.0), 6);
    each_ran_once(&c, 6, 0);
}

#[tokio::test(start_paused = true)]
async fn a_node_asked_to_stop_while_cut_off_stops_without_leaving_and_its_task_fails_over() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 6).await;
    c.recorded(&n("c_1"), 2).await;
    // The coordinator is out of reach when the stop comes: no leave can be
    // written, and the node must not wait for the coordinator's return.
    m1.session().cut_off();
    let asked = tokio::time::Instant::now();
    m1.stop.send(true).unwrap();
    let exit = tokio::time::timeout(LIMIT, m1.handle)
        .await
        .expect("the node stopped")
        .expect("its run ended without a panic");
    assert_eq!(exit, Exit::Abandoned);
    let leave_timeout = NodeConfig::new(GROUP, n("c_1"), 1, 1).leave_timeout;
    assert!(
        asked.elapsed() <= leave_timeout + Duration::from_secs(3),
        "it stopped at the leave timeout (or when its session expired), not later: {:?}",
        asked.elapsed()
    );
    // As for a crash: its session lapses, the backup takes the task over,
    // nothing is lost.
    c.runners_become("the fail-over", &["c_2"]).await;
    c.finished(&n("c_2")).await;
    assert_eq!(recorded(&c.task(&n("c_2")).await.0), 6);
    assert!(
        c.group().await.fail_runner.contains(&n("c_1")),
        "judged dead, not left"
    );
    each_ran_once(&c, 6, 1);
}

#[tokio::test(start_paused = true)]
async fn a_stopping_node_cut_off_gives_up_at_its_leave_timeout_before_its_session_expires() {
    // The leave timeout, not the session's expiry, ends the wait: shorter
    // than the session timeout (2 s) here.
    let mut c = Cluster::new(1, 1, Duration::from_millis(100));
    c.leave_timeout = Some(Duration::from_millis(500));
    let m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 20).await;
    c.recorded(&n("c_1"), 1).await;
    m1.session().cut_off();
    let asked = tokio::time::Instant::now();
    m1.stop.send(true).unwrap();
    let exit = tokio::time::timeout(LIMIT, m1.handle)
        .await
        .expect("the node stopped")
        .expect("its run ended without a panic");
    assert_eq!(exit, Exit::Abandoned);
    assert!(
        asked.elapsed() < SESSION_TIMEOUT,
        "gave up at its leave timeout, before its session could expire: {:?}",
        asked.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn coordinator_outages_declare_nobody_dead_and_lose_nothing() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let m1 = c.start(1).await;
    let m2 = c.start(2).await;
    c.elected(1).await;
    c.give(&n("c_1"), 10).await;
    c.recorded(&n("c_1"), 1).await;
    // Shorter than the session timeout (2 s): nothing changes.
    for m in [&m1, &m2] {
        m.session().cut_off();
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for m in [&m1, &m2] {
        m.session().heal();
    }
    c.until("progress", LIMIT, || async {
        c.task(&n("c_1")).await.0.result_detail.len() >= 4
    })
    .await;
    // Longer: every session expires; the nodes register again and go on.
    let before = (m1.session().session_id(), m2.session().session_id());
    for m in [&m1, &m2] {
        m.session().cut_off();
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    for m in [&m1, &m2] {
        m.session().heal();
    }
    c.finished(&n("c_1")).await;
    assert_ne!(
        (m1.session().session_id(), m2.session().session_id()),
        before,
        "new sessions"
    );
    let g = c.group().await;
    assert!(
        g.fail_crawler.is_empty(),
        "nobody died of the outage: {g:?}"
    );
    assert_eq!(g.current_runner, names(&["c_1"]));
    assert_eq!(g.current_backup, names(&["c_2"]));
    assert_eq!(recorded(&c.task(&n("c_1")).await.0), 10);
    each_ran_once(&c, 10, 2);
}

#[tokio::test(start_paused = true)]
async fn a_node_restarted_with_its_name_takes_its_place_again() {
    let c = Cluster::new(1, 1, Duration::from_secs(1));
    let _m1 = c.start(1).await;
    let m2 = c.start(2).await;
    c.elected(1).await;
    m2.handle.abort(); // the process dies...
    let _again = c.start(2).await; // ...and is restarted before its session expired
    m2.session().expire(); // the old session ends after the new one started
    tokio::time::sleep(Duration::from_secs(10)).await;
    let g = c.group().await;
    assert_eq!(
        g.current_crawler,
        names(&["c_1", "c_2"]),
        "no duplicate membership"
    );
    assert_eq!(g.current_backup, names(&["c_2"]));
    assert!(g.fail_crawler.is_empty());
}

#[tokio::test(start_paused = true)]
async fn submitted_tasks_go_to_idle_runners_or_the_queue_and_bad_ones_change_nothing() {
    use crawlkeeper_cluster::node::{Placement, SubmitError, submit};

    let c = Cluster::new(2, 0, Duration::from_secs(1));
    let _m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.elected(2).await;
    let mut bad = items_task(2, "bad");
    bad.running_content[1].url = "not a url".into();
    let before = c.task(&n("c_1")).await;
    let err = submit(&c.obs(), GROUP, bad).await.unwrap_err();
    assert!(matches!(err, SubmitError::Invalid(_)));
    assert!(err.to_string().contains("item 1"), "{err}");
    assert_eq!(c.task(&n("c_1")).await, before, "nothing changed");
    assert!(matches!(
        submit(&c.obs(), "no-such-group", items_task(1, "x")).await,
        Err(SubmitError::NoGroup(_))
    ));

    assert_eq!(
        submit(&c.obs(), GROUP, items_task(3, "a")).await.unwrap(),
        Placement::Runner(n("c_1"))
    );
    assert_eq!(
        submit(&c.obs(), GROUP, items_task(3, "b")).await.unwrap(),
        Placement::Runner(n("c_2"))
    );
    assert!(matches!(
        submit(&c.obs(), GROUP, items_task(3, "q")).await.unwrap(),
        Placement::Queued(_)
    ));
    c.until("all three tasks", LIMIT, || async { c.runs().len() == 9 })
        .await;
    c.until("the queue drained", LIMIT, || async {
        c.obs()
            .children(&c.layout.queue())
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    c.until("everything recorded", LIMIT, || async {
        let a = c.task(&n("c_1")).await.0;
        let b = c.task(&n("c_2")).await.0;
        a.running_status == TaskState::Done && b.running_status == TaskState::Done
    })
    .await;
    each_ran_once(&c, 9, 0);
}

#[tokio::test(start_paused = true)]
async fn bad_heartbeat_settings_are_refused_before_anything_is_written() {
    use std::sync::Arc;

    use crawlkeeper_cluster::node::{ClusterNode, Connect, NodeConfig, NodeError};
    use crawlkeeper_cluster::{MemoryCoordinator, MemoryEnsemble};

    let ensemble = MemoryEnsemble::new();
    let e = ensemble.clone();
    let connect: Connect<MemoryCoordinator> =
        Arc::new(move || Box::pin(std::future::ready(Ok(e.connect(SESSION_TIMEOUT)))));
    let mut cfg = NodeConfig::new(GROUP, n("c_1"), 1, 1);
    cfg.heartbeat.update_timeout = cfg.heartbeat.update_time;
    let err = ClusterNode::start(connect, cfg, FakeRunner::default())
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, NodeError::Config(_)), "{err}");
    assert!(
        err.to_string().contains("must be longer than update_time"),
        "{err}"
    );
    let observer = ensemble.connect(SESSION_TIMEOUT);
    assert!(
        observer.children("/").await.unwrap().is_empty(),
        "nothing written"
    );
}
