//! What a running crawl and a cluster node show their operators, from the
//! same binary: Prometheus metrics in the text format (`/metrics`), a
//! self-contained status page (`/`) and its JSON API (`/api/status`).
//! Read-only; bound to loopback unless the operator says otherwise, and
//! then behind a token.
//!
//! | module | what it does |
//! |---|---|
//! | [`prom`] | the Prometheus text format, and a crawl's metrics in it |
//! | [`server`] | the HTTP server: routes, the token, the bind rules, its connections |
//! | [`head`] | the request head, parsed; the `Host` rule |
//! | [`status_page`] | the status page (HTML, CSS and script in one file) |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod head;
pub mod prom;
pub mod server;
pub mod status_page;

pub use server::{BindError, Listen, Source, serve};
