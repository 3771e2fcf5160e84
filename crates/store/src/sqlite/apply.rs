//! Applying a batch inside one transaction: statements prepared once per
//! connection, authority ids and the next result position remembered
//! between batches, so that a batch of one URL costs only its own rows.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FrontierEntry};
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::admit::admit_urls;
use super::err;
use super::finish::finish_urls;
use super::keys::{Keys, RowIds};
use crate::StoreError;
use crate::codec::{chain_from, key_from};

/// Authority row ids by job, so that naming an authority costs no query.
pub type AuthorityIds = HashMap<i64, HashMap<Authority, i64>>;

/// Rows written by one multi-row statement: a statement per row spends
/// more on running the statement than on the row.
pub const CHUNK: usize = 16;

/// `head` followed by `rows` copies of the `row` placeholders.
fn multi_row_sql(head: &str, row: &str, rows: usize) -> String {
    format!("{head} VALUES {}", vec![row; rows].join(", "))
}

/// An `INSERT` of many rows: [`CHUNK`] to a statement, the rest one by
/// one, each statement prepared once per connection.
pub struct MultiRow {
    one: String,
    chunk: String,
}

impl MultiRow {
    /// The statement `head VALUES row, row, …`.
    pub fn new(head: &str, row: &str) -> Self {
        Self {
            one: multi_row_sql(head, row, 1),
            chunk: multi_row_sql(head, row, CHUNK),
        }
    }

    /// Inserts `rows`; `bind` pushes the values of one row, in the order
    /// of the placeholders.
    pub fn execute<'a, R>(
        &self,
        tx: &Connection,
        rows: &'a [R],
        bind: impl Fn(&'a R, &mut Vec<&'a dyn ToSql>),
    ) -> Result<(), StoreError> {
        let mut one = tx.prepare_cached(&self.one).map_err(err)?;
        let mut chunk = tx.prepare_cached(&self.chunk).map_err(err)?;
        let mut values = Vec::new();
        for part in rows.chunks(CHUNK) {
            if part.len() == CHUNK {
                values.clear();
                part.iter().for_each(|r| bind(r, &mut values));
                chunk
                    .execute(params_from_iter(values.iter().copied()))
                    .map_err(err)?;
                continue;
            }
            for r in part {
                values.clear();
                bind(r, &mut values);
                one.execute(params_from_iter(values.iter().copied()))
                    .map_err(err)?;
            }
        }
        Ok(())
    }
}

/// Runs a statement without parameters or rows, prepared once.
pub fn run_cached(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .map_err(err)?
        .execute([])
        .map(drop)
        .map_err(err)
}

pub fn authority_id(
    tx: &Connection,
    cache: &mut AuthorityIds,
    job: i64,
    authority: &Authority,
) -> Result<i64, StoreError> {
    if let Some(id) = cache.get(&job).and_then(|ids| ids.get(authority)) {
        return Ok(*id);
    }
    let name = authority.to_string();
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM authorities WHERE job = ?1 AND authority = ?2",
            params![job, name],
            |r| r.get(0),
        )
        .optional()
        .map_err(err)?;
    let id = match existing {
        Some(id) => id,
        None => {
            let next: i64 = tx
                .query_row(
                    "SELECT coalesce(max(id), 0) + 1 FROM authorities WHERE job = ?1",
                    [job],
                    |r| r.get(0),
                )
                .map_err(err)?;
            tx.execute(
                "INSERT INTO authorities (job, id, authority) VALUES (?1, ?2, ?3)",
                params![job, next, name],
            )
            .map_err(err)?;
            next
        }
    };
    cache.entry(job).or_default().insert(authority.clone(), id);
    Ok(id)
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
}

impl Memo {
    /// Forgets what `job`'s failed transaction may have changed.
    pub fn forget(&mut self, job: i64) {
        self.authorities.remove(&job);
        self.keys.remove(&job);
        self.next_seq.remove(&job);
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
    let version: i64 = tx
        .prepare_cached("PRAGMA data_version")
        .map_err(err)?
        .query_row([], |r| r.get(0))
        .map_err(err)?;
    let mut ids = RowIds::read(tx)?;
    let keys = match memo.keys.entry(job) {
        Entry::Occupied(e) => {
            let keys = e.into_mut();
            keys.refresh(tx, job, version, &ids)?;
            keys
        }
        Entry::Vacant(e) => e.insert(Keys::load(tx, job, version, &ids)?),
    };
    let cache = &mut memo.authorities;
    let mut next = None;
    if !batch.finished.is_empty() {
        // Unless another connection has committed since, the position
        // noted after this connection's last batch is still the next one.
        let known = match memo.next_seq.get(&job) {
            Some(&(seq, v)) if v == version => Some(seq),
            _ => None,
        };
        let seq = finish_urls(tx, cache, keys, &mut ids, known, job, batch)?;
        next = Some((seq, version));
    }
    admit_urls(
        tx,
        cache,
        keys,
        &mut ids,
        job,
        &batch.admit,
        &mut batch.admitted,
    )?;
    keys.merge_if_due(tx, job, merge_at)?;
    for (authority, limit) in &batch.load {
        let auth = authority_id(tx, cache, job, authority)?;
        let rows: Vec<(i64, FrontierEntry)> = {
            let mut stmt = tx
                .prepare_cached(
                    // A queued row with a result (finished without being
                    // loaded, as a skipped URL may be) is not loaded again.
                    "SELECT id, key, url, depth, parent, chain FROM urls u
                     WHERE job = ?1 AND auth = ?2 AND state = 0
                       AND NOT EXISTS (SELECT 1 FROM results r WHERE r.url = u.id)
                     ORDER BY depth LIMIT ?3",
                )
                .map_err(err)?;
            let rows = stmt
                .query_map(params![job, auth, *limit as i64], |r| {
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
            for row in rows {
                let (id, key, url, depth, parent, chain) = row.map_err(err)?;
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
            out
        };
        for (id, _) in &rows {
            tx.prepare_cached("UPDATE urls SET state = 1 WHERE id = ?1")
                .map_err(err)?
                .execute([id])
                .map_err(err)?;
        }
        batch
            .loaded
            .push(rows.into_iter().map(|(_, e)| e).collect());
    }
    for saved in &batch.authorities {
        let auth = authority_id(tx, cache, job, &saved.authority)?;
        let text = serde_json::to_string(saved).map_err(|e| StoreError::Backend(e.to_string()))?;
        tx.prepare_cached("UPDATE authorities SET state = ?1 WHERE job = ?2 AND id = ?3")
            .map_err(err)?
            .execute(params![text, job, auth])
            .map_err(err)?;
    }
    Ok(next)
}
