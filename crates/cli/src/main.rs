//! `crawlkeeper`: the commands of [`crawlkeeper_cli`] with the built-in
//! processors.

use std::process::ExitCode;

use crawlkeeper_crawl::Registry;

/// jemalloc: a crawl allocates and frees per page (parser buffers, selector
/// programs, records), and glibc's allocator spent a fifth of the crawler's
/// CPU on it. mimalloc was as fast, with twice the peak RSS.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    crawlkeeper_cli::Commands::new(Registry::builtin()).main()
}
