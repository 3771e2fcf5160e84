//! One batch of the engine's changes, applied in one transaction with a
//! few statements whatever its size: rows go in and out as arrays
//! (`unnest`), in key order, so that writers sharing a job take row locks
//! in one order.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FrontierEntry, shard_of};
use postgres::Transaction;

use super::cache::{Cache, authorities, authority_of, q, shard_count, x};
use super::err;
use super::lease::{Lease, fence};
use super::probes;
use crate::StoreError;
use crate::codec::{chain_from, chain_text, key_bytes, key_from, parse_authority};
use crate::schema::{self, state};
use crate::tally::Tallies;

/// Applies `batch` to `job` in `tx`; with a `lease`, only if it still
/// holds its shards. What it changes of the job's counts is added to the
/// writer's row of `job_counts`, `slot`.
pub fn apply_in(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    slot: i32,
    lease: Option<&Lease>,
    batch: &mut Batch,
) -> Result<(), StoreError> {
    batch.recorded.clear();
    batch.admitted.clear();
    batch.loaded.clear();
    batch.news.clear();
    batch.open = None;
    batch.job_seen = None;
    batch.job_requisites = None;
    batch.requeued.clear();
    batch.next_due = None;
    batch.rates.clear();
    batch.stops = None;
    if let Some(lease) = lease {
        fence(tx, cache, job, lease)?;
    }
    // Writers sharing a job count admissions one after another: the job's
    // row is locked first, before any URL row (one lock order for all).
    let admitted_before = match batch.admit_limit {
        Some(_) if !batch.admit.is_empty() => Some(lock_admitted(tx, job)?),
        _ => None,
    };
    let mut handoff = BTreeSet::new();
    // URLs are admitted before pages are marked done. Inserting a key whose
    // row another writer is updating waits for that writer; when two
    // writers each finish a page the other links to, marking first made
    // each insert wait for the other (a deadlock, broken by the server
    // after a second). Inserting first, in key order, no writer waits while
    // holding a row another waits for.
    let mut tallies = Tallies::new();
    let requisites = admit(
        tx,
        cache,
        job,
        lease,
        batch,
        admitted_before,
        &mut handoff,
        &mut tallies,
    )?;
    finish(tx, cache, job, slot, lease, batch, &mut tallies)?;
    load(tx, cache, job, batch)?;
    save_authorities(tx, cache, job, batch)?;
    if !handoff.is_empty() {
        let (shards, auths): (Vec<i32>, Vec<i64>) =
            handoff.into_iter().map(|(s, a)| (s as i32, a)).unzip();
        let new = tx
            .execute(
                "INSERT INTO handoff (job, shard, auth)
                 SELECT $1, s, a FROM unnest($2::int4[], $3::int8[]) AS v(s, a)
                 ON CONFLICT DO NOTHING",
                &[&job, &shards, &auths],
            )
            .map_err(err)?;
        if new > 0 {
            // The holders listening hear of it when this commits; a note
            // already waiting was heard of already.
            notify(tx, job)?;
        }
    }
    // After the loads: a slot hears of URLs queued again once its load
    // is answered.
    super::revisit::requeue_due(tx, job, lease, batch, &mut tallies)?;
    if batch.poll {
        poll(tx, job, lease, batch)?;
    }
    if requisites > 0 {
        // Last, so that the job's row is locked only until the commit
        // (writers with a page limit locked it first, and counted there).
        x(
            tx,
            cache,
            "UPDATE jobs SET requisites = requisites + $2 WHERE id = $1",
            &[&job, &requisites],
        )
        .map_err(err)?;
    }
    tallies.retain(|_, t| !t.is_empty());
    if !tallies.is_empty() {
        // Last of all (after the job's row): the writer's rows of counts
        // are held only until the commit, and no writer waits for another
        // while holding them (they are its own, taken in shard order). The
        // finish statement counted the pages it marked earlier, in the
        // same rows: writers wait for each other there only when they
        // share a slot (one pair in `COUNT_SLOTS`), and a deadlock that
        // could follow is ended by the server and the batch retried.
        let mut cols: (Vec<i32>, Vec<i64>, Vec<i64>, Vec<i64>) = Default::default();
        for (shard, t) in tallies {
            cols.0.push(shard);
            cols.1.push(t.seen);
            cols.2.push(t.done);
            cols.3.push(t.errors);
        }
        x(
            tx,
            cache,
            schema::PG_ADD_COUNTS,
            &[&job, &slot, &cols.0, &cols.1, &cols.2, &cols.3],
        )
        .map_err(err)?;
    }
    Ok(())
}

