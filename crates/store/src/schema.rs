//! The tables, written once for both backends (their SQL differs in a few
//! types, in how the seen set is indexed and in how a result names its
//! URL), and their versions.
//!
//! A job's URLs live in two tables, each shaped for how it is written:
//! - `urls`: one row per admitted URL (the seen set and the frontier),
//!   appended in admission order, one per (job, key); `state` says
//!   whether it waits in the store (0), is held by a crawler (1) or is
//!   done (2).
//! - `results`: one row per finished URL with its record, appended in the
//!   order results were stored (`seq`).
//! - `archives`: for jobs crawled with `--store-bodies`, a result's WARC
//!   records (request, response with headers and body as received,
//!   metadata; encoded as the crawl writes them, gzip members or plain),
//!   under the result's `seq`.
//! - `job_counts`: a job's URLs seen, done and failed, kept as they
//!   change (see [`PG_TO_V7`]).
//!
//! A URL's key (`key`) begins with 32 bits of its host's hash
//! ([`crawlkeeper_model::key::url_key`], since [`PG_REKEYED`]), so the
//! key indexes keep a host's URLs together.
//!
//! How the two meet differs:
//! - PostgreSQL: finishing a page marks its `urls` row done with the
//!   result's `seq`; a key finds its row through a unique index
//!   `urls (job, key)`, maintained row by row.
//! - SQLite (version 2) writes every page of a table it changes to its log
//!   in full (4 KiB), so it changes as few as it can per commit:
//!   - Finishing a page leaves `urls` alone: its result names the row
//!     (`results.url`) and sets the row's bit in `done_bits`, a bit per
//!     row id (since version 6; before, an index `results_url` on
//!     `results (url)`, see [`SQLITE_TO_V6`]). Marking rows done would
//!     dirty a page of `urls` per finished page (pages finish in another
//!     order than they were admitted), half of the log's pages in a crawl
//!     of 50 hosts. Resuming marks the rows a gone run held done or
//!     queued by their bits, finding them in `loaded` (a log of the rows
//!     loaded since the last resume); loads skip rows whose bit is set.
//!   - Keys find rows through `url_keys`, a table ordered by (job, key)
//!     that names each row's id, written in bulk: the keys of a job's
//!     newest rows (past `merged.upto`) are held in memory by the writing
//!     connection and merged into `url_keys` in sorted runs of thousands
//!     ([`crate::sqlite`]'s `keys` module). Keys were random hashes
//!     then, so a unique index maintained row by row wrote a different
//!     index page for nearly every new URL: in a commit of 250 new URLs,
//!     ~210 pages.
//!   - Version 1 files (the PostgreSQL layout) are migrated on open.

/// The schema version of PostgreSQL databases this build writes.
pub const PG_VERSION: i64 = 11;

/// The schema version of SQLite files this build writes.
pub const SQLITE_VERSION: i64 = 7;

/// PostgreSQL version 8 and SQLite version 5: URL keys are host-prefixed
/// ([`crawlkeeper_model::key::url_key`]); a store of an older version is
/// re-keyed from its URLs when it is opened (`rekey.rs`). No table
/// changes.
pub const PG_REKEYED: i64 = 8;

/// SQLite's version of host-prefixed keys: see [`PG_REKEYED`].
pub const SQLITE_REKEYED: i64 = 5;

/// Statements creating the tables of both backends, with `{blob}` and
/// `{serial}` to fill in.
const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS crawlkeeper_version (version BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jobs (
        id {serial} PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        seeds TEXT NOT NULL,
        options TEXT NOT NULL,
        requisites BIGINT NOT NULL DEFAULT 0,
        stops BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS authorities (
        job BIGINT NOT NULL,
        id BIGINT NOT NULL,
        authority TEXT NOT NULL,
        state TEXT,
        PRIMARY KEY (job, id),
        UNIQUE (job, authority))",
    "CREATE TABLE IF NOT EXISTS urls (
        id {serial} PRIMARY KEY,
        job BIGINT NOT NULL,
        key {blob} NOT NULL,
        auth BIGINT NOT NULL,
        url TEXT NOT NULL,
        depth INTEGER NOT NULL,
        parent TEXT,
        chain TEXT,
        state SMALLINT NOT NULL,
        seq BIGINT)",
    "CREATE INDEX IF NOT EXISTS urls_queued ON urls (job, auth, depth) WHERE state = 0",
    "CREATE TABLE IF NOT EXISTS job_counts (
        job BIGINT NOT NULL,
        shard INTEGER NOT NULL,
        slot INTEGER NOT NULL,
        seen BIGINT NOT NULL,
        done BIGINT NOT NULL,
        errors BIGINT NOT NULL,
        PRIMARY KEY (job, shard, slot))",
    "CREATE TABLE IF NOT EXISTS archives (
        job BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        data {blob} NOT NULL,
        PRIMARY KEY (job, seq))",
    REVISITS,
    REVISITS_DUE,
    REVISIT_RATES,
];

