//! What every node of a group must agree on, checked before a node joins:
//! the group's shape (`--runners`, `--backups`), kept beside GroupState at
//! `/crawlkeeper/<group>/group/settings` by the first node; and that no
//! live node has this node's name.

use std::time::Duration;

use crawlkeeper_cluster::{CoordError, Coordinator, CreateMode, Layout, MetaError, metadata};
use crawlkeeper_model::cluster::{Heartbeat, NodeName};
use serde::{Deserialize, Serialize};

/// The shape every node of a group is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSettings {
    /// Runners elected.
    pub runners: u32,
    /// Backup Runners expected.
    pub backups: u32,
}

/// Why a node may not join.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The group was formed with another shape.
    #[error(
        "group {group} runs with --runners {} --backups {}; this node was given --runners {} --backups {}",
        theirs.runners, theirs.backups, ours.runners, ours.backups
    )]
    Mismatch {
        /// The group.
        group: String,
        /// The group's settings.
        theirs: GroupSettings,
        /// This node's.
        ours: GroupSettings,
    },
    /// A live node has this name.
    #[error("a live node named {name} is in group {group} already; give this node another --name")]
    NameTaken {
        /// The group.
        group: String,
        /// The name.
        name: NodeName,
    },
    /// The coordinator failed.
    #[error(transparent)]
    Meta(#[from] MetaError),
}

fn settings_path(layout: &Layout) -> String {
    format!("{}/settings", layout.group_dir())
}

/// Records `ours` as the group's settings if it has none; refuses a node
/// whose settings differ from the group's.
pub async fn check_settings(
    c: &impl Coordinator,
    group: &str,
    ours: GroupSettings,
) -> Result<(), JoinError> {
    let layout = Layout::new(group).map_err(MetaError::from)?;
    let path = settings_path(&layout);
    c.create_all(&layout.group_dir())
        .await
        .map_err(MetaError::from)?;
    match metadata::create(c, &path, &ours, CreateMode::Persistent).await {
        Ok(_) => return Ok(()),
        Err(MetaError::Coord(CoordError::NodeExists(_))) => {}
        Err(e) => return Err(e.into()),
    }
    let theirs = metadata::read::<GroupSettings>(c, &path)
        .await?
        .map(|(s, _)| s)
        .unwrap_or(ours);
    if theirs != ours {
        return Err(JoinError::Mismatch {
            group: group.to_owned(),
            theirs,
            ours,
        });
    }
    Ok(())
}

/// Refuses `name` when a live node has it: its session is there and its
/// heartbeat moves (a session left by a killed process of this name does
/// not beat, and is replaced when this node registers).
pub async fn check_name(
    c: &impl Coordinator,
    group: &str,
    name: &NodeName,
) -> Result<(), JoinError> {
    let layout = Layout::new(group).map_err(MetaError::from)?;
    let session = c
        .exists(&layout.session(name))
        .await
        .map_err(MetaError::from)?;
    if session.is_none() {
        return Ok(());
    }
    let path = layout.heartbeat(name);
    let Some((beat, first)) = metadata::read::<Heartbeat>(c, &path).await? else {
        return Ok(());
    };
    // Two of its beats, and a little more.
    let deadline = tokio::time::Instant::now() + beat.update_time * 2 + Duration::from_millis(200);
    loop {
        tokio::time::sleep(beat.update_time / 4).await;
        let now = metadata::read::<Heartbeat>(c, &path).await?;
        if now.is_some_and(|(_, v)| v != first) {
            return Err(JoinError::NameTaken {
                group: group.to_owned(),
                name: name.clone(),
            });
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(());
        }
    }
}
