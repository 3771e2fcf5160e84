//! What rendered pages share: a site's script bundle, stylesheet, fonts,
//! icons and images are fetched once for all its pages, not once per page
//! (and archived with the page that fetched them). Pages asking at the
//! same time wait for the one fetch. Only static kinds are shared (a
//! script's `fetch()` of data is fetched for each page), only bodies of at
//! most [`MAX_ENTRY`] bytes, only responses that do not forbid it
//! (`Cache-Control: no-store`), and at most [`MAX_BYTES`] in all, the
//! oldest dropped first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crawlkeeper_fetch::FetchResponse;
use tokio::sync::OnceCell;

/// The largest body shared.
pub const MAX_ENTRY: usize = 1 << 20;
/// The most bytes kept in all (bodies, URLs, headers).
pub const MAX_BYTES: usize = 32 << 20;
/// The most responses kept.
pub const MAX_ENTRIES: usize = 4096;

type Cell = Arc<OnceCell<Arc<FetchResponse>>>;

#[derive(Default)]
struct Entries {
    cells: HashMap<String, Cell>,
    /// Filled entries, oldest first, with their sizes.
    order: VecDeque<(String, usize)>,
    bytes: usize,
}

/// The subresources rendered pages share.
#[derive(Default)]
pub(crate) struct Shared {
    entries: Mutex<Entries>,
}

/// True for what a page loads as part of its looks, the same for every
/// page: the kinds shared.
pub(crate) fn shareable(resource_type: &str) -> bool {
    matches!(
        resource_type,
        "Script" | "Stylesheet" | "Image" | "Font" | "Media" | "Other" | "Manifest"
    )
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The shared response of `url`, fetched by `fetch` if no page has
    /// it yet (concurrent askers wait for one fetch; a failed fetch is
    /// not kept, the next asker tries again).
    pub(crate) async fn get<E>(
        &self,
        url: &str,
        fetch: impl Future<Output = Result<FetchResponse, E>>,
    ) -> Result<Arc<FetchResponse>, E> {
        let cell = {
            let mut e = self.lock();
            // Cells a page left unfilled (it ended while they were being
            // fetched) are dropped before they pile up.
            if e.cells.len() >= 2 * MAX_ENTRIES {
                e.cells.retain(|_, c| c.initialized());
            }
            e.cells.entry(url.to_owned()).or_default().clone()
        };
        let mut fetched = false;
        let response = match cell
            .get_or_try_init(|| async {
                fetched = true;
                fetch.await.map(Arc::new)
            })
            .await
        {
            Ok(r) => r.clone(),
            Err(e) => {
                self.forget(url, &cell);
                return Err(e);
            }
        };
        if fetched {
            self.settle(url, &cell, &response);
        }
        Ok(response)
    }

    /// Keeps the entry just filled, or drops it when it is not to be
    /// shared; drops the oldest past [`MAX_BYTES`].
    fn settle(&self, url: &str, cell: &Cell, response: &FetchResponse) {
        if !keepable(response) {
            self.forget(url, cell);
            return;
        }
        let mut e = self.lock();
        let headers: usize = response
            .headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len())
            .sum();
        let size = response.body.len() + 2 * url.len() + headers + 256;
        e.order.push_back((url.to_owned(), size));
        e.bytes += size;
        while e.bytes > MAX_BYTES || e.order.len() > MAX_ENTRIES {
            let Some((old, n)) = e.order.pop_front() else {
                break;
            };
            e.bytes -= n;
            e.cells.remove(&old);
        }
    }
}

impl Shared {
    /// Drops `url`'s entry if it is still `cell`.
    fn forget(&self, url: &str, cell: &Cell) {
        let mut e = self.lock();
        if e.cells.get(url).is_some_and(|c| Arc::ptr_eq(c, cell)) {
            e.cells.remove(url);
        }
    }
}

fn keepable(r: &FetchResponse) -> bool {
    let no_store = r
        .headers
        .get_all(http::header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("no-store"));
    r.body.len() <= MAX_ENTRY && !r.truncated && !no_store
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, SystemTime};

    fn response(body: &'static [u8], cache_control: Option<&str>) -> FetchResponse {
        let mut headers = http::HeaderMap::new();
        if let Some(c) = cache_control {
            headers.insert(http::header::CACHE_CONTROL, c.parse().unwrap());
        }
        FetchResponse {
            started_at: SystemTime::now(),
            elapsed: Duration::ZERO,
            status: 200,
            headers,
            body: bytes::Bytes::from_static(body),
            truncated: false,
            capture: None,
        }
    }

    #[tokio::test]
    async fn concurrent_askers_share_one_fetch_and_later_ones_the_copy() {
        let shared = Shared::default();
        let fetches = AtomicU32::new(0);
        let fetch = || async {
            fetches.fetch_add(1, Ordering::Relaxed);
            tokio::task::yield_now().await;
            Ok::<_, ()>(response(b"bundle", None))
        };
        let (a, b) = tokio::join!(shared.get("u", fetch()), shared.get("u", fetch()));
        assert_eq!(
            (&a.unwrap().body[..], &b.unwrap().body[..]),
            (&b"bundle"[..], &b"bundle"[..])
        );
        shared.get("u", fetch()).await.unwrap();
        assert_eq!(fetches.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_failure_or_a_no_store_answer_is_not_kept() {
        let shared = Shared::default();
        assert!(
            shared
                .get("u", async { Err::<FetchResponse, _>("down") })
                .await
                .is_err()
        );
        let r = shared.get("u", async {
            Ok::<_, ()>(response(b"x", Some("private, no-store")))
        });
        r.await.unwrap();
        let again = shared.get("u", async { Ok::<_, ()>(response(b"fresh", None)) });
        assert_eq!(&again.await.unwrap().body[..], b"fresh");
    }

    #[tokio::test]
    async fn the_oldest_go_first_past_the_limit() {
        static BIG: [u8; MAX_ENTRY] = [b'x'; MAX_ENTRY];
        let shared = Shared::default();
        let n = MAX_BYTES / MAX_ENTRY + 1;
        for i in 0..n {
            let url = i.to_string();
            let r = shared.get(&url, async { Ok::<_, ()>(response(&BIG, None)) });
            r.await.unwrap();
        }
        let e = shared.lock();
        assert!(e.bytes <= MAX_BYTES);
        assert!(!e.cells.contains_key("0") && e.cells.contains_key(&(n - 1).to_string()));
    }

    #[tokio::test]
    async fn many_empty_answers_are_capped_by_count() {
        let shared = Shared::default();
        for i in 0..MAX_ENTRIES + 100 {
            let url = format!("/p?{i}");
            let r = shared.get(&url, async { Ok::<_, ()>(response(b"", None)) });
            r.await.unwrap();
        }
        let e = shared.lock();
        assert_eq!(e.order.len(), MAX_ENTRIES);
        assert!(e.cells.len() <= MAX_ENTRIES);
        assert!(!e.cells.contains_key("/p?0"));
    }
}
