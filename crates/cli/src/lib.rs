//! The `crawlkeeper` commands as a library: [`Commands`] parses the
//! command line, sets up logging, runs a command and maps its outcome to
//! an exit code. The work is in the library crates.
//!
//! The `crawlkeeper` binary is `Commands::new(Registry::builtin()).main()`.
//! A binary of your own adds its extractors, scopers and processors to the
//! [`Registry`] first, and has every command: `crawl` and `node` run them,
//! `submit` checks a job's names against them.
//!
//! ```no_run
//! use crawlkeeper_crawl::{Extracted, Extractor, FieldValue, Page, Registry};
//!
//! /// Adds the page's size in kilobytes as the field `kb`.
//! struct Size;
//!
//! impl Extractor for Size {
//!     fn name(&self) -> &str {
//!         "size"
//!     }
//!     fn extract(&self, page: &Page<'_>, out: &mut Extracted) {
//!         let kb = page.response.body.len() as u64 / 1024;
//!         out.fields.insert("kb".into(), FieldValue::Json(kb.into()));
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let mut registry = Registry::builtin();
//!     registry.add_extractor("size", |_| Ok(Box::new(Size)));
//!     // `my-node crawl URL --extractor size`, `my-node node …`, `my-node submit --extractor size …`
//!     crawlkeeper_cli::Commands::new(registry).main()
//! }
//! ```

mod args;
mod args_cluster;
mod args_job;
mod args_process;
mod args_render;
mod args_view;
mod cluster;
mod crawl_cmd;
mod crawl_plan;
mod demo;
mod exit;
mod node_cmd;
mod progress;
mod results_cmd;
mod serve;
mod signals;
mod state;
mod status_cmd;
mod submit_cmd;
mod values;
mod warc_out;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use crawlkeeper_crawl::Registry;
use tracing_subscriber::EnvFilter;

use args::{Cli, Command};

/// Every `crawlkeeper` command, run with the processors of a registry.
#[derive(Debug)]
pub struct Commands {
    registry: Registry,
}

impl Commands {
    /// The commands, with `registry`'s extractors, scopers and processors
    /// (`Registry::builtin()` and yours).
    pub fn new(registry: Registry) -> Self {
        Self { registry }
    }

    /// Parses the process's arguments, runs the command they name, and
    /// returns its exit code (0 done, 1 every URL failed, 2 bad input, …;
    /// see the guide's exit codes).
    pub fn main(self) -> ExitCode {
        let registry = self.registry;

        let cli = match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => return usage_error(e),
        };
        let quiet = match &cli.command {
            Command::Crawl(a) => a.quiet,
            Command::Demo(a) => a.quiet,
            Command::Submit(a) => a.quiet,
            Command::Results(_) | Command::Jobs(_) | Command::Stop(_) | Command::Status(_) => true,
            Command::Node(_) => false,
        };
        // A per-URL failure belongs in its record and the summary: the log
        // lines libraries write about one (rustls' platform verifier logs
        // every certificate it refuses at ERROR) are not shown.
        let default_filter = if quiet {
            "error,rustls_platform_verifier=off,rustls=off,hyper_util=off"
        } else {
            "warn,crawlkeeper_crawl=info,crawlkeeper=info,crawlkeeper_node=info,crawlkeeper_cluster=info,\
             rustls_platform_verifier=off,rustls=off,hyper_util=off"
        };
        tracing_subscriber::fmt()
            .with_env_filter(
                EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| EnvFilter::new(default_filter)),
            )
            .with_writer(progress::LogWriter)
            .with_ansi(progress::colours())
            .init();
        // Reading a store is synchronous work (the PostgreSQL client runs its own
        // runtime): those commands run outside the async runtime.
        let result = match cli.command {
            Command::Results(a) => results_cmd::results(a),
            Command::Jobs(a) => results_cmd::jobs(a),
            Command::Stop(a) => results_cmd::stop(a),
            Command::Crawl(a) => with_runtime(|| crawl_cmd::run(*a, registry)),
            Command::Demo(a) => with_runtime(|| demo::run(a)),
            Command::Node(a) => with_runtime(|| node_cmd::run(*a, registry)),
            Command::Submit(a) => with_runtime(|| submit_cmd::run(*a, &registry)),
            Command::Status(a) => with_runtime(|| status_cmd::run(a)),
        };
        match result {
            Ok(outcome) => outcome.code(),
            Err(e) => {
                eprintln!("error: {e:#}");
                e.code()
            }
        }
    }
}

/// Help and version print as clap writes them; any other argument error is
/// one line on stderr and exit 2.
fn usage_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{first} (see --help)");
            ExitCode::from(2)
        }
    }
}

/// The library chapter of the guide: its examples are compiled as this
/// crate's doc-tests (this crate reaches the engine, the cluster and the
/// commands).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/library.md")]
mod guide_library {}

/// Runs a command's future on a multi-threaded runtime.
fn with_runtime<F, Fut>(command: F) -> Result<exit::Outcome, exit::CliError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<exit::Outcome, exit::CliError>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            exit::CliError::Fatal(anyhow::anyhow!("cannot start the async runtime: {e}"))
        })?;
    let result = runtime.block_on(command());
    // Do not wait for request tasks that were abandoned at the deadline.
    runtime.shutdown_background();
    result
}
