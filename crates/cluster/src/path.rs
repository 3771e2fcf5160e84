//! Coordinator paths: checked the same way for every backend, and the
//! layout of a group's meta-data, like SmoothCrawler-Cluster's
//! (`/crawlkeeper/<group>/node/<name>/{state,task,heartbeat}`,
//! `/crawlkeeper/<group>/group/state`).

use std::fmt;
use std::str::FromStr;

use crawlkeeper_model::cluster::{NodeName, name_problem};

use crate::error::{CoordError, Result};

/// A group's name: one segment of the coordinator's paths
/// (`/crawlkeeper/<group>/…`), by the rule every name follows
/// ([`name_problem`]: 1 to 64 bytes of `[A-Za-z0-9._-]`, not `.` or `..`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName(String);

/// A group name refused, and why (the name itself is not repeated: the
/// caller shows it as it sees fit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid group name: {0}")]
pub struct BadGroupName(pub &'static str);

impl GroupName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for GroupName {
    type Err = BadGroupName;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match name_problem(s) {
            Some(why) => Err(BadGroupName(why)),
            None => Ok(GroupName(s.to_owned())),
        }
    }
}

impl fmt::Display for GroupName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for GroupName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The largest value a node may hold. ZooKeeper refuses packets above
/// about 1 MiB by dropping the connection; we refuse earlier, with a clear
/// error, on every backend.
pub const MAX_VALUE_BYTES: usize = 1_000_000;

/// Checks an absolute path: `/a/b`, no trailing `/`, no empty, `.` or `..`
/// segment, no control character. `/` itself is valid.
pub fn check(path: &str) -> Result<()> {
    let bad = |reason| {
        Err(CoordError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return bad("must start with '/'");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return bad("must not end with '/'");
    }
    for segment in path[1..].split('/') {
        if segment.is_empty() {
            return bad("empty segment");
        }
        if segment == "." || segment == ".." {
            return bad("relative segment");
        }
        if segment.chars().any(|c| c.is_control()) {
            return bad("control character");
        }
    }
    Ok(())
}

/// Checks a value's size against [`MAX_VALUE_BYTES`].
pub fn check_value(path: &str, data: &[u8]) -> Result<()> {
    if data.len() > MAX_VALUE_BYTES {
        return Err(CoordError::TooLarge {
            path: path.to_owned(),
            size: data.len(),
            max: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// The parent of a path (`/a/b` → `/a`, `/a` → `/`); `None` for `/`.
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// `parent` + `/` + `child`.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// Where a group's meta-data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: String,
}

impl Layout {
    /// The layout of `group` under `/crawlkeeper`.
    /// A name that breaks the rule ([`GroupName`]) is refused.
    pub fn new(group: &str) -> Result<Self> {
        let root = format!("/crawlkeeper/{group}");
        if let Some(reason) = name_problem(group) {
            return Err(CoordError::InvalidPath { path: root, reason });
        }
        check(&root)?;
        Ok(Layout { root })
    }

    /// `/crawlkeeper/<group>`.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// `/crawlkeeper/<group>/group`: the GroupState and its lock.
    pub fn group_dir(&self) -> String {
        format!("{}/group", self.root)
    }

    /// `/crawlkeeper/<group>/group/state`: the GroupState.
    pub fn group_state(&self) -> String {
        format!("{}/group/state", self.root)
    }

    /// `/crawlkeeper/<group>/group/lock`: the lock GroupState is written under.
    pub fn group_lock(&self) -> String {
        format!("{}/group/lock", self.root)
    }

    /// `/crawlkeeper/<group>/node`: one child per node.
    pub fn nodes(&self) -> String {
        format!("{}/node", self.root)
    }

    /// `/crawlkeeper/<group>/node/<name>`.
    pub fn node(&self, name: &NodeName) -> String {
        format!("{}/node/{name}", self.root)
    }

    /// `…/node/<name>/session`: ephemeral, there while the node's session lives.
    pub fn session(&self, name: &NodeName) -> String {
        format!("{}/session", self.node(name))
    }

    /// `/crawlkeeper/<group>/queue`: tasks waiting for an idle Runner.
    pub fn queue(&self) -> String {
        format!("{}/queue", self.root)
    }

    /// `…/node/<name>/state`: the NodeState.
    pub fn node_state(&self, name: &NodeName) -> String {
        format!("{}/state", self.node(name))
    }

    /// `…/node/<name>/task`: the Task.
    pub fn task(&self, name: &NodeName) -> String {
        format!("{}/task", self.node(name))
    }

    /// `…/node/<name>/processors`: the processors the node runs, by name
    /// (what jobs may `--use` on it).
    pub fn processors(&self, name: &NodeName) -> String {
        format!("{}/processors", self.node(name))
    }

    /// `…/node/<name>/heartbeat`: the Heartbeat.
    pub fn heartbeat(&self, name: &NodeName) -> String {
        format!("{}/heartbeat", self.node(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked() {
        for ok in ["/", "/a", "/a/b-1", "/crawlkeeper/g/node/c_1/state"] {
            check(ok).unwrap();
        }
        for bad in ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/..", "/a\n"] {
            assert!(
                matches!(check(bad), Err(CoordError::InvalidPath { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), None);
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }

    #[test]
    fn the_layout_is_smoothcrawler_clusters() {
        let l = Layout::new("sc-crawler-cluster").unwrap();
        let n: NodeName = "sc-crawler_1".parse().unwrap();
        assert_eq!(
            l.group_state(),
            "/crawlkeeper/sc-crawler-cluster/group/state"
        );
        assert_eq!(
            l.node_state(&n),
            "/crawlkeeper/sc-crawler-cluster/node/sc-crawler_1/state"
        );
        assert_eq!(
            l.task(&n),
            "/crawlkeeper/sc-crawler-cluster/node/sc-crawler_1/task"
        );
        assert_eq!(
            l.heartbeat(&n),
            "/crawlkeeper/sc-crawler-cluster/node/sc-crawler_1/heartbeat"
        );
        for bad in ["a/b", "", ".", "..", "../x", "a b", &"g".repeat(65)] {
            assert!(Layout::new(bad).is_err(), "{bad:?}");
            assert!(bad.parse::<GroupName>().is_err(), "{bad:?}");
        }
        let g: GroupName = "sc-crawler-cluster".parse().unwrap();
        assert_eq!(Layout::new(g.as_str()).unwrap(), l);
    }

    #[test]
    fn values_above_the_limit_are_refused() {
        check_value("/a", &vec![0; MAX_VALUE_BYTES]).unwrap();
        let err = check_value("/a", &vec![0; MAX_VALUE_BYTES + 1]).unwrap_err();
        assert!(err.to_string().contains("the limit is 1000000"), "{err}");
    }
}