/// Saves the authorities' states of the batch in one statement (the last
/// of an authority's states wins).
fn save_authorities(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    batch: &Batch,
) -> Result<(), StoreError> {
    if batch.authorities.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = batch
        .authorities
        .iter()
        .map(|a| a.authority.to_string())
        .collect();
    authorities(tx, cache, job, names.iter().map(String::as_str))?;
    let mut states: HashMap<i64, String> = HashMap::with_capacity(names.len());
    for (saved, name) in batch.authorities.iter().zip(&names) {
        let (auth, _) = authority_of(cache, job, name)?;
        let text = serde_json::to_string(saved).map_err(|e| StoreError::Backend(e.to_string()))?;
        states.insert(auth, text);
    }
    // In id order: writers take row locks in one order.
    let mut states: Vec<(i64, String)> = states.into_iter().collect();
    states.sort_unstable_by_key(|(id, _)| *id);
    let (ids, texts): (Vec<i64>, Vec<String>) = states.into_iter().unzip();
    x(
        tx,
        cache,
        "UPDATE authorities a SET state = v.s
         FROM unnest($2::int8[], $3::text[]) AS v(i, s)
         WHERE a.job = $1 AND a.id = ANY($2) AND a.id = v.i",
        &[&job, &ids, &texts],
    )
    .map_err(err)?;
    Ok(())
}

