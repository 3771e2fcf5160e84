//! The crawl engine's durable state, kept in a store: which store, which
//! job, and the adapter from the store's API to the engine's port.

use std::time::Duration;

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_crawl::state::{Batch, CrawlState, Resumed, StateError};
use crawlkeeper_store::location::{redact, scrub};
use crawlkeeper_store::{JobId, JobSpec, Store, StoreError};
use url::Url;

use crate::args::StoreArgs;
use crate::exit::CliError;

/// Longest a commit is held back to gather more finished pages: a store's
/// transaction has a fixed cost (its log write and locks) that a commit per
/// page pays again and again; at a few thousand pages per second and more,
/// a millisecond gathers tens of them (the engine's group-commit policy).
pub const COMMIT_WAIT: Duration = Duration::from_millis(1);

/// The engine's state, in a store, for one job.
pub struct StoreState {
    store: Box<dyn Store>,
    job: JobId,
}

impl StoreState {
    /// The state of `job` in `store`.
    pub fn new(store: Box<dyn Store>, job: JobId) -> Self {
        Self { store, job }
    }
}

fn state_error(e: StoreError) -> StateError {
    if e.is_retryable() {
        StateError::Unavailable(e.to_string())
    } else {
        StateError::Fatal(e.to_string())
    }
}

impl CrawlState for StoreState {
    fn resume(&mut self) -> Result<Resumed, StateError> {
        self.store.resume(self.job).map_err(state_error)
    }

    fn apply(&mut self, batch: &mut Batch) -> Result<(), StateError> {
        self.store.apply(self.job, batch).map_err(state_error)
    }

    fn commit_wait(&self) -> Duration {
        COMMIT_WAIT
    }

    fn survives_crash(&self) -> bool {
        true
    }
}

/// Opens the store the arguments name (creating a SQLite file that does
/// not exist). Messages show the location with its password hidden.
pub fn open_store(args: &StoreArgs) -> Result<Box<dyn Store>, CliError> {
    let location = args.location();
    let shown = redact(&location);
    crawlkeeper_store::open(&location).map_err(|e| {
        let why = scrub(&e.to_string(), &location);
        match e {
            StoreError::Corrupt(_) | StoreError::Backend(_) => {
                CliError::Usage(format!("cannot use the crawl state at '{shown}': {why}"))
            }
            _ => CliError::Fatal(anyhow::anyhow!(
                "cannot open the crawl state at '{shown}': {why}"
            )),
        }
    })
}

/// Opens a store that must exist already: a SQLite file that is not there
/// is an error (a typo must not leave an empty database behind).
pub fn open_existing_store(args: &StoreArgs) -> Result<Box<dyn Store>, CliError> {
    if args.store.is_none() && !args.state.exists() {
        return Err(CliError::Usage(format!(
            "state file '{}' does not exist",
            args.state.display()
        )));
    }
    open_store(args)
}

/// The job a crawl belongs to: named by a hash of its seeds and scope, so
/// that running the same command again finds it.
pub fn job_spec(config: &CrawlConfig, seeds: &[Url]) -> JobSpec {
    let seeds: Vec<String> = seeds.iter().map(Url::to_string).collect();
    let scope = serde_json::to_string(&config.scope).unwrap_or_default();
    let identity = format!("{}\n{scope}", seeds.join("\n"));
    let name = format!(
        "{:012x}",
        xxhash_rust::xxh3::xxh3_64(identity.as_bytes()) >> 16
    );
    JobSpec {
        name,
        seeds,
        options: serde_json::to_string(config).unwrap_or_default(),
        shards: 1,
    }
}

/// A store error as the command's error.
pub fn fatal(e: StoreError) -> CliError {
    CliError::Fatal(anyhow::anyhow!(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seeds_and_scope_make_the_same_job() {
        let seeds = [Url::parse("http://a.test/").unwrap()];
        let mut config = CrawlConfig::default();
        let a = job_spec(&config, &seeds);
        config.engine.max_workers = 7;
        assert_eq!(
            job_spec(&config, &seeds).name,
            a.name,
            "concurrency is not identity"
        );
        config.scope.max_depth = 2;
        assert_ne!(job_spec(&config, &seeds).name, a.name, "scope is");
        assert_eq!(a.name.len(), 12);
    }
}
