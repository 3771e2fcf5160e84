//! How a run ends, as an exit code.

use std::process::ExitCode;

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
    Fenced(String),
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
