//! A finished page whose row this connection loaded names the row by its
//! id: the row marked is that page's, and a row another writer finished
//! meanwhile is found done, not recorded twice.

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FinishedUrl, FrontierEntry};

use crate::test_record::record;
use crate::{JobSpec, PgStore, Store};

fn entry(host: &str, i: u32) -> (FrontierEntry, Authority) {
    let url = format!("http://{host}/p{i}");
    let entry = FrontierEntry {
        key: crawlkeeper_model::key::key_of_text(&url).unwrap(),
        url,
        depth: 1,
        parent: None,
        redirect_chain: Vec::new(),
        known: None,
    };
    (
        entry,
        Authority::try_from(format!("http://{host}")).unwrap(),
    )
}

fn finished(host: &str, i: u32) -> FinishedUrl {
    let (e, a) = entry(host, i);
    FinishedUrl::new(e.key, record(&e, &a))
}

fn finish(store: &mut PgStore, job: crate::JobId, host: &str, pages: &[u32]) -> Vec<bool> {
    let mut batch = Batch {
        finished: pages.iter().map(|&i| finished(host, i)).collect(),
        ..Batch::default()
    };
    store.apply(job, &mut batch).unwrap();
    batch.recorded
}

#[test]
fn a_loaded_page_marks_its_own_row_and_is_recorded_once() {
    let (url, space, mut c) = super::test_schema::fresh("ck_finish_ids");
    let mut here = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
    let spec = JobSpec {
        name: "j".into(),
        seeds: vec!["http://a.test/".into()],
        options: "{}".into(),
        shards: 1,
    };
    let job = here.open_job(&spec).unwrap().id;
    let mut admit = Batch {
        admit: ["a.test", "b.test"]
            .into_iter()
            .flat_map(|h| (0..6).map(move |i| entry(h, i)))
            .map(|(e, a)| (e, a, false))
            .collect(),
        ..Batch::default()
    };
    here.apply(job, &mut admit).unwrap();
    assert_eq!(admit.admitted, [true; 12]);
    // Admitted loaded (the crawler keeps them): named by their ids too.
    let mut kept = Batch {
        admit: (0..3)
            .map(|i| {
                let (e, a) = entry("c.test", i);
                (e, a, true)
            })
            .collect(),
        ..Batch::default()
    };
    here.apply(job, &mut kept).unwrap();
    assert_eq!(kept.admitted, [true; 3]);
    assert_eq!(finish(&mut here, job, "c.test", &[0, 1, 2]), [true; 3]);
    let mut load = Batch {
        load: vec![(entry("a.test", 0).1, 6)],
        ..Batch::default()
    };
    here.apply(job, &mut load).unwrap();
    assert_eq!(load.loaded[0].len(), 6);
    // Another writer finishes one of them first.
    let mut other = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
    assert_eq!(finish(&mut other, job, "a.test", &[0]), [true]);
    drop(other);
    assert_eq!(
        finish(&mut here, job, "a.test", &[0, 1, 2, 3, 4, 5]),
        [false, true, true, true, true, true]
    );
    assert_eq!(finish(&mut here, job, "a.test", &[1]), [false]);
    // Each of a.test's and c.test's rows is done with its own page's
    // result; b.test's are still queued.
    let rows = c
        .query(
            "SELECT u.url, u.state, r.record::json->>'url' FROM urls u
             LEFT JOIN results r ON r.job = u.job AND r.seq = u.seq ORDER BY u.url",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), 15);
    for r in rows {
        let (url, state, recorded): (String, i16, Option<String>) = (r.get(0), r.get(1), r.get(2));
        if !url.starts_with("http://b.test/") {
            assert_eq!(
                (state, recorded.as_deref()),
                (2, Some(url.as_str())),
                "{url}"
            );
        } else {
            assert_eq!((state, recorded), (0, None), "{url}");
        }
    }
    let results: i64 = c
        .query_one("SELECT count(*) FROM results", &[])
        .unwrap()
        .get(0);
    assert_eq!(results, 9);
    c.batch_execute(&format!("DROP SCHEMA {space} CASCADE"))
        .unwrap();
}
