//! The Runner's work: its task (watched, re-read, fenced), its items
//! (started, recorded by compare-and-set), and queued tasks.

use super::*;

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    pub(super) async fn arm_task_watch(&mut self) -> Option<Watch> {
        match self
            .coord
            .get_and_watch(&self.layout.task(&self.cfg.name))
            .await
        {
            Ok((Some((bytes, version)), w)) => {
                if version != self.task_version
                    && let Ok(t) = serde_json::from_slice::<Task>(&bytes)
                {
                    self.adopt_task(t, version);
                }
                Some(w)
            }
            _ => None,
        }
    }

    /// A task read from our node: ours, or taken from us.
    pub(super) fn adopt_task(&mut self, t: Task, version: Version) {
        self.task = t;
        self.task_version = version;
    }

    pub(super) fn fenced(&self) -> bool {
        self.task
            .owner
            .as_ref()
            .is_some_and(|o| o != &self.cfg.name)
    }

    pub(super) async fn reload_task(&mut self) -> Result<()> {
        if let Some((t, v)) =
            metadata::read::<Task>(&self.coord, &self.layout.task(&self.cfg.name)).await?
        {
            self.adopt_task(t, v);
        }
        if self.fenced() {
            return self.rejoin_as_backup().await;
        }
        Ok(())
    }

    /// Declared dead while alive: stop the item, drop the task, join again.
    pub(super) async fn rejoin_as_backup(&mut self) -> Result<()> {
        tracing::warn!(node = %self.cfg.name, "this node lost its task to a take-over; rejoining as a backup");
        if let Some(r) = self.running.take() {
            r.handle.abort();
        }
        self.unrecorded = None;
        // The take-over rewrote our task node (no items, epoch + 1, in the
        // same transaction that declared us dead): take that version.
        if let Some((t, v)) =
            metadata::read::<Task>(&self.coord, &self.layout.task(&self.cfg.name)).await?
        {
            self.adopt_task(t, v);
        }
        self.register().await?;
        self.join().await
    }

    /// Starts the next item when this node runs and has one.
    pub(super) async fn advance(&mut self) -> Result<()> {
        if let Some((position, outcome)) = self.unrecorded.take() {
            self.record_item(position, Some(outcome)).await?;
        }
        if self.running.is_some() || roles::duty(&self.group, &self.cfg.name) != Duty::Runner {
            return Ok(());
        }
        let Some(position) = progress::next_item(&self.task) else {
            return Ok(());
        };
        let mut t = self.task.clone();
        progress::start_item(&mut t, position);
        t.owner = Some(self.cfg.name.clone());
        self.write_task(t).await?;
        let item = self.task.running_content[position].clone();
        let runner = self.runner.clone();
        let handle = tokio::spawn(async move { runner.run(&item).await });
        self.running = Some(Running { position, handle });
        Ok(())
    }

    /// Writes our task with compare-and-set; a conflict means someone else
    /// wrote it: re-read, and stop if it was taken over.
    pub(super) async fn write_task(&mut self, t: Task) -> Result<()> {
        let path = self.layout.task(&self.cfg.name);
        match metadata::write(&self.coord, &path, &t, Some(self.task_version)).await {
            Ok(v) => {
                self.task = t;
                self.task_version = v;
                Ok(())
            }
            Err(MetaError::Coord(CoordError::BadVersion(_))) => self.reload_task().await,
            Err(e) => Err(e.into()),
        }
    }

    pub(super) async fn on_item(&mut self, outcome: Option<ItemOutcome>) -> Result<()> {
        match self.running.take() {
            Some(r) => self.record_item(r.position, outcome).await,
            None => Ok(()),
        }
    }

    pub(super) async fn record_item(
        &mut self,
        position: usize,
        outcome: Option<ItemOutcome>,
    ) -> Result<()> {
        let Some(o) = outcome else { return Ok(()) }; // aborted
        let Some(item) = self.task.running_content.get(position) else {
            return Ok(()); // the task was taken from us meanwhile
        };
        let detail = ResultDetail {
            task_id: item.task_id.clone(),
            state: if o.error.is_some() {
                TaskState::Error
            } else {
                TaskState::Done
            },
            status_code: o.status_code,
            response: o.response,
            error_msg: o.error,
        };
        let mut t = self.task.clone();
        if progress::record(&mut t, position, detail) {
            self.write_task(t).await?;
        }
        Ok(())
    }

    pub(super) async fn claim_queued(&mut self) -> Result<()> {
        if self.running.is_some() || progress::next_item(&self.task).is_some() {
            return Ok(());
        }
        let queue = self.layout.queue();
        let Some(first) = self.coord.children(&queue).await?.into_iter().next() else {
            return Ok(());
        };
        let item_path = crate::path::join(&queue, &first);
        let Some((mut t, v)) = metadata::read::<Task>(&self.coord, &item_path).await? else {
            return Ok(());
        };
        t.owner = Some(self.cfg.name.clone());
        let ops = [
            Op::Delete {
                path: item_path,
                version: Some(v),
            },
            Op::Set {
                path: self.layout.task(&self.cfg.name),
                data: encode(&t),
                version: Some(self.task_version),
            },
        ];
        match self.coord.multi(&ops).await {
            Ok(results) => {
                if let Some(crate::OpResult::Set(version)) = results.get(1) {
                    self.adopt_task(t, *version);
                }
                Ok(())
            }
            Err(CoordError::BadVersion(_) | CoordError::NoNode(_)) => Ok(()), // another Runner got it
            Err(e) => Err(e.into()),
        }
    }
}
