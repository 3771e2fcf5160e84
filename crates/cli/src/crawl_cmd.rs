//! `crawlkeeper crawl`: seeds and options in, records and a summary out.

use std::io::Write;
use std::sync::Arc;

use crawlkeeper_crawl::{Engine, Registry, StopReason};
use crawlkeeper_job::open;
use crawlkeeper_job::warc::WarcOptions;
use crawlkeeper_model::format_duration;

use crate::args::CrawlArgs;
use crate::args_view::ViewArgs;
use crate::crawl_plan::Plan;
use crate::exit::{CliError, Outcome, engine_error};
use crate::progress::{Progress, ProgressMode};
use crate::serve::{Bound, CrawlSource};
use crate::signals::Shutdown;

/// Runs `crawlkeeper crawl`: the job's state is kept in the store (or in
/// memory, `--no-state`), so the same command run again resumes it.
/// Everything the user gave is checked ([`Plan::check`]) before the store
/// or any file is touched.
pub async fn run(args: CrawlArgs, mut registry: Registry) -> Result<Outcome, CliError> {
    if args.job.render {
        // A browser that is missing or will not start is the user's to
        // fix, told before anything is written.
        let renderer = args.browsers.start().await.map_err(CliError::Usage)?;
        registry.set_renderer(std::sync::Arc::new(renderer));
    }
    let Plan {
        engine,
        opening,
        bound,
        politeness,
    } = Plan::check(&args, registry)?;
    let warc = opening.outputs.warc.clone();
    let opening_location = opening.location.clone();
    let opening_holder = opening.holder.to_string();
    // Store set-up blocks (and the PostgreSQL client runs its own runtime).
    let opened = tokio::task::spawn_blocking(move || open(&opening))
        .await
        .map_err(|e| CliError::Fatal(e.into()))??;
    // Over PostgreSQL, the bounds per host and per IP hold across every
    // process crawling there (a `--shards` job's others, a cluster's).
    if let crawlkeeper_job::Location::Store(url) = &opening_location
        && crawlkeeper_store::location::is_postgres(url)
    {
        crawlkeeper_job::polite::keep(politeness, url.clone(), opening_holder);
    }
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
    let outcome = crawl(engine.attach(opened.state, opened.sink), run).await?;
    index_warc(&warc, &opened.job.name, args.warc.cdx)?;
    Ok(outcome)
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
        StopReason::Stopped => {
            eprintln!("stopped on request (crawlkeeper stop); run the same command to go on");
            Outcome::Finished
        }
    })
}
