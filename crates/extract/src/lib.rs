//! The second stage of the pipeline: finding links and facts in a page.
//!
//! Extractors run in the configured order on every fetched 2xx response;
//! each adds to the same [`Extracted`]. A page is hostile input: each
//! extractor keeps to the page's [`PageLimits`] (a number of links and a
//! deadline), so no page costs more than a bounded amount of memory and CPU.

//!
//! This crate does no I/O and needs no runtime: it can be used, tested
//! and fuzzed alone (`fuzz/`).
//!
//! | module | what it does |
//! |---|---|
//! | [`config`] | what is asked for beyond links: fields, meta, JSON-LD, text |
//! | [`field_spec`] | fields by CSS selector as a user asks for them (`--extract`), and their caps |
//! | [`css`] | the URLs a stylesheet needs (`--requisites`) |
//! | the rest (private) | the scanner, lol_html's handlers, entities, text, meta, JSON-LD |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod config;
pub mod css;
#[cfg(test)]
mod differential;
mod entities;
mod extras;
mod fast;
pub mod field_spec;
mod fields;
mod handlers;
mod html;
mod implied;
mod jsonld;
mod markup;
mod meta;
mod noscript;
mod parser;
mod prefilter;
mod requisites;
mod scan;
#[cfg(test)]
mod tests_support;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crawlkeeper_model::FetchResponse;
use url::Url;

pub use crate::field_spec::{
    FieldSpec, FieldSpecError, FieldValue, MAX_FIELD_VALUES, MAX_PAGE_FIELD_BYTES, MAX_VALUE_BYTES,
    Take,
};
pub use config::ExtractConfig;
pub use css::stylesheet_requisites;
pub use html::HtmlExtractor;
pub use jsonld::{MAX_SCRIPT_BYTES, MAX_SCRIPTS};
pub use meta::MAX_META_KEYS;

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
    /// What the extractors may spend on it.
    pub limits: PageLimits,
}

/// What extracting one page may cost.
#[derive(Debug, Clone, Copy)]
pub struct PageLimits {
    /// Links kept from the page; the rest are counted in
    /// [`Extracted::dropped_links`].
    pub max_links: usize,
    /// When extraction must stop, keeping what it found so far
    /// ([`Extracted::cut_short`]).
    pub deadline: Instant,
}

impl PageLimits {
    /// True once the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

/// Why extraction stopped before the end of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutShort {
    /// The page's deadline passed.
    Time,
    /// The parser needed more memory than a page may use.
    Memory,
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
    /// Links not kept because the page had more than its limit.
    pub dropped_links: u32,
    /// Set when extraction stopped before the end of the page.
    pub cut_short: Option<CutShort>,
    /// Named values taken from the page (the `--extract` fields, or any an
    /// extractor adds), written into the record's `fields`.
    pub fields: BTreeMap<String, FieldValue>,
    /// Fields that lost values or bytes to a cap (the record's `fields_cut`).
    pub fields_cut: BTreeSet<String>,
    /// What the page needs to render (`--requisites`: images, scripts,
    /// stylesheets, fonts, frames) as written in the page (unresolved,
    /// relative to the same base as the links).
    pub requisites: Vec<String>,
    /// Of the requisites, the frames (`<iframe src>`, `<frame src>`): read
    /// as pages, and counted as pages.
    pub frames: Vec<String>,
    /// Requisites not kept because the page had more than
    /// [`MAX_REQUISITES`].
    pub dropped_requisites: u32,
}

/// The most requisites kept from one page or stylesheet.
pub const MAX_REQUISITES: usize = 500;

impl Extracted {
    /// Keeps `href` if the page's link limit allows, else counts it dropped.
    pub fn push_href(&mut self, href: String, limits: &PageLimits) {
        if self.hrefs.len() < limits.max_links {
            self.hrefs.push(href);
        } else {
            self.dropped_links = self.dropped_links.saturating_add(1);
        }
    }

    /// Keeps requisite `url` if the page's limit ([`MAX_REQUISITES`])
    /// allows, else counts it dropped.
    pub fn push_requisite(&mut self, url: String) {
        if self.requisites.len() < MAX_REQUISITES {
            self.requisites.push(url);
        } else {
            self.dropped_requisites = self.dropped_requisites.saturating_add(1);
        }
    }

    /// The URL relative links resolve against: `<base href>` if it parses,
    /// otherwise the page URL.
    pub fn base_url(&self, page_url: &Url) -> Url {
        self.base
            .as_deref()
            .and_then(|b| page_url.join(b).ok())
            .unwrap_or_else(|| page_url.clone())
    }
}
