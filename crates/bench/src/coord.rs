//! The coordinators, in-memory and ZooKeeper (a standalone server of the
//! benchmark's own on loopback): compare-and-set writes per second,
//! watch latency (write → event), and how long after a client dies its
//! session's ephemeral node goes (session timeout 1 s; the ZooKeeper
//! client is a separate process killed with SIGKILL, the in-memory one is
//! frozen, the nearest it has).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use crawlkeeper_cluster::{
    Coordinator, CreateMode, MemoryCoordinator, MemoryEnsemble, WatchEvent, ZkCoordinator,
};
use crawlkeeper_testsite::zookeeper::ZkServer;

/// Options of `coord`.
#[derive(Args, Debug)]
pub struct CoordArgs {
    /// Backends: memory, zookeeper.
    #[arg(long, value_delimiter = ',', default_value = "memory,zookeeper")]
    backend: Vec<String>,
    /// Seconds each write-rate measurement runs.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Watch round trips measured.
    #[arg(long, default_value_t = 500)]
    watches: usize,
    /// Kills measured for expiry detection.
    #[arg(long, default_value_t = 5)]
    kills: usize,
}

/// Options of the hidden child process.
#[derive(Args, Debug)]
pub struct ChildArgs {
    /// ZooKeeper address.
    #[arg(long)]
    zookeeper: String,
    /// The ephemeral node to hold.
    #[arg(long)]
    node: String,
}

const SESSION_TIMEOUT: Duration = Duration::from_secs(1);

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// The child: opens a session, creates the node, says so, waits to die.
pub fn child(args: ChildArgs) -> Result<()> {
    runtime()?.block_on(async {
        let c = ZkCoordinator::connect(&args.zookeeper, SESSION_TIMEOUT).await?;
        c.create(&args.node, b"", CreateMode::Ephemeral).await?;
        println!("ready");
        std::future::pending::<()>().await;
        Ok(())
    })
}

/// Runs the measurements.
pub fn run(args: CoordArgs) -> Result<()> {
    let rt = runtime()?;
    for backend in &args.backend {
        match backend.as_str() {
            "memory" => {
                let ensemble = MemoryEnsemble::new();
                let open = || {
                    let e = ensemble.clone();
                    async move { Ok(e.connect(SESSION_TIMEOUT)) }
                };
                rt.block_on(measure("memory", &args, open))?;
                let expiry = rt.block_on(memory_expiry(&ensemble, args.kills))?;
                report_expiry("memory", "frozen session", &expiry);
            }
            "zookeeper" => {
                let server = ZkServer::start();
                let address = server.address().to_owned();
                let open = || {
                    let a = address.clone();
                    async move { Ok(ZkCoordinator::connect(&a, SESSION_TIMEOUT).await?) }
                };
                rt.block_on(measure("zookeeper", &args, open))?;
                let expiry = rt.block_on(zk_expiry(&address, args.kills))?;
                report_expiry("zookeeper", "client process killed with SIGKILL", &expiry);
            }
            other => bail!("unknown backend {other:?} (use memory, zookeeper)"),
        }
    }
    Ok(())
}

async fn measure<C, F, Fut>(name: &str, args: &CoordArgs, open: F) -> Result<()>
where
    C: Coordinator,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<C>>,
{
    for writers in [1usize, 16] {
        let mut tasks = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(args.seconds);
        for w in 0..writers {
            let c = open().await?;
            let path = format!("/bench-cas-{writers}-{w}");
            c.create(&path, b"0", CreateMode::Persistent).await.ok();
            tasks.push(tokio::spawn(async move {
                let (_, mut version) = c.get(&path).await?;
                let mut n = 0u64;
                while Instant::now() < deadline {
                    version = c.set(&path, &n.to_le_bytes(), Some(version)).await?;
                    n += 1;
                }
                anyhow::Ok(n)
            }));
        }
        let start = Instant::now();
        let mut total = 0;
        for t in tasks {
            total += t.await??;
        }
        let rate = total as f64 / start.elapsed().as_secs_f64();
        println!("{name:<10} compare-and-set writes, {writers:>2} session(s): {rate:>9.0}/s");
    }

    let writer = open().await?;
    let reader = open().await?;
    writer
        .create("/bench-watch", b"", CreateMode::Persistent)
        .await
        .ok();
    let mut lat = Vec::with_capacity(args.watches);
    for i in 0..args.watches {
        let (_, watch) = reader.get_and_watch("/bench-watch").await?;
        let waiting = tokio::spawn(async move {
            let e = watch.changed().await;
            (e, Instant::now())
        });
        let start = Instant::now();
        writer.set("/bench-watch", &i.to_le_bytes(), None).await?;
        let (event, at) = waiting.await?;
        if event != WatchEvent::DataChanged {
            bail!("unexpected watch event {event:?}");
        }
        lat.push(at.duration_since(start));
    }
    lat.sort();
    println!(
        "{name:<10} watch latency (write → event), {} changes: median {:?}, p99 {:?}",
        lat.len(),
        lat[lat.len() / 2],
        lat[lat.len() * 99 / 100]
    );
    Ok(())
}

async fn memory_expiry(ensemble: &MemoryEnsemble, kills: usize) -> Result<Vec<Duration>> {
    let observer = ensemble.connect(SESSION_TIMEOUT);
    let mut out = Vec::new();
    for i in 0..kills {
        let victim: MemoryCoordinator = ensemble.connect(SESSION_TIMEOUT);
        let node = format!("/bench-victim-{i}");
        victim.create(&node, b"", CreateMode::Ephemeral).await?;
        let (_, watch) = observer.get_and_watch(&node).await?;
        let start = Instant::now();
        victim.freeze();
        watch.changed().await;
        out.push(start.elapsed());
    }
    Ok(out)
}

async fn zk_expiry(address: &str, kills: usize) -> Result<Vec<Duration>> {
    let observer = ZkCoordinator::connect(address, SESSION_TIMEOUT).await?;
    let exe = std::env::current_exe()?;
    let mut out = Vec::new();
    for i in 0..kills {
        let node = format!("/bench-victim-{i}");
        let mut child = Command::new(&exe)
            .args(["coord-child", "--zookeeper", address, "--node", &node])
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("child stdout")?).read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("the child did not start: {line:?}");
        }
        let (value, watch) = observer.get_and_watch(&node).await?;
        if value.is_none() {
            bail!("the child's node {node} is missing");
        }
        let start = Instant::now();
        child.kill()?; // SIGKILL
        child.wait()?;
        let event = watch.changed().await;
        if event != WatchEvent::Deleted {
            bail!("unexpected event {event:?}");
        }
        out.push(start.elapsed());
    }
    Ok(out)
}

fn report_expiry(name: &str, how: &str, times: &[Duration]) {
    let mut t = times.to_vec();
    t.sort();
    println!(
        "{name:<10} session expiry detected ({how}, session timeout 1s), {} runs: median {:?}, min {:?}, max {:?}",
        t.len(),
        t[t.len() / 2],
        t[0],
        t[t.len() - 1]
    );
}
