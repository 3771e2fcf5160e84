//! Membership flows: registering the node's meta-data and session node,
//! joining GroupState under the lock (by name, never twice), the
//! election, the node's role, following GroupState, and rejoining as a
//! backup after losing the task to a take-over.

use crawlkeeper_model::cluster::{CrawlerRole, HeartState, Heartbeat, NodeState};

use super::*;
use crate::protocol::group;

impl Machine {
    /// Creates (or takes back) the node's meta-data and its session node.
    pub(super) fn register(&mut self, out: &mut Vec<Command>) {
        let me = &self.cfg.name;
        let state = NodeState {
            group: self.cfg.group.clone(),
            role: CrawlerRole::Initial,
        };
        let beat = Heartbeat {
            healthy_state: HeartState::Newborn,
            ..self.cfg.heartbeat.clone()
        };
        let calls = vec![
            Call::CreateAll(self.layout.node(me)),
            Call::CreateAll(self.layout.group_dir()),
            Call::CreateAll(self.layout.queue()),
            Call::Put {
                path: self.layout.node_state(me),
                data: encode(&state),
            },
            Call::GetOrCreate {
                path: self.layout.task(me),
                data: encode(&Task::default()),
            },
            Call::Put {
                path: self.layout.heartbeat(me),
                data: encode(&beat),
            },
            Call::Ephemeral(self.layout.session(me)),
        ];
        self.io(Flow::Register, calls, out);
    }

    pub(super) fn registered(&mut self, r: impl Iterator<Item = Reply>, out: &mut Vec<Command>) {
        // Replies to the three CreateAll and the NodeState Put carry nothing.
        let mut r = r.skip(4);
        let task = next(&mut r).value();
        self.beat_version = next(&mut r).version();
        if let Some((bytes, version)) = task {
            let path = self.layout.task(&self.cfg.name);
            let Some(t) = self.decode::<Task>(&path, &bytes, out) else {
                return;
            };
            self.adopt(t, version);
            if self.fenced() && !self.running.is_empty() {
                // Taken over while this node was away: its items are not its own.
                self.running.clear();
                self.unrecorded.clear();
                out.push(Command::Abort);
            }
        }
    }

    /// Joins GroupState under the lock.
    pub(super) fn join(&mut self, out: &mut Vec<Command>) {
        let calls = vec![
            self.lock(),
            Call::GetOrCreate {
                path: self.layout.group_state(),
                data: encode(&GroupState::default()),
            },
        ];
        self.io(Flow::JoinRead, calls, out);
    }

    pub(super) fn join_read(&mut self, r: impl Iterator<Item = Reply>, out: &mut Vec<Command>) {
        let Some((mut g, version)) = self.read_group(r, out) else {
            return;
        };
        let me = self.cfg.name.clone();
        let mut calls = Vec::new();
        if !g.is_member(&me) {
            if roles::formed(&g) {
                group::join_late(&mut g, &me);
            } else {
                group::join_forming(&mut g, &me);
            }
            calls.push(set(self.layout.group_state(), &g, Some(version)));
        }
        calls.push(Call::Unlock);
        self.io(Flow::JoinWrite(g), calls, out);
    }

    pub(super) fn joined(&mut self, g: GroupState, now: Now) {
        self.group = g;
        self.joined_at = now.mono;
        self.joined_once = true;
        self.recovering = None;
        self.reset_judgement(now.mono);
        self.then([Step::SyncRole]);
    }

    /// Reads the GroupState from the second reply of `[Lock, read]`.
    pub(super) fn read_group(
        &mut self,
        r: impl Iterator<Item = Reply>,
        out: &mut Vec<Command>,
    ) -> Option<(GroupState, Version)> {
        let (bytes, version) = r.skip(1).map(Reply::value).next().flatten()?;
        let g = self.decode(&self.layout.group_state(), &bytes, out)?;
        Some((g, version))
    }

    /// Reads the GroupState under the lock, or releases the lock when it
    /// is missing (then goes on with `otherwise`).
    pub(super) fn group_under_lock(
        &mut self,
        r: impl Iterator<Item = Reply>,
        otherwise: Vec<Step>,
        out: &mut Vec<Command>,
    ) -> Option<(GroupState, Version)> {
        let found = self.read_group(r, out);
        if found.is_none() && !self.done {
            self.io(Flow::Ack(otherwise), vec![Call::Unlock], out);
        }
        found
    }

