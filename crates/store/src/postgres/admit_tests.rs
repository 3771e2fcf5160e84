//! Both ways an admission learns which URLs are known (in the insert's
//! statement, or probed first once recent admissions found many known)
//! admit the same URLs and lower the same depths.

use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FrontierEntry};
use postgres::Client;

use super::apply::apply_in;
use super::cache::Cache;
use crate::{JobSpec, PgStore, Store};

fn entry(path: &str, depth: u32) -> (FrontierEntry, Authority, bool) {
    let url = format!("http://a.test{path}");
    let key = crawlkeeper_model::key::key_of_text(&url).unwrap();
    let entry = FrontierEntry {
        key,
        url,
        depth,
        parent: Some("http://a.test/".into()),
        redirect_chain: Vec::new(),
        known: None,
    };
    (
        entry,
        Authority::try_from("http://a.test".to_owned()).unwrap(),
        false,
    )
}

/// Admits `items` (paths and depths) through `cache`; what was admitted.
fn admit(c: &mut Client, cache: &mut Cache, job: i64, items: &[(&str, u32)]) -> Vec<bool> {
    let mut batch = Batch {
        admit: items.iter().map(|&(p, d)| entry(p, d)).collect(),
        ..Batch::default()
    };
    let mut tx = c.transaction().unwrap();
    apply_in(&mut tx, cache, job, 0, None, &mut batch).unwrap();
    tx.commit().unwrap();
    batch.admitted
}

#[test]
fn known_urls_are_found_whether_probed_first_or_in_the_insert() {
    for probe_first in [false, true] {
        let (url, space, mut c) = super::test_schema::fresh(&format!("ck_admit_{probe_first}"));
        let job = {
            let mut store = PgStore::connect_in_schema(&url, Some(&space)).unwrap();
            let spec = JobSpec {
                name: "j".into(),
                seeds: vec!["http://a.test/".into()],
                options: "{}".into(),
                shards: 1,
            };
            store.open_job(&spec).unwrap().id.0
        };
        let mut cache = Cache::default();
        let first: Vec<String> = (0..40).map(|i| format!("/p{i}")).collect();
        let at3: Vec<(&str, u32)> = first.iter().map(|p| (p.as_str(), 3)).collect();
        assert!(admit(&mut c, &mut cache, job, &at3).iter().all(|a| *a));
        assert!(!cache.probe_first(), "an admission of new URLs");
        if probe_first {
            // Admissions of known URLs only, until the probe goes first.
            for _ in 0..4 {
                assert!(admit(&mut c, &mut cache, job, &at3).iter().all(|a| !*a));
            }
        }
        assert_eq!(cache.probe_first(), probe_first);
        let again = [("/p0", 1), ("/p1", 7), ("/p2", 3), ("/new", 2)];
        assert_eq!(
            admit(&mut c, &mut cache, job, &again),
            [false, false, false, true],
            "probe first: {probe_first}"
        );
        let depths: Vec<(String, i32)> = c
            .query(
                "SELECT url, depth FROM urls WHERE url IN
                     ('http://a.test/p0', 'http://a.test/p1', 'http://a.test/new') ORDER BY url",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        assert_eq!(
            depths,
            [
                ("http://a.test/new".to_owned(), 2),
                ("http://a.test/p0".to_owned(), 1),
                ("http://a.test/p1".to_owned(), 3),
            ],
            "a shorter path lowers, a longer one does not (probe first: {probe_first})"
        );
        let rows: i64 = c
            .query_one("SELECT count(*) FROM urls", &[])
            .unwrap()
            .get(0);
        assert_eq!(rows, 41);
        c.batch_execute(&format!("DROP SCHEMA {space} CASCADE"))
            .unwrap();
    }
}
