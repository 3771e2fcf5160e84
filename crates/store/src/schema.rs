//! The tables, written once for both backends (their SQL differs only in
//! a few types), and their version.
//!
//! A job's URLs live in three tables, each shaped for how it is written:
//! - `seen`: one small row per admitted URL (the seen set), keyed by
//!   (job, key); `seq` is set when the URL's result is stored, which makes
//!   storing a result idempotent.
//! - `frontier`: what it takes to fetch each admitted URL, appended in
//!   admission order; `loaded` tells whether a crawler holds it in memory.
//!   Rows of finished URLs are removed when a run resumes.
//! - `results`: one row per finished URL with its record, appended in the
//!   order results were stored (`seq`).
//!
//! Finishing a page thus touches one small row and appends one, instead of
//! rewriting a large row somewhere in a large table.

/// The schema version this build writes.
pub const VERSION: i64 = 1;

/// Statements creating version 1, with `{blob}`, `{serial}` and `{small}`
/// (a clause for tables of small rows) to fill in.
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
    "CREATE TABLE IF NOT EXISTS seen (
        job BIGINT NOT NULL,
        key {blob} NOT NULL,
        seq BIGINT,
        PRIMARY KEY (job, key)){small}",
    "CREATE TABLE IF NOT EXISTS frontier (
        id {serial} PRIMARY KEY,
        job BIGINT NOT NULL,
        key {blob} NOT NULL,
        auth BIGINT NOT NULL,
        url TEXT NOT NULL,
        depth INTEGER NOT NULL,
        parent TEXT,
        chain TEXT,
        loaded SMALLINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS frontier_queued ON frontier (job, auth, depth) WHERE loaded = 0",
    "CREATE INDEX IF NOT EXISTS frontier_job ON frontier (job)",
    "CREATE TABLE IF NOT EXISTS results (
        job BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        failed SMALLINT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (job, seq))",
];

/// The statements for one backend.
pub fn statements(blob: &str, serial: &str, small: &str) -> Vec<String> {
    TABLES
        .iter()
        .map(|t| {
            t.replace("{blob}", blob)
                .replace("{serial}", serial)
                .replace("{small}", small)
        })
        .collect()
}
