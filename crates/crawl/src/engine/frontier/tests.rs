use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::*;
use crate::pipeline::{Discovered, url_key};
use crate::scope::Disposition;

fn politeness(max_load: u8) -> PolitenessConfig {
    PolitenessConfig {
        max_load,
        retry_base: Duration::from_millis(100),
        max_host_errors: 3,
        ..PolitenessConfig::default()
    }
}

fn limits(per_host: usize, max_pages: Option<u64>, robots: bool) -> FrontierLimits {
    FrontierLimits {
        per_host,
        max_pages,
        max_requisites: None,
        respect_robots: robots,
        seen_cache: 1000,
        max_queued: 1000,
    }
}

fn frontier(per_host: usize, max_pages: Option<u64>, robots: bool) -> Frontier {
    Frontier::new(limits(per_host, max_pages, robots), politeness(100), 7)
}

/// Plays the store: every URL offered is new.
fn store_admits_all(f: &mut Frontier, now: Instant) {
    for o in f.take_outbox() {
        f.admitted(o.slot, o.key, o.request, true, o.loaded, now);
    }
}

fn offer_at(f: &mut Frontier, url: &str, depth: u32, now: Instant) -> Disposition {
    let url = Url::parse(url).unwrap();
    let mut request = Request::seed(url.clone());
    request.depth = depth;
    let d = f.triage(
        Discovered {
            key: url_key(&url),
            request,
        },
        None,
    );
    store_admits_all(f, now);
    d
}

fn offer(f: &mut Frontier, url: &str, now: Instant) -> Disposition {
    offer_at(f, url, 0, now)
}

fn take_page(f: &mut Frontier, now: Instant) -> (Slot, Request) {
    match f.next_start(now) {
        Some(Next::Page { slot, request, .. }) => (slot, request),
        Some(Next::Robots { .. }) => panic!("expected a page, got robots"),
        None => panic!("expected a page, got nothing"),
    }
}

fn ok(ms: u64) -> RequestReport {
    RequestReport {
        response_time: Some(Duration::from_millis(ms)),
        failed: false,
    }
}

fn failed() -> RequestReport {
    RequestReport {
        response_time: Some(Duration::from_millis(10)),
        failed: true,
    }
}

#[test]
fn duplicates_and_limits() {
    let now = Instant::now();
    let mut f = frontier(1, Some(2), false);
    assert_eq!(offer(&mut f, "http://a.test/1", now), Disposition::Queued);
    assert_eq!(
        offer(&mut f, "http://a.test/1", now),
        Disposition::Duplicate
    );
    assert_eq!(offer(&mut f, "http://a.test/2", now), Disposition::Queued);
    assert_eq!(
        offer(&mut f, "http://a.test/3", now),
        Disposition::OverLimit
    );
    assert_eq!(f.cached_keys(), 2);
}

#[test]
fn robots_first_then_one_request_at_a_time_per_host() {
    let now = Instant::now();
    let mut f = frontier(1, None, true);
    offer(&mut f, "http://a.test/1", now);
    offer(&mut f, "http://a.test/2", now);
    let Some(Next::Robots { slot, .. }) = f.next_start(now) else {
        panic!("robots.txt comes first");
    };
    assert!(
        f.next_start(now).is_none(),
        "nothing else until robots is known"
    );
    f.robots_known(slot, RobotsRules::AllowAll, None, now);
    let (slot, request) = take_page(&mut f, now);
    assert_eq!(request.url.as_str(), "http://a.test/1");
    assert!(f.next_start(now).is_none(), "per_host = 1");
    f.request_done(slot, now, ok(5));
    assert_eq!(take_page(&mut f, now).1.url.as_str(), "http://a.test/2");
}

#[test]
fn authorities_take_turns() {
    let now = Instant::now();
    let mut f = frontier(2, None, false);
    for i in 0..3 {
        offer(&mut f, &format!("http://a.test/{i}"), now);
        offer(&mut f, &format!("http://b.test/{i}"), now);
    }
    let order: Vec<String> = (0..4)
        .map(|_| take_page(&mut f, now).1.url.to_string())
        .collect();
    assert_eq!(
        order,
        [
            "http://a.test/0",
            "http://b.test/0",
            "http://a.test/1",
            "http://b.test/1"
        ]
    );
    assert!(
        f.next_start(now).is_none(),
        "both authorities at per_host = 2"
    );
    assert_eq!(f.pending(), 2);
}