/// PostgreSQL version 10 and SQLite version 7: continuous crawls
/// (`--continuous`). A finished URL to be fetched again has a row in
/// `revisits` with its due time (milliseconds since the Unix epoch), its
/// shard and whether its last record failed; its `urls` row stays done
/// and its `chain` carries what the next fetch needs (validators, the
/// page's schedule). A poll moves the due rows of its shards back to the
/// queue through `revisits_due`: a probe of the index's due end, not a
/// scan. `jobs.stops`: how many times the job was asked to stop
/// (`crawlkeeper stop`); a run stops when it grows past what the run
/// read when it began (no clock, and nothing to take back).
const REVISITS: &str = "CREATE TABLE IF NOT EXISTS revisits (
        job BIGINT NOT NULL,
        url BIGINT NOT NULL,
        shard INTEGER NOT NULL,
        due BIGINT NOT NULL,
        failed SMALLINT NOT NULL,
        PRIMARY KEY (job, url))";

/// A continuous crawl's rate histogram: how many of a job's pages (of a
/// shard) are counted in each bucket of change rates, kept as they move
/// (each stored record moves its page), so that the request budget is
/// spread over the job's pages without reading them.
const REVISIT_RATES: &str = "CREATE TABLE IF NOT EXISTS revisit_rates (
        job BIGINT NOT NULL,
        shard INTEGER NOT NULL,
        bucket SMALLINT NOT NULL,
        pages BIGINT NOT NULL,
        PRIMARY KEY (job, shard, bucket))";

/// See [`REVISITS`].
const REVISITS_DUE: &str = "CREATE INDEX IF NOT EXISTS revisits_due ON revisits (job, shard, due)";

/// PostgreSQL version 10: see [`REVISITS`] (the tables' statements make
/// the table).
pub const PG_TO_V10: &[&str] =
    &["ALTER TABLE jobs ADD COLUMN IF NOT EXISTS stops BIGINT NOT NULL DEFAULT 0"];

/// SQLite version 7: see [`REVISITS`]. Run on an older file whose
/// `jobs` has no `stops` yet (SQLite cannot add a column "if not
/// exists").
pub const SQLITE_TO_V7: &str = "ALTER TABLE jobs ADD COLUMN stops BIGINT NOT NULL DEFAULT 0";

/// SQLite's version of [`SQLITE_TO_V7`].
pub const SQLITE_STOPPING: i64 = 7;

/// The unique index through which PostgreSQL finds a key's row. It
/// includes the row's depth (since version 9, [`PG_TO_V9`]).
pub const PG_URLS_KEY: &str =
    "CREATE UNIQUE INDEX IF NOT EXISTS urls_key ON urls (job, key) INCLUDE (depth)";

/// PostgreSQL version 9: `urls_key` includes `depth`, so that a link to
/// a known URL is answered by the index alone (its depth decides whether
/// the link is a shorter path), where the insert's conflict check read
/// the URL's row of `urls`: at 50 million URLs, a random page of a table
/// larger than memory. The entry stays 40 bytes (the 4 bytes of `depth`
/// take the padding after the 16-byte key), and a row's depth changes
/// only with its `urls_queued` entry, never in a HOT update. The index
/// is made again, under the migration's lock: minutes for a job of tens
/// of millions of URLs.
pub const PG_TO_V9: &[&str] = &["DROP INDEX IF EXISTS urls_key", PG_URLS_KEY];

