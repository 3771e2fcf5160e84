//! The keeper of a process's share of the cluster's politeness bounds:
//! it tells PostgreSQL what the process's gates want
//! ([`Politeness::demand`]) and gives them what the store grants
//! ([`Politeness::grant`]), a few times a second and whenever a new key
//! is wanted. While the store cannot be reached the grants lapse
//! ([`crawlkeeper_fetch::polite::GRANT_LIFETIME`]) and requests wait: a
//! bound is never passed for want of a store.

use std::sync::Arc;
use std::time::Duration;

use crawlkeeper_fetch::Politeness;
use crawlkeeper_fetch::polite::Key;
use crawlkeeper_store::postgres::polite::PoliteWant;
use crawlkeeper_store::{PgStore, StoreError};
use tokio::time::Instant;

/// How often holdings are renewed while anything is wanted.
pub const RENEW_EVERY: Duration = Duration::from_millis(250);

/// The least time between two exchanges (a burst of new keys is asked
/// for together).
const AT_MOST_EVERY: Duration = Duration::from_millis(20);

/// Shares `politeness` through the PostgreSQL store at `url` as `holder`
/// (unique to this process): from now on its requests go only as the
/// store grants. Runs until the process ends.
pub fn keep(
    politeness: Arc<Politeness>,
    url: String,
    holder: String,
) -> tokio::task::JoinHandle<()> {
    politeness.share();
    tokio::spawn(async move {
        let mut store: Option<PgStore> = None;
        let mut failing = false;
        loop {
            let wants = politeness.demand().await;
            let asked = Instant::now();
            let sent: Vec<PoliteWant> = wants
                .iter()
                .map(|w| PoliteWant {
                    key: w.key.to_string(),
                    limit: w.limit,
                    want: w.want,
                    in_flight: w.in_flight,
                    idle: w.idle,
                })
                .collect();
            let (url2, holder2) = (url.clone(), holder.clone());
            let mut s = store.take();
            let answer = tokio::task::spawn_blocking(move || {
                let result = match &mut s {
                    Some(store) => store.polite_exchange(&holder2, &sent),
                    None => PgStore::connect(&url2).and_then(|mut store| {
                        let r = store.polite_exchange(&holder2, &sent);
                        s = Some(store);
                        r
                    }),
                };
                (result, s)
            })
            .await;
            match answer {
                Ok((Ok(grants), s)) => {
                    store = s;
                    if failing {
                        tracing::info!("politeness shared through the store again");
                        failing = false;
                    }
                    let by_key: Vec<(Key, u32)> = wants
                        .iter()
                        .zip(grants)
                        .map(|(w, (_, n))| (w.key.clone(), n))
                        .collect();
                    politeness.grant(asked, &by_key);
                }
                Ok((Err(e), s)) => {
                    // Kept: it connects again by itself. (Dropped here, on
                    // an async thread, its client would panic.)
                    store = s;
                    // A lost connection: the store may have given this
                    // process's places away (its session ended), so nothing
                    // more is sent on them. Other failures leave the grants
                    // to lapse by their age.
                    if matches!(e, StoreError::Unavailable(_)) {
                        politeness.lapse();
                    }
                    if !failing {
                        tracing::warn!(error = %e, "cannot share politeness through the store: requests wait");
                        failing = true;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the politeness keeper's store thread failed"),
            }
            let next = asked
                + if failing {
                    Duration::from_secs(1)
                } else {
                    RENEW_EVERY
                };
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = politeness.wanted() => {
                    tokio::time::sleep_until(asked + AT_MOST_EVERY).await;
                }
            }
        }
    })
}
