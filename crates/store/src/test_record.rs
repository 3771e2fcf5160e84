//! A page's record for the store's tests.

use crawlkeeper_model::{Authority, CrawlRecord, FrontierEntry};

/// A fetched page's record of `e` on `a`.
pub fn record(e: &FrontierEntry, a: &Authority) -> CrawlRecord {
    CrawlRecord {
        url: e.url.clone(),
        final_url: e.url.clone(),
        status: Some(200),
        depth: e.depth,
        parent: e.parent.clone(),
        authority: a.clone(),
        fetched_at: "2026-11-22T00:00:00.000Z".into(),
        response_ms: Some(1),
        content_type: Some("text/html".into()),
        bytes: 4096,
        title: Some("a page".into()),
        fields: None,
        fields_cut: None,
        links: 20,
        links_dropped: 0,
        requisites: 0,
        requisites_dropped: 0,
        truncated: false,
        error: None,
        etag: None,
        last_modified: None,
        lastmod: None,
        unchanged_since: None,
        via: None,
    }
}
