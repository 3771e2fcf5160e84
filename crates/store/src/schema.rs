//! The tables, written once for both backends (their SQL differs only in
//! a few types and in how the seen set is indexed), and their versions.
//!
//! A job's URLs live in two tables, each shaped for how it is written:
//! - `urls`: one row per admitted URL (the seen set and the frontier),
//!   appended in admission order, one per (job, key); `state` says
//!   whether it waits in the store (0), is held by a crawler (1) or is
//!   done (2), and `seq` where its result is.
//! - `results`: one row per finished URL with its record, appended in the
//!   order results were stored (`seq`).
//!
//! Finishing a page rewrites one small row, near the other rows admitted
//! at the same time, and appends its record: records never grow rows in
//! place.
//!
//! How a key finds its row differs:
//! - PostgreSQL: a unique index `urls (job, key)`, maintained row by row.
//! - SQLite (version 2): `url_keys`, a table ordered by (job, key) that
//!   names each row's id, written in bulk: the keys of a job's newest rows
//!   (past `merged.upto`) are held in memory by the writing connection and
//!   merged into `url_keys` in sorted runs of thousands
//!   ([`crate::sqlite`]'s `keys` module). Keys are random, so a unique index
//!   maintained row by row writes a different index page for nearly every
//!   new URL: in a commit of 250 new URLs, ~210 pages of 4 KiB to the log.
//!   Version 1 files had that index and are migrated on open.

/// The schema version of PostgreSQL databases this build writes.
pub const PG_VERSION: i64 = 1;

/// The schema version of SQLite files this build writes.
pub const SQLITE_VERSION: i64 = 2;

/// Statements creating the tables of both backends, with `{blob}` and
/// `{serial}` to fill in.
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
    "CREATE INDEX IF NOT EXISTS urls_queued ON urls (job, auth, depth) WHERE state = 0",
    "CREATE TABLE IF NOT EXISTS results (
        job BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        failed SMALLINT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (job, seq))",
];

/// PostgreSQL finds a key's row through a unique index.
const PG_KEYS: &[&str] = &["CREATE UNIQUE INDEX IF NOT EXISTS urls_key ON urls (job, key)"];

/// SQLite finds a key's row through `url_keys`, merged in bulk, and the
/// rows past `merged.upto`, which the writing connection holds in memory.
const SQLITE_KEYS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS url_keys (
        job INTEGER NOT NULL,
        key BLOB NOT NULL,
        id INTEGER NOT NULL,
        PRIMARY KEY (job, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS merged (
        job INTEGER PRIMARY KEY,
        upto INTEGER NOT NULL)",
];

/// Turns a SQLite file of version 1 (a unique index on `urls (job, key)`)
/// into version 2, after [`sqlite`] created the new tables.
pub const SQLITE_FROM_V1: &[&str] = &[
    "INSERT OR IGNORE INTO url_keys (job, key, id) SELECT job, key, id FROM urls ORDER BY job, key",
    "INSERT OR REPLACE INTO merged (job, upto) SELECT job, max(id) FROM urls GROUP BY job",
    "DROP INDEX IF EXISTS urls_key",
];

fn fill(tables: &[&[&str]], blob: &str, serial: &str) -> Vec<String> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .map(|t| t.replace("{blob}", blob).replace("{serial}", serial))
        .collect()
}

/// The statements creating PostgreSQL's tables.
pub fn postgres() -> Vec<String> {
    fill(&[TABLES, PG_KEYS], "BYTEA", "BIGSERIAL")
}

/// The statements creating SQLite's tables.
pub fn sqlite() -> Vec<String> {
    fill(&[TABLES, SQLITE_KEYS], "BLOB", "INTEGER")
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
