//! The judge: Runners' hearts, fail-over in one transaction (with
//! fencing), and dead backups.

use crawlkeeper_model::cluster::{CrawlerRole, HeartState, Heartbeat, NodeState, TaskState};

use super::*;
use crate::coordinator::CreateMode;
use crate::protocol::group;
use crate::protocol::heart::Verdict;
use crate::protocol::task as progress;

/// A fail-over between reading GroupState and committing: the group read
/// under the lock and the dead Runners paired with their heirs.
#[derive(Debug)]
pub(super) struct Gathering {
    group: GroupState,
    version: Version,
    heirs: Vec<(NodeName, Option<NodeName>)>,
}

impl Machine {
    /// Observes the other Runners' heartbeat versions and session nodes.
    pub(super) fn judge(&mut self, now: Now, out: &mut Vec<Command>) {
        let me = &self.cfg.name;
        let runners: Vec<NodeName> = self
            .group
            .current_runner
            .iter()
            .filter(|r| *r != me)
            .cloned()
            .collect();
        self.monitor.track(&runners, now.mono);
        if runners.is_empty() {
            return;
        }
        let calls = runners
            .iter()
            .flat_map(|r| {
                [
                    Call::Exists(self.layout.heartbeat(r)),
                    Call::Exists(self.layout.session(r)),
                ]
            })
            .collect();
        self.io(Flow::Observe(runners), calls, out);
    }

    /// Judges what was observed; fails dead Runners over.
    pub(super) fn observed(
        &mut self,
        runners: Vec<NodeName>,
        mut r: impl Iterator<Item = Reply>,
        now: Now,
    ) {
        let excused = now.mono < self.excused_until;
        for runner in &runners {
            if let Some(version) = next(&mut r).exists() {
                self.monitor.observe(runner, version, now.mono);
            }
            if next(&mut r).exists().is_none() {
                if now.mono >= self.grace_until {
                    self.monitor.session_gone(runner);
                }
            } else if excused {
                self.monitor.excuse(runner, now.mono);
            }
        }
        let dead: Vec<NodeName> = self
            .monitor
            .check(now.mono)
            .into_iter()
            .filter(|(_, v)| *v == Verdict::Dead)
            .map(|(n, _)| n)
            .collect();
        if !dead.is_empty() {
            self.then([Step::FailOver(dead)]);
        }
    }

    /// Replaces dead Runners under the lock, in one transaction: each is
    /// marked `dead-runner` / `Asystole`, its task node fenced (epoch + 1,
    /// owner = heir), its task given to its heir or queued, and GroupState
    /// updated.
    pub(super) fn fail_over(&mut self, dead: Vec<NodeName>, out: &mut Vec<Command>) {
        let calls = vec![self.lock(), Call::Get(self.layout.group_state())];
        self.io(Flow::FailOverRead(dead), calls, out);
    }

    pub(super) fn fail_over_read(
        &mut self,
        dead: Vec<NodeName>,
        r: impl Iterator<Item = Reply>,
        out: &mut Vec<Command>,
    ) {
        let Some((g, version)) = self.group_under_lock(r, vec![Step::SyncRole], out) else {
            return;
        };
        let heirs = roles::heirs(&g, &dead);
        let mut calls = Vec::new();
        for (d, heir) in &heirs {
            calls.push(Call::Get(self.layout.task(d)));
            calls.push(Call::Get(self.layout.heartbeat(d)));
            if let Some(h) = heir {
                calls.push(Call::Get(self.layout.task(h)));
            }
        }
        let gathering = Gathering {
            group: g,
            version,
            heirs,
        };
        self.io(Flow::FailOverGather(gathering), calls, out);
    }