#[test]
fn adaptive_delay_holds_an_authority_back_without_spinning() {
    let t0 = Instant::now();
    let mut f = Frontier::new(limits(1, None, false), politeness(50), 1);
    offer(&mut f, "http://a.test/1", t0);
    offer(&mut f, "http://a.test/2", t0);
    offer(&mut f, "http://b.test/1", t0);
    let (a, _) = take_page(&mut f, t0);
    let (_, b) = take_page(&mut f, t0);
    assert_eq!(b.url.as_str(), "http://b.test/1");
    // a answered in 400 ms: with L = 50 the next request waits 100 ms.
    let t1 = t0 + Duration::from_millis(400);
    f.request_done(a, t1, ok(400));
    assert!(
        f.next_start(t1).is_none(),
        "a is waiting, and is not handed out"
    );
    assert_eq!(f.next_wake(), Some(t1 + Duration::from_millis(100)));
    f.release_due(t1 + Duration::from_millis(99));
    assert!(f.next_start(t1 + Duration::from_millis(99)).is_none());
    let t2 = t1 + Duration::from_millis(100);
    f.release_due(t2);
    assert_eq!(take_page(&mut f, t2).1.url.as_str(), "http://a.test/2");
}

#[test]
fn crawl_delay_from_robots_spaces_requests() {
    let t0 = Instant::now();
    let mut f = Frontier::new(limits(1, None, true), politeness(100), 1);
    offer(&mut f, "http://a.test/1", t0);
    offer(&mut f, "http://a.test/2", t0);
    let Some(Next::Robots { slot, .. }) = f.next_start(t0) else {
        panic!("robots first")
    };
    f.robots_known(
        slot,
        RobotsRules::parse(b"User-agent: *\nCrawl-delay: 1\n"),
        None,
        t0,
    );
    let (slot, _) = take_page(&mut f, t0);
    f.request_done(slot, t0, ok(5));
    assert_eq!(f.next_wake(), Some(t0 + Duration::from_secs(1)));
}

#[test]
fn retries_back_off_and_retry_after_holds_the_authority() {
    let t0 = Instant::now();
    let mut f = frontier(1, None, false);
    offer(&mut f, "http://a.test/1", t0);
    offer(&mut f, "http://a.test/2", t0);
    let (slot, request) = take_page(&mut f, t0);
    f.request_done(slot, t0, failed());
    assert!(
        f.retry(slot, request, t0, Some(Duration::from_secs(5)))
            .is_none()
    );
    assert!(
        f.next_start(t0).is_none(),
        "Retry-After holds back every URL of the authority"
    );
    assert_eq!(f.next_wake(), Some(t0 + Duration::from_secs(5)));
    let t1 = t0 + Duration::from_secs(5);
    f.release_due(t1);
    let (slot, request) = take_page(&mut f, t1);
    assert_eq!(
        (request.url.as_str(), request.attempts),
        ("http://a.test/1", 1),
        "the retry goes first"
    );
    // Without Retry-After only the URL waits its backoff; the next URL goes ahead.
    f.request_done(slot, t1, failed());
    assert!(f.retry(slot, request, t1, None).is_none());
    let (_, next) = take_page(&mut f, t1);
    assert_eq!(next.url.as_str(), "http://a.test/2");
}

#[test]
fn retries_are_bounded() {
    let t0 = Instant::now();
    let mut f = frontier(1, None, false);
    offer(&mut f, "http://a.test/1", t0);
    let (slot, mut request) = take_page(&mut f, t0);
    request.attempts = 3;
    assert!(
        f.retry(slot, request, t0, None).is_some(),
        "3 retries were made"
    );
}

#[test]
fn an_authority_failing_in_a_row_is_abandoned_and_its_urls_skipped() {
    let t0 = Instant::now();
    let mut f = frontier(1, None, false);
    for i in 0..5 {
        offer(&mut f, &format!("http://a.test/{i}"), t0);
    }
    offer(&mut f, "http://b.test/", t0);
    for _ in 0..3 {
        let (slot, request) = take_page(&mut f, t0);
        if request.url.host_str() == Some("b.test") {
            f.request_done(slot, t0, ok(1));
            let (slot, _) = take_page(&mut f, t0);
            f.request_done(slot, t0, failed());
        } else {
            f.request_done(slot, t0, failed());
        }
    }
    assert!(f.is_abandoned(0));
    let skipped = f.take_skipped();
    assert_eq!(skipped.len(), 2, "the two URLs never tried");
    assert_eq!(
        offer(&mut f, "http://a.test/new", t0),
        Disposition::Skipped,
        "later URLs are skipped too"
    );
    assert_eq!(f.take_skipped().len(), 1);
    assert!(f.next_start(t0).is_none());
    assert!(f.is_idle());
}

