//! [`PgStore`]: PostgreSQL, for clusters. The same tables as SQLite; a
//! lost connection is reported as retryable and re-opened on the next call.

use std::collections::HashMap;

use crawlkeeper_model::state::{Batch, Resumed};
use crawlkeeper_model::{FrontierEntry, JobCounts};
use postgres::error::SqlState;
use postgres::{Client, NoTls, Transaction};
use tracing::info;

use crate::codec::{
    chain_from, chain_text, key_bytes, key_from, now_text, parse_authority, saved_state,
};
use crate::schema::{self, state};
use crate::{JobId, JobInfo, JobSpec, Store, StoreError};

/// A crawl state database on PostgreSQL.
pub struct PgStore {
    url: String,
    schema: Option<String>,
    client: Option<Client>,
    authorities: HashMap<(i64, String), i64>,
    locked: Vec<String>,
}

fn err(e: postgres::Error) -> StoreError {
    let lost = e.is_closed()
        || e.code().is_none_or(|c| {
            c.code().starts_with("08")
                || *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
                || *c == SqlState::CRASH_SHUTDOWN
        });
    if lost && e.as_db_error().is_none() {
        StoreError::Unavailable(e.to_string())
    } else if lost {
        StoreError::Unavailable(format!(
            "{e}: {}",
            e.as_db_error().map_or("", |d| d.message())
        ))
    } else {
        let detail = e
            .as_db_error()
            .map_or_else(String::new, |d| format!(": {}", d.message()));
        StoreError::Backend(format!("{e}{detail}"))
    }
}

/// A stable 64-bit number for a job name, for advisory locks.
fn lock_key(name: &str) -> i64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }) as i64
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
        let mut store = Self {
            url: url.to_owned(),
            schema: schema.map(str::to_owned),
            client: None,
            authorities: HashMap::new(),
            locked: Vec::new(),
        };
        store.client()?;
        Ok(store)
    }

    /// The connection, opened (and the schema migrated) if needed.
    fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let mut client = Client::connect(&self.url, NoTls).map_err(|e| {
                let e = err(e);
                match e {
                    StoreError::Unavailable(m) => {
                        StoreError::Unavailable(format!("cannot connect to PostgreSQL: {m}"))
                    }
                    other => other,
                }
            })?;
            if let Some(s) = &self.schema {
                client
                    .batch_execute(&format!(
                        "CREATE SCHEMA IF NOT EXISTS {s}; SET search_path TO {s}"
                    ))
                    .map_err(err)?;
            }
            migrate(&mut client)?;
            for name in &self.locked {
                let ok: bool = client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&lock_key(name)])
                    .map_err(err)?
                    .get(0);
                if !ok {
                    return Err(StoreError::Locked(name.clone()));
                }
            }
            if self.client.is_some() {
                info!("reconnected to PostgreSQL");
            }
            self.client = Some(client);
            self.authorities.clear();
        }
        // Just set above when it was missing.
        Ok(self.client.as_mut().expect("connected"))
    }

    /// Runs `op` on the connection; a lost connection is dropped so the next
    /// call reconnects.
    fn with<T>(
        &mut self,
        op: impl FnOnce(&mut Client, &mut HashMap<(i64, String), i64>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.client()?;
        let client = self.client.as_mut().expect("connected");
        let result = op(client, &mut self.authorities);
        if let Err(StoreError::Unavailable(_)) = &result {
            self.client = None;
        }
        if result.is_err() {
            self.authorities.clear();
        }
        result
    }
}

fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(err)?;
    tx.batch_execute("SELECT pg_advisory_xact_lock(7202611)")
        .map_err(err)?;
    for s in schema::postgres() {
        tx.batch_execute(&s).map_err(err)?;
    }
    let version: Option<i64> = tx
        .query_one("SELECT max(version) FROM crawlkeeper_version", &[])
        .map_err(err)?
        .get(0);
    match version {
        None => {
            tx.execute(
                "INSERT INTO crawlkeeper_version (version) VALUES ($1)",
                &[&schema::PG_VERSION],
            )
            .map_err(err)?;
        }
        Some(v) if v > schema::PG_VERSION => {
            return Err(StoreError::Corrupt(format!(
                "database schema version {v} is newer than this crawlkeeper ({})",
                schema::PG_VERSION
            )));
        }
        Some(_) => {}
    }
    tx.commit().map_err(err)
}

fn counts(client: &mut impl postgres::GenericClient, job: i64) -> Result<JobCounts, StoreError> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM urls WHERE job = $1),
                    (SELECT count(*) FROM results WHERE job = $1),
                    (SELECT count(*) FROM results WHERE job = $1 AND failed = 1)",
            &[&job],
        )
        .map_err(err)?;
    Ok(JobCounts {
        seen: row.get::<_, i64>(0) as u64,
        done: row.get::<_, i64>(1) as u64,
        errors: row.get::<_, i64>(2) as u64,
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
        counts: counts(client, id)?,
        name,
    })
}

