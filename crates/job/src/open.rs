//! [`open`]: the one way a process opens a job to crawl it, whether the
//! `crawl` command or a cluster's Runner. It finds or makes the job,
//! starts it over or anew as asked, checks every output against what the
//! store holds before the store or a file is changed, claims the shards
//! (waiting out a displaced live holder's lease gate), brings the outputs
//! up to date, and hands back the engine's state and sink.

use crawlkeeper_crawl::sink::FanOut;
use crawlkeeper_crawl::state::{CrawlState, Sharing};
use crawlkeeper_crawl::{CrawlConfig, JsonlSink, Sink};
use crawlkeeper_model::Partition;
use crawlkeeper_store::{Claim, JobInfo, Store};
use url::Url;

use crate::claim::claim_shards;
use crate::error::Kept;
use crate::guard::fresh_sink;
use crate::opening::{Note, Opened, Opening, Outputs, Records, Start, Wanted};
use crate::output::{Part, check_existing, is_stream, lock_existing, open_output, stored_results};
use crate::warc::{JobLook, check_warc, open_warc};
use crate::{JobError, Location, StoreState};

/// Opens the job `o` names (see the module's documentation). Blocking:
/// run it off an async runtime's workers.
pub fn open(o: &Opening) -> Result<Opened, JobError> {
    if o.location == Location::Memory {
        return crate::memory::open_in_memory(o);
    }
    let name = o.wanted.name().to_owned();
    let outputs = &o.outputs;
    if o.location.is_new_file() {
        o.check_as_new(&name)?;
    }
    let mut store = o.location.open()?;
    let mut existing = store.find_job(&name)?;
    let recrawl = new_pass(o, store.as_mut(), &mut existing)?;
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
    }
    let (config, seeds) = match &o.wanted {
        Wanted::Spec { config, seeds, .. } => ((**config).clone(), seeds.clone()),
        Wanted::Stored(_) => stored_options(&job)?,
    };
    if !recrawl {
        notes.extend(standing(o.start, &job, config.revisit.is_some()));
    }
    if job.shards > 1 {
        notes.push(Note::Crawling {
            shards: o.shards.clone(),
            of: job.shards,
            holder: o.holder.clone(),
        });
    }
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

/// True when a finished job is crawled again ([`Start::Recrawl`]): a new
/// pass, whose outputs are new files like a fresh job's (`existing` is
/// then taken as none). Refuses a re-crawl of a job never crawled, and a
/// stored job the store does not hold.
fn new_pass(
    o: &Opening,
    store: &mut dyn Store,
    existing: &mut Option<JobInfo>,
) -> Result<bool, JobError> {
    let name = o.wanted.name();
    match existing {
        None if o.start == Start::Recrawl => Err(no_earlier_crawl(name, &o.location)),
        None if matches!(o.wanted, Wanted::Stored(_)) => Err(JobError::Missing(name.to_owned())),
        Some(job) if o.start == Start::Recrawl && job.counts.pending() == 0 => {
            check_recrawl(store, job, &o.outputs)?;
            *existing = None;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Where a job that has been crawled before stands, as `start` takes it
/// (a `continuous` one is never complete).
fn standing(start: Start, job: &JobInfo, continuous: bool) -> Option<Note> {
    if job.counts.seen == 0 {
        return None;
    }
    let (done, pending) = (job.counts.done, job.counts.pending());
    Some(match start {
        _ if continuous => Note::Continuing { done, pending },
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
) -> Result<Box<dyn CrawlState>, JobError> {
    let state = if o.location.is_shared() {
        let sharing = Sharing::new(partition);
        StoreState::shared(store, job.clone(), sharing, config.scope.max_pages)?
            .with_holder(o.holder.clone())
    } else {
        StoreState::new(store, job.id)
    };
    Ok(Box::new(
        state.keeping_archives(config.archive.store_bodies),
    ))
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
            Some(job) if !fresh => stored_results(store, Part { job, shards })?,
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
                done: stored_results(store, part)?,
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
        .needs()
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