/// PostgreSQL version 11: politeness across a cluster's processes
/// (`crate::postgres::polite`). `polite_holders`: each process sharing
/// the bounds, with when it last renewed its holdings (the store's
/// clock); a holder not renewed for 3 s is gone, with its holdings.
/// `polite_holds`: what each holder holds of a key (`host:NAME` or
/// `ip:ADDRESS`): `n` counted against the key's limit (what it was
/// granted, or more while more are in flight), `wants` what it could use
/// (more than `n`: it waits), `since` when it last got a share (for
/// turns).
const POLITE: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS polite_holders (
        holder TEXT PRIMARY KEY,
        renewed TIMESTAMPTZ NOT NULL,
        pid INTEGER NOT NULL,
        started TIMESTAMPTZ NOT NULL)",
    "CREATE TABLE IF NOT EXISTS polite_holds (
        key TEXT NOT NULL,
        holder TEXT NOT NULL REFERENCES polite_holders ON DELETE CASCADE,
        n INTEGER NOT NULL,
        granted INTEGER NOT NULL,
        wants INTEGER NOT NULL,
        since TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (key, holder))",
    "CREATE INDEX IF NOT EXISTS polite_waiting ON polite_holds (key) WHERE wants > n",
];

/// PostgreSQL version 11: see [`POLITE`] (made with the other tables).
pub const PG_TO_V11: &[&str] = &[];

/// PostgreSQL finds a key's row through a unique index, and keeps a
/// result's position in its URL's row.
const PG_TABLES: &[&str] = &[
    PG_URLS_KEY,
    "CREATE TABLE IF NOT EXISTS results (
        job BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        failed SMALLINT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (job, seq))",
];

/// PostgreSQL version 4: who wrote each result. Run once, on a database of
/// an older version, after [`PG_TO_V2`]:
/// - `leases`: every take of a shard (one row per generation), with its
///   holder, when, and `from_seq`, a value of `result_seqs` drawn after the
///   take held the shard's row: every result the shard's earlier holders
///   stored is below it (their transactions held the row, and the take
///   waited for them), and every result stored under this generation is
///   above it;
/// - `results.generation`: the generation of the lease a result was
///   stored under (`NULL` outside a lease, and for results of older
///   versions). With the shard, it names the lease's row: the writer.
pub const PG_TO_V4: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS leases (
        job BIGINT NOT NULL,
        shard INTEGER NOT NULL,
        generation BIGINT NOT NULL,
        holder TEXT NOT NULL,
        taken_at TEXT NOT NULL,
        from_seq BIGINT NOT NULL,
        PRIMARY KEY (job, shard, generation))",
    "ALTER TABLE results ADD COLUMN IF NOT EXISTS generation BIGINT",
];

/// Counts a job's requisites among its URLs when the column that keeps
/// the count is new: a requisite's row names its embed hops in `chain`
/// (`"embed":` is a key there: a string in JSON cannot hold an
/// unescaped quote).
const COUNT_REQUISITES: &str = "UPDATE jobs SET requisites = (SELECT count(*) FROM urls
     WHERE urls.job = jobs.id AND urls.chain LIKE '%\"embed\":%')";

/// PostgreSQL version 5 and SQLite version 3: `jobs.requisites`, the
/// job's admitted page requisites (`--requisites`), counted as they are
/// admitted so that `--max-pages` counts pages alone, across runs and
/// processes.
pub const PG_TO_V5: &[&str] = &[
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS requisites BIGINT NOT NULL DEFAULT 0",
    COUNT_REQUISITES,
];

/// SQLite version 3: see [`PG_TO_V5`].
pub const SQLITE_TO_V3: &[&str] = &[
    "ALTER TABLE jobs ADD COLUMN requisites BIGINT NOT NULL DEFAULT 0",
    COUNT_REQUISITES,
];

