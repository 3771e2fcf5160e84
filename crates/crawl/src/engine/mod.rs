//! The engine: owns the frontier, the sink and the counts, starts requests
//! up to the limits and as politeness allows, and stops in order on
//! completion, timeout or shutdown.
//!
//! One task (the caller of [`Engine::run`]) owns all mutable crawl state.
//! Requests run as spawned tasks that own nothing but their job and report
//! back through a `JoinSet`.

mod depth_queue;
mod frontier;
mod records;

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_model::Authority;
use futures_util::FutureExt;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};
use tracing::{error, info, warn};
use url::Url;

pub use frontier::{Frontier, KeyHasher, RequestReport};

use crate::config::{ConfigError, CrawlConfig};
use crate::pipeline::{Discovered, Job, Pipeline, Processed, url_key};
use crate::registry::Registry;
use crate::robots::RobotsRules;
use crate::sink::{Sink, SinkError};
use crate::summary::{AuthorityStats, StopReason, Summary};
use frontier::{Next, Slot};

/// How often progress is logged.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// A crawl that cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A seed is not a crawlable URL.
    #[error("seed '{0}' is not an http(s) URL with a host")]
    BadSeed(String),
    /// Records could not be written.
    #[error(transparent)]
    Sink(#[from] SinkError),
}

enum TaskOutput {
    Robots {
        slot: Slot,
        rules: RobotsRules,
    },
    Page {
        slot: Slot,
        job: Job,
        processed: Box<Processed>,
    },
}

/// A configured crawl, ready to run.
pub struct Engine {
    config: CrawlConfig,
    pipeline: Arc<Pipeline>,
    frontier: Frontier,
    sink: Box<dyn Sink>,
    stats: Vec<AuthorityStats>,
    done: u64,
}

impl Engine {
    /// Builds the pipeline from `registry` and queues the seeds. Every
    /// configuration problem is reported at once.
    pub fn new(
        config: CrawlConfig,
        seeds: Vec<Url>,
        registry: &Registry,
        sink: Box<dyn Sink>,
    ) -> Result<Self, EngineError> {
        let pipeline = registry.build(&config, &seeds)?;
        let mut frontier = Frontier::new(
            config.engine.per_host,
            config.scope.max_pages,
            config.scope.respect_robots,
            config.politeness.clone(),
            fastrand::u64(..),
        );
        let now = Instant::now();
        for mut url in seeds {
            if !matches!(url.scheme(), "http" | "https") || Authority::of(&url).is_err() {
                return Err(EngineError::BadSeed(url.to_string()));
            }
            pipeline.normalizer().normalize(&mut url);
            frontier.offer(
                Discovered {
                    key: url_key(&url),
                    job: Job::seed(url),
                },
                now,
            );
        }
        Ok(Self {
            config,
            pipeline: Arc::new(pipeline),
            frontier,
            sink,
            stats: Vec::new(),
            done: 0,
        })
    }

