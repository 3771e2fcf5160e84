//! Graceful leave (Spyder's quit / quit-ack): the current item finished
//! and recorded, the task handed over at once (to the primary backup, or
//! to the queue), the leave recorded, the session closed.

use crawlkeeper_model::cluster::{HeartState, Heartbeat};

use super::*;
use crate::protocol::{group, task as progress};

impl Machine {
    pub(super) fn leave(&mut self, out: &mut Vec<Command>) {
        if let Some((position, outcome)) = self.unrecorded.pop_front() {
            return self.then([Step::Record(position, outcome)]);
        }
        let calls = vec![self.lock(), Call::Get(self.layout.group_state())];
        self.io(Flow::LeaveRead, calls, out);
    }

    pub(super) fn leave_read(
        &mut self,
        r: impl Iterator<Item = Reply>,
        now: Now,
        out: &mut Vec<Command>,
    ) {
        let found = self.read_group(r, out);
        if self.done {
            return;
        }
        let Some((g, gv)) = found else {
            return self.io(Flow::Closing, vec![Call::Unlock, Call::Close], out);
        };
        let me = &self.cfg.name;
        let heir = if g.current_runner.contains(me) {
            roles::heirs(&g, std::slice::from_ref(me))
                .into_iter()
                .next()
                .and_then(|(_, h)| h)
        } else {
            None
        };
        match heir {
            Some(h) => {
                let call = Call::Get(self.layout.task(&h));
                self.io(Flow::LeaveGather(g, gv, h), vec![call], out);
            }
            None => self.leave_commit(g, gv, None, now, out),
        }
    }

    /// Leaves GroupState, hands an unfinished task over, marks the heart
    /// `Apparent Death`, in one transaction; then closes the session.
    pub(super) fn leave_commit(
        &mut self,
        mut g: GroupState,
        gv: Version,
        heir: Option<(NodeName, Option<Version>)>,
        now: Now,
        out: &mut Vec<Command>,
    ) {
        let me = self.cfg.name.clone();
        let mut ops = Vec::new();
        if g.current_runner.contains(&me) {
            let epoch = self.task.epoch + 1;
            let fenced = Task {
                epoch,
                owner: heir.as_ref().map(|(h, _)| h.clone()),
                ..Task::default()
            };
            ops.push(set_op(
                self.layout.task(&me),
                &fenced,
                Some(self.task_version),
            ));
            group::leave(&mut g, &me);
            let unfinished = progress::take_over(&self.task);
            self.hand_over(&mut ops, heir.as_ref(), unfinished, epoch, None);
            if let Some((h, _)) = &heir {
                group::promote(&mut g, h);
            }
        } else {
            group::leave(&mut g, &me);
        }
        ops.push(set_op(self.layout.group_state(), &g, Some(gv)));
        let hb = Heartbeat {
            healthy_state: HeartState::ApparentDeath,
            task_state: self.task.running_status,
            heart_rhythm_time: Some(now.wall),
            ..self.cfg.heartbeat.clone()
        };
        ops.push(set_op(self.layout.heartbeat(&me), &hb, None));
        let calls = vec![Call::Multi(ops), Call::Unlock, Call::Close];
        self.io(Flow::Closing, calls, out);
    }
}
