//! The request tasks the engine spawns: an authority's robots.txt (and,
//! with `--sitemaps`, the sitemap files it names), or one request through
//! the pipeline.
//! Each owns nothing but its request and reports back a [`TaskOutput`]; a
//! panic inside becomes an error for the URLs concerned, never a hang.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crawlkeeper_model::revisit::{Observed, RateMove, RevisitRule};
use crawlkeeper_model::{Authority, Known, NextFetch, RobotsSnapshot};
use futures_util::FutureExt;
use tracing::error;

use super::records;
use super::slot::Slot;
use crate::pipeline::{Discovered, Pipeline, Processed, Request};
use crate::robots::RobotsRules;

/// What a request task reports to the engine.
pub(super) enum TaskOutput {
    Robots {
        slot: Slot,
        rules: RobotsRules,
        snapshot: Option<RobotsSnapshot>,
        /// The sitemap files the authority names (with `--sitemaps`), as
        /// requests of their own.
        sitemapped: Vec<Discovered>,
        /// Its WARC records, encoded (empty when not archiving).
        archive: Vec<u8>,
    },
    Page {
        slot: Slot,
        request: Request,
        processed: Box<Processed>,
        /// The record as JSON, made on the request's own task.
        json: String,
        /// In a continuous crawl: when the page is fetched again.
        next: Option<Box<NextFetch>>,
        /// In a continuous crawl: how it moved in the job's rate histogram.
        moved: Option<RateMove>,
    },
}

/// Fetches the robots.txt of `authority` (and names its sitemap files,
/// when the crawl reads them).
pub(super) async fn robots(
    pipeline: Arc<Pipeline>,
    slot: Slot,
    authority: Authority,
) -> TaskOutput {
    let run = AssertUnwindSafe(async {
        let mut archive = Vec::new();
        let (rules, snapshot) = RobotsRules::fetch_archived(
            pipeline.fetcher(),
            &authority,
            pipeline.archiver(),
            &mut archive,
        )
        .await;
        let sitemapped = if pipeline.reads_sitemaps() && rules.permits_requests() {
            let (files, skipped) = pipeline.sitemap_jobs(&authority, &rules);
            if skipped > 0 {
                tracing::info!(%authority, skipped, "robots.txt sitemap lines past the limits skipped");
            }
            files
        } else {
            Vec::new()
        };
        (rules, snapshot, sitemapped, archive)
    });
    // A panic must not leave the authority waiting for rules forever with
    // its URLs unrecorded: they are recorded as internal errors instead.
    let (rules, snapshot, sitemapped, archive) = run.catch_unwind().await.unwrap_or_else(|panic| {
        let why = records::panic_message(&*panic);
        error!(%authority, panic = why, "robots.txt processing panicked");
        (RobotsRules::Failed(why), None, Vec::new(), Vec::new())
    });
    TaskOutput::Robots {
        slot,
        rules,
        snapshot,
        sitemapped,
        archive,
    }
}

/// Runs `request` through the pipeline under `robots`; in a continuous
/// crawl, `rule` says whether the page changed and when it is due again.
pub(super) async fn page(
    pipeline: Arc<Pipeline>,
    slot: Slot,
    request: Request,
    robots: RobotsRules,
    rule: Option<RevisitRule>,
) -> TaskOutput {
    let run = AssertUnwindSafe(pipeline.process(&request, &robots));
    let mut processed = run.catch_unwind().await.unwrap_or_else(|panic| {
        records::internal_error(&request, &records::panic_message(&*panic))
    });
    let (next, moved) = match rule {
        Some(rule) => revisit(&rule, &request, &mut processed),
        None => (None, None),
    };
    let json = processed.record.to_json();
    TaskOutput::Page {
        slot,
        request,
        processed: Box::new(processed),
        json,
        next,
        moved,
    }
}

/// Applies `rule` to what `processed` saw of `request`'s page: marks its
/// record changed or not, and gives its next fetch (none when the page
/// is retired) and its move in the job's rate histogram.
fn revisit(
    rule: &RevisitRule,
    request: &Request,
    processed: &mut Processed,
) -> (Option<Box<NextFetch>>, Option<RateMove>) {
    // The fetch's own time (its record's, as its WARC records have it),
    // so that a later revisit names the copy's date exactly.
    let now_ms = chrono::DateTime::parse_from_rfc3339(&processed.record.fetched_at).map_or_else(
        |_| chrono::Utc::now().timestamp_millis(),
        |t| t.timestamp_millis(),
    );
    let before = request.known.as_deref().and_then(|k| k.revisit.as_deref());
    let next = rule.next(before, now_ms, processed.observed);
    processed.record.changed = next.changed;
    let moved = Some(next.moved);
    let Some(due_in) = next.due_in_secs else {
        return (None, moved);
    };
    let record = &processed.record;
    // What the next request knows: this copy's validators (a 304 keeps
    // the ones it confirmed) and the schedule.
    let mut known = match processed.observed {
        // Nothing new of the content: what was known still holds.
        Observed::Failed | Observed::Gone => request.known.as_deref().cloned(),
        Observed::NotModified | Observed::Content(_) => Known::of_record(record),
    }
    .unwrap_or_default();
    if let Some(k) = request.known.as_deref() {
        // A requisite or a sitemap file stays one.
        known.embed = k.embed;
        known.frame = k.frame;
        known.embed_budget = k.embed_budget;
        known.sitemap = k.sitemap;
    }
    known.revisit = Some(Box::new(next.schedule));
    let mut entry = crate::state::entry_of(crate::pipeline::url_key(&request.url), request);
    entry.known = Some(known);
    let next = Box::new(NextFetch {
        due_ms: now_ms.saturating_add((due_in * 1000.0) as i64),
        entry,
        authority: record.authority.clone(),
    });
    (Some(next), moved)
}
