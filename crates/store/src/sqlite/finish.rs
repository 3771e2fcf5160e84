//! Storing finished URLs: each claims its row of `urls` (found through
//! [`Keys`], or made) and, the first time, gets the next result position;
//! the records are then written [`CHUNK`] to a statement.

use std::sync::LazyLock;

use crawlkeeper_model::state::Batch;
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::apply::{AuthorityIds, CHUNK, authority_id, multi_row_sql};
use super::err;
use super::keys::{Keys, RowIds};
use crate::StoreError;
use crate::codec::key_bytes;

/// The statement inserting `rows` records.
fn insert_sql(rows: usize) -> String {
    multi_row_sql(
        "INSERT INTO results (job, seq, failed, record)",
        "(?, ?, ?, ?)",
        rows,
    )
}

static INSERT_ONE: LazyLock<String> = LazyLock::new(|| insert_sql(1));
static INSERT_CHUNK: LazyLock<String> = LazyLock::new(|| insert_sql(CHUNK));

/// Stores the records of `batch.finished`, filling `batch.recorded`;
/// returns the job's next result position. `next_seq` is that position
/// as noted after this connection's last batch, if no other connection
/// has committed since.
pub fn finish_urls(
    tx: &Connection,
    cache: &mut AuthorityIds,
    keys: &mut Keys,
    ids: &mut RowIds,
    next_seq: Option<i64>,
    job: i64,
    batch: &mut Batch,
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
    let mut claim = tx
        .prepare_cached("UPDATE urls SET state = 2, seq = ?1 WHERE id = ?2 AND state <> 2")
        .map_err(err)?;
    // (position, failed, index in the batch) of each record to write.
    let mut records = Vec::with_capacity(batch.finished.len());
    for (i, f) in batch.finished.iter().enumerate() {
        let row = keys.find(tx, job, f.key)?;
        let claimed = match row {
            // Admitted: claimed unless finished already.
            Some(id) => claim.execute(params![seq, id]).map_err(err)? == 1,
            // Never admitted (skipped with its authority): it gets its row.
            None => {
                let auth = authority_id(tx, cache, job, &f.record.authority)?;
                let id = keys
                    .add(f.key, ids)
                    // `find` saw no row, so the tail does not hold the key.
                    .expect("a key without a row is new to the tail");
                tx.prepare_cached(
                    "INSERT INTO urls (id, job, key, auth, url, depth, parent, state, seq)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 2, ?8)",
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
                    seq
                ])
                .map_err(err)?;
                true
            }
        };
        let recorded = if claimed {
            records.push((seq, i64::from(f.record.error.is_some()), i));
            seq += 1;
            true
        } else {
            // Done already: by an attempt of this batch whose commit was not confirmed?
            tx.prepare_cached("SELECT seq FROM urls WHERE id = ?1")
                .map_err(err)?
                .query_row([row], |r| r.get::<_, Option<i64>>(0))
                .optional()
                .map_err(err)?
                .flatten()
                .is_some_and(|s| s >= first)
        };
        batch.recorded.push(recorded);
    }
    let mut one = tx.prepare_cached(&INSERT_ONE).map_err(err)?;
    let mut chunk = tx.prepare_cached(&INSERT_CHUNK).map_err(err)?;
    for part in records.chunks(CHUNK) {
        let json = |i: usize| &batch.finished[i].json;
        if part.len() < CHUNK {
            for (seq, failed, i) in part {
                one.execute(params![job, seq, failed, json(*i)])
                    .map_err(err)?;
            }
            continue;
        }
        let values = part.iter().flat_map(|(seq, failed, i)| {
            [
                &job as &dyn ToSql,
                seq as &dyn ToSql,
                failed as &dyn ToSql,
                json(*i) as &dyn ToSql,
            ]
        });
        chunk.execute(params_from_iter(values)).map_err(err)?;
    }
    Ok(seq)
}
