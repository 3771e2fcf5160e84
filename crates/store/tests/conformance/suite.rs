//! The conformance tests, written once against `dyn Store`.

use crawlkeeper_model::revisit::RateMove;
use crawlkeeper_model::state::{Batch, Resumed};
use crawlkeeper_model::{
    Authority, AuthorityState, CrawlRecord, FinishedUrl, FrontierEntry, Known, NextFetch,
    RobotsSnapshot,
};
use crawlkeeper_store::{JobId, JobSpec, StoreError};

use crate::backends::Backend;

pub fn spec(name: &str) -> JobSpec {
    JobSpec {
        name: name.to_owned(),
        seeds: vec!["http://a.test/".to_owned()],
        options: "{\"follow\":true}".to_owned(),
        shards: 1,
    }
}

pub fn authority(host: &str) -> Authority {
    Authority::try_from(format!("http://{host}")).unwrap()
}

pub fn entry(host: &str, path: &str, depth: u32) -> (FrontierEntry, Authority) {
    let url = format!("http://{host}{path}");
    // The crawler's keys (stores re-key URLs from their text on migrations).
    let key = crawlkeeper_model::key::key_of_text(&url).expect("a test URL");
    (
        FrontierEntry {
            key,
            url,
            depth,
            parent: Some(format!("http://{host}/")),
            redirect_chain: if path.contains("redir") {
                vec![format!("http://{host}/from")]
            } else {
                Vec::new()
            },
            known: path.contains("listed").then(|| crawlkeeper_model::Known {
                lastmod: Some("2026-11-01".into()),
                ..Default::default()
            }),
        },
        authority(host),
    )
}

pub fn record(e: &FrontierEntry, error: bool) -> CrawlRecord {
    let authority = Authority::of(&url::Url::parse(&e.url).unwrap()).unwrap();
    CrawlRecord {
        status: Some(200),
        parent: e.parent.clone(),
        fetched_at: "2026-11-21T00:00:00.000Z".into(),
        response_ms: Some(3),
        content_type: Some("text/html".into()),
        bytes: 10,
        error: error.then(|| {
            crawlkeeper_model::RecordError::new(crawlkeeper_model::ErrorKind::Timeout, "t")
        }),
        ..CrawlRecord::blank(e.url.clone(), authority, e.depth)
    }
}

fn admit(
    b: &mut Backend,
    job: JobId,
    items: &[(FrontierEntry, Authority)],
    loaded: bool,
) -> Vec<bool> {
    let mut batch = Batch {
        admit: items
            .iter()
            .map(|(e, a)| (e.clone(), a.clone(), loaded))
            .collect(),
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    batch.admitted
}

fn finish(b: &mut Backend, job: JobId, items: &[(FrontierEntry, bool)]) -> Vec<bool> {
    let mut batch = Batch {
        finished: items
            .iter()
            .map(|(e, error)| FinishedUrl::new(e.key, record(e, *error)))
            .collect(),
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    batch.recorded
}

pub fn jobs_are_found_by_name_and_listed(b: &mut Backend) {
    let a = b.store.open_job(&spec("job-a")).unwrap();
    let again = b.store.open_job(&spec("job-a")).unwrap();
    assert_eq!(a, again, "opening twice finds the same job");
    let other = b.store.open_job(&spec("job-b")).unwrap();
    assert_ne!(a.id, other.id);
    assert_eq!(a.seeds, ["http://a.test/"]);
    assert_eq!(a.options, "{\"follow\":true}");
    assert!(b.store.find_job("nope").unwrap().is_none());
    let names: Vec<String> = b
        .store
        .jobs()
        .unwrap()
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(names, ["job-a", "job-b"]);
}

pub fn admission_reports_each_url_new_once(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let x = entry("a.test", "/x", 1);
    let y = entry("a.test", "/y", 1);
    assert_eq!(
        admit(b, job, &[x.clone(), y.clone(), x.clone()], true),
        [true, true, false]
    );
    assert_eq!(
        admit(b, job, &[y, entry("b.test", "/x", 2)], false),
        [false, true]
    );
    let other = b.store.open_job(&spec("k")).unwrap().id;
    assert_eq!(
        admit(b, other, &[x], true),
        [true],
        "jobs have their own seen sets"
    );
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done, counts.pending()), (3, 0, 3));
}

