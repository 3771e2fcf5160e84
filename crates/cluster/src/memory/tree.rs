//! The in-memory tree: nodes, their versions and owners, and the events a
//! change raises. Pure data, no sessions or time: a transaction runs on a
//! copy and replaces the tree only when every operation succeeded.

use std::collections::{BTreeMap, BTreeSet};

use crate::coordinator::{CreateMode, Op, OpResult, Version, WatchEvent};
use crate::error::{CoordError, Result};
use crate::path;

/// One node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Znode {
    pub data: Vec<u8>,
    pub version: Version,
    /// The session of an ephemeral node.
    pub owner: Option<u64>,
    /// The next sequential suffix for a child.
    next_seq: u32,
    children: BTreeSet<String>,
}

/// A change that watches may be waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Fires the data watches of a path.
    Data(String, WatchEvent),
    /// Fires the child watches of a path.
    Children(String, WatchEvent),
}

/// Every node, by path.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    nodes: BTreeMap<String, Znode>,
}

impl Default for Tree {
    fn default() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_owned(), Znode::default());
        Tree { nodes }
    }
}

fn version_matches(path: &str, node: &Znode, expected: Option<Version>) -> Result<()> {
    match expected {
        Some(v) if v != node.version => Err(CoordError::BadVersion(path.to_owned())),
        _ => Ok(()),
    }
}

impl Tree {
    pub fn get(&self, path: &str) -> Option<&Znode> {
        self.nodes.get(path)
    }

    pub fn children(&self, path: &str) -> Result<Vec<String>> {
        self.nodes
            .get(path)
            .map(|n| n.children.iter().cloned().collect())
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))
    }

    /// Paths of the ephemeral nodes of a session.
    pub fn owned_by(&self, session: u64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.owner == Some(session))
            .map(|(p, _)| p.clone())
            .collect()
    }

    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        session: u64,
        changes: &mut Vec<Change>,
    ) -> Result<String> {
        path::check(path)?;
        path::check_value(path, data)?;
        let parent_path = path::parent(path).ok_or_else(|| CoordError::NodeExists("/".into()))?;
        let parent = self
            .nodes
            .get_mut(parent_path)
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))?;
        if parent.owner.is_some() {
            return Err(CoordError::NoChildrenForEphemerals(path.to_owned()));
        }
        let full = if mode.is_sequential() {
            let p = format!("{path}{:010}", parent.next_seq);
            parent.next_seq += 1;
            p
        } else {
            path.to_owned()
        };
        let name = full[parent_path.len()..].trim_start_matches('/').to_owned();
        if parent.children.contains(&name) {
            return Err(CoordError::NodeExists(full));
        }
        parent.children.insert(name);
        let parent_path = parent_path.to_owned();
        self.nodes.insert(
            full.clone(),
            Znode {
                data: data.to_vec(),
                owner: mode.is_ephemeral().then_some(session),
                ..Znode::default()
            },
        );
        changes.push(Change::Data(full.clone(), WatchEvent::Created));
        changes.push(Change::Children(parent_path, WatchEvent::ChildrenChanged));
        Ok(full)
    }

    pub fn set(
        &mut self,
        path: &str,
        data: &[u8],
        expected: Option<Version>,
        changes: &mut Vec<Change>,
    ) -> Result<Version> {
        path::check(path)?;
        path::check_value(path, data)?;
        let node = self
            .nodes
            .get_mut(path)
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))?;
        version_matches(path, node, expected)?;
        node.data = data.to_vec();
        node.version += 1;
        changes.push(Change::Data(path.to_owned(), WatchEvent::DataChanged));
        Ok(node.version)
    }

    pub fn delete(
        &mut self,
        path: &str,
        expected: Option<Version>,
        changes: &mut Vec<Change>,
    ) -> Result<()> {
        path::check(path)?;
        let parent_path = path::parent(path).ok_or_else(|| CoordError::InvalidPath {
            path: path.to_owned(),
            reason: "the root cannot be deleted",
        })?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| CoordError::NoNode(path.to_owned()))?;
        version_matches(path, node, expected)?;
        if !node.children.is_empty() {
            return Err(CoordError::NotEmpty(path.to_owned()));
        }
        self.nodes.remove(path);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent
                .children
                .remove(path[parent_path.len()..].trim_start_matches('/'));
        }
        changes.push(Change::Data(path.to_owned(), WatchEvent::Deleted));
        changes.push(Change::Children(path.to_owned(), WatchEvent::Deleted));
        changes.push(Change::Children(
            parent_path.to_owned(),
            WatchEvent::ChildrenChanged,
        ));
        Ok(())
    }

    /// Runs a transaction on a copy; replaces `self` only if all succeed.
    pub fn multi(
        &mut self,
        ops: &[Op],
        session: u64,
        changes: &mut Vec<Change>,
    ) -> Result<Vec<OpResult>> {
        let mut scratch = self.clone();
        let mut pending = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            results.push(match op {
                Op::Check { path, version } => {
                    path::check(path)?;
                    let node = scratch
                        .nodes
                        .get(path)
                        .ok_or_else(|| CoordError::NoNode(path.clone()))?;
                    version_matches(path, node, Some(*version))?;
                    OpResult::Check
                }
                Op::Create { path, data, mode } => {
                    OpResult::Create(scratch.create(path, data, *mode, session, &mut pending)?)
                }
                Op::Set {
                    path,
                    data,
                    version,
                } => OpResult::Set(scratch.set(path, data, *version, &mut pending)?),
                Op::Delete { path, version } => {
                    scratch.delete(path, *version, &mut pending)?;
                    OpResult::Delete
                }
            });
        }
        *self = scratch;
        changes.extend(pending);
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_transaction_changes_nothing_and_raises_nothing() {
        let mut t = Tree::default();
        let mut changes = Vec::new();
        t.create("/a", b"1", CreateMode::Persistent, 1, &mut changes)
            .unwrap();
        changes.clear();
        let err = t
            .multi(
                &[
                    Op::Create {
                        path: "/b".into(),
                        data: vec![],
                        mode: CreateMode::Persistent,
                    },
                    Op::Check {
                        path: "/a".into(),
                        version: 7,
                    },
                ],
                1,
                &mut changes,
            )
            .unwrap_err();
        assert_eq!(err, CoordError::BadVersion("/a".into()));
        assert!(t.get("/b").is_none());
        assert!(changes.is_empty());
    }

    #[test]
    fn sequential_names_count_per_parent() {
        let mut t = Tree::default();
        let mut c = Vec::new();
        t.create("/q", b"", CreateMode::Persistent, 1, &mut c)
            .unwrap();
        let a = t
            .create("/q/n-", b"", CreateMode::PersistentSequential, 1, &mut c)
            .unwrap();
        let b = t
            .create("/q/n-", b"", CreateMode::EphemeralSequential, 1, &mut c)
            .unwrap();
        assert_eq!(
            (a.as_str(), b.as_str()),
            ("/q/n-0000000000", "/q/n-0000000001")
        );
        assert_eq!(t.owned_by(1), vec![b.clone()]);
        assert_eq!(
            t.create(&format!("{b}/x"), b"", CreateMode::Persistent, 1, &mut c),
            Err(CoordError::NoChildrenForEphemerals(format!("{b}/x")))
        );
    }
}
