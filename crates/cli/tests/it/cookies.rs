//! Cookies (issue #30), end to end on loopback: a cookie a site sets comes
//! back on its later requests and never goes to another host; a Netscape
//! cookie file seeds the jar; `--no-cookies` turns it off; ten thousand
//! `Set-Cookie` headers stay bounded; a bad file is refused before
//! anything is written, without repeating a cookie; cookie values never
//! reach the log.

use crate::common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::{crawl_in, fresh_dir, records};
use crawlkeeper_model::CrawlRecord;
use crawlkeeper_testsite::hostile::{HostileServer, Script};

const SECRET: &str = "S3ssion-91c";

/// The site (127.0.0.7) sets a session cookie on `/` and links to `/two`
/// and to the other host (127.0.0.8).
async fn sites(first: impl FnOnce(&str) -> Script) -> (HostileServer, HostileServer) {
    let other = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 8),
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            ("/", Script::html("<title>other</title>")),
        ],
    )
    .await
    .unwrap();
    let site = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 7),
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            ("/", first(&other.origin())),
            ("/two", Script::html("<title>two</title>")),
            ("/flood", flood(10_000, "")),
        ],
    )
    .await
    .unwrap();
    (site, other)
}

fn session_page(other: &str) -> Script {
    let cookie = format!("session={SECRET}; Path=/; HttpOnly");
    Script::response(
        200,
        &[("Content-Type", "text/html"), ("Set-Cookie", &cookie)],
        format!("<a href=/two>two</a><a href={other}/>other</a>"),
    )
}

async fn crawl(d: &std::path::Path, seed: &str, extra: &[&str]) -> Vec<CrawlRecord> {
    let mut args = vec!["--scope", "any"];
    args.extend_from_slice(extra);
    let mut c = crawl_in(d, seed, &args);
    c.env("RUST_LOG", "debug");
    let out = tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("the crawl ends in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains(SECRET), "a cookie in the log: {stderr}");
    records(&std::fs::read_to_string(d.join("out.jsonl")).unwrap())
}

/// The `Cookie` header of the request for `target`, if any.
fn cookie_of(server: &HostileServer, target: &str) -> Option<String> {
    let line = format!("GET {target} HTTP/1.1\r\n");
    let head = server
        .heads()
        .into_iter()
        .find(|h| h.starts_with(&line))
        .unwrap_or_else(|| panic!("{target} not requested: {:?}", server.requests()));
    head.lines()
        .find_map(|l| {
            l.strip_prefix("cookie: ")
                .or_else(|| l.strip_prefix("Cookie: "))
        })
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_a_site_sets_comes_back_to_that_site_only() {
    let (site, other) = sites(session_page).await;
    let d = fresh_dir("cookies", "set");
    let got = crawl(&d, &site.url("/"), &[]).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(cookie_of(&site, "/robots.txt"), None);
    assert_eq!(cookie_of(&site, "/"), None);
    assert_eq!(cookie_of(&site, "/two"), Some(format!("session={SECRET}")));
    assert_eq!(cookie_of(&other, "/"), None, "another host gets none");

    let off = fresh_dir("cookies", "off");
    let before = site.count("/two");
    crawl(&off, &site.url("/"), &["--no-cookies"]).await;
    assert_eq!(site.count("/two"), before + 1);
    let last = site
        .heads()
        .into_iter()
        .rev()
        .find(|h| h.starts_with("GET /two "))
        .unwrap();
    assert!(!last.to_ascii_lowercase().contains("cookie:"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_file_seeds_the_jar() {
    let (site, _other) = sites(|_| Script::html("<a href=/two>two</a>")).await;
    let d = fresh_dir("cookies", "file");
    let file = d.join("cookies.txt");
    std::fs::write(
        &file,
        format!(
            "# Netscape HTTP Cookie File\n\
             127.0.0.7\tFALSE\t/\tFALSE\t0\tconsent\tyes\n\
             #HttpOnly_127.0.0.7\tFALSE\t/two\tFALSE\t0\ttoken\t{SECRET}\n\
             127.0.0.7\tFALSE\t/\tFALSE\t1\tstale\tgone\n"
        ),
    )
    .unwrap();
    let got = crawl(&d, &site.url("/"), &["--cookies", file.to_str().unwrap()]).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(cookie_of(&site, "/robots.txt"), Some("consent=yes".into()));
    assert_eq!(cookie_of(&site, "/"), Some("consent=yes".into()));
    // Longer paths first; the expired line is left out.
    assert_eq!(
        cookie_of(&site, "/two"),
        Some(format!("token={SECRET}; consent=yes"))
    );
}

/// A response with `n` `Set-Cookie` headers of distinct cookies.
fn flood(n: usize, body: &str) -> Script {
    let mut head = String::from("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n");
    for i in 0..n {
        head.push_str(&format!("Set-Cookie: c{i}=v{i}; Path=/\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    Script::raw(head)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_of_set_cookie_headers_stay_bounded() {
    // 90 cookies on one response (the HTTP client reads at most 100
    // headers: 10,000 make the response an error of its own), the jar
    // keeps 50 of a domain; the flood is recorded as an error and the
    // crawl goes on.
    let (site, _other) = sites(|_| flood(90, "<a href=/flood>flood</a><a href=/two>two</a>")).await;
    let d = fresh_dir("cookies", "flood");
    let got = crawl(&d, &site.url("/"), &[]).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    let sent = cookie_of(&site, "/two").expect("some cookies kept");
    let n = sent.split("; ").count();
    assert!((1..=50).contains(&n), "{n} cookies sent back");
    let flooded = got.iter().find(|r| r.url.ends_with("/flood")).unwrap();
    assert!(flooded.error.is_some(), "{flooded:?}");
}

#[tokio::test]
async fn a_bad_cookie_file_is_refused_before_anything_is_written() {
    let d = fresh_dir("cookies", "bad");
    let file = d.join("cookies.txt");
    std::fs::write(
        &file,
        format!("127.0.0.7\tFALSE\t/\tFALSE\tsoon\tk\t{SECRET}\n"),
    )
    .unwrap();
    for args in [
        vec!["--cookies", file.to_str().unwrap()],
        vec!["--cookies", "/nonexistent/cookies.txt"],
        vec!["--cookies", file.to_str().unwrap(), "--no-cookies"],
    ] {
        let out = crawl_in(&d, "http://127.0.0.1:9/", &args)
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains(SECRET), "{stderr}");
        assert!(!d.join("out.jsonl").exists());
        assert!(!d.join("state.db").exists());
    }
    let out = crawl_in(
        &d,
        "http://127.0.0.1:9/",
        &["--cookies", file.to_str().unwrap()],
    )
    .output()
    .await
    .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}
