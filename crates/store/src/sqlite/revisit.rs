//! A continuous crawl's due URLs queued again (see
//! [`crate::schema`]'s `REVISITS`): the rows of `revisits` due by a time,
//! read from the due end of `revisits_due`, each turned back into a
//! queued row of `urls` without a result bit, and the job's counts taken
//! down by the results they no longer count.

use std::collections::BTreeMap;

use crawlkeeper_model::state::{Batch, DUE_BATCH};
use rusqlite::{Connection, OptionalExtension, params};

use super::done::DoneBits;
use super::err;
use crate::StoreError;
use crate::codec::parse_authority;
use crate::schema::state;
use crate::tally::Tally;

/// Queues again the URLs of `job` due by `batch.due` (at most
/// [`DUE_BATCH`]), filling `batch.requeued`, `batch.next_due` and
/// `batch.rates`.
pub fn requeue_due(
    tx: &Connection,
    bits: &mut DoneBits,
    job: i64,
    batch: &mut Batch,
    tally: &mut Tally,
) -> Result<(), StoreError> {
    let Some(now) = batch.due else {
        return Ok(());
    };
    let due: Vec<(i64, i64, i64)> = tx
        .prepare_cached(
            "SELECT r.url, r.failed, u.auth FROM revisits r JOIN urls u ON u.id = r.url
             WHERE r.job = ?1 AND r.shard = 0 AND r.due <= ?2 ORDER BY r.due LIMIT ?3",
        )
        .map_err(err)?
        .query_map(params![job, now, DUE_BATCH as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(err)?
        .collect::<Result<_, _>>()
        .map_err(err)?;
    let mut by_auth = BTreeMap::<i64, u64>::new();
    for &(id, failed, auth) in &due {
        tx.prepare_cached("DELETE FROM revisits WHERE job = ?1 AND url = ?2")
            .map_err(err)?
            .execute(params![job, id])
            .map_err(err)?;
        tx.prepare_cached("UPDATE urls SET state = ?1 WHERE id = ?2")
            .map_err(err)?
            .execute(params![state::QUEUED, id])
            .map_err(err)?;
        bits.set(tx, id, false)?;
        tally.done -= 1;
        tally.errors -= failed;
        *by_auth.entry(auth).or_default() += 1;
    }
    for (auth, n) in by_auth {
        let name: String = tx
            .prepare_cached("SELECT authority FROM authorities WHERE job = ?1 AND id = ?2")
            .map_err(err)?
            .query_row(params![job, auth], |r| r.get(0))
            .map_err(err)?;
        batch.requeued.push((parse_authority(name)?, n));
    }
    batch.next_due = tx
        .prepare_cached(
            "SELECT due FROM revisits WHERE job = ?1 AND shard = 0 ORDER BY due LIMIT 1",
        )
        .map_err(err)?
        .query_row([job], |r| r.get(0))
        .optional()
        .map_err(err)?;
    batch.rates = rates(tx, job)?;
    Ok(())
}

/// The job's rate histogram, `(bucket, pages)`.
pub fn rates(tx: &Connection, job: i64) -> Result<Vec<(i16, u64)>, StoreError> {
    tx.prepare_cached(
        "SELECT bucket, pages FROM revisit_rates WHERE job = ?1 AND pages > 0 ORDER BY bucket",
    )
    .map_err(err)?
    .query_map([job], |r| {
        Ok((r.get::<_, i16>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })
    .map_err(err)?
    .collect::<Result<_, _>>()
    .map_err(err)
}

/// How many times `job` was asked to stop (`crawlkeeper stop`).
pub fn stops(tx: &Connection, job: i64) -> Result<u64, StoreError> {
    let n: Option<i64> = tx
        .prepare_cached("SELECT stops FROM jobs WHERE id = ?1")
        .map_err(err)?
        .query_row([job], |r| r.get(0))
        .optional()
        .map_err(err)?;
    Ok(n.unwrap_or(0).max(0) as u64)
}
