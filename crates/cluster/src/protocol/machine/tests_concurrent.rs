//! Concurrent Runners (a crawl job's shards): every item at once, queued
//! work claimed while busy, a leave that halts items and hands them over.

use crawlkeeper_model::cluster::{Heartbeat, RunningContent, Task, TaskId};

use super::*;
use crate::protocol::config::ItemMode;
use crate::protocol::task as progress;

fn concurrent(me: &str, runners: usize, backups: usize) -> NodeConfig {
    NodeConfig {
        items: ItemMode::Concurrent,
        ..config(me, runners, backups)
    }
}

fn shards(ids: &[&str]) -> Task {
    Task {
        running_content: ids
            .iter()
            .map(|id| RunningContent::get(TaskId::Text((*id).into()), "http://127.0.0.1/"))
            .collect(),
        ..Task::default()
    }
}

fn running(w: &World, i: usize) -> Vec<usize> {
    w.nodes[i].running.keys().copied().collect()
}

/// Two concurrent Runners and a backup, `spider-1` given `ids`.
fn formed_with(ids: &[&str]) -> (World, [usize; 3]) {
    let mut w = World::new();
    let a = w.add(concurrent("spider-1", 2, 1));
    let b = w.add(concurrent("spider-2", 2, 1));
    let c = w.add(concurrent("spider-3", 2, 1));
    w.run_for(BEAT, 1, &[a, b, c]);
    let path = w.layout().task(&name("spider-1"));
    w.write(&path, &shards(ids));
    w.run_for(BEAT, 1, &[a, b, c]);
    (w, [a, b, c])
}

#[test]
fn a_concurrent_runner_runs_every_item_at_once_and_records_them_as_they_end() {
    let (mut w, [a, ..]) = formed_with(&["j/0", "j/1", "j/2"]);
    assert_eq!(running(&w, a), [0, 1, 2], "all at once");
    let t = w.task("spider-1");
    assert_eq!(t.running_status, TaskState::Processing);
    assert_eq!(t.owner, Some(name("spider-1")));
    w.finish_at(a, 2, ok(200));
    w.finish_at(a, 0, ok(200));
    assert_eq!(progress::pending(&w.task("spider-1")), [1]);
    w.run_for(BEAT, 2, &[a]);
    assert_eq!(w.nodes[a].started, ["j/0", "j/1", "j/2"], "none run twice");
    w.finish_at(a, 1, ok(200));
    let t = w.task("spider-1");
    assert_eq!(t.running_status, TaskState::Done);
    assert_eq!(t.running_result.success_count, 3);
}

#[test]
fn work_given_to_a_busy_concurrent_runner_starts_at_once_beside_its_own() {
    let (mut w, [a, ..]) = formed_with(&["j/0"]);
    // A submitter merges a second job's shard into the Runner's task.
    let path = w.layout().task(&name("spider-1"));
    let merged = progress::merge(&w.task("spider-1"), &shards(&["k/0"])).unwrap();
    w.write(&path, &merged);
    w.run_for(BEAT, 1, &[a]);
    assert_eq!(running(&w, a), [0, 1]);
    assert_eq!(w.nodes[a].started, ["j/0", "k/0"]);
}

#[test]
fn a_busy_concurrent_runner_claims_a_dead_runners_queued_shards() {
    let mut w = World::new();
    let a = w.add(concurrent("spider-1", 2, 0));
    let b = w.add(concurrent("spider-2", 2, 0));
    w.run_for(BEAT, 1, &[a, b]);
    let l = w.layout();
    w.write(&l.task(&name("spider-1")), &shards(&["j/0", "j/2"]));
    w.write(&l.task(&name("spider-2")), &shards(&["j/1"]));
    w.run_for(BEAT, 1, &[a, b]);
    w.finish_at(a, 0, ok(200));
    // Past the grace after joining, when a gone session is death at once.
    w.run_for(BEAT, 12, &[a, b]);
    w.kill(a);
    // Dead by its session; claimed on a later tick, while busy.
    let mut ticks = 0;
    while w.nodes[b].started.len() < 2 {
        w.run_for(BEAT, 1, &[b]);
        ticks += 1;
        assert!(ticks <= 4, "claimed within a few heartbeats");
    }
    assert_eq!(w.group().fail_runner, vec![name("spider-1")]);
    assert_eq!(
        w.nodes[b].started,
        ["j/1", "j/2"],
        "only the unfinished shard"
    );
    assert_eq!(running(&w, b), [0, 1], "its own goes on");
    let t = w.task("spider-2");
    assert_eq!(t.running_content.len(), 2);
    assert_eq!(t.owner, Some(name("spider-2")));
}

