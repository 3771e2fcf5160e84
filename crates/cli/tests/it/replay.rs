//! `crawl --requisites --warc --cdx`, replayed: a crawl of the test site's
//! requisite pages (`/req/`: every kind of page requisite, some on a
//! second host standing for a CDN) archives what the pages need to render,
//! so that pywb (webrecorder's Wayback Machine), reading crawlkeeper's WARC
//! file and its CDXJ index as they are, replays the page in Chromium with
//! every image showing, every request answered from the archive and none
//! reaching the live site (stopped before the replay). The crawl's records
//! say each requisite came `"via":"embed"` from a `parent`, and the site's
//! log shows what two pages share fetched once. The same crawl, slowed
//! down, killed with `kill -9` among the requisites and run again, leaves
//! an archive with each exchange once that replays just as whole.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use crawlkeeper_model::Via;
use crawlkeeper_testsite::requisite::{IMAGES, PAGE, SECOND, SHARED, WIDTHS};
use crawlkeeper_testsite::{RequestLog, SiteConfig, TestSite};

use crate::common;

use common::pywb;
use common::signal;
use common::warc::{by_uri, check_files, check_pages, crawl, dir, records, run};

/// What the crawl needs besides its seed: page requisites, the WARC file
/// and its index.
const CRAWL: [&str; 4] = ["--requisites", "--warc", "out.warc.gz", "--cdx"];

/// The files under `/req/` the page needs besides images, and the host
/// (0: the page's, 1: the CDN) that serves each.
const OTHERS: [(&str, usize); 8] = [
    ("/req/site.css", 1),
    ("/req/theme.css", 1),
    ("/req/font.woff2", 1),
    ("/req/widths.js", 1),
    ("/req/module.js", 1),
    ("/req/block.css", 0),
    ("/req/sprite.svg", 0),
    ("/req/frame", 0),
];

/// The collection's name in pywb.
const COLLECTION: &str = "crawl";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_with_requisites_replays_in_pywb_with_every_image_from_the_archive() {
    let site = TestSite::start(SiteConfig::uniform(2, 3)).await.unwrap();
    let d = dir("replay");
    let seed = site.url(0, PAGE);
    let (code, err) = run(crawl(&d, &seed, &CRAWL)).await;
    assert_eq!(code, 0, "{err}");

    check_records(&d, &site);
    for (path, cdn) in SHARED {
        assert_eq!(site.log().count(usize::from(cdn), path), 1, "{path}");
    }
    check_replay(&d, site, &seed, "replay-requisites").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_killed_among_its_requisites_and_resumed_replays_whole() {
    // Slow answers, one request at a time per host (the default): the kill
    // comes with some requisites fetched and others not yet asked for.
    let mut config = SiteConfig::uniform(2, 3);
    for host in &mut config.hosts {
        host.delay = Duration::from_millis(150);
    }
    let site = TestSite::start(config).await.unwrap();
    let d = dir("replay-kill");
    let seed = site.url(0, PAGE);
    let all = requisites().count();
    let child = crawl(&d, &seed, &CRAWL).spawn().unwrap();
    until(site.log(), "some requisites requested", |log| {
        fetched(log).len() >= 4
    })
    .await;
    signal(&child, "-KILL");
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), None, "killed by a signal");
    let before = fetched(site.log()).len();
    assert!(
        (4..all).contains(&before),
        "killed with {before} of the {all} requisites requested"
    );

    // The same command again: the same state file, the same WARC file.
    let (code, err) = run(crawl(&d, &seed, &CRAWL)).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(fetched(site.log()).len(), all, "the rest fetched");
    let targets: Vec<(usize, String)> = site
        .log()
        .entries()
        .into_iter()
        .map(|e| (e.host, e.target))
        .collect();
    let mut seen = BTreeSet::new();
    let repeated: Vec<_> = targets.iter().filter(|t| !seen.insert(*t)).collect();
    eprintln!("killed with {before} of {all} requisites requested; asked again: {repeated:?}");
    // Only what was in flight at the kill, one request per host, is asked
    // for again.
    assert!(repeated.len() <= 2, "asked again: {repeated:?}");

    let pages = records(&d.join("out.jsonl"));
    let urls: BTreeSet<&str> = pages.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls.len(), pages.len(), "each URL once in the output");
    let warc = d.join("out.warc.gz");
    assert_eq!(common::warc::files(&warc).len(), 1, "one WARC file");
    let recs = check_files(&warc);
    // Each URL with a response has one response record (with its request
    // and metadata), and nothing else was archived.
    check_pages(&recs, &pages);
    let responses = by_uri(&recs, "response");
    for url in [seed.clone(), site.url(0, SECOND)]
        .into_iter()
        .chain(requisites().map(|(path, host)| site.url(host, &path)))
    {
        let n = responses.get(&url).map_or(0, Vec::len);
        assert_eq!(n, 1, "{url} has {n} response records");
    }
    check_records(&d, &site);
    check_replay(&d, site, &seed, "replay-resumed").await;
}

