//! The tables, written once for both backends (their SQL differs only in
//! a few types), and their version.
//!
//! A job's URLs live in two tables, each shaped for how it is written:
//! - `urls`: one row per admitted URL (the seen set and the frontier),
//!   appended in admission order, unique by (job, key); `state` says
//!   whether it waits in the store (0), is held by a crawler (1) or is
//!   done (2), and `seq` where its result is.
//! - `results`: one row per finished URL with its record, appended in the
//!   order results were stored (`seq`).
//!
//! Finishing a page rewrites one small row, found by key, near the other
//! rows admitted at the same time, and appends its record: records never
//! grow rows in place.

/// The schema version this build writes.
pub const VERSION: i64 = 1;

/// Statements creating version 1, with `{blob}` and `{serial}` to fill in.
const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS crawlkeeper_version (version BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jobs (
        id {serial} PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        seeds TEXT NOT NULL,
        options TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS authorities (
        job BIGINT NOT NULL,
        id BIGINT NOT NULL,
        authority TEXT NOT NULL,
        state TEXT,
        PRIMARY KEY (job, id),
        UNIQUE (job, authority))",
    "CREATE TABLE IF NOT EXISTS urls (
        id {serial} PRIMARY KEY,
        job BIGINT NOT NULL,
        key {blob} NOT NULL,
        auth BIGINT NOT NULL,
        url TEXT NOT NULL,
        depth INTEGER NOT NULL,
        parent TEXT,
        chain TEXT,
        state SMALLINT NOT NULL,
        seq BIGINT)",
    "CREATE UNIQUE INDEX IF NOT EXISTS urls_key ON urls (job, key)",
    "CREATE INDEX IF NOT EXISTS urls_queued ON urls (job, auth, depth) WHERE state = 0",
    "CREATE TABLE IF NOT EXISTS results (
        job BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        failed SMALLINT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (job, seq))",
];

/// The statements for one backend.
pub fn statements(blob: &str, serial: &str) -> Vec<String> {
    TABLES
        .iter()
        .map(|t| t.replace("{blob}", blob).replace("{serial}", serial))
        .collect()
}

/// Row states of `urls`.
pub mod state {
    /// Admitted, waiting in the store.
    pub const QUEUED: i16 = 0;
    /// Admitted and held in a crawler's memory.
    pub const LOADED: i16 = 1;
    /// Finished; its record is in `results`.
    pub const DONE: i16 = 2;
}