#[test]
fn a_leaving_concurrent_runner_halts_its_items_and_hands_them_over_unfinished() {
    let (mut w, [a, b, c]) = formed_with(&["j/0", "j/1"]);
    w.finish_at(a, 1, ok(200));
    w.deliver(a, Event::Stop);
    assert_eq!(w.nodes[a].halted, 1, "asked to halt");
    assert!(w.nodes[a].exit.is_none(), "waits for its items to end");
    w.finish_at(a, 0, ok(200)); // halted: not recorded
    assert!(matches!(w.nodes[a].exit, Some(Ok(Exit::Left))));
    let heir = w.task("spider-3");
    assert_eq!(progress::pending(&heir), [0], "j/0 handed over unfinished");
    assert_eq!(heir.running_content[0].task_id.to_string(), "j/0");
    w.run_for(BEAT, 1, &[b, c]);
    assert_eq!(w.nodes[c].started, ["j/0"], "at once, no heartbeat timeout");
}

/// Three concurrent Runners, `spider-1..3` given shards `j/0..2`, and a
/// backup `spider-4`, past the grace after joining (when a gone session
/// is death at once).
fn three_runners_and_a_backup() -> (World, Vec<usize>) {
    let mut w = World::new();
    let nodes: Vec<usize> = (1..=4)
        .map(|i| w.add(concurrent(&format!("spider-{i}"), 3, 1)))
        .collect();
    w.run_for(BEAT, 1, &nodes);
    let l = w.layout();
    for (i, shard) in ["j/0", "j/1", "j/2"].iter().enumerate() {
        w.write(
            &l.task(&name(&format!("spider-{}", i + 1))),
            &shards(&[shard]),
        );
    }
    w.run_for(BEAT, 12, &nodes);
    (w, nodes)
}

#[test]
fn two_runners_dead_at_once_with_one_backup_spread_over_the_backup_and_a_survivor() {
    let (mut w, nodes) = three_runners_and_a_backup();
    w.kill(nodes[0]);
    w.kill(nodes[1]);
    let (survivor, backup) = (nodes[2], nodes[3]);
    // The backup judges, takes one shard and could grab the other before
    // the survivor's next tick.
    w.run_for(BEAT, 3, &[backup]);
    let mut ticks = 0;
    while w.nodes[survivor].started.len() + w.nodes[backup].started.len() < 3 {
        w.run_for(BEAT, 1, &[backup, survivor]);
        ticks += 1;
        assert!(ticks <= 4, "both shards placed within a few heartbeats");
    }
    assert_eq!(w.nodes[backup].started, ["j/0"], "the backup takes one");
    assert_eq!(
        w.nodes[survivor].started,
        ["j/2", "j/1"],
        "the surviving Runner the other, beside its own"
    );
    let g = w.group();
    assert_eq!(g.fail_runner, vec![name("spider-1"), name("spider-2")]);
}

#[test]
fn a_queued_shard_meant_for_a_runner_that_does_not_claim_it_goes_to_another_later() {
    let (mut w, nodes) = three_runners_and_a_backup();
    let (survivor, backup) = (nodes[2], nodes[3]);
    // The survivor pauses (its session lives): the shard meant for it
    // waits a heart limit, then the backup-turned-Runner takes it.
    w.freeze(survivor);
    w.kill(nodes[0]);
    w.kill(nodes[1]);
    w.run_for(BEAT, 2, &[backup]);
    assert_eq!(
        w.nodes[backup].started,
        ["j/0"],
        "the meant Runner's shard waits"
    );
    let hb = Heartbeat::default();
    let limit = hb.update_timeout * hb.heart_rhythm_timeout;
    let ticks = (limit.as_millis() / BEAT.as_millis()) as usize + 1;
    w.run_for(BEAT, ticks, &[backup]);
    let started = &w.nodes[backup].started;
    assert_eq!(started[..2], ["j/0", "j/1"], "taken after a heart limit");
}
