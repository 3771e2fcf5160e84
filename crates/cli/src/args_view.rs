//! Options of what a running crawl shows: the progress on stderr, the
//! metrics and the status page.

use std::time::Duration;

use crate::values::{duration, positive_duration};
use clap::Args;

use crate::progress::ProgressMode;

/// How a running crawl shows its progress.
#[derive(Args, Debug, Clone)]
pub struct ViewArgs {
    /// Progress on stderr: `auto` (a live line on a terminal, nothing
    /// otherwise), `plain` (a status line every --progress-every) or `off`.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub progress: ProgressMode,
    /// How often `--progress plain` prints its line.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = positive_duration)]
    pub progress_every: Duration,
    /// Metrics and the status page.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Where the metrics and the status page are served (`crawl` and `node`).
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9898).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Serve the status page at http://ADDR/ and its JSON at /api/status.
    #[arg(long, value_name = "ADDR")]
    pub status: Option<std::net::SocketAddr>,
    /// The token the status page (and the metrics on the same address)
    /// asks for: `?token=…` or `Authorization: Bearer …`. Visible ASCII
    /// only (no spaces): the page sends it in a header.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CRAWLKEEPER_STATUS_TOKEN",
        hide_env_values = true
    )]
    pub status_token: Option<String>,
    /// Allow --metrics and --status on addresses other machines reach
    /// (the status page then needs --status-token), and requests naming
    /// any host (without it, only the bound address, localhost, 127.x and
    /// [::1] are answered: DNS rebinding).
    #[arg(long)]
    pub listen_public: bool,
    /// Keep serving the final figures this long after the crawl ends, for
    /// a last scrape (Ctrl-C ends it early).
    #[arg(long, default_value = "0s", value_name = "DURATION",
          value_parser = duration)]
    pub linger: Duration,
}
