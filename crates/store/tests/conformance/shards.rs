//! PostgreSQL only: one job written by several processes at once, each
//! holding shards of it (SQLite keeps jobs of one shard, and refuses more).

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FinishedUrl, FrontierEntry, shard_of};
use crawlkeeper_store::{Claim, JobInfo, JobSpec, PgStore, Store, StoreError, Writer};

use crate::backends::{Backend, postgres, postgres_url, sqlite};
use crate::suite::{entry, record, requisite, spec};

fn sharded(name: &str, shards: u32) -> JobSpec {
    JobSpec {
        shards,
        ..spec(name)
    }
}

fn claim(shards: &[u32], holder: &str, take_over: bool) -> Claim {
    Claim {
        shards: shards.to_vec(),
        holder: holder.into(),
        take_over,
    }
}

/// A host of each of shards 0 and 1 of a two-shard job.
fn hosts() -> (String, String) {
    let mut of = [None, None];
    for i in 0.. {
        let h = format!("h{i}.test");
        let s = shard_of(&h, 2) as usize;
        of[s].get_or_insert(h);
        if of.iter().all(Option::is_some) {
            break;
        }
    }
    let [a, b] = of.map(Option::unwrap);
    (a, b)
}

/// A two-shard job, shard 0 held by `b.store` ("zero") and shard 1 by
/// the other store returned ("one").
fn two_holders() -> (Backend, JobInfo, Box<dyn Store>) {
    let mut b = postgres();
    let job = b.store.open_job(&sharded("j", 2)).unwrap();
    b.store.claim(&job, &claim(&[0], "zero", false)).unwrap();
    let mut one = (b.reopen)();
    one.claim(&job, &claim(&[1], "one", false)).unwrap();
    (b, job, one)
}

/// A URL of each shard admitted and loaded by its holder: (x of shard 0,
/// y of shard 1).
fn one_loaded_by_each(
    b: &mut Backend,
    job: &JobInfo,
    one: &mut dyn Store,
) -> ((FrontierEntry, Authority), (FrontierEntry, Authority)) {
    let (h0, h1) = hosts();
    let (x, y) = (entry(&h0, "/x", 1), entry(&h1, "/y", 1));
    let loaded = |e: &(FrontierEntry, Authority)| Batch {
        admit: vec![(e.0.clone(), e.1.clone(), true)],
        ..Batch::default()
    };
    apply(b.store.as_mut(), job, &mut loaded(&x)).unwrap();
    apply(one, job, &mut loaded(&y)).unwrap();
    (x, y)
}

fn apply(store: &mut dyn Store, job: &JobInfo, batch: &mut Batch) -> Result<(), StoreError> {
    store.apply(job.id, batch)
}

fn admit_batch(items: &[(FrontierEntry, Authority)]) -> Batch {
    Batch {
        admit: items
            .iter()
            .map(|(e, a)| (e.clone(), a.clone(), false))
            .collect(),
        ..Batch::default()
    }
}

fn finish_batch(items: &[&FrontierEntry]) -> Batch {
    Batch {
        finished: items
            .iter()
            .map(|e| FinishedUrl::new(e.key, record(e, false)))
            .collect(),
        ..Batch::default()
    }
}

fn poll(store: &mut dyn Store, job: &JobInfo) -> Batch {
    let mut batch = Batch {
        poll: true,
        ..Batch::default()
    };
    store.apply(job.id, &mut batch).unwrap();
    batch
}