/// The requisites of the pages (every image and [`OTHERS`]): path and
/// host.
fn requisites() -> impl Iterator<Item = (String, usize)> {
    IMAGES
        .iter()
        .map(|&(name, _, cdn)| (format!("/req/{name}"), usize::from(cdn)))
        .chain(OTHERS.iter().map(|&(p, h)| (p.to_owned(), h)))
}

/// The requisites the site's log shows requested (host and path).
fn fetched(log: &RequestLog) -> BTreeSet<(usize, String)> {
    let all: BTreeSet<(usize, String)> = requisites().map(|(p, h)| (h, p)).collect();
    log.entries()
        .into_iter()
        .map(|e| (e.host, e.target))
        .filter(|k| all.contains(k))
        .collect()
}

/// Waits until `done` holds of `log`, checked at each request's arrival;
/// fails the test if it does not within [`common::ARRIVAL_DEADLINE`].
async fn until(log: &RequestLog, what: &str, done: impl Fn(&RequestLog) -> bool) {
    let wait = async {
        loop {
            let n = log.len();
            if done(log) {
                return;
            }
            log.wait_for(n + 1).await;
        }
    };
    tokio::time::timeout(common::ARRIVAL_DEADLINE, wait)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "not {what} within {:?}: {:?}",
                common::ARRIVAL_DEADLINE,
                log.entries()
                    .iter()
                    .map(|e| (e.host, &e.target))
                    .collect::<Vec<_>>()
            )
        });
}

/// With the live site stopped, pywb replays the crawl at `d` from its
/// WARC file and CDXJ index (checked against cdxj-indexer's first) in
/// Chromium: every image renders at its width, pywb answers every request
/// with 200, the page asks for every requisite a browser needs, and
/// nothing reaches the live site. A screenshot named `shot` is kept.
async fn check_replay(d: &Path, site: TestSite, seed: &str, shot: &str) {
    // The live site is gone before the replay: whatever reaches it fails.
    let log = site.log().clone();
    let served = log.len();
    drop(site);

    let (wayback, replay) = pywb::replay(d, COLLECTION, seed).await;

    let profile = d.join("chromium");
    let dom = common::browser::dom(&profile, &replay).await;
    let widths = widths(&dom).unwrap_or_else(|| {
        panic!(
            "the page's script wrote no widths (did it load?):\n{dom}\n{}",
            wayback.output()
        )
    });
    let wanted: BTreeMap<String, u32> = WIDTHS.iter().map(|&(n, w)| (n.to_owned(), w)).collect();
    assert_eq!(
        widths,
        wanted,
        "every image rendered from the archive, at its width\n{}",
        wayback.output()
    );

    // Every request the page made was answered from the archive.
    let requests = wayback.requests();
    let failed: Vec<_> = requests.iter().filter(|(_, s)| *s != 200).collect();
    assert!(
        failed.is_empty(),
        "pywb answered {failed:?}\n{}",
        wayback.output()
    );
    // small.png is only the fallback of a srcset and of a picture: a
    // crawler fetches it, a browser does not.
    let needed = requisites()
        .map(|(path, _)| path)
        .filter(|path| path != "/req/small.png");
    for path in needed {
        assert!(
            requests
                .iter()
                .any(|(t, _)| t.starts_with(&format!("/{COLLECTION}/")) && t.ends_with(&path)),
            "the replay asked pywb for {path}: {requests:#?}"
        );
    }
    assert_eq!(log.len(), served, "nothing reached the live site");

    let shot = common::browser::screenshot(&profile, &replay, shot).await;
    eprintln!("screenshot: {}", shot.display());
}

/// Every requisite has a record of its own, `"via":"embed"` from a page
/// (or stylesheet) of the crawl, and the second page has one.
fn check_records(d: &Path, site: &TestSite) {
    let recs = records(&d.join("out.jsonl"));
    let by_url: BTreeMap<&str, _> = recs.iter().map(|r| (r.url.as_str(), r)).collect();
    for (path, host) in requisites() {
        let url = site.url(host, &path);
        let r = by_url
            .get(url.as_str())
            .unwrap_or_else(|| panic!("no record of the requisite {url}"));
        assert_eq!(r.via, Some(Via::Embed), "{url}");
        assert_eq!(r.status, Some(200), "{url}");
        let parent = r.parent.as_deref().unwrap_or_else(|| panic!("{url}"));
        assert!(by_url.contains_key(parent), "{url}'s parent {parent}");
    }
    assert!(
        by_url.contains_key(site.url(0, SECOND).as_str()),
        "the second page"
    );
}

/// The `name=width` lines the page's module script wrote into
/// `<pre id="widths">`, once it wrote them all (`done` last).
fn widths(dom: &str) -> Option<BTreeMap<String, u32>> {
    let start = dom.find("<pre id=\"widths\">")? + "<pre id=\"widths\">".len();
    let text = &dom[start..start + dom[start..].find("</pre>")?];
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.pop() != Some("done") {
        return None;
    }
    lines
        .iter()
        .map(|l| {
            let (name, w) = l.split_once('=')?;
            Some((name.to_owned(), w.parse().ok()?))
        })
        .collect()
}
