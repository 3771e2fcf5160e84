//! What the cluster's commands share: the store checked to be PostgreSQL
//! and opened, ZooKeeper reached, each failure as one clear line.

use std::time::Duration;

use crawlkeeper_cluster::ZkCoordinator;
use crawlkeeper_store::Store;
use crawlkeeper_store::location::redact;

use crate::args::StoreArgs;
use crate::args_cluster::ClusterArgs;
use crate::exit::CliError;

/// How long reaching ZooKeeper may take before the command gives up.
const ZK_WAIT: Duration = Duration::from_secs(15);

/// Refuses a store that is not PostgreSQL (exit 2).
pub fn check_store(args: &ClusterArgs) -> Result<(), CliError> {
    let s = &args.store;
    if s.starts_with("postgres://") || s.starts_with("postgresql://") {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "--store '{}' is not a postgres:// URL: a cluster's nodes share one PostgreSQL database \
         (a SQLite file is one machine's)",
        redact(s)
    )))
}

/// Opens the cluster's store (on the blocking pool).
pub async fn open_store(args: &ClusterArgs) -> Result<Box<dyn Store>, CliError> {
    check_store(args)?;
    let store = StoreArgs {
        state: Default::default(),
        store: Some(args.store.clone()),
    };
    tokio::task::spawn_blocking(move || crate::state::open_store(&store))
        .await
        .map_err(|e| CliError::Fatal(e.into()))?
}

/// Opens a ZooKeeper session, or says in one line why it cannot.
pub async fn connect_zk(args: &ClusterArgs) -> Result<ZkCoordinator, CliError> {
    let connect = args.zookeeper.clone();
    match tokio::time::timeout(
        ZK_WAIT,
        ZkCoordinator::connect(&connect, args.session_timeout),
    )
    .await
    {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(CliError::Fatal(anyhow::anyhow!(
            "cannot reach ZooKeeper at {connect}: {e}"
        ))),
        Err(_) => Err(CliError::Fatal(anyhow::anyhow!(
            "cannot reach ZooKeeper at {connect}: no answer within {}s",
            ZK_WAIT.as_secs()
        ))),
    }
}
