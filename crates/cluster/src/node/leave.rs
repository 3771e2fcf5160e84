//! Graceful leave (Spyder's quit / quit-ack).

use super::*;

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    /// Leaves on request: finishes the current item, hands the task over at
    /// once (to the primary backup, or to the queue), records the leave.
    pub(super) async fn leave(mut self) -> Result<Exit> {
        if let Some(r) = self.running.take() {
            let outcome = r.handle.await.ok();
            self.record_item(r.position, outcome).await?;
        }
        let me = self.cfg.name.clone();
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        if let Some((mut g, gv)) = metadata::read::<GroupState>(&self.coord, &path).await? {
            let mut ops = Vec::new();
            let unfinished = progress::take_over(&self.task);
            if g.current_runner.contains(&me) {
                let heir = roles::heirs(&g, std::slice::from_ref(&me))
                    .into_iter()
                    .next()
                    .and_then(|(_, h)| h);
                let epoch = self.task.epoch + 1;
                ops.push(Op::Set {
                    path: self.layout.task(&me),
                    data: encode(&Task {
                        epoch,
                        owner: heir.clone(),
                        ..Task::default()
                    }),
                    version: Some(self.task_version),
                });
                group::leave(&mut g, &me);
                self.hand_over(&mut ops, heir.as_ref(), unfinished, epoch)
                    .await?;
                if let Some(h) = &heir {
                    group::promote(&mut g, h);
                }
            } else {
                group::leave(&mut g, &me);
            }
            ops.push(Op::Set {
                path: path.clone(),
                data: encode(&g),
                version: Some(gv),
            });
            let hb = Heartbeat {
                healthy_state: HeartState::ApparentDeath,
                task_state: self.task.running_status,
                heart_rhythm_time: Some(chrono_now()),
                ..self.cfg.heartbeat.clone()
            };
            ops.push(Op::Set {
                path: self.layout.heartbeat(&me),
                data: encode(&hb),
                version: None,
            });
            self.coord.multi(&ops).await?;
            tracing::info!(node = %me, "left the group; task handed over");
        }
        guard.release().await?;
        self.coord.close().await?;
        Ok(Exit::Left)
    }
}
