//! GroupState transitions, as pure functions (the runtime applies them
//! under the group lock with compare-and-set): election by index, a late
//! joiner, a Runner replaced by the primary backup, a dead backup. Lists
//! never hold a name twice (SmoothCrawler-Cluster's own dumps show duplicates).

use crawlkeeper_model::cluster::{GroupState, NodeName};

fn push_once(list: &mut Vec<NodeName>, name: &NodeName) {
    if !list.contains(name) {
        list.push(name.clone());
    }
}

fn sorted(mut v: Vec<NodeName>) -> Vec<NodeName> {
    v.sort_by_key(NodeName::index);
    v
}

/// Recomputes totals and `standby_id` (the smallest backup index; `0`
/// when no backup is left) from the lists.
fn settle(g: &mut GroupState) {
    g.total_crawler = g.current_crawler.len() as u32;
    g.total_runner = g.current_runner.len() as u32;
    g.total_backup = g.current_backup.len() as u32;
    g.standby_id = g
        .current_backup
        .iter()
        .map(NodeName::index)
        .min()
        .unwrap_or(0);
}

/// The election: the `runners` smallest indices among `members` run, the
/// rest stand by.
pub fn elect(members: &[NodeName], runners: usize) -> GroupState {
    let all = sorted(members.to_vec());
    let mut g = GroupState {
        current_runner: all.iter().take(runners).cloned().collect(),
        current_backup: all.iter().skip(runners).cloned().collect(),
        current_crawler: all,
        ..GroupState::default()
    };
    settle(&mut g);
    g
}

/// A member joining before the election: it is counted, and waits.
pub fn join_forming(g: &mut GroupState, name: &NodeName) {
    push_once(&mut g.current_crawler, name);
    g.fail_crawler.retain(|n| n != name);
    g.total_crawler = g.current_crawler.len() as u32;
}

/// A member leaving on request (not a failure): it leaves the current
/// lists and is not recorded as failed.
pub fn leave(g: &mut GroupState, name: &NodeName) {
    g.current_crawler.retain(|n| n != name);
    g.current_runner.retain(|n| n != name);
    g.current_backup.retain(|n| n != name);
    settle(g);
}

/// A backup becomes a Runner (it takes a leaving Runner's task).
pub fn promote(g: &mut GroupState, heir: &NodeName) {
    g.current_backup.retain(|n| n != heir);
    push_once(&mut g.current_runner, heir);
    settle(g);
}

/// A member joining after the election: it stands by, and does not move
/// `standby_id` unless there was no backup.
pub fn join_late(g: &mut GroupState, name: &NodeName) {
    if g.current_crawler.contains(name) {
        return;
    }
    push_once(&mut g.current_crawler, name);
    push_once(&mut g.current_backup, name);
    g.fail_crawler.retain(|n| n != name);
    g.fail_runner.retain(|n| n != name);
    g.fail_backup.retain(|n| n != name);
    let standby = g.standby_id;
    let had_backup = g.total_backup > 0;
    settle(g);
    if had_backup {
        g.standby_id = standby;
    }
}

/// The primary backup `heir` replaces the dead Runner `dead`.
pub fn replace_runner(g: &mut GroupState, dead: &NodeName, heir: &NodeName) {
    g.current_crawler.retain(|n| n != dead);
    g.current_runner.retain(|n| n != dead);
    g.current_backup.retain(|n| n != heir);
    push_once(&mut g.current_runner, heir);
    push_once(&mut g.fail_crawler, dead);
    push_once(&mut g.fail_runner, dead);
    settle(g);
}

/// A dead Runner with no backup to replace it: it leaves the group (its
/// task goes back to the queue).
pub fn drop_runner(g: &mut GroupState, dead: &NodeName) {
    g.current_crawler.retain(|n| n != dead);
    g.current_runner.retain(|n| n != dead);
    push_once(&mut g.fail_crawler, dead);
    push_once(&mut g.fail_runner, dead);
    settle(g);
}

/// A dead Backup Runner leaves the group.
pub fn drop_backup(g: &mut GroupState, dead: &NodeName) {
    g.current_crawler.retain(|n| n != dead);
    g.current_backup.retain(|n| n != dead);
    push_once(&mut g.fail_crawler, dead);
    push_once(&mut g.fail_backup, dead);
    settle(g);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<NodeName> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn the_smallest_indices_run_and_the_smallest_backup_stands_by() {
        let g = elect(&names(&["c_3", "c_1", "c_4", "c_2"]), 2);
        assert_eq!(g.current_runner, names(&["c_1", "c_2"]));
        assert_eq!(g.current_backup, names(&["c_3", "c_4"]));
        assert_eq!(g.current_crawler, names(&["c_1", "c_2", "c_3", "c_4"]));
        assert_eq!(
            (
                g.total_crawler,
                g.total_runner,
                g.total_backup,
                g.standby_id
            ),
            (4, 2, 2, 3)
        );
    }

    #[test]
    fn a_late_joiner_stands_by_without_resetting_standby_id() {
        let mut g = elect(&names(&["c_2", "c_3"]), 1);
        join_late(&mut g, &"c_1".parse().unwrap());
        join_late(&mut g, &"c_1".parse().unwrap());
        assert_eq!(g.current_backup, names(&["c_3", "c_1"]));
        assert_eq!(g.total_crawler, 3);
        assert_eq!(g.standby_id, 3);
        // With no backup left, a joiner becomes the standby.
        let mut g = elect(&names(&["c_2"]), 1);
        assert_eq!(g.standby_id, 0);
        join_late(&mut g, &"c_5".parse().unwrap());
        assert_eq!(g.standby_id, 5);
    }

    #[test]
    fn fail_over_moves_the_heir_and_records_the_dead_once() {
        let mut g = elect(&names(&["c_1", "c_2", "c_3", "c_4"]), 2);
        replace_runner(&mut g, &"c_1".parse().unwrap(), &"c_3".parse().unwrap());
        replace_runner(&mut g, &"c_1".parse().unwrap(), &"c_3".parse().unwrap());
        assert_eq!(g.current_runner, names(&["c_2", "c_3"]));
        assert_eq!(g.current_backup, names(&["c_4"]));
        assert_eq!(g.fail_runner, names(&["c_1"]));
        assert_eq!(g.fail_crawler, names(&["c_1"]));
        assert_eq!(
            (
                g.total_crawler,
                g.total_runner,
                g.total_backup,
                g.standby_id
            ),
            (3, 2, 1, 4)
        );
        drop_backup(&mut g, &"c_4".parse().unwrap());
        assert_eq!(g.fail_backup, names(&["c_4"]));
        assert_eq!((g.total_backup, g.standby_id), (0, 0));
        drop_runner(&mut g, &"c_2".parse().unwrap());
        assert_eq!(g.current_runner, names(&["c_3"]));
        assert_eq!(g.fail_runner, names(&["c_1", "c_2"]));
    }
}
