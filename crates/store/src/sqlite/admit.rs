//! Admitting URLs: the new ones (neither among the job's newest keys,
//! held in memory, nor merged into `url_keys`; see [`super::keys`]) get a
//! row of `urls`, inserted [`CHUNK`](super::rows::CHUNK) to a statement with the ids the keys
//! gave out. A key offered twice is new once, the first time.
//!
//! A page of a fresh site brings tens of new links; one statement per row
//! spends more on running the statement than on the row. `urls` has no
//! unique index: its rows are appended in id order, so a commit of many
//! new URLs writes a few pages of the table, not a page of an index per
//! URL.

use std::sync::LazyLock;

use crawlkeeper_model::key::KeyMap;
use crawlkeeper_model::{Authority, FrontierEntry};
use rusqlite::Connection;
use rusqlite::types::ToSql;

use super::err;
use super::keys::{Keys, RowIds};
use super::rows::{AuthorityIds, MultiRow, authority_id, log_loaded};
use crate::StoreError;
use crate::codec::{chain_text, key_bytes};
use crate::schema::state;

/// The statement inserting new URLs.
static INSERT: LazyLock<MultiRow> = LazyLock::new(|| {
    MultiRow::new(
        "INSERT INTO urls (id, job, key, auth, url, depth, parent, chain, state)",
        "(?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
});

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
/// `admitted`, for each, whether it was; the new rows the crawler keeps
/// loaded are noted in `held`.
#[allow(clippy::too_many_arguments)]
pub fn admit_urls(
    tx: &Connection,
    cache: &mut AuthorityIds,
    keys: &mut Keys,
    held: &mut KeyMap<i64>,
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
    let requisites = rows.iter().filter(|r| r.entry.is_requisite()).count();
    if requisites > 0 {
        tx.prepare_cached("UPDATE jobs SET requisites = requisites + ?2 WHERE id = ?1")
            .and_then(|mut s| s.execute(rusqlite::params![job, requisites as i64]))
            .map_err(err)?;
    }
    let loaded = || rows.iter().filter(|r| r.state == state::LOADED);
    log_loaded(tx, job, loaded().map(|r| r.id))?;
    held.extend(loaded().map(|r| (r.entry.key, r.id)));
    INSERT.execute(tx, &rows, |r, v| {
        let e = r.entry;
        v.extend([
            &r.id as &dyn ToSql,
            &job,
            &r.key,
            &r.auth,
            &e.url,
            &e.depth,
            &e.parent,
            &r.chain,
            &r.state,
        ]);
    })
}
