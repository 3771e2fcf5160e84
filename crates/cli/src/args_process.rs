//! Processors an operator configures on `crawl` and `node`: which command
//! a name runs here, with how many children, and their bounds. A job
//! names processors (`--use`); only these say what runs.

use std::time::Duration;

use clap::Args;
use crawlkeeper_crawl::Registry;
use crawlkeeper_crawl::process::{
    ChildSettings, DEFAULT_PROCESSOR_MAX_BODY, DEFAULT_PROCESSOR_WORKERS, ProcessorCommand,
};

use crate::values::{positive_duration, positive_usize};

/// `--processor NAME=COMMAND` and its settings.
#[derive(Args, Debug, Clone)]
pub struct ProcessorArgs {
    /// A processor this process may run (repeatable): NAME=COMMAND, the
    /// command split into words like a shell's (quotes, backslashes) and
    /// run without one, as long-lived children speaking JSON Lines. Jobs
    /// name it with --use.
    #[arg(long = "processor", value_name = "NAME=COMMAND", value_parser = processor_command)]
    pub processors: Vec<ProcessorCommand>,
    /// Children of each processor: pages processed at once by it.
    #[arg(long, default_value_t = DEFAULT_PROCESSOR_WORKERS, value_name = "N",
          value_parser = positive_usize)]
    pub processor_workers: usize,
    /// A page's deadline with one processor (a free child awaited
    /// included); past it the page is recorded with the error kind
    /// processor and the child is started again.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = positive_duration)]
    pub processor_timeout: Duration,
    /// Body bytes sent to a processor; a longer body is cut
    /// (body_truncated in the request).
    #[arg(long, default_value_t = DEFAULT_PROCESSOR_MAX_BODY, value_name = "BYTES")]
    pub processor_max_body: u64,
}

impl ProcessorArgs {
    /// Adds the processors configured here to `registry`.
    pub fn add_to(&self, registry: &mut Registry) -> Result<(), String> {
        let settings = ChildSettings {
            workers: self.processor_workers,
            timeout: self.processor_timeout,
            max_body: self.processor_max_body,
        };
        let mut names = std::collections::BTreeSet::new();
        for p in &self.processors {
            if !names.insert(p.name.as_str()) {
                return Err(format!(
                    "--processor {}: the name is configured twice",
                    p.name
                ));
            }
            registry.add_command(p.clone(), settings);
        }
        Ok(())
    }
}

fn processor_command(s: &str) -> Result<ProcessorCommand, String> {
    s.parse()
        .map_err(|e: crawlkeeper_crawl::process::CommandError| e.to_string())
}
