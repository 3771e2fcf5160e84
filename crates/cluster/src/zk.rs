//! `ZkCoordinator`: the [`Coordinator`] on Apache ZooKeeper, through the
//! `zookeeper-client` crate. The client reconnects by itself within the
//! session; an expired session is reported on [`Coordinator::session_state`]
//! (the client also declares it expired on its own after 7/5 of the session
//! timeout without the server).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client as zk;

use crate::coordinator::{
    Coordinator, CreateMode, Op, OpResult, SessionState, Version, Watch, WatchEvent,
};
use crate::error::{CoordError, Result};
use crate::path;

/// A ZooKeeper session.
#[derive(Clone)]
pub struct ZkCoordinator {
    /// `None` once closed.
    client: Arc<Mutex<Option<zk::Client>>>,
    hosts: Arc<str>,
    chroot: Option<Arc<str>>,
    state: watch::Receiver<SessionState>,
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
    match e {
        zk::Error::NoNode => CoordError::NoNode(path.to_owned()),
        zk::Error::NodeExists => CoordError::NodeExists(path.to_owned()),
        zk::Error::BadVersion => CoordError::BadVersion(path.to_owned()),
        zk::Error::NotEmpty => CoordError::NotEmpty(path.to_owned()),
        zk::Error::NoChildrenForEphemerals => CoordError::NoChildrenForEphemerals(path.to_owned()),
        zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Throttled => {
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
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    s = watcher.changed() => {
                        let s = session_state(s);
                        match s {
                            SessionState::Suspended => tracing::warn!("ZooKeeper connection lost; reconnecting"),
                            SessionState::Connected => tracing::info!("ZooKeeper connection restored"),
                            SessionState::Expired => tracing::warn!("ZooKeeper session expired"),
                            SessionState::Closed => {}
                        }
                        tx.send_replace(s);
                        if s.is_terminal() {
                            return;
                        }
                    }
                    () = tx.closed() => return,
                }
            }
        });
        Ok(ZkCoordinator {
            client: Arc::new(Mutex::new(Some(client))),
            hosts: hosts.into(),
            chroot: chroot.map(Into::into),
            state: rx,
        })
    }

    /// The negotiated session timeout.
    pub fn session_timeout(&self) -> Result<Duration> {
        Ok(self.client()?.session_timeout())
    }

    /// Ends this session from a second connection, as the server does when
    /// a session expires: its ephemeral nodes go and this client learns
    /// `Expired`. For tests and fault drills.
    pub async fn kill_session(&self) -> Result<()> {
        let session = self.client()?.session().clone();
        let other = zk::Client::connector()
            .with_session(session)
            .connect(&self.hosts)
            .await
            .map_err(|e| error(e, "/"))?;
        drop(other); // the last client of a session closes it
        Ok(())
    }

    /// The chroot this session works under, if any.
    pub fn chroot(&self) -> Option<&str> {
        self.chroot.as_deref()
    }

    fn client(&self) -> Result<zk::Client> {
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(CoordError::Closed)
    }
}

impl Coordinator for ZkCoordinator {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        path::check(path)?;
        path::check_value(path, data)?;
        let client = self.client()?;
        let (_, seq) = client
            .create(path, data, &create_options(mode))
            .await
            .map_err(|e| error(e, path))?;
        Ok(if mode.is_sequential() {
            format!("{path}{seq}")
        } else {
            path.to_owned()
        })
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Version)> {
        path::check(path)?;
        let client = self.client()?;
        let (data, stat) = client.get_data(path).await.map_err(|e| error(e, path))?;
        Ok((data, stat.version))
    }

    async fn exists(&self, path: &str) -> Result<Option<Version>> {
        path::check(path)?;
        let client = self.client()?;
        let stat = client.check_stat(path).await.map_err(|e| error(e, path))?;
        Ok(stat.map(|s| s.version))
    }

    async fn set(&self, path: &str, data: &[u8], expected: Option<Version>) -> Result<Version> {
        path::check(path)?;
        path::check_value(path, data)?;
        let client = self.client()?;
        let stat = client
            .set_data(path, data, expected)
            .await
            .map_err(|e| error(e, path))?;
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
        let results = writer.commit().await.map_err(|e| match e {
            zk::MultiWriteError::OperationFailed { index, source } => {
                error(source, ops.get(index).map_or("/", Op::path))
            }
            zk::MultiWriteError::RequestFailed { source } => error(source, "/"),
        })?;
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

    async fn get_and_watch(&self, path: &str) -> Result<(Option<(Vec<u8>, Version)>, Watch)> {
        path::check(path)?;
        let client = self.client()?;
        loop {
            match client.get_and_watch_data(path).await {
                Ok((data, stat, w)) => return Ok((Some((data, stat.version)), watch(w))),
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(error(e, path)),
            }
            match client.check_and_watch_stat(path).await {
                Ok((None, w)) => return Ok((None, watch(w))),
                Ok((Some(_), _)) => continue, // created in between: read it
                Err(e) => return Err(error(e, path)),
            }
        }
    }

    async fn children_and_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        path::check(path)?;
        let client = self.client()?;
        let (mut children, _, w) = client
            .get_and_watch_children(path)
            .await
            .map_err(|e| error(e, path))?;
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
