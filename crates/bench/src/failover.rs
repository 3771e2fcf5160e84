//! The cluster protocol on ZooKeeper (a server of the benchmark's own),
//! with fast settings (`update_time` 100 ms, `update_timeout` 500 ms,
//! threshold 1): the time from a Runner's death to its backup running the
//! dead Runner's next item, over `--runs` runs; and, with `--soak N`
//! minutes, false deaths among 6 nodes while every core is kept busy,
//! with the coordinator operations each node makes per second.
//!
//! A death is the Runner's process stopping at once: its node task is
//! aborted while its session stays open (as after SIGKILL, the server
//! keeps the session until its timeout), so the backup must find it dead
//! by its heartbeat.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use crawlkeeper_cluster::node::{ClusterNode, Connect, ItemOutcome, NodeConfig, TaskRunner};
use crawlkeeper_cluster::{
    CoordError, Coordinator, CreateMode, Layout, Op, OpResult, SessionState, Value, Version, Watch,
    ZkCoordinator, metadata,
};
use crawlkeeper_model::cluster::{GroupState, Heartbeat, NodeName, RunningContent, Task, TaskId};
use crawlkeeper_testsite::zookeeper::ZkServer;
use tokio::sync::watch;

/// Options of `failover`.
#[derive(Args, Debug)]
pub struct FailoverArgs {
    /// Fail-overs measured.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Minutes of the soak (6 nodes under full CPU load); 0 skips it.
    #[arg(long, default_value_t = 0)]
    soak: u64,
}

/// Counts a session's requests.
#[derive(Clone)]
struct Counting {
    inner: ZkCoordinator,
    ops: Arc<AtomicU64>,
}

type R<T> = std::result::Result<T, CoordError>;

impl Counting {
    fn one(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }
}

impl Coordinator for Counting {
    async fn create(&self, p: &str, d: &[u8], m: CreateMode) -> R<String> {
        self.one();
        self.inner.create(p, d, m).await
    }
    async fn get(&self, p: &str) -> R<Value> {
        self.one();
        self.inner.get(p).await
    }
    async fn exists(&self, p: &str) -> R<Option<Version>> {
        self.one();
        self.inner.exists(p).await
    }
    async fn set(&self, p: &str, d: &[u8], v: Option<Version>) -> R<Version> {
        self.one();
        self.inner.set(p, d, v).await
    }
    async fn delete(&self, p: &str, v: Option<Version>) -> R<()> {
        self.one();
        self.inner.delete(p, v).await
    }
    async fn children(&self, p: &str) -> R<Vec<String>> {
        self.one();
        self.inner.children(p).await
    }
    async fn multi(&self, ops: &[Op]) -> R<Vec<OpResult>> {
        self.one();
        self.inner.multi(ops).await
    }
    async fn get_and_watch(&self, p: &str) -> R<(Option<Value>, Watch)> {
        self.one();
        self.inner.get_and_watch(p).await
    }
    async fn children_and_watch(&self, p: &str) -> R<(Vec<String>, Watch)> {
        self.one();
        self.inner.children_and_watch(p).await
    }
    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.inner.session_state()
    }
    async fn close(&self) -> R<()> {
        self.inner.close().await
    }
}

/// Item starts: which node, which URL, when.
type Starts = Arc<Mutex<Vec<(NodeName, String, Instant)>>>;

/// Records when each node started each item.
#[derive(Clone)]
struct Recorder {
    node: NodeName,
    starts: Starts,
    work: Duration,
}

impl TaskRunner for Recorder {
    async fn run(&self, item: &RunningContent) -> ItemOutcome {
        self.starts
            .lock()
            .unwrap()
            .push((self.node.clone(), item.url.clone(), Instant::now()));
        tokio::time::sleep(self.work).await;
        ItemOutcome {
            status_code: Some(200),
            response: None,
            error: None,
        }
    }
}

struct Node {
    handle: tokio::task::JoinHandle<()>,
    /// Keeps the session open after the node task is aborted.
    sessions: Arc<Mutex<Vec<Counting>>>,
    ops: Arc<AtomicU64>,
}

