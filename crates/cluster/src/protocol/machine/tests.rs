//! The machine's life, scripted with no I/O: calls answered from an
//! in-test tree ([`world`]), the clock moved by hand, items finished by
//! the test, faults injected call by call.

#[path = "tests_concurrent.rs"]
mod concurrent;
#[path = "world.rs"]
mod world;

use std::time::Duration;

use crawlkeeper_model::cluster::{CrawlerRole, HeartState, TaskState};
use world::{World, config, items, name, ok};

use super::*;

const BEAT: Duration = Duration::from_millis(500);

/// Two Runners (1, 2) and one backup (3), elected, Runner 1 with a task
/// of `n` items.
fn formed(n: usize) -> (World, [usize; 3]) {
    let mut w = World::new();
    let a = w.add(config("spider-1", 2, 1));
    let b = w.add(config("spider-2", 2, 1));
    let c = w.add(config("spider-3", 2, 1));
    w.run_for(BEAT, 1, &[a, b, c]);
    if n > 0 {
        let path = w.layout().task(&name("spider-1"));
        w.write(&path, &items(n));
        w.run_for(BEAT, 1, &[a, b, c]);
    }
    (w, [a, b, c])
}

#[test]
fn start_registers_the_node_then_joins_under_the_lock() {
    let mut m = Machine::new(config("spider-1", 1, 1), Instant::now()).unwrap();
    let now = World::new().now();
    let commands = m.start(now);
    let [Command::Io(calls)] = commands.as_slice() else {
        panic!("one batch expected: {commands:?}");
    };
    let l = Layout::new(world::GROUP).unwrap();
    let me = name("spider-1");
    assert!(matches!(&calls[3], Call::Put { path, .. } if *path == l.node_state(&me)));
    assert!(matches!(&calls[4], Call::GetOrCreate { path, .. } if *path == l.task(&me)));
    assert_eq!(calls[6], Call::Ephemeral(l.session(&me)));
    assert!(m.awaiting());
    let replies = vec![
        Reply::Done,
        Reply::Done,
        Reply::Done,
        Reply::Version(0),
        Reply::Value(Some((encode(&Task::default()), 0))),
        Reply::Version(0),
        Reply::Done,
    ];
    let commands = m.handle(now, Event::Replied(Ok(replies)));
    let [Command::Io(calls)] = commands.as_slice() else {
        panic!("the join expected: {commands:?}");
    };
    assert!(matches!(calls[0], Call::Lock { .. }));
    assert!(matches!(&calls[1], Call::GetOrCreate { path, .. } if *path == l.group_state()));
}

#[test]
fn an_error_before_the_node_first_joined_ends_it() {
    let mut m = Machine::new(config("spider-1", 1, 1), Instant::now()).unwrap();
    let now = World::new().now();
    m.start(now);
    let commands = m.handle(now, Event::Replied(Err(CoordError::ConnectionLoss)));
    assert!(matches!(
        commands.as_slice(),
        [Command::Exit(Err(NodeError::Coord(
            CoordError::ConnectionLoss
        )))]
    ));
    assert!(m.is_done());
    assert!(
        m.handle(now, Event::Tick).is_empty(),
        "a finished node does nothing"
    );
}

#[test]
fn bad_settings_are_refused() {
    let mut cfg = config("spider-1", 1, 1);
    cfg.heartbeat.update_timeout = cfg.heartbeat.update_time;
    assert!(matches!(
        Machine::new(cfg, Instant::now()),
        Err(NodeError::Config(_))
    ));
}

