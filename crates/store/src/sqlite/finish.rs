//! Storing finished URLs: each finds its row of `urls` (through [`Held`]
//! or [`Keys`], or makes one) and, unless its bit in [`DoneBits`] says a
//! result names that row already, gets the next result position and its
//! bit; the records, each naming its row, are then written
//! [`CHUNK`](super::rows::CHUNK) to a statement. Rows of `urls` are left
//! alone (see [`crate::schema`]).

use std::collections::HashSet;
use std::sync::LazyLock;

use crawlkeeper_model::key::KeyMap;
use crawlkeeper_model::state::Batch;
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, params};

use super::done::DoneBits;
use super::err;
use super::keys::{Keys, RowIds};
use super::rows::{AuthorityIds, MultiRow, authority_id};
use crate::StoreError;
use crate::codec::{chain_text, key_bytes};
use crate::tally::Tally;
use crawlkeeper_model::revisit::RateMove;

/// The statement inserting records.
static INSERT: LazyLock<MultiRow> = LazyLock::new(|| {
    MultiRow::new(
        "INSERT INTO results (job, seq, url, failed, record)",
        "(?, ?, ?, ?, ?)",
    )
});

/// Rows remembered as loaded, at most (24 MB).
pub const HELD_CAP: usize = 1 << 20;

/// The rows of one job that this connection loaded (or admitted loaded)
/// and has not finished, by key. None has a result: a load skips rows
/// with one, an admitted row is new, and only a finish through this
/// connection gives it one (and takes the row out) while no other
/// connection commits to the file; when one has (the file's
/// `data_version` changed), the rows are forgotten. A page the crawler
/// loaded thus finds its row without reading `url_keys` (a page at
/// random in a job larger than the cache) or its bit. A row loaded again
/// after a failed transaction or a resume is still without a result;
/// [`Memo::forget`](super::apply::Memo::forget) and a resume forget the
/// rows anyway.
#[derive(Debug, Default)]
pub struct Held {
    /// The file's data version when `rows` was last valid.
    version: i64,
    /// Key → row id.
    rows: KeyMap<i64>,
}

impl Held {
    /// The rows, forgotten first if the file's data version is no longer
    /// `version`, or if they are [`HELD_CAP`] (rows loaded and never
    /// finished, as at a stop, are never taken out).
    pub fn at(&mut self, version: i64) -> &mut KeyMap<i64> {
        if self.version != version || self.rows.len() >= HELD_CAP {
            self.rows.clear();
            self.version = version;
        }
        &mut self.rows
    }
}

