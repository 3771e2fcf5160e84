//! Reaching a cluster: its ZooKeeper and its store, each failure one clear
//! line (the store's password never in it).

use std::time::Duration;

use crawlkeeper_cluster::{CoordError, ZkCoordinator};
use crawlkeeper_job::{JobError, Location};
use crawlkeeper_store::Store;

/// How long reaching ZooKeeper may take before giving up.
pub const ZK_WAIT: Duration = Duration::from_secs(15);

/// Where a cluster is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// ZooKeeper: `host:port[,host:port…][/chroot]`.
    pub zookeeper: String,
    /// The PostgreSQL database every node shares.
    pub store: String,
    /// The group (one cluster in the ZooKeeper tree).
    pub group: String,
    /// ZooKeeper's session timeout.
    pub session_timeout: Duration,
}

/// ZooKeeper could not be reached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReachError {
    /// It refused or failed.
    #[error("cannot reach ZooKeeper at {at}")]
    Failed {
        /// The connect string.
        at: String,
        /// Why.
        #[source]
        source: CoordError,
    },
    /// It did not answer in time.
    #[error("cannot reach ZooKeeper at {at}: no answer within {}s", ZK_WAIT.as_secs())]
    Silent {
        /// The connect string.
        at: String,
    },
}

/// Opens a ZooKeeper session with the cluster, within [`ZK_WAIT`].
pub async fn connect_zk(place: &Place) -> Result<ZkCoordinator, ReachError> {
    let at = place.zookeeper.clone();
    match tokio::time::timeout(ZK_WAIT, ZkCoordinator::connect(&at, place.session_timeout)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(source)) => Err(ReachError::Failed { at, source }),
        Err(_) => Err(ReachError::Silent { at }),
    }
}

/// Opens the cluster's store, on the blocking pool.
pub async fn open_store(place: &Place) -> Result<Box<dyn Store>, JobError> {
    let location = Location::Store(place.store.clone());
    let shown = location.shown();
    tokio::task::spawn_blocking(move || location.open())
        .await
        .unwrap_or_else(|e| {
            Err(JobError::Unreachable {
                place: shown,
                why: format!("the thread opening it ended: {e}"),
            })
        })
}

/// `e` and each error under it, in one line: `what: why: deeper why`.
pub fn one_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        next = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_reads_as_one_line_with_its_cause() {
        let e = ReachError::Failed {
            at: "127.0.0.1:1".into(),
            source: CoordError::ConnectionLoss,
        };
        let line = one_line(&e);
        assert!(
            line.starts_with("cannot reach ZooKeeper at 127.0.0.1:1: "),
            "{line}"
        );
        assert!(line.len() > "cannot reach ZooKeeper at 127.0.0.1:1: ".len());
    }
}