/// Stores the records of finished URLs, once per key: a URL's row is
/// marked done with its result's position (made if it was never admitted).
/// The common case, URLs admitted and not yet done, is one statement:
/// positions drawn, rows marked, results written and counted (in the
/// writer's row of counts, `slot`) together. Each result carries the
/// generation of `lease` for its shard (its writer). The rows made for
/// URLs never admitted, and their results, are added to `tallies`.
fn finish(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    slot: i32,
    lease: Option<&Lease>,
    batch: &mut Batch,
    tallies: &mut Tallies,
) -> Result<(), StoreError> {
    let count = batch.finished.len();
    if count == 0 {
        return Ok(());
    }
    let shards = shard_count(tx, cache, job)?;
    // The first of each key, in the order finished; a key twice in one
    // batch is recorded once.
    let mut index: HashMap<u128, usize> = HashMap::with_capacity(count);
    let mut order: Vec<usize> = Vec::with_capacity(count);
    for (i, f) in batch.finished.iter().enumerate() {
        if let Entry::Vacant(e) = index.entry(f.key) {
            e.insert(i);
            order.push(i);
        }
    }
    let shard_of_record =
        |i: usize| shard_of(batch.finished[i].record.authority.host(), shards) as i32;
    let keys: Vec<Vec<u8>> = order
        .iter()
        .map(|&i| key_bytes(batch.finished[i].key).to_vec())
        .collect();
    let failed: Vec<i16> = order
        .iter()
        .map(|&i| i16::from(batch.finished[i].record.error.is_some()))
        .collect();
    let records: Vec<&str> = order
        .iter()
        .map(|&i| batch.finished[i].json.as_str())
        .collect();
    let record_shards: Vec<i32> = order.iter().map(|&i| shard_of_record(i)).collect();
    let generation_of = |shard: i32| lease.and_then(|l| l.generation(shard as u32));
    let generations: Vec<Option<i64>> = record_shards.iter().map(|&h| generation_of(h)).collect();
    let ids: Vec<Option<i64>> = order
        .iter()
        .map(|&i| cache.take_loaded(job, batch.finished[i].key))
        .collect();
    // Positions are drawn in the order finished (unnest keeps it); rows
    // are named by the ids of those this connection loaded, or found by
    // key probes (`probes.rs`). The rows marked are counted
    // by the same statement: one round trip less per commit.
    let mut claimed: HashMap<u128, i64> = HashMap::with_capacity(count);
    // The row of each key marked now, for its next fetch.
    let mut rows: HashMap<u128, i64> = HashMap::new();
    for row in q(
        tx,
        cache,
        probes::FINISH,
        &[
            &job,
            &keys,
            &failed,
            &records,
            &record_shards,
            &generations,
            &slot,
            &ids,
        ],
    )
    .map_err(err)?
    {
        let key = key_from(row.get(0))?;
        claimed.insert(key, row.get(1));
        rows.insert(key, row.get(2));
    }
    // Never admitted (skipped with its authority): the row is made done.
    let fresh: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| !claimed.contains_key(&batch.finished[i].key))
        .collect();
    if !fresh.is_empty() {
        let names: Vec<String> = fresh
            .iter()
            .map(|&i| batch.finished[i].record.authority.to_string())
            .collect();
        authorities(tx, cache, job, names.iter().map(String::as_str))?;
        let mut cols = Columns::default();
        let (mut f_failed, mut f_records, mut f_shards) = (Vec::new(), Vec::new(), Vec::new());
        let mut f_generations = Vec::new();
        for (&i, name) in fresh.iter().zip(&names) {
            let f = &batch.finished[i];
            let (auth, _) = authority_of(cache, job, name)?;
            cols.keys.push(key_bytes(f.key).to_vec());
            cols.auths.push(auth);
            cols.urls.push(f.record.url.clone());
            cols.depths.push(f.record.depth as i32);
            cols.parents.push(f.record.parent.clone());
            f_failed.push(i16::from(f.record.error.is_some()));
            f_records.push(f.json.as_str());
            f_shards.push(shard_of_record(i));
            f_generations.push(generation_of(shard_of_record(i)));
        }
        for row in q(
            tx,
            cache,
            "WITH v AS (
                 SELECT k, a, u, d, p, f, r, h, g, nextval('result_seqs') AS s
                 FROM unnest($2::bytea[], $3::int8[], $4::text[], $5::int4[], $6::text[],
                             $7::int2[], $8::text[], $9::int4[], $10::int8[])
                     AS t(k, a, u, d, p, f, r, h, g)),
             c AS (
                 INSERT INTO urls (job, key, auth, url, depth, parent, state, seq)
                 SELECT $1, k, a, u, d, p, 2, s FROM v
                 ON CONFLICT DO NOTHING RETURNING key, seq, id),
             i AS (
                 INSERT INTO results (job, seq, failed, record, shard, generation)
                 SELECT $1, c.seq, v.f, v.r, v.h, v.g FROM c JOIN v ON v.k = c.key)
             SELECT key, seq, id FROM c",
            &[
                &job,
                &cols.keys,
                &cols.auths,
                &cols.urls,
                &cols.depths,
                &cols.parents,
                &f_failed,
                &f_records,
                &f_shards,
                &f_generations,
            ],
        )
        .map_err(err)?
        {
            let key = key_from(row.get(0))?;
            claimed.insert(key, row.get(1));
            rows.insert(key, row.get(2));
            let i = index[&key];
            let t = tallies.entry(shard_of_record(i)).or_default();
            t.seen += 1;
            t.done += 1;
            t.errors += i64::from(batch.finished[i].record.error.is_some());
        }
    }
    if let Some(first) = claimed.values().min() {
        batch.first_position.get_or_insert(*first as u64);
    }
    if batch.keep_archives {
        keep_archives(tx, job, batch, &index, &claimed)?;
    }
    super::revisit::schedule(tx, job, shards, batch, &index, &rows)?;
    // Done already: by an attempt of this batch whose commit was not confirmed?
    let done_before: Vec<Vec<u8>> = order
        .iter()
        .filter(|&&i| !claimed.contains_key(&batch.finished[i].key))
        .map(|&i| key_bytes(batch.finished[i].key).to_vec())
        .collect();
    let mut ours_before: HashSet<u128> = HashSet::new();
    if let (false, Some(first)) = (done_before.is_empty(), batch.first_position) {
        for row in tx
            .query(probes::KNOWN, &[&job, &done_before])
            .map_err(err)?
        {
            if row
                .get::<_, Option<i64>>(1)
                .is_some_and(|s| s >= first as i64)
            {
                ours_before.insert(key_from(row.get(0))?);
            }
        }
    }
    batch.recorded = vec![false; count];
    for (i, f) in batch.finished.iter().enumerate() {
        if index.get(&f.key) == Some(&i) {
            batch.recorded[i] = claimed.contains_key(&f.key) || ours_before.contains(&f.key);
        }
    }
    Ok(())
}

