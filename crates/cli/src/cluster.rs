//! What the cluster's commands share: the store checked to be PostgreSQL
//! and opened, ZooKeeper reached (by [`crawlkeeper_node::reach`]), each
//! failure as one clear line.

use crawlkeeper_cluster::ZkCoordinator;
use crawlkeeper_node::reach::{self, Place};
use crawlkeeper_store::Store;
use crawlkeeper_store::location::is_postgres;

use crate::args_cluster::ClusterArgs;
use crate::exit::CliError;

/// Where the arguments say the cluster is.
pub fn place(args: &ClusterArgs) -> Place {
    Place {
        zookeeper: args.zookeeper.clone(),
        store: args.store.clone(),
        group: args.group.to_string(),
        session_timeout: args.session_timeout,
    }
}

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
    Ok(reach::open_store(&place(args)).await?)
}

/// Opens a ZooKeeper session, or says in one line why it cannot.
pub async fn connect_zk(args: &ClusterArgs) -> Result<ZkCoordinator, CliError> {
    reach::connect_zk(&place(args))
        .await
        .map_err(|e| CliError::Fatal(e.into()))
}