#[test]
fn a_live_holder_is_refused_and_a_take_over_fences_it() {
    let mut b = postgres();
    let job = b.store.open_job(&sharded("j", 2)).unwrap();
    b.store.claim(&job, &claim(&[0], "first", false)).unwrap();
    let mut second = (b.reopen)();
    match second.claim(&job, &claim(&[0], "second", false)) {
        Err(StoreError::Held { shard, holder, .. }) => {
            assert_eq!((shard, holder.as_str()), (0, "first"))
        }
        other => panic!("expected Held, got {other:?}"),
    }
    second
        .claim(&job, &claim(&[1], "second", false))
        .expect("shard 1 is free");
    // A URL the first holder loaded before it was taken over.
    let (x, _) = hosts();
    let held = entry(&x, "/held", 1);
    let mut load = Batch {
        admit: vec![(held.0.clone(), held.1.clone(), true)],
        ..Batch::default()
    };
    apply(b.store.as_mut(), &job, &mut load).unwrap();
    let mut third = (b.reopen)();
    third.claim(&job, &claim(&[0], "third", true)).unwrap();
    // The take-over ended the first holder's session: its next call finds
    // the connection gone (retryable), the one after is fenced.
    assert!(matches!(
        apply(
            b.store.as_mut(),
            &job,
            &mut Batch {
                verify: true,
                ..Batch::default()
            }
        ),
        Err(StoreError::Unavailable(_))
    ));
    let e = entry(&x, "/", 1);
    // Fenced whatever the batch: an admission, a finish of a URL the job
    // knows (loaded before the take-over) or not, a verification.
    for mut batch in [
        admit_batch(std::slice::from_ref(&e)),
        finish_batch(&[&held.0]),
        finish_batch(&[&e.0]),
        Batch {
            verify: true,
            ..Batch::default()
        },
    ] {
        match apply(b.store.as_mut(), &job, &mut batch) {
            Err(StoreError::Fenced { shard, by, .. }) => {
                assert_eq!((shard, by.as_str()), (0, "third"))
            }
            other => panic!("expected Fenced, got {other:?}"),
        }
    }
    assert!(matches!(
        b.store.resume(job.id),
        Err(StoreError::Fenced { .. })
    ));
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!(
        (counts.seen, counts.done),
        (1, 0),
        "the fenced writes left nothing"
    );
    apply(third.as_mut(), &job, &mut admit_batch(&[e])).unwrap();
    // The heir took the first holder's lock with its session.
    drop(std::mem::replace(&mut b.store, (b.reopen)()));
    poll(third.as_mut(), &job);
    let shards = b.store.shards(&job).unwrap();
    assert_eq!(shards[0].holder.as_deref(), Some("third"));
    assert_eq!(shards[0].generation, 2);
    assert!(shards[0].live && shards[1].live);
    match b.store.claim(&job, &claim(&[0], "fourth", false)) {
        Err(StoreError::Held { holder, .. }) => assert_eq!(holder, "third"),
        other => panic!("expected Held, got {other:?}"),
    }
}

#[test]
fn each_result_names_the_lease_it_was_stored_under() {
    let (mut b, job, mut one) = two_holders();
    let (x, y) = one_loaded_by_each(&mut b, &job, one.as_mut());
    apply(b.store.as_mut(), &job, &mut finish_batch(&[&x.0])).unwrap();
    apply(one.as_mut(), &job, &mut finish_batch(&[&y.0])).unwrap();
    // Shard 0 taken over: what its heir stores is of the next generation.
    let mut heir = (b.reopen)();
    heir.claim(&job, &claim(&[0], "heir", true)).unwrap();
    let (h0, _) = hosts();
    let later = entry(&h0, "/later", 1);
    let mut admit = Batch {
        admit: vec![(later.0.clone(), later.1.clone(), true)],
        ..Batch::default()
    };
    apply(heir.as_mut(), &job, &mut admit).unwrap();
    apply(heir.as_mut(), &job, &mut finish_batch(&[&later.0])).unwrap();
    let writers: Vec<(String, Option<Writer>)> = heir
        .results_by(job.id, 0, 10)
        .unwrap()
        .into_iter()
        .map(|(_, record, writer)| (record, writer))
        .collect();
    let writer = |holder: &str, shard, generation| {
        Some(Writer {
            holder: holder.into(),
            shard,
            generation,
        })
    };
    let of = |path: &str| {
        writers
            .iter()
            .find(|(record, _)| record.contains(path))
            .map(|(_, w)| w.clone())
            .unwrap_or_else(|| panic!("no result of {path}: {writers:?}"))
    };
    assert_eq!(writers.len(), 3);
    assert_eq!(of("/x"), writer("zero", 0, 1));
    assert_eq!(of("/y"), writer("one", 1, 1));
    assert_eq!(of("/later"), writer("heir", 0, 2));
    // The results themselves are the ones `results` gives.
    let plain: Vec<String> = heir
        .results(job.id, None, 0, 10)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let by: Vec<String> = writers.into_iter().map(|(r, _)| r).collect();
    assert_eq!(plain, by);
}

