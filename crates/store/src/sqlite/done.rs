//! Which rows of `urls` have a result: a bit per row id, kept in the
//! table `done_bits` in chunks of [`CHUNK_IDS`] ids (a row of
//! [`CHUNK_BYTES`] bytes; a chunk without a row has no bit set).
//!
//! A finished page sets its row's bit, where version 5 inserted an entry
//! into the index `results_url` at its row's place. Those entries lay at
//! random places among all the job's results (a page's row id is where
//! its URL was admitted), so each finish wrote a page of an index that
//! grows with the job: 25 million entries at 50 million URLs, larger than
//! the cache. The bits of 50 million rows are 6 MB (a billion: 125 MB):
//! the pages a finish writes stay few and in memory, whatever the job's
//! size. A bit is set exactly when a result of the row's latest fetch
//! names the row: set by the finish that writes the result, cleared where
//! results are deleted and where a continuous crawl queues the row again
//! (its earlier fetches' results stay).
//!
//! The writing connection keeps the chunks it read ([`DoneBits`]) while
//! no other connection commits to the file, and writes the ones it
//! changed at the end of each transaction.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

use rusqlite::{Connection, OptionalExtension, Params, params};

use super::err;
use crate::StoreError;

/// Row ids per chunk.
pub const CHUNK_IDS: i64 = 1 << 14;
/// Bytes of a chunk's bits.
pub const CHUNK_BYTES: usize = (CHUNK_IDS / 8) as usize;
/// Chunks held in memory, at most (128 MB: the rows of two billion ids).
const CACHE_CAP: usize = 1 << 16;

/// The chunk holding `id`, and the byte and mask of its bit there.
fn place(id: i64) -> (i64, usize, u8) {
    let bit = id.rem_euclid(CHUNK_IDS) as usize;
    (id.div_euclid(CHUNK_IDS), bit / 8, 1 << (bit % 8))
}

/// The chunks of `done_bits` a connection read, valid while the file's
/// data version is the one noted.
#[derive(Debug, Default)]
pub struct DoneBits {
    /// The file's data version when `chunks` was last valid.
    version: i64,
    chunks: HashMap<i64, Box<[u8]>>,
    /// The chunks changed since the last write: a write costs what the
    /// transaction changed, not what the connection has read.
    dirty: BTreeSet<i64>,
}

impl DoneBits {
    /// The bits, forgotten first if the file's data version is no longer
    /// `version` (another connection committed) or the cache is full.
    /// Called at the start of a transaction, when no chunk is dirty.
    pub fn at(&mut self, version: i64) -> &mut Self {
        if self.version != version || self.chunks.len() >= CACHE_CAP {
            self.chunks.clear();
            self.version = version;
        }
        self
    }

    /// Forgets every chunk (after a failed transaction, whose changes
    /// they may hold).
    pub fn forget(&mut self) {
        self.chunks.clear();
        self.dirty.clear();
    }

    fn chunk(&mut self, tx: &Connection, chunk: i64) -> Result<&mut [u8], StoreError> {
        match self.chunks.entry(chunk) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let stored: Option<Vec<u8>> = tx
                    .prepare_cached("SELECT bits FROM done_bits WHERE chunk = ?1")
                    .map_err(err)?
                    .query_row([chunk], |r| r.get(0))
                    .optional()
                    .map_err(err)?;
                let mut bits = stored.unwrap_or_default();
                // A chunk of another length (none is written) reads as
                // zeros past its end.
                bits.resize(CHUNK_BYTES, 0);
                Ok(e.insert(bits.into_boxed_slice()))
            }
        }
    }

    /// Whether row `id` has a result.
    pub fn get(&mut self, tx: &Connection, id: i64) -> Result<bool, StoreError> {
        let (chunk, byte, mask) = place(id);
        Ok(self.chunk(tx, chunk)?[byte] & mask != 0)
    }

    /// Sets (`done`) or clears row `id`'s bit, in memory until [`write`](Self::write).
    pub fn set(&mut self, tx: &Connection, id: i64, done: bool) -> Result<(), StoreError> {
        let (chunk, byte, mask) = place(id);
        let bits = self.chunk(tx, chunk)?;
        let before = bits[byte];
        bits[byte] = if done { before | mask } else { before & !mask };
        if bits[byte] != before {
            self.dirty.insert(chunk);
        }
        Ok(())
    }

    /// Writes the chunks changed since the last write, inside `tx`.
    pub fn write(&mut self, tx: &Connection) -> Result<(), StoreError> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        let mut stmt = tx
            .prepare_cached("INSERT OR REPLACE INTO done_bits (chunk, bits) VALUES (?1, ?2)")
            .map_err(err)?;
        // A changed chunk is held until written: `at` is called between
        // transactions, and `forget` drops both.
        for chunk in std::mem::take(&mut self.dirty) {
            if let Some(bits) = self.chunks.get(&chunk) {
                stmt.execute(params![chunk, &bits[..]]).map_err(err)?;
            }
        }
        Ok(())
    }
}

/// Sets or clears the bits of ids given in increasing order, writing
/// each chunk once passed (a migration's, a deletion's, a bulk load's).
pub struct InOrder<'a> {
    tx: &'a Connection,
    bits: DoneBits,
    done: bool,
    last: Option<i64>,
}

