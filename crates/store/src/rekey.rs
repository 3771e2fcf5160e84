//! Re-keying a job's URLs when the key of a URL changed (PostgreSQL
//! version 8, SQLite version 5): keys became host-prefixed
//! ([`crawlkeeper_model::key`]), so a store of an older version holds keys
//! that this build's crawler would never compute, and every URL it knows
//! would look new (and be fetched again). Each row's key is computed anew
//! from its URL, which every row keeps as text, in chunks of rows in id
//! order, inside the migration's transaction: a crash leaves the old
//! version whole, and the migration runs again on the next open.
//!
//! A URL that no longer parses keeps its old key: the crawler skips such
//! a row when it loads it, and no URL it finds can have that key.

use crawlkeeper_model::key::key_of_text;
use tracing::info;

use crate::codec::key_bytes;

/// Rows re-keyed per statement.
const CHUNK: i64 = 10_000;

/// Rows between progress lines.
const REPORT_EVERY: u64 = 1_000_000;

/// The new keys of a chunk of rows: (id, key) for every row whose URL
/// parses.
fn new_keys<'a>(rows: impl Iterator<Item = (i64, &'a str)>) -> Vec<(i64, [u8; 16])> {
    rows.filter_map(|(id, url)| key_of_text(url).map(|k| (id, key_bytes(k))))
        .collect()
}

/// Logs the progress of a re-keying now and then.
fn progress(done: u64, last: bool) {
    if done > 0 && (last || done.is_multiple_of(REPORT_EVERY)) {
        info!(
            urls = done,
            "re-keying the URLs of the state (host-prefixed keys)"
        );
    }
}

/// Re-keys every row of `urls` in a PostgreSQL migration's transaction.
/// The unique index of keys is dropped first and made again after (one
/// sort, where updating it row by row would write a random page per row).
pub fn postgres(
    tx: &mut postgres::Transaction<'_>,
    make_index: &str,
) -> Result<u64, postgres::Error> {
    tx.batch_execute("DROP INDEX IF EXISTS urls_key")?;
    let (mut last, mut done) = (0i64, 0u64);
    loop {
        let rows = tx.query(
            "SELECT id, url FROM urls WHERE id > $1 ORDER BY id LIMIT $2",
            &[&last, &CHUNK],
        )?;
        let Some(end) = rows.last() else { break };
        last = end.get(0);
        let keyed = new_keys(rows.iter().map(|r| (r.get(0), r.get(1))));
        let (ids, keys): (Vec<i64>, Vec<&[u8]>) =
            keyed.iter().map(|(id, k)| (*id, k.as_slice())).unzip();
        tx.execute(
            "UPDATE urls u SET key = v.k FROM unnest($1::int8[], $2::bytea[]) AS v(i, k)
             WHERE u.id = v.i",
            &[&ids, &keys],
        )?;
        done += rows.len() as u64;
        progress(done, false);
    }
    progress(done, true);
    tx.batch_execute(make_index)?;
    Ok(done)
}

/// Re-keys every row of `urls` in a SQLite migration's transaction, and
/// makes `url_keys` again from them, every row merged.
pub fn sqlite(tx: &rusqlite::Connection) -> Result<u64, rusqlite::Error> {
    let (mut last, mut done) = (0i64, 0u64);
    let mut read = tx.prepare("SELECT id, url FROM urls WHERE id > ?1 ORDER BY id LIMIT ?2")?;
    let mut write = tx.prepare("UPDATE urls SET key = ?2 WHERE id = ?1")?;
    loop {
        let rows: Vec<(i64, String)> = read
            .query_map(rusqlite::params![last, CHUNK], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .and_then(Iterator::collect)?;
        let Some((end, _)) = rows.last() else { break };
        last = *end;
        for (id, key) in new_keys(rows.iter().map(|(id, url)| (*id, url.as_str()))) {
            write.execute(rusqlite::params![id, key])?;
        }
        done += rows.len() as u64;
        progress(done, false);
    }
    progress(done, true);
    tx.execute_batch(
        "DELETE FROM url_keys;
         INSERT OR IGNORE INTO url_keys (job, key, id) SELECT job, key, id FROM urls ORDER BY job, key;
         DELETE FROM merged;
         INSERT INTO merged (job, upto) SELECT job, max(id) FROM urls GROUP BY job;",
    )?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_are_the_crawlers_and_skip_what_does_not_parse() {
        let keyed =
            new_keys([(1, "http://a.test/x"), (2, "::"), (3, "http://b.test/")].into_iter());
        let ids: Vec<i64> = keyed.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [1, 3]);
        let want = crawlkeeper_model::key::url_key("a.test", "http://a.test/x");
        assert_eq!(keyed[0].1, want.to_be_bytes());
    }
}