#[test]
fn a_crashed_holders_shard_is_free_again() {
    let mut b = postgres();
    let job = b.store.open_job(&sharded("j", 3)).unwrap();
    b.store.claim(&job, &claim(&[2], "first", false)).unwrap();
    drop(std::mem::replace(&mut b.store, (b.reopen)()));
    b.store
        .claim(&job, &claim(&[2], "again", false))
        .expect("no live holder");
    assert!(
        matches!(
            (b.reopen)().claim(&job, &claim(&[3], "x", false)),
            Err(StoreError::Backend(_))
        ),
        "there is no shard 3"
    );
}

#[test]
fn urls_found_for_another_shard_are_handed_to_its_holder() {
    let (mut b, job, mut one) = two_holders();
    let (h0, h1) = hosts();
    let mine = entry(&h0, "/a", 1);
    let theirs = entry(&h1, "/b", 3);
    apply(
        b.store.as_mut(),
        &job,
        &mut admit_batch(&[mine.clone(), theirs.clone()]),
    )
    .unwrap();
    let first = poll(one.as_mut(), &job);
    assert_eq!(first.news, [(theirs.1.clone(), 1)]);
    assert_eq!(first.open, Some(true));
    assert!(
        poll(one.as_mut(), &job).news.is_empty(),
        "a note is taken once"
    );
    assert!(
        poll(b.store.as_mut(), &job).news.is_empty(),
        "no note for one's own shard"
    );
    // Found again by a shorter path while it waits: the holder gets it at that depth.
    let shorter = entry(&h1, "/b", 1);
    let mut again = admit_batch(&[shorter]);
    apply(b.store.as_mut(), &job, &mut again).unwrap();
    assert_eq!(again.admitted, [false]);
    assert_eq!(
        poll(one.as_mut(), &job).news.len(),
        1,
        "the lowered depth is news"
    );
    let mut load = Batch {
        load: vec![(theirs.1.clone(), 10)],
        ..Batch::default()
    };
    apply(one.as_mut(), &job, &mut load).unwrap();
    assert_eq!(load.loaded[0].len(), 1);
    assert_eq!(load.loaded[0][0].depth, 1);
    apply(one.as_mut(), &job, &mut finish_batch(&[&theirs.0])).unwrap();
    assert_eq!(
        poll(one.as_mut(), &job).open,
        Some(true),
        "shard 0 still has a URL queued"
    );
    apply(b.store.as_mut(), &job, &mut finish_batch(&[&mine.0])).unwrap();
    assert_eq!(
        poll(one.as_mut(), &job).open,
        Some(false),
        "the job is complete"
    );
    // Each shard's results, and the job's.
    let own =
        |s: &mut dyn Store, shard| s.results(job.id, Some(&[shard][..]), 0, 10).unwrap().len();
    assert_eq!((own(b.store.as_mut(), 0), own(b.store.as_mut(), 1)), (1, 1));
    assert_eq!(b.store.results(job.id, None, 0, 10).unwrap().len(), 2);
    let shards = b.store.shards(&job).unwrap();
    assert_eq!(
        shards
            .iter()
            .map(|s| (s.counts.seen, s.counts.done))
            .collect::<Vec<_>>(),
        [(1, 1), (1, 1)]
    );
}

#[test]
fn a_page_limit_counts_job_wide() {
    let (mut b, job, mut one) = two_holders();
    let items: Vec<_> = (0..6)
        .map(|i| entry(&format!("h{i}.test"), "/", 1))
        .collect();
    let limited = |items: &[(FrontierEntry, Authority)]| Batch {
        admit_limit: Some(4),
        ..admit_batch(items)
    };
    let mut first = limited(&items[..3]);
    apply(b.store.as_mut(), &job, &mut first).unwrap();
    assert_eq!(first.admitted, [true, true, true]);
    let mut second = limited(&items[1..]);
    apply(one.as_mut(), &job, &mut second).unwrap();
    assert_eq!(
        second.admitted,
        [false, false, true, false, false],
        "one place was left"
    );
    assert_eq!(poll(one.as_mut(), &job).job_seen, Some(4));
    assert_eq!(b.store.find_job("j").unwrap().unwrap().counts.seen, 4);
}

