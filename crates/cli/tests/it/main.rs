//! The end-to-end tests of the `crawlkeeper` binary, one module per
//! capability, in one test binary (one link of the whole stack instead of
//! one per file). `cargo test -p crawlkeeper-cli --test it MODULE::` runs
//! one module's tests. The tests that restart PostgreSQL are in a binary
//! of their own (`tests/restarts`): cargo runs test binaries one after
//! another, so a restart never cuts these tests' connections.

mod common;

mod browser;
mod cli;
mod cluster;
mod cluster_continuous;
mod cluster_faults;
mod cluster_leave;
mod cluster_politeness;
mod cluster_processors;
mod cluster_render;
mod cluster_requisites;
mod cluster_secrets;
mod cluster_view;
mod continuous;
mod cookies;
mod docs;
mod fields;
mod hostile_args;
mod html_as_browsers;
mod http_versions;
mod no_import_circles;
mod options_doc;
mod output_paths;
mod processors;
mod proxy;
mod proxy_tls;
mod recrawl;
mod render;
mod render_replay;
mod replay;
mod requisite_bounds;
mod requisites;
mod results_csv;
mod resume;
mod safety;
mod secrets;
mod shards;
mod sitemaps;
mod status_server;
mod tls;
mod view;
mod warc;
mod warc_export;
mod warc_fields;
