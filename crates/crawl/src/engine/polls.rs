//! Polls of a job shared with other processes: what they left for this
//! one, and whether the whole job is complete.

use tokio::time::Instant;

use super::{Engine, EngineError};
use crate::state::{Command, Polled, StateError, StateHandle};

/// Where the crawl stands with the polls of a shared job.
#[derive(Default)]
pub(super) struct Polls {
    /// A poll was sent and not yet answered.
    pub(super) in_flight: bool,
    /// The newest poll was sent while nothing was left to do here.
    pub(super) sent_idle: bool,
    /// A poll sent while idle found the whole job complete.
    pub(super) complete: bool,
    /// Another process said there is news: poll as soon as none is out
    /// (and the last went out long enough ago).
    pub(super) due: bool,
    /// When the last poll was sent.
    pub(super) sent_at: Option<Instant>,
    /// Stop requests (`crawlkeeper stop`) that do not stop this run: those
    /// made before it began, or none ([`Engine::stopped_for_good`]).
    pub(super) stops_before: u64,
    /// Any stop request ends this run, also one made before it began.
    pub(super) for_good: bool,
    /// One was made since: the run stops.
    pub(super) stopping: bool,
    /// A continuous crawl with a request budget: the job's marginal
    /// value of freshness, from its rate histogram at the last poll.
    pub(super) mu: Option<f64>,
}

impl Engine {
    /// Asks the store what other processes left for this one, and whether
    /// the job is complete; `idle` when nothing is left to do here.
    pub(super) fn poll(&mut self, store: &StateHandle, idle: bool) -> Result<(), EngineError> {
        // The sweep reads every open URL of the job: once as the engine
        // falls idle, not at every poll while it stays idle.
        let sweep = idle && !self.polls.sent_idle;
        // A continuous crawl's URLs due by now go back to the queue.
        let due = self
            .config
            .revisit
            .is_some()
            .then(|| chrono::Utc::now().timestamp_millis());
        store
            .tx
            .send(Command::Poll { sweep, due })
            .map_err(|_| StateError::Fatal("state worker stopped".into()))?;
        self.polls.in_flight = true;
        self.polls.sent_idle = idle;
        self.polls.due = false;
        self.polls.sent_at = Some(Instant::now());
        Ok(())
    }

    pub(super) fn on_polled(&mut self, polled: Polled) {
        self.polls.in_flight = false;
        let news = !polled.news.is_empty() || !polled.requeued.is_empty();
        for (authority, queued) in polled.news {
            self.frontier.news(authority, queued);
        }
        for (authority, more) in polled.requeued {
            self.frontier.requeued(authority, more);
        }
        self.polls.stopping |= polled.stops.is_some_and(|n| n > self.polls.stops_before);
        if let Some(mu) = self
            .config
            .revisit
            .as_ref()
            .and_then(|r| r.mu(&polled.rates))
        {
            tracing::debug!(
                mu,
                pages = polled.rates.iter().map(|r| r.1).sum::<u64>(),
                "revisit budget spread"
            );
            self.polls.mu = Some(mu);
        }
        if let Some(seen) = polled.job_seen {
            self.frontier.job_admitted(seen);
        }
        if let Some(requisites) = polled.job_requisites {
            self.frontier.job_admitted_requisites(requisites);
        }
        if news || polled.open != Some(false) {
            // Work here again, or elsewhere: the next idle moment asks again.
            if news {
                self.polls.sent_idle = false;
            }
            return;
        }
        self.polls.complete = self.polls.sent_idle;
    }
}
