//! Performing the machine's coordinator calls, in order, stopping at
//! the first error. Mechanics only: what to call was decided by the
//! machine.

use super::*;
use crate::coordinator::CreateMode;
use crate::lock::Lock;
use crate::protocol::machine::{Call, Reply};

impl<C: Coordinator, R: TaskRunner> ClusterNode<C, R> {
    pub(super) async fn batch(&mut self, calls: Vec<Call>) -> Result<Vec<Reply>, CoordError> {
        let mut replies = Vec::with_capacity(calls.len());
        for call in calls {
            replies.push(self.call(call).await?);
        }
        Ok(replies)
    }

    async fn call(&mut self, call: Call) -> Result<Reply, CoordError> {
        let c = &self.coord;
        Ok(match call {
            Call::Lock { dir, timeout } => {
                let guard = Lock::new(c.clone(), dir).acquire(timeout).await?;
                self.lock = Some(guard);
                Reply::Done
            }
            Call::Unlock => {
                if let Some(guard) = self.lock.take() {
                    guard.release().await?;
                }
                Reply::Done
            }
            Call::CreateAll(path) => {
                c.create_all(&path).await?;
                Reply::Done
            }
            Call::Get(path) => Reply::Value(get(c, &path).await?),
            Call::GetOrCreate { path, data } => loop {
                if let Some(found) = get(c, &path).await? {
                    break Reply::Value(Some(found));
                }
                match c.create(&path, &data, CreateMode::Persistent).await {
                    Ok(_) => break Reply::Value(Some((data, 0))),
                    Err(CoordError::NodeExists(_)) => continue,
                    Err(e) => return Err(e),
                }
            },
            Call::GetAndWatch(path) => {
                let (value, watch) = c.get_and_watch(&path).await?;
                self.watch = Some((path, watch));
                Reply::Value(value)
            }
            Call::Exists(path) => Reply::Exists(c.exists(&path).await?),
            Call::Children(path) => Reply::Children(c.children(&path).await?),
            Call::Set {
                path,
                data,
                version,
            } => Reply::Version(c.set(&path, &data, version).await?),
            Call::Put { path, data } => match c.set(&path, &data, None).await {
                Ok(v) => Reply::Version(v),
                Err(CoordError::NoNode(_)) => {
                    c.create(&path, &data, CreateMode::Persistent).await?;
                    Reply::Version(0)
                }
                Err(e) => return Err(e),
            },
            Call::Ephemeral(path) => loop {
                match c.create(&path, b"", CreateMode::Ephemeral).await {
                    Ok(_) => break Reply::Done,
                    // An earlier session's node, not yet expired.
                    Err(CoordError::NodeExists(_)) => match c.delete(&path, None).await {
                        Ok(()) | Err(CoordError::NoNode(_)) => {}
                        Err(e) => return Err(e),
                    },
                    Err(e) => return Err(e),
                }
            },
            Call::Multi(ops) => Reply::Multi(c.multi(&ops).await?),
            Call::Close => {
                c.close().await?;
                Reply::Done
            }
        })
    }
}

async fn get(
    c: &impl Coordinator,
    path: &str,
) -> Result<Option<(Vec<u8>, crate::Version)>, CoordError> {
    match c.get(path).await {
        Ok(found) => Ok(Some(found)),
        Err(CoordError::NoNode(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
