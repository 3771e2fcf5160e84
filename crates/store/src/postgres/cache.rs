//! What a connection remembers between transactions: its prepared
//! statements ([`q`] and [`x`] run them), and rows that never change
//! (authorities' ids and shards, jobs' shard counts). It imports neither
//! the batch's writer nor the leases.

use std::collections::HashMap;

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
    /// Statements prepared on this connection, by their text: each is
    /// parsed and planned once, not at every call (a round trip saved).
    statements: HashMap<&'static str, Statement>,
}

impl Cache {
    /// Forgets everything (a transaction that failed may have made rows
    /// that do not exist).
    pub fn clear(&mut self) {
        self.authorities.clear();
        self.shards.clear();
        self.statements.clear();
    }

    /// The statement `sql`, prepared on `tx`'s connection once.
    fn statement(
        &mut self,
        tx: &mut Transaction<'_>,
        sql: &'static str,
    ) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = tx.prepare(sql)?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }
}

/// Runs the query `sql`, prepared once per connection.
pub fn q(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, postgres::Error> {
    let statement = cache.statement(tx, sql)?;
    tx.query(&statement, params)
}

/// Runs the statement `sql`, prepared once per connection.
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
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort_unstable();
    missing.dedup();
    for row in q(
        tx,
        cache,
        "SELECT authority, id, shard FROM authorities WHERE job = $1 AND authority = ANY($2)",
        &[&job, &missing],
    )
    .map_err(err)?
    {
        let shard: i32 = row.get(2);
        cache
            .authorities
            .insert((job, row.get(0)), (row.get(1), shard as u32));
    }
    let shards = shard_count(tx, cache, job)?;
    for name in missing {
        if cache.authorities.contains_key(&(job, name.clone())) {
            continue;
        }
        let host = parse_authority(name.clone())?;
        let shard = shard_of(host.host(), shards);
        let inserted = tx
            .query_opt(
                "INSERT INTO authorities (job, id, authority, shard)
                 VALUES ($1, nextval('authority_ids'), $2, $3)
                 ON CONFLICT (job, authority) DO NOTHING RETURNING id",
                &[&job, &name, &(shard as i32)],
            )
            .map_err(err)?;
        let id = match inserted {
            Some(row) => row.get(0),
            // Another writer made it since the look-up.
            None => tx
                .query_one(
                    "SELECT id FROM authorities WHERE job = $1 AND authority = $2",
                    &[&job, &name],
                )
                .map_err(err)?
                .get(0),
        };
        cache.authorities.insert((job, name), (id, shard));
    }
    Ok(())
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
