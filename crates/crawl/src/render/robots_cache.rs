//! robots.txt of the authorities rendered pages load from: fetched once
//! for all the crawl's pages (concurrent askers wait for the one fetch),
//! kept for a day (RFC 9309's limit on caching), at most
//! [`MAX_AUTHORITIES`] of them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crawlkeeper_fetch::Fetcher;
use crawlkeeper_model::Authority;
use tokio::sync::{Mutex, OnceCell};

use crate::archive::Archiver;
use crate::robots::RobotsRules;

/// Authorities remembered; past it the cache starts again empty.
pub const MAX_AUTHORITIES: usize = 4096;
/// How long a copy is used.
const KEPT: Duration = Duration::from_secs(24 * 3600);

type Cell = Arc<OnceCell<(RobotsRules, Instant)>>;

/// The rules of authorities other than a page's own.
#[derive(Default)]
pub(crate) struct RobotsCache {
    cells: Mutex<HashMap<Authority, Cell>>,
}

impl RobotsCache {
    /// The rules of `authority`, fetched with `fetcher` if not known (the
    /// fetch's WARC records added to `archived` when there is an
    /// `archiver`).
    pub(crate) async fn rules(
        &self,
        fetcher: &dyn Fetcher,
        authority: &Authority,
        archiver: Option<&Archiver>,
        archived: &std::sync::Mutex<Vec<u8>>,
    ) -> RobotsRules {
        let cell = {
            let mut cells = self.cells.lock().await;
            if let Some(c) = cells.get(authority)
                && c.get().is_some_and(|(_, at)| at.elapsed() > KEPT)
            {
                cells.remove(authority);
            }
            if cells.len() >= MAX_AUTHORITIES && !cells.contains_key(authority) {
                cells.clear();
            }
            cells.entry(authority.clone()).or_default().clone()
        };
        let (rules, _) = cell
            .get_or_init(|| async {
                let mut bytes = Vec::new();
                let (rules, _) =
                    RobotsRules::fetch_archived(fetcher, authority, archiver, &mut bytes).await;
                archived
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend(bytes);
                (rules, Instant::now())
            })
            .await;
        rules.clone()
    }
}