/// Stores the WARC records of the URLs this batch gave a result.
fn keep_archives(
    tx: &mut Transaction<'_>,
    job: i64,
    batch: &Batch,
    index: &HashMap<u128, usize>,
    claimed: &HashMap<u128, i64>,
) -> Result<(), StoreError> {
    let (mut seqs, mut data): (Vec<i64>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for (key, seq) in claimed {
        let archive = &batch.finished[index[key]].archive;
        if !archive.is_empty() {
            seqs.push(*seq);
            data.push(archive);
        }
    }
    if !seqs.is_empty() {
        tx.execute(
            "INSERT INTO archives (job, seq, data) SELECT $1, s, d
             FROM unnest($2::int8[], $3::bytea[]) AS t(s, d)",
            &[&job, &seqs, &data],
        )
        .map_err(err)?;
    }
    Ok(())
}

/// Rows of `urls` as arrays, one per column.
#[derive(Default)]
struct Columns {
    keys: Vec<Vec<u8>>,
    auths: Vec<i64>,
    urls: Vec<String>,
    depths: Vec<i32>,
    parents: Vec<Option<String>>,
    chains: Vec<Option<String>>,
    states: Vec<i16>,
}

impl Columns {
    fn push(&mut self, entry: &FrontierEntry, auth: i64, state: i16) {
        self.keys.push(key_bytes(entry.key).to_vec());
        self.auths.push(auth);
        self.urls.push(entry.url.clone());
        self.depths.push(entry.depth as i32);
        self.parents.push(entry.parent.clone());
        self.chains.push(chain_text(entry));
        self.states.push(state);
    }
}

/// Admits candidate URLs: each new key gets a row; a known one still
/// waiting takes the smaller depth. URLs of shards not held are noted in
/// `handoff` for their holders. The rows made are added to `tallies`.
#[allow(clippy::too_many_arguments)]
fn admit(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    lease: Option<&Lease>,
    batch: &mut Batch,
    admitted_before: Option<i64>,
    handoff: &mut BTreeSet<(u32, i64)>,
    tallies: &mut Tallies,
) -> Result<i64, StoreError> {
    let count = batch.admit.len();
    if count == 0 {
        return Ok(0);
    }
    batch.admitted = vec![false; count];
    let names: Vec<String> = batch.admit.iter().map(|(_, a, _)| a.to_string()).collect();
    authorities(tx, cache, job, names.iter().map(String::as_str))?;
    // The first of each key, in key order.
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_unstable_by_key(|&i| (batch.admit[i].0.key, i));
    order.dedup_by_key(|i| batch.admit[*i].0.key);
    // Known URLs' depths, from `urls_key` alone: first, where the job's
    // limit counts only new URLs or recent admissions found many known;
    // else with the insert, in one statement.
    let mut known: HashMap<u128, i32> = HashMap::new();
    if batch.admit_limit.is_some() || cache.probe_first() {
        let keys: Vec<Vec<u8>> = order
            .iter()
            .map(|&i| key_bytes(batch.admit[i].0.key).to_vec())
            .collect();
        for row in q(tx, cache, probes::DEPTHS, &[&job, &keys]).map_err(err)? {
            known.insert(key_from(row.get(0))?, row.get(1));
        }
    }
    let limited = match (batch.admit_limit, admitted_before) {
        (Some(max), Some(before)) => {
            within_limit(max, before, batch, &known, &mut order);
            Some(before)
        }
        _ => None,
    };
    let mut cols = Columns::default();
    for &i in &order {
        let (entry, _, loaded) = &batch.admit[i];
        if known.contains_key(&entry.key) {
            continue;
        }
        let (auth, _) = authority_of(cache, job, &names[i])?;
        let st = if *loaded {
            state::LOADED
        } else {
            state::QUEUED
        };
        cols.push(entry, auth, st);
    }
    let mut inserted: HashSet<u128> = HashSet::with_capacity(cols.keys.len());
    if !cols.keys.is_empty() {
        for row in q(
            tx,
            cache,
            probes::ADMIT,
            &[
                &job,
                &cols.keys,
                &cols.auths,
                &cols.urls,
                &cols.depths,
                &cols.parents,
                &cols.chains,
                &cols.states,
            ],
        )
        .map_err(err)?
        {
            let key = key_from(row.get(0))?;
            if let Some(depth) = row.get::<_, Option<i32>>(1) {
                known.insert(key, depth);
            } else {
                inserted.insert(key);
                // Admitted loaded: the crawler finishes it by its id.
                if let Some(id) = row.get::<_, Option<i64>>(2) {
                    cache.note_loaded(job, key, id);
                }
            }
        }
    }
    cache.note_known(known.len());
    let foreign = |shard: u32| lease.is_some_and(|l| !l.owns(shard));
    let mut lower = Columns::default();
    let mut lower_shards: HashMap<i64, u32> = HashMap::new();
    for &i in &order {
        let entry = &batch.admit[i].0;
        let (auth, shard) = authority_of(cache, job, &names[i])?;
        if inserted.contains(&entry.key) {
            batch.admitted[i] = true;
            tallies.entry(shard as i32).or_default().seen += 1;
            if foreign(shard) {
                handoff.insert((shard, auth));
            }
        } else if known
            .get(&entry.key)
            .map_or(entry.depth > 0, |&d| i64::from(d) > i64::from(entry.depth))
        {
            // Known deeper, or admitted by another writer meanwhile.
            lower.push(entry, auth, state::QUEUED);
            lower_shards.insert(auth, shard);
        }
    }
    let requisites = order
        .iter()
        .map(|&i| &batch.admit[i].0)
        .filter(|e| e.is_requisite() && inserted.contains(&e.key))
        .count() as i64;
    let mut uncounted = requisites;
    if let Some(before) = limited {
        x(
            tx,
            cache,
            "UPDATE jobs SET admitted = $2, requisites = requisites + $3 WHERE id = $1",
            &[
                &job,
                &(before + inserted.len() as i64 - requisites),
                &requisites,
            ],
        )
        .map_err(err)?;
        uncounted = 0;
    }
    if !lower.keys.is_empty() {
        // Found again by a shorter path while it waits: it takes that path.
        for row in q(
            tx,
            cache,
            probes::LOWER,
            &[
                &job,
                &lower.keys,
                &lower.depths,
                &lower.parents,
                &lower.chains,
            ],
        )
        .map_err(err)?
        {
            let auth: i64 = row.get(0);
            if let Some(&shard) = lower_shards.get(&auth)
                && foreign(shard)
            {
                handoff.insert((shard, auth));
            }
        }
    }
    Ok(uncounted)
}

/// Keeps in `order` only as many new candidates as the job's limit
/// (`max`, of which `before` were admitted) leaves room for, in the
/// order they were offered; `known` keys and requisites take no room.
/// The job's row stays locked until the transaction ends, so writers
/// sharing the job count one after another.
fn within_limit(
    max: u64,
    before: i64,
    batch: &Batch,
    known: &HashMap<u128, i32>,
    order: &mut Vec<usize>,
) {
    let mut room = max.saturating_sub(u64::try_from(before).unwrap_or(0));
    let mut by_offer: Vec<usize> = order.clone();
    by_offer.sort_unstable();
    let mut keep: HashSet<usize> = HashSet::new();
    for i in by_offer {
        let entry = &batch.admit[i].0;
        if known.contains_key(&entry.key) || entry.is_requisite() {
            keep.insert(i);
        } else if room > 0 {
            room -= 1;
            keep.insert(i);
        }
    }
    order.retain(|i| keep.contains(i));
}

/// Locks the job's row and reads its count of admitted pages (counted now
/// if it never was).
fn lock_admitted(tx: &mut Transaction<'_>, job: i64) -> Result<i64, StoreError> {
    let stored: Option<i64> = tx
        .query_one(
            "SELECT admitted FROM jobs WHERE id = $1 FOR UPDATE",
            &[&job],
        )
        .map_err(err)?
        .get(0);
    match stored {
        Some(n) => Ok(n),
        None => Ok(tx
            .query_one(
                "SELECT (SELECT count(*) FROM urls WHERE job = $1)
                        - (SELECT requisites FROM jobs WHERE id = $1)",
                &[&job],
            )
            .map_err(err)?
            .get(0)),
    }
}

/// The channel on which the processes of `job` hear of news.
pub fn channel(job: i64) -> String {
    format!("crawlkeeper_job_{job}")
}

/// Tells the processes listening on the job's channel, at commit, to poll.
fn notify(tx: &mut Transaction<'_>, job: i64) -> Result<(), StoreError> {
    tx.execute("SELECT pg_notify($1, '')", &[&channel(job)])
        .map_err(err)?;
    Ok(())
}

/// Marks up to each load's limit of an authority's queued URLs loaded,
/// shallowest first; rows another transaction holds are skipped, not
/// waited for.
fn load(
    tx: &mut Transaction<'_>,
    cache: &mut Cache,
    job: i64,
    batch: &mut Batch,
) -> Result<(), StoreError> {
    if batch.load.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = batch.load.iter().map(|(a, _)| a.to_string()).collect();
    authorities(tx, cache, job, names.iter().map(String::as_str))?;
    for ((_, limit), name) in batch.load.iter().zip(&names) {
        let (auth, _) = authority_of(cache, job, name)?;
        let rows = q(
            tx,
            cache,
            "UPDATE urls SET state = 1 WHERE id IN (
                     SELECT id FROM urls WHERE job = $1 AND auth = $2 AND state = 0
                     ORDER BY depth LIMIT $3 FOR UPDATE SKIP LOCKED)
                 RETURNING key, url, depth, parent, chain, id",
            &[&job, &auth, &(*limit as i64)],
        )
        .map_err(err)?;
        let mut entries = Vec::with_capacity(rows.len());
        for r in rows {
            let (redirect_chain, known) = chain_from(r.get(4))?;
            let key = key_from(r.get::<_, &[u8]>(0))?;
            cache.note_loaded(job, key, r.get(5));
            entries.push(FrontierEntry {
                key,
                url: r.get(1),
                depth: r.get::<_, i32>(2) as u32,
                parent: r.get(3),
                redirect_chain,
                known,
            });
        }
        entries.sort_by_key(|e| e.depth);
        batch.loaded.push(entries);
    }
    Ok(())
}