    pub(super) fn fail_over_gathered(
        &mut self,
        gathering: Gathering,
        mut r: impl Iterator<Item = Reply>,
        out: &mut Vec<Command>,
    ) {
        let Gathering {
            group: mut g,
            version: gv,
            heirs,
        } = gathering;
        let mut ops = Vec::new();
        let mut meant_for = self.orphan_placement(&g, &heirs);
        for (d, heir) in heirs {
            let task = next(&mut r).value();
            let beat = next(&mut r).value();
            let heir_version = heir.as_ref().map(|_| next(&mut r).value().map(|(_, v)| v));
            let Some((bytes, tv)) = task else {
                continue;
            };
            let Some(t) = self.decode::<Task>(&self.layout.task(&d), &bytes, out) else {
                return;
            };
            let Some(hb) = self.decode_beat(&d, beat, out) else {
                return;
            };
            let epoch = t.epoch + 1;
            let taken = progress::take_over(&t);
            // Fenced: a new epoch and owner. A task that moves on leaves an
            // empty node behind; a finished one keeps its record here.
            let fenced = match taken {
                Some(_) => Task {
                    epoch,
                    owner: heir.clone(),
                    ..Task::default()
                },
                None => Task {
                    epoch,
                    owner: heir.clone(),
                    ..t.clone()
                },
            };
            ops.push(set_op(self.layout.task(&d), &fenced, Some(tv)));
            ops.push(self.role_op(&d, CrawlerRole::DeadRunner));
            ops.push(self.asystole_op(&d, hb, Some(t.running_status)));
            let heir = heir.zip(heir_version);
            let queued_for = if heir.is_none() {
                meant_for.next()
            } else {
                None
            };
            self.hand_over(&mut ops, heir.as_ref(), taken, epoch, queued_for);
            match heir {
                Some((h, _)) => {
                    tracing::warn!(dead = %d, heir = %h, "runner dead; backup takes over its task");
                    group::replace_runner(&mut g, &d, &h);
                }
                None => {
                    tracing::warn!(dead = %d, "runner dead and no backup left; its task goes to the queue");
                    group::drop_runner(&mut g, &d);
                }
            }
        }
        if ops.is_empty() {
            return self.io(Flow::Ack(vec![Step::SyncRole]), vec![Call::Unlock], out);
        }
        ops.push(set_op(self.layout.group_state(), &g, Some(gv)));
        let calls = vec![Call::Multi(ops), Call::Unlock];
        self.io(Flow::FailOverCommit(g), calls, out);
    }

    pub(super) fn failed_over(&mut self, g: GroupState) {
        self.group = g;
        if self.duty() == Duty::Runner {
            self.then([Step::ReloadTask, Step::SyncRole]);
        } else {
            self.then([Step::SyncRole]);
        }
    }

    /// The live Runners that should claim, in turn, the tasks of dead
    /// Runners left without a backup: with concurrent items (a Runner takes
    /// queued work while busy), the Runners that are not heirs in this
    /// fail-over first, round robin, so that the work spreads instead of
    /// going to whoever ticks first; none with sequential items (the first
    /// idle Runner claims, as in SmoothCrawler-Cluster).
    fn orphan_placement(
        &self,
        g: &GroupState,
        heirs: &[(NodeName, Option<NodeName>)],
    ) -> Box<dyn Iterator<Item = NodeName>> {
        if self.cfg.items != ItemMode::Concurrent {
            return Box::new(std::iter::empty());
        }
        let dead = |n: &NodeName| heirs.iter().any(|(d, _)| d == n);
        let heir = |n: &NodeName| heirs.iter().any(|(_, h)| h.as_ref() == Some(n));
        let survivors: Vec<NodeName> = g
            .current_runner
            .iter()
            .filter(|r| !dead(r) && !heir(r))
            .cloned()
            .collect();
        let pool = if survivors.is_empty() {
            heirs.iter().filter_map(|(_, h)| h.clone()).collect()
        } else {
            survivors
        };
        if pool.is_empty() {
            return Box::new(std::iter::empty());
        }
        Box::new(pool.into_iter().cycle())
    }

    /// Adds the operations that give `task` (what is left of a Runner's
    /// task, if anything) to `heir` (with its task node's version) as a
    /// Runner, or, with no heir, to the queue, meant for `queued_for` if
    /// given (others claim it only after a heart limit); all under the
    /// new `epoch`.
    pub(super) fn hand_over(
        &self,
        ops: &mut Vec<Op>,
        heir: Option<&(NodeName, Option<Version>)>,
        task: Option<Task>,
        epoch: u64,
        queued_for: Option<NodeName>,
    ) {
        match heir {
            Some((h, version)) => {
                let given = Task {
                    epoch,
                    owner: Some(h.clone()),
                    ..task.unwrap_or_default()
                };
                ops.push(set_op(self.layout.task(h), &given, *version));
                ops.push(self.role_op(h, CrawlerRole::Runner));
            }
            None => {
                if let Some(t) = task {
                    ops.push(Op::Create {
                        path: crate::path::join(&self.layout.queue(), "task-"),
                        data: encode(&Task {
                            epoch,
                            owner: queued_for,
                            ..t
                        }),
                        mode: CreateMode::PersistentSequential,
                    });
                }
            }
        }
    }

