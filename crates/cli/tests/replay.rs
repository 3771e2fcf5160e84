//! `crawl --requisites --warc --cdx`, replayed: a crawl of the test site's
//! requisite pages (`/req/`: every kind of page requisite, some on a
//! second host standing for a CDN) archives what the pages need to render,
//! so that pywb (webrecorder's Wayback Machine), reading crawlkeeper's WARC
//! file and its CDXJ index as they are, replays the page in Chromium with
//! every image showing, every request answered from the archive and none
//! reaching the live site (stopped before the replay). The crawl's records
//! say each requisite came `"via":"embed"` from a `parent`, and the site's
//! log shows what two pages share fetched once.

use std::collections::BTreeMap;

use crawlkeeper_model::Via;
use crawlkeeper_testsite::requisite::{IMAGES, PAGE, SECOND, SHARED, WIDTHS};
use crawlkeeper_testsite::{SiteConfig, TestSite};

mod common;

use common::pywb::{self, Wayback};
use common::warc::{crawl, dir, records, run};

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

    // The live site is gone before the replay: whatever reaches it fails.
    let log = site.log().clone();
    let served = log.len();
    drop(site);

    let warc = d.join("out.warc.gz");
    let cdxj = crawlkeeper_warc::cdxj::index_path(&warc);
    // The index is the one cdxj-indexer makes, the one pywb reads.
    common::warc::check_cdx(&warc);
    let root = d.join("pywb");
    pywb::collection(&root, COLLECTION, &warc, &cdxj);
    let wayback = Wayback::start(&root).await;
    let index = std::fs::read_to_string(&cdxj).unwrap();
    let at = pywb::timestamp(&index, &seed)
        .unwrap_or_else(|| panic!("{seed} is not in the index:\n{index}"));
    let replay = wayback.url(COLLECTION, &at, "", &seed);

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
    let needed = IMAGES
        .iter()
        .filter(|(name, _, _)| *name != "small.png")
        .map(|&(name, _, _)| format!("/req/{name}"))
        .chain(OTHERS.iter().map(|&(p, _)| p.to_owned()));
    for path in needed {
        assert!(
            requests
                .iter()
                .any(|(t, _)| t.starts_with(&format!("/{COLLECTION}/")) && t.ends_with(&path)),
            "the replay asked pywb for {path}: {requests:#?}"
        );
    }
    assert_eq!(log.len(), served, "nothing reached the live site");

    let shot = common::browser::screenshot(&profile, &replay, "replay-requisites").await;
    eprintln!("screenshot: {}", shot.display());
}

/// Every requisite has a record of its own, `"via":"embed"` from a page
/// (or stylesheet) of the crawl; what both pages need was fetched once.
fn check_records(d: &std::path::Path, site: &TestSite) {
    let recs = records(&d.join("out.jsonl"));
    let by_url: BTreeMap<&str, _> = recs.iter().map(|r| (r.url.as_str(), r)).collect();
    let needed = IMAGES
        .iter()
        .map(|&(name, _, cdn)| (format!("/req/{name}"), usize::from(cdn)))
        .chain(OTHERS.iter().map(|&(p, h)| (p.to_owned(), h)));
    for (path, host) in needed {
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
    for (path, cdn) in SHARED {
        assert_eq!(site.log().count(usize::from(cdn), path), 1, "{path}");
    }
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
