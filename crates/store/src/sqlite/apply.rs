//! Applying a batch inside one transaction: statements prepared once per
//! connection, authority ids and the next result position remembered
//! between batches, so that a batch of one URL costs only its own rows.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crawlkeeper_model::FrontierEntry;
use crawlkeeper_model::state::Batch;
use rusqlite::{Connection, params};

use super::admit::admit_urls;
use super::done::DoneBits;
use super::err;
use super::finish::{Held, finish_urls};
use super::keys::{Keys, RowIds};
use super::revisit;
use super::rows::{AuthorityIds, authority_id, log_loaded};
use crate::StoreError;
use crate::codec::{chain_from, key_from};
use crate::schema::{self, state};
use crate::tally::Tally;

/// Runs a statement without parameters or rows, prepared once.
pub fn run_cached(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .map_err(err)?
        .execute([])
        .map(drop)
        .map_err(err)
}

/// The file's data version: it changes when another connection commits.
pub fn data_version(tx: &Connection) -> Result<i64, StoreError> {
    tx.prepare_cached("PRAGMA data_version")
        .map_err(err)?
        .query_row([], |r| r.get(0))
        .map_err(err)
}

/// What a connection remembers between its batches.
#[derive(Debug, Default)]
pub struct Memo {
    /// Authority row ids.
    pub authorities: AuthorityIds,
    /// Per job: where its keys are.
    pub keys: HashMap<i64, Keys>,
    /// Per job: the next result position, valid while the file's
    /// `data_version` is the one noted (no other connection has committed
    /// since this one wrote it).
    pub next_seq: HashMap<i64, (i64, i64)>,
    /// Per job: the rows this connection loaded and has not finished.
    pub held: HashMap<i64, Held>,
    /// Which rows have a result, as far as read (every job's).
    pub bits: DoneBits,
}

impl Memo {
    /// Forgets what `job`'s failed transaction may have changed.
    pub fn forget(&mut self, job: i64) {
        self.authorities.remove(&job);
        self.keys.remove(&job);
        self.next_seq.remove(&job);
        self.held.remove(&job);
        self.bits.forget();
    }
}

/// Applies `batch` inside the open transaction, merging the job's newest
/// keys when `merge_at` of them are held; returns the job's next result
/// position and the file's data version when results were written.
pub fn apply_in(
    tx: &Connection,
    memo: &mut Memo,
    merge_at: usize,
    job: i64,
    batch: &mut Batch,
) -> Result<Option<(i64, i64)>, StoreError> {
    batch.recorded.clear();
    batch.admitted.clear();
    batch.loaded.clear();
    batch.requeued.clear();
    batch.next_due = None;
    batch.rates.clear();
    batch.stops = None;
    let version = data_version(tx)?;
    let mut ids = RowIds::read(tx)?;
    let keys = match memo.keys.entry(job) {
        Entry::Occupied(e) => {
            let keys = e.into_mut();
            keys.refresh(tx, job, version, &ids)?;
            keys
        }
        Entry::Vacant(e) => e.insert(Keys::load(tx, job, version, &ids)?),
    };
    let held = memo.held.entry(job).or_default().at(version);
    let bits = memo.bits.at(version);
    let cache = &mut memo.authorities;
    let mut next = None;
    let mut tally = Tally::default();
    if !batch.finished.is_empty() {
        // Unless another connection has committed since, the position
        // noted after this connection's last batch is still the next one.
        let known = match memo.next_seq.get(&job) {
            Some(&(seq, v)) if v == version => Some(seq),
            _ => None,
        };
        let seq = finish_urls(
            tx, cache, keys, held, bits, &mut ids, known, job, batch, &mut tally,
        )?;
        next = Some((seq, version));
    }
    admit_urls(
        tx,
        cache,
        keys,
        held,
        &mut ids,
        job,
        &batch.admit,
        &mut batch.admitted,
    )?;
    tally.seen += batch.admitted.iter().filter(|&&a| a).count() as i64;
    keys.merge_if_due(tx, job, merge_at)?;
    for (authority, limit) in &batch.load {
        let auth = authority_id(tx, cache, job, authority)?;
        let rows = next_rows(tx, bits, job, auth, *limit)?;
        for (id, _) in &rows {
            tx.prepare_cached("UPDATE urls SET state = 1 WHERE id = ?1")
                .map_err(err)?
                .execute([id])
                .map_err(err)?;
        }
        log_loaded(tx, job, rows.iter().map(|(id, _)| *id))?;
        held.extend(rows.iter().map(|(id, e)| (e.key, *id)));
        batch
            .loaded
            .push(rows.into_iter().map(|(_, e)| e).collect());
    }
    // After the loads: a slot hears of URLs queued again once its load
    // is answered.
    revisit::requeue_due(tx, bits, job, batch, &mut tally)?;
    if batch.poll {
        batch.stops = Some(revisit::stops(tx, job)?);
    }
    for saved in &batch.authorities {
        let auth = authority_id(tx, cache, job, &saved.authority)?;
        let text = serde_json::to_string(saved).map_err(|e| StoreError::Backend(e.to_string()))?;
        tx.prepare_cached("UPDATE authorities SET state = ?1 WHERE job = ?2 AND id = ?3")
            .map_err(err)?
            .execute(params![text, job, auth])
            .map_err(err)?;
    }
    if !tally.is_empty() {
        // One shard, one writer: one row.
        tx.prepare_cached(schema::SQLITE_ADD_COUNTS)
            .map_err(err)?
            .execute(params![job, tally.seen, tally.done, tally.errors])
            .map_err(err)?;
    }
    bits.write(tx)?;
    Ok(next)
}

/// A host's next `limit` queued rows, fewest hops first. A queued row
/// with a result (finished without being loaded, as a skipped URL may
/// be) is not loaded: it is marked done, and the rows are read again.
fn next_rows(
    tx: &Connection,
    bits: &mut DoneBits,
    job: i64,
    auth: i64,
    limit: usize,
) -> Result<Vec<(i64, FrontierEntry)>, StoreError> {
    loop {
        let mut stmt = tx
            .prepare_cached(
                "SELECT id, key, url, depth, parent, chain FROM urls
                 WHERE job = ?1 AND auth = ?2 AND state = 0
                 ORDER BY depth LIMIT ?3",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![job, auth, limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, u32>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })
            .map_err(err)?;
        let mut out = Vec::new();
        let mut done = Vec::new();
        for row in rows {
            let (id, key, url, depth, parent, chain) = row.map_err(err)?;
            if bits.get(tx, id)? {
                done.push(id);
                continue;
            }
            let (redirect_chain, known) = chain_from(chain)?;
            out.push((
                id,
                FrontierEntry {
                    key: key_from(&key)?,
                    url,
                    depth,
                    parent,
                    redirect_chain,
                    known,
                },
            ));
        }
        if done.is_empty() {
            return Ok(out);
        }
        let mut mark = tx
            .prepare_cached("UPDATE urls SET state = ?1 WHERE id = ?2")
            .map_err(err)?;
        for id in done {
            mark.execute(params![state::DONE, id]).map_err(err)?;
        }
    }
}