/// PostgreSQL version 7 and SQLite version 4: `job_counts`, the URLs of a
/// job's shard seen, done and failed, kept as they change, so that a
/// job's counts (`status`, `jobs`, every start and resume) and its
/// shards' (a cluster's `status`) read a few rows, where counting its
/// rows read the whole job (8 s at 50 million URLs on PostgreSQL, 26 s on
/// SQLite). Each transaction that admits or finishes URLs adds what it
/// changed to its writer's rows (`slot`), one per shard it changed:
/// PostgreSQL's writers sharing a job each add to their own rows, so that
/// none waits for another's (a URL of another Runner's shard is counted
/// in the finder's row of that shard); SQLite's one writer uses slot 0
/// of shard 0. The counts are the sums of a job's rows. The migration
/// counts each job's rows once.
pub const PG_TO_V7: &[&str] = &[
    "INSERT INTO job_counts (job, shard, slot, seen, done, errors)
     SELECT job, shard, 0, sum(seen), sum(done), sum(errors) FROM (
         SELECT u.job, a.shard, count(*) AS seen, 0 AS done, 0 AS errors
         FROM urls u JOIN authorities a ON a.job = u.job AND a.id = u.auth
         GROUP BY u.job, a.shard
         UNION ALL
         SELECT job, shard, 0, count(*), count(*) FILTER (WHERE failed = 1)
         FROM results GROUP BY job, shard) AS c
     GROUP BY job, shard",
];

/// SQLite version 4: `job_counts` (see [`PG_TO_V7`]), and `loaded`, the
/// rows of `urls` loaded by a crawler (state 1) since the job's last
/// resume, appended as they are loaded (a page of the log per commit, at
/// its end), so that a resume finds the rows a gone run held without
/// reading every row of the job (finishing leaves rows alone, so there
/// is no index of them: one would be written at random pages by every
/// load). A resume reads the job's entries and removes them.
pub const SQLITE_TO_V4: &[&str] = &[
    "INSERT INTO job_counts (job, shard, slot, seen, done, errors)
     SELECT id, 0, 0,
         (SELECT count(*) FROM urls u WHERE u.job = jobs.id),
         (SELECT count(*) FROM results r WHERE r.job = jobs.id),
         (SELECT count(*) FROM results r WHERE r.job = jobs.id AND r.failed = 1)
     FROM jobs",
    "INSERT INTO loaded (job, url) SELECT job, id FROM urls WHERE state = 1",
];

/// Adds a transaction's changes to a job's counts (`$1` job, `$2` slot;
/// `$3`–`$6` arrays of shards, in ascending order, and of their URLs
/// seen, done and failed), taken last in a transaction: the rows' locks
/// are held only until the commit.
pub const PG_ADD_COUNTS: &str = "INSERT INTO job_counts (job, shard, slot, seen, done, errors)
     SELECT $1, h, $2, a, d, e FROM unnest($3::int4[], $4::int8[], $5::int8[], $6::int8[])
         AS v(h, a, d, e)
     ON CONFLICT (job, shard, slot) DO UPDATE SET seen = job_counts.seen + excluded.seen,
         done = job_counts.done + excluded.done, errors = job_counts.errors + excluded.errors";

/// [`PG_ADD_COUNTS`] for SQLite: shard 0, slot 0 (`?1` job, `?2`–`?4`
/// seen, done, failed).
pub const SQLITE_ADD_COUNTS: &str = "INSERT INTO job_counts (job, shard, slot, seen, done, errors)
     VALUES (?1, 0, 0, ?2, ?3, ?4)
     ON CONFLICT (job, shard, slot) DO UPDATE SET seen = job_counts.seen + excluded.seen,
         done = job_counts.done + excluded.done, errors = job_counts.errors + excluded.errors";

/// PostgreSQL's migrations in order: each version's statements, run on a
/// database of an older version (or a new one).
pub const PG_STEPS: &[(i64, &[&str])] = &[
    (2, PG_TO_V2),
    (4, PG_TO_V4),
    (5, PG_TO_V5),
    (6, PG_TO_V6),
    (7, PG_TO_V7),
    (9, PG_TO_V9),
    (10, PG_TO_V10),
    (11, PG_TO_V11),
];

/// SQLite's migrations in order: each version's statements, run on a file
/// of an older version.
pub const SQLITE_STEPS: &[(i64, &[&str])] =
    &[(2, SQLITE_FROM_V1), (3, SQLITE_TO_V3), (4, SQLITE_TO_V4)];

