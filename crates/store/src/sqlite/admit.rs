//! Admitting URLs: rows inserted [`CHUNK`] to a statement.
//!
//! A page of a fresh site brings tens of new links, each a row of `urls`
//! and an entry of its key index; one statement per row spends more on
//! running the statement than on the row. A statement of [`CHUNK`] rows
//! says how many were new, not which: when that is all of them (the usual
//! case, since the engine asks only about keys it does not remember), each
//! was new; otherwise the rows are looked up, and those inserted by this
//! transaction (ids past the largest before it) were new, each key once.
//!
//! The statement is `INSERT OR IGNORE`, not `ON CONFLICT DO NOTHING`: both
//! skip a known key, but a statement of several rows that may abort (on a
//! NOT NULL column, say) must journal every page it changes to undo itself,
//! and 16 random keys change 16 index pages (a temporary file per batch in
//! strace). Ignoring the other constraints changes nothing here: no column
//! that must not be NULL is ever given one.
//!
//! A new row's `seq` is [`SEQ_RESERVED`], not NULL: see there.

use std::collections::HashSet;
use std::sync::LazyLock;

use crawlkeeper_model::{Authority, FrontierEntry};
use rusqlite::types::ToSql;
use rusqlite::{Connection, params, params_from_iter};

use super::apply::{AuthorityIds, CHUNK, authority_id, multi_row_sql};
use super::err;
use crate::StoreError;
use crate::codec::{chain_text, key_bytes};
use crate::schema::state;

/// The `seq` of a URL without a result, written when it is admitted.
///
/// SQLite stores an integer in as few bytes as it needs and NULL in none,
/// and packs rows appended in order into full pages. Finishing a URL
/// writes its result position (up to 3 bytes for a million results) and
/// its state (1 byte) into its row: a row admitted with a NULL `seq` grows,
/// its full page splits, and a split costs three pages of log and, at
/// commit, a sweep of the whole page cache (SQLite renumbers the pages of
/// a split through a page number past the end of the file, which the cache
/// then truncates). A negative placeholder that takes 6 bytes (any position
/// below 2^47 fits in as many) makes the row shrink instead. Readers take
/// any `seq` below 1 as "no result", as they take NULL (files written
/// before have NULLs).
pub const SEQ_RESERVED: i64 = -(1 << 47);

/// The statement inserting `rows` URLs, ignoring known keys.
fn insert_sql(rows: usize) -> String {
    multi_row_sql(
        "INSERT OR IGNORE INTO urls (job, key, auth, url, depth, parent, chain, state, seq)",
        &format!("(?, ?, ?, ?, ?, ?, ?, ?, {SEQ_RESERVED})"),
        rows,
    )
}

static INSERT_ONE: LazyLock<String> = LazyLock::new(|| insert_sql(1));
static INSERT_CHUNK: LazyLock<String> = LazyLock::new(|| insert_sql(CHUNK));

/// One URL's column values.
struct Row {
    key: [u8; 16],
    auth: i64,
    chain: Option<String>,
    state: i16,
}

/// Inserts the rows of `admit` that are new to `job`, pushing to
/// `admitted`, for each, whether it was.
pub fn admit_urls(
    tx: &Connection,
    cache: &mut AuthorityIds,
    job: i64,
    admit: &[(FrontierEntry, Authority, bool)],
    admitted: &mut Vec<bool>,
) -> Result<(), StoreError> {
    if admit.is_empty() {
        return Ok(());
    }
    let before: i64 = tx
        .prepare_cached("SELECT coalesce(max(id), 0) FROM urls")
        .map_err(err)?
        .query_row([], |r| r.get(0))
        .map_err(err)?;
    let mut last: Option<(&Authority, i64)> = None;
    let mut rows = Vec::with_capacity(admit.len());
    for (entry, authority, loaded) in admit {
        let auth = match last {
            Some((a, id)) if a == authority => id,
            _ => {
                let id = authority_id(tx, cache, job, authority)?;
                last = Some((authority, id));
                id
            }
        };
        rows.push(Row {
            key: key_bytes(entry.key),
            auth,
            chain: chain_text(entry),
            state: if *loaded {
                state::LOADED
            } else {
                state::QUEUED
            },
        });
    }
    let start = admitted.len();
    let mut unsure = false;
    let mut one = tx.prepare_cached(&INSERT_ONE).map_err(err)?;
    let mut chunk = tx.prepare_cached(&INSERT_CHUNK).map_err(err)?;
    for (entries, rows) in admit.chunks(CHUNK).zip(rows.chunks(CHUNK)) {
        if entries.len() < CHUNK {
            for ((e, _, _), r) in entries.iter().zip(rows) {
                let n = one
                    .execute(params![
                        job, r.key, r.auth, e.url, e.depth, e.parent, r.chain, r.state
                    ])
                    .map_err(err)?;
                admitted.push(n == 1);
            }
            continue;
        }
        let values = entries.iter().zip(rows).flat_map(|((e, _, _), r)| {
            [
                &job as &dyn ToSql,
                &r.key,
                &r.auth,
                &e.url,
                &e.depth,
                &e.parent,
                &r.chain,
                &r.state,
            ]
        });
        let n = chunk.execute(params_from_iter(values)).map_err(err)?;
        unsure |= n < CHUNK;
        admitted.extend(std::iter::repeat_n(n == CHUNK, CHUNK));
    }
    if unsure {
        sort_out(tx, job, before, admit, rows, &mut admitted[start..])?;
    }
    Ok(())
}

/// Decides which URLs were new after a statement inserted fewer rows than
/// it had: a row inserted by this transaction has an id past `before`; a
/// key given twice is new once, the first time.
fn sort_out(
    tx: &Connection,
    job: i64,
    before: i64,
    admit: &[(FrontierEntry, Authority, bool)],
    rows: Vec<Row>,
    admitted: &mut [bool],
) -> Result<(), StoreError> {
    let mut find = tx
        .prepare_cached("SELECT id FROM urls WHERE job = ?1 AND key = ?2")
        .map_err(err)?;
    let mut seen = HashSet::with_capacity(admit.len());
    for ((new, (entry, _, _)), row) in admitted.iter_mut().zip(admit).zip(rows) {
        let id: i64 = find
            .query_row(params![job, row.key], |r| r.get(0))
            .map_err(err)?;
        *new = id > before && seen.insert(entry.key);
    }
    Ok(())
}
