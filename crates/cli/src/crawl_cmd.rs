//! `crawlkeeper crawl`: seeds and options in, records and a summary out.

use std::io::Write;
use std::sync::Arc;

use crawlkeeper_crawl::sink::FanOut;
use crawlkeeper_crawl::state::{MemoryState, StateError};
use crawlkeeper_crawl::{Engine, EngineError, StopReason};
use crawlkeeper_job::guard::{
    Protected, fresh_sink, refuse_odd_lock, refuse_protected, refuse_protected_warc, state_files,
};
use crawlkeeper_job::open::{Outputs, Records, Start, Wanted};
use crawlkeeper_job::output::check_existing;
use crawlkeeper_job::warc::{JobLook, WarcOptions, check_warc, open_warc};
use crawlkeeper_job::{Opening, job_spec, open};
use crawlkeeper_model::format_duration;
use crawlkeeper_store::Holder;

use crate::args::CrawlArgs;
use crate::args_view::ViewArgs;
use crate::exit::{CliError, Outcome};
use crate::progress::{Progress, ProgressMode};
use crate::serve::{Bound, CrawlSource};
use crate::signals::Shutdown;
use crate::state::location;
use crate::warc_out::{archiver, warc_options};
use crawlkeeper_job::seeds::{read_seeds, seed_files, stdin, take_credentials};

/// Runs `crawlkeeper crawl`: the job's state is kept in the store, so the
/// same command run again resumes it. Everything the user gave is checked
/// (seeds, options, processors, shards, the output path) before the store
/// or any file is touched.
pub async fn run(
    args: CrawlArgs,
    mut registry: crawlkeeper_crawl::Registry,
) -> Result<Outcome, CliError> {
    args.job.check().map_err(CliError::Usage)?;
    let mut seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
    if !args.no_state {
        crate::state::check_location(&args.store)?;
    }
    let bound = Bound::bind(&args.view.serve)?;
    let mut config = args.to_config();
    take_credentials(&mut seeds, &mut config).map_err(|e| CliError::Usage(e.0))?;
    args.job
        .proxy_from_env(&mut config, |name| std::env::var(name).ok())
        .map_err(CliError::Usage)?;
    let warc = warc_options(&args.warc, &config);
    // What goes over the wire is kept only when it is archived.
    config.fetch.capture = warc.is_some() || config.archive.store_bodies;
    if config.archive.store_bodies && args.no_state {
        return Err(CliError::Usage(
            "--store-bodies keeps pages in the state store; not with --no-state".to_owned(),
        ));
    }
    config.archive.gzip_level = args.warc.files.warc_gzip_level;
    let held = check_shards(&args)?;
    args.processors
        .add_to(&mut registry)
        .map_err(CliError::Usage)?;
    let mut engine =
        Engine::configure(config.clone(), seeds.clone(), &registry).map_err(engine_error)?;
    if let Some(w) = &warc {
        engine = engine.archive(archiver(w, &args.warc));
    }
    let spec = job_spec(&config, &seeds, args.shards);
    check_paths(&args, warc.as_ref(), &spec.name)?;
    if args.no_state {
        return run_without_state(&args, engine, warc, &spec.name, bound).await;
    }
    let warc_index = warc.clone();
    let records = match &args.out {
        Some(path) => Records::File(path.clone()),
        None => Records::Stdout,
    };
    let start = match (args.fresh, args.recrawl) {
        (true, _) => Start::Fresh,
        (_, true) => Start::Recrawl,
        _ => Start::Resume,
    };
    let opening = Opening {
        location: location(&args.store),
        wanted: Wanted::Spec {
            spec,
            config: Box::new(config),
            seeds,
        },
        start,
        shards: held,
        holder: Holder::this_process(),
        take_over: args.take_over,
        outputs: Outputs {
            records,
            warc,
            cdx: args.warc.cdx,
            overwrite: args.overwrite,
        },
        runs: None,
    };
    // Store set-up blocks (and the PostgreSQL client runs its own runtime).
    let opened = tokio::task::spawn_blocking(move || open(&opening))
        .await
        .map_err(|e| CliError::Fatal(e.into()))??;
    if !args.quiet {
        for note in &opened.notes {
            eprintln!("job {}: {note}", opened.job.name);
        }
    }
    let run = Run {
        title: opened.job.name.clone(),
        view: &args.view,
        bound,
        quiet: args.quiet,
        shard: opened.job.shards > 1,
    };
    let engine = engine.attach(Box::new(opened.state), opened.sink);
    let outcome = crawl(engine, run).await?;
    index_warc(&warc_index, &opened.job.name, args.warc.cdx)?;
    Ok(outcome)
}

