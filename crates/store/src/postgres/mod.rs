//! [`PgStore`]: PostgreSQL, for clusters and for jobs shared by several
//! processes. The same tables as SQLite, plus shard leases; a lost
//! connection is reported as retryable and re-opened on the next call.
//!
//! Several processes may write one job at once, each holding shards of it
//! ([`Store::claim`]): keys come from sequences, batches go in as arrays in
//! key order, loads skip rows another transaction holds, and every
//! transaction of a holder first checks its lease (`lease.rs`). A URL
//! admitted for a shard not held is noted in `handoff` for its holder,
//! who picks it up when it polls.
//!
//! Sessions carry `lock_timeout` and `idle_in_transaction_session_timeout`,
//! so that a paused process cannot keep the locks its heir needs.

mod apply;
mod cache;
mod lease;
mod listen;
pub mod polite;
mod probes;
mod recrawl;
mod revisit;

#[cfg(test)]
mod admit_tests;
#[cfg(test)]
mod finish_tests;
#[cfg(test)]
mod test_schema;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use crawlkeeper_model::JobCounts;
use crawlkeeper_model::state::{Batch, Resumed};
use postgres::error::SqlState;
use postgres::{Client, NoTls};
use tracing::{info, warn};

use crate::codec::{now_text, parse_authority, saved_state};
use crate::location::scrub;
use crate::schema;
use crate::{
    Claim, Claimed, Holder, JobId, JobInfo, JobSpec, ShardInfo, Store, StoreError, Writer,
};
use apply::apply_in;
use cache::Cache;
use lease::{Lease, lock_key, locked_by_others, try_lock, unlock};

/// Longest a statement waits for a row lock before its transaction is
/// retried: normal transactions hold locks for milliseconds.
const LOCK_TIMEOUT: &str = "5s";
/// A session idle inside a transaction this long is ended by the server,
/// releasing its locks (a paused or partitioned process).
const IDLE_IN_TRANSACTION: &str = "10s";
// The statements of a crawl's transactions are prepared on each
// connection, and prepared again as the tables grow: see
// `cache::Cache::statement`.

/// A crawl state database on PostgreSQL.
pub struct PgStore {
    url: String,
    schema: Option<String>,
    client: Option<Client>,
    cache: Cache,
    /// Shards claimed, by job id.
    leases: HashMap<i64, Lease>,
    /// The schema the tables are in.
    space: String,
    /// Threads listening for news of claimed jobs.
    listeners: Vec<listen::Listener>,
    /// This writer's row of each job's counts (`job_counts.slot`).
    slot: i32,
    /// What this process last wrote of its politeness holdings.
    polite: polite::Written,
}

/// Rows of counts a job's writers spread over: writers sharing a job
/// seldom share a row (and wait for each other only at its update, the
/// last statement before their commits, when they do).
const COUNT_SLOTS: u32 = 1024;

/// The row of counts of a store opened now: from the process id and the
/// stores this process opened before.
fn next_slot() -> i32 {
    static OPENED: AtomicU32 = AtomicU32::new(0);
    let n = OPENED.fetch_add(1, Ordering::Relaxed);
    (std::process::id()
        .wrapping_mul(2_654_435_761)
        .wrapping_add(n)
        % COUNT_SLOTS) as i32
}

fn err(e: postgres::Error) -> StoreError {
    let lost = e.is_closed()
        || e.code().is_none_or(|c| {
            c.code().starts_with("08")
                || *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT
        });
    let detail = e
        .as_db_error()
        .map_or_else(String::new, |d| format!(": {}", d.message()));
    let conflict = e.code().is_some_and(|c| {
        *c == SqlState::T_R_DEADLOCK_DETECTED
            || *c == SqlState::T_R_SERIALIZATION_FAILURE
            || *c == SqlState::LOCK_NOT_AVAILABLE
    });
    if lost {
        StoreError::Unavailable(format!("{e}{detail}"))
    } else if conflict {
        StoreError::Conflict(format!("{e}{detail}"))
    } else {
        StoreError::Backend(format!("{e}{detail}"))
    }
}