/// A job's counts: seen, done, failed, requisites (`$1` the job).
pub const READ_COUNTS: &str = "SELECT CAST(coalesce(sum(seen), 0) AS BIGINT),
     CAST(coalesce(sum(done), 0) AS BIGINT), CAST(coalesce(sum(errors), 0) AS BIGINT),
     CAST(coalesce((SELECT requisites FROM jobs WHERE id = $1), 0) AS BIGINT)
     FROM job_counts WHERE job = $1";

/// The hosts of a job (`$1`) with queued URLs, and how many, for a
/// resume; with `$2`, the hosts of those shards alone. Each host's
/// entries of `urls_queued` are counted where they lie: the work is one
/// descent of the index per host and its queued URLs' entries, whatever
/// the planner's statistics (a join of every queued URL with its host's
/// name, grouped by name, was planned at 50 million URLs as a hash
/// aggregate spilled to disk: 19 s).
pub const PG_QUEUED_HOSTS: &str = "SELECT a.authority, q.n FROM authorities a
     CROSS JOIN LATERAL (SELECT count(*) AS n FROM urls u
         WHERE u.job = $1 AND u.auth = a.id AND u.state = 0) AS q
     WHERE a.job = $1 AND ($2::int4[] IS NULL OR a.shard = ANY($2)) AND q.n > 0";

/// [`PG_QUEUED_HOSTS`] for SQLite (one shard): counted per host id in the
/// order of `urls_queued` (one pass, no sort of every queued URL by its
/// host's name), then named.
pub const SQLITE_QUEUED_HOSTS: &str = "SELECT a.authority, q.n
     FROM (SELECT auth, count(*) AS n FROM urls WHERE job = ?1 AND state = 0 GROUP BY auth) AS q
     JOIN authorities a ON a.job = ?1 AND a.id = q.auth";

/// PostgreSQL version 3 adds the `archives` table (made by the tables'
/// statements, which run on every migration).
///
/// PostgreSQL version 2: one job written by many processes at once, each
/// holding shards of it (see [`crate::postgres`]). Run once, on a new
/// database or one of version 1, under the migration lock:
/// - `jobs.shards` (how many shards), `jobs.admitted` (URLs admitted, kept
///   for jobs with a page limit, counted job-wide); `authorities.shard`
///   and `results.shard` (the shard of the host);
/// - keys from sequences, not `max() + 1`, which two writers would share;
/// - `shards`: a lease row per shard, its generation bumped by each taker
///   and checked by every transaction of the holder (the fence);
/// - `handoff`: authorities of a shard to which another shard's process
///   added URLs, for the holder to pick up;
/// - `urls_open`: whether a job has a URL queued or held, at a glance
///   (replaced by `urls_held` in version 6).
pub const PG_TO_V2: &[&str] = &[
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS shards INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS admitted BIGINT",
    "ALTER TABLE authorities ADD COLUMN IF NOT EXISTS shard INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE results ADD COLUMN IF NOT EXISTS shard INTEGER NOT NULL DEFAULT 0",
    RESULTS_SHARD,
    "CREATE INDEX IF NOT EXISTS urls_open ON urls (job) WHERE state < 2",
    "CREATE TABLE IF NOT EXISTS shards (
        job BIGINT NOT NULL,
        shard INTEGER NOT NULL,
        generation BIGINT NOT NULL,
        holder TEXT NOT NULL,
        taken_at TEXT NOT NULL,
        PRIMARY KEY (job, shard))",
    "CREATE TABLE IF NOT EXISTS handoff (
        job BIGINT NOT NULL,
        shard INTEGER NOT NULL,
        auth BIGINT NOT NULL,
        PRIMARY KEY (job, shard, auth))",
    "CREATE SEQUENCE IF NOT EXISTS result_seqs",
    "SELECT setval('result_seqs', coalesce((SELECT max(seq) FROM results), 0) + 1, false)",
    "CREATE SEQUENCE IF NOT EXISTS authority_ids",
    "SELECT setval('authority_ids', coalesce((SELECT max(id) FROM authorities), 0) + 1, false)",
];

/// The index of a job's results by shard (version 2).
const RESULTS_SHARD: &str = "CREATE INDEX IF NOT EXISTS results_shard ON results (job, shard, seq)";

