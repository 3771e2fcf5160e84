//! Nodes, a fake task runner that counts every run, and waits on the
//! paused clock.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawlkeeper_cluster::node::{ClusterNode, Connect, Exit, ItemOutcome, NodeConfig, TaskRunner};
use crawlkeeper_cluster::{
    CoordError, Coordinator, Layout, MemoryCoordinator, MemoryEnsemble, MetaError, metadata,
};
use crawlkeeper_model::cluster::{
    GroupState, Heartbeat, NodeName, NodeState, RunningContent, Task, TaskId, TaskState,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub const GROUP: &str = "g";
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// Counts every run of every URL; each item takes `work` of (virtual) time.
#[derive(Clone, Default)]
pub struct FakeRunner {
    pub runs: Arc<Mutex<BTreeMap<String, u32>>>,
    pub work: Duration,
}

impl TaskRunner for FakeRunner {
    async fn run(&self, item: &RunningContent) -> ItemOutcome {
        *self
            .runs
            .lock()
            .unwrap()
            .entry(item.url.clone())
            .or_default() += 1;
        tokio::time::sleep(self.work).await;
        ItemOutcome {
            status_code: Some(200),
            response: Some(format!("fetched {}", item.url)),
            error: None,
        }
    }
}

/// Where the nodes' sessions come from, and how one is killed.
pub trait Backend: Send + Sync + 'static {
    /// A session.
    type C: Coordinator;
    /// Opens a session.
    fn open(&self) -> Pin<Box<dyn Future<Output = Result<Self::C, CoordError>> + Send>>;
    /// Ends a session as the server does when its process dies.
    fn kill(&self, c: &Self::C) -> impl Future<Output = ()> + Send;
}

/// In memory, on the paused clock.
pub struct Mem(pub MemoryEnsemble);

impl Backend for Mem {
    type C = MemoryCoordinator;

    fn open(&self) -> Pin<Box<dyn Future<Output = Result<MemoryCoordinator, CoordError>> + Send>> {
        let c = self.0.connect(SESSION_TIMEOUT);
        Box::pin(async move { Ok(c) })
    }

    async fn kill(&self, c: &MemoryCoordinator) {
        c.expire();
    }
}

/// A node running in the test, and the session it uses now.
#[allow(dead_code)] // not every scenario reads every field
pub struct Member<C> {
    pub name: NodeName,
    pub session: Arc<Mutex<Option<C>>>,
    pub stop: watch::Sender<bool>,
    /// Its run, ending with how it stopped.
    pub handle: JoinHandle<Exit>,
}

impl<C: Clone> Member<C> {
    pub fn session(&self) -> C {
        self.session.lock().unwrap().clone().unwrap()
    }
}

/// How long a scenario waits for anything.
pub const LIMIT: Duration = Duration::from_secs(60);

pub struct Cluster<B: Backend> {
    pub backend: Arc<B>,
    pub observer: Mutex<B::C>,
    pub layout: Layout,
    pub runner: FakeRunner,
    pub runners: usize,
    pub backups: usize,
    pub heartbeat: Heartbeat,
    pub formation_timeout: Duration,
    /// The nodes' leave timeout, when not the default.
    pub leave_timeout: Option<Duration>,
}

impl Cluster<Mem> {
    pub fn new(runners: usize, backups: usize, work: Duration) -> Self {
        let ensemble = MemoryEnsemble::new();
        Cluster {
            observer: Mutex::new(ensemble.connect(SESSION_TIMEOUT)),
            backend: Arc::new(Mem(ensemble)),
            layout: Layout::new(GROUP).unwrap(),
            runner: FakeRunner {
                runs: Default::default(),
                work,
            },
            runners,
            backups,
            heartbeat: Heartbeat::new(Duration::from_millis(500), Duration::from_secs(2), 3)
                .unwrap(),
            formation_timeout: Duration::from_secs(5),
            leave_timeout: None,
        }
    }
}

impl<B: Backend> Cluster<B> {
    /// Starts node `c_<index>`.
    pub async fn start(&self, index: u32) -> Member<B::C> {
        let name: NodeName = format!("c_{index}").parse().unwrap();
        let session = Arc::new(Mutex::new(None));
        let (b, s) = (self.backend.clone(), session.clone());
        let connect: Connect<B::C> = Arc::new(move || {
            let (b, s) = (b.clone(), s.clone());
            Box::pin(async move {
                let c = b.open().await?;
                *s.lock().unwrap() = Some(c.clone());
                Ok(c)
            })
        });
        let mut cfg = NodeConfig::new(GROUP, name.clone(), self.runners, self.backups);
        cfg.heartbeat = self.heartbeat.clone();
        cfg.formation_timeout = self.formation_timeout;
        if let Some(t) = self.leave_timeout {
            cfg.leave_timeout = t;
        }
        let node = ClusterNode::start(connect, cfg, self.runner.clone())
            .await
            .unwrap();
        let (stop, rx) = watch::channel(false);
        let handle = tokio::spawn(async move { node.run(rx).await.unwrap() });
        Member {
            name,
            session,
            stop,
            handle,
        }
    }

