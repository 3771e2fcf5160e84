//! `ZkCoordinator`: the [`Coordinator`] on Apache ZooKeeper, through the
//! `zookeeper-client` crate. The client reconnects by itself within the
//! session; an expired session is reported on [`Coordinator::session_state`]
//! (the client also declares it expired on its own after 7/5 of the session
//! timeout without the server).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client as zk;

use crate::coordinator::{
    Coordinator, CreateMode, Op, OpResult, SessionState, Value, Version, Watch, WatchEvent,
};
use crate::error::{CoordError, Result};
use crate::path;

/// A ZooKeeper session.
#[derive(Clone)]
pub struct ZkCoordinator {
    /// `None` once closed.
    client: Arc<Mutex<Option<zk::Client>>>,
    chroot: Option<Arc<str>>,
    state: watch::Receiver<SessionState>,
    /// Kept so that the state never reads as closed while a clone lives.
    _state_tx: Arc<watch::Sender<SessionState>>,
}

/// Splits `host:port[,host:port…][/chroot]`.
fn parse_connect(connect: &str) -> Result<(&str, Option<&str>)> {
    let bad = |reason| CoordError::InvalidPath {
        path: connect.to_owned(),
        reason,
    };
    let (hosts, chroot) = match connect.find('/') {
        Some(i) => (&connect[..i], Some(&connect[i..])),
        None => (connect, None),
    };
    if hosts.is_empty() {
        return Err(bad("expected host:port[,host:port…][/chroot]"));
    }
    for host in hosts.split(',') {
        let ok = host
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !ok {
            return Err(bad("each server must be host:port, e.g. 127.0.0.1:2181"));
        }
    }
    if let Some(c) = chroot {
        path::check(c)?;
    }
    Ok((hosts, chroot.filter(|c| *c != "/")))
}

fn session_state(s: zk::SessionState) -> SessionState {
    match s {
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
            SessionState::Connected
        }
        zk::SessionState::Disconnected => SessionState::Suspended,
        zk::SessionState::Expired | zk::SessionState::AuthFailed => SessionState::Expired,
        zk::SessionState::Closed => SessionState::Closed,
    }
}

fn error(e: zk::Error, path: &str) -> CoordError {
    match &e {
        zk::Error::NoNode => CoordError::NoNode(path.to_owned()),
        zk::Error::NodeExists => CoordError::NodeExists(path.to_owned()),
        zk::Error::BadVersion => CoordError::BadVersion(path.to_owned()),
        zk::Error::NotEmpty => CoordError::NotEmpty(path.to_owned()),
        zk::Error::NoChildrenForEphemerals => CoordError::NoChildrenForEphemerals(path.to_owned()),
        zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Throttled => {
            CoordError::ConnectionLoss
        }
        // The client reports transport failures (a reset connection, no
        // response in time) this way: the session may well survive.
        zk::Error::UnexpectedError(_) | zk::Error::Custom(_) => {
            tracing::debug!(error = %e, "ZooKeeper transport error");
            CoordError::ConnectionLoss
        }
        zk::Error::SessionExpired | zk::Error::SessionMoved => CoordError::SessionExpired,
        zk::Error::ClientClosed => CoordError::Closed,
        other => CoordError::Backend(other.to_string()),
    }
}

fn watch(w: zk::OneshotWatcher) -> Watch {
    Watch::new(async move {
        let e = w.changed().await;
        match e.event_type {
            zk::EventType::NodeCreated => WatchEvent::Created,
            zk::EventType::NodeDataChanged => WatchEvent::DataChanged,
            zk::EventType::NodeDeleted => WatchEvent::Deleted,
            zk::EventType::NodeChildrenChanged => WatchEvent::ChildrenChanged,
            zk::EventType::Session => WatchEvent::Session(session_state(e.session_state)),
        }
    })
}

const fn create_options(mode: CreateMode) -> zk::CreateOptions<'static> {
    let mode = match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
    };
    mode.with_acls(zk::Acls::anyone_all())
}

