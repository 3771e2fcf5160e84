//! The user's secrets stay the user's (#51), end to end on loopback:
//! WARC files and exports carry the options with every secret `***` and
//! never the cookie file; `Authorization` and `Cookie` given with
//! `--header` go only to the seeds' hosts (and `--header-host`'s), not to
//! a requisite's, a link's or a redirect's other host, nor to its
//! robots.txt; a seed's own password goes to its host only and is shown
//! nowhere.

use crate::common;

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use common::{command_in, crawl_in, crawl_to_end, fresh_dir, records, run_in};
use crawlkeeper_testsite::hostile::{HostileServer, Script};

const TOKEN: &str = "Bearer T0ken-5ecret-91";
const COOKIE: &str = "sid=C00kie-5ecret-72";
const PROXY_PW: &str = "Pr0xy-5ecret-33";
const SEED_PW: &str = "S33d-5ecret-48";
/// The cookie file's cookie for a site the crawl never touches.
const ELSEWHERE: &str = "Elsewh3re-5ecret-60";

/// The seed's site (127.0.0.31): a page needing an image and a frame on
/// the other host (127.0.0.32), linking to it, and redirecting to it.
async fn sites() -> (HostileServer, HostileServer) {
    let other = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 32),
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            ("/", Script::html("<title>other</title>")),
            (
                "/i.png",
                Script::response(200, &[("Content-Type", "image/png")], "png"),
            ),
            ("/f.html", Script::html("<title>frame</title>")),
            ("/moved", Script::html("<title>moved</title>")),
        ],
    )
    .await
    .unwrap();
    let o = other.origin();
    let site = HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 31),
        vec![
            ("/robots.txt", Script::response(404, &[], "")),
            (
                "/",
                Script::html(format!(
                    "<img src={o}/i.png><iframe src={o}/f.html></iframe>\
                     <a href={o}/>other</a><a href=/go>go</a><a href=/two>two</a>"
                )),
            ),
            ("/two", Script::html("<title>two</title>")),
            (
                "/go",
                Script::response(302, &[("Location", &format!("{o}/moved"))], ""),
            ),
        ],
    )
    .await
    .unwrap();
    (site, other)
}

/// The value of header `name` (any case) in request head `head`.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Crawls `seed` in `d` with `extra`; the crawl must succeed.
async fn crawl(d: &Path, seed: &str, extra: &[&str]) -> String {
    let mut args = vec!["--scope", "any", "--requisites", "--retries", "0"];
    args.extend_from_slice(extra);
    let mut c = crawl_in(d, seed, &args);
    c.env("RUST_LOG", "debug");
    crawl_to_end(d, c, Duration::from_secs(120)).await.1
}

/// Every byte of the gzipped WARC files at `path`, as text.
fn warc_text(path: &Path) -> String {
    let mut text = String::new();
    for f in common::warc::files(path) {
        let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(&f).unwrap());
        let mut bytes = Vec::new();
        d.read_to_end(&mut bytes).unwrap();
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    text
}

