//! `crawlkeeper crawl`: seeds and options in, records and a summary out.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crawlkeeper_crawl::sink::FanOut;
use crawlkeeper_crawl::state::{LEASE_BOUND, MemoryState, Sharing, StateError};
use crawlkeeper_crawl::{Engine, EngineError, JsonlSink, Registry, Sink, StopReason};
use crawlkeeper_job::warc::{JobLook, WarcOptions, check_warc, open_warc};
use crawlkeeper_job::{StoreState, job_spec};
use crawlkeeper_model::{Partition, format_duration};
use crawlkeeper_store::{Claim, JobInfo, JobSpec, Store, StoreError, this_process};

use crate::args::{CrawlArgs, StoreArgs};
use crate::args_view::ViewArgs;
use crate::exit::{CliError, Outcome};
use crate::output::{
    Part, Protected, check_existing, fresh_sink, is_stream, lock_existing, open_output,
    refuse_odd_lock, refuse_protected, refuse_protected_warc, state_files,
};
use crate::progress::{Progress, ProgressMode};
use crate::seeds::{read_seeds, seed_files, stdin};
use crate::serve::{Bound, CrawlSource};
use crate::signals::Shutdown;
use crate::state::{fatal, open_store};
use crate::warc_out::{archiver, warc_options};

/// Runs `crawlkeeper crawl`: the job's state is kept in the store, so the
/// same command run again resumes it. Everything the user gave is checked
/// (seeds, options, processors, shards, the output path) before the store
/// or any file is touched.
pub async fn run(args: CrawlArgs) -> Result<Outcome, CliError> {
    let seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
    if !args.no_state {
        crate::state::check_location(&args.store)?;
    }
    let bound = Bound::bind(&args.view.serve)?;
    let mut config = args.to_config();
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
    let mut engine = Engine::configure(config.clone(), seeds.clone(), &Registry::builtin())
        .map_err(engine_error)?;
    if let Some(w) = &warc {
        engine = engine.archive(archiver(w, &args.warc));
    }
    let spec = job_spec(&config, &seeds, args.shards);
    let mut protected: Vec<Protected> = seed_files(&args.seeds)
        .map(|path| Protected {
            path: path.to_path_buf(),
            what: "a seed file",
        })
        .collect();
    if !args.no_state && args.store.store.is_none() {
        protected.extend(state_files(&args.store.state, Some(&spec.name)));
        refuse_odd_lock(&args.store.state, &spec.name)?;
    }
    if let Some(out) = &args.out {
        refuse_protected(out, &protected)?;
    }
    if warc.is_some() && (args.shards > 1 || args.take_over) {
        return Err(CliError::Usage(
            "--warc is not available yet with --shards or --take-over".to_owned(),
        ));
    }
    if let Some(w) = &warc {
        if args.out.as_ref().is_some_and(|o| *o == w.path) {
            return Err(CliError::Usage(
                "--warc and --out name the same file".to_owned(),
            ));
        }
        // Every file the WARC output writes (rotations, --cdx indexes)
        // spares the state, the seeds and --out.
        let cdx = args.warc.cdx;
        refuse_protected_warc(w, &spec.name, cdx, "--warc", &protected)?;
        if let Some(out) = &args.out {
            let out = Protected {
                path: out.clone(),
                what: "the --out file",
            };
            refuse_protected_warc(w, &spec.name, cdx, "--warc", &[out])?;
        }
    }
    if args.no_state {
        if let Some(out) = &args.out {
            check_existing(out, None, args.overwrite)?;
        }
        if let Some(w) = &warc {
            check_warc(w, JobLook::fresh(&spec.name), args.overwrite)?;
            if args.warc.cdx {
                w.check_indexes(&spec.name, args.overwrite)?;
            }
        }
        let mut sink = fresh_sink(args.out.as_deref())?;
        if let Some(w) = &warc {
            let archive = open_warc(w, JobLook::fresh(&spec.name), None)?;
            sink = Box::new(FanOut(vec![sink, Box::new(archive)]));
        }
        let engine = engine.attach(Box::new(MemoryState::new()), sink);
        let run = Run {
            title: spec.name.clone(),
            view: &args.view,
            bound,
            quiet: args.quiet,
            shard: false,
        };
        let outcome = crawl(engine, run).await?;
        index_warc(&warc, &spec.name, args.warc.cdx)?;
        return Ok(outcome);
    }
    let warc_index = warc.clone();
    let options = PrepareOptions {
        store: args.store.clone(),
        out: args.out.clone(),
        fresh: args.fresh,
        recrawl: args.recrawl,
        overwrite: args.overwrite,
        quiet: args.quiet,
        shards: held.clone(),
        take_over: args.take_over,
        warc,
        cdx: args.warc.cdx,
    };
    // Store set-up blocks (and the PostgreSQL client runs its own runtime).
    let (store, job, sink) = tokio::task::spawn_blocking(move || prepare(&options, &spec))
        .await
        .map_err(|e| CliError::Fatal(e.into()))??;
    // A job in a shared store is fenced and gated even with one shard: a
    // process given --take-over may displace this one.
    let state = if shared_store(&args) {
        let partition = Partition::new(job.shards, held.clone()).ok_or_else(|| {
            CliError::Usage(format!("no shards {held:?} in a job of {}", job.shards))
        })?;
        StoreState::shared(
            store,
            job.clone(),
            Sharing::new(partition),
            config.scope.max_pages,
        )
        .map_err(fatal)?
    } else {
        StoreState::new(store, job.id)
    }
    .keeping_archives(config.archive.store_bodies);
    let run = Run {
        title: job.name.clone(),
        view: &args.view,
        bound,
        quiet: args.quiet,
        shard: job.shards > 1,
    };
    let outcome = crawl(engine.attach(Box::new(state), sink), run).await?;
    index_warc(&warc_index, &job.name, args.warc.cdx)?;
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
    !args.no_state
        && args
            .store
            .store
            .as_deref()
            .is_some_and(crawlkeeper_store::location::is_postgres)
}

