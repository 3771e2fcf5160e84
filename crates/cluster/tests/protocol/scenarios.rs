//! The scenarios of the protocol.

use std::time::Duration;

use crawlkeeper_model::cluster::{CrawlerRole, HeartState, TaskState};

use crate::harness::*;

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test(start_paused = true)]
async fn start_up_elects_the_smallest_indices_and_a_late_joiner_stands_by() {
    let c = Cluster::new(2, 1, Duration::from_secs(1));
    let _m3 = c.start(3).await;
    let _m1 = c.start(1).await;
    let _m2 = c.start(2).await;
    c.until("the election", LIMIT, || async {
        c.group().await.total_runner == 2
    })
    .await;
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
    c.until("the election", LIMIT, || async {
        c.group().await.total_runner == 1
    })
    .await;
    c.give(&n("c_1"), 5).await;
    c.until("the task", LIMIT, || async {
        c.task(&n("c_1")).await.0.running_status == TaskState::Done
    })
    .await;
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
    c.until("the election", LIMIT, || async {
        c.group().await.total_runner == 1
    })
    .await;
    c.give(&n("c_1"), 6).await;
    c.until("two items", LIMIT, || async {
        c.task(&n("c_1")).await.0.result_detail.len() == 2
    })
    .await;
    m1.kill();
    c.until("the take-over", LIMIT, || async {
        c.group().await.current_runner == names(&["c_2"])
    })
    .await;
    c.until("the task", LIMIT, || async {
        c.task(&n("c_2")).await.0.running_status == TaskState::Done
    })
    .await;
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
    c.until("the election", LIMIT, || async {
        c.group().await.total_runner == 1
    })
    .await;
    c.give(&n("c_1"), 8).await;
    c.until("two items", LIMIT, || async {
        c.task(&n("c_1")).await.0.result_detail.len() == 2
    })
    .await;
    // A long pause: its session stops refreshing and its requests stall;
    // it does not know.
    m1.session().freeze();
    m1.session().delay_operations(Duration::from_secs(10));
    c.until("the take-over", LIMIT, || async {
        c.group().await.current_runner == names(&["c_2"])
    })
    .await;
    c.until("the task", LIMIT, || async {
        c.task(&n("c_2")).await.0.running_status == TaskState::Done
    })
    .await;
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
