//! `crawlkeeper crawl`: seeds and options in, records and a summary out.

use std::io::Write;
use std::path::Path;

use crawlkeeper_crawl::state::{CrawlState, MemoryState};
use crawlkeeper_crawl::{CrawlConfig, Engine, EngineError, JsonlSink, Registry, Sink, StopReason};
use crawlkeeper_model::format_duration;
use crawlkeeper_store::{JobInfo, JobSpec, Store};
use url::Url;

use crate::args::{CrawlArgs, StoreArgs};
use crate::exit::{CliError, Outcome};
use crate::output::{fresh_sink, open_output};
use crate::seeds::{read_seeds, stdin};
use crate::signals::Shutdown;
use crate::state::{StoreState, fatal, job_spec, open_store};

/// Runs `crawlkeeper crawl`: the job's state is kept in the store, so the
/// same command run again resumes it.
pub async fn run(args: CrawlArgs) -> Result<Outcome, CliError> {
    let seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
    let config = args.to_config();
    if args.no_state {
        let sink = fresh_sink(args.out.as_deref())?;
        return crawl(
            config,
            seeds,
            Box::new(MemoryState::new()),
            sink,
            args.quiet,
        )
        .await;
    }
    let spec = job_spec(&config, &seeds);
    let (store, job, sink) = {
        let (store_args, out, fresh, quiet) =
            (args.store.clone(), args.out.clone(), args.fresh, args.quiet);
        // Store set-up blocks (and the PostgreSQL client runs its own runtime).
        tokio::task::spawn_blocking(move || {
            prepare(&store_args, &spec, out.as_deref(), fresh, quiet)
        })
        .await
        .map_err(|e| CliError::Fatal(e.into()))??
    };
    let state = Box::new(StoreState::new(store, job.id));
    crawl(config, seeds, state, sink, args.quiet).await
}

/// A store, its job, locked, and the sink for the job's records.
type Prepared = (Box<dyn Store>, JobInfo, Box<dyn Sink>);

/// Opens the store and the job (deleting it first with `fresh`), locks it,
/// and brings the output file up to date with it.
fn prepare(
    store_args: &StoreArgs,
    spec: &JobSpec,
    out: Option<&Path>,
    fresh: bool,
    quiet: bool,
) -> Result<Prepared, CliError> {
    let mut store = open_store(store_args)?;
    if fresh && store.delete_job(&spec.name).map_err(fatal)? && !quiet {
        eprintln!("job {}: stored state deleted (--fresh)", spec.name);
    }
    let job = store.open_job(spec).map_err(fatal)?;
    store.lock_job(&job).map_err(fatal)?;
    if !quiet && job.counts.seen > 0 {
        eprintln!(
            "job {}: resuming with {} URLs done and {} pending",
            job.name,
            job.counts.done,
            job.counts.pending()
        );
    }
    let sink: Box<dyn Sink> = match out {
        Some(path) => Box::new(JsonlSink::new(open_output(
            path,
            store.as_mut(),
            &job,
            fresh,
        )?)),
        None => Box::new(JsonlSink::new(std::io::stdout())),
    };
    Ok((store, job, sink))
}

/// Crawls `seeds` with `config` and `state`, writing records to `sink`
/// once they are durable, and prints the summary unless `quiet`.
pub async fn crawl(
    config: CrawlConfig,
    seeds: Vec<Url>,
    state: Box<dyn CrawlState>,
    sink: Box<dyn Sink>,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let run_timeout = config.engine.run_timeout;
    let engine = Engine::with_state(config, seeds, &Registry::builtin(), state, sink).map_err(
        |e| match e {
            EngineError::Config(_) | EngineError::BadSeed(_) => CliError::Usage(e.to_string()),
            EngineError::Sink(_) | EngineError::State(_) => CliError::Fatal(e.into()),
        },
    )?;
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