    /// Runs the crawl until nothing is left, the run timeout expires or
    /// `shutdown` completes. In-flight requests get the shutdown grace to
    /// finish; every record received is written and flushed.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<Summary, EngineError> {
        let started = Instant::now();
        let deadline = started + self.config.engine.run_timeout;
        let mut tasks: JoinSet<TaskOutput> = JoinSet::new();
        let mut progress = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
        tokio::pin!(shutdown);
        let stop = loop {
            let now = Instant::now();
            self.frontier.release_due(now);
            self.dispatch(&mut tasks, now);
            if tasks.is_empty() && self.frontier.is_idle() {
                break StopReason::Finished;
            }
            let wake = self.frontier.next_wake();
            tokio::select! {
                biased;
                () = &mut shutdown => break StopReason::Interrupted,
                () = sleep_until(deadline) => break StopReason::Timeout,
                Some(joined) = tasks.join_next() => self.complete(joined)?,
                () = sleep_until(wake.unwrap_or(deadline)), if wake.is_some() => {}
                _ = progress.tick() => self.log_progress(started),
            }
        };
        if stop != StopReason::Finished {
            info!(
                ?stop,
                in_flight = tasks.len(),
                "stopping: waiting for in-flight requests"
            );
            let grace = Instant::now() + self.config.engine.shutdown_grace;
            loop {
                tokio::select! {
                    () = sleep_until(grace) => break,
                    joined = tasks.join_next() => match joined {
                        Some(joined) => self.complete(joined)?,
                        None => break,
                    },
                }
            }
            tasks.abort_all();
        }
        self.sink.flush()?;
        let authorities: BTreeMap<Authority, AuthorityStats> = self
            .stats
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != AuthorityStats::default())
            .map(|(slot, s)| (self.frontier.authority(slot).clone(), s.clone()))
            .collect();
        Ok(Summary {
            authorities,
            elapsed: started.elapsed(),
            stop,
            pending: self.frontier.pending() + tasks.len() as u64,
        })
    }

    /// Starts requests while there are free workers and ready authorities.
    fn dispatch(&mut self, tasks: &mut JoinSet<TaskOutput>, now: Instant) {
        while tasks.len() < self.config.engine.max_workers {
            let Some(next) = self.frontier.next_start(now) else {
                break;
            };
            let pipeline = self.pipeline.clone();
            match next {
                Next::Robots { slot, authority } => {
                    tasks.spawn(async move {
                        let rules = RobotsRules::fetch(pipeline.fetcher(), &authority).await;
                        TaskOutput::Robots { slot, rules }
                    });
                }
                Next::Page { slot, job, robots } => {
                    tasks.spawn(async move {
                        let run = AssertUnwindSafe(pipeline.process(&job, &robots));
                        let processed = run.catch_unwind().await.unwrap_or_else(|panic| {
                            let why = panic
                                .downcast_ref::<&str>()
                                .map(|s| (*s).to_owned())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            records::internal_error(&job, &why)
                        });
                        TaskOutput::Page {
                            slot,
                            job,
                            processed: Box::new(processed),
                        }
                    });
                }
            }
        }
    }

    fn complete(
        &mut self,
        joined: Result<TaskOutput, tokio::task::JoinError>,
    ) -> Result<(), SinkError> {
        let output = match joined {
            Ok(o) => o,
            Err(e) => {
                // Panics are caught inside the task, so this is a cancellation.
                error!(error = %e, "request task ended abnormally");
                return Ok(());
            }
        };
        let now = Instant::now();
        match output {
            TaskOutput::Robots { slot, rules } => self.frontier.robots_known(slot, rules, now),
            TaskOutput::Page {
                slot,
                job,
                processed,
            } => {
                let Processed {
                    record,
                    discovered,
                    retry,
                } = *processed;
                let report = RequestReport {
                    response_time: record.response_ms.map(Duration::from_millis),
                    failed: retry.is_some(),
                };
                self.frontier.request_done(slot, now, report);
                if report.failed {
                    self.stats_of(slot).note_failure(&record);
                }
                let depth = job.depth;
                if let Some(hint) = retry
                    && self.frontier.retry(slot, job, now, hint.after).is_none()
                {
                    self.stats_of(slot).retries += 1;
                    return self.write_skipped();
                }
                self.write(slot, &record)?;
                // Its own links first: they are shallower than any it releases.
                self.frontier.offer_batch(slot, depth, discovered, now);
                self.frontier.job_finished(slot, depth, now);
            }
        }
        self.write_skipped()
    }

    fn stats_of(&mut self, slot: Slot) -> &mut AuthorityStats {
        if self.stats.len() <= slot {
            self.stats.resize(slot + 1, AuthorityStats::default());
        }
        &mut self.stats[slot]
    }

    fn write(
        &mut self,
        slot: Slot,
        record: &crawlkeeper_model::CrawlRecord,
    ) -> Result<(), SinkError> {
        self.sink.write(record)?;
        self.stats_of(slot).add(record);
        self.done += 1;
        Ok(())
    }

    /// Writes a skipped record for every URL of an abandoned authority.
    fn write_skipped(&mut self) -> Result<(), SinkError> {
        for (slot, job) in self.frontier.take_skipped() {
            let limit = self.config.politeness.max_host_errors;
            if !self.stats_of(slot).abandoned {
                self.stats_of(slot).abandoned = true;
                warn!(
                    authority = %self.frontier.authority(slot),
                    failures = limit,
                    "abandoning authority after consecutive failures"
                );
            }
            self.write(slot, &records::skipped(&job, limit))?;
        }
        Ok(())
    }

    fn log_progress(&self, started: Instant) {
        let secs = started.elapsed().as_secs_f64();
        info!(
            done = self.done,
            queued = self.frontier.pending(),
            seen = self.frontier.seen(),
            rate = format!("{:.0}/s", self.done as f64 / secs),
            "progress"
        );
    }
}
