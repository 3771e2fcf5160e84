//! A page run through an extractor, for the tests of every part of it.

use super::html::HtmlExtractor;
use super::{Extracted, Extractor, Page, PageLimits};
use crate::config::ExtractConfig;
use bytes::Bytes;
use crawlkeeper_model::FetchResponse;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use std::time::{Duration, SystemTime};
use url::Url;

/// An extractor of `fields`, meta tags, JSON-LD and text (at most
/// `text` bytes) as asked.
pub(crate) fn extractor(
    fields: &[&str],
    meta: bool,
    jsonld: bool,
    text: Option<u64>,
) -> HtmlExtractor {
    let config = ExtractConfig {
        fields: fields.iter().map(|s| s.parse().unwrap()).collect(),
        meta,
        jsonld,
        text,
        ..ExtractConfig::default()
    };
    HtmlExtractor::from_config(&config).unwrap()
}

/// A 200 response of `html`, typed `content_type`.
pub(crate) fn html_response(content_type: &str, html: &[u8]) -> FetchResponse {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
    FetchResponse {
        started_at: SystemTime::now(),
        elapsed: Duration::ZERO,
        status: 200,
        headers,
        body: Bytes::from(html.to_owned()),
        truncated: false,
        capture: None,
    }
}

/// What `extractor` finds in `html` (`content_type`, at
/// http://a.test/dir/page) with at most `max_links` links, within `time`.
pub(crate) fn run(
    extractor: &HtmlExtractor,
    content_type: &str,
    html: &[u8],
    max_links: usize,
    time: Duration,
) -> Extracted {
    let response = html_response(content_type, html);
    let url = Url::parse("http://a.test/dir/page").unwrap();
    let mut out = Extracted::default();
    extractor.extract(
        &Page {
            url: &url,
            response: &response,
            limits: PageLimits {
                max_links,
                deadline: std::time::Instant::now() + time,
            },
        },
        &mut out,
    );
    out
}

pub(crate) fn extract_page(extractor: &HtmlExtractor, html: &[u8], time: Duration) -> Extracted {
    run(extractor, "text/html", html, 10_000, time)
}

/// The default extractor with `--requisites` on or off.
pub(crate) fn requisites_extractor(on: bool) -> HtmlExtractor {
    HtmlExtractor::new().with_requisites(on)
}
