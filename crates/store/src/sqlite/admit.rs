//! Admitting URLs: the new ones (neither among the job's newest keys,
//! held in memory, nor merged into `url_keys`; see [`super::keys`]) get a
//! row of `urls`, inserted [`CHUNK`] to a statement with the ids the keys
//! gave out. A key offered twice is new once, the first time.
//!
//! A page of a fresh site brings tens of new links; one statement per row
//! spends more on running the statement than on the row. `urls` has no
//! unique index: its rows are appended in id order, so a commit of many
//! new URLs writes a few pages of the table, not a page of an index per
//! URL.

use std::sync::LazyLock;

use crawlkeeper_model::{Authority, FrontierEntry};
use rusqlite::types::ToSql;
use rusqlite::{Connection, params, params_from_iter};

use super::apply::{AuthorityIds, CHUNK, authority_id, multi_row_sql};
use super::err;
use super::keys::{Keys, RowIds};
use crate::StoreError;
use crate::codec::{chain_text, key_bytes};
use crate::schema::state;

/// The statement inserting `rows` URLs.
fn insert_sql(rows: usize) -> String {
    multi_row_sql(
        "INSERT INTO urls (id, job, key, auth, url, depth, parent, chain, state)",
        "(?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
}

static INSERT_ONE: LazyLock<String> = LazyLock::new(|| insert_sql(1));
static INSERT_CHUNK: LazyLock<String> = LazyLock::new(|| insert_sql(CHUNK));

/// One new URL's column values.
struct Row<'a> {
    id: i64,
    key: [u8; 16],
    auth: i64,
    entry: &'a FrontierEntry,
    chain: Option<String>,
    state: i16,
}

/// Inserts the rows of `admit` that are new to `job`, pushing to
/// `admitted`, for each, whether it was.
pub fn admit_urls(
    tx: &Connection,
    cache: &mut AuthorityIds,
    keys: &mut Keys,
    ids: &mut RowIds,
    job: i64,
    admit: &[(FrontierEntry, Authority, bool)],
    admitted: &mut Vec<bool>,
) -> Result<(), StoreError> {
    if admit.is_empty() {
        return Ok(());
    }
    let start = admitted.len();
    admitted.resize(start + admit.len(), false);
    let unknown: Vec<u128> = admit
        .iter()
        .map(|(e, _, _)| e.key)
        .filter(|k| keys.in_tail(*k).is_none())
        .collect();
    let merged = keys.merged_among(tx, job, &unknown)?;
    let mut last: Option<(&Authority, i64)> = None;
    let mut rows = Vec::with_capacity(unknown.len());
    for ((entry, authority, loaded), new) in admit.iter().zip(&mut admitted[start..]) {
        if merged.contains(&entry.key) {
            continue;
        }
        let Some(id) = keys.add(entry.key, ids) else {
            continue;
        };
        *new = true;
        let auth = match last {
            Some((a, id)) if a == authority => id,
            _ => {
                let id = authority_id(tx, cache, job, authority)?;
                last = Some((authority, id));
                id
            }
        };
        rows.push(Row {
            id,
            key: key_bytes(entry.key),
            auth,
            entry,
            chain: chain_text(entry),
            state: if *loaded {
                state::LOADED
            } else {
                state::QUEUED
            },
        });
    }
    let mut one = tx.prepare_cached(&INSERT_ONE).map_err(err)?;
    let mut chunk = tx.prepare_cached(&INSERT_CHUNK).map_err(err)?;
    for part in rows.chunks(CHUNK) {
        if part.len() < CHUNK {
            for r in part {
                let e = r.entry;
                one.execute(params![
                    r.id, job, r.key, r.auth, e.url, e.depth, e.parent, r.chain, r.state
                ])
                .map_err(err)?;
            }
            continue;
        }
        let values = part.iter().flat_map(|r| {
            [
                &r.id as &dyn ToSql,
                &job,
                &r.key,
                &r.auth,
                &r.entry.url,
                &r.entry.depth,
                &r.entry.parent,
                &r.chain,
                &r.state,
            ]
        });
        chunk.execute(params_from_iter(values)).map_err(err)?;
    }
    Ok(())
}
