//! The cluster crate's tests, in one test binary:
//!
//! | module | what it tests |
//! |---|---|
//! | [`conformance`] | one suite for every coordinator backend: in memory and on a real ZooKeeper |
//! | [`protocol`] | the cluster protocol's scenarios, in memory with a paused clock, then on ZooKeeper |
//! | [`zookeeper_restart`] | the coordinator across a restart of a real ZooKeeper server |
//! | [`zk_kill`] | relays that cut a node's ZooKeeper connection, as a kill does |

mod conformance;
mod protocol;
mod zk_kill;
mod zookeeper_restart;
