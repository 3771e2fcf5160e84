//! Helpers the batch's writers share: multi-row `INSERT`s ([`MultiRow`],
//! [`CHUNK`] rows to a statement) and authority row ids remembered by job
//! ([`authority_id`]), and the log of loads ([`log_loaded`]). They import
//! none of the writers.

use std::collections::HashMap;

use crawlkeeper_model::Authority;
use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::err;
use crate::StoreError;

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

/// The row id of `authority` in `job`, from `cache` or the database; a
/// new authority gets a row (and the next id of the job).
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

/// Notes rows of `job` just loaded (state 1) in `loaded`, for a resume.
pub fn log_loaded(
    tx: &Connection,
    job: i64,
    ids: impl IntoIterator<Item = i64>,
) -> Result<(), StoreError> {
    let mut insert = tx
        .prepare_cached("INSERT INTO loaded (job, url) VALUES (?1, ?2)")
        .map_err(err)?;
    for id in ids {
        insert.execute([job, id]).map_err(err)?;
    }
    Ok(())
}
