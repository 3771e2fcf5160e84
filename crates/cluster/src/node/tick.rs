//! What a node does every `update_time`: beat, refresh GroupState, and
//! act on its duty.

use super::*;

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    pub(super) async fn on_tick(&mut self) -> Result<()> {
        if self.state_rx.has_changed().unwrap_or(false) {
            let s = *self.state_rx.borrow_and_update();
            if s == SessionState::Expired {
                return Err(CoordError::SessionExpired.into());
            }
            if s == SessionState::Connected {
                // Back from an outage: judge afresh, nobody died of it.
                self.reset_judgement();
            }
        }
        if *self.state_rx.borrow() != SessionState::Connected {
            return Ok(());
        }
        self.beat().await?;
        self.refresh_group().await?;
        if !roles::formed(&self.group) {
            return self.maybe_elect().await;
        }
        match roles::duty(&self.group, &self.cfg.name) {
            Duty::Runner => {
                // With no backup left, every Runner judges the others (the
                // fail-over re-reads GroupState under the lock, so the
                // first to act wins and the others find nothing to do).
                if self.group.current_backup.is_empty() {
                    self.judge().await?;
                }
                self.claim_queued().await
            }
            Duty::PrimaryBackup => {
                self.judge().await?;
                self.check_backups().await
            }
            Duty::SecondaryBackup => self.check_primary().await,
            Duty::Outside => Ok(()),
        }
    }

    pub(super) async fn beat(&mut self) -> Result<()> {
        let path = self.layout.heartbeat(&self.cfg.name);
        let beat = Heartbeat {
            heart_rhythm_time: Some(chrono_now()),
            healthy_state: HeartState::Healthy,
            task_state: self.task.running_status,
            ..self.cfg.heartbeat.clone()
        };
        match metadata::write(&self.coord, &path, &beat, Some(self.beat_version)).await {
            Ok(v) => {
                self.beat_version = v;
                Ok(())
            }
            Err(MetaError::Coord(CoordError::BadVersion(_))) => {
                // Someone wrote our heart: declared dead.
                let Some((hb, v)) = metadata::read::<Heartbeat>(&self.coord, &path).await? else {
                    return Ok(());
                };
                self.beat_version = v;
                if hb.healthy_state == HeartState::Asystole {
                    self.rejoin_as_backup().await?;
                }
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}
