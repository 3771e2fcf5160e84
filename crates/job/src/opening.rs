//! What [`crate::open()`] is asked and what it hands back: which job
//! ([`Wanted`]), how it starts ([`Start`]), where its state is and where
//! its outputs go ([`Opening`]), and the job opened ([`Opened`]).

use std::path::PathBuf;

use crawlkeeper_crawl::state::CrawlState;
use crawlkeeper_crawl::{CrawlConfig, Sink};
use crawlkeeper_store::{Holder, JobInfo, JobSpec};
use url::Url;

use crate::output::check_existing;
use crate::warc::{JobLook, WarcOptions, check_warc};
use crate::{JobError, Location};

/// Which job to open.
#[derive(Debug, Clone)]
pub enum Wanted {
    /// The job these seeds and options name (`crawl`): found, or made.
    Spec {
        /// Its identity.
        spec: JobSpec,
        /// The options this run crawls it with.
        config: Box<CrawlConfig>,
        /// Its seeds.
        seeds: Vec<Url>,
    },
    /// A job the store holds already, crawled with its stored options and
    /// seeds (a cluster's Runner).
    Stored(String),
}

impl Wanted {
    /// The job's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Spec { spec, .. } => &spec.name,
            Self::Stored(name) => name,
        }
    }

    /// True for a job of one shard (`existing`: the job as stored, if it is).
    pub(crate) fn is_whole(&self, existing: Option<&JobInfo>) -> bool {
        match self {
            Self::Spec { spec, .. } => spec.shards == 1,
            Self::Stored(_) => existing.is_none_or(|job| job.shards == 1),
        }
    }
}

/// How a job the store holds already is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Resumed where it stopped.
    Resume,
    /// Deleted first, and crawled from its seeds.
    Fresh,
    /// Once complete, crawled again asking for changed pages only; an
    /// unfinished job is resumed.
    Recrawl,
}

/// Where the job's records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Records {
    /// Standard output.
    Stdout,
    /// A file (kept up to date with the store across runs) or a stream.
    File(PathBuf),
    /// Nowhere: the store holds them (a cluster's Runner).
    Discard,
}

/// The outputs of a run.
#[derive(Debug, Clone)]
pub struct Outputs {
    /// The records.
    pub records: Records,
    /// WARC files, if any.
    pub warc: Option<WarcOptions>,
    /// A CDXJ index beside each WARC file.
    pub cdx: bool,
    /// Replace outputs that do not hold this job's records.
    pub overwrite: bool,
}

impl Outputs {
    /// No output: the store keeps everything.
    pub fn none() -> Self {
        Self {
            records: Records::Discard,
            warc: None,
            cdx: false,
            overwrite: false,
        }
    }

    pub(crate) fn file(&self) -> Option<&std::path::Path> {
        match &self.records {
            Records::File(path) => Some(path),
            _ => None,
        }
    }
}

/// A job to open, and how.
#[derive(Debug, Clone)]
pub struct Opening {
    /// Where its state is.
    pub location: Location,
    /// Which job.
    pub wanted: Wanted,
    /// How it starts.
    pub start: Start,
    /// The shards this process crawls.
    pub shards: Vec<u32>,
    /// Who this process is to the others (see [`Claim::holder`]).
    pub holder: Holder,
    /// Take the shards even from a live holder.
    pub take_over: bool,
    /// Where the records go.
    pub outputs: Outputs,
    /// The processors this process runs, by name: a stored job that uses
    /// another is refused ([`JobError::LacksProcessors`]) before any shard
    /// is claimed. `None`: not checked here (building the pipeline says).
    pub runs: Option<Vec<String>>,
}

impl Opening {
    /// A state file that does not exist yet holds no job: a re-crawl is
    /// refused, and the outputs are checked as a new job's, before the file
    /// is made.
    pub(crate) fn check_as_new(&self, name: &str) -> Result<(), JobError> {
        let o = self;
        if o.start == Start::Recrawl {
            return Err(JobError::NoEarlierCrawl {
                job: name.to_owned(),
                place: o.location.shown(),
            });
        }
        let outputs = &o.outputs;
        if let Some(out) = outputs.file() {
            check_existing(out, None, outputs.overwrite)?;
        }
        if let Some(w) = &outputs.warc {
            check_warc(w, JobLook::fresh(name), outputs.overwrite)?;
            if outputs.cdx {
                w.check_indexes(name, outputs.overwrite)?;
            }
        }
        Ok(())
    }
}

/// Something worth telling the user about the job as it was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// Its stored state was deleted ([`Start::Fresh`]).
    Deleted,
    /// A new pass over its URLs began ([`Start::Recrawl`]).
    Recrawling {
        /// URLs queued again.
        queued: u64,
    },
    /// It is complete already: nothing to fetch.
    Complete {
        /// URLs done.
        done: u64,
    },
    /// A re-crawl asked of an unfinished job: it is resumed.
    NotFinished {
        /// URLs done.
        done: u64,
        /// URLs pending.
        pending: u64,
    },
    /// A continuous job goes on, its URLs' schedules kept.
    Continuing {
        /// URLs fetched and waiting for their next fetch.
        done: u64,
        /// URLs queued.
        pending: u64,
    },
    /// It resumes where it stopped.
    Resuming {
        /// URLs done.
        done: u64,
        /// URLs pending.
        pending: u64,
    },
    /// This process crawls some shards of it.
    Crawling {
        /// The shards.
        shards: Vec<u32>,
        /// Of how many.
        of: u32,
        /// As whom.
        holder: Holder,
    },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Deleted => f.write_str("stored state deleted (--fresh)"),
            Self::Recrawling { queued } => write!(
                f,
                "crawling its {queued} URLs again, asking for changed pages only (--recrawl)"
            ),
            Self::Complete { done } => write!(
                f,
                "complete already ({done} URLs done), nothing to fetch; \
                 use --recrawl to fetch what changed since, or --fresh to start over"
            ),
            Self::NotFinished { done, pending } => write!(
                f,
                "not finished ({done} URLs done, {pending} pending); resuming it \
                 (--recrawl starts a new pass once it is complete)"
            ),
            Self::Continuing { done, pending } => write!(
                f,
                "continuing: {done} URLs wait for their next fetch, {pending} are queued"
            ),
            Self::Resuming { done, pending } => {
                write!(f, "resuming with {done} URLs done and {pending} pending")
            }
            Self::Crawling { shards, of, holder } => {
                let shards: Vec<String> = shards.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "crawling shard {} of {of} as {holder}",
                    shards.join(", ")
                )
            }
        }
    }
}

/// A job opened: its state for the engine, its sink, and what to tell.
pub struct Opened {
    /// The job, as the store holds it now.
    pub job: JobInfo,
    /// The options it is crawled with (the given ones, or the stored).
    pub config: CrawlConfig,
    /// Its seeds.
    pub seeds: Vec<Url>,
    /// The engine's state: in the store with the job's shards claimed, or
    /// in memory ([`Location::Memory`]).
    pub state: Box<dyn CrawlState>,
    /// Where its records go.
    pub sink: Box<dyn Sink>,
    /// What to tell the user, in order.
    pub notes: Vec<Note>,
    /// Shards taken from a live process (see [`claim_shards`]).
    pub displaced: Vec<u32>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("job", &self.job)
            .field("notes", &self.notes)
            .field("displaced", &self.displaced)
            .finish_non_exhaustive()
    }
}