/// Refuses outputs that would destroy what is the user's: `--out` or a
/// file `--warc` writes (rotations, `--cdx` indexes) naming a seed file,
/// the state file or one of its companions, or each other.
fn check_paths(args: &CrawlArgs, warc: Option<&WarcOptions>, job: &str) -> Result<(), CliError> {
    let mut protected: Vec<Protected> = seed_files(&args.seeds)
        .map(|path| Protected {
            path: path.to_path_buf(),
            what: "a seed file",
        })
        .collect();
    if !args.no_state && args.store.store.is_none() {
        protected.extend(state_files(&args.store.state, Some(job)));
        refuse_odd_lock(&args.store.state, job)?;
    }
    if let Some(out) = &args.out {
        refuse_protected(out, &protected)?;
    }
    let Some(w) = warc else {
        return Ok(());
    };
    if args.shards > 1 || args.take_over {
        return Err(CliError::Usage(
            "--warc is not available yet with --shards or --take-over".to_owned(),
        ));
    }
    if args.out.as_ref().is_some_and(|o| *o == w.path) {
        return Err(CliError::Usage(
            "--warc and --out name the same file".to_owned(),
        ));
    }
    let cdx = args.warc.cdx;
    refuse_protected_warc(w, job, cdx, "--warc", &protected)?;
    if let Some(out) = &args.out {
        let out = Protected {
            path: out.clone(),
            what: "the --out file",
        };
        refuse_protected_warc(w, job, cdx, "--warc", &[out])?;
    }
    Ok(())
}

/// `--no-state`: the crawl kept in memory, its outputs written from their
/// start.
async fn run_without_state(
    args: &CrawlArgs,
    engine: Engine,
    warc: Option<WarcOptions>,
    job: &str,
    bound: Bound,
) -> Result<Outcome, CliError> {
    if let Some(out) = &args.out {
        check_existing(out, None, args.overwrite)?;
    }
    if let Some(w) = &warc {
        check_warc(w, JobLook::fresh(job), args.overwrite)?;
        if args.warc.cdx {
            w.check_indexes(job, args.overwrite)?;
        }
    }
    let mut sink = fresh_sink(args.out.as_deref())?;
    if let Some(w) = &warc {
        let archive = open_warc(w, JobLook::fresh(job), None)?;
        sink = Box::new(FanOut(vec![sink, Box::new(archive)]));
    }
    let engine = engine.attach(Box::new(MemoryState::new()), sink);
    let run = Run {
        title: job.to_owned(),
        view: &args.view,
        bound,
        quiet: args.quiet,
        shard: false,
    };
    let outcome = crawl(engine, run).await?;
    index_warc(&warc, job, args.warc.cdx)?;
    Ok(outcome)
}

/// The shards this process crawls, ascending, once the sharding options
/// are checked: shards need a shared store, shard numbers in range, and no
/// `--fresh` (which would delete the other processes' work).
fn check_shards(args: &CrawlArgs) -> Result<Vec<u32>, CliError> {
    let shared = shared_store(args);
    if args.shards > 1 {
        if args.no_state || !shared {
            return Err(CliError::Usage(format!(
                "--shards {} needs a postgres:// --store that every process of the job shares \
                 (a local state file is not shared between machines)",
                args.shards
            )));
        }
        if args.fresh || args.recrawl {
            let flag = if args.fresh { "--fresh" } else { "--recrawl" };
            return Err(CliError::Usage(format!(
                "{flag} would reset the work of every shard's process; not with --shards"
            )));
        }
    }
    if args.take_over && !shared {
        return Err(CliError::Usage(
            "--take-over needs a postgres:// --store (a local state file has one process)".into(),
        ));
    }
    if let Some(i) = args.shard.iter().find(|&&i| i >= args.shards) {
        return Err(CliError::Usage(format!(
            "--shard {i} is not a shard of --shards {} (0 to {})",
            args.shards,
            args.shards - 1
        )));
    }
    if args.shard.is_empty() {
        if args.shards > 1 {
            return Err(CliError::Usage(format!(
                "--shards {} needs --shard I: which shards this process crawls (0 to {})",
                args.shards,
                args.shards - 1
            )));
        }
        return Ok(vec![0]);
    }
    let mut held = args.shard.clone();
    held.sort_unstable();
    held.dedup();
    Ok(held)
}