impl ZkCoordinator {
    /// Opens a session on `host:port[,host:port…][/chroot]` (the chroot is
    /// created if missing) with this session timeout (the server may
    /// negotiate it into its `minSessionTimeout..maxSessionTimeout`).
    pub async fn connect(connect: &str, session_timeout: Duration) -> Result<Self> {
        let (hosts, chroot) = parse_connect(connect)?;
        let client = zk::Client::connector()
            .with_session_timeout(session_timeout)
            .connect(hosts)
            .await
            .map_err(|e| match e {
                zk::Error::NoHosts | zk::Error::Timeout | zk::Error::ConnectionLoss => {
                    CoordError::ConnectionLoss
                }
                other => {
                    CoordError::Backend(format!("cannot connect to ZooKeeper at {hosts}: {other}"))
                }
            })?;
        let client = match chroot {
            None => client,
            Some(root) => {
                client
                    .mkdir(root, &create_options(CreateMode::Persistent))
                    .await
                    .map_err(|e| error(e, root))?;
                client.chroot(root).map_err(|_| CoordError::InvalidPath {
                    path: root.to_owned(),
                    reason: "not a valid chroot",
                })?
            }
        };
        let mut watcher = client.state_watcher();
        let (tx, rx) = watch::channel(session_state(watcher.peek_state()));
        let tx = Arc::new(tx);
        let weak = Arc::downgrade(&tx);
        tokio::spawn(async move {
            loop {
                let s = session_state(watcher.changed().await);
                match s {
                    SessionState::Suspended => {
                        tracing::warn!("ZooKeeper connection lost; reconnecting")
                    }
                    SessionState::Connected => tracing::info!("ZooKeeper connection restored"),
                    SessionState::Expired => tracing::warn!("ZooKeeper session expired"),
                    SessionState::Closed => {}
                }
                let Some(tx) = weak.upgrade() else { return };
                tx.send_replace(s);
                if s.is_terminal() {
                    return;
                }
            }
        });
        Ok(ZkCoordinator {
            client: Arc::new(Mutex::new(Some(client))),
            chroot: chroot.map(Into::into),
            state: rx,
            _state_tx: tx,
        })
    }

    /// The negotiated session timeout.
    pub fn session_timeout(&self) -> Result<Duration> {
        Ok(self.client()?.session_timeout())
    }

    /// The session's id, as the server knows it.
    pub fn session_id(&self) -> Result<i64> {
        Ok(self.client()?.session().id().0)
    }

    /// The chroot this session works under, if any.
    pub fn chroot(&self) -> Option<&str> {
        self.chroot.as_deref()
    }

    /// Runs a request, failing it with `ConnectionLoss` as soon as the
    /// connection is down (the client would otherwise hold it until it
    /// reconnects or the session expires): like ZooKeeper's own
    /// `ConnectionLoss`, the request may or may not have been applied.
    async fn call<T>(
        &self,
        path: &str,
        request: impl Future<Output = Result<T, zk::Error>>,
    ) -> Result<T> {
        let mut state = self.state.clone();
        let down = |s: SessionState| match s {
            SessionState::Expired => CoordError::SessionExpired,
            SessionState::Closed => CoordError::Closed,
            _ => CoordError::ConnectionLoss,
        };
        let now = *state.borrow_and_update();
        if now != SessionState::Connected {
            return Err(down(now));
        }
        OPERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::select! {
            r = request => r.map_err(|e| error(e, path)),
            s = state.wait_for(|s| *s != SessionState::Connected) => {
                Err(s.map(|s| down(*s)).unwrap_or(CoordError::Closed))
            }
        }
    }

    fn client(&self) -> Result<zk::Client> {
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(CoordError::Closed)
    }
}

