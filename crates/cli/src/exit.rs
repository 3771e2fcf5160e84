//! How a run ends, as an exit code.

use std::process::ExitCode;

use crawlkeeper_crawl::EngineError;
use crawlkeeper_crawl::state::StateError;
use crawlkeeper_job::error::Kept;
use crawlkeeper_job::{JobError, OutputError};

/// A run that could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or input files: exit 2.
    #[error("{0}")]
    Usage(String),
    /// Anything else that stops the run: exit 1.
    #[error(transparent)]
    Fatal(#[from] anyhow::Error),
    /// Another process took over this process's shard of the job: exit 3.
    #[error("{0}; stopping")]
    Fenced(crawlkeeper_model::Fence),
}

/// How a run that did its job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing left to do: 0.
    Finished,
    /// Every authority failed: 1.
    AllFailed,
    /// The run timeout expired: 124.
    Timeout,
    /// Stopped by a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM).
    Signal(i32),
}

impl Outcome {
    /// The process exit code.
    pub fn code(self) -> ExitCode {
        ExitCode::from(match self {
            Self::Finished => 0,
            Self::AllFailed => 1,
            Self::Timeout => 124,
            Self::Signal(n) => u8::try_from(128 + n).unwrap_or(1),
        })
    }
}

impl CliError {
    /// The process exit code.
    pub fn code(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::Usage(_) => 2,
            Self::Fatal(_) => 1,
            Self::Fenced(_) => 3,
        })
    }
}

impl From<OutputError> for CliError {
    fn from(e: OutputError) -> Self {
        match e {
            OutputError::Store(e) => CliError::Fatal(e.into()),
            e => CliError::Usage(e.to_string()),
        }
    }
}

impl From<JobError> for CliError {
    /// What the user can sort out is exit 2, said in the command's words;
    /// a fence is exit 3; anything else is fatal.
    fn from(e: JobError) -> Self {
        match e {
            JobError::Held { job, shard, holder } => CliError::Usage(format!(
                "shard {shard} of job {job} is held by {holder}, a live process; \
                 use --take-over to take it (that process then stops)"
            )),
            JobError::NoEarlierCrawl { job, place } => CliError::Usage(format!(
                "--recrawl: job {job} has no earlier crawl in {place} to revisit; \
                 run it without --recrawl first"
            )),
            JobError::RecrawlReplaces {
                job,
                kept: Kept::Warc(path),
            } => CliError::Usage(format!(
                "--recrawl: '{}' holds the earlier pass of job {job}; give the new pass another \
                 --warc path (or --overwrite to replace it)",
                path.display()
            )),
            JobError::RecrawlReplaces { job, .. } => CliError::Usage(format!(
                "--recrawl: job {job} kept its pages in the store (--store-bodies), which a new \
                 pass replaces; export them first (results --format warc), then add --overwrite"
            )),
            JobError::Output(e) => e.into(),
            JobError::Fenced { job, shard, by } => {
                CliError::Fenced(crawlkeeper_model::Fence { job, shard, by })
            }
            JobError::Unusable { .. }
            | JobError::Locked(_)
            | JobError::Missing(_)
            | JobError::NoSuchShards { .. } => CliError::Usage(e.to_string()),
            e => CliError::Fatal(e.into()),
        }
    }
}

/// A configuration or seed problem is the user's (exit 2); anything else is fatal.
pub fn engine_error(e: EngineError) -> CliError {
    match e {
        EngineError::Config(_) | EngineError::BadSeed(_) => CliError::Usage(e.to_string()),
        EngineError::State(StateError::Fenced(why)) => CliError::Fenced(why),
        e => CliError::Fatal(e.into()),
    }
}