/// `e` as a page requisite (`--requisites`) one embed from its page.
pub fn requisite((mut e, a): (FrontierEntry, Authority)) -> (FrontierEntry, Authority) {
    e.known = Some(crawlkeeper_model::Known::embed(1));
    (e, a)
}

pub fn requisites_are_counted_apart_across_runs(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let page = entry("a.test", "/p", 1);
    let logo = requisite(entry("a.test", "/logo.png", 1));
    let font = requisite(entry("cdn.test", "/f.woff2", 1));
    assert_eq!(
        admit(b, job, &[page.clone(), logo.clone(), logo.clone()], true),
        [true, true, false]
    );
    // Offered again, as a page or a requisite: neither is counted twice.
    assert_eq!(
        admit(b, job, &[logo, font.clone(), page], false),
        [false, true, false]
    );
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.requisites, counts.pages()), (3, 2, 1));
    // Counted in the store, not in memory: a new process resuming the job
    // reads the same.
    drop(std::mem::replace(&mut b.store, (b.reopen)()));
    let resumed = b.store.resume(job).unwrap().counts;
    assert_eq!((resumed.seen, resumed.requisites), (3, 2));
    let other = b.store.open_job(&spec("k")).unwrap().id;
    assert_eq!(admit(b, other, &[font], true), [true]);
    let counts = b.store.find_job("k").unwrap().unwrap().counts;
    assert_eq!(
        (counts.seen, counts.requisites),
        (1, 1),
        "jobs count their own"
    );
}

pub fn a_job_is_complete_when_every_admitted_url_is_done(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    assert_eq!(
        b.store.is_complete(job).unwrap(),
        Some(false),
        "nothing yet"
    );
    let (x, y) = (entry("a.test", "/x", 0), entry("b.test", "/y", 1));
    admit(b, job, std::slice::from_ref(&x), true);
    admit(b, job, std::slice::from_ref(&y), false);
    assert_eq!(b.store.is_complete(job).unwrap(), Some(false));
    finish(b, job, &[(x.0, false)]);
    assert_eq!(b.store.is_complete(job).unwrap(), Some(false), "y waits");
    finish(b, job, &[(y.0, true)]);
    assert_eq!(b.store.is_complete(job).unwrap(), Some(true));
    assert!(b.store.delete_job("j").unwrap());
    assert_eq!(b.store.is_complete(job).unwrap(), None, "gone");
}

pub fn large_admissions_report_known_and_repeated_urls(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let page = |i: usize| entry("a.test", &format!("/p{i}"), 2);
    // Known before: every seventh page.
    let known: Vec<_> = (0..100).step_by(7).map(page).collect();
    assert!(admit(b, job, &known, false).iter().all(|n| *n));
    // A long batch with known pages, a page twice in a row and a page twice
    // far apart, among new ones; then a long batch of new pages only.
    let mut items: Vec<_> = (0..100).map(page).collect();
    items.insert(10, page(10));
    items.push(page(50));
    let expected: Vec<bool> = items
        .iter()
        .enumerate()
        .map(|(i, (e, _))| {
            !known.iter().any(|(k, _)| k.key == e.key)
                && !items[..i].iter().any(|(p, _)| p.key == e.key)
        })
        .collect();
    assert_eq!(admit(b, job, &items, true), expected);
    let fresh: Vec<_> = (100..180).map(page).collect();
    assert!(admit(b, job, &fresh, true).iter().all(|n| *n));
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!(counts.seen, 180);
}

pub fn results_are_stored_once_in_finishing_order(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let items: Vec<_> = (0..5)
        .map(|i| entry("a.test", &format!("/{i}"), 1))
        .collect();
    admit(b, job, &items, true);
    let order = [3usize, 1, 4];
    let finished: Vec<_> = order
        .iter()
        .map(|&i| (items[i].0.clone(), i == 4))
        .collect();
    assert_eq!(finish(b, job, &finished), [true, true, true]);
    assert_eq!(
        finish(b, job, &finished[..1]),
        [false],
        "a replay stores nothing"
    );
    let results = b.store.results(job, None, 0, 100).unwrap();
    let urls: Vec<String> = results
        .iter()
        .map(|(_, json)| serde_json::from_str::<CrawlRecord>(json).unwrap().url)
        .collect();
    let expected: Vec<String> = order.iter().map(|&i| items[i].0.url.clone()).collect();
    assert_eq!(urls, expected);
    let after_first = b.store.results(job, None, results[0].0, 1).unwrap();
    assert_eq!(after_first, results[1..2]);
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done, counts.errors), (5, 3, 1));
}

