//! `--render`: pages rendered in a browser before their links, fields,
//! text and processors are read ([`crawlkeeper_render`]).
//!
//! The job says whether and how (`RenderJob`, part of its configuration,
//! the same on every node); the process says with what (its browsers, a
//! [`Renderer`] the [`crate::Registry`] holds). A page is fetched by the
//! crawler as always; when it is a 2xx HTML page to render, a tab is
//! given the response already fetched, and every other request the page
//! makes is answered by [`loader::PageLoader`] through the crawl's own
//! rules and fetcher. The page's record keeps what the render took
//! (`rendered`), or the error of a render that failed (with what the served
//! HTML gave: nothing is lost).

mod cache;
pub(crate) mod loader;
mod robots_cache;
pub(crate) mod step;

use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_model::duration;
use crawlkeeper_render::{Plan, Renderer, Wait};
use serde::{Deserialize, Serialize};

pub(crate) use robots_cache::RobotsCache;

/// What a job that renders needs of the process that crawls it, named
/// among its processors ([`crate::CrawlConfig::needs`]): a node offers it
/// when it has a browser, so that only such nodes are given the job's
/// shards. No processor can be called so (a name has no space).
pub const BROWSER: &str = "a browser (--render)";

/// Which pages a job renders (`--render-when`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenderWhen {
    /// Only served pages that look like an application shell
    /// ([`crawlkeeper_render::shell::is_shell`]).
    #[default]
    Auto,
    /// Every 2xx HTML page.
    Always,
}

/// How a job renders its pages (`--render`, `--render-when`,
/// `--render-wait`, `--render-timeout`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenderJob {
    /// Which pages. Default `auto`.
    pub when: RenderWhen,
    /// What a page is waited for: `load`, `networkidle` or a CSS
    /// selector. Default `load`.
    pub wait: String,
    /// From the tab's navigation to the DOM read. Default 15 s.
    #[serde(with = "duration::text")]
    pub timeout: Duration,
}

impl Default for RenderJob {
    fn default() -> Self {
        let plan = Plan::default();
        Self {
            when: RenderWhen::Auto,
            wait: plan.wait.to_string(),
            timeout: plan.timeout,
        }
    }
}

impl RenderJob {
    /// The plan of each page, or what is wrong with the settings.
    pub fn plan(&self) -> Result<Plan, String> {
        if self.timeout.is_zero() {
            return Err("--render-timeout must be more than 0".into());
        }
        Ok(Plan {
            wait: Wait::parse(&self.wait)?,
            timeout: self.timeout,
        })
    }
}

/// What the pipeline of a crawl that renders holds.
pub(crate) struct Render {
    pub(crate) renderer: Arc<Renderer>,
    pub(crate) when: RenderWhen,
    pub(crate) plan: Plan,
    /// robots.txt of the authorities a rendered page's requests go to.
    pub(crate) robots: RobotsCache,
    /// What rendered pages share (scripts, styles, fonts, images).
    pub(crate) shared: cache::Shared,
}
