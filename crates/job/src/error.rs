//! [`JobError`]: why a job could not be opened, typed where a caller
//! decides something by it (a live holder, a fence, a refused output).

use crawlkeeper_store::StoreError;

use crate::OutputError;

/// Why a job could not be opened or claimed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The store cannot be used: it is not crawlkeeper's, is corrupt, or
    /// refused the schema (the user's to sort out).
    #[error("cannot use the crawl state at '{place}': {why}")]
    Unusable {
        /// Where the store is, its password hidden.
        place: String,
        /// Why, its password hidden.
        why: String,
    },
    /// The store cannot be reached or opened now.
    #[error("cannot open the crawl state at '{place}': {why}")]
    Unreachable {
        /// Where the store is, its password hidden.
        place: String,
        /// Why, its password hidden.
        why: String,
    },
    /// A shard of the job is held by a live process, and the claim did
    /// not take it over.
    #[error("shard {shard} of job {job} is held by {holder}, a live process")]
    Held {
        /// The job's name.
        job: String,
        /// The shard.
        shard: u32,
        /// Who holds it.
        holder: String,
    },
    /// Another process crawls the job (a state file's lock).
    #[error("job '{0}' is being crawled by another process")]
    Locked(String),
    /// A shard this process held was taken over by another.
    #[error("shard {shard} of job '{job}' was taken over by {by}")]
    Fenced {
        /// The job's name.
        job: String,
        /// The shard.
        shard: u32,
        /// Who holds it now.
        by: String,
    },
    /// A re-crawl of a job the store has never crawled.
    #[error("job {job} has no earlier crawl in {place} to revisit")]
    NoEarlierCrawl {
        /// The job's name.
        job: String,
        /// Where the store is, its password hidden.
        place: String,
    },
    /// A re-crawl would replace what the earlier pass kept.
    #[error("job {job}: {kept} holds the earlier pass, which a new pass replaces")]
    RecrawlReplaces {
        /// The job's name.
        job: String,
        /// What holds it.
        kept: Kept,
    },
    /// The job is not in the store.
    #[error("job {0} is not in the store")]
    Missing(String),
    /// The job uses processors this process does not run.
    #[error("job {job} uses processor {} that this node does not run (its operator adds --processor NAME=COMMAND); its shards wait for a Runner that runs it", lacking.join(", "))]
    LacksProcessors {
        /// The job.
        job: String,
        /// The processors it uses that are not run here.
        lacking: Vec<String>,
    },
    /// The job's stored options or seeds do not read.
    #[error("job {job}: its stored {what} do not read: {why}")]
    Stored {
        /// The job's name.
        job: String,
        /// "options" or "seeds".
        what: &'static str,
        /// Why.
        why: String,
    },
    /// Shards asked for that the job does not have.
    #[error("job {job} has {count} shards; there are no shards {shards:?}")]
    NoSuchShards {
        /// The job's name.
        job: String,
        /// How many shards it has.
        count: u32,
        /// The shards asked for.
        shards: Vec<u32>,
    },
    /// An output would destroy something, or cannot be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
}

/// What holds the earlier pass of a job a re-crawl would replace.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kept {
    /// The WARC file at this path.
    Warc(std::path::PathBuf),
    /// The page bodies kept in the store (`--store-bodies`).
    Bodies,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Warc(path) => write!(f, "'{}'", path.display()),
            Self::Bodies => f.write_str("the store (its page bodies)"),
        }
    }
}

impl From<StoreError> for JobError {
    /// The store's refusals a caller decides by keep their own variants.
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Held { job, shard, holder } => Self::Held { job, shard, holder },
            StoreError::Locked(job) => Self::Locked(job),
            StoreError::Fenced { job, shard, by } => Self::Fenced { job, shard, by },
            e => Self::Store(e),
        }
    }
}