/// This process as a shard holder is shown: host name and process id.
pub fn this_process() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is ours and its length is given.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".to_owned()
    };
    format!("{host}:{}", std::process::id())
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and creates or
    /// migrates the tables.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_in_schema(url, None)
    }

    /// Like [`PgStore::connect`], with the tables in `schema` (created if
    /// absent): tests use one schema per run.
    pub fn connect_in_schema(url: &str, schema: Option<&str>) -> Result<Self, StoreError> {
        if let Some(s) = schema
            && !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(StoreError::Backend(format!("bad schema name {s:?}")));
        }
        // A location that does not read is the user's to fix, not an
        // outage to wait for (the driver's words name no value).
        if let Err(e) = url.parse::<postgres::Config>() {
            let why = match std::error::Error::source(&e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            };
            return Err(StoreError::Backend(scrub(&why, url)));
        }
        let mut store = Self {
            url: url.to_owned(),
            schema: schema.map(str::to_owned),
            client: None,
            cache: Cache::default(),
            leases: HashMap::new(),
            space: String::new(),
            listeners: Vec::new(),
            slot: next_slot(),
            polite: polite::Written::default(),
        };
        store.client()?;
        Ok(store)
    }

    /// Renews `holder`'s politeness holdings and grants its `wants`
    /// across every process sharing the database (see [`polite`]).
    pub fn polite_exchange(
        &mut self,
        holder: &str,
        wants: &[polite::PoliteWant],
    ) -> Result<Vec<(String, u32)>, StoreError> {
        self.client()?;
        let client = self.client.as_mut().expect("connected");
        let result = polite::exchange(client, &mut self.polite, holder, wants);
        if let Err(StoreError::Unavailable(_)) = &result {
            self.client = None;
        }
        result
    }

    /// The namespace of this store's advisory locks: its schema (advisory
    /// locks are per database, and schemas share them).
    fn space(&self) -> String {
        self.space.clone()
    }

    /// The connection, opened (and the schema migrated) if needed.
    fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let url = &self.url;
            let mut client = Client::connect(url, NoTls).map_err(|e| match err(e) {
                // The driver's words may hold the location: hidden.
                StoreError::Unavailable(m) => StoreError::Unavailable(format!(
                    "cannot connect to PostgreSQL: {}",
                    scrub(&m, url)
                )),
                StoreError::Conflict(m) => StoreError::Conflict(scrub(&m, url)),
                StoreError::Backend(m) => StoreError::Backend(scrub(&m, url)),
                other => other,
            })?;
            client
                .batch_execute(&format!(
                    "SET lock_timeout = '{LOCK_TIMEOUT}';
                     SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION}'"
                ))
                .map_err(err)?;
            if let Some(s) = &self.schema {
                client
                    .batch_execute(&format!(
                        "CREATE SCHEMA IF NOT EXISTS {s}; SET search_path TO {s}"
                    ))
                    .map_err(err)?;
            }
            migrate(&mut client)?;
            self.space = client
                .query_one("SELECT coalesce(current_schema(), '')", &[])
                .map_err(err)?
                .get(0);
            let space = self.space();
            for (job, lease) in &mut self.leases {
                // The session's locks went with the old connection.
                lease.unlocked = lease.held.iter().map(|(s, _)| *s).collect();
                lease::relock(&mut client, &space, *job, lease)?;
                if !lease.unlocked.is_empty() {
                    warn!(job = %lease.name, shards = ?lease.unlocked, "another session holds shards of this process");
                }
            }
            if self.client.is_some() {
                info!("reconnected to PostgreSQL");
            }
            self.client = Some(client);
            self.cache.clear();
        }
        // Just set above when it was missing.
        Ok(self.client.as_mut().expect("connected"))
    }

    /// Runs `op` on the connection; a lost connection is dropped so the next
    /// call reconnects.
    fn with<T>(
        &mut self,
        op: impl FnOnce(&mut Client, &mut Cache, &HashMap<i64, Lease>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.client()?;
        let client = self.client.as_mut().expect("connected");
        let result = op(client, &mut self.cache, &self.leases);
        if let Err(StoreError::Unavailable(_)) = &result {
            self.client = None;
        }
        if result.is_err() {
            self.cache.clear();
        }
        result
    }

    /// What earlier runs left in `shards` (all of the job's when `None`),
    /// after checking the lease: URLs held by a run that is gone are
    /// queued again.
    fn resume_in(&mut self, job: JobId, shards: Option<Vec<i32>>) -> Result<Resumed, StoreError> {
        self.with(|c, cache, leases| {
            let lease = leases.get(&job.0);
            let mut tx = c.transaction().map_err(err)?;
            if let Some(lease) = lease {
                lease::fence(&mut tx, cache, job.0, lease)?;
            }
            cache.forget_loaded(job.0);
            // What a gone run held in memory is queued again: read from
            // `urls_held` (states are literals, so that the partial index's
            // predicate is seen to hold).
            tx.execute(
                "UPDATE urls SET state = 0 WHERE job = $1 AND state = 1 AND ($2::int4[] IS NULL
                     OR auth IN (SELECT id FROM authorities WHERE job = $1 AND shard = ANY($2)))",
                &[&job.0, &shards],
            )
            .map_err(err)?;
            // Everything queued is read below: earlier notes are moot.
            tx.execute(
                "DELETE FROM handoff WHERE job = $1 AND ($2::int4[] IS NULL OR shard = ANY($2))",
                &[&job.0, &shards],
            )
            .map_err(err)?;
            let mut authorities = Vec::new();
            for row in tx
                .query(
                    "SELECT authority, state FROM authorities WHERE job = $1 AND state IS NOT NULL
                     AND ($2::int4[] IS NULL OR shard = ANY($2))",
                    &[&job.0, &shards],
                )
                .map_err(err)?
            {
                let authority: String = row.get(0);
                let text: String = row.get(1);
                authorities.push(saved_state(&authority, &text)?);
            }
            let mut queued = Vec::new();
            for row in tx
                .query(schema::PG_QUEUED_HOSTS, &[&job.0, &shards])
                .map_err(err)?
            {
                queued.push((parse_authority(row.get(0))?, row.get::<_, i64>(1) as u64));
            }
            let counts = counts(&mut tx, job.0)?;
            let stops: i64 = tx
                .query_one("SELECT stops FROM jobs WHERE id = $1", &[&job.0])
                .map_err(err)?
                .get(0);
            tx.commit().map_err(err)?;
            Ok(Resumed {
                counts,
                authorities,
                queued,
                stops: stops.max(0) as u64,
            })
        })
    }
}

fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(err)?;
    // Processes starting together wait for the first one's migration,
    // however long it takes.
    tx.batch_execute("SET LOCAL lock_timeout = 0; SELECT pg_advisory_xact_lock(7202611)")
        .map_err(err)?;
    // Up to date: no DDL, which would wait for every writer's locks.
    let exists: bool = tx
        .query_one("SELECT to_regclass('crawlkeeper_version') IS NOT NULL", &[])
        .map_err(err)?
        .get(0);
    let current: Option<i64> = if exists {
        tx.query_one("SELECT max(version) FROM crawlkeeper_version", &[])
            .map_err(err)?
            .get(0)
    } else {
        None
    };
    if current == Some(schema::PG_VERSION) {
        return tx.commit().map_err(err);
    }
    for s in schema::postgres() {
        tx.batch_execute(&s).map_err(err)?;
    }
    let version: Option<i64> = tx
        .query_one("SELECT max(version) FROM crawlkeeper_version", &[])
        .map_err(err)?
        .get(0);
    match version {
        Some(v) if v > schema::PG_VERSION => {
            return Err(StoreError::Corrupt(format!(
                "database schema version {v} is newer than this crawlkeeper ({})",
                schema::PG_VERSION
            )));
        }
        Some(v) if v == schema::PG_VERSION => {}
        old => {
            for (to, statements) in schema::PG_STEPS {
                if old.is_none_or(|v| v < *to) {
                    for s in *statements {
                        tx.batch_execute(s).map_err(err)?;
                    }
                }
            }
            if old.is_some_and(|v| v < schema::PG_REKEYED) {
                crate::rekey::postgres(&mut tx, schema::PG_URLS_KEY).map_err(err)?;
            }
            tx.execute("DELETE FROM crawlkeeper_version", &[])
                .map_err(err)?;
            tx.execute(
                "INSERT INTO crawlkeeper_version (version) VALUES ($1)",
                &[&schema::PG_VERSION],
            )
            .map_err(err)?;
            if old.is_some() {
                info!("database migrated to schema version {}", schema::PG_VERSION);
            }
        }
    }
    tx.commit().map_err(err)
}

fn counts(client: &mut impl postgres::GenericClient, job: i64) -> Result<JobCounts, StoreError> {
    let row = client
        .query_one(schema::READ_COUNTS, &[&job])
        .map_err(err)?;
    let count = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
    Ok(JobCounts {
        seen: count(0),
        done: count(1),
        errors: count(2),
        requisites: count(3),
    })
}

