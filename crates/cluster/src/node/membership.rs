//! Membership: registering the node's meta-data and session node,
//! joining GroupState, the election, the node's role, and coming back
//! after a lost session.

use super::*;

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    /// Creates (or takes back) the node's meta-data and its session node.
    pub(super) async fn register(&mut self) -> Result<()> {
        let me = self.cfg.name.clone();
        let c = &self.coord;
        c.create_all(&self.layout.node(&me)).await?;
        c.create_all(&format!("{}/group", self.layout.root()))
            .await?;
        c.create_all(&self.layout.queue()).await?;
        let state = NodeState {
            group: self.cfg.group.clone(),
            role: CrawlerRole::Initial,
        };
        put(c, &self.layout.node_state(&me), &state).await?;
        match metadata::read::<Task>(c, &self.layout.task(&me)).await? {
            Some((t, v)) => (self.task, self.task_version) = (t, v),
            None => {
                metadata::create(
                    c,
                    &self.layout.task(&me),
                    &Task::default(),
                    CreateMode::Persistent,
                )
                .await?;
                (self.task, self.task_version) = (Task::default(), 0);
            }
        }
        let beat = Heartbeat {
            healthy_state: HeartState::Newborn,
            ..self.cfg.heartbeat.clone()
        };
        self.beat_version = put(c, &self.layout.heartbeat(&me), &beat).await?;
        let session = self.layout.session(&self.cfg.name);
        loop {
            match c.create(&session, b"", CreateMode::Ephemeral).await {
                Ok(_) => break,
                // Our previous session's node, not yet expired.
                Err(CoordError::NodeExists(_)) => match c.delete(&session, None).await {
                    Ok(()) | Err(CoordError::NoNode(_)) => {}
                    Err(e) => return Err(e.into()),
                },
                Err(e) => return Err(e.into()),
            }
        }
        self.state_rx = c.session_state();
        Ok(())
    }

    /// Joins GroupState under the lock: by name, never twice.
    pub(super) async fn join(&mut self) -> Result<()> {
        let me = self.cfg.name.clone();
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        let (mut g, version) = match metadata::read::<GroupState>(&self.coord, &path).await? {
            Some(found) => found,
            None => {
                metadata::create(
                    &self.coord,
                    &path,
                    &GroupState::default(),
                    CreateMode::Persistent,
                )
                .await?;
                (GroupState::default(), 0)
            }
        };
        if !g.is_member(&me) {
            if roles::formed(&g) {
                group::join_late(&mut g, &me);
            } else {
                group::join_forming(&mut g, &me);
            }
            metadata::write(&self.coord, &path, &g, Some(version)).await?;
        }
        guard.release().await?;
        self.group = g;
        self.joined_at = Instant::now();
        self.reset_judgement();
        self.sync_role().await?;
        Ok(())
    }

    pub(super) fn reset_judgement(&mut self) {
        let hb = &self.cfg.heartbeat;
        self.monitor = HeartMonitor::new(hb.update_timeout, hb.heart_rhythm_timeout);
        self.grace_until = Instant::now() + hb.update_timeout * hb.heart_rhythm_timeout;
    }

    /// Writes this node's role as its duty says.
    pub(super) async fn sync_role(&self) -> Result<()> {
        let role = match roles::duty(&self.group, &self.cfg.name) {
            Duty::Runner => CrawlerRole::Runner,
            Duty::PrimaryBackup | Duty::SecondaryBackup => CrawlerRole::BackupRunner,
            Duty::Outside if roles::formed(&self.group) => return Ok(()),
            Duty::Outside => CrawlerRole::Initial,
        };
        let state = NodeState {
            group: self.cfg.group.clone(),
            role,
        };
        put(&self.coord, &self.layout.node_state(&self.cfg.name), &state).await?;
        Ok(())
    }

    pub(super) async fn refresh_group(&mut self) -> Result<()> {
        let before = roles::duty(&self.group, &self.cfg.name);
        if let Some((g, _)) =
            metadata::read::<GroupState>(&self.coord, &self.layout.group_state()).await?
        {
            self.group = g;
        }
        let now = roles::duty(&self.group, &self.cfg.name);
        if now != before {
            self.reset_judgement();
            self.sync_role().await?;
            if now == Duty::Runner {
                self.reload_task().await?;
            }
        }
        if now == Duty::Outside
            && roles::formed(&self.group)
            && !self.group.is_member(&self.cfg.name)
        {
            // Dropped from the group (declared dead): join again.
            if self.running.is_some() || !self.task.running_content.is_empty() {
                self.reload_task().await?;
            }
            self.join().await?;
        }
        Ok(())
    }

    pub(super) async fn maybe_elect(&mut self) -> Result<()> {
        let expected = self.cfg.runners + self.cfg.backups;
        let waited = self.joined_at.elapsed();
        if !roles::ready_to_elect(
            self.group.current_crawler.len(),
            expected,
            waited,
            self.cfg.formation_timeout,
        ) {
            return Ok(());
        }
        let path = self.layout.group_state();
        let lock = Lock::new(self.coord.clone(), self.layout.group_lock());
        let guard = lock.acquire(self.cfg.lock_timeout).await?;
        if let Some((g, v)) = metadata::read::<GroupState>(&self.coord, &path).await?
            && !roles::formed(&g)
        {
            let elected = group::elect(&g.current_crawler, self.cfg.runners);
            metadata::write(&self.coord, &path, &elected, Some(v)).await?;
            tracing::info!(runners = ?elected.current_runner, backups = ?elected.current_backup, "election");
            self.group = elected;
        }
        guard.release().await?;
        self.sync_role().await
    }

    /// Coordinator trouble: retry later on a lost connection; on an
    /// expired session, open a new one, register again and go on.
    pub(super) async fn on_error(&mut self, e: NodeError) -> Result<()> {
        let coord_error = match &e {
            NodeError::Coord(c) | NodeError::Meta(MetaError::Coord(c)) => Some(c.clone()),
            NodeError::Meta(MetaError::Decode { .. }) | NodeError::Config(_) => None,
        };
        match coord_error {
            Some(c) if c.is_retryable() => {
                tracing::debug!(node = %self.cfg.name, error = %c, "coordinator trouble; retrying");
                Ok(())
            }
            Some(CoordError::SessionExpired) => {
                tracing::warn!(node = %self.cfg.name, "coordinator session expired; registering again");
                let mut pause = Duration::from_millis(100);
                loop {
                    match self.reconnect().await {
                        Ok(()) => return Ok(()),
                        Err(e) if matches!(&e, NodeError::Coord(c) if !c.is_retryable() && *c != CoordError::SessionExpired) =>
                        {
                            return Err(e);
                        }
                        Err(_) => {
                            tokio::time::sleep(pause).await;
                            pause = (pause * 2).min(Duration::from_secs(5));
                        }
                    }
                }
            }
            _ => Err(e),
        }
    }

    pub(super) async fn reconnect(&mut self) -> Result<()> {
        self.coord = (self.connect)().await?;
        self.register().await?;
        self.join().await
    }
}
