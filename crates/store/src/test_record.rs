//! A page's record for the store's tests.

use crawlkeeper_model::{Authority, CrawlRecord, FrontierEntry};

/// A fetched page's record of `e` on `a`.
pub fn record(e: &FrontierEntry, a: &Authority) -> CrawlRecord {
    CrawlRecord {
        status: Some(200),
        parent: e.parent.clone(),
        fetched_at: "2026-11-22T00:00:00.000Z".into(),
        response_ms: Some(1),
        content_type: Some("text/html".into()),
        bytes: 4096,
        title: Some("a page".into()),
        links: 20,
        ..CrawlRecord::blank(e.url.clone(), a.clone(), e.depth)
    }
}