pub fn a_url_finished_without_admission_gets_its_row(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let x = entry("a.test", "/skipped", 1);
    assert_eq!(finish(b, job, &[(x.0.clone(), true)]), [true]);
    assert_eq!(admit(b, job, &[x], true), [false], "now it is seen");
    assert_eq!(b.store.results(job, None, 0, 10).unwrap().len(), 1);
}

/// A resume names the hosts with queued URLs, and only them: a host whose
/// every URL was crawled is left out (each named host takes a place in
/// the crawler's memory).
pub fn a_resume_names_only_hosts_with_queued_urls(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let waiting = entry("a.test", "/waiting", 1);
    let crawled = entry("b.test", "/crawled", 1);
    admit(b, job, std::slice::from_ref(&waiting), false);
    // Held by the crawler from its admission, then finished.
    admit(b, job, std::slice::from_ref(&crawled), true);
    finish(b, job, &[(crawled.0.clone(), false)]);
    let mut second = (b.reopen)();
    let Resumed { queued, .. } = second.resume(job).unwrap();
    let named: Vec<(String, u64)> = queued
        .into_iter()
        .map(|(a, n)| (a.to_string(), n))
        .collect();
    assert_eq!(named, [("http://a.test:80".to_owned(), 1)]);
}

pub fn loads_take_the_shallowest_and_resume_requeues_what_was_loaded(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let deep = entry("a.test", "/deep", 3);
    let shallow = entry("a.test", "/redir", 1);
    let mid = entry("a.test", "/mid-listed", 2);
    let elsewhere = entry("b.test", "/x", 1);
    admit(
        b,
        job,
        &[
            deep.clone(),
            shallow.clone(),
            mid.clone(),
            elsewhere.clone(),
        ],
        false,
    );
    let mut batch = Batch {
        load: vec![(authority("a.test"), 2)],
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    assert_eq!(batch.loaded.len(), 1);
    assert_eq!(
        batch.loaded[0],
        [shallow.0.clone(), mid.0.clone()],
        "shallowest first, all fields kept"
    );
    // Loaded URLs are not loaded twice.
    let mut again = Batch {
        load: vec![(authority("a.test"), 10)],
        ..Batch::default()
    };
    b.store.apply(job, &mut again).unwrap();
    assert_eq!(again.loaded[0], std::slice::from_ref(&deep.0));
    // A crash: the next run finds everything loaded and unfinished queued again.
    finish(b, job, &[(mid.0.clone(), false)]);
    let mut second = (b.reopen)();
    let Resumed { counts, queued, .. } = second.resume(job).unwrap();
    assert_eq!((counts.seen, counts.done), (4, 1));
    let mut queued: Vec<(String, u64)> = queued
        .into_iter()
        .map(|(a, n)| (a.to_string(), n))
        .collect();
    queued.sort();
    assert_eq!(
        queued,
        [
            ("http://a.test:80".to_owned(), 2),
            ("http://b.test:80".to_owned(), 1)
        ]
    );
    // Finished URLs are not loaded again, even one finished while queued.
    let mut batch = Batch {
        finished: vec![FinishedUrl::new(
            elsewhere.0.key,
            record(&elsewhere.0, false),
        )],
        ..Batch::default()
    };
    second.apply(job, &mut batch).unwrap();
    let mut load = Batch {
        load: vec![(authority("a.test"), 10), (authority("b.test"), 10)],
        ..Batch::default()
    };
    second.apply(job, &mut load).unwrap();
    assert_eq!(load.loaded, [vec![shallow.0, deep.0], vec![]]);
}

pub fn authority_state_survives(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let saved = AuthorityState {
        authority: authority("a.test"),
        robots: Some(RobotsSnapshot::Body("User-agent: *\nDisallow: /x\n".into())),
        robots_at_ms: None,
        delay_ms: 250,
        consecutive_failures: 2,
        abandoned: true,
    };
    let mut batch = Batch {
        authorities: vec![saved.clone()],
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    let mut newer = saved.clone();
    newer.delay_ms = 300;
    let mut batch = Batch {
        authorities: vec![newer.clone()],
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    let resumed = (b.reopen)().resume(job).unwrap();
    assert_eq!(resumed.authorities, [newer]);
}

pub fn deleting_a_job_leaves_the_others(b: &mut Backend) {
    let a = b.store.open_job(&spec("a")).unwrap().id;
    let k = b.store.open_job(&spec("k")).unwrap().id;
    let x = entry("a.test", "/x", 1);
    admit(b, a, std::slice::from_ref(&x), true);
    admit(b, k, std::slice::from_ref(&x), true);
    finish(b, a, &[(x.0.clone(), false)]);
    assert!(b.store.delete_job("a").unwrap());
    assert!(!b.store.delete_job("a").unwrap());
    assert!(b.store.find_job("a").unwrap().is_none());
    assert_eq!(b.store.find_job("k").unwrap().unwrap().counts.seen, 1);
    let fresh = b.store.open_job(&spec("a")).unwrap();
    assert_eq!(fresh.counts.seen, 0, "a recreated job starts empty");
    assert_eq!(admit(b, fresh.id, &[x], true), [true]);
}

pub fn a_job_is_locked_by_one_owner(b: &mut Backend) {
    let job = b.store.open_job(&spec("locked")).unwrap();
    b.store.lock_job(&job).unwrap();
    b.store.lock_job(&job).expect("the owner may lock again");
    let mut other = (b.reopen)();
    match other.lock_job(&job) {
        Err(StoreError::Locked(name)) => assert_eq!(name, "locked"),
        other => panic!("expected Locked, got {other:?}"),
    }
    let free = other.open_job(&spec("free")).unwrap();
    other.lock_job(&free).unwrap();
    drop(std::mem::replace(&mut b.store, (b.reopen)()));
    let mut third = (b.reopen)();
    third.lock_job(&job).expect("the lock goes with its owner");
}

pub fn large_batches(b: &mut Backend) {
    let job = b.store.open_job(&spec("big")).unwrap().id;
    let items: Vec<_> = (0..5000)
        .map(|i| entry(&format!("h{}.test", i % 50), &format!("/p/{i}"), i % 7))
        .collect();
    let new = admit(b, job, &items, false);
    assert!(new.iter().all(|n| *n));
    let finished: Vec<_> = items
        .iter()
        .take(2000)
        .map(|(e, _)| (e.clone(), false))
        .collect();
    assert_eq!(
        finish(b, job, &finished).iter().filter(|r| **r).count(),
        2000
    );
    let counts = b.store.find_job("big").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done), (5000, 2000));
}

pub fn a_batch_retried_after_an_unconfirmed_commit_keeps_its_results(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let x = entry("a.test", "/x", 1);
    let y = entry("a.test", "/y", 1);
    admit(b, job, &[x.clone(), y.clone()], true);
    finish(b, job, &[(x.0.clone(), false)]);
    let mut batch = Batch {
        finished: [&x.0, &y.0]
            .iter()
            .map(|e| FinishedUrl::new(e.key, record(e, false)))
            .collect(),
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    assert_eq!(batch.recorded, [false, true]);
    // The commit happened but its answer was lost: the same batch is applied again.
    b.store.apply(job, &mut batch).unwrap();
    assert_eq!(
        batch.recorded,
        [false, true],
        "y was stored by this batch, x long before"
    );
    assert_eq!(b.store.results(job, None, 0, 10).unwrap().len(), 2);
}

pub fn results_written_by_two_connections_keep_one_order(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let mut other = (b.reopen)();
    let [x, y, z] = ["/x", "/y", "/z"].map(|p| entry("a.test", p, 1));
    admit(b, job, &[x.clone(), y.clone(), z.clone()], true);
    finish(b, job, &[(x.0.clone(), false)]);
    // Another connection appends a result between two of this one's.
    let mut batch = Batch {
        finished: vec![FinishedUrl::new(y.0.key, record(&y.0, false))],
        ..Batch::default()
    };
    other.apply(job, &mut batch).unwrap();
    assert_eq!(batch.recorded, [true]);
    assert_eq!(finish(b, job, &[(z.0.clone(), false)]), [true]);
    let urls: Vec<String> = b
        .store
        .results(job, None, 0, 10)
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_str::<serde_json::Value>(&r).unwrap()["url"].to_string())
        .collect();
    assert_eq!(
        urls,
        [&x.0.url, &y.0.url, &z.0.url].map(|u| format!("\"{u}\"")),
        "positions are shared by every connection"
    );
}

pub fn urls_admitted_or_finished_by_another_connection_are_known(b: &mut Backend) {
    let job = b.store.open_job(&spec("j")).unwrap().id;
    let [x, y, z, w] = ["/x", "/y", "/z", "/w"].map(|p| entry("a.test", p, 1));
    assert_eq!(admit(b, job, std::slice::from_ref(&x), true), [true]);
    let mut other = (b.reopen)();
    let mut batch = Batch {
        admit: [&x, &y]
            .iter()
            .map(|(e, a)| (e.clone(), a.clone(), true))
            .collect(),
        ..Batch::default()
    };
    other.apply(job, &mut batch).unwrap();
    assert_eq!(batch.admitted, [false, true], "x came from the first");
    // Another job's rows, written by the other connection, change nothing.
    let k = other.open_job(&spec("k")).unwrap().id;
    let mut batch = Batch {
        admit: vec![(z.0.clone(), z.1.clone(), true)],
        ..Batch::default()
    };
    other.apply(k, &mut batch).unwrap();
    let mut batch = Batch {
        finished: vec![FinishedUrl::new(w.0.key, record(&w.0, false))],
        ..Batch::default()
    };
    other.apply(job, &mut batch).unwrap();
    assert_eq!(batch.recorded, [true], "w, never admitted, gets its row");
    assert_eq!(
        admit(b, job, &[y.clone(), z.clone(), w.clone()], true),
        [false, true, false],
        "y and w came from the other connection; z is new to this job"
    );
    assert_eq!(
        finish(b, job, &[(y.0.clone(), false), (w.0.clone(), false)]),
        [true, false]
    );
    let counts = b.store.find_job("j").unwrap().unwrap().counts;
    assert_eq!((counts.seen, counts.done), (4, 2));
}

pub fn a_recrawl_queues_every_url_again_with_what_its_record_tells(b: &mut Backend) {
    let job = b.store.open_job(&spec("again")).unwrap();
    let other = b.store.open_job(&spec("other")).unwrap();
    let page = entry("a.test", "/page", 1);
    let redirected = entry("a.test", "/redir", 1);
    let failed = entry("b.test", "/failed", 2);
    let all = [page.clone(), redirected.clone(), failed.clone()];
    admit(b, job.id, &all, true);
    admit(b, other.id, &all, true);
    let mut with_etag = record(&page.0, false);
    with_etag.etag = Some("\"v1\"".into());
    with_etag.last_modified = Some("Tue, 24 Nov 2026 10:00:00 GMT".into());
    let mut batch = Batch {
        finished: vec![
            FinishedUrl::new(page.0.key, with_etag.clone()),
            FinishedUrl::new(redirected.0.key, record(&redirected.0, false)),
            FinishedUrl::new(failed.0.key, record(&failed.0, true)),
        ],
        authorities: vec![AuthorityState {
            authority: authority("a.test"),
            robots: Some(RobotsSnapshot::AllowAll),
            robots_at_ms: None,
            delay_ms: 250,
            consecutive_failures: 0,
            abandoned: false,
        }],
        ..Batch::default()
    };
    b.store.apply(job.id, &mut batch).unwrap();
    finish(b, other.id, &[(page.0.clone(), false)]);

    let job = b.store.find_job("again").unwrap().unwrap();
    assert_eq!(b.store.recrawl(&job).unwrap(), 3);
    let after = b.store.find_job("again").unwrap().unwrap();
    assert_eq!((after.counts.seen, after.counts.done), (3, 0));
    let resumed = b.store.resume(job.id).unwrap();
    assert!(resumed.authorities.is_empty(), "robots.txt is asked again");
    let mut queued = resumed.queued.clone();
    queued.sort_by_key(|q| q.0.to_string());
    assert_eq!(queued, [(authority("a.test"), 2), (authority("b.test"), 1)]);
    let mut load = Batch {
        load: vec![(authority("a.test"), 10), (authority("b.test"), 10)],
        ..Batch::default()
    };
    b.store.apply(job.id, &mut load).unwrap();
    let loaded: Vec<&FrontierEntry> = load.loaded.iter().flatten().collect();
    let find = |e: &FrontierEntry| *loaded.iter().find(|l| l.key == e.key).unwrap();
    let known = find(&page.0).known.clone().expect("validators kept");
    assert_eq!(known.etag.as_deref(), Some("\"v1\""));
    assert_eq!(known.last_modified, with_etag.last_modified);
    assert_eq!(
        known.captured_at.as_deref(),
        Some(with_etag.fetched_at.as_str())
    );
    let r = find(&redirected.0);
    assert_eq!(r.redirect_chain, redirected.0.redirect_chain, "chain kept");
    assert_eq!(r.known, None);
    assert_eq!(
        find(&failed.0).known,
        None,
        "a failed fetch validates nothing"
    );
    assert_eq!(
        finish(b, job.id, &[(page.0.clone(), false)]),
        [true],
        "the new pass stores a new record"
    );
    let other = b.store.find_job("other").unwrap().unwrap();
    assert_eq!(other.counts.done, 1, "another job is left alone");
}

pub fn archives_are_kept_when_asked_once_per_result_and_go_with_the_job(b: &mut Backend) {
    let job = b.store.open_job(&spec("kept")).unwrap();
    let [x, y, z] = ["/x", "/y", "/z"].map(|p| entry("a.test", p, 1));
    admit(b, job.id, &[x.clone(), y.clone(), z.clone()], true);
    let finished = |e: &(FrontierEntry, Authority), archive: &[u8]| {
        let mut f = FinishedUrl::new(e.0.key, record(&e.0, false));
        f.archive = archive.to_vec();
        f
    };
    let mut kept = Batch {
        finished: vec![finished(&x, b"x records"), finished(&z, b"")],
        keep_archives: true,
        ..Batch::default()
    };
    b.store.apply(job.id, &mut kept).unwrap();
    let mut not_kept = Batch {
        finished: vec![finished(&y, b"y records")],
        ..Batch::default()
    };
    b.store.apply(job.id, &mut not_kept).unwrap();
    // Finished again (a replay): still one.
    let mut again = Batch {
        finished: vec![finished(&x, b"x again")],
        keep_archives: true,
        ..Batch::default()
    };
    b.store.apply(job.id, &mut again).unwrap();
    let results = b.store.results(job.id, None, 0, 10).unwrap();
    let archives = b.store.archives(job.id, 0, 10).unwrap();
    assert_eq!(archives, [(results[0].0, b"x records".to_vec())]);
    assert!(
        b.store
            .archives(job.id, results[0].0, 10)
            .unwrap()
            .is_empty()
    );
    let job = b.store.find_job("kept").unwrap().unwrap();
    b.store.recrawl(&job).unwrap();
    assert!(
        b.store.archives(job.id, 0, 10).unwrap().is_empty(),
        "a new pass"
    );
    let mut kept = Batch {
        finished: vec![finished(&x, b"x pass 2")],
        keep_archives: true,
        ..Batch::default()
    };
    b.store.apply(job.id, &mut kept).unwrap();
    assert!(b.store.delete_job("kept").unwrap());
    let job = b.store.open_job(&spec("kept")).unwrap();
    assert!(
        b.store.archives(job.id, 0, 10).unwrap().is_empty(),
        "deleted with the job"
    );
}

/// A continuous crawl's URL, finished with its next fetch due at `due_ms`,
/// carrying validators to it, and moved in the rate histogram `moved`.
fn finished_for_again(
    e: &(FrontierEntry, Authority),
    error: bool,
    due_ms: i64,
    moved: (Option<i16>, Option<i16>),
) -> FinishedUrl {
    let mut f = FinishedUrl::new(e.0.key, record(&e.0, error));
    f.moved = Some(RateMove {
        from: moved.0,
        to: moved.1,
    });
    let mut entry = e.0.clone();
    entry.known = Some(Known {
        etag: Some(format!("\"{due_ms}\"")),
        ..Known::default()
    });
    f.next = Some(Box::new(NextFetch {
        due_ms,
        entry,
        authority: e.1.clone(),
    }));
    f
}

/// A batch asking for the URLs due by `now`: what it queued again, and
/// the next due time left.
fn due(b: &mut Backend, job: JobId, now: i64) -> (Vec<(Authority, u64)>, Option<i64>) {
    let (requeued, next, _) = due_and_rates(b, job, now);
    (requeued, next)
}

/// [`due`], with the job's rate histogram.
#[allow(clippy::type_complexity)]
fn due_and_rates(
    b: &mut Backend,
    job: JobId,
    now: i64,
) -> (Vec<(Authority, u64)>, Option<i64>, Vec<(i16, u64)>) {
    let mut batch = Batch {
        due: Some(now),
        ..Batch::default()
    };
    b.store.apply(job, &mut batch).unwrap();
    let mut requeued = batch.requeued;
    requeued.sort_by_key(|(a, _)| a.to_string());
    (requeued, batch.next_due, batch.rates)
}

pub fn a_continuous_crawl_s_urls_are_queued_again_when_due(b: &mut Backend) {
    let job = b.store.open_job(&spec("forever")).unwrap();
    let page = entry("a.test", "/redir-page", 1);
    let later = entry("b.test", "/later", 2);
    let once = entry("b.test", "/once", 2);
    admit(
        b,
        job.id,
        &[page.clone(), later.clone(), once.clone()],
        true,
    );
    let mut batch = Batch {
        finished: vec![
            finished_for_again(&page, false, 1_000, (None, Some(-60))),
            finished_for_again(&later, true, 5_000, (None, Some(-60))),
            // A page retired (or of a one-shot crawl): never due.
            FinishedUrl::new(once.0.key, record(&once.0, false)),
        ],
        ..Batch::default()
    };
    b.store.apply(job.id, &mut batch).unwrap();
    assert_eq!(batch.recorded, [true, true, true]);
    let counts = |b: &mut Backend| b.store.find_job("forever").unwrap().unwrap().counts;
    assert_eq!((counts(b).done, counts(b).errors), (3, 1));

    assert_eq!(
        due_and_rates(b, job.id, 999),
        (vec![], Some(1_000), vec![(-60, 2)]),
        "nothing due yet; two pages counted at one rate"
    );
    assert_eq!(
        due(b, job.id, 1_000),
        (vec![(authority("a.test"), 1)], Some(5_000)),
        "due at its time"
    );
    assert_eq!(due(b, job.id, 1_000), (vec![], Some(5_000)), "queued once");
    let c = counts(b);
    assert_eq!((c.done, c.errors, c.pending()), (2, 1, 1));
    let resumed = b.store.resume(job.id).unwrap();
    assert_eq!(
        resumed.queued,
        [(authority("a.test"), 1)],
        "queued in the store"
    );
    let mut load = Batch {
        load: vec![(authority("a.test"), 10)],
        ..Batch::default()
    };
    b.store.apply(job.id, &mut load).unwrap();
    let loaded = &load.loaded[0];
    assert_eq!(loaded.len(), 1);
    assert_eq!(
        loaded[0].known.as_ref().and_then(|k| k.etag.as_deref()),
        Some("\"1000\""),
        "what its last fetch told the next one"
    );
    assert_eq!(
        loaded[0].redirect_chain, page.0.redirect_chain,
        "chain kept"
    );
    let mut again = Batch {
        finished: vec![finished_for_again(
            &page,
            false,
            10_000,
            (Some(-60), Some(-40)),
        )],
        ..Batch::default()
    };
    b.store.apply(job.id, &mut again).unwrap();
    assert_eq!(again.recorded, [true], "a record per fetch");
    // The same fetch's record again (as a retried batch would send it):
    // stored once, moved once.
    let mut twice = Batch {
        finished: again.finished.clone(),
        ..Batch::default()
    };
    b.store.apply(job.id, &mut twice).unwrap();
    assert_eq!(twice.recorded, [false]);
    assert_eq!(
        due_and_rates(b, job.id, 4_999).2,
        [(-60, 1), (-40, 1)],
        "the page moved to a faster bucket"
    );
    assert_eq!(b.store.results_count(job.id, None).unwrap(), 4);
    assert_eq!(
        due(b, job.id, 20_000),
        (
            vec![(authority("a.test"), 1), (authority("b.test"), 1)],
            None
        ),
        "the one-shot page is never due"
    );
    let c = counts(b);
    assert_eq!(
        (c.done, c.errors, c.pending()),
        (1, 0, 2),
        "a failed fetch counts until its URL is due again"
    );
}
