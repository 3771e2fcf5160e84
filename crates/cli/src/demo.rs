//! `crawlkeeper demo`: the bundled test site on loopback, crawled with the
//! default engine. A real crawl that needs no network and no setup.

use std::time::Duration;

use crawlkeeper_crawl::state::MemoryState;
use crawlkeeper_crawl::{Engine, Registry};
use crawlkeeper_job::guard::{check_replaceable, fresh_sink};
use crawlkeeper_testsite::{SiteConfig, TestSite};
use url::Url;

use crate::args::DemoArgs;
use crate::crawl_cmd::{Run, crawl};
use crate::exit::engine_error;
use crate::exit::{CliError, Outcome};
use crate::serve::Bound;

/// Runs `crawlkeeper demo`.
pub async fn run(args: DemoArgs) -> Result<Outcome, CliError> {
    if let Some(out) = &args.out {
        check_replaceable(out, args.overwrite)?;
    }
    let mut site_config = SiteConfig::showcase();
    site_config.slow = Duration::from_secs(10);
    let site = TestSite::start(site_config)
        .await
        .map_err(|e| CliError::Fatal(anyhow::anyhow!("cannot start the demo site: {e}")))?;
    let seed = Url::parse(&site.url(0, "/")).map_err(|e| CliError::Fatal(e.into()))?;
    if !args.quiet {
        eprintln!(
            "demo site on {} and {}; crawling {seed}",
            site.origin(0),
            site.origin(1)
        );
    }
    let mut config = crawlkeeper_crawl::CrawlConfig::default();
    config.scope.follow = true;
    config.fetch.request_timeout = Duration::from_secs(2);
    config.engine.per_host = 4;
    config.politeness.retries = 1;
    config.politeness.retry_base = Duration::from_millis(200);
    let engine =
        Engine::configure(config, vec![seed], &Registry::builtin()).map_err(engine_error)?;
    let sink = fresh_sink(args.out.as_deref())?;
    // The demo keeps its state in memory: there is nothing to resume.
    let engine = engine.attach(Box::new(MemoryState::new()), sink);
    let outcome = crawl(
        engine,
        Run {
            title: "demo".to_owned(),
            view: &args.view,
            bound: Bound::bind(&args.view.serve)?,
            quiet: args.quiet,
            shard: false,
        },
    )
    .await?;
    if !args.quiet {
        eprintln!("the site received {} requests", site.log().len());
    }
    Ok(outcome)
}
