//! Where PostgreSQL's work goes in one run's database, per page: its
//! transactions, statements (calls, planning and execution time, rows,
//! WAL) from `pg_stat_statements`, and the rows and index entries its
//! tables were written from the database's own statistics. The server
//! keeps these per database, and each run has a fresh one, so nothing
//! needs resetting and another database's work cannot blur them.
//!
//! `pg_stat_statements` must be loaded by the server
//! (`shared_preload_libraries`); without it the statements' part is left
//! out and said so.

use anyhow::{Context, Result};

use super::lab::Database;

/// One statement's totals in a run's database.
#[derive(Debug, Clone)]
pub(super) struct Statement {
    /// Its text, whitespace folded, cut to 90 characters.
    pub text: String,
    pub calls: i64,
    /// Milliseconds spent planning it, in all.
    pub plan_ms: f64,
    /// Milliseconds spent executing it, in all.
    pub exec_ms: f64,
    pub rows: i64,
    pub wal_bytes: f64,
    pub wal_records: i64,
    pub wal_fpi: i64,
}

/// What one run's database did.
#[derive(Debug, Clone, Default)]
pub(super) struct Profile {
    /// Committed transactions.
    pub commits: i64,
    /// The statements, busiest first (empty without `pg_stat_statements`).
    pub statements: Vec<Statement>,
    /// Whether `pg_stat_statements` was there to read.
    pub statements_seen: bool,
    /// Rows inserted, updated (of which HOT) and deleted, all tables.
    pub inserted: i64,
    pub updated: i64,
    pub hot: i64,
    pub deleted: i64,
    /// Index entries written: each row inserted or updated without HOT
    /// adds one to every index of its table (an upper bound: a partial
    /// index takes only the rows its predicate keeps).
    pub index_entries: i64,
}

impl Profile {
    /// Reads the profile of `db` (its sessions ended: each flushes its
    /// statistics as it ends).
    pub(super) fn read(db: &Database) -> Result<Self> {
        let mut own = postgres::Client::connect(&db.url, postgres::NoTls)
            .with_context(|| format!("connecting to {}", db.name))?;
        let mut profile = Self::default();
        for row in own.query(
            "SELECT coalesce(n_tup_ins, 0), coalesce(n_tup_upd, 0), coalesce(n_tup_hot_upd, 0),
                    coalesce(n_tup_del, 0),
                    (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid)
             FROM pg_stat_user_tables t",
            &[],
        )? {
            let (ins, upd, hot, del, indexes): (i64, i64, i64, i64, i64) =
                (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
            profile.inserted += ins;
            profile.updated += upd;
            profile.hot += hot;
            profile.deleted += del;
            profile.index_entries += (ins + upd - hot) * indexes;
        }
        drop(own);
        let mut admin = postgres::Client::connect(&db.admin, postgres::NoTls)
            .with_context(|| format!("connecting to {}", db.admin))?;
        profile.commits = admin
            .query_one(
                "SELECT coalesce(xact_commit, 0) FROM pg_stat_database WHERE datname = $1",
                &[&db.name],
            )?
            .get(0);
        let loaded: String = admin
            .query_one("SHOW shared_preload_libraries", &[])?
            .get(0);
        if !loaded.contains("pg_stat_statements") {
            return Ok(profile);
        }
        admin.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")?;
        profile.statements_seen = true;
        for row in admin.query(
            "SELECT query, calls, total_plan_time, total_exec_time, rows,
                    wal_bytes::float8, wal_records, wal_fpi
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
             WHERE d.datname = $1
             ORDER BY total_plan_time + total_exec_time DESC",
            &[&db.name],
        )? {
            let text: String = row.get(0);
            let folded: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            profile.statements.push(Statement {
                text: folded.chars().take(90).collect(),
                calls: row.get(1),
                plan_ms: row.get(2),
                exec_ms: row.get(3),
                rows: row.get(4),
                wal_bytes: row.get(5),
                wal_records: row.get(6),
                wal_fpi: row.get(7),
            });
        }
        Ok(profile)
    }

    /// Prints the profile per 1,000 `pages`, with its `top` busiest
    /// statements.
    pub(super) fn print(&self, label: &str, pages: usize, top: usize) {
        let per_k = |n: f64| n * 1000.0 / pages.max(1) as f64;
        println!(
            "\n{label}: {:.1} commits / 1,000 pages ({:.1} pages each); rows written / 1,000 pages: \
             {:.0} inserted, {:.0} updated ({:.0} HOT), {:.0} deleted; index entries ≤ {:.0}",
            per_k(self.commits as f64),
            pages as f64 / self.commits.max(1) as f64,
            per_k(self.inserted as f64),
            per_k(self.updated as f64),
            per_k(self.hot as f64),
            per_k(self.deleted as f64),
            per_k(self.index_entries as f64),
        );
        if !self.statements_seen {
            println!("  (statements not profiled: pg_stat_statements is not loaded by the server)");
            return;
        }
        let sum = |f: fn(&Statement) -> f64| self.statements.iter().map(f).sum::<f64>();
        println!(
            "  statements / 1,000 pages: {:.0} calls, {:.1} ms planning, {:.1} ms executing, \
             {:.0} KB WAL ({:.0} records, {:.0} full pages)",
            per_k(sum(|s| s.calls as f64)),
            per_k(sum(|s| s.plan_ms)),
            per_k(sum(|s| s.exec_ms)),
            per_k(sum(|s| s.wal_bytes)) / 1024.0,
            per_k(sum(|s| s.wal_records as f64)),
            per_k(sum(|s| s.wal_fpi as f64)),
        );
        println!(
            "  | statement | calls / 1,000 pages | planning µs / call | executing µs / call | rows / call | WAL bytes / page |"
        );
        println!("  |---|---:|---:|---:|---:|---:|");
        for s in self.statements.iter().take(top) {
            let calls = s.calls.max(1) as f64;
            println!(
                "  | `{}` | {:.1} | {:.0} | {:.0} | {:.1} | {:.0} |",
                s.text.replace('|', "\\|"),
                per_k(s.calls as f64),
                s.plan_ms * 1000.0 / calls,
                s.exec_ms * 1000.0 / calls,
                s.rows as f64 / calls,
                s.wal_bytes / pages.max(1) as f64,
            );
        }
    }
}
