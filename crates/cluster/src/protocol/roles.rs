//! Who does what in a group, decided from GroupState alone, so every node
//! reading the same GroupState reaches the same answer.

use std::time::Duration;

use crawlkeeper_model::cluster::{GroupState, NodeName};

/// A member's duty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duty {
    /// Runs tasks.
    Runner,
    /// The backup whose index is `standby_id`: judges the Runners' hearts.
    PrimaryBackup,
    /// Another backup: waits to become primary, watching the primary.
    SecondaryBackup,
    /// Not a live member (not joined yet, or declared dead).
    Outside,
}

/// `me`'s duty in `g`.
pub fn duty(g: &GroupState, me: &NodeName) -> Duty {
    if g.current_runner.contains(me) {
        Duty::Runner
    } else if g.current_backup.contains(me) {
        if g.standby_id == me.index() {
            Duty::PrimaryBackup
        } else {
            Duty::SecondaryBackup
        }
    } else {
        Duty::Outside
    }
}

/// Whether the group is formed (an election has run).
pub fn formed(g: &GroupState) -> bool {
    g.total_runner > 0 || !g.current_runner.is_empty()
}

/// Whether to hold the election now: every expected member is present,
/// or the formation timeout has passed with at least one.
pub fn ready_to_elect(
    present: usize,
    expected: usize,
    waited: Duration,
    timeout: Duration,
) -> bool {
    present >= expected || (present > 0 && waited >= timeout)
}

/// Who judges the Runners' hearts: the primary backup, or, with no backup
/// left, the live Runner with the smallest index (it then sends dead
/// Runners' tasks to the queue).
pub fn judge(g: &GroupState) -> Option<NodeName> {
    g.current_backup
        .iter()
        .find(|b| b.index() == g.standby_id)
        .or_else(|| g.current_runner.iter().min_by_key(|r| r.index()))
        .cloned()
}

/// Pairs dead Runners (in index order) with the backups that replace them
/// (the primary first, then by index); `None` once backups run out: that
/// Runner's task goes to the queue.
pub fn heirs(g: &GroupState, dead: &[NodeName]) -> Vec<(NodeName, Option<NodeName>)> {
    let mut dead: Vec<NodeName> = dead
        .iter()
        .filter(|d| g.current_runner.contains(d))
        .cloned()
        .collect();
    dead.sort_by_key(NodeName::index);
    dead.dedup();
    let mut backups: Vec<NodeName> = g.current_backup.clone();
    backups.sort_by_key(|b| (b.index() != g.standby_id, b.index()));
    let mut backups = backups.into_iter();
    dead.into_iter().map(|d| (d, backups.next())).collect()
}

#[cfg(test)]
mod tests {
    use super::super::group::elect;
    use super::*;

    fn n(s: &str) -> NodeName {
        s.parse().unwrap()
    }

    #[test]
    fn duties_follow_the_group_state() {
        let g = elect(&[n("c_1"), n("c_2"), n("c_3"), n("c_4")], 2);
        assert_eq!(duty(&g, &n("c_1")), Duty::Runner);
        assert_eq!(duty(&g, &n("c_3")), Duty::PrimaryBackup);
        assert_eq!(duty(&g, &n("c_4")), Duty::SecondaryBackup);
        assert_eq!(duty(&g, &n("c_9")), Duty::Outside);
        assert!(formed(&g));
        assert!(!formed(&GroupState::default()));
        assert_eq!(judge(&g), Some(n("c_3")));
        let no_backup = elect(&[n("c_2"), n("c_1")], 2);
        assert_eq!(judge(&no_backup), Some(n("c_1")));
    }

    #[test]
    fn several_dead_runners_are_replaced_in_index_order_while_backups_last() {
        let g = elect(&[n("c_1"), n("c_2"), n("c_3"), n("c_4"), n("c_5")], 3);
        let plan = heirs(&g, &[n("c_3"), n("c_1"), n("c_2"), n("c_1"), n("c_4")]);
        assert_eq!(
            plan,
            vec![
                (n("c_1"), Some(n("c_4"))),
                (n("c_2"), Some(n("c_5"))),
                (n("c_3"), None)
            ]
        );
    }

    #[test]
    fn the_election_waits_for_members_or_the_formation_timeout() {
        let t = Duration::from_secs(5);
        assert!(!ready_to_elect(2, 3, Duration::from_secs(1), t));
        assert!(ready_to_elect(3, 3, Duration::ZERO, t));
        assert!(ready_to_elect(2, 3, t, t));
        assert!(!ready_to_elect(0, 3, t, t));
    }
}