#[test]
fn requisites_take_no_room_under_a_page_limit() {
    let (mut b, job, mut one) = two_holders();
    let page = |i: usize| entry(&format!("h{i}.test"), "/", 1);
    let limited = |items: Vec<(FrontierEntry, Authority)>| Batch {
        admit_limit: Some(2),
        ..admit_batch(&items)
    };
    let mut first = limited(vec![
        page(0),
        requisite(entry("cdn.test", "/a.png", 1)),
        requisite(entry("cdn.test", "/b.png", 1)),
    ]);
    apply(b.store.as_mut(), &job, &mut first).unwrap();
    assert_eq!(first.admitted, [true, true, true]);
    let mut second = limited(vec![
        requisite(entry("cdn.test", "/c.png", 1)),
        page(1),
        page(2),
        requisite(entry("cdn.test", "/d.png", 1)),
    ]);
    apply(one.as_mut(), &job, &mut second).unwrap();
    assert_eq!(
        second.admitted,
        [true, true, false, true],
        "one page fitted; requisites always do"
    );
    assert_eq!(poll(one.as_mut(), &job).job_seen, Some(2), "pages only");
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.requisites, counts.pages()), (6, 4, 2));
}

#[test]
fn resume_takes_back_only_the_held_shards() {
    let (mut b, job, mut one) = two_holders();
    let (h0, h1) = hosts();
    let (x, y) = (entry(&h0, "/x", 1), entry(&h1, "/y", 1));
    let mut loaded = Batch {
        admit: vec![
            (x.0.clone(), x.1.clone(), true),
            (y.0.clone(), y.1.clone(), true),
        ],
        ..Batch::default()
    };
    apply(b.store.as_mut(), &job, &mut loaded).unwrap();
    // Shard 0's process crashes and restarts: y, held by shard 1's, stays held.
    drop(std::mem::replace(&mut b.store, (b.reopen)()));
    b.store
        .claim(&job, &claim(&[0], "zero again", false))
        .unwrap();
    let resumed = b.store.resume(job.id).unwrap();
    assert_eq!(resumed.queued, [(x.1.clone(), 1)]);
    let resumed = one.resume(job.id).unwrap();
    assert_eq!(resumed.queued, [(y.1.clone(), 1)]);
}

#[test]
fn sqlite_keeps_one_shard() {
    let mut b: Backend = sqlite();
    match b.store.open_job(&sharded("j", 2)) {
        Err(StoreError::Backend(why)) => assert!(why.contains("one shard"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let job = b.store.open_job(&spec("j")).unwrap();
    b.store.claim(&job, &claim(&[0], "me", false)).unwrap();
    // One process writes a file at a time: its results name no lease.
    let (h, _) = hosts();
    let e = entry(&h, "/", 0);
    apply(b.store.as_mut(), &job, &mut finish_batch(&[&e.0])).unwrap();
    let stored = b.store.results_by(job.id, 0, 10).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].2, None);
}

#[test]
fn a_version_1_database_is_migrated() {
    let url = postgres_url();
    let schema = format!("ck_v1_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path TO {schema}")).unwrap();
    for s in crawlkeeper_store::schema::postgres() {
        c.batch_execute(&s).unwrap();
    }
    c.batch_execute(
        "INSERT INTO crawlkeeper_version VALUES (1);
         INSERT INTO jobs (name, created_at, seeds, options) VALUES ('old', 'then', '[\"http://a.test/\"]', '{}');
         INSERT INTO authorities (job, id, authority) VALUES (1, 1, 'http://a.test:80');
         INSERT INTO urls (job, key, auth, url, depth, state, seq) VALUES (1, '\\x00000000000000000000000000000001', 1, 'http://a.test/', 0, 2, 1);
         INSERT INTO urls (job, key, auth, url, depth, chain, state) VALUES (1, '\\x00000000000000000000000000000002', 1, 'http://a.test/logo.png', 0, '{\"chain\":[],\"known\":{\"embed\":1}}', 0);
         INSERT INTO results (job, seq, failed, record) VALUES (1, 1, 0, '{}');",
    )
    .unwrap();
    let mut store = PgStore::connect_in_schema(&url, Some(&schema)).unwrap();
    let job = store.find_job("old").unwrap().unwrap();
    assert_eq!(
        (job.shards, job.counts.seen, job.counts.done),
        (1, 2, 1),
        "{job:?}"
    );
    assert_eq!(job.counts.requisites, 1, "counted from the rows");
    store.lock_job(&job).unwrap();
    let e = entry("b.test", "/", 1);
    let mut batch = Batch {
        admit: vec![(e.0.clone(), e.1.clone(), true)],
        finished: vec![FinishedUrl::new(e.0.key, record(&e.0, false))],
        ..Batch::default()
    };
    store.apply(job.id, &mut batch).unwrap();
    let results = store.results_by(job.id, 0, 10).unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, 1);
    assert!(results[1].0 > 1, "positions go on from the old ones");
    // The old result names no lease; the new one the lease it was stored under.
    assert_eq!(results[0].2, None);
    assert_eq!(
        results[1].2.as_ref().map(|w| (w.shard, w.generation)),
        Some((0, 1))
    );
    drop(store);
    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
}