#[test]
fn the_election_waits_for_every_member_then_makes_the_smallest_indices_runners() {
    let mut w = World::new();
    let c = w.add(config("spider-3", 2, 1));
    let a = w.add(config("spider-1", 2, 1));
    w.run_for(BEAT, 3, &[a, c]);
    assert_eq!(
        w.group().total_runner,
        0,
        "two of three members: no election yet"
    );
    let b = w.add(config("spider-2", 2, 1));
    w.run_for(BEAT, 1, &[a, b, c]);
    let g = w.group();
    assert_eq!(g.current_runner, vec![name("spider-1"), name("spider-2")]);
    assert_eq!(g.current_backup, vec![name("spider-3")]);
    assert_eq!(g.standby_id, 3);
    assert_eq!(w.role("spider-1"), CrawlerRole::Runner);
    assert_eq!(w.role("spider-3"), CrawlerRole::BackupRunner);
    // A late joiner stands by and never moves standby_id.
    let d = w.add(config("spider-0", 2, 1));
    w.run_for(BEAT, 1, &[a, b, c, d]);
    let g = w.group();
    assert_eq!(g.current_backup, vec![name("spider-3"), name("spider-0")]);
    assert_eq!(g.standby_id, 3);
    assert_eq!(w.nodes[d].machine.duty(), Duty::SecondaryBackup);
}

#[test]
fn a_runner_runs_its_items_in_order_and_records_each_once() {
    let (mut w, [a, ..]) = formed(3);
    for position in 0..3 {
        let (&p, _) = w.nodes[a]
            .running
            .first_key_value()
            .expect("an item running");
        assert_eq!(p, position);
        assert_eq!(w.task("spider-1").in_progressing_id, position as i64);
        w.finish(a, ok(200));
    }
    let t = w.task("spider-1");
    assert_eq!(t.running_status, TaskState::Done);
    assert_eq!(t.result_detail.len(), 3);
    assert_eq!(t.result_detail[2].status_code, Some(200));
    assert_eq!(t.running_result.success_count, 3);
    assert_eq!(w.nodes[a].started, vec!["0", "10", "20"]);
    // An outcome delivered twice (a replay) is not recorded twice.
    let before = w.nodes[a].sent.len();
    w.deliver(
        a,
        Event::ItemDone {
            position: 2,
            outcome: Some(ok(200)),
        },
    );
    assert_eq!(w.task("spider-1").result_detail.len(), 3);
    assert!(
        !w.nodes[a].sent[before..]
            .iter()
            .any(|r| matches!(r, Call::Set { .. })),
        "nothing written for a replay"
    );
}

#[test]
fn an_item_whose_runner_panicked_is_recorded_as_an_error_and_not_run_again() {
    let (mut w, [a, ..]) = formed(2);
    w.nodes[a].running.clear();
    w.deliver(
        a,
        Event::ItemDone {
            position: 0,
            outcome: None,
        },
    );
    let t = w.task("spider-1");
    assert_eq!(t.result_detail[0].state, TaskState::Error);
    assert_eq!(t.running_result.fail_count, 1);
    assert_eq!(w.nodes[a].started, vec!["0", "10"]);
}

#[test]
fn a_silent_runner_is_dead_after_three_late_checks_and_failed_over_in_one_transaction() {
    let (mut w, [a, b, c]) = formed(3);
    w.finish(a, ok(200)); // item 0 recorded, item 1 in flight
    // Runner 1 stops beating (its session stays: a hung process).
    w.freeze(a);
    let silent_at = w.elapsed;
    for _ in 0..5 {
        w.run_for(BEAT, 1, &[b, c]);
        assert!(w.group().current_runner.contains(&name("spider-1")));
    }
    assert_eq!(w.elapsed - silent_at, Duration::from_millis(2500));
    let sent_before = w.nodes[c].sent.len();
    w.run_for(BEAT, 1, &[b, c]);
    let g = w.group();
    assert_eq!(
        w.elapsed - silent_at,
        Duration::from_secs(3),
        "2 s late + 2 more checks"
    );
    assert_eq!(g.current_runner, vec![name("spider-2"), name("spider-3")]);
    assert_eq!(g.fail_runner, vec![name("spider-1")]);
    assert!(g.current_backup.is_empty());
    assert_eq!(g.standby_id, 0);
    // One transaction: fenced task, role, heart, heir's task and role, group.
    let multis: Vec<&Vec<Op>> = w.nodes[c].sent[sent_before..]
        .iter()
        .filter_map(|r| match r {
            Call::Multi(ops) => Some(ops),
            _ => None,
        })
        .collect();
    assert_eq!(multis.len(), 1);
    assert_eq!(multis[0].len(), 6);
    let fenced = w.task("spider-1");
    assert_eq!(
        (fenced.epoch, fenced.owner.clone()),
        (1, Some(name("spider-3")))
    );
    assert!(fenced.running_content.is_empty());
    assert_eq!(w.role("spider-1"), CrawlerRole::DeadRunner);
    assert_eq!(w.heart("spider-1").healthy_state, HeartState::Asystole);
    // The heir resumes after the last recorded item.
    let heir = w.task("spider-3");
    assert_eq!(
        (heir.epoch, heir.owner.clone()),
        (1, Some(name("spider-3")))
    );
    assert_eq!(heir.result_detail.len(), 1);
    assert_eq!(w.nodes[c].running.keys().copied().collect::<Vec<_>>(), [1]);
    w.finish(c, ok(200));
    w.finish(c, ok(200));
    let t = w.task("spider-3");
    assert_eq!(t.running_status, TaskState::Done);
    assert_eq!(t.result_detail.len(), 3);
}

