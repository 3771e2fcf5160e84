//! PostgreSQL only: a database of schema version 5 (the one before
//! `urls_held` and `job_counts`) is migrated, and its URLs keep their
//! states: whether the job is open, and what a gone run held, are read
//! from the new index; the job's counts, counted once from its rows, move
//! with the URLs finished after.

use crawlkeeper_model::FinishedUrl;
use crawlkeeper_model::state::Batch;
use crawlkeeper_store::{PgStore, Store, schema};

use crate::backends::{postgres_url, version};
use crate::suite::{entry, record};

/// The names of the indexes on `urls` in `schema`.
fn indexes(c: &mut postgres::Client, schema: &str) -> Vec<String> {
    let mut names: Vec<String> = c
        .query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'urls'",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    names.sort();
    names
}

#[test]
fn a_version_5_database_is_migrated_and_its_held_urls_are_queued_again() {
    let url = postgres_url();
    let space = format!("ck_v5_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {space} CASCADE; CREATE SCHEMA {space}; SET search_path TO {space}"
    ))
    .unwrap();
    // Version 5 as this build's predecessor made it.
    let v5 = schema::postgres()
        .into_iter()
        .chain(schema::PG_TO_V2.iter().map(|s| s.to_string()))
        .chain(schema::PG_TO_V4.iter().map(|s| s.to_string()))
        .chain(schema::PG_TO_V5.iter().map(|s| s.to_string()));
    for s in v5 {
        c.batch_execute(&s).unwrap();
    }
    c.batch_execute("DROP TABLE job_counts").unwrap();
    assert!(indexes(&mut c, &space).contains(&"urls_open".to_owned()));
    let (done, held, queued) = (
        entry("a.test", "/", 0),
        entry("a.test", "/held", 1),
        entry("a.test", "/queued", 1),
    );
    let key = |e: &(
        crawlkeeper_model::FrontierEntry,
        crawlkeeper_model::Authority,
    )| { format!("\\x{:032x}", e.0.key) };
    c.batch_execute(&format!(
        "INSERT INTO crawlkeeper_version VALUES (5);
         INSERT INTO jobs (name, created_at, seeds, options) VALUES ('old', 'then', '[\"http://a.test/\"]', '{{}}');
         INSERT INTO authorities (job, id, authority) VALUES (1, 1, 'http://a.test:80');
         INSERT INTO urls (job, key, auth, url, depth, state, seq) VALUES (1, '{}', 1, 'http://a.test/', 0, 2, 1);
         INSERT INTO urls (job, key, auth, url, depth, state) VALUES (1, '{}', 1, 'http://a.test/held', 1, 1);
         INSERT INTO urls (job, key, auth, url, depth, state) VALUES (1, '{}', 1, 'http://a.test/queued', 1, 0);
         INSERT INTO results (job, seq, failed, record) VALUES (1, 1, 1, '{{}}');",
        key(&done),
        key(&held),
        key(&queued)
    ))
    .unwrap();

    let mut store = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
    assert_eq!(version(&mut c), schema::PG_VERSION);
    let names = indexes(&mut c, &space);
    assert!(names.contains(&"urls_held".to_owned()), "{names:?}");
    assert!(!names.contains(&"urls_open".to_owned()), "{names:?}");

    let job = store.find_job("old").unwrap().unwrap();
    let counts = |store: &mut PgStore| {
        let c = store.find_job("old").unwrap().unwrap().counts;
        (c.seen, c.done, c.errors)
    };
    assert_eq!(counts(&mut store), (3, 1, 1), "counted from the rows");
    assert_eq!(store.is_complete(job.id).unwrap(), Some(false));
    store.lock_job(&job).unwrap();
    let resumed = store.resume(job.id).unwrap();
    assert_eq!(
        resumed.queued,
        [(done.1.clone(), 2)],
        "the held URL is queued again beside the queued one"
    );
    let mut load = Batch {
        load: vec![(done.1.clone(), 10)],
        ..Batch::default()
    };
    store.apply(job.id, &mut load).unwrap();
    let mut loaded: Vec<String> = load.loaded[0].iter().map(|e| e.url.clone()).collect();
    loaded.sort();
    assert_eq!(loaded, ["http://a.test/held", "http://a.test/queued"]);
    assert_eq!(
        store.is_complete(job.id).unwrap(),
        Some(false),
        "held: open"
    );
    let mut finish = Batch {
        finished: [(&held, false), (&queued, true)]
            .iter()
            .map(|(e, failed)| FinishedUrl::new(e.0.key, record(&e.0, *failed)))
            .collect(),
        poll: true,
        ..Batch::default()
    };
    store.apply(job.id, &mut finish).unwrap();
    assert_eq!(finish.open, Some(false), "every URL done: the poll says so");
    assert_eq!(store.is_complete(job.id).unwrap(), Some(true));
    assert_eq!(counts(&mut store), (3, 3, 2), "and kept after");
    drop(store);
    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {space} CASCADE"));
}
