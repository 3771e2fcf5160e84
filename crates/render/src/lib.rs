//! Pages rendered in headless Chromium, driven over the DevTools protocol.
//!
//! The crawler fetches a page itself; when it is to be rendered, a tab
//! of a browser this crate started is pointed at it and every request
//! the tab makes is paused (the protocol's `Fetch` domain) and answered
//! by the crawler: the page's own request with the response already
//! fetched, every other one by a [`Loader`] the crawl gives (its fetcher,
//! under its robots.txt, scope, SSRF guard, politeness, limits, proxies,
//! headers and cookies) or refused. The browser is never let onto the
//! network itself. What comes back is the page's DOM once the chosen
//! [`Wait`] is met.
//!
//! | module | what it does |
//! |---|---|
//! | [`cdp`] (private) | the protocol over the browser's pipe: calls, answers, events by session |
//! | [`browser`] (private) | one Chromium process: its switches, profile, process group |
//! | [`tab`] (private) | one page in one tab: navigation, paused requests, the wait, the DOM |
//! | [`pool`] | the browsers of a crawl, their tabs, restarts |
//! | [`shell`] | when `--render-when auto` renders a page |

#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

mod browser;
mod cdp;
pub mod pool;
pub mod shell;
mod tab;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use crawlkeeper_model::FetchResponse;
use url::Url;

pub use browser::find_chromium;
pub use pool::Renderer;

/// The largest DOM taken from a page, in characters of its HTML: a page
/// that builds a larger one is recorded as failed to render. (Escaped in
/// JSON, 8 Mi characters stay below the protocol's message limit.)
pub const MAX_DOM_CHARS: usize = 8 << 20;

/// How a crawl renders.
#[derive(Debug, Clone)]
pub struct RenderConfig {
    /// The browser's executable ([`find_chromium`]).
    pub chromium: PathBuf,
    /// Browser processes (`--browsers`).
    pub browsers: usize,
    /// Pages each browser renders at once (`--render-tabs`).
    pub tabs: usize,
    /// A browser is replaced after rendering this many pages (its memory
    /// returned to the system).
    pub recycle_after: u32,
    /// V8's heap limit of each page's renderer, in MiB: a page that needs
    /// more crashes its tab, recorded as such.
    pub js_heap_mb: u32,
    /// Requests one page may make; the ones past it are refused.
    pub max_requests: u32,
}

impl RenderConfig {
    /// Defaults, with the browser at `chromium`: one browser, four tabs,
    /// a new browser every 500 pages, 512 MiB of script heap, 500
    /// requests a page.
    pub fn new(chromium: PathBuf) -> Self {
        Self {
            chromium,
            browsers: 1,
            tabs: 4,
            recycle_after: 500,
            js_heap_mb: 512,
            max_requests: 500,
        }
    }
}

/// How one page is rendered: a crawl's choice (the browsers are the
/// process's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What the page is waited for before its DOM is read.
    pub wait: Wait,
    /// From the tab's navigation to the DOM read (`--render-timeout`).
    pub timeout: Duration,
}

impl Default for Plan {
    /// Wait for the load event, at most 15 s.
    fn default() -> Self {
        Self {
            wait: Wait::Load,
            timeout: Duration::from_secs(15),
        }
    }
}

impl Wait {
    /// `load`, `networkidle`, or a CSS selector.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "" => Err("an empty --render-wait (load, networkidle or a CSS selector)".into()),
            "load" => Ok(Self::Load),
            "networkidle" => Ok(Self::NetworkIdle),
            selector => Ok(Self::Selector(selector.to_owned())),
        }
    }
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Load => f.write_str("load"),
            Self::NetworkIdle => f.write_str("networkidle"),
            Self::Selector(s) => f.write_str(s),
        }
    }
}

/// What a rendered page is waited for (`--render-wait`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// The load event (every resource the document named has loaded).
    Load,
    /// The load event, then no request in flight for
    /// [`NETWORK_IDLE`] (script-started fetches answered).
    NetworkIdle,
    /// The load event and an element matching this CSS selector.
    Selector(String),
}

/// How long no request may be in flight for [`Wait::NetworkIdle`].
pub const NETWORK_IDLE: Duration = Duration::from_millis(500);

/// A request a page made, to be answered by the crawl.
#[derive(Debug, Clone)]
pub struct Subrequest {
    /// Its URL (without a fragment).
    pub url: Url,
    /// Its method; only `GET` is ever fetched.
    pub method: String,
    /// What the browser loads it as: `Document`, `Script`, `Stylesheet`,
    /// `Image`, `Font`, `XHR`, `Fetch`, …
    pub resource_type: String,
    /// True for a frame's navigation (an `<iframe>`'s document).
    pub navigation: bool,
}

/// The crawl's answer to a [`Subrequest`].
#[derive(Debug)]
pub enum Answer {
    /// The response the crawl fetched (a redirect is answered as one:
    /// the browser then asks for its target).
    Response(Box<FetchResponse>),
    /// Not fetched: robots.txt, scope, the SSRF guard, a method other
    /// than `GET`, the page's request limit.
    Refused(String),
    /// Fetched, and it failed (no answer, a timeout).
    Failed(String),
}

/// Answers the requests of rendered pages.
#[async_trait]
pub trait Loader: Send + Sync {
    /// The answer to `request`.
    async fn load(&self, request: &Subrequest) -> Answer;
}

/// A page rendered.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// Its DOM as HTML (`document.documentElement.outerHTML`).
    pub html: String,
    /// Requests the page made besides its own, answered by the crawl.
    pub requests: u32,
    /// Requests refused.
    pub refused: u32,
    /// From navigation to the DOM read.
    pub elapsed: Duration,
    /// Set when the wait was not met within the timeout but the page had
    /// loaded: the DOM is what it was then.
    pub wait_unmet: bool,
}

/// Why a page could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No usable browser: not installed, or it would not start.
    #[error("no browser: {0}")]
    NoBrowser(String),
    /// The page did not load within the render timeout.
    #[error("the page did not load within {}", crawlkeeper_model::format_duration(*.0))]
    Timeout(Duration),
    /// The page's tab crashed (out of memory, a renderer fault).
    #[error("the page's tab crashed")]
    Crashed,
    /// The browser ended while the page rendered.
    #[error("the browser ended")]
    BrowserGone,
    /// The browser did not answer a command in time; it is replaced.
    #[error("the browser did not answer {0}")]
    Unresponsive(String),
    /// The browser refused a command or the navigation.
    #[error("{0}")]
    Protocol(String),
    /// The page's DOM was larger than [`MAX_DOM_CHARS`].
    #[error("the rendered page is larger than {MAX_DOM_CHARS} characters")]
    TooLarge,
    /// A pipe or a file could not be made.
    #[error("{0}")]
    Io(std::io::Error),
}

impl RenderError {
    /// True when the page itself is to blame (it hung or crashed its
    /// tab), false when the browser failed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout(_))
    }
}
