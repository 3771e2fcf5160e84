//! What the HTML targets share: a page of fuzzer bytes typed as HTML, and
//! the one lol_html panic they let unwind.

use std::sync::Once;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use crawlkeeper_extract::PageLimits;
use crawlkeeper_extract::Page;
use crawlkeeper_model::FetchResponse;
use url::Url;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

/// `data` as the body of a 200 response typed `text/html; charset=utf-8`.
pub fn html_response(data: &[u8]) -> FetchResponse {
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    FetchResponse {
        started_at: SystemTime::UNIX_EPOCH,
        elapsed: Duration::ZERO,
        status: 200,
        headers,
        body: Bytes::copy_from_slice(data),
        truncated: false,
        capture: None,
    }
}

/// At most `max_links` links, and a deadline far past libFuzzer's
/// -timeout, so a slow input is reported as a timeout rather than hidden
/// by a cut-short page.
fn limits(max_links: usize) -> PageLimits {
    PageLimits {
        max_links,
        deadline: Instant::now() + Duration::from_secs(3600),
    }
}

/// `response` as the page at `url`, with at most `max_links` links.
pub fn page<'a>(url: &'a Url, response: &'a FetchResponse, max_links: usize) -> Page<'a> {
    Page {
        url,
        response,
        limits: limits(max_links),
    }
}

const LOL_HTML_START_TAG: &str = "Tag should be a start tag at this point";

/// Lets lol_html's known debug assertion unwind instead of reaching
/// libfuzzer-sys's hook (which aborts); every other panic still aborts.
pub fn let_lol_html_start_tag_panic_unwind() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload_as_str() != Some(LOL_HTML_START_TAG) {
                previous(info);
            }
        }));
    });
}
