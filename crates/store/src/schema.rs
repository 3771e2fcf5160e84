//! The tables, written once for both backends (their SQL differs only in
//! a few types), and their version.

/// The schema version this build writes.
pub const VERSION: i64 = 1;

/// Statements creating version 1, with `{blob}` and `{serial}` to fill in.
/// Rows are large (a record is a few hundred bytes), so they live in a
/// plain table with a unique index on (job, key) rather than in a
/// clustered one.
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
        job BIGINT NOT NULL,
        key {blob} NOT NULL,
        auth BIGINT NOT NULL,
        url TEXT NOT NULL,
        depth INTEGER NOT NULL,
        parent TEXT,
        chain TEXT,
        state SMALLINT NOT NULL,
        seq BIGINT,
        failed SMALLINT,
        record TEXT)",
    "CREATE UNIQUE INDEX IF NOT EXISTS urls_key ON urls (job, key)",
    "CREATE INDEX IF NOT EXISTS urls_queued ON urls (job, auth, depth) WHERE state = 0",
    "CREATE INDEX IF NOT EXISTS urls_done ON urls (job, seq) WHERE state = 2",
];

/// Row states of `urls`.
pub mod state {
    /// Admitted, waiting in the store.
    pub const QUEUED: i64 = 0;
    /// Admitted and held in a crawler's memory.
    pub const LOADED: i64 = 1;
    /// Finished, with its record.
    pub const DONE: i64 = 2;
}

/// The statements for one backend.
pub fn statements(blob: &str, serial: &str) -> Vec<String> {
    TABLES
        .iter()
        .map(|t| t.replace("{blob}", blob).replace("{serial}", serial))
        .collect()
}
