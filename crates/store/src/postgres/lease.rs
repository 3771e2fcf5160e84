//! Shard leases: who holds which shard of a job, and the fence that stops
//! a holder whose shard was taken over.
//!
//! A shard's row in `shards` has a generation, bumped by each process
//! that takes the shard. The holder remembers the generation it got; every
//! transaction it runs first reads its shards' rows `FOR SHARE` and stops
//! with [`StoreError::Fenced`] when a generation moved. The share lock
//! makes the check exact: a taker's bump waits for a transaction that
//! passed the check to end, and a transaction that starts after the bump
//! sees it. A session-level advisory lock per shard tells whether a live
//! process holds it (a crashed one's session, and its lock, end with it);
//! it never fences, since a paused process keeps its connection.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use postgres::{Client, Transaction};

use super::cache::{Cache, q};
use super::err;
use crate::codec::now_text;
use crate::{Claim, Claimed, JobInfo, StoreError};

/// How long a take-over waits for the old holder's transaction to end
/// (a paused holder's is ended by the server, see `IDLE_IN_TRANSACTION`).
const TAKE_OVER_WAIT: Duration = Duration::from_secs(60);

/// Shards of one job held by this store's process.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The job's name, for messages.
    pub name: String,
    /// The shards held, ascending, each with the generation taken.
    pub held: Vec<(u32, i64)>,
    /// Held shards whose advisory lock this session does not have (taken
    /// over from a live process, or lost with a connection).
    pub unlocked: Vec<u32>,
}

impl Lease {
    /// True when `shard` is held.
    pub fn owns(&self, shard: u32) -> bool {
        self.generation(shard).is_some()
    }

    /// The generation `shard` is held at, if it is held.
    pub fn generation(&self, shard: u32) -> Option<i64> {
        self.held.iter().find(|(s, _)| *s == shard).map(|(_, g)| *g)
    }

    /// Adds the shards of `more` (taken by this process since).
    pub fn merge(&mut self, more: Lease) {
        self.held.extend(more.held);
        self.held.sort_unstable();
        self.held.dedup_by_key(|(s, _)| *s);
        self.unlocked.extend(more.unlocked);
    }

    /// The held shards, as the database spells them.
    pub fn shards(&self) -> Vec<i32> {
        self.held.iter().map(|(s, _)| *s as i32).collect()
    }
}