/// True when the state is in a store several processes can share.
fn shared_store(args: &CrawlArgs) -> bool {
    !args.no_state && location(&args.store).is_shared()
}

/// `--cdx`: the job's WARC files indexed once the run is over (after a
/// `kill -9`, the next run's end writes them).
fn index_warc(warc: &Option<WarcOptions>, job: &str, cdx: bool) -> Result<(), CliError> {
    if let (Some(w), true) = (warc, cdx) {
        for index in w.index(job)? {
            tracing::info!(index = %index.display(), "CDXJ index written");
        }
    }
    Ok(())
}

/// A configuration or seed problem is the user's (exit 2); anything else is fatal.
pub fn engine_error(e: EngineError) -> CliError {
    match e {
        EngineError::Config(_) | EngineError::BadSeed(_) => CliError::Usage(e.to_string()),
        EngineError::State(StateError::Fenced(why)) => CliError::Fenced(why),
        e => CliError::Fatal(e.into()),
    }
}

/// How a crawl is run and shown.
pub struct Run<'a> {
    /// The job's name, for the status page.
    pub title: String,
    /// Progress, metrics, status page.
    pub view: &'a ViewArgs,
    /// The metrics and status addresses, bound.
    pub bound: Bound,
    /// No progress and no summary.
    pub quiet: bool,
    /// A shard of a job judges no failure by its own hosts alone: the
    /// job's others may have answered.
    pub shard: bool,
}

/// Runs a configured `engine` with its state and sink attached, showing
/// its progress and serving its metrics and status as `run` says, and
/// prints the summary unless quiet.
pub async fn crawl(mut engine: Engine, run: Run<'_>) -> Result<Outcome, CliError> {
    let (quiet, shard) = (run.quiet, run.shard);
    let run_timeout = engine.config().engine.run_timeout;
    let shutdown = Shutdown::install().map_err(|e| CliError::Fatal(e.into()))?;
    let mode = if quiet {
        ProgressMode::Off
    } else {
        run.view.progress
    };
    let watched = mode != ProgressMode::Off || !run.bound.is_empty();
    let live = watched.then(|| engine.live());
    let progress = live
        .clone()
        .filter(|_| mode != ProgressMode::Off)
        .map(|rx| Progress::start(mode, run.view.progress_every, rx));
    let servers = match live {
        Some(rx) if !run.bound.is_empty() => run.bound.serve(Arc::new(CrawlSource {
            name: run.title.clone(),
            live: rx,
        }))?,
        _ => Vec::new(),
    };
    // The engine runs as a task of the runtime, not on the thread that
    // waits for it: a request task that ends wakes it on the same worker
    // (tokio's next-task slot) instead of waking another thread.
    let summary = match tokio::spawn(engine.run(shutdown.requested())).await {
        Ok(summary) => summary,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    if let Some(p) = progress {
        p.finish().await;
    }
    if !servers.is_empty() && !run.view.serve.linger.is_zero() && shutdown.received().is_none() {
        tokio::select! {
            () = tokio::time::sleep(run.view.serve.linger) => {}
            () = shutdown.requested() => {}
        }
    }
    for server in servers {
        server.abort();
    }
    let summary = summary.map_err(engine_error)?;
    if !quiet {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{summary}");
    }
    Ok(match summary.stop {
        StopReason::Timeout => {
            eprintln!(
                "run timeout of {} exceeded; stopped with {} URLs still queued",
                format_duration(run_timeout),
                summary.pending
            );
            Outcome::Timeout
        }
        StopReason::Interrupted => Outcome::Signal(shutdown.signal()),
        StopReason::Finished if summary.all_failed() && !shard => {
            if quiet {
                eprintln!("every authority failed; each record says why");
            } else {
                eprintln!("every authority failed; see the summary above");
            }
            Outcome::AllFailed
        }
        StopReason::Finished => Outcome::Finished,
    })
}