/// The index of the URLs a crawler holds (version 6).
const URLS_HELD: &str = "CREATE INDEX IF NOT EXISTS urls_held ON urls (job) WHERE state = 1";

/// PostgreSQL version 6: `urls_held`, the URLs held by a crawler, in
/// place of `urls_open` (queued or held). Whether a job is open is asked
/// of `urls_queued` and `urls_held`; resuming queues again the URLs a
/// gone run held by reading those alone, where `urls_open` made it read
/// every open URL of the job (42 s at 50 million URLs). A queued URL
/// has one index entry less.
pub const PG_TO_V6: &[&str] = &[URLS_HELD, "DROP INDEX IF EXISTS urls_open"];

/// The indexes of today's PostgreSQL schema that the tables' statements
/// ([`postgres`]) do not make: for a loader that drops the indexes and
/// makes them again after a bulk load.
pub const PG_INDEXES: &[&str] = &[RESULTS_SHARD, URLS_HELD];

/// SQLite finds a key's row through `url_keys`, merged in bulk, and the
/// rows past `merged.upto`, which the writing connection holds in memory;
/// a result names its URL's row (`url`), whose bit in `done_bits` says
/// that it has one ([`crate::sqlite`]'s `done` module).
const SQLITE_TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS results (
        job INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        url INTEGER,
        failed INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (job, seq))",
    "CREATE TABLE IF NOT EXISTS url_keys (
        job INTEGER NOT NULL,
        key BLOB NOT NULL,
        id INTEGER NOT NULL,
        PRIMARY KEY (job, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS merged (
        job INTEGER PRIMARY KEY,
        upto INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS loaded (
        job INTEGER NOT NULL,
        url INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS done_bits (
        chunk INTEGER PRIMARY KEY,
        bits BLOB NOT NULL)",
];

/// SQLite version 6: which rows have a result is kept in `done_bits` (a
/// bit per row id, filled from the results by the migration), in place
/// of the index `results_url` on `results (url)`, dropped after. Each
/// finished page wrote an entry of that index at its row's place, a page
/// at random among the job's results (at 50 million URLs, a finish of a
/// loaded page cost 2.4× its cost at 1 million, waiting for the disk);
/// its bit's page is one of a few thousand at that size.
pub const SQLITE_TO_V6: &[&str] = &["DROP INDEX IF EXISTS results_url"];

/// SQLite's version of [`SQLITE_TO_V6`]: the bits are filled from the
/// results before the index goes.
pub const SQLITE_DONE_BITS: i64 = 6;

/// Turns a SQLite file of version 1 (the PostgreSQL layout) into version
/// 2, after [`sqlite`] created the new tables.
pub const SQLITE_FROM_V1: &[&str] = &[
    "INSERT OR IGNORE INTO url_keys (job, key, id) SELECT job, key, id FROM urls ORDER BY job, key",
    "INSERT OR REPLACE INTO merged (job, upto) SELECT job, max(id) FROM urls GROUP BY job",
    "DROP INDEX IF EXISTS urls_key",
    "ALTER TABLE results ADD COLUMN url INTEGER",
    "UPDATE results SET url = u.id FROM urls AS u WHERE u.job = results.job AND u.seq = results.seq",
];

fn fill(tables: &[&[&str]], blob: &str, serial: &str) -> Vec<String> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .map(|t| t.replace("{blob}", blob).replace("{serial}", serial))
        .collect()
}

/// The statements creating PostgreSQL's tables.
pub fn postgres() -> Vec<String> {
    fill(&[TABLES, PG_TABLES, POLITE], "BYTEA", "BIGSERIAL")
}

/// The statements creating SQLite's tables (then [`SQLITE_INDEXES`]).
pub fn sqlite() -> Vec<String> {
    fill(&[TABLES, SQLITE_TABLES], "BLOB", "INTEGER")
}

/// Row states of `urls`.
pub mod state {
    /// Admitted, waiting in the store.
    pub const QUEUED: i16 = 0;
    /// Admitted and held in a crawler's memory.
    pub const LOADED: i16 = 1;
    /// Finished; its record is in `results`.
    pub const DONE: i16 = 2;
}
