//! Page requisites (`--requisites`): what a fetched page needs to render
//! (its images, scripts, stylesheets, fonts, frames and media) becomes
//! requests of their own, as Heritrix's embed hops and `wget
//! --page-requisites` do, so that an archive replays the page whole.
//!
//! A requisite is part of its page, not a step away from it: it is
//! requested at the page's depth, whatever `--depth` says, on any host
//! unless `--requisites-scope same-host`, and `--max-pages` does not count
//! it. Everything else a request goes through still applies (robots.txt,
//! politeness per authority, the SSRF guard, dedup: a logo shared by a
//! thousand pages is one request, and the body limits). A stylesheet's own
//! `url()`s and `@import`s are requisites one embed further, up to
//! [`MAX_EMBED_HOPS`] from the page; a frame is read as a page (its links
//! are followed as the page's, its requisites are one embed further).

use std::sync::Arc;

use crawlkeeper_model::key::KeySet;
use crawlkeeper_model::{CrawlRecord, Known};
use url::Url;

use crate::config::RequisitesScope;
use crate::pipeline::{Discovered, Pipeline, Request, url_key};
use crawlkeeper_extract::Extracted;
use crawlkeeper_fetch::FetchResponse;

/// The most embeds a requisite may be from its page: the page's
/// stylesheet (1) imports a stylesheet (2) that loads a font (3).
pub const MAX_EMBED_HOPS: u8 = 3;
/// The most requisites one page causes, its stylesheets' and frames' own
/// included, over every hop: each requisite taken gets an equal share of
/// what its page's tree has left, so the tree never grows past this.
pub const MAX_REQUISITE_TREE: usize = crawlkeeper_extract::MAX_REQUISITES;

impl Pipeline {
    /// Turns the requisites `found` names (relative to `base`) into
    /// requests at `request`'s depth, one embed further than it, added to
    /// `discovered` and to `on_page` (the page's keys so far); the record
    /// counts those taken (`requisites`) and those left
    /// (`requisites_dropped`: past the page's limit, past the last embed
    /// hop, unusable or out of the requisites' scope).
    pub(crate) fn take_requisites(
        &self,
        request: &Request,
        base: &Url,
        found: &mut Extracted,
        record: &mut CrawlRecord,
        discovered: &mut Vec<Discovered>,
        on_page: &mut KeySet,
    ) {
        let Some(scope) = self.requisites else {
            return;
        };
        let named = std::mem::take(&mut found.requisites);
        let frames = std::mem::take(&mut found.frames);
        let mut dropped = u64::from(found.dropped_requisites);
        let hops = request.embed_hops().unwrap_or(0).saturating_add(1);
        // What this page's tree may still take: a page's whole tree takes
        // at most MAX_REQUISITE_TREE, whatever its hops.
        let budget = match request.known.as_deref() {
            Some(k) if k.embed.is_some() => k
                .embed_budget
                .map_or(MAX_REQUISITE_TREE, |b| (b as usize).min(MAX_REQUISITE_TREE)),
            _ => MAX_REQUISITE_TREE,
        };
        if hops > MAX_EMBED_HOPS || budget == 0 {
            dropped += named.len() as u64;
            record.requisites_dropped = saturate(dropped);
            return;
        }
        let parent: Arc<str> = Arc::from(request.url.as_str());
        let mut taken: Vec<Discovered> = Vec::new();
        let mut is_frame = Vec::new();
        for href in &named {
            if taken.len() >= budget {
                dropped += 1;
                continue;
            }
            let Some(url) = self
                .normalizer
                .resolve(base, href)
                .ok()
                .filter(|u| self.requisite_in_scope(scope, &request.url, u))
            else {
                dropped += 1;
                continue;
            };
            let key = url_key(&url);
            if !on_page.insert(key) {
                continue;
            }
            is_frame.push(frames.iter().any(|f| f == href));
            taken.push(Discovered {
                key,
                request: Request {
                    url,
                    depth: request.depth,
                    parent: Some(parent.clone()),
                    redirect_chain: Vec::new(),
                    attempts: 0,
                    known: None,
                },
            });
        }
        // What is left is shared by the requisites taken: a stylesheet or
        // a frame may add that many below itself.
        let share = u32::try_from((budget - taken.len()) / taken.len().max(1)).unwrap_or(u32::MAX);
        let plain = Arc::new(Known::embed_within(hops, false, share));
        let frame = Arc::new(Known::embed_within(hops, true, share));
        record.requisites = saturate(taken.len() as u64);
        record.requisites_dropped = saturate(dropped);
        for (mut d, is_frame) in taken.into_iter().zip(is_frame) {
            d.request.known = Some(if is_frame {
                frame.clone()
            } else {
                plain.clone()
            });
            discovered.push(d);
        }
    }

    /// True when `response` to requisite `request` is a stylesheet whose
    /// `url()`s and `@import`s are requisites too: typed `text/css`, or untyped
    /// at a path ending in `.css`.
    pub(crate) fn is_stylesheet(request: &Request, response: &FetchResponse) -> bool {
        if !request.is_requisite() {
            return false;
        }
        match response.content_type() {
            Some(t) => t
                .split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/css")),
            None => request.url.path().ends_with(".css"),
        }
    }

    /// Whether requisite `url` of page `page` may be requested: http(s),
    /// no longer than URLs may be, and on the page's host when the scope
    /// says so. (Page scope — depth, hosts, patterns — is for links.)
    fn requisite_in_scope(&self, scope: RequisitesScope, page: &Url, url: &Url) -> bool {
        matches!(url.scheme(), "http" | "https")
            && url.as_str().len() <= self.max_url_length
            && match scope {
                RequisitesScope::Any => true,
                RequisitesScope::SameHost => url.host_str() == page.host_str(),
            }
    }
}

fn saturate(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
