//! Nodes, a fake task runner that counts every run, and waits on the
//! paused clock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawlkeeper_cluster::node::{ClusterNode, Connect, ItemOutcome, NodeConfig, TaskRunner};
use crawlkeeper_cluster::{Coordinator, Layout, MemoryCoordinator, MemoryEnsemble, metadata};
use crawlkeeper_model::cluster::{
    GroupState, Heartbeat, NodeName, NodeState, RunningContent, Task, TaskId,
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

/// A node running in the test, and the session it uses now.
#[allow(dead_code)] // not every scenario reads every field
pub struct Member {
    pub name: NodeName,
    pub session: Arc<Mutex<Option<MemoryCoordinator>>>,
    pub stop: watch::Sender<bool>,
    pub handle: JoinHandle<()>,
}

impl Member {
    pub fn session(&self) -> MemoryCoordinator {
        self.session.lock().unwrap().clone().unwrap()
    }

    /// A crash: the process is gone, its session expires.
    pub fn kill(&self) {
        self.handle.abort();
        self.session().expire();
    }
}

pub struct Cluster {
    pub ensemble: MemoryEnsemble,
    pub observer: MemoryCoordinator,
    pub layout: Layout,
    pub runner: FakeRunner,
    pub runners: usize,
    pub backups: usize,
}

impl Cluster {
    pub fn new(runners: usize, backups: usize, work: Duration) -> Self {
        let ensemble = MemoryEnsemble::new();
        Cluster {
            observer: ensemble.connect(SESSION_TIMEOUT),
            ensemble,
            layout: Layout::new(GROUP).unwrap(),
            runner: FakeRunner {
                runs: Default::default(),
                work,
            },
            runners,
            backups,
        }
    }

    pub async fn start(&self, index: u32) -> Member {
        let name: NodeName = format!("c_{index}").parse().unwrap();
        let session = Arc::new(Mutex::new(None));
        let (e, s) = (self.ensemble.clone(), session.clone());
        let connect: Connect<MemoryCoordinator> = Arc::new(move || {
            let c = e.connect(SESSION_TIMEOUT);
            *s.lock().unwrap() = Some(c.clone());
            Box::pin(async move { Ok(c) })
        });
        let mut cfg = NodeConfig::new(GROUP, name.clone(), self.runners, self.backups);
        cfg.heartbeat =
            Heartbeat::new(Duration::from_millis(500), Duration::from_secs(2), 3).unwrap();
        cfg.formation_timeout = Duration::from_secs(5);
        let node = ClusterNode::start(connect, cfg, self.runner.clone())
            .await
            .unwrap();
        let (stop, rx) = watch::channel(false);
        let handle = tokio::spawn(async move {
            node.run(rx).await.unwrap();
        });
        Member {
            name,
            session,
            stop,
            handle,
        }
    }

    pub async fn group(&self) -> GroupState {
        metadata::read(&self.observer, &self.layout.group_state())
            .await
            .unwrap()
            .unwrap()
            .0
    }

    pub async fn node_state(&self, name: &NodeName) -> NodeState {
        metadata::read(&self.observer, &self.layout.node_state(name))
            .await
            .unwrap()
            .unwrap()
            .0
    }

    pub async fn heartbeat(&self, name: &NodeName) -> Heartbeat {
        metadata::read(&self.observer, &self.layout.heartbeat(name))
            .await
            .unwrap()
            .unwrap()
            .0
    }

    pub async fn task(&self, name: &NodeName) -> (Task, i32) {
        metadata::read(&self.observer, &self.layout.task(name))
            .await
            .unwrap()
            .unwrap()
    }

    /// Gives a node a task of `items` items (as `submit` does to an idle Runner).
    pub async fn give(&self, name: &NodeName, items: usize) {
        let (_, v) = self.task(name).await;
        let task = Task {
            owner: Some(name.clone()),
            ..items_task(items, &name.to_string())
        };
        metadata::write(&self.observer, &self.layout.task(name), &task, Some(v))
            .await
            .unwrap();
    }

    pub fn runs(&self) -> BTreeMap<String, u32> {
        self.runner.runs.lock().unwrap().clone()
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
            .map(|i| RunningContent {
                task_id: TaskId::Int(1),
                url: format!("http://127.0.0.1/{tag}/{i}"),
                method: "GET".into(),
                parameters: None,
                header: None,
                body: None,
            })
            .collect(),
        ..Task::default()
    }
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
