//! `crawlkeeper node`: one member of a cluster. It joins its group, is
//! elected Runner or Backup Runner, crawls the shards it is given (one
//! engine per job) and takes over a dead Runner's; on SIGINT or SIGTERM it
//! halts its engines (each checkpoints), hands its shards over at once
//! and exits 0.

use std::sync::Arc;

use crawlkeeper_cluster::node::{ClusterNode, Connect, Exit, ItemMode, NodeConfig};
use crawlkeeper_cluster::{Layout, ZkCoordinator};
use crawlkeeper_model::cluster::{Heartbeat, NodeName};
use crawlkeeper_node::group::{GroupSettings, JoinError, check_name, check_settings};
use crawlkeeper_node::offer::{self, Offer};
use crawlkeeper_node::{CrawlRunner, NodeSettings};
use crawlkeeper_store::Holder;

use crate::args_cluster::NodeArgs;
use crate::cluster::{connect_zk, open_store, place};
use crate::exit::{CliError, Outcome};
use crate::serve::Bound;
use crate::signals::Shutdown;
use crawlkeeper_node::status_page::NodeSource;

/// Runs `crawlkeeper node` until it is asked to stop.
pub async fn run(
    args: NodeArgs,
    mut registry: crawlkeeper_crawl::Registry,
) -> Result<Outcome, CliError> {
    let name: NodeName = args.name.clone();
    let group = args.cluster.group.as_str();
    let heartbeat = Heartbeat::new(
        args.update_time,
        args.update_timeout,
        args.heart_rhythm_timeout,
    )
    .map_err(|e| CliError::Usage(e.to_string()))?;
    args.processors
        .add_to(&mut registry)
        .map_err(CliError::Usage)?;
    // Browsers start with the first page a --render job gives this node.
    match args.browsers.config() {
        Ok(config) => registry.set_renderer(Arc::new(crawlkeeper_render::Renderer::new(config))),
        Err(e) => tracing::warn!("this node renders no page: {e}"),
    }
    let bound = Bound::bind(&args.serve)?;
    // The store is reached (and its schema brought up to date) first.
    crawlkeeper_node::release(open_store(&args.cluster).await?);
    let zk = connect_zk(&args.cluster).await?;
    let shape = GroupSettings {
        runners: args.runners,
        backups: args.backups,
    };
    check_settings(&zk, group, shape)
        .await
        .map_err(join_error)?;
    check_name(&zk, group, &name).await.map_err(join_error)?;
    let offer = Offer {
        processors: registry.processor_names(),
        browser: registry.renderer().is_some(),
    };
    let layout =
        Layout::new(group).map_err(|e| CliError::Usage(format!("--group {group}: {e}")))?;
    offer::publish(&zk, &layout, &name, &offer)
        .await
        .map_err(|e| CliError::Fatal(anyhow::anyhow!("ZooKeeper: {e}")))?;
    let mut cfg = NodeConfig::new(
        group,
        name.clone(),
        args.runners as usize,
        args.backups as usize,
    );
    cfg.heartbeat = heartbeat;
    cfg.items = ItemMode::Concurrent;
    cfg.formation_timeout = args.formation_timeout;
    cfg.session_timeout = args.cluster.session_timeout;
    let holder = Holder::node(&name.to_string());
    // The bounds per host and per IP hold across the cluster's nodes.
    crawlkeeper_job::polite::keep(
        registry.politeness().clone(),
        args.cluster.store.clone(),
        holder.to_string(),
    );
    let runner = CrawlRunner::new(NodeSettings {
        registry: Arc::new(registry),
        store: args.cluster.store.clone(),
        holder,
        max_workers: args.max_workers,
        local_address: args.bind_address,
    });
    let view = runner.view();
    let first = std::sync::Mutex::new(Some(zk));
    let zookeeper = args.cluster.zookeeper.clone();
    let session_timeout = args.cluster.session_timeout;
    let connect: Connect<ZkCoordinator> = Arc::new(move || {
        // The session opened for the checks is the first one used.
        let opened = first.lock().unwrap_or_else(|p| p.into_inner()).take();
        let zookeeper = zookeeper.clone();
        Box::pin(async move {
            match opened {
                Some(c) => Ok(c),
                None => ZkCoordinator::connect(&zookeeper, session_timeout).await,
            }
        })
    });
    let shutdown = Shutdown::install().map_err(|e| CliError::Fatal(e.into()))?;
    let node = ClusterNode::start(connect, cfg, runner)
        .await
        .map_err(|e| CliError::Fatal(anyhow::anyhow!("node {name} could not join: {e}")))?;
    tracing::info!(node = %name, group = %args.cluster.group, "joined");
    let _servers = if bound.is_empty() {
        Vec::new()
    } else {
        bound.serve(NodeSource::start(
            name.to_string(),
            &place(&args.cluster),
            view,
        ))?
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.requested().await;
        let _ = stop_tx.send(true);
        // Keep the sender until the node is gone.
        stop_tx.closed().await;
    });
    match node.run(stop_rx).await {
        Ok(Exit::Left) => Ok(Outcome::Finished),
        // Stopped as asked; the log says it could not hand its task over.
        Ok(Exit::Abandoned) => Ok(Outcome::Finished),
        Err(e) => Err(CliError::Fatal(anyhow::anyhow!("node {name} stopped: {e}"))),
    }
}

fn join_error(e: JoinError) -> CliError {
    match e {
        JoinError::Meta(m) => CliError::Fatal(anyhow::anyhow!("ZooKeeper: {m}")),
        e => CliError::Usage(e.to_string()),
    }
}
