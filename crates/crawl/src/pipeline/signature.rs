//! What a continuous crawl learns from a response: whether the page
//! changed (by its body's signature, or its text's with `--signature
//! text`), and which earlier copy an identical body repeats.

use crawlkeeper_model::Known;
use crawlkeeper_model::revisit::Observed;

use super::{FetchResponse, Processed, Request};

/// What response `r` to `request` tells a continuous crawl (which alone
/// asks, [`Pipeline::signatures`](super::Pipeline::signatures)): a `304` to
/// a conditional request confirms the copy, a `2xx` body is content (its
/// signature), `404` and `410` say the page is gone; nothing else tells
/// anything of the content.
pub(super) fn observed(request: &Request, r: &FetchResponse) -> Observed {
    match r.status {
        304 if request.known.as_deref().is_some_and(Known::validates) => Observed::NotModified,
        200..=299 => Observed::Content(crawlkeeper_model::revisit::signature(&r.body)),
        404 | 410 => Observed::Gone,
        _ => Observed::Failed,
    }
}

/// `--signature text`: a page whose text was taken (`fields.text`, after
/// the processors) is told changed or not by the text's signature; other
/// bodies keep their bytes'.
pub(super) fn text_signature(processed: &mut Processed) {
    if !matches!(processed.observed, Observed::Content(_)) {
        return;
    }
    let text = processed
        .record
        .fields
        .as_ref()
        .and_then(|f| f.get("text"))
        .and_then(|t| t.as_str());
    if let Some(text) = text {
        processed.observed =
            Observed::Content(crawlkeeper_model::revisit::signature(text.as_bytes()));
    }
}

/// In a continuous crawl: when the copy a whole `2xx` body repeats (the
/// same signature as the page's last changed fetch) was fetched; it is
/// archived as an identical-payload revisit of that copy.
pub(super) fn same_copy(
    request: &Request,
    observed: &Observed,
    r: &FetchResponse,
) -> Option<chrono::DateTime<chrono::Utc>> {
    let Observed::Content(sig) = observed else {
        return None;
    };
    let before = request.known.as_deref()?.revisit.as_deref()?;
    let same = !r.truncated && before.holds(*sig);
    same.then(|| chrono::DateTime::from_timestamp_millis(before.changed_ms?))
        .flatten()
}
