//! `results --format csv [--fields …]` (issue #27), end to end: the test
//! site's product pages crawled with `--extract`, their fields back as a
//! table that Python's `csv` module reads; hostile values (commas, quotes,
//! line breaks, formulas) round-trip or are defused; refusals exit 2 with
//! one line and write nothing.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::site::{PRODUCTS, product};
use crawlkeeper_testsite::{SiteConfig, TestSite};
use serde_json::{Value, json};

use common::*;

/// A fresh directory of its own for one test.
fn dir(name: &str) -> PathBuf {
    let dir = temp_path(&format!("results-csv-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SPECS: [&str; 4] = [
    "name=h1.product-title",
    "price=.price::text",
    "images[]=img.gallery@src",
    "desc=div.desc::html",
];

/// `--extract SPEC` for each of `specs`.
fn extract_args(specs: &[&str]) -> Vec<String> {
    specs
        .iter()
        .flat_map(|s| ["--extract".to_owned(), (*s).to_owned()])
        .collect()
}

/// The rows of `csv`, as Python's `csv` module reads them.
fn parse_csv(csv: &str) -> Vec<Vec<String>> {
    static PARSED: AtomicUsize = AtomicUsize::new(0);
    let path = temp_path(&format!(
        "results-csv-parse-{}.csv",
        PARSED.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::write(&path, csv).unwrap();
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import csv, json, sys\n\
             with open(sys.argv[1], newline='', encoding='utf-8') as f:\n\
             \x20   print(json.dumps(list(csv.reader(f, strict=True))))",
        ])
        .arg(&path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python's csv module reads it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The rows of a table by their first cell (the URL), header apart.
fn by_url(rows: &[Vec<String>]) -> std::collections::BTreeMap<String, Vec<String>> {
    rows[1..]
        .iter()
        .map(|r| (r[0].clone(), r.clone()))
        .collect()
}

async fn results(d: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["results", "--state", "state.db"];
    args.extend_from_slice(extra);
    run_in(d, &args, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn product_fields_come_back_as_a_table() {
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let d = dir("products");
    let mut args: Vec<String> = ["crawl", "--state", "state.db", "--out", "out.jsonl"]
        .map(str::to_owned)
        .to_vec();
    args.extend(extract_args(&SPECS));
    for n in 1..=PRODUCTS {
        args.push(site.url(0, &format!("/product/{n}")));
    }
    args.push(site.url(0, "/missing"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap());
    assert_eq!(recs.len(), PRODUCTS as usize + 1);

    let r = results(
        &d,
        &["--format", "csv", "--fields", "name,price,images,desc"],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.ends_with("\r\n"), "lines end in CRLF");
    let rows = parse_csv(&r.stdout);
    assert_eq!(
        rows[0],
        ["url", "status", "name", "price", "images", "desc"]
    );
    assert_eq!(rows.len(), recs.len() + 1, "a row per record");
    let rows = by_url(&rows);
    for n in 1..=PRODUCTS {
        let p = product(n);
        let url = site.url(0, &format!("/product/{n}"));
        let images = json!([
            site.url(0, &p.images[0]),
            site.url(0, &format!("/product/{}", p.images[1]))
        ]);
        let row = &rows[&url];
        assert_eq!(row[1], "200", "{url}");
        assert_eq!(row[2], format!("Kettle & Cup No. {n}"), "{url}");
        assert_eq!(row[3], p.price, "{url}");
        // A list is compact JSON.
        assert_eq!(row[4], images.to_string(), "{url}");
        assert_eq!(serde_json::from_str::<Value>(&row[4]).unwrap(), images);
        // The description has a comma: quoted, and read back whole.
        assert!(p.desc_html.contains(','));
        assert_eq!(row[5], p.desc_html, "{url}");
    }
    let missing = &rows[&site.url(0, "/missing")];
    assert_eq!(missing[1..], ["404", "", "", "", ""]);

    // The same table to a file.
    let r = results(
        &d,
        &[
            "--format",
            "csv",
            "--fields",
            "name,price,images,desc",
            "--out",
            "t.csv",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let file = std::fs::read_to_string(d.join("t.csv")).unwrap();
    assert_eq!(parse_csv(&file).len(), recs.len() + 1);
    // An existing file is not replaced without --overwrite…
    std::fs::write(d.join("mine.csv"), "my own sheet\n").unwrap();
    let r = results(&d, &["--format", "csv", "--out", "mine.csv"]).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--overwrite"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(d.join("mine.csv")).unwrap(),
        "my own sheet\n"
    );
    // …and is with it.
    let r = results(&d, &["--format", "csv", "--out", "mine.csv", "--overwrite"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);

    // Without --fields: the core columns.
    let rows = parse_csv(&std::fs::read_to_string(d.join("mine.csv")).unwrap());
    assert_eq!(
        rows[0],
        [
            "url",
            "final_url",
            "status",
            "content_type",
            "bytes",
            "fetched_at",
            "title",
            "error_kind"
        ]
    );
    let rows = by_url(&rows);
    for rec in &recs {
        let row = &rows[&rec.url];
        assert_eq!(row[1], rec.final_url);
        assert_eq!(row[2], rec.status.unwrap().to_string());
        assert_eq!(row[3], rec.content_type.clone().unwrap_or_default());
        assert_eq!(row[4], rec.bytes.to_string());
        assert_eq!(row[5], rec.fetched_at);
        assert_eq!(row[6], rec.title.clone().unwrap_or_default());
        assert_eq!(row[7], "");
    }
    assert_eq!(rows[&site.url(0, "/product/2")][6], "Product 2");

    // --writer adds its three columns (a SQLite file: not known, empty).
    let r = results(&d, &["--format", "csv", "--fields", "price", "--writer"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = parse_csv(&r.stdout);
    assert_eq!(
        rows[0],
        [
            "url",
            "status",
            "price",
            "writer_holder",
            "writer_shard",
            "writer_generation"
        ]
    );
    assert!(rows[1..].iter().all(|r| r[3..] == ["", "", ""]), "{rows:?}");
}

/// A page whose values are made to break a CSV file or a spreadsheet.
const HOSTILE: &str = "<!DOCTYPE html><html><head>\
    <title>=HYPERLINK(\"http://127.0.0.1:1/\",\"click\")</title></head><body>\
    <h1>-2+3+cmd|' /C calc'!A0</h1>\
    <span class=\"at\">@SUM(A1:A9)</span>\
    <span class=\"plus\">+1</span>\
    <div class=\"q\">a, \"quoted\"\r\nnext line\nthird</div>\
    <p>plain</p><p>=1+1</p>\
    </body></html>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_values_round_trip_and_formulas_are_defused() {
    let addr = http::serve_page(HOSTILE);
    let d = dir("hostile");
    let seed = format!("http://{addr}/page");
    let mut args: Vec<String> = ["crawl", "--state", "state.db", "--out", "out.jsonl"]
        .map(str::to_owned)
        .to_vec();
    args.extend(extract_args(&[
        "formula=h1",
        "at=span.at",
        "plus=span.plus",
        "quoted=div.q::html",
        "paras[]=p",
    ]));
    args.push(seed.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run_in(&d, &args, None).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs: Vec<CrawlRecord> = records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap());
    let fields = recs[0].fields.clone().expect("fields");
    let quoted = fields["quoted"].as_str().unwrap().to_owned();
    assert!(
        quoted.contains(',') && quoted.contains('"') && quoted.contains('\n'),
        "{quoted:?}"
    );

    let r = results(
        &d,
        &[
            "--format",
            "csv",
            "--fields",
            "formula,at,plus,quoted,paras",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = parse_csv(&r.stdout);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let row = &rows[1];
    assert_eq!(row[0], seed);
    assert_eq!(row[2], format!("'{}", fields["formula"].as_str().unwrap()));
    assert!(row[2].starts_with("'-2+3"), "{row:?}");
    assert_eq!(row[3], "'@SUM(A1:A9)");
    assert_eq!(row[4], "'+1");
    // A comma, quotes and line breaks come back as they were.
    assert_eq!(row[5], quoted);
    // A list is JSON: it begins with `[`, nothing to defuse inside.
    assert_eq!(row[6], r#"["plain","=1+1"]"#);

    // The title, a core column, is defused too.
    let r = results(&d, &["--format", "csv"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = parse_csv(&r.stdout);
    assert_eq!(rows[1][6], "'=HYPERLINK(\"http://127.0.0.1:1/\",\"click\")");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_out_of_place_are_refused_before_anything_is_written() {
    for (extra, says) in [
        (
            &["--fields", "name"][..],
            "--fields names the columns of --format csv",
        ),
        (
            &["--format", "jsonl", "--fields", "name"][..],
            "--fields names the columns of --format csv",
        ),
        (
            &["--format", "warc", "--fields", "name"][..],
            "--fields names the columns of --format csv",
        ),
        (
            &["--format", "csv", "--fields", ""][..],
            "name at least one field",
        ),
        (
            &["--format", "csv", "--fields", "name,a b"][..],
            "'a b': a field name is",
        ),
        (
            &["--format", "csv", "--fields", "images[]"][..],
            "'images[]': a field name is",
        ),
        (
            &["--format", "csv", "--fields", "a,,b"][..],
            "'': a field name is",
        ),
        (
            &["--format", "csv", "--fields", "price,price"][..],
            "the field 'price' is named twice",
        ),
    ] {
        // No state file either: the arguments are refused before it is
        // looked for.
        let d = dir("refused");
        let mut args = vec!["results", "--state", "state.db", "--out", "out.csv"];
        args.extend_from_slice(extra);
        let r = run_in(&d, &args, None).await;
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "one line: {}", r.stderr);
        assert!(r.stderr.contains(says), "{extra:?}: {}", r.stderr);
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert!(left.is_empty(), "{extra:?}: nothing written: {left:?}");
    }
}
