//! `--metrics` and `--status`: the addresses checked and bound before
//! anything else starts (a bad one is the user's error, exit 2), and what
//! a crawl serves there.

use std::sync::Arc;

use crawlkeeper_crawl::live::LiveCrawl;
use crawlkeeper_view::prom::{self, Text};
use crawlkeeper_view::{Listen, Source};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::args_view::ServeArgs;
use crate::exit::CliError;

/// The addresses to serve, checked and bound.
pub struct Bound(Vec<(std::net::TcpListener, Listen)>);

impl Bound {
    /// Checks `args` (loopback, or --listen-public and a token; a token of
    /// visible ASCII) and binds
    /// each address; one address may serve both.
    pub fn bind(args: &ServeArgs) -> Result<Self, CliError> {
        let mut listens: Vec<Listen> = Vec::new();
        let token = args.status_token.clone().filter(|t| !t.is_empty());
        if let Some(t) = &token {
            check_token(t)?;
        }
        for (addr, status) in [(args.metrics, false), (args.status, true)] {
            let Some(addr) = addr else { continue };
            match listens.iter_mut().find(|l| l.addr == addr) {
                Some(l) => l.status |= status,
                None => listens.push(Listen {
                    addr,
                    metrics: !status,
                    status,
                    token: None,
                    public: args.listen_public,
                }),
            }
        }
        for l in &mut listens {
            // A token protects the page; it protects the metrics too where
            // they share its address.
            if l.status {
                l.token = token.clone();
            }
        }
        let mut bound = Vec::new();
        for l in listens {
            l.check(args.listen_public)
                .map_err(|e| CliError::Usage(e.to_string()))?;
            let listener = l.bind().map_err(|e| CliError::Usage(e.to_string()))?;
            bound.push((listener, l));
        }
        Ok(Self(bound))
    }

    /// True when nothing is served.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Serves `source` on every address.
    pub fn serve(self, source: Arc<dyn Source>) -> Result<Vec<JoinHandle<()>>, CliError> {
        self.0
            .into_iter()
            .map(|(listener, listen)| {
                tracing::info!(addr = %listen.addr, metrics = listen.metrics, status = listen.status, "serving");
                crawlkeeper_view::serve(listener, listen, source.clone())
                    .map_err(|e| CliError::Fatal(e.into()))
            })
            .collect()
    }
}

/// A token the page can send back: visible ASCII, one line. (It goes in
/// an `Authorization` header, which carries nothing else; the message
/// does not repeat it.)
fn check_token(token: &str) -> Result<(), CliError> {
    if token.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Ok(());
    }
    Err(CliError::Usage(
        "--status-token must be visible ASCII characters only (no spaces, no line breaks, \
         nothing outside ASCII): the status page sends it in a header"
            .to_owned(),
    ))
}

/// What a crawl serves: its live snapshot.
pub struct CrawlSource {
    /// The job's name.
    pub name: String,
    /// The snapshots.
    pub live: watch::Receiver<Arc<LiveCrawl>>,
}

impl Source for CrawlSource {
    fn status(&self) -> serde_json::Value {
        let live = self.live.borrow().clone();
        json!({
            "title": format!("crawlkeeper: job {}", self.name),
            "subtitle": format!("crawlkeeper {}", env!("CARGO_PKG_VERSION")),
            "running": live.running || live.elapsed_seconds == 0.0,
            "crawls": [{ "name": format!("Job {}", self.name), "live": &*live }],
        })
    }

    fn metrics(&self) -> String {
        let live = self.live.borrow().clone();
        let mut text = Text::new();
        prom::crawls(&mut text, &[(self.name.clone(), live)]);
        text.finish()
    }
}
