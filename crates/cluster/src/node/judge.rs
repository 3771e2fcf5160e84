//! The judge: Runners' hearts, fail-over in one transaction (with
//! fencing), and dead backups.

use super::*;

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    /// Judges the Runners' hearts; fails dead ones over.
    pub(super) async fn judge(&mut self) -> Result<()> {
        let now = Instant::now();
        let me = self.cfg.name.clone();
        let runners: Vec<NodeName> = self
            .group
            .current_runner
            .iter()
            .filter(|r| **r != me)
            .cloned()
            .collect();
        self.monitor.track(&runners, now);
        for r in &runners {
            if let Some(v) = self.coord.exists(&self.layout.heartbeat(r)).await? {
                self.monitor.observe(r, v, now);
            }
            let session = self.layout.session(r);
            if now >= self.grace_until && self.coord.exists(&session).await?.is_none() {
                self.monitor.session_gone(r);
            }
        }
        let dead: Vec<NodeName> = self
            .monitor
            .check(now)
            .into_iter()
            .filter(|(_, v)| *v == Verdict::Dead)
            .map(|(n, _)| n)
            .collect();
        if dead.is_empty() {
            return Ok(());
        }
        self.fail_over(&dead).await
    }

    /// Replaces dead Runners under the lock, in one transaction: each is
    /// marked `dead-runner` / `Asystole`, its task node fenced (epoch + 1,
    /// owner = heir, no items), its task given to its heir or queued, and
    /// GroupState updated.
    pub(super) async fn fail_over(&mut self, dead: &[NodeName]) -> Result<()> {
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        let Some((mut g, gv)) = metadata::read::<GroupState>(&self.coord, &path).await? else {
            guard.release().await?;
            return Ok(());
        };
        let mut ops = Vec::new();
        for (d, heir) in roles::heirs(&g, dead) {
            let Some((t, tv)) = metadata::read::<Task>(&self.coord, &self.layout.task(&d)).await?
            else {
                continue;
            };
            let epoch = t.epoch + 1;
            // Fenced: a new epoch and owner. A task that moves on leaves an
            // empty node behind; a finished one keeps its record here.
            let fenced = match progress::take_over(&t) {
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
            ops.push(Op::Set {
                path: self.layout.task(&d),
                data: encode(&fenced),
                version: Some(tv),
            });
            ops.push(self.role_op(&d, CrawlerRole::DeadRunner));
            ops.push(self.asystole_op(&d, Some(t.running_status)).await?);
            let taken = progress::take_over(&t).map(|t| Task {
                epoch,
                owner: heir.clone(),
                ..t
            });
            self.hand_over(&mut ops, heir.as_ref(), taken, epoch)
                .await?;
            match heir {
                Some(h) => {
                    tracing::warn!(dead = %d, heir = %h, "runner dead; backup takes over its task");
                    group::replace_runner(&mut g, &d, &h);
                }
                None => {
                    tracing::warn!(dead = %d, "runner dead and no backup left; its task goes to the queue");
                    group::drop_runner(&mut g, &d);
                }
            }
        }
        if !ops.is_empty() {
            ops.push(Op::Set {
                path: path.clone(),
                data: encode(&g),
                version: Some(gv),
            });
            self.coord.multi(&ops).await?;
            self.group = g;
        }
        guard.release().await?;
        if roles::duty(&self.group, &self.cfg.name) == Duty::Runner {
            self.reload_task().await?;
        }
        self.sync_role().await
    }

    /// Adds the operations that give `task` (what is left of a Runner's
    /// task, if anything) to `heir` as a Runner, or, with no heir, to the
    /// queue; all under the new `epoch`.
    pub(super) async fn hand_over(
        &self,
        ops: &mut Vec<Op>,
        heir: Option<&NodeName>,
        task: Option<Task>,
        epoch: u64,
    ) -> Result<()> {
        match heir {
            Some(h) => {
                let (_, hv) = self.coord.get(&self.layout.task(h)).await?;
                let given = Task {
                    epoch,
                    owner: Some(h.clone()),
                    ..task.unwrap_or_default()
                };
                ops.push(Op::Set {
                    path: self.layout.task(h),
                    data: encode(&given),
                    version: Some(hv),
                });
                ops.push(self.role_op(h, CrawlerRole::Runner));
            }
            None => {
                if let Some(t) = task {
                    ops.push(Op::Create {
                        path: crate::path::join(&self.layout.queue(), "task-"),
                        data: encode(&Task {
                            epoch,
                            owner: None,
                            ..t
                        }),
                        mode: CreateMode::PersistentSequential,
                    });
                }
            }
        }
        Ok(())
    }

    /// The primary backup records backups whose session is gone.
    pub(super) async fn check_backups(&mut self) -> Result<()> {
        if Instant::now() < self.grace_until {
            return Ok(());
        }
        let me = self.cfg.name.clone();
        for b in self.group.current_backup.clone() {
            if b != me && self.coord.exists(&self.layout.session(&b)).await?.is_none() {
                self.drop_dead_backup(&b).await?;
            }
        }
        Ok(())
    }

    /// A secondary backup takes the primary's place when its session is gone.
    pub(super) async fn check_primary(&mut self) -> Result<()> {
        if Instant::now() < self.grace_until {
            return Ok(());
        }
        let primary = self
            .group
            .current_backup
            .iter()
            .find(|b| b.index() == self.group.standby_id)
            .cloned();
        if let Some(p) = primary
            && self.coord.exists(&self.layout.session(&p)).await?.is_none()
        {
            self.drop_dead_backup(&p).await?;
        }
        Ok(())
    }

    pub(super) async fn drop_dead_backup(&mut self, b: &NodeName) -> Result<()> {
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        if let Some((mut g, gv)) = metadata::read::<GroupState>(&self.coord, &path).await?
            && g.current_backup.contains(b)
            && self.coord.exists(&self.layout.session(b)).await?.is_none()
        {
            group::drop_backup(&mut g, b);
            let ops = [
                self.role_op(b, CrawlerRole::DeadBackupRunner),
                self.asystole_op(b, None).await?,
                Op::Set {
                    path: path.clone(),
                    data: encode(&g),
                    version: Some(gv),
                },
            ];
            self.coord.multi(&ops).await?;
            tracing::warn!(dead = %b, "backup runner dead");
            self.group = g;
        }
        guard.release().await?;
        self.sync_role().await
    }

    /// Sets a node's role.
    fn role_op(&self, name: &NodeName, role: CrawlerRole) -> Op {
        Op::Set {
            path: self.layout.node_state(name),
            data: encode(&NodeState {
                group: self.cfg.group.clone(),
                role,
            }),
            version: None,
        }
    }

    /// Marks a dead node's heart `Asystole` (with its task's state, when known).
    async fn asystole_op(&self, name: &NodeName, task_state: Option<TaskState>) -> Result<Op> {
        let hb = metadata::read::<Heartbeat>(&self.coord, &self.layout.heartbeat(name))
            .await?
            .map(|(h, _)| h)
            .unwrap_or_else(|| self.cfg.heartbeat.clone());
        let hb = Heartbeat {
            healthy_state: HeartState::Asystole,
            task_state: task_state.unwrap_or(hb.task_state),
            ..hb
        };
        Ok(Op::Set {
            path: self.layout.heartbeat(name),
            data: encode(&hb),
            version: None,
        })
    }
}