#[test]
fn a_zombie_runner_sees_asystole_aborts_its_item_and_rejoins_as_a_backup() {
    let (mut w, [a, b, c]) = formed(3);
    w.freeze(a);
    let silent_at = w.elapsed;
    while w.group().current_runner.contains(&name("spider-1")) {
        w.run_for(BEAT, 1, &[b, c]);
        assert!(w.elapsed - silent_at <= Duration::from_secs(3));
    }
    // It wakes up, still running item 0 of a task that is no longer its own.
    assert!(!w.nodes[a].running.is_empty());
    w.thaw(a);
    w.tick(a);
    assert_eq!(w.nodes[a].aborted, 1, "its item is cancelled");
    assert!(w.nodes[a].running.is_empty());
    let g = w.group();
    assert_eq!(g.current_backup, vec![name("spider-1")]);
    assert_eq!(g.standby_id, 1);
    assert_eq!(w.role("spider-1"), CrawlerRole::BackupRunner);
    assert_eq!(w.nodes[a].machine.duty(), Duty::PrimaryBackup);
    assert!(w.nodes[a].machine.task().running_content.is_empty());
    // The item it had in flight ran on the heir; recorded once there.
    w.finish(c, ok(200));
    assert_eq!(w.task("spider-3").result_detail.len(), 1);
}

fn task_write(r: &Call) -> bool {
    matches!(r, Call::Set { path, .. } if path.ends_with("spider-1/task"))
}

