//! PostgreSQL only: a database of schema version 8, whose `urls_key` held
//! the key alone, gets the index that includes each row's depth (version
//! 9) when it is opened; links to known URLs are answered from it, and a
//! shorter path still lowers a queued URL's depth.

use crawlkeeper_model::state::Batch;
use crawlkeeper_store::{PgStore, Store, schema};

use crate::backends::{old_job, old_schema, version};
use crate::suite::entry;

fn urls_key(c: &mut postgres::Client) -> String {
    c.query_one("SELECT pg_get_indexdef('urls_key'::regclass)", &[])
        .unwrap()
        .get(0)
}

fn depth(c: &mut postgres::Client, path: &str) -> i32 {
    c.query_one(
        "SELECT depth FROM urls WHERE url = $1",
        &[&format!("http://a.test{path}")],
    )
    .unwrap()
    .get(0)
}

#[test]
fn a_version_8_database_gets_depths_in_its_key_index() {
    let (url, space, mut c) = old_schema("ck_v8");
    let spec = old_job();
    let pages: Vec<_> = (0..20)
        .map(|i| entry("a.test", &format!("/p{i}"), 3))
        .collect();
    let admit = |store: &mut PgStore, job, items: &[_]| {
        let mut b = Batch {
            admit: items
                .iter()
                .map(|(e, a): &(_, _)| (Clone::clone(e), Clone::clone(a), false))
                .collect(),
            ..Batch::default()
        };
        store.apply(job, &mut b).unwrap();
        b.admitted
    };
    {
        let mut store = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
        let job = store.open_job(&spec).unwrap();
        admit(&mut store, job.id, &pages[..10]);
    }
    // What version 8 kept: the key alone.
    c.batch_execute(&format!(
        "SET search_path TO {space};
         DROP INDEX urls_key;
         CREATE UNIQUE INDEX urls_key ON urls (job, key);
         UPDATE crawlkeeper_version SET version = 8;"
    ))
    .unwrap();
    assert!(!urls_key(&mut c).contains("INCLUDE"));

    let mut store = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
    assert_eq!(version(&mut c), schema::PG_VERSION);
    let def = urls_key(&mut c);
    assert!(
        def.starts_with("CREATE UNIQUE INDEX urls_key")
            && def.ends_with("(job, key) INCLUDE (depth)"),
        "{def}"
    );

    let job = store.find_job("old").unwrap().unwrap();
    store.lock_job(&job).unwrap();
    assert_eq!(
        admit(&mut store, job.id, &pages[5..15]),
        (5..15).map(|i| i >= 10).collect::<Vec<_>>(),
        "the URLs it knew stay known"
    );
    // Found again deeper: left alone; by a shorter path: lowered.
    let deeper = entry("a.test", "/p1", 7);
    let shorter = entry("a.test", "/p2", 1);
    assert_eq!(
        admit(&mut store, job.id, &[deeper, shorter]),
        [false, false]
    );
    assert_eq!((depth(&mut c, "/p1"), depth(&mut c, "/p2")), (3, 1));
    let mut load = Batch {
        load: vec![(pages[0].1.clone(), 1)],
        ..Batch::default()
    };
    store.apply(job.id, &mut load).unwrap();
    assert_eq!(load.loaded[0].len(), 1);
    assert_eq!(
        (load.loaded[0][0].url.as_str(), load.loaded[0][0].depth),
        ("http://a.test/p2", 1),
        "the lowered URL comes first, at its new depth"
    );
    let rows: i64 = c
        .query_one("SELECT count(*) FROM urls", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 15, "no URL has two rows");
    drop(store);
    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {space} CASCADE"));
}