/// Takes the notes other processes left for the held shards (all shards
/// without a lease), and tells whether the job is complete.
fn poll(
    tx: &mut Transaction<'_>,
    job: i64,
    lease: Option<&Lease>,
    batch: &mut Batch,
) -> Result<(), StoreError> {
    let shards: Option<Vec<i32>> = lease.map(Lease::shards);
    if batch.sweep && batch.load.is_empty() {
        sweep(tx, job, &shards, batch)?;
    }
    let auths: Vec<i64> = tx
        .query(
            "DELETE FROM handoff WHERE job = $1 AND ($2::int4[] IS NULL OR shard = ANY($2))
             RETURNING auth",
            &[&job, &shards],
        )
        .map_err(err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !auths.is_empty() {
        for row in tx
            .query(
                "SELECT a.authority, (SELECT count(*) FROM urls u
                     WHERE u.job = a.job AND u.auth = a.id AND u.state = 0)
                 FROM authorities a WHERE a.job = $1 AND a.id = ANY($2)",
                &[&job, &auths],
            )
            .map_err(err)?
        {
            let queued: i64 = row.get(1);
            let authority: Authority = parse_authority(row.get(0))?;
            if queued > 0 && !batch.news.iter().any(|(a, _)| *a == authority) {
                batch.news.push((authority, queued as u64));
            }
        }
    }
    let row = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM urls WHERE job = $1 AND state = 0)
                    OR EXISTS (SELECT 1 FROM urls WHERE job = $1 AND state = 1),
                    (SELECT admitted FROM jobs WHERE id = $1),
                    (SELECT requisites FROM jobs WHERE id = $1),
                    (SELECT stops FROM jobs WHERE id = $1)",
            &[&job],
        )
        .map_err(err)?;
    batch.open = Some(row.get(0));
    batch.job_seen = row.get::<_, Option<i64>>(1).map(|n| n as u64);
    batch.job_requisites = row.get::<_, Option<i64>>(2).map(|n| n as u64);
    batch.stops = row.get::<_, Option<i64>>(3).map(|n| n.max(0) as u64);
    if batch.open == Some(false) {
        // Complete: the processes waiting for it need not wait for their poll.
        notify(tx, job)?;
    }
    Ok(())
}

/// With nothing held in memory: URLs of the held shards marked held are
/// queued again, and every authority with queued URLs is news.
fn sweep(
    tx: &mut Transaction<'_>,
    job: i64,
    shards: &Option<Vec<i32>>,
    batch: &mut Batch,
) -> Result<(), StoreError> {
    let requeued = tx
        .execute(
            "UPDATE urls SET state = 0 WHERE job = $1 AND state = 1 AND ($2::int4[] IS NULL
                 OR auth IN (SELECT id FROM authorities WHERE job = $1 AND shard = ANY($2)))",
            &[&job, shards],
        )
        .map_err(err)?;
    if requeued > 0 {
        tracing::warn!(job, requeued, "URLs held by no one were queued again");
    }
    for row in tx
        .query(
            "SELECT a.authority, count(*) FROM urls u
             JOIN authorities a ON a.job = u.job AND a.id = u.auth
             WHERE u.job = $1 AND u.state = 0 AND ($2::int4[] IS NULL OR a.shard = ANY($2))
             GROUP BY a.authority",
            &[&job, shards],
        )
        .map_err(err)?
    {
        let queued: i64 = row.get(1);
        batch
            .news
            .push((parse_authority(row.get(0))?, queued as u64));
    }
    Ok(())
}
