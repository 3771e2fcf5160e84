//! `crawlkeeper`: the commands of [`crawlkeeper_cli`] with the built-in
//! processors.

use std::process::ExitCode;

use crawlkeeper_crawl::Registry;

/// jemalloc: a crawl allocates and frees per page (parser buffers, selector
/// programs, records), and glibc's allocator spent a fifth of the crawler's
/// CPU on it. mimalloc was as fast, with twice the peak RSS.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before the first allocation. One arena: by
/// default jemalloc gives each thread an arena of its own, up to four per
/// core, and each keeps its own freed pages; a crawl's threads (the
/// runtime's workers, the state and checkpoint threads) then hold 2–4 MB
/// more at their peak for no CPU saved (`crawlkeeper-bench engine`, 2
/// cores). `_RJEM_MALLOC_CONF=narenas:N` overrides it on a machine where
/// many cores would wait for the one arena.
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 10] = b"narenas:1\0";

fn main() -> ExitCode {
    crawlkeeper_cli::Commands::new(Registry::builtin()).main()
}
