//! PostgreSQL only: a database of schema version 7, whose keys were a hash
//! of the URL alone, is re-keyed from its URLs when it is opened (version
//! 8: host-prefixed keys), and what it knew stays known.

use crawlkeeper_model::FinishedUrl;
use crawlkeeper_model::state::Batch;
use crawlkeeper_store::{PgStore, Store, schema};

use crate::backends::{old_job, old_schema, version};
use crate::suite::{entry, record};

#[test]
fn a_version_7_database_is_re_keyed_and_its_urls_stay_known() {
    let (url, space, mut c) = old_schema("ck_v7");
    let spec = old_job();
    let pages: Vec<_> = (0..40)
        .map(|i| {
            entry(
                if i % 2 == 0 { "a.test" } else { "b.test" },
                &format!("/p{i}"),
                1,
            )
        })
        .collect();
    {
        let mut store = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
        let job = store.open_job(&spec).unwrap();
        let mut admit = Batch {
            admit: pages[..30]
                .iter()
                .map(|(e, a)| (e.clone(), a.clone(), false))
                .collect(),
            ..Batch::default()
        };
        store.apply(job.id, &mut admit).unwrap();
        let mut finish = Batch {
            finished: pages[..10]
                .iter()
                .map(|(e, _)| FinishedUrl::new(e.key, record(e, false)))
                .collect(),
            ..Batch::default()
        };
        store.apply(job.id, &mut finish).unwrap();
    }
    // What version 7 kept: other keys (here an MD5 of the URL, 16 bytes).
    c.batch_execute(&format!(
        "SET search_path TO {space};
         UPDATE urls SET key = decode(md5(url), 'hex');
         UPDATE crawlkeeper_version SET version = 7;"
    ))
    .unwrap();

    let mut store = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
    assert_eq!(version(&mut c), schema::PG_VERSION);
    for row in c.query("SELECT url, key FROM urls", &[]).unwrap() {
        let (u, key): (String, Vec<u8>) = (row.get(0), row.get(1));
        let want = crawlkeeper_model::key::key_of_text(&u).unwrap();
        assert_eq!(key, want.to_be_bytes(), "{u}");
    }
    let unique: bool = c
        .query_one(
            "SELECT indisunique FROM pg_index WHERE indexrelid = 'urls_key'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(unique, "the key index is made again, unique");

    let job = store.find_job("old").unwrap().unwrap();
    store.lock_job(&job).unwrap();
    let mut admit = Batch {
        admit: pages[25..]
            .iter()
            .map(|(e, a)| (e.clone(), a.clone(), false))
            .collect(),
        ..Batch::default()
    };
    store.apply(job.id, &mut admit).unwrap();
    assert_eq!(
        admit.admitted,
        (25..40).map(|i| i >= 30).collect::<Vec<_>>(),
        "the URLs it knew are known under today's keys"
    );
    let mut finish = Batch {
        finished: pages[5..15]
            .iter()
            .map(|(e, _)| FinishedUrl::new(e.key, record(e, false)))
            .collect(),
        ..Batch::default()
    };
    store.apply(job.id, &mut finish).unwrap();
    assert_eq!(
        finish.recorded,
        (5..15).map(|i| i >= 10).collect::<Vec<_>>(),
        "done once: the finished rows are found by their new keys"
    );
    let counts = store.find_job("old").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done), (40, 15));
    let rows: i64 = c
        .query_one("SELECT count(*) FROM urls", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 40, "no URL has two rows");
    drop(store);
    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {space} CASCADE"));
}