    /// Writes this node's role as its duty says.
    pub(super) fn sync_role(&mut self, out: &mut Vec<Command>) {
        let role = match self.duty() {
            Duty::Runner => CrawlerRole::Runner,
            Duty::PrimaryBackup | Duty::SecondaryBackup => CrawlerRole::BackupRunner,
            Duty::Outside if roles::formed(&self.group) => return,
            Duty::Outside => CrawlerRole::Initial,
        };
        let state = NodeState {
            group: self.cfg.group.clone(),
            role,
        };
        let path = self.layout.node_state(&self.cfg.name);
        self.io(
            Flow::Ack(Vec::new()),
            vec![Call::Put {
                path,
                data: encode(&state),
            }],
            out,
        );
    }

    pub(super) fn refresh_group(&mut self, out: &mut Vec<Command>) {
        let before = self.duty();
        let path = self.layout.group_state();
        self.io(Flow::Refresh(before), vec![Call::Get(path)], out);
    }

    pub(super) fn refreshed(
        &mut self,
        before: Duty,
        reply: Reply,
        now: Now,
        out: &mut Vec<Command>,
    ) {
        if let Some((bytes, _)) = reply.value() {
            let Some(g) = self.decode(&self.layout.group_state(), &bytes, out) else {
                return;
            };
            self.group = g;
        }
        let duty = self.duty();
        let mut steps = Vec::new();
        if duty != before {
            self.reset_judgement(now.mono);
            steps.push(Step::SyncRole);
            if duty == Duty::Runner {
                steps.push(Step::ReloadTask);
            }
        }
        if duty == Duty::Outside
            && roles::formed(&self.group)
            && !self.group.is_member(&self.cfg.name)
        {
            // Dropped from the group (declared dead): join again.
            if !self.running.is_empty() || !self.task.running_content.is_empty() {
                steps.push(Step::ReloadTask);
            }
            steps.push(Step::Join);
        }
        self.then(steps);
    }

    /// What the duty asks for at each tick.
    pub(super) fn act_on_duty(&mut self) {
        if !roles::formed(&self.group) {
            return self.then([Step::MaybeElect]);
        }
        match self.duty() {
            Duty::Runner => {
                // With no backup left, every Runner judges the others (the
                // fail-over re-reads GroupState under the lock, so the
                // first to act wins and the others find nothing to do).
                if self.group.current_backup.is_empty() {
                    self.then([Step::Judge, Step::ClaimQueued]);
                } else {
                    self.then([Step::ClaimQueued]);
                }
            }
            Duty::PrimaryBackup => self.then([Step::Judge, Step::CheckBackups]),
            Duty::SecondaryBackup => self.then([Step::CheckPrimary]),
            Duty::Outside => {}
        }
    }

    pub(super) fn maybe_elect(&mut self, now: Now, out: &mut Vec<Command>) {
        let expected = self.cfg.runners + self.cfg.backups;
        let waited = now.mono.saturating_duration_since(self.joined_at);
        if !roles::ready_to_elect(
            self.group.current_crawler.len(),
            expected,
            waited,
            self.cfg.formation_timeout,
        ) {
            return;
        }
        let calls = vec![self.lock(), Call::Get(self.layout.group_state())];
        self.io(Flow::ElectRead, calls, out);
    }

    pub(super) fn elect_read(&mut self, r: impl Iterator<Item = Reply>, out: &mut Vec<Command>) {
        let Some((g, version)) = self.group_under_lock(r, vec![Step::SyncRole], out) else {
            return;
        };
        if roles::formed(&g) {
            // Someone else held it first.
            self.group = g;
            return self.io(Flow::Ack(vec![Step::SyncRole]), vec![Call::Unlock], out);
        }
        let elected = group::elect(&g.current_crawler, self.cfg.runners);
        let calls = vec![
            set(self.layout.group_state(), &elected, Some(version)),
            Call::Unlock,
        ];
        self.io(Flow::ElectWrite(elected), calls, out);
    }

    /// Declared dead while alive: stop the item, drop the task, join again.
    pub(super) fn rejoin(&mut self, out: &mut Vec<Command>) {
        tracing::warn!(node = %self.cfg.name, "this node lost its task to a take-over; rejoining as a backup");
        if !self.running.is_empty() {
            self.running.clear();
            out.push(Command::Abort);
        }
        self.unrecorded.clear();
        // The take-over rewrote our task node (no items, epoch + 1, in the
        // same transaction that declared us dead): take that version.
        let path = self.layout.task(&self.cfg.name);
        self.io(Flow::RejoinRead, vec![Call::Get(path)], out);
    }

    pub(super) fn rejoin_read(&mut self, reply: Reply, out: &mut Vec<Command>) {
        if !self.take_task(reply, out) {
            return;
        }
        if !self.stopping {
            self.then([Step::Register, Step::Join]);
        }
    }
}