impl<'a> InOrder<'a> {
    /// Sets (`done`) or clears bits in `tx`.
    pub fn new(tx: &'a Connection, done: bool) -> Self {
        Self {
            tx,
            bits: DoneBits::default(),
            done,
            last: None,
        }
    }

    /// Sets or clears `id`'s bit.
    pub fn push(&mut self, id: i64) -> Result<(), StoreError> {
        let chunk = place(id).0;
        if self.last.is_some_and(|last| last != chunk) {
            // A chunk behind: written and let go.
            self.bits.write(self.tx)?;
            self.bits.chunks.clear();
        }
        self.last = Some(chunk);
        self.bits.set(self.tx, id, self.done)
    }

    /// Writes what is left.
    pub fn end(mut self) -> Result<(), StoreError> {
        self.bits.write(self.tx)
    }
}

/// Sets or clears the bits of the rows that `sql` (with `params`) names,
/// one id a row, in order; returns how many.
pub fn set_rows(
    tx: &Connection,
    sql: &str,
    params: impl Params,
    done: bool,
) -> Result<u64, StoreError> {
    let mut bits = InOrder::new(tx, done);
    let mut n = 0u64;
    let mut stmt = tx.prepare(sql).map_err(err)?;
    let mut rows = stmt.query(params).map_err(err)?;
    while let Some(row) = rows.next().map_err(err)? {
        bits.push(row.get(0).map_err(err)?)?;
        n += 1;
    }
    bits.end()?;
    Ok(n)
}

/// The statement filling `done_bits` from every result (version 6's
/// migration): the rows results name, in order.
pub const RESULT_ROWS: &str = "SELECT url FROM results WHERE url IS NOT NULL ORDER BY url";

/// The rows a job's results name (`?1` the job), whose bits a deletion
/// of those results clears.
pub const JOB_RESULT_ROWS: &str =
    "SELECT url FROM results WHERE job = ?1 AND url IS NOT NULL ORDER BY url";

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE done_bits (chunk INTEGER PRIMARY KEY, bits BLOB NOT NULL)")
            .unwrap();
        c
    }

    #[test]
    fn bits_are_kept_per_row_across_chunks_and_connections_reads() {
        let c = file();
        let mut bits = DoneBits::default();
        let ids = [
            1,
            7,
            8,
            CHUNK_IDS - 1,
            CHUNK_IDS,
            3 * CHUNK_IDS + 5,
            i64::MAX,
        ];
        for id in ids {
            assert!(!bits.get(&c, id).unwrap());
            bits.set(&c, id, true).unwrap();
        }
        bits.write(&c).unwrap();
        // A fresh reader sees exactly those bits.
        let mut other = DoneBits::default();
        for id in ids {
            assert!(other.get(&c, id).unwrap(), "{id}");
        }
        for id in [0, 2, 6, 9, CHUNK_IDS - 2, CHUNK_IDS + 1, 2 * CHUNK_IDS] {
            assert!(!other.get(&c, id).unwrap(), "{id}");
        }
        let chunks: i64 = c
            .query_row("SELECT count(*) FROM done_bits", [], |r| r.get(0))
            .unwrap();
        assert_eq!(chunks, 4, "a row per chunk with a bit set");
        // Cleared and written: gone for a fresh reader.
        bits.set(&c, 8, false).unwrap();
        bits.write(&c).unwrap();
        assert!(!DoneBits::default().get(&c, 8).unwrap());
        assert!(DoneBits::default().get(&c, 7).unwrap());
    }

    #[test]
    fn a_new_data_version_or_a_forget_drops_what_was_read() {
        let c = file();
        let mut bits = DoneBits::default();
        assert!(!bits.at(1).get(&c, 42).unwrap());
        // Another connection sets the bit.
        let mut other = DoneBits::default();
        other.set(&c, 42, true).unwrap();
        other.write(&c).unwrap();
        assert!(!bits.at(1).get(&c, 42).unwrap(), "same version: cached");
        assert!(bits.at(2).get(&c, 42).unwrap(), "a new version reads again");
        bits.set(&c, 43, true).unwrap();
        bits.forget();
        assert!(
            !bits.get(&c, 43).unwrap(),
            "an unwritten change is forgotten"
        );
    }

    #[test]
    fn set_rows_fills_and_clears_from_a_statement() {
        let c = file();
        c.execute_batch(
            "CREATE TABLE results (job INTEGER, url INTEGER);
             INSERT INTO results VALUES (1, 3), (1, 70000), (2, 4), (1, NULL), (2, 2000000);",
        )
        .unwrap();
        assert_eq!(set_rows(&c, RESULT_ROWS, [], true).unwrap(), 4);
        let mut bits = DoneBits::default();
        for (id, done) in [
            (3, true),
            (4, true),
            (70000, true),
            (2000000, true),
            (5, false),
        ] {
            assert_eq!(bits.get(&c, id).unwrap(), done, "{id}");
        }
        assert_eq!(set_rows(&c, JOB_RESULT_ROWS, [1], false).unwrap(), 2);
        let mut bits = DoneBits::default();
        for (id, done) in [(3, false), (4, true), (70000, false), (2000000, true)] {
            assert_eq!(bits.get(&c, id).unwrap(), done, "{id}");
        }
    }
}
