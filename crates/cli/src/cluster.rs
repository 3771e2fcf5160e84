//! What the cluster's commands share: the store checked to be PostgreSQL
//! and opened, ZooKeeper reached, each failure as one clear line.

use std::time::Duration;

use crawlkeeper_cluster::ZkCoordinator;
use crawlkeeper_store::Store;
use crawlkeeper_store::location::is_postgres;

use crate::args::StoreArgs;
use crate::args_cluster::ClusterArgs;
use crate::exit::CliError;

/// How long reaching ZooKeeper may take before the command gives up.
const ZK_WAIT: Duration = Duration::from_secs(15);

/// Refuses a store that is not PostgreSQL (exit 2), without repeating it
/// (it may hold a password).
pub fn check_store(args: &ClusterArgs) -> Result<(), CliError> {
    if is_postgres(&args.store) {
        return Ok(());
    }
    Err(CliError::Usage(
        "--store is not a PostgreSQL database (a postgres:// or postgresql:// URL, or libpq \
         key=value words such as 'host=db.example dbname=crawl'): a cluster's nodes share one \
         (a SQLite file is one machine's)"
            .to_owned(),
    ))
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
