//! `crawlkeeper crawl`: seeds and options in, records and a summary out.

use std::io::Write;
use std::path::PathBuf;

use crawlkeeper_crawl::state::MemoryState;
use crawlkeeper_crawl::{Engine, EngineError, JsonlSink, Registry, Sink, StopReason};
use crawlkeeper_model::format_duration;
use crawlkeeper_store::{JobInfo, JobSpec, Store};

use crate::args::{CrawlArgs, StoreArgs};
use crate::exit::{CliError, Outcome};
use crate::output::{
    Protected, check_existing, fresh_sink, is_stream, open_output, refuse_protected, state_files,
};
use crate::seeds::{read_seeds, seed_files, stdin};
use crate::signals::Shutdown;
use crate::state::{StoreState, fatal, job_spec, open_store};

/// Runs `crawlkeeper crawl`: the job's state is kept in the store, so the
/// same command run again resumes it. Everything the user gave is checked
/// (seeds, options, processors, the output path) before the store or any
/// file is touched.
pub async fn run(args: CrawlArgs) -> Result<Outcome, CliError> {
    let seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
    let config = args.to_config();
    let engine = Engine::configure(config.clone(), seeds.clone(), &Registry::builtin())
        .map_err(engine_error)?;
    let spec = job_spec(&config, &seeds);
    let mut protected: Vec<Protected> = seed_files(&args.seeds)
        .map(|path| Protected {
            path: path.to_path_buf(),
            what: "a seed file",
        })
        .collect();
    if !args.no_state && args.store.store.is_none() {
        protected.extend(state_files(&args.store.state, Some(&spec.name)));
    }
    if let Some(out) = &args.out {
        refuse_protected(out, &protected)?;
    }
    if args.no_state {
        if let Some(out) = &args.out {
            check_existing(out, None, args.overwrite)?;
        }
        let sink = fresh_sink(args.out.as_deref())?;
        let engine = engine.attach(Box::new(MemoryState::new()), sink);
        return crawl(engine, args.quiet).await;
    }
    let (store, job, sink) = {
        let options = PrepareOptions {
            store: args.store.clone(),
            out: args.out.clone(),
            fresh: args.fresh,
            overwrite: args.overwrite,
            quiet: args.quiet,
        };
        // Store set-up blocks (and the PostgreSQL client runs its own runtime).
        tokio::task::spawn_blocking(move || prepare(&options, &spec))
            .await
            .map_err(|e| CliError::Fatal(e.into()))??
    };
    let engine = engine.attach(Box::new(StoreState::new(store, job.id)), sink);
    crawl(engine, args.quiet).await
}

/// What [`prepare`] needs from the arguments.
struct PrepareOptions {
    store: StoreArgs,
    out: Option<PathBuf>,
    fresh: bool,
    overwrite: bool,
    quiet: bool,
}

/// A store, its job, locked, and the sink for the job's records.
type Prepared = (Box<dyn Store>, JobInfo, Box<dyn Sink>);

/// Opens the store and the job (deleting it first with `fresh`), locks it,
/// and brings the output file up to date with it. The output file is
/// checked against what the store holds before the store or the file is
/// changed.
fn prepare(options: &PrepareOptions, spec: &JobSpec) -> Result<Prepared, CliError> {
    let out = options.out.as_deref();
    let stream = out.is_some_and(is_stream);
    // A state file that does not exist yet holds no job: check the output
    // before creating it.
    if let (Some(out), None) = (out, &options.store.store)
        && !options.store.state.exists()
    {
        check_existing(out, None, options.overwrite)?;
    }
    let mut store = open_store(&options.store)?;
    if let Some(out) = out {
        let stored = store.find_job(&spec.name).map_err(fatal)?;
        match &stored {
            Some(job) => check_existing(out, Some((store.as_mut(), job)), options.overwrite)?,
            None => check_existing(out, None, options.overwrite)?,
        }
    }
    if options.fresh && store.delete_job(&spec.name).map_err(fatal)? && !options.quiet {
        eprintln!("job {}: stored state deleted (--fresh)", spec.name);
    }
    let job = store.open_job(spec).map_err(fatal)?;
    store.lock_job(&job).map_err(fatal)?;
    if !options.quiet && job.counts.seen > 0 {
        eprintln!(
            "job {}: resuming with {} URLs done and {} pending",
            job.name,
            job.counts.done,
            job.counts.pending()
        );
    }
    let sink: Box<dyn Sink> = match out {
        Some(path) if stream => fresh_sink(Some(path))?,
        Some(path) => Box::new(JsonlSink::new(open_output(
            path,
            store.as_mut(),
            &job,
            options.overwrite,
        )?)),
        None => Box::new(JsonlSink::new(std::io::stdout())),
    };
    Ok((store, job, sink))
}

/// A configuration or seed problem is the user's (exit 2); anything else is fatal.
pub fn engine_error(e: EngineError) -> CliError {
    match e {
        EngineError::Config(_) | EngineError::BadSeed(_) => CliError::Usage(e.to_string()),
        EngineError::Sink(_) | EngineError::State(_) => CliError::Fatal(e.into()),
    }
}

/// Runs a configured `engine` with its state and sink attached, and
/// prints the summary unless `quiet`.
pub async fn crawl(engine: Engine, quiet: bool) -> Result<Outcome, CliError> {
    let run_timeout = engine.config().engine.run_timeout;
    let shutdown = Shutdown::install().map_err(|e| CliError::Fatal(e.into()))?;
    let summary = engine
        .run(shutdown.requested())
        .await
        .map_err(|e| CliError::Fatal(e.into()))?;
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
        StopReason::Finished if summary.all_failed() => {
            eprintln!("every authority failed; see the summary above");
            Outcome::AllFailed
        }
        StopReason::Finished => Outcome::Finished,
    })
}