fn info(client: &mut Client, row: &postgres::Row) -> Result<JobInfo, StoreError> {
    let id: i64 = row.get(0);
    let name: String = row.get(1);
    let seeds: String = row.get(3);
    let seeds: Vec<String> = serde_json::from_str(&seeds)
        .map_err(|e| StoreError::Corrupt(format!("seeds of job {name}: {e}")))?;
    Ok(JobInfo {
        id: JobId(id),
        created_at: row.get(2),
        seeds,
        options: row.get(4),
        shards: u32::try_from(row.get::<_, i32>(5)).unwrap_or(1).max(1),
        counts: counts(client, id)?,
        stops: row.get::<_, i64>(6).max(0) as u64,
        name,
    })
}

const JOB_COLUMNS: &str = "id, name, created_at, seeds, options, shards, stops";

impl Store for PgStore {
    fn open_job(&mut self, spec: &JobSpec) -> Result<JobInfo, StoreError> {
        let seeds =
            serde_json::to_string(&spec.seeds).map_err(|e| StoreError::Backend(e.to_string()))?;
        let shards = i32::try_from(spec.shards.max(1))
            .map_err(|_| StoreError::Backend(format!("{} shards is too many", spec.shards)))?;
        self.with(|c, _, _| {
            c.execute(
                "INSERT INTO jobs (name, created_at, seeds, options, shards)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
                &[&spec.name, &now_text(), &seeds, &spec.options, &shards],
            )
            .map_err(err)?;
            let row = c
                .query_one(
                    &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE name = $1"),
                    &[&spec.name],
                )
                .map_err(err)?;
            info(c, &row)
        })
    }

    fn find_job(&mut self, name: &str) -> Result<Option<JobInfo>, StoreError> {
        self.with(|c, _, _| {
            let row = c
                .query_opt(
                    &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE name = $1"),
                    &[&name],
                )
                .map_err(err)?;
            row.map(|r| info(c, &r)).transpose()
        })
    }

