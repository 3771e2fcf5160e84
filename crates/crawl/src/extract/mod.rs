//! The second stage of the pipeline: finding links and facts in a page.
//!
//! Extractors run in the configured order on every fetched 2xx response;
//! each adds to the same [`Extracted`].

mod entities;
mod html;

use crate::fetch::FetchResponse;
use url::Url;

pub use html::HtmlExtractor;

/// Finds links and facts in a fetched page.
pub trait Extractor: Send + Sync {
    /// The name this extractor is configured by.
    fn name(&self) -> &str;

    /// Adds what it finds in `page` to `out`.
    fn extract(&self, page: &Page<'_>, out: &mut Extracted);
}

/// A fetched page as extractors see it.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The URL that was requested (normalised).
    pub url: &'a Url,
    /// The response.
    pub response: &'a FetchResponse,
}

/// What the extractor chain found in one page.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extracted {
    /// Links as written in the page (unresolved), with the base they are
    /// relative to decided at the end.
    pub hrefs: Vec<String>,
    /// A `<base href>` the page declares, if any.
    pub base: Option<String>,
    /// The page title, whitespace collapsed.
    pub title: Option<String>,
    /// The page asked robots not to follow its links.
    pub nofollow: bool,
}

impl Extracted {
    /// The URL relative links resolve against: `<base href>` if it parses,
    /// otherwise the page URL.
    pub fn base_url(&self, page_url: &Url) -> Url {
        self.base
            .as_deref()
            .and_then(|b| page_url.join(b).ok())
            .unwrap_or_else(|| page_url.clone())
    }
}