/// The advisory lock key of `shard` of job `job` in the tables of `space`
/// (the schema: jobs of different schemas share one database's locks).
pub fn lock_key(space: &str, job: i64, shard: u32) -> i64 {
    format!("{space}/{job}/{shard}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        }) as i64
}

/// Takes the advisory lock `key` if it is free (or already this session's).
pub fn try_lock(client: &mut Client, key: i64) -> Result<bool, StoreError> {
    Ok(client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .map_err(err)?
        .get(0))
}

/// How long a claim waits for a shard's lock to be let go: a holder killed
/// a moment ago keeps it until its server process notices the closed
/// connection.
const GONE_WAIT: Duration = Duration::from_secs(3);

/// Takes the advisory lock `key`, trying again for [`GONE_WAIT`] when
/// `patient` and it is held.
fn try_lock_patiently(client: &mut Client, key: i64, patient: bool) -> Result<bool, StoreError> {
    let deadline = Instant::now() + GONE_WAIT;
    loop {
        if try_lock(client, key)? {
            return Ok(true);
        }
        if !patient || Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Releases one hold of the advisory lock `key`.
pub fn unlock(client: &mut Client, key: i64) -> Result<(), StoreError> {
    client
        .execute("SELECT pg_advisory_unlock($1)", &[&key])
        .map_err(err)?;
    Ok(())
}

/// The sessions (server process ids) other than this one holding the
/// advisory lock `key`.
fn holders(client: &mut Client, key: i64) -> Result<Vec<i32>, StoreError> {
    let bits = key as u64;
    let (high, low) = ((bits >> 32) as i64, (bits & 0xffff_ffff) as i64);
    Ok(client
        .query(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1
                 AND pid <> pg_backend_pid()",
            &[&high, &low],
        )
        .map_err(err)?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// The advisory lock keys (of the form [`lock_key`] makes) that sessions
/// other than this one hold in this database: one look at `pg_locks` for
/// a whole job, however many shards it has (a look per shard read the
/// lock table 1,100 times for a job of 1,100 shards).
pub fn locked_by_others(client: &mut Client) -> Result<HashSet<i64>, StoreError> {
    Ok(client
        .query(
            "SELECT classid::bigint, objid::bigint FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND objsubid = 1
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND pid <> pg_backend_pid()",
            &[],
        )
        .map_err(err)?
        .iter()
        .map(|r| {
            let (high, low): (i64, i64) = (r.get(0), r.get(1));
            (((high as u64) << 32) | (low as u64 & 0xffff_ffff)) as i64
        })
        .collect())
}

/// Ends the sessions holding the advisory lock `key`, waiting up to five
/// seconds for each to be gone; false when one could not be ended (a role
/// without the right to: the take-over then waits for its transaction).
fn terminate_holder(client: &mut Client, key: i64) -> Result<bool, StoreError> {
    let mut all = true;
    for pid in holders(client, key)? {
        let ended = client
            .query_one("SELECT pg_terminate_backend($1, 5000)", &[&pid])
            .map(|r| r.get::<_, bool>(0));
        match ended {
            Ok(true) => tracing::info!(pid, "ended the session of the shard's old holder"),
            Ok(false) => all = false,
            Err(e) => {
                tracing::warn!(pid, error = %err(e), "cannot end the session of the shard's old holder");
                all = false;
            }
        }
    }
    Ok(all)
}

/// Takes the shards of `claim`: their advisory locks (refusing a live
/// holder unless `claim.take_over`), then their generations. Says which
/// shards were taken from a live holder.
pub fn take(
    client: &mut Client,
    space: &str,
    job: &JobInfo,
    claim: &Claim,
) -> Result<(Lease, Claimed), StoreError> {
    let mut shards = claim.shards.clone();
    shards.sort_unstable();
    shards.dedup();
    if let Some(bad) = shards.iter().find(|&&s| s >= job.shards) {
        return Err(StoreError::Backend(format!(
            "job '{}' has {} shards; there is no shard {bad}",
            job.name, job.shards
        )));
    }
    let mut locked = Vec::new();
    let mut unlocked = Vec::new();
    let mut claimed = Claimed::default();
    for &shard in &shards {
        let key = lock_key(space, job.id.0, shard);
        if try_lock_patiently(client, key, !claim.take_over)? {
            locked.push(key);
        } else if claim.take_over {
            claimed.displaced.push(shard);
            // The live holder's session ends: its transaction, if it is
            // inside one (paused), and its lock go with it.
            if terminate_holder(client, key)? && try_lock(client, key)? {
                locked.push(key);
            } else {
                unlocked.push(shard);
            }
        } else {
            let holder: Option<String> = client
                .query_opt(
                    "SELECT holder FROM shards WHERE job = $1 AND shard = $2",
                    &[&job.id.0, &(shard as i32)],
                )
                .map_err(err)?
                .map(|r| r.get(0));
            release(client, &locked);
            return Err(StoreError::Held {
                job: job.name.clone(),
                shard,
                holder: holder.unwrap_or_else(|| "another process".to_owned()),
            });
        }
    }
    let deadline = Instant::now() + TAKE_OVER_WAIT;
    let generations = loop {
        match bump(client, job.id.0, &shards, &claim.holder.to_string()) {
            Ok(g) => break g,
            // The old holder's transaction holds its rows: wait for it.
            Err(StoreError::Conflict(why)) if Instant::now() < deadline => {
                tracing::info!(job = %job.name, %why, "waiting for the shard's holder to let go");
            }
            Err(e) => {
                release(client, &locked);
                return Err(e);
            }
        }
    };
    let lease = Lease {
        name: job.name.clone(),
        held: shards.into_iter().zip(generations).collect(),
        unlocked,
    };
    Ok((lease, claimed))
}

fn release(client: &mut Client, keys: &[i64]) {
    for &key in keys {
        // The locks go with the session anyway.
        let _ = unlock(client, key);
    }
}

/// Bumps the generation of each of `shards` in one transaction.
fn bump(
    client: &mut Client,
    job: i64,
    shards: &[u32],
    holder: &str,
) -> Result<Vec<i64>, StoreError> {
    let mut tx = client.transaction().map_err(err)?;
    let taken_at = now_text();
    let mut generations = Vec::with_capacity(shards.len());
    for &shard in shards {
        let row = tx
            .query_one(
                "INSERT INTO shards (job, shard, generation, holder, taken_at)
                 VALUES ($1, $2, 1, $3, $4)
                 ON CONFLICT (job, shard) DO UPDATE SET generation = shards.generation + 1,
                     holder = EXCLUDED.holder, taken_at = EXCLUDED.taken_at
                 RETURNING generation",
                &[&job, &(shard as i32), &holder, &taken_at],
            )
            .map_err(err)?;
        generations.push(row.get(0));
    }
    // Every shard's row is held now: a result its old holders stored is
    // below this value, one stored under the new generations above it.
    let from_seq: i64 = tx
        .query_one("SELECT nextval('result_seqs')", &[])
        .map_err(err)?
        .get(0);
    let numbers: Vec<i32> = shards.iter().map(|&s| s as i32).collect();
    tx.execute(
        "INSERT INTO leases (job, shard, generation, holder, taken_at, from_seq)
         SELECT $1, s, g, $4, $5, $6 FROM unnest($2::int4[], $3::int8[]) AS v(s, g)",
        &[&job, &numbers, &generations, &holder, &taken_at, &from_seq],
    )
    .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(generations)
}

/// Checks, at the start of a transaction, that `lease` still holds its
/// shards, and keeps their rows from being taken until the transaction
/// ends.
pub fn fence(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    lease: &Lease,
) -> Result<(), StoreError> {
    let rows = q(
        tx,
        cache,
        "SELECT shard, generation, holder FROM shards
         WHERE job = $1 AND shard = ANY($2) ORDER BY shard FOR SHARE",
        &[&job, &lease.shards()],
    )
    .map_err(err)?;
    for &(shard, generation) in &lease.held {
        let row = rows.iter().find(|r| r.get::<_, i32>(0) as u32 == shard);
        match row {
            Some(r) if r.get::<_, i64>(1) == generation => {}
            Some(r) => {
                return Err(StoreError::Fenced {
                    job: lease.name.clone(),
                    shard,
                    by: r.get(2),
                });
            }
            None => {
                return Err(StoreError::Fenced {
                    job: lease.name.clone(),
                    shard,
                    by: "nobody (the job was deleted)".to_owned(),
                });
            }
        }
    }
    Ok(())
}

/// Takes again the advisory locks of `lease` that this session lacks; a
/// lock held by another session stays missing (the fence decides).
pub fn relock(
    client: &mut Client,
    space: &str,
    job: i64,
    lease: &mut Lease,
) -> Result<(), StoreError> {
    let mut still = Vec::new();
    for &shard in &lease.unlocked {
        if !try_lock(client, lock_key(space, job, shard))? {
            still.push(shard);
        }
    }
    lease.unlocked = still;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_differ_by_schema_job_and_shard() {
        let k = lock_key("s", 1, 0);
        assert_eq!(k, lock_key("s", 1, 0));
        assert_ne!(k, lock_key("t", 1, 0));
        assert_ne!(k, lock_key("s", 2, 0));
        assert_ne!(k, lock_key("s", 1, 1));
    }
}