    fn is_complete(&mut self, job: JobId) -> Result<Option<bool>, StoreError> {
        // Index probes (`urls_key`, `urls_queued`, `urls_held`), whatever
        // the job's size.
        self.with(|c, _, _| {
            let row = c
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1),
                        EXISTS (SELECT 1 FROM urls WHERE job = $1)
                        AND NOT EXISTS (SELECT 1 FROM urls WHERE job = $1 AND state = 0)
                        AND NOT EXISTS (SELECT 1 FROM urls WHERE job = $1 AND state = 1)",
                    &[&job.0],
                )
                .map_err(err)?;
            Ok(row.get::<_, bool>(0).then(|| row.get(1)))
        })
    }

    fn delete_job(&mut self, name: &str) -> Result<bool, StoreError> {
        let Some(job) = self.find_job(name)? else {
            return Ok(false);
        };
        let space = self.space();
        let keys: Vec<i64> = (0..job.shards)
            .map(|s| lock_key(&space, job.id.0, s))
            .collect();
        self.with(|c, _, _| {
            let mut taken = Vec::new();
            for &key in &keys {
                if !try_lock(c, key)? {
                    for &k in &taken {
                        unlock(c, k)?;
                    }
                    return Err(StoreError::Locked(job.name.clone()));
                }
                taken.push(key);
            }
            let mut tx = c.transaction().map_err(err)?;
            for table in [
                "urls",
                "results",
                "archives",
                "authorities",
                "shards",
                "leases",
                "handoff",
                "job_counts",
                "revisits",
                "revisit_rates",
            ] {
                tx.execute(&format!("DELETE FROM {table} WHERE job = $1"), &[&job.id.0])
                    .map_err(err)?;
            }
            tx.execute("DELETE FROM jobs WHERE id = $1", &[&job.id.0])
                .map_err(err)?;
            tx.commit().map_err(err)?;
            for &k in &taken {
                unlock(c, k)?;
            }
            Ok(())
        })?;
        if let Some(lease) = self.leases.remove(&job.id.0) {
            let held: Vec<u32> = lease.held.iter().map(|(s, _)| *s).collect();
            self.with(|c, _, _| {
                for s in held.iter().filter(|s| !lease.unlocked.contains(s)) {
                    unlock(c, lock_key(&space, job.id.0, *s))?;
                }
                Ok(())
            })?;
        }
        Ok(true)
    }

    fn jobs(&mut self) -> Result<Vec<JobInfo>, StoreError> {
        self.with(|c, _, _| {
            let rows = c
                .query(&format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id"), &[])
                .map_err(err)?;
            rows.iter().map(|r| info(c, r)).collect()
        })
    }

    fn lock_job(&mut self, job: &JobInfo) -> Result<(), StoreError> {
        if self
            .leases
            .get(&job.id.0)
            .is_some_and(|l| l.held.len() as u64 == u64::from(job.shards))
        {
            return Ok(());
        }
        match self.claim(job, &Claim::whole(job, &Holder::this_process())) {
            Err(StoreError::Held { .. }) => Err(StoreError::Locked(job.name.clone())),
            other => other.map(|_| ()),
        }
    }

    fn claim(&mut self, job: &JobInfo, claim: &Claim) -> Result<Claimed, StoreError> {
        // Shards held already stay as they are; the others are taken and
        // join the lease (a Runner taking over a dead one's shards).
        let held = self.leases.get(&job.id.0);
        let more = Claim {
            shards: claim
                .shards
                .iter()
                .copied()
                .filter(|s| held.is_none_or(|l| !l.owns(*s)))
                .collect(),
            ..claim.clone()
        };
        if more.shards.is_empty() && held.is_some() {
            return Ok(Claimed::default());
        }
        let space = self.space();
        let (taken, claimed) = self.with(|c, _, _| lease::take(c, &space, job, &more))?;
        match self.leases.get_mut(&job.id.0) {
            Some(lease) => lease.merge(taken),
            None => {
                self.leases.insert(job.id.0, taken);
            }
        }
        Ok(claimed)
    }

    fn resume(&mut self, job: JobId) -> Result<Resumed, StoreError> {
        let shards = self.leases.get(&job.0).map(Lease::shards);
        self.resume_in(job, shards)
    }

    fn resume_shards(&mut self, job: JobId, shards: &[u32]) -> Result<Resumed, StoreError> {
        let lease = self.leases.get(&job.0);
        if let Some(s) = shards.iter().find(|s| lease.is_none_or(|l| !l.owns(**s))) {
            return Err(StoreError::Backend(format!("shard {s} is not held")));
        }
        self.resume_in(job, Some(shards.iter().map(|&s| s as i32).collect()))
    }

    fn recrawl(&mut self, job: &JobInfo) -> Result<u64, StoreError> {
        self.lock_job(job)?;
        self.with(|c, cache, leases| {
            let mut tx = c.transaction().map_err(err)?;
            if let Some(lease) = leases.get(&job.id.0) {
                lease::fence(&mut tx, cache, job.id.0, lease)?;
            }
            let queued = recrawl::new_pass(&mut tx, job.id.0)?;
            tx.commit().map_err(err)?;
            Ok(queued)
        })
    }

    fn results_count(&mut self, job: JobId, shards: Option<&[u32]>) -> Result<u64, StoreError> {
        let shards: Option<Vec<i32>> = shards.map(|s| s.iter().map(|&h| h as i32).collect());
        self.with(|c, _, _| {
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM results
                     WHERE job = $1 AND ($2::int4[] IS NULL OR shard = ANY($2))",
                    &[&job.0, &shards],
                )
                .map_err(err)?
                .get(0);
            Ok(n.max(0) as u64)
        })
    }

    fn request_stop(&mut self, job: JobId) -> Result<(), StoreError> {
        self.with(|c, _, _| {
            c.execute("UPDATE jobs SET stops = stops + 1 WHERE id = $1", &[&job.0])
                .map(drop)
                .map_err(err)
        })
    }

    fn stops(&mut self, job: JobId) -> Result<u64, StoreError> {
        self.with(|c, _, _| {
            let n: Option<i64> = c
                .query_opt("SELECT stops FROM jobs WHERE id = $1", &[&job.0])
                .map_err(err)?
                .map(|r| r.get(0));
            Ok(n.unwrap_or(0).max(0) as u64)
        })
    }

    fn revisit_rates(&mut self, job: JobId) -> Result<Vec<(i16, u64)>, StoreError> {
        self.with(|c, _, _| revisit::rates(c, job.0))
    }

    fn apply(&mut self, job: JobId, batch: &mut Batch) -> Result<(), StoreError> {
        let slot = self.slot;
        self.with(|c, cache, leases| {
            let mut tx = c.transaction().map_err(err)?;
            apply_in(&mut tx, cache, job.0, slot, leases.get(&job.0), batch)?;
            tx.commit().map_err(err)
        })?;
        if batch.poll {
            let space = self.space();
            if let (Some(client), Some(lease)) = (self.client.as_mut(), self.leases.get_mut(&job.0))
                && !lease.unlocked.is_empty()
            {
                // A fenced-off holder's session may have ended since. The
                // batch is committed: a failure here is only logged.
                if let Err(e) = lease::relock(client, &space, job.0, lease) {
                    warn!(error = %e, "cannot take the shards' locks again");
                }
            }
        }
        Ok(())
    }

    fn archives(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.with(|c, _, _| {
            let rows = c
                .query(
                    "SELECT seq, data FROM archives WHERE job = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                    &[&job.0, &(after as i64), &(limit as i64)],
                )
                .map_err(err)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, Vec<u8>>(1)))
                .collect())
        })
    }

    fn results(
        &mut self,
        job: JobId,
        shards: Option<&[u32]>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let shard: Option<Vec<i32>> = shards.map(|s| s.iter().map(|&s| s as i32).collect());
        self.with(|c, _, _| {
            let rows = c
                .query(
                    "SELECT seq, record FROM results WHERE job = $1 AND seq > $2
                       AND ($4::int4[] IS NULL OR shard = ANY($4))
                     ORDER BY seq LIMIT $3",
                    &[&job.0, &(after as i64), &(limit as i64), &shard],
                )
                .map_err(err)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, String>(1)))
                .collect())
        })
    }

    fn results_by(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String, Option<Writer>)>, StoreError> {
        self.with(|c, _, _| {
            let rows = c
                .query(
                    "SELECT r.seq, r.record, r.shard, r.generation, l.holder FROM results r
                     LEFT JOIN leases l
                         ON l.job = r.job AND l.shard = r.shard AND l.generation = r.generation
                     WHERE r.job = $1 AND r.seq > $2 ORDER BY r.seq LIMIT $3",
                    &[&job.0, &(after as i64), &(limit as i64)],
                )
                .map_err(err)?;
            Ok(rows
                .iter()
                .map(|r| {
                    let writer = match (r.get::<_, Option<i64>>(3), r.get::<_, Option<String>>(4)) {
                        (Some(generation), Some(holder)) => Some(Writer {
                            holder,
                            shard: r.get::<_, i32>(2) as u32,
                            generation: generation as u64,
                        }),
                        _ => None,
                    };
                    (r.get::<_, i64>(0) as u64, r.get::<_, String>(1), writer)
                })
                .collect())
        })
    }

    fn subscribe(&mut self, job: JobId, wake: Box<dyn Fn() + Send>) -> Result<(), StoreError> {
        let listener = listen::Listener::start(&self.url, apply::channel(job.0), wake)
            .map_err(|e| StoreError::Backend(format!("cannot start a thread: {e}")))?;
        self.listeners.push(listener);
        Ok(())
    }

    fn shards(&mut self, job: &JobInfo) -> Result<Vec<ShardInfo>, StoreError> {
        let space = self.space();
        self.with(|c, _, _| {
            let mut out: Vec<ShardInfo> = (0..job.shards)
                .map(|shard| ShardInfo {
                    shard,
                    holder: None,
                    generation: 0,
                    live: false,
                    counts: JobCounts::default(),
                })
                .collect();
            let count = out.len();
            let slot = |s: i32| usize::try_from(s).ok().filter(|&i| i < count);
            for row in c
                .query(
                    "SELECT shard, generation, holder FROM shards WHERE job = $1",
                    &[&job.id.0],
                )
                .map_err(err)?
            {
                if let Some(i) = slot(row.get(0)) {
                    out[i].generation = row.get::<_, i64>(1) as u64;
                    out[i].holder = Some(row.get(2));
                }
            }
            // Kept as they change (see `schema::PG_TO_V7`).
            for row in c
                .query(
                    "SELECT shard, CAST(sum(seen) AS BIGINT), CAST(sum(done) AS BIGINT),
                         CAST(sum(errors) AS BIGINT)
                     FROM job_counts WHERE job = $1 GROUP BY shard",
                    &[&job.id.0],
                )
                .map_err(err)?
            {
                if let Some(i) = slot(row.get(0)) {
                    let count = |c: usize| u64::try_from(row.get::<_, i64>(c)).unwrap_or(0);
                    out[i].counts.seen = count(1);
                    out[i].counts.done = count(2);
                    out[i].counts.errors = count(3);
                }
            }
            let locked = locked_by_others(c)?;
            for s in &mut out {
                s.live = locked.contains(&lock_key(&space, job.id.0, s.shard));
            }
            Ok(out)
        })
    }
}
