//! The cluster protocol's decisions, as pure code: no I/O, no clock of its
//! own (instants are passed in), so every rule is tested to the instant.
//! [`machine`] puts the rules together: a node's life as events in and
//! commands out, which the runtime ([`crate::node`]) performs.
//!
//! | module | decides |
//! |---|---|
//! | [`heart`] | whether a Runner is on time, late or dead, on the observer's monotonic clock |
//! | [`group`] | GroupState after an election, a late join, a fail-over, a death |
//! | [`roles`] | a member's duty, the judge of hearts, heirs of dead Runners, when to elect |
//! | [`task`] | a Task's progress: next item, recording once, take-over, acceptance |
//! | [`machine`] | a node's whole life as one state machine: events in, commands out |
//! | [`config`] | a node's settings |

pub mod config;
pub mod group;
pub mod heart;
pub mod machine;
pub mod roles;
pub mod task;
