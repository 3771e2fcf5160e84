//! The browsers of a process that renders pages (`--render` jobs): how
//! many, how many pages each renders at once, which executable. The job
//! says whether and how it renders; these say with what, here.

use std::path::PathBuf;

use clap::Args;
use crawlkeeper_render::{RenderConfig, Renderer, find_chromium};

use crate::values::positive_usize;

/// `--browsers`, `--render-tabs`, `--render-heap`, `--chromium`.
#[derive(Args, Debug, Clone)]
pub struct BrowserArgs {
    /// Chromium processes that render pages of --render jobs, each in a
    /// process group of its own that dies with this one.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = positive_usize)]
    pub browsers: usize,
    /// Pages each browser renders at once (a tab each, in a browser
    /// context of its own).
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = positive_usize)]
    pub render_tabs: usize,
    /// The script heap of each page's renderer, in MiB: a page whose
    /// scripts need more crashes its tab (recorded as render_failed; the
    /// crawl goes on).
    #[arg(long, default_value_t = 512, value_name = "MIB", value_parser = clap::value_parser!(u32).range(16..=65536))]
    pub render_heap: u32,
    /// The browser's executable (default: chromium, chromium-browser or
    /// google-chrome from PATH).
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
}

impl BrowserArgs {
    /// The browsers' settings, or why there is no browser.
    pub fn config(&self) -> Result<RenderConfig, String> {
        let path = find_chromium(self.chromium.as_deref()).map_err(|e| e.to_string())?;
        let mut c = RenderConfig::new(path);
        c.browsers = self.browsers;
        c.tabs = self.render_tabs;
        c.js_heap_mb = self.render_heap;
        Ok(c)
    }

    /// The browsers started now: a crawl that renders starts only when
    /// they run.
    pub async fn start(&self) -> Result<Renderer, String> {
        let config = self.config().map_err(|e| format!("--render: {e}"))?;
        Renderer::start(config)
            .await
            .map_err(|e| format!("--render: {e}"))
    }
}