impl Node {
    /// Stops the node and closes its sessions.
    async fn end(self) {
        self.handle.abort();
        let sessions: Vec<Counting> = self.sessions.lock().unwrap().drain(..).collect();
        for c in sessions {
            let _ = c.close().await;
        }
    }
}

fn fast() -> Heartbeat {
    Heartbeat::new(Duration::from_millis(100), Duration::from_millis(500), 1).expect("valid")
}

async fn start(
    connect: &str,
    name: &str,
    runners: usize,
    backups: usize,
    starts: &Starts,
    work: Duration,
) -> Result<Node> {
    let name: NodeName = name.parse()?;
    let ops = Arc::new(AtomicU64::new(0));
    let sessions = Arc::new(Mutex::new(Vec::new()));
    let (target, o, s) = (connect.to_owned(), ops.clone(), sessions.clone());
    let connector: Connect<Counting> = Arc::new(move || {
        let (target, o, s) = (target.clone(), o.clone(), s.clone());
        Box::pin(async move {
            let c = Counting {
                inner: ZkCoordinator::connect(&target, Duration::from_secs(4)).await?,
                ops: o,
            };
            s.lock().unwrap().push(c.clone());
            Ok(c)
        })
    });
    let mut cfg = NodeConfig::new("bench", name.clone(), runners, backups);
    cfg.heartbeat = fast();
    cfg.formation_timeout = Duration::from_secs(5);
    let recorder = Recorder {
        node: name,
        starts: starts.clone(),
        work,
    };
    let node = ClusterNode::start(connector, cfg, recorder).await?;
    let (_stop, rx) = watch::channel(false);
    let handle = tokio::spawn(async move {
        let _keep = _stop;
        if let Err(e) = node.run(rx).await {
            eprintln!("node stopped: {e}");
        }
    });
    Ok(Node {
        handle,
        sessions,
        ops,
    })
}

async fn read<T: serde::de::DeserializeOwned>(c: &ZkCoordinator, p: &str) -> Result<T> {
    metadata::read::<T>(c, p)
        .await?
        .map(|(t, _)| t)
        .ok_or_else(|| anyhow::anyhow!("no {p}"))
}

