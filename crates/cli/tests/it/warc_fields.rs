//! A page's fields (`--extract`, issue #27) in its WARC `metadata` record,
//! read back with warcio: the live `--warc` output and `results --format
//! warc` carry the JSONL record's fields on one `fields` line, the cut
//! ones on `fieldsCut` lines, and a value holding CR/LF and a WARC header
//! cannot forge another line.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::site::PRODUCTS;
use crawlkeeper_testsite::{SiteConfig, TestSite};
use serde_json::Value;

use common::*;

const SPECS: [&str; 7] = [
    "name=h1.product-title",
    "price=.price::text",
    "images[]=img.gallery@src",
    "desc=div.desc::html",
    "evil=div.evil::html",
    "evil_text=div.evil",
    "big=div.big::html",
];

/// A page with a value made to break a `warc-fields` block, and one past
/// the 64 KiB cap of a value.
fn hostile_page() -> String {
    format!(
        "<!DOCTYPE html><html><head><title>evil</title></head><body>\
         <div class=\"evil\">x\r\nWARC-Type: x\r\n\r\nWARC-Type: y\u{7f}\u{85}</div>\
         <div class=\"big\">{}</div></body></html>",
        "b".repeat(70_000)
    )
}

/// The lines of every `metadata` record of the WARC file `path`, by target
/// URI, as warcio reads them.
fn metadata_lines(path: &Path) -> BTreeMap<String, Vec<Vec<String>>> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys\n\
             from warcio.archiveiterator import ArchiveIterator\n\
             out = []\n\
             with open(sys.argv[1], 'rb') as f:\n\
             \x20   for r in ArchiveIterator(f):\n\
             \x20       if r.rec_type == 'metadata':\n\
             \x20           body = r.content_stream().read().decode('utf-8')\n\
             \x20           out.append([r.rec_headers.get_header('WARC-Target-URI'),\n\
             \x20                       [l for l in body.split('\\r\\n') if l]])\n\
             print(json.dumps(out))",
        ])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "warcio reads {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Vec<(String, Vec<String>)> = serde_json::from_slice(&out.stdout).unwrap();
    let mut by_uri: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    for (uri, lines) in list {
        by_uri.entry(uri).or_default().push(lines);
    }
    by_uri
}

/// Every record's metadata in the WARC output at `path` has its fields.
fn check_fields(path: &Path, recs: &[CrawlRecord]) {
    // warcio checks every file, and counts the records our scanner sees.
    common::warc::check_files(path);
    let mut metadata = BTreeMap::new();
    for f in common::warc::files(path) {
        metadata.extend(metadata_lines(&f));
    }
    for rec in recs {
        let url = &rec.url;
        let found = metadata
            .get(url)
            .unwrap_or_else(|| panic!("{}: no metadata of {url}", path.display()));
        assert_eq!(found.len(), 1, "{url}");
        let lines = &found[0];
        assert!(
            lines.iter().all(|l| !l.to_lowercase().starts_with("warc-")),
            "{url}: no forged line: {lines:?}"
        );
        let fields: Vec<Value> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("fields: "))
            .map(|j| serde_json::from_str(j).unwrap_or_else(|e| panic!("{url}: {j}: {e}")))
            .collect();
        match &rec.fields {
            Some(f) => assert_eq!(fields, [serde_json::to_value(f).unwrap()], "{url}"),
            None => assert!(fields.is_empty(), "{url}: {lines:?}"),
        }
        let cut: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("fieldsCut: "))
            .collect();
        assert_eq!(cut, rec.fields_cut.clone().unwrap_or_default(), "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_records_carry_the_fields_live_and_exported() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let evil = http::serve_page(&hostile_page());
    let d = fresh_dir("warc-fields", "products");
    let mut args: Vec<String> = [
        "crawl",
        "--state",
        "state.db",
        "--out",
        "out.jsonl",
        "--warc",
        "live.warc.gz",
        "--store-bodies",
    ]
    .map(str::to_owned)
    .to_vec();
    for s in SPECS {
        args.extend(["--extract".to_owned(), s.to_owned()]);
    }
    for n in 1..=PRODUCTS {
        args.push(site.url(0, &format!("/product/{n}")));
    }
    args.push(site.url(0, "/missing"));
    let evil_url = format!("http://{evil}/evil");
    args.push(evil_url.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap());
    assert_eq!(recs.len(), PRODUCTS as usize + 2);

    // The test means something: products have their fields, the hostile
    // value holds CR/LF and a WARC header, a value was cut.
    let with_fields = recs.iter().filter(|r| r.fields.is_some()).count();
    assert_eq!(with_fields, PRODUCTS as usize + 1);
    let rec = recs.iter().find(|r| r.url == evil_url).unwrap();
    let fields = rec.fields.as_ref().unwrap();
    let value = fields["evil"].as_str().unwrap();
    assert!(value.contains("\r\nWARC-Type: x\r\n\r\n"), "{value:?}");
    assert!(
        value.contains('\u{7f}') && value.contains('\u{85}'),
        "{value:?}"
    );
    assert_eq!(rec.fields_cut, Some(vec!["big".to_owned()]));
    let product = recs.iter().find(|r| r.url.ends_with("/product/2")).unwrap();
    assert_eq!(
        product.fields.as_ref().unwrap()["price"],
        Value::from("29.99")
    );

    check_fields(&d.join("live.warc.gz"), &recs);

    // The stored records, exported, are the same.
    let r = run_in(
        &d,
        &[
            "results",
            "--state",
            "state.db",
            "--format",
            "warc",
            "--out",
            "export.warc.gz",
        ],
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    check_fields(&d.join("export.warc.gz"), &recs);
}
