//! The cluster protocol's scenarios on the in-memory coordinator with
//! tokio's paused clock: a kill is an expired session, a zombie a frozen
//! one; then the main scenarios again on a real ZooKeeper (`zookeeper`).
//! Several nodes run in one process, each with its own session.

mod harness;
mod scenarios;
mod stalled;
mod zookeeper;