/// What [`prepare`] needs from the arguments.
struct PrepareOptions {
    store: StoreArgs,
    out: Option<PathBuf>,
    fresh: bool,
    recrawl: bool,
    overwrite: bool,
    quiet: bool,
    shards: Vec<u32>,
    take_over: bool,
    warc: Option<WarcOptions>,
    /// `--cdx`: an index beside each WARC file.
    cdx: bool,
}

/// A store, its job, claimed, and the sink for the job's records.
type Prepared = (Box<dyn Store>, JobInfo, Box<dyn Sink>);

/// Opens the store and the job (deleting it first with `fresh`), claims
/// the shard, and brings the output file up to date with it (the shard's
/// records only, in a job of several). The output file is checked against
/// what the store holds before the store or the file is changed.
fn prepare(options: &PrepareOptions, spec: &JobSpec) -> Result<Prepared, CliError> {
    let out = options.out.as_deref();
    let stream = out.is_some_and(is_stream);
    let shards = (spec.shards > 1).then_some(options.shards.as_slice());
    // A state file that does not exist yet holds no job: check the output
    // before creating it.
    if let (Some(out), None) = (out, &options.store.store)
        && !options.store.state.exists()
    {
        check_existing(out, None, options.overwrite)?;
    }
    if let (Some(w), None) = (&options.warc, &options.store.store)
        && !options.store.state.exists()
    {
        let new = JobLook::fresh(&spec.name);
        check_warc(w, new, options.overwrite)?;
        if options.cdx {
            w.check_indexes(&spec.name, options.overwrite)?;
        }
    }
    if options.recrawl && options.store.store.is_none() && !options.store.state.exists() {
        return Err(no_earlier_crawl(spec, &options.store));
    }
    let mut store = open_store(&options.store)?;
    let mut existing = store.find_job(&spec.name).map_err(fatal)?;
    // A finished job crawled again (--recrawl) starts a new pass: its
    // outputs are new files, like a fresh job's.
    let recrawl = match &existing {
        None if options.recrawl => return Err(no_earlier_crawl(spec, &options.store)),
        Some(job) if options.recrawl && job.counts.pending() == 0 => {
            check_recrawl(store.as_mut(), job, options)?;
            existing = None;
            true
        }
        _ => false,
    };
    if let Some(out) = out {
        match &existing {
            Some(job) => {
                let part = Part { job, shards };
                check_existing(out, Some((store.as_mut(), part)), options.overwrite)?;
            }
            None => check_existing(out, None, options.overwrite)?,
        }
    }
    if let Some(w) = &options.warc {
        let done = match &existing {
            Some(job) if !options.fresh => job.counts.done,
            _ => 0,
        };
        let look = JobLook {
            name: &spec.name,
            done,
        };
        check_warc(w, look, options.overwrite)?;
        if options.cdx {
            w.check_indexes(&spec.name, options.overwrite)?;
        }
    }
    // The output file is this process's alone; with --take-over it is
    // taken before the shard, so that a process refused its file has
    // displaced no one.
    let lock_output = || match out {
        Some(path) if !stream => lock_existing(path),
        _ => Ok(None),
    };
    let mut locked = if options.take_over {
        lock_output()?
    } else {
        None
    };
    if options.fresh && store.delete_job(&spec.name).map_err(refused)? && !options.quiet {
        eprintln!("job {}: stored state deleted (--fresh)", spec.name);
    }
    let mut job = store.open_job(spec).map_err(fatal)?;
    let claim = Claim {
        shards: options.shards.clone(),
        holder: this_process(),
        take_over: options.take_over,
    };
    store.claim(&job, &claim).map_err(refused)?;
    if !options.take_over {
        locked = lock_output()?;
    } else {
        // A live holder displaced sends nothing once its lease's last
        // confirmation is older than the bound: wait that long before the
        // first request, so that two never crawl the shard's hosts at once.
        std::thread::sleep(LEASE_BOUND);
    }
    if recrawl {
        let queued = store.recrawl(&job).map_err(refused)?;
        job = store.open_job(spec).map_err(fatal)?;
        if !options.quiet {
            eprintln!(
                "job {}: crawling its {queued} URLs again, asking for changed pages only (--recrawl)",
                job.name
            );
        }
    } else if !options.quiet && job.counts.seen > 0 {
        if job.counts.pending() == 0 {
            eprintln!(
                "job {}: complete already ({} URLs done), nothing to fetch; \
                 use --recrawl to fetch what changed since, or --fresh to start over",
                job.name, job.counts.done
            );
        } else if options.recrawl {
            eprintln!(
                "job {}: not finished ({} URLs done, {} pending); resuming it \
                 (--recrawl starts a new pass once it is complete)",
                job.name,
                job.counts.done,
                job.counts.pending()
            );
        } else {
            eprintln!(
                "job {}: resuming with {} URLs done and {} pending",
                job.name,
                job.counts.done,
                job.counts.pending()
            );
        }
    }
    if !options.quiet && job.shards > 1 {
        eprintln!(
            "job {}: crawling shard {} of {} as {}",
            job.name,
            options
                .shards
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            job.shards,
            claim.holder
        );
    }
    let sink: Box<dyn Sink> = match out {
        Some(path) if stream => fresh_sink(Some(path))?,
        Some(path) => Box::new(JsonlSink::new(open_output(
            path,
            locked,
            store.as_mut(),
            Part { job: &job, shards },
            options.overwrite,
        )?)),
        None => Box::new(JsonlSink::new(std::io::stdout())),
    };
    let sink = match &options.warc {
        Some(w) => {
            let part = Part { job: &job, shards };
            let look = JobLook {
                name: &job.name,
                done: job.counts.done,
            };
            let archive = open_warc(w, look, Some((store.as_mut(), part)))?;
            Box::new(FanOut(vec![sink, Box::new(archive)])) as Box<dyn Sink>
        }
        None => sink,
    };
    Ok((store, job, sink))
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

/// Refuses, unless `--overwrite`, a re-crawl that would replace what the
/// earlier pass left: its WARC files at the `--warc` path, or the page
/// bodies it kept in the store (`--store-bodies`), which the revisits of
/// the new pass refer to.
fn check_recrawl(
    store: &mut dyn Store,
    job: &JobInfo,
    options: &PrepareOptions,
) -> Result<(), CliError> {
    if options.overwrite {
        return Ok(());
    }
    if let Some(path) = options.warc.as_ref().and_then(|w| w.first_kept(&job.name)) {
        return Err(CliError::Usage(format!(
            "--recrawl: '{}' holds the earlier pass of job {}; give the new pass another \
             --warc path (or --overwrite to replace it)",
            path.display(),
            job.name
        )));
    }
    if !store.archives(job.id, 0, 1).map_err(fatal)?.is_empty() {
        return Err(CliError::Usage(format!(
            "--recrawl: job {} kept its pages in the store (--store-bodies), which a new pass \
             replaces; export them first (results --format warc), then add --overwrite",
            job.name
        )));
    }
    Ok(())
}

/// `--recrawl` of a job the store has never crawled.
fn no_earlier_crawl(spec: &JobSpec, store: &StoreArgs) -> CliError {
    let place = match &store.store {
        Some(s) => crawlkeeper_store::location::redact(s),
        None => store.state.display().to_string(),
    };
    CliError::Usage(format!(
        "--recrawl: job {} has no earlier crawl in {place} to revisit; run it without --recrawl first",
        spec.name
    ))
}

/// A job or shard another live process holds is the user's to sort out
/// (exit 2); other store errors are fatal.
fn refused(e: StoreError) -> CliError {
    match e {
        StoreError::Held { job, shard, holder } => CliError::Usage(format!(
            "shard {shard} of job {job} is held by {holder}, a live process; \
             use --take-over to take it (that process then stops)"
        )),
        StoreError::Locked(_) => CliError::Usage(e.to_string()),
        e => fatal(e),
    }
}

/// A configuration or seed problem is the user's (exit 2); anything else is fatal.
pub fn engine_error(e: EngineError) -> CliError {
    match e {
        EngineError::Config(_) | EngineError::BadSeed(_) => CliError::Usage(e.to_string()),
        EngineError::State(StateError::Fenced(why)) => CliError::Fenced(why),
        EngineError::Sink(_) | EngineError::State(_) => CliError::Fatal(e.into()),
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
    let summary = engine.run(shutdown.requested()).await;
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
