//! The bad-input corpus (docs/hostile-input.md): each hostile answer a
//! server can give, served byte for byte by `testsite::hostile` on
//! loopback, and what the crawler must make of it: a record (a page or an
//! error), never a panic, a stall or unbounded memory. Test names here
//! are the ones the table cites.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_model::{CrawlRecord, ErrorKind};
use crawlkeeper_testsite::hostile::{HostileServer, Script, Step, bomb};

use crate::common::*;

const HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// One hostile answer and what its record must show.
struct Case {
    path: &'static str,
    script: Script,
    expect: Expect,
}

enum Expect {
    /// A response with this status and no error.
    Page(u16),
    /// A record with this error kind (and status, if one arrived).
    Error(ErrorKind, Option<u16>),
    /// Any error kind, no status: the server never said anything usable.
    NoResponse,
}

fn case(path: &'static str, script: Script, expect: Expect) -> Case {
    Case {
        path,
        script,
        expect,
    }
}

fn html() -> [(&'static str, &'static str); 1] {
    [("Content-Type", "text/html")]
}

fn cases() -> Vec<Case> {
    use Expect::*;
    let mut binary = Vec::with_capacity(1 << 20);
    let mut x: u32 = 7;
    for _ in 0..(1 << 20) {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        binary.push((x >> 16) as u8);
    }
    let mut bad_utf8 =
        b"<html><title>caf\xe9 \xff\xfe</title><a href=\"/p\xff\xfeq\">x</a>".to_vec();
    bad_utf8.extend_from_slice(b"<a href=\"/ok\">ok</a>");
    let huge_headers: Vec<(String, String)> = (0..2000)
        .map(|i| (format!("X-Filler-{i}"), "v".repeat(500)))
        .collect();
    let huge_headers: Vec<(&str, &str)> = huge_headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let long_url = format!("/{}", "a".repeat(100 * 1024));
    vec![
        case(
            "/gzip-bomb",
            Script::response(
                200,
                &[("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
                bomb("gzip", 16 << 20),
            ),
            Error(ErrorKind::TooLarge, Some(200)),
        ),
        case(
            "/deflate-bomb",
            Script::response(
                200,
                &[
                    ("Content-Type", "text/html"),
                    ("Content-Encoding", "deflate"),
                ],
                bomb("deflate", 16 << 20),
            ),
            Error(ErrorKind::TooLarge, Some(200)),
        ),
        case(
            "/brotli-bomb",
            Script::response(
                200,
                &[("Content-Type", "text/html"), ("Content-Encoding", "br")],
                bomb("br", 16 << 20),
            ),
            Error(ErrorKind::TooLarge, Some(200)),
        ),
        case(
            "/bad-gzip",
            Script::response(
                200,
                &[("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
                b"\x1f\x8b\x08\x00garbage that is not deflate".to_vec(),
            ),
            Error(ErrorKind::Body, None),
        ),
        case(
            "/unknown-encoding",
            Script::response(
                200,
                &[
                    ("Content-Type", "text/html"),
                    ("Content-Encoding", "x-nonsense"),
                ],
                "<title>as is</title>",
            ),
            Page(200),
        ),
        case(
            "/trickle",
            Script::head_only(
                200,
                &[("Content-Type", "text/html"), ("Content-Length", "100000")],
            )
            .then(Step::Send(b"\r\n".to_vec()))
            .then(Step::Trickle(vec![b'x'; 100], Duration::from_secs(1))),
            Error(ErrorKind::Timeout, None),
        ),
        case(
            "/hang",
            Script::default().then(Step::Hang),
            Error(ErrorKind::Timeout, None),
        ),
        case(
            "/close-mid-body",
            Script::head_only(
                200,
                &[("Content-Type", "text/html"), ("Content-Length", "100000")],
            )
            .then(Step::Send(b"\r\n<title>cut".to_vec())),
            Error(ErrorKind::Body, None),
        ),
        case("/close-at-once", Script::default(), NoResponse),
        case(
            "/huge-headers",
            Script::response(200, &huge_headers, "<title>x</title>"),
            NoResponse,
        ),
        case(
            "/bad-status-line",
            Script::raw(b"HTTP/1.1 abc Nonsense\r\nContent-Length: 0\r\n\r\n".to_vec()),
            NoResponse,
        ),
        case(
            "/not-http",
            Script::raw(b"SSH-2.0-OpenSSH_9.6\r\n".to_vec()),
            NoResponse,
        ),
        case(
            "/status-999",
            Script::response(999, &html(), "<title>x</title>"),
            Page(999),
        ),
        case(
            "/two-lengths",
            Script::raw(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello".to_vec(),
            ),
            NoResponse,
        ),
        case(
            "/negative-length",
            Script::raw(b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello".to_vec()),
            NoResponse,
        ),
        case(
            "/binary-as-html",
            Script::response(200, &html(), binary),
            Page(200),
        ),
        case(
            "/invalid-utf8",
            Script::response(200, &html(), bad_utf8),
            Page(200),
        ),
        case(
            "/nul-bytes",
            Script::response(
                200,
                &html(),
                b"<a href=\"/o\0k\">\0\0\0</a><title>\0</title>".to_vec(),
            ),
            Page(200),
        ),
        case(
            "/utf16",
            Script::response(
                200,
                &[("Content-Type", "text/html; charset=utf-16")],
                b"\xff\xfe<\0a\0 \0h\0r\0e\0f\0=\0/\0x\0>\0".to_vec(),
            ),
            Page(200),
        ),
        case(
            "/unterminated-comment",
            Script::response(
                200,
                &html(),
                format!("<!--{}", "<a href=/x>".repeat(200_000)),
            ),
            Page(200),
        ),
        case(
            "/many-attributes",
            Script::response(
                200,
                &html(),
                format!("<a {} href=/y>", "data-x=1 ".repeat(100_000)),
            ),
            Page(200),
        ),
        case(
            "/huge-title",
            Script::response(
                200,
                &html(),
                format!("<title>{}</title>", "t".repeat(2 << 20)),
            ),
            Page(200),
        ),
        case(
            "/odd-schemes",
            Script::response(
                200,
                &html(),
                "<a href='javascript:alert(1)'>j</a><a href='data:text/html,x'>d</a>\
                <a href='mailto:a@b.test'>m</a><a href='file:///etc/passwd'>f</a><a href='ftp://127.0.0.1/x'>t</a>\
                <base href='javascript:void(0)/'><a href='rel'>r</a>",
            ),
            Page(200),
        ),
        case(
            "/long-link",
            Script::response(200, &html(), format!("<a href='{long_url}'>long</a>")),
            Page(200),
        ),
        case(
            "/to-file",
            Script::response(302, &[("Location", "file:///etc/passwd")], ""),
            Page(302),
        ),
        case(
            "/to-ftp",
            Script::response(301, &[("Location", "ftp://127.0.0.1/pub")], ""),
            Page(301),
        ),
        case(
            "/to-long-url",
            Script::response(302, &[("Location", long_url.as_str())], ""),
            Page(302),
        ),
        case(
            "/bad-location",
            Script::response(302, &[("Location", "http://[::1")], ""),
            Error(ErrorKind::BadRedirect, Some(302)),
        ),
        case(
            "/absurd-retry-after",
            Script::response(503, &[("Retry-After", "99999999999999999999999999")], ""),
            Page(503),
        ),
        case(
            "/absurd-refresh",
            Script::response(
                200,
                &html(),
                format!(
                    "<meta http-equiv=refresh content='{};url={}'>",
                    "9".repeat(100_000),
                    "/z".repeat(1000)
                ),
            ),
            Page(200),
        ),
    ]
}

fn config() -> CrawlConfig {
    let mut c = follow_config();
    c.scope.follow = false;
    c.scope.respect_robots = false;
    c.fetch.max_body_bytes = 4 << 20;
    c.fetch.request_timeout = Duration::from_secs(3);
    c.engine.per_host = 8;
    // Unoptimised test builds on a loaded machine parse slowly.
    c.engine.extract_timeout = Duration::from_secs(60);
    c
}

fn check(record: &CrawlRecord, expect: &Expect) -> Result<(), String> {
    let kind = error_kind(record);
    let ok = match expect {
        Expect::Page(status) => record.status == Some(*status) && kind.is_none(),
        Expect::Error(want, status) => kind == Some(*want) && record.status == *status,
        Expect::NoResponse => kind.is_some() && record.status.is_none(),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{record:?}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_response_is_recorded_in_bounded_time() {
    let cases = cases();
    let routes = cases.iter().map(|c| (c.path, c.script.clone())).collect();
    let server = HostileServer::start(HOST, routes).await.unwrap();
    let seeds: Vec<String> = cases.iter().map(|c| server.url(c.path)).collect();
    let started = Instant::now();
    let (_, records) = crawl(config(), &seeds).await;
    let mut wrong = Vec::new();
    for c in &cases {
        let url = server.url(c.path);
        let found: Vec<&CrawlRecord> = records.iter().filter(|r| r.url == url).collect();
        match found.as_slice() {
            [r] => {
                if let Err(e) = check(r, &c.expect) {
                    wrong.push(format!("{}: {e}", c.path));
                }
            }
            other => wrong.push(format!("{}: {} records", c.path, other.len())),
        }
    }
    assert!(
        wrong.is_empty(),
        "unexpected records:\n{}",
        wrong.join("\n")
    );
    assert_eq!(records.len(), cases.len(), "no record for anything else");
    let by = |path: &str| records.iter().find(|r| r.url == server.url(path)).unwrap();
    assert!(by("/huge-title").title.as_ref().unwrap().len() <= 4096);
    assert_eq!(
        by("/invalid-utf8").links,
        2,
        "links around invalid UTF-8 are kept"
    );
    assert_eq!(
        by("/odd-schemes").links,
        0,
        "no scheme but http(s) is a link"
    );
    assert_eq!(by("/long-link").links, 0, "a 100 KB URL is out of scope");
    let requested = server.requests();
    assert!(
        requested.iter().all(|t| t.len() < 4096),
        "a 100 KB URL was requested"
    );
    // The slowest cases end at the request timeout (3 s), in parallel.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// A crawl of `/` on a server whose robots.txt is `robots`, with `/private`
/// and `/x` linked from `/`.
async fn robots_case(robots: Script) -> (HostileServer, Vec<CrawlRecord>, Duration) {
    let server = HostileServer::start(
        HOST,
        vec![
            ("/robots.txt", robots),
            (
                "/",
                Script::html("<a href='/private/a'>p</a><a href='/x'>x</a>"),
            ),
            ("/private/a", Script::html("private")),
            ("/x", Script::html("x")),
        ],
    )
    .await
    .unwrap();
    let mut c = follow_config();
    c.politeness.max_crawl_delay = Duration::from_millis(100);
    c.engine.per_host = 1;
    let started = Instant::now();
    let (_, records) = crawl(c, &[server.url("/")]).await;
    (server, records, started.elapsed())
}

fn kind_of(server: &HostileServer, records: &[CrawlRecord], path: &str) -> Option<ErrorKind> {
    let url = server.url(path);
    error_kind(
        records
            .iter()
            .find(|r| r.url == url)
            .unwrap_or_else(|| panic!("no {url}")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_robots_txt_files_are_read_safely() {
    // Invalid UTF-8 around the rules: the rules still apply.
    let (s, r, _) = robots_case(Script::response(
        200,
        &[],
        b"\xff\xfe\x00junk\nUser-agent: *\nDisallow: /private\n\xc3\x28\n".to_vec(),
    ))
    .await;
    assert_eq!(kind_of(&s, &r, "/private/a"), Some(ErrorKind::RobotsDenied));
    assert_eq!(kind_of(&s, &r, "/x"), None);

    // 50 MB: the first 500 KiB are read (RFC 9309), the rest ignored.
    let mut big = b"User-agent: *\nDisallow: /private\n".to_vec();
    big.resize(50 << 20, b'#');
    let (s, r, took) = robots_case(Script::response(200, &[], big)).await;
    assert_eq!(kind_of(&s, &r, "/private/a"), Some(ErrorKind::RobotsDenied));
    assert!(took < Duration::from_secs(30), "{took:?}");

    // Negative and unreadable Crawl-delay: no delay, no error.
    for delay in ["-5", "NaN", "inf", "1e400", "99999999999999999999"] {
        let body = format!("User-agent: *\nCrawl-delay: {delay}\nDisallow: /private\n");
        let (s, r, took) = robots_case(Script::response(200, &[], body)).await;
        assert_eq!(kind_of(&s, &r, "/x"), None, "Crawl-delay {delay}");
        assert!(
            took < Duration::from_secs(10),
            "Crawl-delay {delay}: {took:?}"
        );
    }

    // Patterns built to make a matcher backtrack.
    let body = format!("User-agent: *\nDisallow: /{}b\n", "*a".repeat(200));
    let (s, r, took) = robots_case(Script::response(200, &[], body)).await;
    assert_eq!(kind_of(&s, &r, "/x"), None);
    assert!(took < Duration::from_secs(10), "{took:?}");

    // A redirect loop: past five hops robots.txt counts as missing.
    let (s, r, _) = robots_case(Script::response(301, &[("Location", "/robots.txt")], "")).await;
    assert_eq!(kind_of(&s, &r, "/private/a"), None);
    assert!(s.count("/robots.txt") <= 6, "{}", s.count("/robots.txt"));

    // A robots.txt that never answers: unreachable, so nothing is fetched.
    let (s, r, _) = robots_case(Script::default().then(Step::Hang)).await;
    assert_eq!(kind_of(&s, &r, "/"), Some(ErrorKind::RobotsUnavailable));
    assert_eq!(s.count("/"), 0);
}
