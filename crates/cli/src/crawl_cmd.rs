//! `crawlkeeper crawl`: seeds and options in, records and a summary out.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crawlkeeper_crawl::{CrawlConfig, Engine, EngineError, JsonlSink, Registry, Sink, StopReason};
use crawlkeeper_model::format_duration;
use url::Url;

use crate::args::CrawlArgs;
use crate::exit::{CliError, Outcome};
use crate::seeds::{read_seeds, stdin};
use crate::signals::Shutdown;

/// Runs `crawlkeeper crawl`.
pub async fn run(args: CrawlArgs) -> Result<Outcome, CliError> {
    let seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
    crawl(args.to_config(), seeds, args.out.as_deref(), args.quiet).await
}

/// Crawls `seeds` with `config`, writing records to `out` (or stdout), and
/// prints the summary unless `quiet`.
pub async fn crawl(
    config: CrawlConfig,
    seeds: Vec<Url>,
    out: Option<&Path>,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let sink: Box<dyn Sink> = match out {
        Some(path) => {
            let file = File::create(path).map_err(|e| {
                CliError::Usage(format!(
                    "cannot write output file '{}': {e}",
                    path.display()
                ))
            })?;
            Box::new(JsonlSink::new(file))
        }
        None => Box::new(JsonlSink::new(std::io::stdout())),
    };
    let run_timeout = config.engine.run_timeout;
    let engine = Engine::new(config, seeds, &Registry::builtin(), sink).map_err(|e| match e {
        EngineError::Config(_) | EngineError::BadSeed(_) => CliError::Usage(e.to_string()),
        EngineError::Sink(_) | EngineError::State(_) => CliError::Fatal(e.into()),
    })?;
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
