//! A job kept in memory only (`crawl --no-state`), opened by [`open()`]
//! like any other: its outputs checked as a new job's before any is
//! written, then written from their start; the engine's state is a
//! [`MemoryState`] that ends with the process.
//!
//! [`open()`]: crate::open()

use crawlkeeper_crawl::Sink;
use crawlkeeper_crawl::sink::FanOut;
use crawlkeeper_crawl::state::MemoryState;
use crawlkeeper_model::JobCounts;
use crawlkeeper_store::{JobId, JobInfo};

use crate::JobError;
use crate::guard::fresh_sink;
use crate::opening::{Opened, Opening, Records, Wanted};
use crate::warc::{JobLook, open_warc};

/// Opens the job `o` names in memory: a job of one shard, never resumed.
pub(crate) fn open_in_memory(o: &Opening) -> Result<Opened, JobError> {
    let Wanted::Spec {
        spec,
        config,
        seeds,
    } = &o.wanted
    else {
        // A stored job is in a store.
        return Err(JobError::Missing(o.wanted.name().to_owned()));
    };
    if spec.shards != 1 || o.shards != [0] {
        return Err(JobError::NoSuchShards {
            job: spec.name.clone(),
            count: spec.shards,
            shards: o.shards.clone(),
        });
    }
    // Nothing to resume and nothing to delete: the outputs are checked as
    // a new job's, and a re-crawl (no earlier crawl) is refused there.
    o.check_as_new(&spec.name)?;
    let outputs = &o.outputs;
    let records: Box<dyn Sink> = match &outputs.records {
        Records::File(path) => fresh_sink(Some(path))?,
        Records::Stdout => fresh_sink(None)?,
        Records::Discard => Box::new(crawlkeeper_crawl::JsonlSink::new(std::io::sink())),
    };
    let sink = match &outputs.warc {
        Some(w) => {
            let archive = open_warc(w, JobLook::fresh(&spec.name), None)?;
            Box::new(FanOut(vec![records, Box::new(archive)])) as Box<dyn Sink>
        }
        None => records,
    };
    let job = JobInfo {
        id: JobId(0),
        name: spec.name.clone(),
        created_at: chrono::Utc::now().to_rfc3339(),
        seeds: spec.seeds.clone(),
        options: spec.options.clone(),
        shards: 1,
        counts: JobCounts::default(),
        stops: 0,
    };
    Ok(Opened {
        job,
        config: (**config).clone(),
        seeds: seeds.clone(),
        state: Box::new(MemoryState::new()),
        sink,
        notes: Vec::new(),
        displaced: Vec::new(),
    })
}
