//! `crawl --warc`: the options of the WARC output, and its `warcinfo`.

use crawlkeeper_crawl::{Archiver, CrawlConfig};
use crawlkeeper_job::warc::WarcOptions;
use crawlkeeper_store::this_process;

use crate::args::WarcArgs;

/// The WARC output the arguments ask for, if any; `config` is the job's
/// (its options go into each file's `warcinfo`).
pub fn warc_options(args: &WarcArgs, config: &CrawlConfig) -> Option<WarcOptions> {
    let path = args.warc.clone()?;
    Some(WarcOptions {
        path,
        max_size: args.files.warc_max_size,
        gzip_level: args.files.warc_gzip_level,
        info: warc_info(config),
    })
}

/// The `warcinfo` fields of a crawl with `config` (the job is added by
/// the writer).
pub fn warc_info(config: &CrawlConfig) -> Vec<(String, String)> {
    let process = this_process();
    let host = process
        .rsplit_once(':')
        .map_or(process.as_str(), |(h, _)| h);
    // An archive is made to be shared: its options carry no secret.
    let options = serde_json::to_string(&config.redacted()).unwrap_or_default();
    [
        (
            "software",
            format!("crawlkeeper/{}", env!("CARGO_PKG_VERSION")),
        ),
        ("hostname", host.to_owned()),
        ("format", "WARC File Format 1.1".to_owned()),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
                .to_owned(),
        ),
        ("http-header-user-agent", config.fetch.user_agent.clone()),
        (
            "robots",
            if config.scope.respect_robots {
                "obey"
            } else {
                "ignore"
            }
            .to_owned(),
        ),
        ("crawlkeeper-options", options),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The archiver of a crawl writing `options`.
pub fn archiver(options: &WarcOptions, args: &WarcArgs) -> Archiver {
    Archiver::new(options.encoding(), args.warc_dedup)
}