async fn wait_for(what: &str, mut f: impl AsyncFnMut() -> Result<bool>) -> Result<()> {
    let start = Instant::now();
    while !f().await? {
        if start.elapsed() > Duration::from_secs(60) {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

fn task(items: usize) -> Task {
    Task {
        running_content: (0..items)
            .map(|i| {
                RunningContent::get(TaskId::Int(i as i64), format!("http://127.0.0.1/item/{i}"))
            })
            .collect(),
        ..Task::default()
    }
}

/// Gives a registered node a task of 2,000 items, as `submit` does.
async fn give(observer: &impl Coordinator, layout: &Layout, name: &NodeName) -> Result<()> {
    let (_, v) = metadata::read::<Task>(observer, &layout.task(name))
        .await?
        .expect("registered");
    let given = Task {
        owner: Some(name.clone()),
        ..task(2_000)
    };
    metadata::write(observer, &layout.task(name), &given, Some(v)).await?;
    Ok(())
}

async fn one_failover(address: &str, run: usize) -> Result<Duration> {
    let connect = format!("{address}/failover-{run}");
    let observer = ZkCoordinator::connect(&connect, Duration::from_secs(4)).await?;
    let layout = Layout::new("bench")?;
    let starts = Arc::new(Mutex::new(Vec::new()));
    let runner = start(&connect, "b_1", 1, 1, &starts, Duration::from_millis(20)).await?;
    let backup = start(&connect, "b_2", 1, 1, &starts, Duration::from_millis(20)).await?;
    wait_for("the election", async || {
        Ok(
            metadata::read::<GroupState>(&observer, &layout.group_state())
                .await?
                .is_some_and(|(g, _)| g.total_runner == 1),
        )
    })
    .await?;
    let b1: NodeName = "b_1".parse()?;
    give(&observer, &layout, &b1).await?;
    wait_for("progress", async || Ok(starts.lock().unwrap().len() >= 20)).await?;
    runner.handle.abort();
    let killed = Instant::now();
    let b2: NodeName = "b_2".parse()?;
    if let Err(e) = wait_for("the backup's first item", async || {
        Ok(starts.lock().unwrap().iter().any(|(n, _, _)| *n == b2))
    })
    .await
    {
        let g: GroupState = read(&observer, &layout.group_state()).await?;
        let t2: Task = read(&observer, &layout.task(&b2)).await?;
        let t1: Task = read(&observer, &layout.task(&b1)).await?;
        bail!(
            "{e}: group {g:?}; b_2 task: {} items, status {:?}, owner {:?}; b_1 task: {} items, owner {:?}",
            t2.running_content.len(),
            t2.running_status,
            t2.owner,
            t1.running_content.len(),
            t1.owner
        );
    }
    let first = starts
        .lock()
        .unwrap()
        .iter()
        .find(|(n, _, _)| *n == b2)
        .map(|(_, _, t)| *t)
        .expect("found");
    let g: GroupState = read(&observer, &layout.group_state()).await?;
    runner.end().await;
    backup.end().await;
    observer.close().await?;
    if g.current_runner != vec![b2] {
        bail!("unexpected group after fail-over: {g:?}");
    }
    Ok(first.duration_since(killed))
}

/// Runs the measurements.
pub fn run(args: FailoverArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let server = ZkServer::start();
    let address = server.address().to_owned();
    rt.block_on(async {
        let mut times = Vec::new();
        for run in 0..args.runs {
            times.push(one_failover(&address, run).await?);
        }
        times.sort();
        println!(
            "fail-over (update_time 100ms, update_timeout 500ms, threshold 1), {} runs on ZooKeeper: median {:?}, min {:?}, max {:?}",
            times.len(),
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
        if args.soak > 0 {
            soak(&address, args.soak).await?;
        }
        anyhow::Ok(())
    })
}

/// 6 nodes (3 Runners with endless tasks, 3 backups) for `minutes` while
/// busy threads keep every core loaded; counts false deaths.
async fn soak(address: &str, minutes: u64) -> Result<()> {
    let connect = format!("{address}/soak");
    let observer = ZkCoordinator::connect(&connect, Duration::from_secs(4)).await?;
    let layout = Layout::new("bench")?;
    let starts = Arc::new(Mutex::new(Vec::new()));
    let mut nodes = BTreeMap::new();
    for i in 1..=6 {
        nodes.insert(
            i,
            start(
                &connect,
                &format!("s_{i}"),
                3,
                3,
                &starts,
                Duration::from_secs(1),
            )
            .await?,
        );
    }
    wait_for("the election", async || {
        Ok(
            metadata::read::<GroupState>(&observer, &layout.group_state())
                .await?
                .is_some_and(|(g, _)| g.total_runner == 3),
        )
    })
    .await?;
    for i in 1..=3 {
        give(&observer, &layout, &format!("s_{i}").parse()?).await?;
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burners: Vec<_> = (0..std::thread::available_parallelism()?.get())
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                x
            })
        })
        .collect();
    let ops_before: u64 = nodes.values().map(|n| n.ops.load(Ordering::Relaxed)).sum();
    let began = Instant::now();
    tokio::time::sleep(Duration::from_secs(minutes * 60)).await;
    let elapsed = began.elapsed();
    let ops_after: u64 = nodes.values().map(|n| n.ops.load(Ordering::Relaxed)).sum();
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        let _ = b.join();
    }
    let g: GroupState = read(&observer, &layout.group_state()).await?;
    let per_node = (ops_after - ops_before) as f64 / 6.0 / elapsed.as_secs_f64();
    println!(
        "soak: 6 nodes for {minutes} min under full CPU load: false deaths {} (fail_crawler {:?}); coordinator operations per node {per_node:.1}/s",
        g.fail_crawler.len(),
        g.fail_crawler
    );
    Ok(())
}
