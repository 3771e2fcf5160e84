//! What a connection remembers between transactions: its prepared
//! statements ([`q`] and [`x`] run them), and rows that never change
//! (authorities' ids and shards, jobs' shard counts). It imports neither
//! the batch's writer nor the leases.

use std::collections::HashMap;

use crawlkeeper_model::key::KeyMap;
use crawlkeeper_model::shard_of;
use postgres::types::ToSql;
use postgres::{Row, Statement, Transaction};

use super::err;
use crate::StoreError;
use crate::codec::parse_authority;

/// What a connection remembers of rows that never change: authorities'
/// ids and shards, jobs' shard counts. Cleared when a transaction fails.
#[derive(Default)]
pub struct Cache {
    authorities: HashMap<(i64, String), (i64, u32)>,
    shards: HashMap<i64, u32>,
    /// Statements prepared on this connection, by their text, with the
    /// calls each had since it was prepared (see [`Cache::statement`]).
    statements: HashMap<&'static str, (Statement, u64)>,
    /// Known URLs per admission of this connection, smoothed (see
    /// [`Cache::probe_first`]).
    known_per_admission: f64,
    /// Per job: the rows this connection loaded and has not finished,
    /// key → row id (see [`Cache::take_loaded`]).
    loaded: HashMap<i64, KeyMap<i64>>,
}

/// Rows of a job remembered as loaded, past which the job's are forgotten
/// (a crawler finishes what it loads; rows it gave up, to a take-over or
/// a stop, are never taken out): 24 MB at most.
const LOADED_CAP: usize = 1 << 20;

/// Known URLs per admission above which its keys are probed on their own
/// first (see [`Cache::probe_first`]).
const PROBE_FIRST_ABOVE: f64 = 16.0;

/// Calls of a prepared statement after which it is prepared again, so
/// that its generic plan is made afresh: at 2, 8, 32, … 2^{2k+1} calls,
/// then every [`REPLAN_EVERY`].
const REPLAN_EVERY: u64 = 8192;

impl Cache {
    /// Whether an admission should probe its keys in a statement of its
    /// own before the insert ([`super::probes::DEPTHS`]) rather than in
    /// the insert ([`super::probes::ADMIT`]). A known URL costs the server
    /// less through the probe alone (6.5 µs against 9.2 at a million
    /// URLs, `bench store --scale`: the insert's statement carries each
    /// URL's text and fields), and the probe costs a round trip more (1–2
    /// ms of the crawler's CPU per 1,000 pages when it always went first,
    /// `bench engine --scenario one-host --state postgres`). A crawl's
    /// admissions hold few known URLs while
    /// its seen cache has room, and many past it: the recent admissions
    /// decide.
    pub fn probe_first(&self) -> bool {
        self.known_per_admission > PROBE_FIRST_ABOVE
    }

    /// Notes that an admission found `known` of its URLs known.
    pub fn note_known(&mut self, known: usize) {
        self.known_per_admission = 0.75 * self.known_per_admission + 0.25 * known as f64;
    }

    /// Forgets everything (a transaction that failed may have made rows
    /// that do not exist).
    pub fn clear(&mut self) {
        self.authorities.clear();
        self.shards.clear();
        self.statements.clear();
        self.loaded.clear();
    }

    /// Notes that this connection loaded `job`'s row `id` of `key`.
    pub fn note_loaded(&mut self, job: i64, key: u128, id: i64) {
        let rows = self.loaded.entry(job).or_default();
        if rows.len() >= LOADED_CAP {
            rows.clear();
        }
        rows.insert(key, id);
    }

    /// The row of `job`'s `key` if this connection loaded it, forgotten
    /// here: a finish names the row by its id, where a probe of
    /// `urls_key` would find it (a random index page of a job larger than
    /// memory). A row never changes its key or id, and whether it is
    /// done is read from the row itself, so a row finished meanwhile by
    /// another process is found done as through the probe.
    pub fn take_loaded(&mut self, job: i64, key: u128) -> Option<i64> {
        self.loaded.get_mut(&job)?.remove(&key)
    }

    /// Forgets the rows of `job` this connection loaded (a resume queues
    /// them again).
    pub fn forget_loaded(&mut self, job: i64) {
        self.loaded.remove(&job);
    }

    /// The statement `sql`, prepared on `tx`'s connection.
    ///
    /// PostgreSQL plans a prepared statement at its first five calls,
    /// then generically (once) if that plan costs no more: planning at
    /// every call was a fifth of the server's CPU. A generic plan is made
    /// from the tables' sizes when it is made, and a job's tables start
    /// empty: a plan made then would scan them whole, and stay. So a
    /// statement is prepared again, and planned afresh, at its 2nd, 8th,
    /// 32nd, … call (the tables grow with the calls), then every
    /// [`REPLAN_EVERY`]: a plan is never made on tables a quarter of
    /// their size when it is used, until they are big enough for their
    /// plans to stay. The statements themselves are written so that
    /// their good plan does not hang on the tables' statistics (rows
    /// found by one probe of a unique index per key, see `probes.rs`),
    /// which autovacuum refreshes only now and then.
    fn statement(
        &mut self,
        tx: &mut Transaction<'_>,
        sql: &'static str,
    ) -> Result<Statement, postgres::Error> {
        if let Some((s, calls)) = self.statements.get_mut(sql) {
            *calls += 1;
            if !replan_at(*calls) {
                return Ok(s.clone());
            }
        }
        let s = tx.prepare(sql)?;
        let calls = self.statements.get(sql).map_or(1, |(_, c)| *c);
        self.statements.insert(sql, (s.clone(), calls));
        Ok(s)
    }
}