#[test]
fn a_success_resets_the_failure_run() {
    let t0 = Instant::now();
    let mut f = frontier(1, None, false);
    for i in 0..6 {
        offer(&mut f, &format!("http://a.test/{i}"), t0);
    }
    for report in [failed(), failed(), ok(1), failed(), failed()] {
        let (slot, _) = take_page(&mut f, t0);
        f.request_done(slot, t0, report);
    }
    assert!(!f.is_abandoned(0));
}

#[test]
fn a_queued_url_found_closer_to_a_seed_takes_the_smaller_depth() {
    let now = Instant::now();
    let mut f = frontier(1, None, false);
    offer(&mut f, "http://a.test/first", now);
    assert_eq!(
        offer_at(&mut f, "http://a.test/x", 3, now),
        Disposition::Queued
    );
    assert_eq!(
        offer_at(&mut f, "http://a.test/x", 1, now),
        Disposition::Duplicate
    );
    assert_eq!(
        offer_at(&mut f, "http://a.test/x", 2, now),
        Disposition::Duplicate
    );
    let (slot, _) = take_page(&mut f, now);
    f.request_done(slot, now, ok(1));
    let (_, request) = take_page(&mut f, now);
    assert_eq!(
        (request.url.as_str(), request.depth),
        ("http://a.test/x", 1)
    );
}

#[test]
fn links_from_deeper_pages_wait_for_shallower_jobs_of_the_authority() {
    let now = Instant::now();
    let mut f = frontier(2, None, false);
    let at = |path: &str, depth| {
        let url = Url::parse(&format!("http://a.test{path}")).unwrap();
        let mut request = Request::seed(url.clone());
        request.depth = depth;
        Discovered {
            key: url_key(&url),
            request,
        }
    };
    // A depth-1 page and a depth-2 page in flight; the deeper one finishes first.
    offer_at(&mut f, "http://a.test/slow", 1, now);
    offer_at(&mut f, "http://a.test/deep", 2, now);
    let (slot, _) = take_page(&mut f, now);
    let (_, deep) = take_page(&mut f, now);
    f.request_done(slot, now, ok(1));
    assert!(f.offer_batch(slot, 2, vec![at("/x", 3)], Some(7)));
    f.job_finished(slot, deep.depth);
    store_admits_all(&mut f, now);
    assert_eq!(f.pending(), 1, "held while /slow (depth 1) is outstanding");
    assert!(f.next_start(now).is_none());
    // /slow finishes and links to /x at depth 2: /x is admitted at depth 2.
    f.request_done(slot, now, ok(1));
    assert!(!f.offer_batch(slot, 1, vec![at("/x", 2)], Some(8)));
    f.job_finished(slot, 1);
    assert_eq!(
        f.take_released(),
        [7],
        "the held page is told when its links go"
    );
    store_admits_all(&mut f, now);
    let (_, x) = take_page(&mut f, now);
    assert_eq!((x.url.path(), x.depth), ("/x", 2));
    assert!(
        f.next_start(now).is_none(),
        "the held duplicate was dropped"
    );
}

#[test]
fn urls_past_the_memory_limit_wait_in_the_store() {
    let now = Instant::now();
    let mut f = Frontier::new(
        FrontierLimits {
            max_queued: 2,
            ..limits(1, None, false)
        },
        politeness(100),
        1,
    );
    for i in 0..5 {
        let url = Url::parse(&format!("http://a.test/{i}")).unwrap();
        f.triage(
            Discovered {
                key: url_key(&url),
                request: Request::seed(url),
            },
            None,
        );
    }
    let out = f.take_outbox();
    let kept: Vec<bool> = out.iter().map(|o| o.loaded).collect();
    assert_eq!(kept, [true, true, false, false, false]);
    let mut spilled = Vec::new();
    for o in out {
        if !o.loaded {
            spilled.push((o.key, o.request.clone()));
        }
        f.admitted(o.slot, o.key, o.request, true, o.loaded, now);
    }
    assert_eq!(f.pending(), 5);
    assert!(f.take_loads().is_empty(), "no room in memory yet");
    let (slot, _) = take_page(&mut f, now);
    f.request_done(slot, now, ok(1));
    let loads = f.take_loads();
    assert_eq!(loads.len(), 1);
    assert_eq!(loads[0].2, 1, "room for one");
    f.loaded(slot, spilled.drain(..1).collect(), true, now);
    assert_eq!(f.pending(), 4);
    assert!(!f.is_idle());
}

