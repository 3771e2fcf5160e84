//! `crawlkeeper`: the commands of [`crawlkeeper_cli`] with the built-in
//! processors.

use std::process::ExitCode;

use crawlkeeper_crawl::Registry;

fn main() -> ExitCode {
    crawlkeeper_cli::Commands::new(Registry::builtin()).main()
}
