//! The browsers of a crawl: started before the crawl begins (a missing
//! or broken browser is the user's error, told before anything is
//! written), each rendering at most [`RenderConfig::tabs`] pages at once,
//! replaced after [`RenderConfig::recycle_after`] pages, when it stops
//! answering, or when it dies. A replaced browser ends (its whole process
//! group killed) once the last page it was rendering is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crawlkeeper_model::FetchResponse;
use tokio::sync::{Mutex, Semaphore};
use url::Url;

use crate::browser::Browser;
use crate::tab::Tab;
use crate::{Loader, Plan, RenderConfig, RenderError, Rendered};

/// After a browser failed to start, pages fail at once for this long
/// before another start is tried.
const RETRY_START_AFTER: Duration = Duration::from_secs(10);

/// One browser's place.
#[derive(Default)]
struct Slot {
    browser: Option<Arc<Browser>>,
    failed: Option<(Instant, String)>,
}

/// Renders pages in a crawl's browsers.
pub struct Renderer {
    config: RenderConfig,
    slots: Vec<Mutex<Slot>>,
    turn: AtomicUsize,
    tabs: Arc<Semaphore>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer whose browsers start with the first pages given to
    /// them (a node that may never be given a page to render).
    pub fn new(config: RenderConfig) -> Self {
        let browsers = config.browsers.max(1);
        let tabs = Arc::new(Semaphore::new(browsers * config.tabs.max(1)));
        Self {
            slots: (0..browsers).map(|_| Mutex::new(Slot::default())).collect(),
            config,
            turn: AtomicUsize::new(0),
            tabs,
        }
    }

    /// Starts `config.browsers` browsers; an error when one does not
    /// start.
    pub async fn start(config: RenderConfig) -> Result<Self, RenderError> {
        let browsers = config.browsers.max(1);
        let mut slots = Vec::with_capacity(browsers);
        for _ in 0..browsers {
            let browser = Browser::launch(&config).await?;
            slots.push(Mutex::new(Slot {
                browser: Some(Arc::new(browser)),
                failed: None,
            }));
        }
        let tabs = Arc::new(Semaphore::new(browsers * config.tabs.max(1)));
        Ok(Self {
            config,
            slots,
            turn: AtomicUsize::new(0),
            tabs,
        })
    }

    /// How it renders.
    pub fn config(&self) -> &RenderConfig {
        &self.config
    }

    /// Renders `page` (its response `served`, already fetched), answering
    /// its other requests with `loader`, as `plan` says. Waits for a free tab first; the
    /// render timeout counts from when the tab is open.
    pub async fn render(
        &self,
        page: &Url,
        served: &FetchResponse,
        loader: &dyn Loader,
        plan: &Plan,
    ) -> Result<Rendered, RenderError> {
        let permit = self
            .tabs
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| RenderError::BrowserGone)?;
        let browser = self.browser().await?;
        browser.pages.fetch_add(1, Ordering::Relaxed);
        let tab = match browser.take_idle() {
            Some(tab) => tab,
            None => match Tab::open(browser.conn.clone()).await {
                Ok(tab) => tab,
                Err(e) => {
                    browser.broken.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            },
        };
        // Closed by the guard if this render is given up (its crawl
        // stopping): its page's scripts must not run on in the browser.
        let mut lent = Lent {
            tab: Some(tab),
            browser: browser.clone(),
            permit: Some(permit),
        };
        let Some(tab) = lent.tab.as_mut() else {
            return Err(RenderError::BrowserGone);
        };
        let result = tab
            .render(page, served, loader, plan, self.config.max_requests)
            .await;
        let (Some(mut tab), permit) = (lent.tab.take(), lent.permit.take()) else {
            return result;
        };
        tab.pages += 1;
        if matches!(
            result,
            Err(RenderError::Unresponsive(_) | RenderError::BrowserGone)
        ) {
            browser.broken.store(true, Ordering::Relaxed);
        }
        // A tab whose page rendered is blanked and kept for the next page
        // (a new one costs a renderer process); one that timed out or
        // crashed is closed. Off the page's path: the tab's place is free
        // once it is done.
        let reuse = matches!(result, Ok(_) | Err(RenderError::TooLarge))
            && tab.pages < crate::tab::TAB_PAGES;
        let recycle_after = self.config.recycle_after;
        tokio::spawn(async move {
            if reuse && browser.usable(recycle_after) && tab.blank().await.is_ok() {
                browser.keep_idle(tab);
            } else {
                close(tab, &browser).await;
            }
            drop(permit);
        });
        result
    }

    /// The next browser in turn, started again if it is not usable.
    async fn browser(&self) -> Result<Arc<Browser>, RenderError> {
        let i = self.turn.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let mut slot = self.slots[i].lock().await;
        if let Some(b) = &slot.browser
            && b.usable(self.config.recycle_after)
        {
            return Ok(b.clone());
        }
        if let Some((at, why)) = &slot.failed
            && at.elapsed() < RETRY_START_AFTER
        {
            return Err(RenderError::NoBrowser(why.clone()));
        }
        // The old one ends when its last page is done.
        slot.browser = None;
        match Browser::launch(&self.config).await {
            Ok(b) => {
                let b = Arc::new(b);
                slot.browser = Some(b.clone());
                slot.failed = None;
                Ok(b)
            }
            Err(e) => {
                slot.failed = Some((Instant::now(), e.to_string()));
                Err(e)
            }
        }
    }
}

/// A tab lent to one render, and its place among the tabs.
struct Lent {
    tab: Option<Tab>,
    browser: Arc<Browser>,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for Lent {
    fn drop(&mut self) {
        let (Some(tab), permit) = (self.tab.take(), self.permit.take()) else {
            return;
        };
        let browser = self.browser.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                close(tab, &browser).await;
                drop(permit);
            });
        }
    }
}

/// Closes `tab`; a browser that does not answer is replaced.
async fn close(tab: Tab, browser: &Browser) {
    if let Err(e) = tab.close().await {
        tracing::warn!(error = %e, "a tab would not close: its browser is replaced");
        browser.broken.store(true, Ordering::Relaxed);
    }
}