const JOB_COLUMNS: &str = "id, name, created_at, seeds, options";

impl Store for PgStore {
    fn open_job(&mut self, spec: &JobSpec) -> Result<JobInfo, StoreError> {
        let seeds =
            serde_json::to_string(&spec.seeds).map_err(|e| StoreError::Backend(e.to_string()))?;
        self.with(|c, _| {
            c.execute(
                "INSERT INTO jobs (name, created_at, seeds, options) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (name) DO NOTHING",
                &[&spec.name, &now_text(), &seeds, &spec.options],
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
        self.with(|c, _| {
            let row = c
                .query_opt(
                    &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE name = $1"),
                    &[&name],
                )
                .map_err(err)?;
            row.map(|r| info(c, &r)).transpose()
        })
    }

    fn delete_job(&mut self, name: &str) -> Result<bool, StoreError> {
        let Some(job) = self.find_job(name)? else {
            return Ok(false);
        };
        self.lock_job(&job)?;
        self.with(|c, _| {
            let mut tx = c.transaction().map_err(err)?;
            for table in ["urls", "results", "authorities"] {
                tx.execute(&format!("DELETE FROM {table} WHERE job = $1"), &[&job.id.0])
                    .map_err(err)?;
            }
            tx.execute("DELETE FROM jobs WHERE id = $1", &[&job.id.0])
                .map_err(err)?;
            tx.commit().map_err(err)?;
            Ok(true)
        })
    }

    fn jobs(&mut self) -> Result<Vec<JobInfo>, StoreError> {
        self.with(|c, _| {
            let rows = c
                .query(&format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id"), &[])
                .map_err(err)?;
            rows.iter().map(|r| info(c, r)).collect()
        })
    }

    fn lock_job(&mut self, job: &JobInfo) -> Result<(), StoreError> {
        if self.locked.contains(&job.name) {
            return Ok(());
        }
        let key = lock_key(&job.name);
        let ok: bool = self.with(|c, _| {
            Ok(c.query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .map_err(err)?
                .get(0))
        })?;
        if !ok {
            return Err(StoreError::Locked(job.name.clone()));
        }
        self.locked.push(job.name.clone());
        Ok(())
    }

    fn resume(&mut self, job: JobId) -> Result<Resumed, StoreError> {
        self.with(|c, _| {
            let mut tx = c.transaction().map_err(err)?;
            // What a gone run held in memory is queued again.
            tx.execute(
                "UPDATE urls SET state = $1 WHERE job = $2 AND state = $3",
                &[&state::QUEUED, &job.0, &state::LOADED],
            )
            .map_err(err)?;
            let mut authorities = Vec::new();
            for row in tx
                .query(
                    "SELECT authority, state FROM authorities WHERE job = $1 AND state IS NOT NULL",
                    &[&job.0],
                )
                .map_err(err)?
            {
                let authority: String = row.get(0);
                let text: String = row.get(1);
                authorities.push(saved_state(&authority, &text)?);
            }
            let mut queued = Vec::new();
            for row in tx
                .query(
                    "SELECT a.authority, count(*) FROM urls u
                     JOIN authorities a ON a.job = u.job AND a.id = u.auth
                     WHERE u.job = $1 AND u.state = 0 GROUP BY a.authority",
                    &[&job.0],
                )
                .map_err(err)?
            {
                queued.push((parse_authority(row.get(0))?, row.get::<_, i64>(1) as u64));
            }
            let counts = counts(&mut tx, job.0)?;
            tx.commit().map_err(err)?;
            Ok(Resumed {
                counts,
                authorities,
                queued,
            })
        })
    }

    fn apply(&mut self, job: JobId, batch: &mut Batch) -> Result<(), StoreError> {
        self.with(|c, cache| {
            let mut tx = c.transaction().map_err(err)?;
            apply_in(&mut tx, cache, job.0, batch)?;
            tx.commit().map_err(err)
        })
    }

    fn results(
        &mut self,
        job: JobId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        self.with(|c, _| {
            let rows = c
                .query(
                    "SELECT seq, record FROM results WHERE job = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                    &[&job.0, &(after as i64), &(limit as i64)],
                )
                .map_err(err)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, String>(1)))
                .collect())
        })
    }
}

fn authority_id(
    tx: &mut Transaction<'_>,
    cache: &mut HashMap<(i64, String), i64>,
    job: i64,
    authority: &str,
) -> Result<i64, StoreError> {
    if let Some(id) = cache.get(&(job, authority.to_owned())) {
        return Ok(*id);
    }
    let existing = tx
        .query_opt(
            "SELECT id FROM authorities WHERE job = $1 AND authority = $2",
            &[&job, &authority],
        )
        .map_err(err)?;
    let id = match existing {
        Some(row) => row.get(0),
        None => {
            let row = tx
                .query_one(
                    "INSERT INTO authorities (job, id, authority)
                     SELECT $1, coalesce(max(id), 0) + 1, $2 FROM authorities WHERE job = $1
                     RETURNING id",
                    &[&job, &authority],
                )
                .map_err(err)?;
            row.get(0)
        }
    };
    cache.insert((job, authority.to_owned()), id);
    Ok(id)
}

fn apply_in(
    tx: &mut Transaction<'_>,
    cache: &mut HashMap<(i64, String), i64>,
    job: i64,
    batch: &mut Batch,
) -> Result<(), StoreError> {
    batch.recorded.clear();
    batch.admitted.clear();
    batch.loaded.clear();
    if !batch.finished.is_empty() {
        let mut seq: i64 = tx
            .query_one(
                "SELECT coalesce(max(seq), 0) + 1 FROM results WHERE job = $1",
                &[&job],
            )
            .map_err(err)?
            .get(0);
        let first = *batch.first_position.get_or_insert(seq as u64) as i64;
        let claim = tx
            .prepare(
                "UPDATE urls SET state = 2, seq = $1 WHERE job = $2 AND key = $3 AND state <> 2",
            )
            .map_err(err)?;
        let claim_new = tx
            .prepare(
                "INSERT INTO urls (job, key, auth, url, depth, parent, state, seq)
                 VALUES ($1, $2, $3, $4, $5, $6, 2, $7) ON CONFLICT DO NOTHING",
            )
            .map_err(err)?;
        let insert = tx
            .prepare("INSERT INTO results (job, seq, failed, record) VALUES ($1, $2, $3, $4)")
            .map_err(err)?;
        for f in &batch.finished {
            let key = key_bytes(f.key).to_vec();
            // Admitted and not finished; or never admitted (skipped with its authority).
            let claimed = tx.execute(&claim, &[&seq, &job, &key]).map_err(err)? == 1 || {
                let auth = authority_id(tx, cache, job, &f.record.authority.to_string())?;
                let depth = f.record.depth as i32;
                tx.execute(
                    &claim_new,
                    &[
                        &job,
                        &key,
                        &auth,
                        &f.record.url,
                        &depth,
                        &f.record.parent,
                        &seq,
                    ],
                )
                .map_err(err)?
                    == 1
            };
            let recorded = if claimed {
                let failed = i16::from(f.record.error.is_some());
                tx.execute(&insert, &[&job, &seq, &failed, &f.json])
                    .map_err(err)?;
                seq += 1;
                true
            } else {
                // Done already: by an attempt of this batch whose commit was not confirmed?
                tx.query_opt(
                    "SELECT seq FROM urls WHERE job = $1 AND key = $2",
                    &[&job, &key],
                )
                .map_err(err)?
                .and_then(|r| r.get::<_, Option<i64>>(0))
                .is_some_and(|s| s >= first)
            };
            batch.recorded.push(recorded);
        }
    }
    if !batch.admit.is_empty() {
        let insert = tx
            .prepare(
                "INSERT INTO urls (job, key, auth, url, depth, parent, chain, state)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
            )
            .map_err(err)?;
        for (entry, authority, loaded) in &batch.admit {
            let auth = authority_id(tx, cache, job, &authority.to_string())?;
            let st = if *loaded {
                state::LOADED
            } else {
                state::QUEUED
            };
            let depth = entry.depth as i32;
            let new = tx
                .execute(
                    &insert,
                    &[
                        &job,
                        &key_bytes(entry.key).to_vec(),
                        &auth,
                        &entry.url,
                        &depth,
                        &entry.parent,
                        &chain_text(entry),
                        &st,
                    ],
                )
                .map_err(err)?
                == 1;
            batch.admitted.push(new);
        }
    }
    for (authority, limit) in &batch.load {
        let auth = authority_id(tx, cache, job, &authority.to_string())?;
        let rows = tx
            .query(
                "UPDATE urls SET state = 1 WHERE id IN (
                     SELECT id FROM urls WHERE job = $1 AND auth = $2 AND state = 0
                     ORDER BY depth LIMIT $3)
                 RETURNING key, url, depth, parent, chain",
                &[&job, &auth, &(*limit as i64)],
            )
            .map_err(err)?;
        let mut entries = Vec::with_capacity(rows.len());
        for r in rows {
            entries.push(FrontierEntry {
                key: key_from(r.get::<_, &[u8]>(0))?,
                url: r.get(1),
                depth: r.get::<_, i32>(2) as u32,
                parent: r.get(3),
                redirect_chain: chain_from(r.get(4))?,
            });
        }
        entries.sort_by_key(|e| e.depth);
        batch.loaded.push(entries);
    }
    for saved in &batch.authorities {
        let name = saved.authority.to_string();
        let auth = authority_id(tx, cache, job, &name)?;
        let text = serde_json::to_string(saved).map_err(|e| StoreError::Backend(e.to_string()))?;
        tx.execute(
            "UPDATE authorities SET state = $1 WHERE job = $2 AND id = $3",
            &[&text, &job, &auth],
        )
        .map_err(err)?;
    }
    Ok(())
}