    /// A crash: the process is gone, its session ends.
    pub async fn kill(&self, m: &Member<B::C>) {
        m.handle.abort();
        self.backend.kill(&m.session()).await;
    }

    /// The test's own session (reopened when an outage expired it).
    pub fn obs(&self) -> B::C {
        self.observer.lock().unwrap().clone()
    }

    /// Reads meta-data, riding out coordinator outages.
    async fn read<T: serde::de::DeserializeOwned>(&self, path: &str) -> (T, i32) {
        loop {
            match metadata::read::<T>(&self.obs(), path).await {
                Ok(Some(found)) => return found,
                Ok(None) => panic!("no meta-data at {path}"),
                Err(MetaError::Coord(e)) if e.is_retryable() => {}
                Err(MetaError::Coord(e)) if e.is_fatal() => {
                    if let Ok(c) = self.backend.open().await {
                        *self.observer.lock().unwrap() = c;
                    }
                }
                Err(e) => panic!("{path}: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn group(&self) -> GroupState {
        self.read(&self.layout.group_state()).await.0
    }

    pub async fn node_state(&self, name: &NodeName) -> NodeState {
        self.read(&self.layout.node_state(name)).await.0
    }

    pub async fn heartbeat(&self, name: &NodeName) -> Heartbeat {
        self.read(&self.layout.heartbeat(name)).await.0
    }

    pub async fn task(&self, name: &NodeName) -> (Task, i32) {
        self.read(&self.layout.task(name)).await
    }

    /// Gives a node a task of `items` items (as `submit` does to an idle Runner).
    pub async fn give(&self, name: &NodeName, items: usize) {
        let (_, v) = self.task(name).await;
        let task = Task {
            owner: Some(name.clone()),
            ..items_task(items, &name.to_string())
        };
        metadata::write(&self.obs(), &self.layout.task(name), &task, Some(v))
            .await
            .unwrap();
    }

    pub fn runs(&self) -> BTreeMap<String, u32> {
        self.runner.runs.lock().unwrap().clone()
    }

    /// Waits until the election made `runners` Runners.
    pub async fn elected(&self, runners: u32) {
        self.until("the election", LIMIT, || async {
            self.group().await.total_runner == runners
        })
        .await;
    }

    /// Waits until `name`'s task has `items` results recorded.
    pub async fn recorded(&self, name: &NodeName, items: usize) {
        self.until("progress", LIMIT, || async {
            self.task(name).await.0.result_detail.len() == items
        })
        .await;
    }

    /// Waits until `name`'s task is done.
    pub async fn finished(&self, name: &NodeName) {
        self.until(&format!("{name}'s task done"), LIMIT, || async {
            self.task(name).await.0.running_status == TaskState::Done
        })
        .await;
    }

    /// Waits until the Runners are exactly `runners`.
    pub async fn runners_become(&self, what: &str, runners: &[&str]) {
        self.until(what, LIMIT, || async {
            self.group().await.current_runner == names(runners)
        })
        .await;
    }

    /// Waits (on the paused clock) until `cond` holds, at most `limit`.
    pub async fn until<F, Fut>(&self, what: &str, limit: Duration, mut cond: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let start = tokio::time::Instant::now();
        while !cond().await {
            assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A task of `items` items with URLs unique to `tag`.
pub fn items_task(items: usize, tag: &str) -> Task {
    Task {
        running_content: (0..items)
            .map(|i| RunningContent::get(TaskId::Int(1), format!("http://127.0.0.1/{tag}/{i}")))
            .collect(),
        ..Task::default()
    }
}

/// Every URL ran once, except at most `in_flight` of them run twice.
pub fn each_ran_once<B: Backend>(c: &Cluster<B>, expected: usize, in_flight: usize) {
    let runs = c.runs();
    assert_eq!(runs.len(), expected, "{runs:?}");
    let twice = runs.values().filter(|&&r| r == 2).count();
    assert!(
        runs.values().all(|&r| r <= 2) && twice <= in_flight,
        "{runs:?}"
    );
}

pub fn n(s: &str) -> NodeName {
    s.parse().unwrap()
}

pub fn names(v: &[&str]) -> Vec<NodeName> {
    v.iter().map(|s| n(s)).collect()
}

/// Every item's result detail, by URL position, from a finished task.
pub fn recorded(t: &Task) -> usize {
    t.result_detail.len()
}

#[allow(dead_code)]
pub fn session_of(c: &MemoryCoordinator) -> u64 {
    c.session_id()
}

#[allow(dead_code)]
pub async fn exists(c: &impl Coordinator, p: &str) -> bool {
    c.exists(p).await.unwrap().is_some()
}