#[test]
fn a_record_not_yet_durable_keeps_its_place_among_per_host() {
    // The kill -9 bound: a request's place is free only once its record is
    // durable, so at most per_host requests of an authority can be lost.
    let now = Instant::now();
    let mut f = frontier(1, None, false);
    offer(&mut f, "http://a.test/1", now);
    offer(&mut f, "http://a.test/2", now);
    let (slot, request) = take_page(&mut f, now);
    f.request_done(slot, now, ok(1));
    f.record_pending(slot);
    f.job_finished(slot, request.depth);
    assert!(
        f.next_start(now).is_none(),
        "the record of /1 is not durable"
    );
    f.record_durable(slot, now);
    let (_, next) = take_page(&mut f, now);
    assert_eq!(next.url.path(), "/2");
}

#[test]
fn places_all_taken_by_waiting_pages_release_their_links() {
    let now = Instant::now();
    let mut f = frontier(1, None, false);
    let link = |path: &str| {
        let url = Url::parse(&format!("http://a.test{path}")).unwrap();
        let mut request = Request::seed(url.clone());
        request.depth = 2;
        Discovered {
            key: url_key(&url),
            request,
        }
    };
    // A depth-1 page in flight; a depth-0 request admitted after it started.
    offer_at(&mut f, "http://a.test/deep", 1, now);
    let (slot, deep) = take_page(&mut f, now);
    offer_at(&mut f, "http://a.test/", 0, now);
    f.request_done(slot, now, ok(1));
    assert!(f.offer_batch(slot, 1, vec![link("/x")], Some(3)));
    // Its record waits for its links, its links for "/", "/" for its place.
    f.record_pending(slot);
    f.job_finished(slot, deep.depth);
    assert_eq!(
        f.take_released(),
        [3],
        "the links go rather than wait forever"
    );
    f.record_durable(slot, now);
    let (_, root) = take_page(&mut f, now);
    assert_eq!(root.url.path(), "/");
}

/// A frontier holding shard 0 of 2; `mine` and `theirs` are hosts of
/// shard 0 and shard 1.
fn sharded() -> (Frontier, String, String) {
    let mut f = frontier(1, None, false);
    f.set_partition(crawlkeeper_model::Partition::new(2, vec![0]).unwrap());
    let host = |shard| {
        (0..)
            .map(|i| format!("h{i}.test"))
            .find(|h| crawlkeeper_model::shard_of(h, 2) == shard)
            .unwrap()
    };
    (f, host(0), host(1))
}

#[test]
fn another_shards_urls_go_to_the_store_and_are_never_started() {
    let now = Instant::now();
    let (mut f, mine, theirs) = sharded();
    offer(&mut f, &format!("http://{theirs}/"), now);
    assert!(
        f.next_start(now).is_none(),
        "another shard's URL is not fetched here"
    );
    assert!(f.is_idle(), "nothing of it is waited for");
    assert!(f.take_loads().is_empty(), "nor loaded");
    offer(&mut f, &format!("http://{mine}/"), now);
    let (_, request) = take_page(&mut f, now);
    assert_eq!(request.url.host_str(), Some(mine.as_str()));
}

#[test]
fn a_shorter_path_to_another_shards_url_is_offered_again() {
    let now = Instant::now();
    let (mut f, _, theirs) = sharded();
    let url = format!("http://{theirs}/x");
    assert_eq!(offer_at(&mut f, &url, 3, now), Disposition::Queued);
    assert_eq!(offer_at(&mut f, &url, 3, now), Disposition::Duplicate);
    assert_eq!(offer_at(&mut f, &url, 4, now), Disposition::Duplicate);
    assert_eq!(
        offer_at(&mut f, &url, 1, now),
        Disposition::Queued,
        "the store may lower it"
    );
}

#[test]
fn news_during_a_load_asks_the_store_again() {
    let now = Instant::now();
    let (mut f, mine, _) = sharded();
    let authority = Authority::try_from(format!("http://{mine}")).unwrap();
    f.news(authority.clone(), 5);
    let loads = f.take_loads();
    assert_eq!(loads.len(), 1);
    let slot = loads[0].0;
    // More arrive for it while the load is under way, after the load read.
    f.news(authority, 7);
    f.loaded(slot, Vec::new(), false, now);
    assert_eq!(f.take_loads().len(), 1, "the load is asked again");
}
