//! [`Location`]: where a job's state is kept, opened with errors fit for
//! a user (the password of a PostgreSQL location never in them).

use std::path::PathBuf;

use crawlkeeper_store::location::{is_postgres, redact, scrub};
use crawlkeeper_store::{SqliteStore, Store, StoreError};

use crate::JobError;

/// How [`Location::Memory`] is shown.
const MEMORY: &str = "memory (--no-state)";

/// Where a job's state is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A SQLite state file, made if it does not exist.
    File(PathBuf),
    /// A PostgreSQL database (a `postgres://` URL or libpq words), or an
    /// existing SQLite file, as `--store` names it.
    Store(String),
    /// Nowhere that lasts: the job lives in this process's memory and ends
    /// with it (`crawl --no-state`). It is never resumed; its outputs are
    /// written from their start.
    Memory,
}

impl Location {
    /// True for a store several processes share (PostgreSQL): its jobs
    /// are claimed by shard, fenced and gated.
    pub fn is_shared(&self) -> bool {
        matches!(self, Self::Store(s) if is_postgres(s))
    }

    /// The location as given (may hold a password).
    pub fn raw(&self) -> String {
        match self {
            Self::File(path) => path.to_string_lossy().into_owned(),
            Self::Store(s) => s.clone(),
            Self::Memory => MEMORY.to_owned(),
        }
    }

    /// The location to show: its password hidden.
    pub fn shown(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Store(s) => redact(s),
            Self::Memory => MEMORY.to_owned(),
        }
    }

    /// True for a state file that does not exist yet (it holds no job).
    pub fn is_new_file(&self) -> bool {
        matches!(self, Self::File(path) if !path.exists())
    }

    /// Opens the store (making a state file that does not exist). Memory
    /// has none: [`crate::open()`] keeps such a job without one.
    pub fn open(&self) -> Result<Box<dyn Store>, JobError> {
        // A state file is a file whatever its name looks like (`host=a.db` too).
        let opened = match self {
            Self::File(path) => SqliteStore::open(path).map(|s| Box::new(s) as Box<dyn Store>),
            Self::Store(s) => crawlkeeper_store::open(s),
            Self::Memory => {
                return Err(JobError::Unusable {
                    place: MEMORY.to_owned(),
                    why: "a job kept in memory has no store".to_owned(),
                });
            }
        };
        opened.map_err(|e| self.refused(e))
    }

    /// A store error on opening, as the job's: its text scrubbed of the
    /// location's password.
    fn refused(&self, e: StoreError) -> JobError {
        let (place, why) = (self.shown(), scrub(&e.to_string(), &self.raw()));
        match e {
            StoreError::Corrupt(_) | StoreError::Backend(_) => JobError::Unusable { place, why },
            _ => JobError::Unreachable { place, why },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_postgres_is_shared_and_its_password_is_never_shown() {
        let pg = Location::Store("postgres://u:hunter2@db.example/crawl".into());
        assert!(pg.is_shared());
        assert!(!pg.shown().contains("hunter2"), "{}", pg.shown());
        assert!(!Location::File("crawlkeeper.db".into()).is_shared());
        assert!(!Location::Store("existing.db".into()).is_shared());
    }
}