    /// The primary backup looks for backups whose session is gone.
    pub(super) fn check_backups(&mut self, now: Now, out: &mut Vec<Command>) {
        if now.mono < self.grace_until {
            return;
        }
        let me = &self.cfg.name;
        let others: Vec<NodeName> = self
            .group
            .current_backup
            .iter()
            .filter(|b| *b != me)
            .cloned()
            .collect();
        if others.is_empty() {
            return;
        }
        let calls = others
            .iter()
            .map(|b| Call::Exists(self.layout.session(b)))
            .collect();
        self.io(Flow::CheckBackups(others), calls, out);
    }

    pub(super) fn backups_checked(&mut self, names: Vec<NodeName>, r: impl Iterator<Item = Reply>) {
        let gone: Vec<Step> = names
            .into_iter()
            .zip(r)
            .filter_map(|(b, reply)| reply.exists().is_none().then_some(Step::DropBackup(b)))
            .collect();
        self.then(gone);
    }

    /// A secondary backup takes the primary's place when its session is gone.
    pub(super) fn check_primary(&mut self, now: Now, out: &mut Vec<Command>) {
        if now.mono < self.grace_until {
            return;
        }
        let primary = self
            .group
            .current_backup
            .iter()
            .find(|b| b.index() == self.group.standby_id)
            .cloned();
        if let Some(p) = primary {
            let call = Call::Exists(self.layout.session(&p));
            self.io(Flow::CheckPrimary(p), vec![call], out);
        }
    }

    /// Records a dead backup (`dead-backup-runner`, `fail_backup`), under
    /// the lock, after checking again that its session is gone.
    pub(super) fn drop_backup(&mut self, b: NodeName, out: &mut Vec<Command>) {
        let calls = vec![
            self.lock(),
            Call::Get(self.layout.group_state()),
            Call::Exists(self.layout.session(&b)),
            Call::Get(self.layout.heartbeat(&b)),
        ];
        self.io(Flow::DropRead(b), calls, out);
    }

    pub(super) fn drop_read(
        &mut self,
        b: NodeName,
        mut r: impl Iterator<Item = Reply>,
        out: &mut Vec<Command>,
    ) {
        let found = self.group_under_lock(r.by_ref().take(2), vec![Step::SyncRole], out);
        let Some((mut g, gv)) = found else {
            return;
        };
        let session = next(&mut r).exists();
        let beat = next(&mut r).value();
        if !g.current_backup.contains(&b) || session.is_some() {
            return self.io(Flow::Ack(vec![Step::SyncRole]), vec![Call::Unlock], out);
        }
        let Some(hb) = self.decode_beat(&b, beat, out) else {
            return;
        };
        group::drop_backup(&mut g, &b);
        let ops = vec![
            self.role_op(&b, CrawlerRole::DeadBackupRunner),
            self.asystole_op(&b, hb, None),
            set_op(self.layout.group_state(), &g, Some(gv)),
        ];
        self.io(
            Flow::DropCommit(b, g),
            vec![Call::Multi(ops), Call::Unlock],
            out,
        );
    }

    /// Sets a node's role.
    pub(super) fn role_op(&self, name: &NodeName, role: CrawlerRole) -> Op {
        let state = NodeState {
            group: self.cfg.group.clone(),
            role,
        };
        set_op(self.layout.node_state(name), &state, None)
    }

    /// A dead node's heartbeat as read (this node's settings if missing);
    /// `None` when it did not decode (the node then ends).
    fn decode_beat(
        &mut self,
        name: &NodeName,
        read: Option<(Vec<u8>, Version)>,
        out: &mut Vec<Command>,
    ) -> Option<Heartbeat> {
        match read {
            Some((bytes, _)) => self.decode(&self.layout.heartbeat(name), &bytes, out),
            None => Some(self.cfg.heartbeat.clone()),
        }
    }

    /// Marks a dead node's heart `Asystole` (with its task's state, when known).
    fn asystole_op(&self, name: &NodeName, hb: Heartbeat, task_state: Option<TaskState>) -> Op {
        let hb = Heartbeat {
            healthy_state: HeartState::Asystole,
            task_state: task_state.unwrap_or(hb.task_state),
            ..hb
        };
        set_op(self.layout.heartbeat(name), &hb, None)
    }
}
