//! SmoothCrawler-Cluster's meta-data objects stored as JSON in coordinator nodes, at the
//! paths of [`Layout`](crate::Layout): typed reads and versioned writes,
//! with a clear error (naming the node) for a value that does not decode.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::coordinator::{Coordinator, CreateMode, Version};
use crate::error::CoordError;

/// Why a meta-data object could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// The coordinator failed.
    #[error(transparent)]
    Coord(#[from] CoordError),
    /// The node holds something that is not this object.
    #[error("meta-data at {path} is not a valid {what}: {source}")]
    Decode {
        /// The node.
        path: String,
        /// The object expected.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
}

fn short_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("meta-data objects always serialize")
}

/// Decodes an object read from the node at `path`.
pub fn decode<T: DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T, MetaError> {
    serde_json::from_slice(bytes).map_err(|source| MetaError::Decode {
        path: path.to_owned(),
        what: short_name::<T>(),
        source,
    })
}

/// Reads an object and its version; `None` when the node does not exist.
pub async fn read<T: DeserializeOwned>(
    c: &impl Coordinator,
    path: &str,
) -> Result<Option<(T, Version)>, MetaError> {
    match c.get(path).await {
        Ok((bytes, version)) => Ok(Some((decode(path, &bytes)?, version))),
        Err(CoordError::NoNode(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes an object if the node still has version `expected` (any version
/// when `None`); returns the new version.
pub async fn write<T: Serialize>(
    c: &impl Coordinator,
    path: &str,
    value: &T,
    expected: Option<Version>,
) -> Result<Version, MetaError> {
    Ok(c.set(path, &encode(value), expected).await?)
}

/// Creates a node holding an object.
pub async fn create<T: Serialize>(
    c: &impl Coordinator,
    path: &str,
    value: &T,
    mode: CreateMode,
) -> Result<String, MetaError> {
    Ok(c.create(path, &encode(value), mode).await?)
}