/// The `warcinfo` records of `text` (a whole WARC file's).
fn warcinfos(text: &str) -> Vec<&str> {
    text.split("WARC/1.1\r\n")
        .filter(|r| r.contains("WARC-Type: warcinfo"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_headers_go_to_the_seeds_hosts_only_unless_told() {
    for (name, extra) in [
        ("seeds-only", &[][..]),
        ("header-host", &["--header-host", "127.0.0.32"][..]),
        ("everywhere", &["--header-everywhere"][..]),
    ] {
        let (site, other) = sites().await;
        let d = fresh_dir("secrets", name);
        let auth = format!("Authorization: {TOKEN}");
        let cookie = format!("Cookie: {COOKIE}");
        let mut args = vec!["--header", &auth, "--header", &cookie];
        args.extend(["--header", "X-Trace: everywhere"]);
        args.extend_from_slice(extra);
        crawl(&d, &site.url("/"), &args).await;

        let mut to_other = other.requests();
        to_other.sort();
        assert_eq!(
            to_other,
            ["/", "/f.html", "/i.png", "/moved", "/robots.txt"],
            "{name}"
        );
        for head in site.heads() {
            assert_eq!(header(&head, "authorization"), Some(TOKEN), "{head}");
            assert_eq!(header(&head, "cookie"), Some(COOKIE), "{head}");
            assert_eq!(header(&head, "x-trace"), Some("everywhere"), "{head}");
        }
        let sent = name != "seeds-only";
        for head in other.heads() {
            assert_eq!(header(&head, "x-trace"), Some("everywhere"), "{head}");
            let (a, c) = (header(&head, "authorization"), header(&head, "cookie"));
            assert_eq!(a.is_some(), sent, "{name}: {head}");
            assert_eq!(c.is_some(), sent, "{name}: {head}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_s_password_goes_to_its_host_only_and_is_shown_nowhere() {
    let (site, other) = sites().await;
    let d = fresh_dir("secrets", "seed-password");
    let seed = site
        .url("/")
        .replace("http://", &format!("http://alice:{SEED_PW}@"));
    let stderr = crawl(&d, &seed, &[]).await;
    let basic = "Basic YWxpY2U6UzMzZC01ZWNyZXQtNDg="; // alice:S33d-5ecret-48
    for head in site.heads() {
        assert_eq!(header(&head, "authorization"), Some(basic), "{head}");
    }
    for head in other.heads() {
        assert_eq!(header(&head, "authorization"), None, "{head}");
    }
    let out = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let recs = records(&out);
    assert_eq!(recs.len(), 7, "{out}");
    assert!(recs.iter().any(|r| r.url == site.url("/")), "{out}");
    for (what, text) in [("the records", out.as_str()), ("the log", &stderr)] {
        assert!(!text.contains(SEED_PW), "the password in {what}: {text}");
        assert!(!text.contains("alice"), "the user in {what}: {text}");
    }
    // The same command again resumes the same job (its identity holds).
    let again = crawl(&d, &seed, &[]).await;
    assert!(!again.contains(SEED_PW), "{again}");
    for args in [
        &["jobs", "--state", "state.db"][..],
        &["results", "--state", "state.db"][..],
    ] {
        let mut c = command_in(&d, args);
        c.stdout(std::process::Stdio::piped());
        let o = c.output().await.unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.status.success(), "{args:?}: {text}");
        assert!(!text.contains(SEED_PW), "{args:?}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archives_carry_the_options_without_their_secrets() {
    let (site, _other) = sites().await;
    let d = fresh_dir("secrets", "warcinfo");
    let cookies = d.join("cookies.txt");
    std::fs::write(
        &cookies,
        format!(
            "# Netscape HTTP Cookie File\n\
             127.0.0.31\tFALSE\t/\tFALSE\t4102444800\tfile\tsent-to-the-site\n\
             .elsewhere.test\tTRUE\t/\tFALSE\t4102444800\tother\t{ELSEWHERE}\n"
        ),
    )
    .unwrap();
    let auth = format!("Authorization: {TOKEN}");
    // A proxy every host bypasses: its password is in the options only.
    let proxy = format!("http://crawler:{PROXY_PW}@127.0.0.1:9");
    let seed = site
        .url("/")
        .replace("http://", &format!("http://alice:{SEED_PW}@"));
    let extra = [
        "--header",
        &auth,
        "--cookies",
        cookies.to_str().unwrap(),
        "--proxy",
        &proxy,
        "--no-proxy",
        "*",
        "--store-bodies",
        "--warc",
        "live.warc.gz",
    ];
    crawl(&d, &seed, &extra).await;
    let export = ["results", "--state", "state.db", "--format", "warc"];
    let r = run_in(
        &d,
        &[&export[..], &["--out", "export.warc.gz"]].concat(),
        None,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);

    for file in ["live.warc.gz", "export.warc.gz"] {
        let text = warc_text(&d.join(file));
        let infos = warcinfos(&text);
        assert!(!infos.is_empty(), "{file}: {text}");
        for info in infos {
            assert!(info.contains("crawlkeeper-options"), "{info}");
            assert!(info.contains("authorization: ***"), "{info}");
            assert!(info.contains("crawler:***@127.0.0.1:9"), "{info}");
            for secret in [TOKEN, PROXY_PW, SEED_PW, ELSEWHERE, "sent-to-the-site"] {
                assert!(
                    !info.contains(secret),
                    "{secret} in {file}'s warcinfo: {info}"
                );
            }
        }
        // The request records keep what was sent to the site; what was
        // never sent is nowhere.
        assert!(text.contains(TOKEN), "{file}: the request records");
        for secret in [PROXY_PW, SEED_PW, ELSEWHERE] {
            assert!(!text.contains(secret), "{secret} in {file}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_header_options_are_refused_before_anything_is_written() {
    let d = fresh_dir("secrets", "refused");
    let auth = format!("Authorization: {TOKEN}");
    for (args, says) in [
        (
            vec!["--header", &auth, "--header-host", "h.test:80"],
            "is not a host",
        ),
        (
            vec!["--header", &auth, "--header-host", "a/b"],
            "is not a host",
        ),
        (vec!["--header-everywhere"], "give --header too"),
        (vec!["--max-requisites", "5"], "give --requisites too"),
    ] {
        let o = crawl_in(&d, "http://127.0.0.1:9/", &args)
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(!err.contains("T0ken"), "{err}");
        assert!(!d.join("state.db").exists() && !d.join("out.jsonl").exists());
    }
    let two = "http://u:1@127.0.0.1:9/ http://u:2@127.0.0.1:9/x";
    let mut c = command_in(&d, &["crawl", "--out", "out.jsonl", "--state", "state.db"]);
    c.args(two.split(' '));
    let o = c.output().await.unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("two different users or passwords for host 127.0.0.1"),
        "{err}"
    );
    assert!(!d.join("state.db").exists() && !d.join("out.jsonl").exists());
}
