//! A re-crawl's new pass over a job (`crawl --recrawl`), in the caller's
//! transaction: every URL queued again with what its record tells the
//! next request, the records and what came of them removed.

use postgres::Transaction;

use super::err;
use crate::StoreError;
use crate::codec::requeued_chain;

/// Finished URLs rewritten at a time by a re-crawl.
const RECRAWL_CHUNK: i32 = 10_000;

/// Queues every URL of `job` again inside `tx`; returns how many.
pub fn new_pass(tx: &mut Transaction<'_>, job: i64) -> Result<u64, StoreError> {
    // Read through a portal and rewritten a chunk at a time: a job
    // of millions of URLs is never in memory (or in one message).
    let portal = tx
        .bind(
            "SELECT u.id, u.chain, r.record FROM urls u
             JOIN results r ON r.job = u.job AND r.seq = u.seq WHERE u.job = $1",
            &[&job],
        )
        .map_err(err)?;
    loop {
        let rows = tx.query_portal(&portal, RECRAWL_CHUNK).map_err(err)?;
        if rows.is_empty() {
            break;
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut chains = Vec::with_capacity(rows.len());
        for r in rows {
            ids.push(r.get::<_, i64>(0));
            chains.push(requeued_chain(r.get(1), r.get(2))?);
        }
        tx.execute(
            "UPDATE urls u SET chain = v.c FROM unnest($1::bigint[], $2::text[]) AS v(i, c)
             WHERE u.id = v.i",
            &[&ids, &chains],
        )
        .map_err(err)?;
    }
    let queued = tx
        .execute(
            "UPDATE urls SET state = 0, seq = NULL WHERE job = $1",
            &[&job],
        )
        .map_err(err)?;
    for sql in [
        "DELETE FROM results WHERE job = $1",
        "DELETE FROM archives WHERE job = $1",
        "DELETE FROM revisits WHERE job = $1",
        "DELETE FROM revisit_rates WHERE job = $1",
        "DELETE FROM handoff WHERE job = $1",
        "UPDATE authorities SET state = NULL WHERE job = $1",
        "UPDATE job_counts SET done = 0, errors = 0 WHERE job = $1",
    ] {
        tx.execute(sql, &[&job]).map_err(err)?;
    }
    Ok(queued)
}