/// Whether a statement at its `calls`th call is prepared again: at
/// 2^(2k+1) calls below [`REPLAN_EVERY`], then at its multiples.
fn replan_at(calls: u64) -> bool {
    if calls < REPLAN_EVERY {
        calls.is_power_of_two() && calls.trailing_zeros() % 2 == 1
    } else {
        calls.is_multiple_of(REPLAN_EVERY)
    }
}

/// Runs the query `sql`, prepared on the connection (see
/// [`Cache::statement`]).
pub fn q(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, postgres::Error> {
    let statement = cache.statement(tx, sql)?;
    tx.query(&statement, params)
}

/// Runs the statement `sql`, prepared on the connection (see
/// [`Cache::statement`]).
pub fn x(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, postgres::Error> {
    let statement = cache.statement(tx, sql)?;
    tx.execute(&statement, params)
}

/// The job's number of shards.
pub fn shard_count(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
) -> Result<u32, StoreError> {
    if let Some(n) = cache.shards.get(&job) {
        return Ok(*n);
    }
    let n: i32 = tx
        .query_opt("SELECT shards FROM jobs WHERE id = $1", &[&job])
        .map_err(err)?
        .ok_or_else(|| StoreError::Backend(format!("no job with id {job}")))?
        .get(0);
    let n = u32::try_from(n).unwrap_or(1).max(1);
    cache.shards.insert(job, n);
    Ok(n)
}

/// Makes sure each of `names` has its row, and caches its id and shard.
pub fn authorities<'a>(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    names: impl Iterator<Item = &'a str>,
) -> Result<(), StoreError> {
    let mut missing: Vec<String> = names
        .filter(|n| !cache.authorities.contains_key(&(job, (*n).to_owned())))
        .map(str::to_owned)
        .collect();
    missing.sort_unstable();
    missing.dedup();
    read_authorities(tx, cache, job, &mut missing)?;
    if missing.is_empty() {
        return Ok(());
    }
    let shards = shard_count(tx, cache, job)?;
    let mut names_shards: Vec<i32> = Vec::with_capacity(missing.len());
    for name in &missing {
        let host = parse_authority(name.clone())?;
        names_shards.push(shard_of(host.host(), shards) as i32);
    }
    // In name order (writers take the unique index's locks in one order);
    // a name another writer made meanwhile is read back below.
    let made = q(
        tx,
        cache,
        "INSERT INTO authorities (job, id, authority, shard)
         SELECT $1, nextval('authority_ids'), a, s FROM unnest($2::text[], $3::int4[]) AS v(a, s)
         ON CONFLICT (job, authority) DO NOTHING RETURNING authority, id, shard",
        &[&job, &missing, &names_shards],
    )
    .map_err(err)?;
    remember(cache, job, &made, &mut missing);
    read_authorities(tx, cache, job, &mut missing)
}

/// Reads the rows of the authorities of `missing` that exist into the
/// cache; `missing` keeps those without one.
fn read_authorities(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    missing: &mut Vec<String>,
) -> Result<(), StoreError> {
    if missing.is_empty() {
        return Ok(());
    }
    let rows = q(
        tx,
        cache,
        "SELECT authority, id, shard FROM authorities WHERE job = $1 AND authority = ANY($2)",
        &[&job, &*missing],
    )
    .map_err(err)?;
    remember(cache, job, &rows, missing);
    Ok(())
}

/// Caches authorities' rows (name, id, shard); `missing` keeps the names
/// still without one.
fn remember(cache: &mut Cache, job: i64, rows: &[Row], missing: &mut Vec<String>) {
    for row in rows {
        let shard: i32 = row.get(2);
        cache
            .authorities
            .insert((job, row.get(0)), (row.get(1), shard as u32));
    }
    missing.retain(|n| !cache.authorities.contains_key(&(job, n.clone())));
}

/// The id and shard of authority `name` of `job`, cached by
/// [`authorities`].
pub fn authority_of(cache: &Cache, job: i64, name: &str) -> Result<(i64, u32), StoreError> {
    cache
        .authorities
        .get(&(job, name.to_owned()))
        .copied()
        .ok_or_else(|| StoreError::Backend(format!("authority {name} has no row")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_planned_again_geometrically_then_at_a_steady_pace() {
        let at: Vec<u64> = (1..=40_000).filter(|&c| replan_at(c)).collect();
        assert_eq!(at, [2, 8, 32, 128, 512, 2048, 8192, 16_384, 24_576, 32_768]);
    }

    #[test]
    fn many_known_urls_in_recent_admissions_put_the_probe_first() {
        let mut c = Cache::default();
        c.note_known(10);
        assert!(!c.probe_first(), "a few known URLs ride in the insert");
        for _ in 0..4 {
            c.note_known(40);
        }
        assert!(c.probe_first());
        for _ in 0..8 {
            c.note_known(0);
        }
        assert!(!c.probe_first(), "new URLs again: one statement");
    }
}