fn starts_item_1(r: &Call) -> bool {
    matches!(r, Call::Set { data, .. }
        if task_write(r) && String::from_utf8_lossy(data).contains(r#""in_progressing_id":"1""#))
}

#[test]
fn a_record_refused_by_a_conflict_is_read_again_and_written_once() {
    let (mut w, [a, ..]) = formed(2);
    let path = w.layout().task(&name("spider-1"));
    w.fail_next(a, task_write, CoordError::BadVersion(path));
    w.finish(a, ok(200));
    let t = w.task("spider-1");
    assert_eq!(t.result_detail.len(), 1);
    assert_eq!(t.running_result.success_count, 1);
    assert_eq!(w.nodes[a].started, vec!["0", "10"]);
}

#[test]
fn an_item_runs_only_after_its_start_is_written() {
    let (mut w, [a, ..]) = formed(2);
    let path = w.layout().task(&name("spider-1"));
    w.fail_next(a, starts_item_1, CoordError::BadVersion(path));
    w.fail_next(a, starts_item_1, CoordError::ConnectionLoss);
    w.finish(a, ok(200));
    w.run_for(BEAT, 1, &[a]);
    let attempts = w.nodes[a].sent.iter().filter(|r| starts_item_1(r)).count();
    assert_eq!(attempts, 3, "refused twice, then written");
    assert_eq!(w.nodes[a].started, vec!["0", "10"], "item 1 ran once");
    assert_eq!(w.task("spider-1").in_progressing_id, 1);
}

#[test]
fn a_lost_connection_keeps_an_outcome_until_it_is_recorded() {
    let (mut w, [a, ..]) = formed(2);
    w.fail_next(
        a,
        |r| matches!(r, Call::Set { path, .. } if path.ends_with("spider-1/task")),
        CoordError::ConnectionLoss,
    );
    w.finish(a, ok(201));
    assert!(w.task("spider-1").result_detail.is_empty());
    w.run_for(BEAT, 1, &[a]);
    let t = w.task("spider-1");
    assert_eq!(t.result_detail.len(), 1);
    assert_eq!(t.result_detail[0].status_code, Some(201));
    assert_eq!(w.nodes[a].started, vec!["0", "10"], "item 0 ran once");
}

#[test]
fn an_expired_session_is_replaced_with_backoff_and_the_node_registers_again() {
    let (mut w, [a, ..]) = formed(0);
    w.fail_next(a, |r| *r == Call::Close, CoordError::ConnectionLoss);
    w.fail_next(a, |r| *r == Call::Close, CoordError::ConnectionLoss);
    w.deliver(a, Event::Session(SessionState::Expired));
    assert_eq!(
        w.nodes[a].reconnects,
        vec![
            Duration::ZERO,
            Duration::from_millis(100),
            Duration::from_millis(200)
        ]
    );
    // Registered and joined again on the new session, by name, once.
    let g = w.group();
    assert_eq!(g.current_runner, vec![name("spider-1"), name("spider-2")]);
    assert_eq!(g.total_crawler, 3);
    let session = w.layout().session(&name("spider-1"));
    assert!(
        w.nodes[a]
            .sent
            .iter()
            .rev()
            .any(|r| *r == Call::Ephemeral(session.clone()))
    );
    assert!(!w.nodes[a].machine.awaiting());
}

#[test]
fn a_dead_secondary_backup_is_recorded_by_the_primary() {
    let mut w = World::new();
    let a = w.add(config("spider-1", 1, 2));
    let b = w.add(config("spider-2", 1, 2));
    let c = w.add(config("spider-3", 1, 2));
    w.run_for(BEAT, 1, &[a, b, c]);
    assert_eq!(w.group().standby_id, 2);
    w.kill(c);
    // Not before the grace period after joining (2 s × 3 here).
    w.run_for(BEAT, 13, &[a, b]);
    let g = w.group();
    assert_eq!(g.current_backup, vec![name("spider-2")]);
    assert_eq!(g.fail_backup, vec![name("spider-3")]);
    assert_eq!(g.total_backup, 1);
    assert_eq!(w.role("spider-3"), CrawlerRole::DeadBackupRunner);
    assert_eq!(w.heart("spider-3").healthy_state, HeartState::Asystole);
    assert_eq!(g.standby_id, 2);
}

#[test]
fn a_graceful_leave_finishes_the_item_then_hands_over_in_one_transaction() {
    let (mut w, [a, b, c]) = formed(3);
    w.deliver(a, Event::Stop);
    assert!(w.nodes[a].exit.is_none(), "waits for its item");
    assert!(!w.nodes[a].sent.iter().any(|r| matches!(r, Call::Close)));
    w.run_for(BEAT, 1, &[a, b, c]); // still beats while it finishes
    w.finish(a, ok(200));
    assert!(matches!(w.nodes[a].exit, Some(Ok(Exit::Left))));
    let g = w.group();
    assert_eq!(g.current_runner, vec![name("spider-2"), name("spider-3")]);
    assert!(g.fail_runner.is_empty(), "a leave is not a death");
    assert_eq!(w.heart("spider-1").healthy_state, HeartState::ApparentDeath);
    let heir = w.task("spider-3");
    assert_eq!(
        heir.result_detail.len(),
        1,
        "resumes after the item it finished"
    );
    assert_eq!(heir.epoch, 1);
    w.run_for(BEAT, 1, &[b, c]);
    assert_eq!(
        w.nodes[c].started,
        vec!["10"],
        "at once, no heartbeat timeout"
    );
}

#[test]
fn with_no_backup_left_a_dead_runners_task_goes_to_the_queue_and_is_claimed() {
    let mut w = World::new();
    let a = w.add(config("spider-1", 2, 0));
    let b = w.add(config("spider-2", 2, 0));
    w.run_for(BEAT, 1, &[a, b]);
    let path = w.layout().task(&name("spider-1"));
    w.write(&path, &items(2));
    w.run_for(BEAT, 1, &[a, b]);
    w.finish(a, ok(200));
    w.kill(a);
    w.run_for(BEAT, 14, &[b]);
    let g = w.group();
    assert_eq!(g.current_runner, vec![name("spider-2")]);
    assert_eq!(g.fail_runner, vec![name("spider-1")]);
    let t = w.task("spider-2");
    assert_eq!(t.result_detail.len(), 1, "claimed from the queue, resumed");
    assert_eq!(w.nodes[b].started, vec!["10"]);
}

#[test]
fn outside_events_wait_while_an_answer_is_awaited() {
    let mut m = Machine::new(config("spider-1", 1, 0), Instant::now()).unwrap();
    let now = World::new().now();
    m.start(now);
    assert!(m.awaiting());
    // The runtime must not deliver anything but the answer now; the
    // answer itself may be an error the machine copes with.
    let commands = m.handle(now, Event::Replied(Err(CoordError::SessionExpired)));
    assert!(matches!(commands.as_slice(), [Command::Exit(Err(_))]));
}

#[test]
fn meta_data_that_does_not_decode_ends_the_node_with_the_path_named() {
    let (mut w, [a, ..]) = formed(0);
    let path = w.layout().group_state();
    w.write(&path, &"not a group");
    w.tick(a);
    match &w.nodes[a].exit {
        Some(Err(NodeError::Meta(e))) => assert!(e.to_string().contains(&path), "{e}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn after_an_outage_a_runner_reconnecting_late_is_waited_for_as_long_as_its_session_lasts() {
    let mut w = World::new();
    let session_timeout = Duration::from_secs(20);
    let cfg = |me: &str| NodeConfig {
        session_timeout,
        ..config(me, 2, 1)
    };
    let (a, b, c) = (
        w.add(cfg("spider-1")),
        w.add(cfg("spider-2")),
        w.add(cfg("spider-3")),
    );
    w.run_for(BEAT, 14, &[a, b, c]);
    // The coordinator goes away; the judge (spider-3) and spider-2 are
    // back after 2 s, spider-1 (session alive) only after 15 s.
    for i in [a, b, c] {
        w.deliver(i, Event::Session(SessionState::Suspended));
    }
    w.run_for(BEAT, 4, &[a, b, c]);
    w.freeze(a);
    for i in [b, c] {
        w.deliver(i, Event::Session(SessionState::Connected));
    }
    // Far past the heart limit (6 s), within the session timeout.
    w.run_for(BEAT, 26, &[b, c]);
    assert!(
        w.group().fail_runner.is_empty(),
        "nobody dead of the outage"
    );
    w.thaw(a);
    w.deliver(a, Event::Session(SessionState::Connected));
    w.run_for(BEAT, 30, &[a, b, c]);
    assert!(w.group().fail_runner.is_empty(), "{:?}", w.group());
    assert_eq!(
        w.group().current_runner,
        vec![name("spider-1"), name("spider-2")]
    );

    // A Runner silent past the session timeout after an outage is dead.
    for i in [a, b, c] {
        w.deliver(i, Event::Session(SessionState::Suspended));
    }
    w.freeze(a);
    for i in [b, c] {
        w.deliver(i, Event::Session(SessionState::Connected));
    }
    let mut waited = Duration::ZERO;
    while w.group().fail_runner.is_empty() {
        w.run_for(BEAT, 1, &[b, c]);
        waited += BEAT;
        assert!(
            waited <= session_timeout + Duration::from_secs(8),
            "never judged"
        );
    }
    assert!(waited >= session_timeout, "judged after {waited:?}");
    assert_eq!(w.group().fail_runner, vec![name("spider-1")]);
}
