//! [`open`]: the one way a process opens a job to crawl it, whether the
//! `crawl` command or a cluster's Runner. It finds or makes the job,
//! starts it over or anew as asked, checks every output against what the
//! store holds before the store or a file is changed, claims the shards
//! (waiting out a displaced live holder's lease gate), brings the outputs
//! up to date, and hands back the engine's state and sink.

use std::path::PathBuf;

use crawlkeeper_crawl::sink::FanOut;
use crawlkeeper_crawl::state::Sharing;
use crawlkeeper_crawl::{CrawlConfig, JsonlSink, Sink};
use crawlkeeper_model::Partition;
use crawlkeeper_store::{Claim, Holder, JobInfo, JobSpec, Store};
use url::Url;

use crate::claim::claim_shards;
use crate::error::Kept;
use crate::guard::fresh_sink;
use crate::output::{Part, check_existing, is_stream, lock_existing, open_output};
use crate::warc::{JobLook, WarcOptions, check_warc, open_warc};
use crate::{JobError, Location, StoreState};

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
    fn is_whole(&self, existing: Option<&JobInfo>) -> bool {
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

    fn file(&self) -> Option<&std::path::Path> {
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
    /// The engine's durable state: the job's shards claimed.
    pub state: StoreState,
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

/// Opens the job `o` names (see the module's documentation). Blocking:
/// run it off an async runtime's workers.
pub fn open(o: &Opening) -> Result<Opened, JobError> {
    let name = o.wanted.name().to_owned();
    let outputs = &o.outputs;
    if o.location.is_new_file() {
        check_new_file(o, &name)?;
    }
    let mut store = o.location.open()?;
    let mut existing = store.find_job(&name)?;
    // A finished job crawled again starts a new pass: its outputs are new
    // files, like a fresh job's.
    let recrawl = match &existing {
        None if o.start == Start::Recrawl => return Err(no_earlier_crawl(&name, &o.location)),
        None if matches!(o.wanted, Wanted::Stored(_)) => return Err(JobError::Missing(name)),
        Some(job) if o.start == Start::Recrawl && job.counts.pending() == 0 => {
            check_recrawl(store.as_mut(), job, outputs)?;
            existing = None;
            true
        }
        _ => false,
    };
    if let (Some(runs), Some(job)) = (&o.runs, &existing) {
        check_processors(job, runs)?;
    }
    let fresh = o.start == Start::Fresh;
    let part_shards = (!o.wanted.is_whole(existing.as_ref())).then_some(o.shards.as_slice());
    check_outputs(
        store.as_mut(),
        existing.as_ref(),
        part_shards,
        outputs,
        fresh,
        &name,
    )?;
    // The output file is this process's alone; with a take-over it is
    // taken before the shards, so that a process refused its file has
    // displaced no one.
    let stream = outputs.file().is_some_and(is_stream);
    let lock_output = || match outputs.file() {
        Some(path) if !stream => lock_existing(path),
        _ => Ok(None),
    };
    let mut locked = if o.take_over { lock_output()? } else { None };
    let mut notes = Vec::new();
    if fresh && store.delete_job(&name)? {
        notes.push(Note::Deleted);
    }
    let mut job = match &o.wanted {
        Wanted::Spec { spec, .. } => store.open_job(spec)?,
        Wanted::Stored(_) => existing
            .clone()
            .ok_or_else(|| JobError::Missing(name.clone()))?,
    };
    let partition =
        Partition::new(job.shards, o.shards.clone()).ok_or_else(|| JobError::NoSuchShards {
            job: job.name.clone(),
            count: job.shards,
            shards: o.shards.clone(),
        })?;
    let claim = Claim {
        shards: o.shards.clone(),
        holder: o.holder.clone(),
        take_over: o.take_over,
    };
    let displaced = claim_shards(store.as_mut(), &job, &claim)?.displaced;
    if !o.take_over {
        locked = lock_output()?;
    }
    if recrawl {
        let queued = store.recrawl(&job)?;
        job = store
            .find_job(&name)?
            .ok_or_else(|| JobError::Missing(name.clone()))?;
        notes.push(Note::Recrawling { queued });
    } else {
        notes.extend(standing(o.start, &job));
    }
    if job.shards > 1 {
        notes.push(Note::Crawling {
            shards: o.shards.clone(),
            of: job.shards,
            holder: o.holder.clone(),
        });
    }
    let (config, seeds) = match &o.wanted {
        Wanted::Spec { config, seeds, .. } => ((**config).clone(), seeds.clone()),
        Wanted::Stored(_) => stored_options(&job)?,
    };
    let shards = (job.shards > 1).then_some(o.shards.as_slice());
    let sink = sink(store.as_mut(), &job, shards, outputs, locked)?;
    let state = engine_state(o, store, &job, partition, &config)?;
    Ok(Opened {
        job,
        config,
        seeds,
        state,
        sink,
        notes,
        displaced,
    })
}

/// A state file that does not exist yet holds no job: a re-crawl is
/// refused, and the outputs are checked as a new job's, before the file
/// is made.
fn check_new_file(o: &Opening, name: &str) -> Result<(), JobError> {
    if o.start == Start::Recrawl {
        return Err(no_earlier_crawl(name, &o.location));
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

/// Where a job that has been crawled before stands, as `start` takes it.
fn standing(start: Start, job: &JobInfo) -> Option<Note> {
    if job.counts.seen == 0 {
        return None;
    }
    let (done, pending) = (job.counts.done, job.counts.pending());
    Some(match start {
        _ if pending == 0 => Note::Complete { done },
        Start::Recrawl => Note::NotFinished { done, pending },
        _ => Note::Resuming { done, pending },
    })
}

/// The engine's state of `job` in `store`. A job in a shared store is
/// fenced and gated even with one shard: a process taking it over may
/// displace this one.
fn engine_state(
    o: &Opening,
    store: Box<dyn Store>,
    job: &JobInfo,
    partition: Partition,
    config: &CrawlConfig,
) -> Result<StoreState, JobError> {
    let state = if o.location.is_shared() {
        let sharing = Sharing::new(partition);
        StoreState::shared(store, job.clone(), sharing, config.scope.max_pages)?
            .with_holder(o.holder.clone())
    } else {
        StoreState::new(store, job.id)
    };
    Ok(state.keeping_archives(config.archive.store_bodies))
}

/// Checks the outputs against what the store holds of `existing` (its
/// `shards`' records), before anything is changed.
fn check_outputs(
    store: &mut dyn Store,
    existing: Option<&JobInfo>,
    shards: Option<&[u32]>,
    outputs: &Outputs,
    fresh: bool,
    name: &str,
) -> Result<(), JobError> {
    if let Some(out) = outputs.file() {
        match existing {
            Some(job) => {
                let part = Part { job, shards };
                check_existing(out, Some((store, part)), outputs.overwrite)?;
            }
            None => check_existing(out, None, outputs.overwrite)?,
        }
    }
    if let Some(w) = &outputs.warc {
        let done = match existing {
            Some(job) if !fresh => job.counts.done,
            _ => 0,
        };
        check_warc(w, JobLook { name, done }, outputs.overwrite)?;
        if outputs.cdx {
            w.check_indexes(name, outputs.overwrite)?;
        }
    }
    Ok(())
}

/// The sink of the job's records: its output brought up to date with the
/// store, and its WARC files, if any.
fn sink(
    store: &mut dyn Store,
    job: &JobInfo,
    shards: Option<&[u32]>,
    outputs: &Outputs,
    locked: Option<std::fs::File>,
) -> Result<Box<dyn Sink>, JobError> {
    let part = Part { job, shards };
    let records: Box<dyn Sink> = match &outputs.records {
        Records::File(path) if is_stream(path) => fresh_sink(Some(path))?,
        Records::File(path) => Box::new(JsonlSink::new(open_output(
            path,
            locked,
            store,
            part,
            outputs.overwrite,
        )?)),
        Records::Stdout => Box::new(JsonlSink::new(std::io::stdout())),
        Records::Discard => Box::new(JsonlSink::new(std::io::sink())),
    };
    Ok(match &outputs.warc {
        Some(w) => {
            let look = JobLook {
                name: &job.name,
                done: job.counts.done,
            };
            let archive = open_warc(w, look, Some((store, part)))?;
            Box::new(FanOut(vec![records, Box::new(archive)]))
        }
        None => records,
    })
}

/// The options and seeds a job was stored with.
/// Refuses `job` when it uses a processor not in `runs`.
fn check_processors(job: &JobInfo, runs: &[String]) -> Result<(), JobError> {
    let (config, _) = stored_options(job)?;
    let lacking: Vec<String> = config
        .pipeline
        .processors
        .into_iter()
        .filter(|p| !runs.contains(p))
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    Err(JobError::LacksProcessors {
        job: job.name.clone(),
        lacking,
    })
}

fn stored_options(job: &JobInfo) -> Result<(CrawlConfig, Vec<Url>), JobError> {
    let stored = |what, why: String| JobError::Stored {
        job: job.name.clone(),
        what,
        why,
    };
    let config: CrawlConfig =
        serde_json::from_str(&job.options).map_err(|e| stored("options", e.to_string()))?;
    let seeds = job
        .seeds
        .iter()
        .map(|s| Url::parse(s).map_err(|e| stored("seeds", format!("{s:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((config, seeds))
}

/// Refuses, unless `overwrite`, a re-crawl that would replace what the
/// earlier pass left: its WARC files at the output's path, or the page
/// bodies it kept in the store, which the revisits of the new pass refer
/// to.
fn check_recrawl(store: &mut dyn Store, job: &JobInfo, outputs: &Outputs) -> Result<(), JobError> {
    if outputs.overwrite {
        return Ok(());
    }
    let replaces = |kept| JobError::RecrawlReplaces {
        job: job.name.clone(),
        kept,
    };
    if let Some(path) = outputs.warc.as_ref().and_then(|w| w.first_kept(&job.name)) {
        return Err(replaces(Kept::Warc(path)));
    }
    if !store.archives(job.id, 0, 1)?.is_empty() {
        return Err(replaces(Kept::Bodies));
    }
    Ok(())
}

fn no_earlier_crawl(name: &str, location: &Location) -> JobError {
    JobError::NoEarlierCrawl {
        job: name.to_owned(),
        place: location.shown(),
    }
}