/// Requests sent to ZooKeeper by this process, every session included.
static OPERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Requests this process sent to ZooKeeper so far (a `multi` is one), for
/// its metrics.
pub fn operations() -> u64 {
    OPERATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

impl Coordinator for ZkCoordinator {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        path::check(path)?;
        path::check_value(path, data)?;
        let client = self.client()?;
        let (_, seq) = self
            .call(path, client.create(path, data, &create_options(mode)))
            .await?;
        Ok(if mode.is_sequential() {
            format!("{path}{seq}")
        } else {
            path.to_owned()
        })
    }

    async fn get(&self, path: &str) -> Result<Value> {
        path::check(path)?;
        let client = self.client()?;
        let (data, stat) = self.call(path, client.get_data(path)).await?;
        Ok((data, stat.version))
    }

    async fn exists(&self, path: &str) -> Result<Option<Version>> {
        path::check(path)?;
        let client = self.client()?;
        let stat = self.call(path, client.check_stat(path)).await?;
        Ok(stat.map(|s| s.version))
    }

    async fn set(&self, path: &str, data: &[u8], expected: Option<Version>) -> Result<Version> {
        path::check(path)?;
        path::check_value(path, data)?;
        let client = self.client()?;
        let stat = self
            .call(path, client.set_data(path, data, expected))
            .await?;
        Ok(stat.version)
    }

    async fn delete(&self, path: &str, expected: Option<Version>) -> Result<()> {
        path::check(path)?;
        let client = self.client()?;
        client
            .delete(path, expected)
            .await
            .map_err(|e| error(e, path))
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        path::check(path)?;
        let client = self.client()?;
        let mut children = client
            .list_children(path)
            .await
            .map_err(|e| error(e, path))?;
        children.sort();
        Ok(children)
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let client = self.client()?;
        let mut writer = client.new_multi_writer();
        for op in ops {
            path::check(op.path())?;
            let added = match op {
                Op::Check { path, version } => writer.add_check_version(path, *version),
                Op::Create { path, data, mode } => {
                    path::check_value(path, data)?;
                    writer.add_create(path, data, &create_options(*mode))
                }
                Op::Set {
                    path,
                    data,
                    version,
                } => {
                    path::check_value(path, data)?;
                    writer.add_set_data(path, data, *version)
                }
                Op::Delete { path, version } => writer.add_delete(path, *version),
            };
            added.map_err(|e| error(e, op.path()))?;
        }
        let commit = async {
            writer.commit().await.map_err(|e| match e {
                zk::MultiWriteError::OperationFailed { index, source } => {
                    (source, ops.get(index).map_or("/", Op::path))
                }
                zk::MultiWriteError::RequestFailed { source } => (source, "/"),
            })
        };
        let results = match self.call("/", async { Ok(commit.await) }).await? {
            Ok(results) => results,
            Err((source, path)) => return Err(error(source, path)),
        };
        results
            .into_iter()
            .map(|r| match r {
                zk::MultiWriteResult::Check => Ok(OpResult::Check),
                zk::MultiWriteResult::Delete => Ok(OpResult::Delete),
                zk::MultiWriteResult::Create { path, .. } => Ok(OpResult::Create(path)),
                zk::MultiWriteResult::SetData { stat } => Ok(OpResult::Set(stat.version)),
                other => Err(CoordError::Backend(format!(
                    "unexpected multi result {other:?}"
                ))),
            })
            .collect()
    }

    async fn get_and_watch(&self, path: &str) -> Result<(Option<Value>, Watch)> {
        path::check(path)?;
        let client = self.client()?;
        loop {
            match self.call(path, client.get_and_watch_data(path)).await {
                Ok((data, stat, w)) => return Ok((Some((data, stat.version)), watch(w))),
                Err(CoordError::NoNode(_)) => {}
                Err(e) => return Err(e),
            }
            match self.call(path, client.check_and_watch_stat(path)).await? {
                (None, w) => return Ok((None, watch(w))),
                (Some(_), _) => continue, // created in between: read it
            }
        }
    }

    async fn children_and_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        path::check(path)?;
        let client = self.client()?;
        let (mut children, _, w) = self.call(path, client.get_and_watch_children(path)).await?;
        children.sort();
        Ok((children, watch(w)))
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.state.clone()
    }

    async fn close(&self) -> Result<()> {
        // The session closes when its last client is dropped.
        self.client.lock().unwrap_or_else(|p| p.into_inner()).take();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_are_checked() {
        assert_eq!(
            parse_connect("127.0.0.1:2181").unwrap(),
            ("127.0.0.1:2181", None)
        );
        assert_eq!(
            parse_connect("a:1,b:2/crawl/x").unwrap(),
            ("a:1,b:2", Some("/crawl/x"))
        );
        assert_eq!(parse_connect("a:1/").unwrap(), ("a:1", None));
        for bad in ["", "/x", "a", "a:", ":1", "a:99999", "a:1,b", "a:1/x/"] {
            assert!(parse_connect(bad).is_err(), "{bad}");
        }
    }
}