/// Stores the records of `batch.finished`, filling `batch.recorded` and
/// adding the rows made and records stored to `tally`; returns the job's
/// next result position. `next_seq` is that position as noted after this
/// connection's last batch, if no other connection has committed since.
#[allow(clippy::too_many_arguments)]
pub fn finish_urls(
    tx: &Connection,
    cache: &mut AuthorityIds,
    keys: &mut Keys,
    held: &mut KeyMap<i64>,
    bits: &mut DoneBits,
    ids: &mut RowIds,
    next_seq: Option<i64>,
    job: i64,
    batch: &mut Batch,
    tally: &mut Tally,
) -> Result<i64, StoreError> {
    let mut seq: i64 = match next_seq {
        Some(seq) => seq,
        None => tx
            .prepare_cached("SELECT coalesce(max(seq), 0) + 1 FROM results WHERE job = ?1")
            .map_err(err)?
            .query_row([job], |r| r.get(0))
            .map_err(err)?,
    };
    let first = *batch.first_position.get_or_insert(seq as u64) as i64;
    // Whether a row's result was stored since `first`: by an attempt of
    // this batch whose commit was not confirmed.
    let mut this_batch = tx
        .prepare_cached("SELECT 1 FROM results WHERE job = ?1 AND seq >= ?2 AND url = ?3")
        .map_err(err)?;
    // Rows given a result by this batch (not written yet).
    let mut claimed = HashSet::new();
    // (position, row, failed, index in the batch) of each record to write.
    let mut records = Vec::with_capacity(batch.finished.len());
    for (i, f) in batch.finished.iter().enumerate() {
        // The row to give a result now, if any, and whether the URL counts
        // as recorded by this batch.
        let (claim, recorded) =
            if let Some(id) = held.remove(&f.key).filter(|id| !claimed.contains(id)) {
                // Loaded by this connection: its row, without a result.
                (Some(id), true)
            } else {
                match keys.find(tx, job, f.key)? {
                    // Given its result earlier in this batch.
                    Some(id) if claimed.contains(&id) => (None, true),
                    // Admitted: a result unless it has one.
                    Some(id) if !bits.get(tx, id)? => (Some(id), true),
                    // Done already: by an attempt of this batch whose
                    // commit was not confirmed?
                    Some(id) => {
                        let again = this_batch
                            .query_row(params![job, first, id], |_| Ok(()))
                            .optional()
                            .map_err(err)?;
                        (None, again.is_some())
                    }
                    // Never admitted (skipped with its authority): it gets a row.
                    None => {
                        let auth = authority_id(tx, cache, job, &f.record.authority)?;
                        let id = keys
                            .add(f.key, ids)
                            // `find` saw no row, so the tail does not hold the key.
                            .expect("a key without a row is new to the tail");
                        tx.prepare_cached(
                            "INSERT INTO urls (id, job, key, auth, url, depth, parent, state)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 2)",
                        )
                        .map_err(err)?
                        .execute(params![
                            id,
                            job,
                            key_bytes(f.key),
                            auth,
                            f.record.url,
                            f.record.depth,
                            f.record.parent,
                        ])
                        .map_err(err)?;
                        tally.seen += 1;
                        (Some(id), true)
                    }
                }
            };
        if let Some(id) = claim {
            claimed.insert(id);
            bits.set(tx, id, true)?;
            records.push((seq, id, i64::from(f.record.error.is_some()), i));
            seq += 1;
        }
        batch.recorded.push(recorded);
    }
    tally.done += records.len() as i64;
    tally.errors += records.iter().map(|(_, _, failed, _)| failed).sum::<i64>();
    let finished = &batch.finished;
    INSERT.execute(tx, &records, |(seq, url, failed, i), v| {
        v.extend([&job as &dyn ToSql, seq, url, failed, &finished[*i].json]);
    })?;
    schedule(
        tx,
        job,
        finished,
        records.iter().map(|&(_, id, failed, i)| (id, failed, i)),
    )?;
    if batch.keep_archives {
        let mut archive = tx
            .prepare_cached("INSERT INTO archives (job, seq, data) VALUES (?1, ?2, ?3)")
            .map_err(err)?;
        for (seq, _, _, i) in &records {
            let data = &finished[*i].archive;
            if !data.is_empty() {
                archive.execute(params![job, seq, data]).map_err(err)?;
            }
        }
    }
    Ok(seq)
}

/// Gives each URL of a continuous crawl that was recorded now (`(row,
/// failed, index in finished)`) its next fetch: its row's `chain` carries
/// what that fetch needs, and `revisits` its due time (one shard: 0); and
/// moves it in the job's rate histogram.
fn schedule(
    tx: &Connection,
    job: i64,
    finished: &[crawlkeeper_model::FinishedUrl],
    recorded: impl Iterator<Item = (i64, i64, usize)>,
) -> Result<(), StoreError> {
    let mut moves = std::collections::BTreeMap::<i16, i64>::new();
    for (id, failed, i) in recorded {
        for (bucket, n) in finished[i].moved.into_iter().flat_map(RateMove::deltas) {
            *moves.entry(bucket).or_default() += n;
        }
        let Some(next) = &finished[i].next else {
            continue;
        };
        tx.prepare_cached("UPDATE urls SET chain = ?1 WHERE id = ?2")
            .map_err(err)?
            .execute(params![chain_text(&next.entry), id])
            .map_err(err)?;
        tx.prepare_cached(
            "INSERT OR REPLACE INTO revisits (job, url, shard, due, failed)
             VALUES (?1, ?2, 0, ?3, ?4)",
        )
        .map_err(err)?
        .execute(params![job, id, next.due_ms, failed])
        .map_err(err)?;
    }
    for (bucket, delta) in moves.into_iter().filter(|(_, d)| *d != 0) {
        tx.prepare_cached(
            "INSERT INTO revisit_rates (job, shard, bucket, pages) VALUES (?1, 0, ?2, ?3)
             ON CONFLICT (job, shard, bucket) DO UPDATE SET pages = pages + excluded.pages",
        )
        .map_err(err)?
        .execute(params![job, bucket, delta])
        .map_err(err)?;
    }
    Ok(())
}
