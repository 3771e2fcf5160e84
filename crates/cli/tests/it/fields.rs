//! Fields by CSS selector (`--extract`, issue #27): the values of the test
//! site's product pages in the JSON Lines records and back from `results`;
//! a spec or selector that does not parse refused before anything is
//! written; other selectors, another job. Meta tags, JSON-LD and text
//! (`--extract-meta`, `--extract-jsonld`, `--text`): the known ones of every
//! product page, and their options refused when they make no sense.

use crate::common;

use std::path::PathBuf;

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::site::{PRODUCTS, product};
use crawlkeeper_testsite::{SiteConfig, TestSite};
use serde_json::{Value, json};

use common::*;

/// A fresh directory of its own for one test.
fn dir(name: &str) -> PathBuf {
    let dir = temp_path(&format!("fields-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SPECS: [&str; 5] = [
    "name=h1.product-title",
    "price=.price::text",
    "images[]=img.gallery@src",
    "canonical=link[rel=canonical]@href",
    "desc=div.desc::html",
];

fn extract_args() -> Vec<String> {
    SPECS
        .iter()
        .flat_map(|s| ["--extract".to_owned(), (*s).to_owned()])
        .collect()
}

/// What product page `n` of `site` must give.
fn expected(site: &TestSite, n: u32) -> Value {
    let p = product(n);
    json!({
        "name": format!("Kettle & Cup No. {n}"),
        "price": p.price,
        "images": [site.url(0, &p.images[0]), site.url(0, &format!("/product/{}", p.images[1]))],
        "canonical": site.url(0, &format!("/product/{n}")),
        "desc": p.desc_html,
    })
}

fn by_url<'a>(records: &'a [CrawlRecord], url: &str) -> &'a CrawlRecord {
    records
        .iter()
        .find(|r| r.url == url)
        .unwrap_or_else(|| panic!("no record of {url}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn product_fields_are_in_the_records_and_come_back_from_results() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("products");
    let mut args: Vec<String> = ["crawl", "--state", "state.db", "--out", "out.jsonl"]
        .map(str::to_owned)
        .to_vec();
    args.extend(extract_args());
    for n in 1..=PRODUCTS {
        args.push(site.url(0, &format!("/product/{n}")));
    }
    args.push(site.url(0, "/missing"));
    args.push(site.url(0, "/data.json"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let recs = records(&written);
    assert_eq!(recs.len(), PRODUCTS as usize + 2);
    for n in 1..=PRODUCTS {
        let rec = by_url(&recs, &site.url(0, &format!("/product/{n}")));
        let fields = serde_json::to_value(rec.fields.as_ref().expect("fields")).unwrap();
        assert_eq!(fields, expected(&site, n), "product {n}");
        assert_eq!(rec.fields_cut, None);
    }
    // Pages not extracted (a 404, JSON) have no fields.
    for path in ["/missing", "/data.json"] {
        let rec = by_url(&recs, &site.url(0, path));
        assert_eq!(rec.fields, None, "{path}");
    }
    // The store keeps the record as written: `results` gives the same.
    let back = run_in(&d, &["results", "--state", "state.db"], None).await;
    assert_eq!(back.code, 0, "{}", back.stderr);
    let mut stored: Vec<String> = back.stdout.lines().map(str::to_owned).collect();
    let mut lines: Vec<String> = written.lines().map(str::to_owned).collect();
    stored.sort();
    lines.sort();
    assert_eq!(stored, lines);
    assert!(
        back.stdout.contains("\"fields\":{\"canonical\""),
        "{}",
        back.stdout
    );

    // Without --extract, no record has the key.
    let plain = run_in(
        &d,
        &["crawl", "--no-state", &site.url(0, "/product/1")],
        None,
    )
    .await;
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(!plain.stdout.contains("\"fields\""), "{}", plain.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_selectors_make_another_job() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("identity");
    let seed = site.url(0, "/product/1");
    let mut names = Vec::new();
    for extra in [
        &[][..],
        &["--extract", "name=h1"],
        &["--extract", "name=h2"],
        &["--extract", "name=h2", "--text"],
        &["--extract-meta"],
    ] {
        let mut args = vec!["crawl", "--state", "state.db", "--quiet", &seed];
        args.extend_from_slice(extra);
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let jobs = run_in(&d, &["jobs", "--state", "state.db"], None).await;
    assert_eq!(jobs.code, 0, "{}", jobs.stderr);
    for line in jobs.stdout.lines().skip(1) {
        if let Some(name) = line.split_whitespace().next() {
            names.push(name.to_owned());
        }
    }
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 5, "five jobs: {}", jobs.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_that_does_not_parse_is_refused_before_anything_is_written() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let seed = site.url(0, "/product/1");
    for (spec, says) in [
        (
            "price=div[",
            "'price=div[': selector 'div[' does not parse: Unexpected end of selector",
        ),
        ("price=a:hover", "Unsupported pseudo-class"),
        ("h1.title", "expected NAME=SELECTOR"),
        ("a b=h1", "a field name is"),
        ("img=img@", "'@' must be followed by an attribute name"),
    ] {
        for command in ["crawl", "submit"] {
            let d = dir("refused");
            let mut args = vec![command, "--extract", spec];
            if command == "crawl" {
                args.extend(["--state", "state.db", "--out", "out.jsonl"]);
            } else {
                args.extend(["--store", "postgres://u@127.0.0.1:1/db"]);
            }
            args.push(&seed);
            let r = run_in(&d, &args, None).await;
            assert_eq!(r.code, 2, "{command} {spec}: {}", r.stderr);
            assert_eq!(r.stderr.trim().lines().count(), 1, "one line: {}", r.stderr);
            assert!(
                r.stderr.contains(says) && r.stderr.contains("--extract"),
                "{command} {spec}: {}",
                r.stderr
            );
            let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
            assert!(
                left.is_empty(),
                "{command} {spec}: nothing written: {left:?}"
            );
        }
    }
    assert!(
        site.log().targets(0).is_empty(),
        "no request was made: {:?}",
        site.log().targets(0)
    );
    // The same name twice is refused too, before the store is opened.
    let d = dir("twice");
    let r = run_in(
        &d,
        &[
            "crawl",
            "--state",
            "state.db",
            "--extract",
            "a=h1",
            "--extract",
            "a[]=h2",
            &seed,
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("the field 'a' is given twice"),
        "{}",
        r.stderr
    );
    assert!(std::fs::read_dir(&d).unwrap().next().is_none());
}

/// The meta tags, JSON-LD and text product page `n` of `site` must give.
fn expected_structured(site: &TestSite, n: u32) -> Value {
    let p = product(n);
    let jsonld: Value = serde_json::from_str(&p.jsonld).unwrap();
    json!({
        "name": format!("Kettle & Cup No. {n}"),
        "meta": {
            "lang": "en-GB",
            "canonical": site.url(0, &format!("/product/{n}")),
            "description": format!("A kettle & a cup, model {n}."),
            "keywords": "kettle, cup",
            "og:title": format!("Kettle & Cup No. {n}"),
            "og:type": "product",
            "og:image": p.images[0],
            "twitter:card": "summary",
        },
        "jsonld": [jsonld],
        "text": format!("Kettle & Cup No. {n}\n{n}9.99 {n}0.00\nBoils fast, model {n}."),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_jsonld_and_text_of_every_product_page_are_in_the_records() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("structured");
    let mut args: Vec<String> = [
        "crawl",
        "--state",
        "state.db",
        "--out",
        "out.jsonl",
        "--extract",
        "name=h1.product-title",
        "--extract-meta",
        "--extract-jsonld",
        "--text",
        "--max-text",
        "64KiB",
    ]
    .map(str::to_owned)
    .to_vec();
    for n in 1..=PRODUCTS {
        args.push(site.url(0, &format!("/product/{n}")));
    }
    args.push(site.url(0, "/data.json"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let recs = records(&written);
    for n in 1..=PRODUCTS {
        let rec = by_url(&recs, &site.url(0, &format!("/product/{n}")));
        let fields = serde_json::to_value(rec.fields.as_ref().expect("fields")).unwrap();
        assert_eq!(fields, expected_structured(&site, n), "product {n}");
        assert_eq!(fields["jsonld"][0]["name"], format!("Kettle & Cup No. {n}"));
        assert_eq!(fields["jsonld"][0]["offers"]["price"], product(n).price);
        let text = fields["text"].as_str().unwrap();
        for unseen in [
            product(n).hidden.as_str(),
            "color",
            "fake",
            "schema.org",
            "Product",
        ] {
            assert!(!text.contains(unseen), "{unseen} in {text:?}");
        }
        assert_eq!(rec.fields_cut, None);
    }
    assert_eq!(by_url(&recs, &site.url(0, "/data.json")).fields, None);

    // A cap smaller than the text cuts it, and says so.
    let cut = run_in(
        &d,
        &[
            "crawl",
            "--no-state",
            "--text",
            "--max-text",
            "10",
            &site.url(0, "/product/1"),
        ],
        None,
    )
    .await;
    assert_eq!(cut.code, 0, "{}", cut.stderr);
    let rec = &records(&cut.stdout)[0];
    let fields = serde_json::to_value(rec.fields.as_ref().expect("fields")).unwrap();
    assert_eq!(fields, json!({"text": "Kettle & C"}));
    assert_eq!(rec.fields_cut.as_deref(), Some(&["text".to_owned()][..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_extracts_that_make_no_sense_are_refused_before_anything_is_written() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let seed = site.url(0, "/product/1");
    for (flags, says) in [
        (
            &["--max-text", "64KiB"][..],
            "--max-text sets the cap of --text",
        ),
        (&["--text", "--max-text", "0"][..], "at least 1 byte"),
        (&["--text", "--max-text", "64KB"][..], "expected BYTES"),
        (
            &["--text", "--extract", "text=p"][..],
            "the field 'text' is --text's",
        ),
        (
            &["--extract-meta", "--extract", "meta=h1"][..],
            "the field 'meta' is --extract-meta's",
        ),
        (
            &["--extract-jsonld", "--extract", "jsonld[]=script"][..],
            "the field 'jsonld' is --extract-jsonld's",
        ),
    ] {
        for command in ["crawl", "submit"] {
            let d = dir("structured-refused");
            let mut args = vec![command];
            args.extend_from_slice(flags);
            if command == "crawl" {
                args.extend(["--state", "state.db", "--out", "out.jsonl"]);
            } else {
                args.extend([
                    "--zookeeper",
                    "127.0.0.1:1",
                    "--store",
                    "postgres://u@127.0.0.1:1/db",
                ]);
            }
            args.push(&seed);
            let r = run_in(&d, &args, None).await;
            assert_eq!(r.code, 2, "{command} {flags:?}: {}", r.stderr);
            assert_eq!(r.stderr.trim().lines().count(), 1, "one line: {}", r.stderr);
            assert!(r.stderr.contains(says), "{command} {flags:?}: {}", r.stderr);
            let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
            assert!(
                left.is_empty(),
                "{command} {flags:?}: nothing written: {left:?}"
            );
        }
    }
    assert!(
        site.log().targets(0).is_empty(),
        "no request was made: {:?}",
        site.log().targets(0)
    );
}
