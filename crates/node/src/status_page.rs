//! What `node --metrics/--status` serves: the node's engines (as a crawl
//! shows them), its shard events, and the cluster as this node sees it
//! (the same view as `crawlkeeper status`, refreshed in the background on
//! a ZooKeeper session of its own).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawlkeeper_store::location::scrub;
use crawlkeeper_view::Source;
use crawlkeeper_view::prom::{self, Kind, Text};
use serde_json::json;

use crate::reach::{Place, connect_zk, one_line, open_store};
use crate::status::{ClusterStatus, status};
use crate::status_json::{CAPS, bounded};
use crate::view::NodeView;

/// Engines of this node shown on its page (the running ones first).
const CRAWLS_SHOWN: usize = 10;
/// Rows of each engine's host table shown there.
const HOST_ROWS_SHOWN: usize = 50;

/// The cluster as last seen, or why it could not be.
type Seen = Arc<Mutex<Result<ClusterStatus, String>>>;

/// A node's status page and metrics.
pub struct NodeSource {
    name: String,
    group: String,
    view: Arc<NodeView>,
    seen: Seen,
}

impl NodeSource {
    /// The source of node `name`, looking at its cluster every second or
    /// so from now on (on the runtime it is called on).
    pub fn start(name: String, place: &Place, view: Arc<NodeView>) -> Arc<Self> {
        let seen: Seen = Arc::new(Mutex::new(Err("not looked at yet".to_owned())));
        let (args, into) = (place.clone(), seen.clone());
        tokio::spawn(async move {
            // A session of its own, opened again after any failure (an
            // expired session stays expired).
            let mut zk = None;
            loop {
                if zk.is_none() {
                    match connect_zk(&args).await {
                        Ok(c) => zk = Some(c),
                        Err(e) => record(&into, Err(one_line(&e)), &args.store),
                    }
                }
                if let Some(c) = &zk {
                    let look = match open_store(&args).await {
                        Ok(store) => status(c, args.group.as_str(), store, Duration::from_secs(1))
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                    if look.is_err() {
                        zk = None;
                    }
                    record(&into, look, &args.store);
                }
                // A look every two seconds or so is plenty for a page.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Arc::new(Self {
            name,
            group: place.group.clone(),
            view,
            seen,
        })
    }

    fn role(&self, s: &ClusterStatus) -> String {
        s.members
            .iter()
            .find(|m| m.name == self.name)
            .and_then(|m| serde_json::to_value(&m.state).ok())
            .and_then(|v| v["role"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned())
    }
}

/// Records a look; why it failed is shown on the status page, so it goes
/// through the one redaction of the store's location first.
fn record(seen: &Seen, look: Result<ClusterStatus, String>, store: &str) {
    *lock(seen) = look.map_err(|e| scrub(&e, store));
}

fn lock(seen: &Seen) -> std::sync::MutexGuard<'_, Result<ClusterStatus, String>> {
    seen.lock().unwrap_or_else(|p| p.into_inner())
}

impl Source for NodeSource {
    fn status(&self) -> serde_json::Value {
        // Running engines first (the page opens on them), a few of them,
        // each with its busiest hosts.
        let all = self.view.crawls();
        let crawls: Vec<_> = all
            .iter()
            .take(CRAWLS_SHOWN)
            .map(|(job, live)| {
                let mut live = serde_json::to_value(&**live).unwrap_or_default();
                if let Some(rows) = live.get_mut("host_table").and_then(|t| t.as_array_mut()) {
                    let total = rows.len();
                    rows.truncate(HOST_ROWS_SHOWN);
                    live["host_table_total"] = json!(total);
                }
                json!({ "name": format!("Job {job} on this node"), "live": live })
            })
            .collect();
        let seen = lock(&self.seen);
        let (cluster, error) = match &*seen {
            Ok(s) => (Some(bounded(s, &CAPS)), None),
            Err(e) => (None, Some(e.clone())),
        };
        let role = seen.as_ref().map(|s| self.role(s)).unwrap_or_default();
        json!({
            "title": format!("crawlkeeper: node {} of {}", self.name, self.group),
            "subtitle": format!("role {role} · crawlkeeper {}", env!("CARGO_PKG_VERSION")),
            "running": true,
            "crawls": crawls,
            "crawls_total": all.len(),
            "cluster": cluster,
            "cluster_error": error,
        })
    }

    fn metrics(&self) -> String {
        let mut text = Text::new();
        prom::crawls(&mut text, &self.view.crawls());
        let seen = lock(&self.seen);
        if let Ok(s) = &*seen {
            let role = self.role(s);
            text.family(
                "crawlkeeper_node_role",
                Kind::Gauge,
                "1 for this node's role in its group.",
            )
            .sample("crawlkeeper_node_role", &[("role", &role)], 1.0);
            text.family(
                "crawlkeeper_cluster_member_heart",
                Kind::Gauge,
                "1 for each member's heart as this node sees it (beating, silent, gone), with its role.",
            );
            for m in &s.members {
                let pulse = serde_json::to_value(m.pulse).ok();
                let pulse = pulse.as_ref().and_then(|v| v.as_str()).unwrap_or("unknown");
                let role = serde_json::to_value(&m.state)
                    .ok()
                    .and_then(|v| v["role"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                text.sample(
                    "crawlkeeper_cluster_member_heart",
                    &[("member", &m.name), ("heart", pulse), ("role", &role)],
                    1.0,
                );
            }
            let held = s
                .members
                .iter()
                .find(|m| m.name == self.name)
                .map_or(0, |m| m.shards.len());
            text.single(
                "crawlkeeper_node_shards_held",
                Kind::Gauge,
                "Shards this node's task holds unfinished.",
                held as f64,
            );
            let dead = s.group_state.as_ref().map_or(0, |g| g.fail_runner.len());
            text.single(
                "crawlkeeper_cluster_dead_runners",
                Kind::Gauge,
                "Runners the group has judged dead (GroupState fail_runner).",
                dead as f64,
            );
        }
        text.single(
            "crawlkeeper_node_status_up",
            Kind::Gauge,
            "1 when this node's last look at ZooKeeper and the store succeeded.",
            f64::from(u8::from(seen.is_ok())),
        );
        text.single(
            "crawlkeeper_zookeeper_operations_total",
            Kind::Counter,
            "Requests this process sent to ZooKeeper (its status page's own included).",
            crawlkeeper_cluster::zk::operations() as f64,
        );
        text.single(
            "crawlkeeper_node_shards_started_total",
            Kind::Counter,
            "Shards this node began to crawl, fail-overs to it included.",
            self.view.shards_started.load(Relaxed) as f64,
        );
        text.single(
            "crawlkeeper_node_fenced_total",
            Kind::Counter,
            "Engines of this node stopped because another node took their shards.",
            self.view.fenced.load(Relaxed) as f64,
        );
        text.single(
            "crawlkeeper_node_failed_total",
            Kind::Counter,
            "Engines of this node that ended with another failure.",
            self.view.failed.load(Relaxed) as f64,
        );
        text.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_pages_error_field_never_shows_a_password() {
        let seen: Seen = Arc::new(Mutex::new(Err(String::new())));
        for (store, password) in [
            ("postgres://u:S3cretPw@127.0.0.1:1/db", "S3cretPw"),
            ("postgres://u@127.0.0.1:1/db?password=S3cretPw", "S3cretPw"),
            (
                "host=127.0.0.1 port=1 user=u password='S3cretPw x'",
                "S3cretPw x",
            ),
        ] {
            let said = format!("cannot open the crawl state at '{store}': {password} refused");
            record(&seen, Err(said), store);
            let source = NodeSource {
                name: "n-1".into(),
                group: "g".into(),
                view: Arc::new(NodeView::default()),
                seen: seen.clone(),
            };
            let page = source.status().to_string();
            let error = source.status()["cluster_error"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(
                error.starts_with("cannot open the crawl state at"),
                "{error}"
            );
            assert!(!page.contains("S3cretPw"), "{page}");
            assert!(!source.metrics().contains("S3cretPw"));
        }
    }
}
