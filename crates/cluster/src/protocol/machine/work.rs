//! The node's own work: its heartbeat, its task (watched, re-read,
//! fenced), its items (started and recorded by compare-and-set), and
//! queued tasks claimed when idle.

use crawlkeeper_model::cluster::{HeartState, Heartbeat, ResultDetail, TaskState};

use super::*;
use crate::protocol::task as progress;

/// Queued tasks a Runner looking for work reads at once.
const CLAIM_BATCH: usize = 8;

impl Machine {
    /// Refreshes this node's heartbeat with compare-and-set: a conflict
    /// means someone else wrote it (declared dead: `Asystole`).
    pub(super) fn beat(&mut self, now: Now, out: &mut Vec<Command>) {
        let beat = Heartbeat {
            heart_rhythm_time: Some(now.wall),
            healthy_state: HeartState::Healthy,
            task_state: self.task.running_status,
            ..self.cfg.heartbeat.clone()
        };
        let path = self.layout.heartbeat(&self.cfg.name);
        self.io(
            Flow::Beat,
            vec![set(path, &beat, Some(self.beat_version))],
            out,
        );
    }

    pub(super) fn beat_conflict(&mut self, reply: Reply, out: &mut Vec<Command>) {
        let Some((bytes, version)) = reply.value() else {
            return;
        };
        let path = self.layout.heartbeat(&self.cfg.name);
        let Some(hb) = self.decode::<Heartbeat>(&path, &bytes, out) else {
            return;
        };
        self.beat_version = version;
        if hb.healthy_state == HeartState::Asystole {
            self.then([Step::Rejoin]);
        }
    }

    /// Reads the task node and watches it (a Runner waits for work on this
    /// watch, never by polling).
    pub(super) fn watch_task(&mut self, out: &mut Vec<Command>) {
        let path = self.layout.task(&self.cfg.name);
        self.io(Flow::Watch, vec![Call::GetAndWatch(path)], out);
    }

    pub(super) fn watched(&mut self, reply: Reply) {
        self.watch_armed = true;
        if let Some((bytes, version)) = reply.value()
            && version != self.task_version
            && let Ok(t) = serde_json::from_slice::<Task>(&bytes)
        {
            self.adopt(t, version);
        }
    }

    /// A task read from our node: ours, or taken from us.
    pub(super) fn adopt(&mut self, t: Task, version: Version) {
        self.task = t;
        self.task_version = version;
    }

    /// Whether the task node names another owner: taken over.
    pub(super) fn fenced(&self) -> bool {
        self.task
            .owner
            .as_ref()
            .is_some_and(|o| o != &self.cfg.name)
    }

    /// Adopts the task read in `reply`; `false` when it did not decode
    /// (the node then ends).
    pub(super) fn take_task(&mut self, reply: Reply, out: &mut Vec<Command>) -> bool {
        if let Some((bytes, version)) = reply.value() {
            let path = self.layout.task(&self.cfg.name);
            let Some(t) = self.decode::<Task>(&path, &bytes, out) else {
                return false;
            };
            self.adopt(t, version);
        }
        true
    }

    pub(super) fn reload_task(&mut self, out: &mut Vec<Command>) {
        let path = self.layout.task(&self.cfg.name);
        self.io(Flow::Reload, vec![Call::Get(path)], out);
    }

    pub(super) fn reloaded(&mut self, reply: Reply, out: &mut Vec<Command>) {
        if self.take_task(reply, out) && self.fenced() {
            self.then([Step::Rejoin]);
        }
    }

    /// Starts what this Runner may run now (an outcome not yet recorded
    /// goes first): the next item in list order when sequential and idle,
    /// every pending item not running yet when concurrent.
    pub(super) fn advance(&mut self, out: &mut Vec<Command>) {
        if let Some((position, outcome)) = self.unrecorded.pop_front() {
            return self.then([Step::Record(position, outcome), Step::Advance]);
        }
        if self.stopping || self.duty() != Duty::Runner {
            return;
        }
        let pending = progress::pending(&self.task);
        let start: Vec<usize> = match self.cfg.items {
            ItemMode::Sequential if self.running.is_empty() => {
                pending.first().copied().into_iter().collect()
            }
            ItemMode::Sequential => Vec::new(),
            ItemMode::Concurrent => pending
                .into_iter()
                .filter(|p| !self.running.contains(p))
                .collect(),
        };
        if start.is_empty() {
            return;
        }
        let mut t = self.task.clone();
        for &position in &start {
            progress::start_item(&mut t, position);
        }
        t.owner = Some(self.cfg.name.clone());
        let path = self.layout.task(&self.cfg.name);
        let call = set(path, &t, Some(self.task_version));
        self.io(Flow::StartItems(start, t), vec![call], out);
    }

    pub(super) fn items_started(
        &mut self,
        positions: Vec<usize>,
        t: Task,
        reply: Reply,
        out: &mut Vec<Command>,
    ) {
        for &position in &positions {
            let item = t.running_content[position].clone();
            self.running.insert(position);
            out.push(Command::Run { position, item });
        }
        self.adopt(t, reply.version());
    }

