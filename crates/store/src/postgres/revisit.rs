//! A continuous crawl in PostgreSQL (see [`crate::schema`]'s
//! `REVISITS`): each URL recorded now gets its next fetch (its row's
//! `chain`, its `revisits` row), and a writer's due URLs go back to the
//! queue, read from the due end of `revisits_due` shard by shard.

use std::collections::HashMap;

use crawlkeeper_model::revisit::RateMove;
use crawlkeeper_model::shard_of;
use crawlkeeper_model::state::{Batch, DUE_BATCH};
use postgres::{GenericClient, Transaction};

use super::err;
use super::lease::Lease;
use crate::StoreError;
use crate::codec::{chain_text, parse_authority};
use crate::tally::Tallies;

/// The `revisits` rows of a batch, a column each.
#[derive(Default)]
struct Columns {
    ids: Vec<i64>,
    shards: Vec<i32>,
    due: Vec<i64>,
    failed: Vec<i16>,
    chains: Vec<Option<String>>,
}

/// Gives the URLs of `batch` recorded now (`rows`: key → row id; `index`:
/// key → its first place in the batch) that have a next fetch their
/// `revisits` row and their row's `chain`.
pub fn schedule(
    tx: &mut Transaction<'_>,
    job: i64,
    shards: u32,
    batch: &Batch,
    index: &HashMap<u128, usize>,
    rows: &HashMap<u128, i64>,
) -> Result<(), StoreError> {
    let mut cols = Columns::default();
    let mut moves = std::collections::BTreeMap::<(i32, i16), i64>::new();
    for (key, &id) in rows {
        let f = &batch.finished[index[key]];
        let shard = shard_of(f.record.authority.host(), shards) as i32;
        for (bucket, n) in f.moved.into_iter().flat_map(RateMove::deltas) {
            *moves.entry((shard, bucket)).or_default() += n;
        }
        let Some(next) = &f.next else {
            continue;
        };
        cols.ids.push(id);
        cols.shards.push(shard);
        cols.due.push(next.due_ms);
        cols.failed.push(i16::from(f.record.error.is_some()));
        cols.chains.push(chain_text(&next.entry));
    }
    moves.retain(|_, d| *d != 0);
    if !moves.is_empty() {
        let ((shards, buckets), deltas): ((Vec<i32>, Vec<i16>), Vec<i64>) =
            moves.into_iter().unzip();
        tx.execute(
            "INSERT INTO revisit_rates (job, shard, bucket, pages)
             SELECT $1, h, b, d FROM unnest($2::int4[], $3::int2[], $4::int8[]) AS v(h, b, d)
             ON CONFLICT (job, shard, bucket) DO UPDATE
                 SET pages = revisit_rates.pages + excluded.pages",
            &[&job, &shards, &buckets, &deltas],
        )
        .map_err(err)?;
    }
    if cols.ids.is_empty() {
        return Ok(());
    }
    tx.execute(
        "INSERT INTO revisits (job, url, shard, due, failed)
         SELECT $1, u, h, d, f FROM unnest($2::int8[], $3::int4[], $4::int8[], $5::int2[])
             AS v(u, h, d, f)
         ON CONFLICT (job, url) DO UPDATE
             SET shard = excluded.shard, due = excluded.due, failed = excluded.failed",
        &[&job, &cols.ids, &cols.shards, &cols.due, &cols.failed],
    )
    .map_err(err)?;
    tx.execute(
        "UPDATE urls u SET chain = v.c FROM unnest($1::int8[], $2::text[]) AS v(i, c)
         WHERE u.id = v.i",
        &[&cols.ids, &cols.chains],
    )
    .map_err(err)?;
    Ok(())
}

/// Queues again the URLs of the held shards (all of them without a
/// `lease`) due by `batch.due`, at most [`DUE_BATCH`], filling
/// `batch.requeued` and `batch.next_due` and taking the results they no
/// longer count off the shards' counts.
pub fn requeue_due(
    tx: &mut Transaction<'_>,
    job: i64,
    lease: Option<&Lease>,
    batch: &mut Batch,
    tallies: &mut Tallies,
) -> Result<(), StoreError> {
    let Some(now) = batch.due else {
        return Ok(());
    };
    let shards: Vec<i32> = match lease {
        Some(l) => l.shards(),
        None => tx
            .query(
                "SELECT DISTINCT shard FROM authorities WHERE job = $1",
                &[&job],
            )
            .map_err(err)?
            .iter()
            .map(|r| r.get(0))
            .collect(),
    };
    // Each shard's due end of the index, merged: a probe per shard.
    let rows = tx
        .query(
            "WITH d AS (
                 DELETE FROM revisits r USING (
                     SELECT x.url FROM unnest($2::int4[]) AS s(shard)
                     CROSS JOIN LATERAL (
                         SELECT url, due FROM revisits
                         WHERE job = $1 AND shard = s.shard AND due <= $3
                         ORDER BY due LIMIT $4) AS x
                     ORDER BY x.due LIMIT $4) AS p
                 WHERE r.job = $1 AND r.url = p.url
                 RETURNING r.url, r.shard, r.failed),
             u AS (
                 UPDATE urls SET state = 0, seq = NULL FROM d
                 WHERE urls.id = d.url RETURNING urls.auth, d.shard, d.failed)
             SELECT a.authority, u.shard, count(*), sum(u.failed)::int8
             FROM u JOIN authorities a ON a.job = $1 AND a.id = u.auth
             GROUP BY a.authority, u.shard",
            &[&job, &shards, &now, &(DUE_BATCH as i64)],
        )
        .map_err(err)?;
    for row in rows {
        let (queued, failed): (i64, i64) = (row.get(2), row.get(3));
        let t = tallies.entry(row.get(1)).or_default();
        t.done -= queued;
        t.errors -= failed;
        batch
            .requeued
            .push((parse_authority(row.get(0))?, queued as u64));
    }
    batch.next_due = tx
        .query_one(
            "SELECT min(x.due) FROM unnest($2::int4[]) AS s(shard)
             CROSS JOIN LATERAL (
                 SELECT due FROM revisits WHERE job = $1 AND shard = s.shard
                 ORDER BY due LIMIT 1) AS x",
            &[&job, &shards],
        )
        .map_err(err)?
        .get(0);
    // The whole job's, for a budget spread over all of it.
    batch.rates = rates(tx, job)?;
    Ok(())
}

/// The job's rate histogram, `(bucket, pages)`, over every shard.
pub fn rates(c: &mut impl GenericClient, job: i64) -> Result<Vec<(i16, u64)>, StoreError> {
    Ok(c.query(
        "SELECT bucket, CAST(sum(pages) AS BIGINT) FROM revisit_rates WHERE job = $1
         GROUP BY bucket HAVING sum(pages) > 0 ORDER BY bucket",
        &[&job],
    )
    .map_err(err)?
    .iter()
    .map(|row| (row.get(0), row.get::<_, i64>(1).max(0) as u64))
    .collect())
}