#[test]
fn an_idle_sweep_queues_again_what_no_one_holds_and_reports_it() {
    let (mut b, job, mut one) = two_holders();
    // Shard 0's answer is "lost": its process holds nothing of x in memory.
    let (x, y) = one_loaded_by_each(&mut b, &job, one.as_mut());
    let mut quiet = Batch {
        poll: true,
        ..Batch::default()
    };
    apply(b.store.as_mut(), &job, &mut quiet).unwrap();
    assert!(
        quiet.news.is_empty(),
        "a poll that does not sweep leaves held rows alone"
    );
    let mut sweep = Batch {
        poll: true,
        sweep: true,
        ..Batch::default()
    };
    apply(b.store.as_mut(), &job, &mut sweep).unwrap();
    assert_eq!(
        sweep.news,
        [(x.1.clone(), 1)],
        "x is queued again and reported"
    );
    let mut load = Batch {
        load: vec![(x.1.clone(), 10)],
        ..Batch::default()
    };
    apply(b.store.as_mut(), &job, &mut load).unwrap();
    assert_eq!(load.loaded[0].len(), 1);
    // Shard 1's held row is its holder's business.
    let mut theirs = Batch {
        load: vec![(y.1.clone(), 10)],
        ..Batch::default()
    };
    apply(one.as_mut(), &job, &mut theirs).unwrap();
    assert!(
        theirs.loaded[0].is_empty(),
        "y is still held by shard 1's process"
    );
}

#[test]
fn a_holder_takes_more_shards_while_it_runs() {
    let (mut b, job, mut one) = two_holders();
    let (x, y) = one_loaded_by_each(&mut b, &job, one.as_mut());
    // Shard 1's process dies holding y; shard 0's takes shard 1 too.
    drop(one);
    assert!(
        matches!(
            b.store.resume_shards(job.id, &[1]),
            Err(StoreError::Backend(_))
        ),
        "a shard must be claimed first"
    );
    b.store.claim(&job, &claim(&[1], "zero", false)).unwrap();
    let resumed = b.store.resume_shards(job.id, &[1]).unwrap();
    assert_eq!(
        resumed.queued,
        [(y.1.clone(), 1)],
        "only shard 1's URLs, y queued again"
    );
    let mut load = Batch {
        load: vec![(y.1.clone(), 10), (x.1.clone(), 10)],
        ..Batch::default()
    };
    apply(b.store.as_mut(), &job, &mut load).unwrap();
    assert_eq!(load.loaded[0].len(), 1, "y is loaded");
    assert!(load.loaded[1].is_empty(), "x, still held in memory, is not");
    // Shard 1 taken from it: its session ends, then it is fenced.
    let mut heir = (b.reopen)();
    heir.claim(&job, &claim(&[1], "heir", true)).unwrap();
    let verify = || Batch {
        verify: true,
        ..Batch::default()
    };
    let first = apply(b.store.as_mut(), &job, &mut verify());
    assert!(
        matches!(first, Err(StoreError::Unavailable(_))),
        "{first:?}"
    );
    let second = apply(b.store.as_mut(), &job, &mut verify());
    assert!(
        matches!(second, Err(StoreError::Fenced { shard: 1, .. })),
        "{second:?}"
    );
    let shards = b.store.shards(&job).unwrap();
    assert_eq!(shards[0].holder.as_deref(), Some("zero"));
    assert_eq!(shards[1].holder.as_deref(), Some("heir"));
}