    /// Records an item's outcome in the task, once.
    pub(super) fn record(&mut self, position: usize, o: ItemOutcome, out: &mut Vec<Command>) {
        let Some(item) = self.task.running_content.get(position) else {
            return; // the task was taken from us meanwhile
        };
        let detail = ResultDetail {
            task_id: item.task_id.clone(),
            state: if o.error.is_some() {
                TaskState::Error
            } else {
                TaskState::Done
            },
            status_code: o.status_code,
            response: o.response.clone(),
            error_msg: o.error.clone(),
        };
        let mut t = self.task.clone();
        if progress::record(&mut t, position, detail) {
            let path = self.layout.task(&self.cfg.name);
            let call = set(path, &t, Some(self.task_version));
            self.io(Flow::Record(position, o, t), vec![call], out);
        }
    }

    /// A Runner claims the first queued task: a sequential one when it has
    /// nothing left to run, a concurrent one at any time.
    pub(super) fn claim_queued(&mut self, out: &mut Vec<Command>) {
        let busy = !self.running.is_empty() || progress::next_item(&self.task).is_some();
        if self.stopping || (busy && self.cfg.items == ItemMode::Sequential) {
            return;
        }
        self.io(
            Flow::ClaimList,
            vec![Call::Children(self.layout.queue())],
            out,
        );
    }

    pub(super) fn claim_list(&mut self, reply: Reply, now: Now, out: &mut Vec<Command>) {
        let Reply::Children(mut names) = reply else {
            unreachable!("the runtime answered children with {reply:?}");
        };
        names.sort();
        let queue = self.layout.queue();
        let paths: Vec<String> = names.iter().map(|n| crate::path::join(&queue, n)).collect();
        self.queue_seen.retain(|p, _| paths.contains(p));
        let paths: Vec<String> = paths.into_iter().take(CLAIM_BATCH).collect();
        if paths.is_empty() {
            return;
        }
        for p in &paths {
            self.queue_seen.entry(p.clone()).or_insert(now.mono);
        }
        let calls = paths.iter().map(|p| Call::Get(p.clone())).collect();
        self.io(Flow::ClaimRead(paths), calls, out);
    }

    /// Whether this Runner may claim the queued task `t` at `path` now: a
    /// task meant for another live Runner waits a heart limit for it.
    fn may_claim(&self, path: &str, t: &Task, now: Instant) -> bool {
        match &t.owner {
            Some(o) if *o != self.cfg.name && self.group.current_runner.contains(o) => {
                let hb = &self.cfg.heartbeat;
                let patience = hb.update_timeout * hb.heart_rhythm_timeout;
                self.queue_seen
                    .get(path)
                    .is_some_and(|&seen| now.duration_since(seen) >= patience)
            }
            _ => true,
        }
    }

    /// Claims the first of the queued tasks read that this Runner may take.
    pub(super) fn claim_read(
        &mut self,
        paths: Vec<String>,
        replies: impl Iterator<Item = Reply>,
        now: Now,
        out: &mut Vec<Command>,
    ) {
        for (path, reply) in paths.into_iter().zip(replies) {
            let Some((bytes, version)) = reply.value() else {
                continue; // claimed by another Runner meanwhile
            };
            let mut t = match metadata::decode::<Task>(&path, &bytes) {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!(error = %e, "a queued task does not decode; left in the queue");
                    continue;
                }
            };
            if !self.may_claim(&path, &t, now.mono) {
                continue;
            }
            if self.cfg.items == ItemMode::Concurrent {
                // Added to this Runner's own work; appended, so the items it
                // runs keep their positions.
                let Some(merged) = progress::merge(&self.task, &t) else {
                    // Nothing it does not run already: the queued task goes.
                    let ops = vec![Op::Delete {
                        path,
                        version: Some(version),
                    }];
                    return self.io(Flow::Ack(Vec::new()), vec![Call::Multi(ops)], out);
                };
                if encode(&merged).len() > progress::MAX_TASK_BYTES {
                    tracing::warn!(
                        node = %self.cfg.name,
                        "a queued task does not fit beside this runner's own; left for another runner"
                    );
                    continue;
                }
                t = merged;
            }
            t.owner = Some(self.cfg.name.clone());
            let ops = vec![
                Op::Delete {
                    path,
                    version: Some(version),
                },
                Op::Set {
                    path: self.layout.task(&self.cfg.name),
                    data: encode(&t),
                    version: Some(self.task_version),
                },
            ];
            return self.io(Flow::ClaimTake(t), vec![Call::Multi(ops)], out);
        }
    }

    pub(super) fn claimed(&mut self, t: Task, reply: Reply) {
        if let Reply::Multi(results) = reply
            && let Some(OpResult::Set(version)) = results.get(1)
        {
            self.adopt(t, *version);
        }
    }
}
