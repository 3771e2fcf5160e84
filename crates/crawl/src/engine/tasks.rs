//! The request tasks the engine spawns: an authority's robots.txt (and,
//! with `--sitemaps`, the sitemap files it names), or one request through
//! the pipeline.
//! Each owns nothing but its request and reports back a [`TaskOutput`]; a
//! panic inside becomes an error for the URLs concerned, never a hang.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crawlkeeper_model::{Authority, RobotsSnapshot};
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

/// Runs `request` through the pipeline under `robots`.
pub(super) async fn page(
    pipeline: Arc<Pipeline>,
    slot: Slot,
    request: Request,
    robots: RobotsRules,
) -> TaskOutput {
    let run = AssertUnwindSafe(pipeline.process(&request, &robots));
    let processed = run.catch_unwind().await.unwrap_or_else(|panic| {
        records::internal_error(&request, &records::panic_message(&*panic))
    });
    let json = processed.record.to_json();
    TaskOutput::Page {
        slot,
        request,
        processed: Box::new(processed),
        json,
    }
}
