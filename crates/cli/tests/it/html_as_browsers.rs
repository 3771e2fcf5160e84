//! HTML read as browsers read it (issue #51, items 8-11), end to end: a
//! page served on loopback, crawled by the binary, its record's title,
//! fields and text, and the links it followed.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};

use crawlkeeper_model::CrawlRecord;

use common::*;

const PAGE: &str = "<!DOCTYPE html><html><head>\
    <title>Caf&eacute; &mdash; &copy; 2026 &#0128;5 &amp &#97a</title></head><body>\
    <svg><title>Icon</title></svg>\
    <a href=\"/q?a=1&copy=2&amp;b=&eacute;\">q</a>\
    <noscript><a href=\"/ns\">no script</a></noscript>\
    <ul><li>1</li><li>2<li>3</ul>\
    <p id=x>x &AElig;<h2>y</h2>z\
    </body></html>";

const SVG_FIRST: &str = "<svg><title>Icon</title></svg><title>Page</title><p>text";

/// The records of a crawl of `html` (served at every path) with `extra`
/// options, following links one hop.
async fn crawl(html: &str, extra: &[&str]) -> (String, Vec<CrawlRecord>) {
    let addr = http::serve_page(html);
    static CRAWLS: AtomicUsize = AtomicUsize::new(0);
    let n = CRAWLS.fetch_add(1, Ordering::SeqCst);
    let d = fresh_dir("html-as-browsers", &n.to_string());
    let seed = format!("http://{addr}/page");
    let mut args = vec![
        "crawl",
        "--state",
        "state.db",
        "--out",
        "out.jsonl",
        "--follow",
        "--depth",
        "1",
    ];
    args.extend_from_slice(extra);
    args.push(&seed);
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap());
    (format!("http://{addr}"), recs)
}

fn urls(origin: &str, recs: &[CrawlRecord]) -> Vec<String> {
    let mut v: Vec<String> = recs
        .iter()
        .filter(|r| r.depth == 1)
        .map(|r| r.url.trim_start_matches(origin).to_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn titles_links_and_fields_are_what_a_browser_shows() {
    let (origin, recs) = crawl(
        PAGE,
        &[
            "--extract",
            "second=li:nth-child(2)",
            "--extract",
            "para=p#x::html",
            "--text",
        ],
    )
    .await;
    let seed = recs.iter().find(|r| r.depth == 0).expect("the seed");
    // Item 8: the whole table, numeric references as browsers read them,
    // legacy names without `;`.
    assert_eq!(
        seed.title.as_deref(),
        Some("Café — © 2026 €5 & aa"),
        "item 8 and 10: the first HTML title, decoded"
    );
    // In an href, `&copy=` is kept as written; `&eacute;` is decoded.
    assert_eq!(
        urls(&origin, &recs),
        ["/q?a=1&copy=2&b=%C3%A9"],
        "item 8 in links; item 11: no <noscript> link by default"
    );
    let fields = seed.fields.clone().expect("fields");
    // Item 9: unclosed <li> and <p> end where browsers end them.
    assert_eq!(fields["second"], "2");
    assert_eq!(fields["para"], "x &AElig;");
    let text = fields["text"].as_str().unwrap();
    assert!(text.contains("x Æ\ny\nz"), "{text:?}");
    assert!(!text.contains("Icon"), "{text:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_svg_title_is_not_the_page_s_title() {
    // Read by the scanner's path (no field asked) and by lol_html's.
    for extra in [&[][..], &["--text"][..]] {
        let (_, recs) = crawl(SVG_FIRST, extra).await;
        assert_eq!(recs[0].title.as_deref(), Some("Page"), "{extra:?}");
        let (_, recs) = crawl("<body><svg><title>Icon</title></svg><p>x", extra).await;
        assert_eq!(recs[0].title, None, "{extra:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noscript_links_are_followed_when_asked() {
    let (origin, recs) = crawl(PAGE, &["--noscript-links"]).await;
    assert_eq!(urls(&origin, &recs), ["/ns", "/q?a=1&copy=2&b=%C3%A9"]);
    let seed = recs.iter().find(|r| r.depth == 0).unwrap();
    assert!(seed.fields.is_none(), "the option asks for no field");
}
