//! The jar's RFC 6265 rules, its caps, and the cookie file. No network: a
//! jar only sees URLs and header values.

use std::time::{Duration, UNIX_EPOCH};

use http::header::HeaderValue;
use url::Url;

use super::parse::parse_cookie_date;
use super::*;

/// 2027-01-15T08:00:00Z, the "now" of every test.
const NOW: i64 = 1_800_000_000;

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn set(jar: &CookieJar, at: &str, headers: &[&str]) {
    let values: Vec<HeaderValue> = headers
        .iter()
        .map(|h| HeaderValue::from_str(h).unwrap())
        .collect();
    jar.set_cookies_at(&mut values.iter(), &url(at), NOW);
}

fn get_at(jar: &CookieJar, at: &str, now: i64) -> Option<String> {
    jar.cookies_at(&url(at), now)
        .map(|v| v.to_str().unwrap().to_owned())
}

fn get(jar: &CookieJar, at: &str) -> Option<String> {
    get_at(jar, at, NOW)
}

#[test]
fn sends_back_what_was_set() {
    let jar = CookieJar::new();
    assert!(jar.is_empty());
    set(&jar, "http://a.test/", &["sid=1", "lang=en; Path=/"]);
    assert_eq!(jar.len(), 2);
    assert!(!jar.is_empty());
    assert_eq!(
        get(&jar, "http://a.test/page").as_deref(),
        Some("sid=1; lang=en")
    );
    assert_eq!(get(&jar, "http://b.test/"), None);
}

#[test]
fn host_only_cookie_is_not_sent_to_subdomains_or_parents() {
    let jar = CookieJar::new();
    set(&jar, "http://www.a.test/", &["h=1"]);
    assert_eq!(get(&jar, "http://www.a.test/").as_deref(), Some("h=1"));
    assert_eq!(get(&jar, "http://x.www.a.test/"), None);
    assert_eq!(get(&jar, "http://a.test/"), None);
    // Host matching is case-insensitive: `url` lower-cases hosts.
    assert_eq!(get(&jar, "http://WWW.A.TEST/").as_deref(), Some("h=1"));
}

#[test]
fn domain_cookie_is_sent_to_the_domain_and_its_subdomains() {
    let jar = CookieJar::new();
    set(&jar, "http://www.a.test/", &["d=1; Domain=.A.test"]);
    assert_eq!(get(&jar, "http://a.test/").as_deref(), Some("d=1"));
    assert_eq!(get(&jar, "http://www.a.test/").as_deref(), Some("d=1"));
    assert_eq!(get(&jar, "http://x.y.a.test/").as_deref(), Some("d=1"));
    assert_eq!(get(&jar, "http://aa.test/"), None);
    assert_eq!(get(&jar, "http://xa.test/"), None);
}

#[test]
fn domain_equal_to_the_host_is_a_domain_cookie() {
    let jar = CookieJar::new();
    set(&jar, "http://a.test/", &["d=1; Domain=a.test"]);
    assert_eq!(get(&jar, "http://sub.a.test/").as_deref(), Some("d=1"));
}

#[test]
fn foreign_domain_refused() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://www.a.test/",
        &[
            "x=1; Domain=b.test",
            "x=2; Domain=sub.www.a.test",
            "x=3; Domain=ww.a.test",
            "x=4; Domain=w.a.test",
        ],
    );
    assert!(jar.is_empty());
}

#[test]
fn public_suffix_domain_refused() {
    let jar = CookieJar::new();
    set(&jar, "http://www.example.com/", &["x=1; Domain=com"]);
    set(&jar, "http://www.example.co.uk/", &["x=1; Domain=co.uk"]);
    set(&jar, "http://a.test/", &["x=1; Domain=test"]);
    set(&jar, "https://me.github.io/", &["x=1; Domain=github.io"]);
    assert!(jar.is_empty(), "{jar:?}");
    // A registrable domain is fine.
    set(
        &jar,
        "http://www.example.co.uk/",
        &["ok=1; Domain=example.co.uk"],
    );
    assert_eq!(jar.len(), 1);
}

#[test]
fn public_suffix_naming_itself_is_host_only() {
    let jar = CookieJar::new();
    set(&jar, "https://github.io/", &["x=1; Domain=github.io"]);
    assert_eq!(jar.len(), 1);
    assert_eq!(get(&jar, "https://github.io/").as_deref(), Some("x=1"));
    assert_eq!(get(&jar, "https://me.github.io/"), None);
}

#[test]
fn ip_hosts_are_host_only() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://127.0.0.1:8080/",
        &["a=1", "b=2; Domain=127.0.0.1"],
    );
    set(
        &jar,
        "http://127.0.0.1/",
        &["c=3; Domain=0.0.1", "d=4; Domain=0.1"],
    );
    assert_eq!(jar.len(), 2);
    // Cookies ignore ports (RFC 6265 §8.5).
    assert_eq!(get(&jar, "http://127.0.0.1/").as_deref(), Some("a=1; b=2"));
    assert_eq!(get(&jar, "http://127.0.0.2/"), None);

    set(&jar, "http://[::1]/", &["v6=1"]);
    assert_eq!(get(&jar, "http://[::1]:9/x").as_deref(), Some("v6=1"));
    assert_eq!(get(&jar, "http://[::2]/"), None);
}

#[test]
fn path_matching() {
    let jar = CookieJar::new();
    set(&jar, "http://a.test/", &["p=1; Path=/docs"]);
    for yes in ["/docs", "/docs/", "/docs/x/y", "/docs?q=1"] {
        assert_eq!(
            get(&jar, &format!("http://a.test{yes}")).as_deref(),
            Some("p=1"),
            "{yes}"
        );
    }
    for no in ["/", "/doc", "/docsx", "/Docs", "/x/docs"] {
        assert_eq!(get(&jar, &format!("http://a.test{no}")), None, "{no}");
    }
    set(&jar, "http://b.test/", &["q=1; Path=/dir/"]);
    assert_eq!(get(&jar, "http://b.test/dir/a").as_deref(), Some("q=1"));
    assert_eq!(get(&jar, "http://b.test/dir"), None);
}

#[test]
fn default_path_is_the_directory_of_the_request() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/a/b/c.html",
        &["d=1", "e=1; Path=relative"],
    );
    assert_eq!(get(&jar, "http://a.test/a/b").as_deref(), Some("d=1; e=1"));
    assert_eq!(
        get(&jar, "http://a.test/a/b/x").as_deref(),
        Some("d=1; e=1")
    );
    assert_eq!(get(&jar, "http://a.test/a/"), None);
    assert_eq!(default_path(b"/"), b"/");
    assert_eq!(default_path(b"/x"), b"/");
    assert_eq!(default_path(b"/x/"), b"/x");
    assert_eq!(default_path(b""), b"/");
    assert_eq!(default_path(b"x/y"), b"/");
}

#[test]
fn secure_cookies_only_over_https() {
    let jar = CookieJar::new();
    set(&jar, "https://a.test/", &["s=1; Secure", "p=2"]);
    assert_eq!(get(&jar, "https://a.test/").as_deref(), Some("s=1; p=2"));
    assert_eq!(get(&jar, "http://a.test/").as_deref(), Some("p=2"));
}

#[test]
fn secure_cookie_from_plain_http_is_ignored() {
    let jar = CookieJar::new();
    set(&jar, "http://a.test/", &["s=1; Secure"]);
    assert!(jar.is_empty());
}

#[test]
fn max_age_zero_deletes() {
    let jar = CookieJar::new();
    set(&jar, "http://a.test/", &["a=1", "b=1"]);
    set(&jar, "http://a.test/", &["a=; Max-Age=0", "b=; Max-Age=-5"]);
    assert!(jar.is_empty());
    assert_eq!(get(&jar, "http://a.test/"), None);
}

#[test]
fn past_expires_deletes() {
    let jar = CookieJar::new();
    set(&jar, "http://a.test/", &["a=1"]);
    set(
        &jar,
        "http://a.test/",
        &["a=; Expires=Thu, 01 Jan 1970 00:00:00 GMT"],
    );
    assert!(jar.is_empty());
    // And a cookie born expired is not stored.
    set(
        &jar,
        "http://a.test/",
        &["b=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT"],
    );
    assert!(jar.is_empty());
}

#[test]
fn max_age_wins_over_expires() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/",
        &[
            "kept=1; Max-Age=100; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
            "gone=1; Expires=Fri, 01 Jan 2100 00:00:00 GMT; Max-Age=0",
        ],
    );
    assert_eq!(get(&jar, "http://a.test/").as_deref(), Some("kept=1"));
    // A hundred seconds later it is no longer sent.
    assert_eq!(
        get_at(&jar, "http://a.test/", NOW + 99).as_deref(),
        Some("kept=1")
    );
    assert_eq!(get_at(&jar, "http://a.test/", NOW + 100), None);
}

#[test]
fn unparsable_max_age_and_expires_are_ignored() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/",
        &[
            "a=1; Max-Age=1e3",
            "b=1; Max-Age=",
            "c=1; Expires=tomorrow",
            "d=1; Max-Age=+5",
        ],
    );
    // All four are session cookies.
    assert_eq!(
        get_at(&jar, "http://a.test/", i64::MAX).as_deref(),
        Some("a=1; b=1; c=1; d=1")
    );
}

#[test]
fn huge_max_age_saturates() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/",
        &["a=1; Max-Age=999999999999999999999999999999999999999"],
    );
    assert_eq!(
        get_at(&jar, "http://a.test/", i64::MAX - 1).as_deref(),
        Some("a=1")
    );
}

#[test]
fn cookie_dates() {
    // 2015-10-21T07:28:00Z
    let t = 1_445_412_480;
    assert_eq!(parse_cookie_date(b"Wed, 21 Oct 2015 07:28:00 GMT"), Some(t));
    assert_eq!(
        parse_cookie_date(b"Wednesday, 21-Oct-15 07:28:00 GMT"),
        Some(t)
    );
    assert_eq!(parse_cookie_date(b"Wed Oct 21 07:28:00 2015"), Some(t));
    assert_eq!(parse_cookie_date(b"21 october 2015 7:28:0"), Some(t));
    assert_eq!(parse_cookie_date(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(
        parse_cookie_date(b"Thu, 29 Feb 2024 00:00:00 GMT"),
        Some(1_709_164_800)
    );
    assert_eq!(
        parse_cookie_date(b"Mon, 01 Jan 1601 00:00:00 GMT"),
        Some(-11_644_473_600)
    );
    assert_eq!(
        parse_cookie_date(b"Fri, 31 Dec 9999 23:59:59 GMT"),
        Some(253_402_300_799)
    );
    for bad in [
        &b""[..],
        b"Wed, 21 Oct 2015",
        b"Wed, 30 Feb 2015 00:00:00 GMT",
        b"Wed, 29 Feb 2015 00:00:00 GMT",
        b"Wed, 32 Oct 2015 00:00:00 GMT",
        b"Wed, 21 Oct 1600 00:00:00 GMT",
        b"Wed, 21 Oct 2015 24:00:00 GMT",
        b"Wed, 21 Oct 2015 00:60:00 GMT",
        b"Wed, 21 Oct 2015 99:99:99 GMT",
        b"Wed, 21 Foo 2015 00:00:00 GMT",
        b"Wed, 21 Oct 20155 00:00:00 GMT",
        b"\xff\xfe\x00\x01",
    ] {
        assert_eq!(
            parse_cookie_date(bad),
            None,
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn malformed_set_cookie_is_ignored() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/",
        &["novalue", "=v", " \t=v", "", ";a=1"],
    );
    assert!(jar.is_empty());
}

#[test]
fn names_and_values_are_trimmed_and_kept_as_sent() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/",
        &[" n \t= \"quoted value\" ; path=/"],
    );
    assert_eq!(
        get(&jar, "http://a.test/").as_deref(),
        Some("n=\"quoted value\"")
    );
    // Bytes that are not UTF-8 survive the round trip.
    let raw = HeaderValue::from_bytes(b"bin=\xe9t\xe9").unwrap();
    jar.set_cookies_at(&mut [raw].iter(), &url("http://b.test/"), NOW);
    let sent = jar.cookies_at(&url("http://b.test/"), NOW).unwrap();
    assert_eq!(sent.as_bytes(), b"bin=\xe9t\xe9");
}

#[test]
fn replacing_keeps_creation_order_and_longer_paths_come_first() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://a.test/",
        &["first=1", "second=1", "deep=1; Path=/a/b", "mid=1; Path=/a"],
    );
    // Replacing `first` keeps its place: creation time is the original's.
    set(&jar, "http://a.test/", &["first=2"]);
    assert_eq!(jar.len(), 4);
    assert_eq!(
        get(&jar, "http://a.test/a/b/c").as_deref(),
        Some("deep=1; mid=1; first=2; second=1")
    );
}

#[test]
fn same_name_on_other_paths_or_domains_is_another_cookie() {
    let jar = CookieJar::new();
    set(
        &jar,
        "http://www.a.test/",
        &["n=host", "n=dom; Domain=a.test", "n=path; Path=/x"],
    );
    assert_eq!(jar.len(), 3);
    assert_eq!(
        get(&jar, "http://www.a.test/x").as_deref(),
        Some("n=path; n=host; n=dom")
    );
}

#[test]
fn ten_thousand_set_cookie_headers_cost_a_hundred() {
    let jar = CookieJar::new();
    let values: Vec<HeaderValue> = (0..10_000)
        .map(|i| HeaderValue::from_str(&format!("c{i}=v{i}")).unwrap())
        .collect();
    jar.set_cookies_at(&mut values.iter(), &url("http://a.test/"), NOW);
    // A hundred read, fifty kept (the domain cap), the newest ones.
    assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
    let sent = get(&jar, "http://a.test/").unwrap();
    assert!(sent.contains("c99=v99"));
    assert!(sent.contains("c50=v50"));
    assert!(!sent.contains("c49=v49"));
    assert!(!sent.contains("c100="));
    assert!(!sent.contains("c9999="));
}

#[test]
fn subdomains_share_their_registrable_domain_cap() {
    let jar = CookieJar::new();
    for i in 0..80 {
        set(&jar, &format!("http://h{i}.a.test/"), &["x=1"]);
    }
    assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
    set(&jar, "http://b.test/", &["x=1"]);
    assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN + 1);
}

#[test]
fn total_cap_evicts_least_recently_used() {
    let jar = CookieJar::new();
    let domains = MAX_COOKIES / MAX_COOKIES_PER_DOMAIN + 20;
    for d in 0..domains {
        let headers: Vec<String> = (0..MAX_COOKIES_PER_DOMAIN)
            .map(|i| format!("c{i}=1"))
            .collect();
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        set(&jar, &format!("http://d{d}.test/"), &headers);
        // d0 stays in use, so it is never the least recently used.
        assert!(get(&jar, "http://d0.test/").is_some());
    }
    assert_eq!(jar.len(), MAX_COOKIES);
    assert!(get(&jar, "http://d1.test/").is_none());
    assert!(get(&jar, &format!("http://d{}.test/", domains - 1)).is_some());
    let d0 = get(&jar, "http://d0.test/").unwrap();
    assert_eq!(d0.split("; ").count(), MAX_COOKIES_PER_DOMAIN);
}

#[test]
fn domain_cap_evicts_expired_then_least_recently_used() {
    let jar = CookieJar::new();
    // `kept` is on its own host, so sending it leaves the others unused.
    set(&jar, "http://x.a.test/", &["kept=1"]);
    set(&jar, "http://x.a.test/", &["short=1; Max-Age=10"]);
    let rest: Vec<String> = (0..MAX_COOKIES_PER_DOMAIN - 2)
        .map(|i| format!("c{i}=1"))
        .collect();
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    set(&jar, "http://y.a.test/", &rest);
    assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
    assert!(get(&jar, "http://x.a.test/").is_some());

    // Later: `short` has expired and goes first, not c0, the least
    // recently used (`kept` was sent after c0 was set).
    let n1 = [HeaderValue::from_static("n1=1")];
    jar.set_cookies_at(&mut n1.iter(), &url("http://y.a.test/"), NOW + 20);
    assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
    let names = stored_names(&jar, "a.test");
    assert!(!names.contains(&"short".to_owned()), "{names:?}");
    assert!(names.contains(&"c0".to_owned()), "{names:?}");

    // Full of live cookies: the next one evicts the least recently used.
    let n2 = [HeaderValue::from_static("n2=1")];
    jar.set_cookies_at(&mut n2.iter(), &url("http://z.a.test/"), NOW + 20);
    assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN);
    let names = stored_names(&jar, "a.test");
    assert!(!names.contains(&"c0".to_owned()), "{names:?}");
    for kept in ["c1", "kept", "n1", "n2"] {
        assert!(names.contains(&kept.to_owned()), "{kept}: {names:?}");
    }
}

/// The names in one domain's group, read without marking them used.
fn stored_names(jar: &CookieJar, group: &str) -> Vec<String> {
    jar.lock()
        .groups
        .get(group)
        .map(|cookies| {
            cookies
                .iter()
                .map(|c| String::from_utf8_lossy(&c.name).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn per_cookie_size_cap() {
    let jar = CookieJar::new();
    let big = format!("big={}", "v".repeat(MAX_COOKIE_BYTES));
    let fits = format!("fits={}", "v".repeat(MAX_COOKIE_BYTES - 5));
    set(&jar, "http://a.test/", &[&big, &fits]);
    assert_eq!(jar.len(), 1);
    assert!(get(&jar, "http://a.test/").unwrap().starts_with("fits="));
    // Attributes count too.
    let padded = format!("p=1; Path=/{}", "x".repeat(MAX_COOKIE_BYTES));
    set(&jar, "http://b.test/", &[&padded]);
    assert_eq!(jar.len(), 1);
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = fastrand::Rng::with_seed(30);
    let jar = CookieJar::new();
    let alphabet: &[u8] = b"=; \t,.-/:aZ09\x80\xff\"Expires Max-Age Domain Path Secure";
    for round in 0..3_000 {
        let len = rng.usize(0..120);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.bool() {
                    alphabet[rng.usize(..alphabet.len())]
                } else {
                    rng.u8(..)
                }
            })
            .collect();
        let _ = parse_cookie_date(&bytes);
        if let Ok(v) = HeaderValue::from_bytes(&bytes) {
            let host = [
                "http://a.test/x/y",
                "https://b.a.test/",
                "http://127.0.0.1/",
            ][round % 3];
            jar.set_cookies_at(&mut [v].iter(), &url(host), NOW);
            let _ = jar.cookies_at(&url(host), NOW);
        }
    }
    for attrs in [
        "a=1; Max-Age=-99999999999999999999999",
        "a=1; Expires=Fri, 31 Dec 99999 23:59:59 GMT",
        "a=1; Domain=.",
        "a=1; Domain=..",
        "a=1; Domain=",
        "a=1; Path=",
        "a=1;;;;;;",
        "a=1; Expires=1:1:1 1 jan 1601",
    ] {
        set(&jar, "http://a.test/", &[attrs]);
    }
    assert!(jar.len() <= MAX_COOKIES);
}

#[test]
fn debug_prints_counts_only() {
    let jar = CookieJar::new();
    set(&jar, "http://a.test/", &["secretname=secretvalue"]);
    let shown = format!("{jar:?} {jar:#?}");
    assert!(!shown.contains("secret"), "{shown}");
    assert!(shown.contains("cookies: 1"), "{shown}");
}

#[test]
fn debug_does_not_wait_for_the_lock() {
    let jar = CookieJar::new();
    let _held = jar.lock();
    assert!(format!("{jar:?}").contains("in use"));
}

// ---- the Netscape cookie file ----

const FILE: &str = "# Netscape HTTP Cookie File\n\
# https://curl.se/docs/http-cookies.html\n\
\n\
.a.test\tTRUE\t/\tFALSE\t0\tdom\td1\r\n\
www.b.test\tFALSE\t/app\tTRUE\t2000000000\tsec\ts1\n\
#HttpOnly_c.test\tFALSE\t/\tFALSE\t0\thttponly\th1\n\
d.test\tFALSE\t/\tFALSE\t1000\told\texpired\n\
e.test\tFALSE\t/\tFALSE\t0\tempty\n";

#[test]
fn netscape_file_parses() {
    let cookies = netscape::load_netscape_at(FILE, NOW).unwrap();
    assert_eq!(cookies.len(), 4, "{cookies:?}");
    let dom = &cookies[0];
    assert_eq!(
        (
            dom.line,
            dom.domain.as_str(),
            dom.include_subdomains,
            dom.path.as_str()
        ),
        (4, "a.test", true, "/")
    );
    assert_eq!(
        (dom.name.as_str(), dom.value.as_str(), dom.expires),
        ("dom", "d1", None)
    );
    let sec = &cookies[1];
    assert!(sec.secure && !sec.include_subdomains && !sec.http_only);
    assert_eq!(
        sec.expires,
        Some(UNIX_EPOCH + Duration::from_secs(2_000_000_000))
    );
    let ho = &cookies[2];
    assert_eq!(
        (ho.domain.as_str(), ho.http_only, ho.line),
        ("c.test", true, 6)
    );
    // Six fields: an empty value.
    assert_eq!(
        (cookies[3].name.as_str(), cookies[3].value.as_str()),
        ("empty", "")
    );
}

#[test]
fn netscape_file_fills_a_jar() {
    let jar = CookieJar::from_netscape_at(FILE, NOW).unwrap();
    assert_eq!(jar.len(), 4);
    assert_eq!(get(&jar, "http://x.a.test/").as_deref(), Some("dom=d1"));
    assert_eq!(
        get(&jar, "https://www.b.test/app/x").as_deref(),
        Some("sec=s1")
    );
    assert_eq!(get(&jar, "http://www.b.test/app/x"), None);
    assert_eq!(get(&jar, "https://b.test/app/x"), None);
    assert_eq!(get(&jar, "http://c.test/").as_deref(), Some("httponly=h1"));
    assert_eq!(get(&jar, "http://x.c.test/"), None);
    assert_eq!(get(&jar, "http://d.test/"), None);
    assert_eq!(get(&jar, "http://e.test/").as_deref(), Some("empty="));
    // The public entry point reads the same file.
    assert_eq!(CookieJar::from_netscape(FILE).unwrap().len(), 4);
}

#[test]
fn netscape_later_line_replaces_earlier() {
    let text = "a.test\tFALSE\t/\tFALSE\t0\tn\tv1\na.test\tFALSE\t/\tFALSE\t0\tn\tv2\n";
    let cookies = netscape::load_netscape_at(text, NOW).unwrap();
    assert_eq!(cookies.len(), 1);
    assert_eq!((cookies[0].value.as_str(), cookies[0].line), ("v2", 2));
}

#[test]
fn netscape_malformed_lines_name_the_line_not_the_value() {
    let bad = [
        ("a.test FALSE / FALSE 0 n topsecret", "fewer than 7"),
        ("a.test\tFALSE\t/\tFALSE\t0", "fewer than 7"),
        (
            "a.test\tFALSE\t/\tFALSE\t0\tn\ttopsecret\textra",
            "more than 7",
        ),
        (
            "a.test\tYES\t/\tFALSE\t0\tn\ttopsecret",
            "include-subdomains",
        ),
        ("a.test\tFALSE\t/\tmaybe\t0\tn\ttopsecret", "secure"),
        ("a.test\tFALSE\t/\tFALSE\tsoon\tn\ttopsecret", "expiry"),
        ("a.test\tFALSE\t/\tFALSE\t-5\tn\ttopsecret", "expiry"),
        ("a.test\tFALSE\tapp\tFALSE\t0\tn\ttopsecret", "path"),
        ("\tFALSE\t/\tFALSE\t0\tn\ttopsecret", "domain"),
        ("ex ample.test\tFALSE\t/\tFALSE\t0\tn\ttopsecret", "domain"),
        ("bücher.test\tFALSE\t/\tFALSE\t0\tn\ttopsecret", "xn--"),
        ("a.test\tFALSE\t/\tFALSE\t0\t\ttopsecret", "name is empty"),
        ("a.test\tFALSE\t/\tFALSE\t0\tn=m\ttopsecret", "name"),
        ("a.test\tFALSE\t/\tFALSE\t0\tn\ttop;secret", "value"),
        ("a.test\tFALSE\t/\tFALSE\t0\tn\ttopsecret\u{7}", "value"),
        (".com\tTRUE\t/\tFALSE\t0\tn\ttopsecret", "public suffix"),
        (".co.uk\tTRUE\t/\tFALSE\t0\tn\ttopsecret", "public suffix"),
    ];
    for (line, want) in bad {
        let text = format!("# header\n\n{line}\n");
        let err = netscape::load_netscape_at(&text, NOW).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("cookie file line 3: "), "{line:?}: {msg}");
        assert!(msg.contains(want), "{line:?}: {msg}");
        assert!(!msg.contains("secret"), "{line:?}: {msg}");
        assert!(!format!("{err:?}").contains("secret"), "{line:?}: {err:?}");
    }
}

#[test]
fn netscape_accepts_odd_but_valid_lines() {
    let text = "COM\tFALSE\t/\tFALSE\t0\ta\t1\n\
                127.0.0.1\tTRUE\t/\tFALSE\t0\tb\t2\n\
                a.test\ttrue\t/\tfalse\t1900000000.25\tc\t3\n\
                a.test\tFALSE\t/\tFALSE\t99999999999999999999999\td\t4\n";
    let jar = CookieJar::from_netscape_at(text, NOW).unwrap();
    assert_eq!(jar.len(), 4);
    // A public suffix as its own host, an IP address host-only.
    assert_eq!(get(&jar, "http://com/").as_deref(), Some("a=1"));
    assert_eq!(get(&jar, "http://127.0.0.1/").as_deref(), Some("b=2"));
    assert_eq!(get(&jar, "http://x.a.test/").as_deref(), Some("c=3"));
    assert_eq!(
        get_at(&jar, "http://a.test/", 253_402_300_000).as_deref(),
        Some("d=4")
    );
}

#[test]
fn netscape_over_the_caps_is_an_error() {
    let mut text = String::new();
    for i in 0..=MAX_COOKIES_PER_DOMAIN {
        text.push_str(&format!("h{i}.a.test\tFALSE\t/\tFALSE\t0\tn\tv\n"));
    }
    assert_eq!(
        netscape::load_netscape_at(&text, NOW).unwrap_err(),
        CookieFileError::TooManyForDomain {
            line: MAX_COOKIES_PER_DOMAIN + 1,
            domain: "a.test".into(),
            limit: MAX_COOKIES_PER_DOMAIN
        }
    );

    let mut text = String::new();
    for i in 0..=MAX_COOKIES {
        text.push_str(&format!("d{i}.test\tFALSE\t/\tFALSE\t0\tn\tv\n"));
    }
    let err = netscape::load_netscape_at(&text, NOW).unwrap_err();
    assert_eq!(
        err,
        CookieFileError::TooMany {
            line: MAX_COOKIES + 1,
            limit: MAX_COOKIES
        }
    );
    assert!(
        err.to_string().contains("more than 3000 cookies in all"),
        "{err}"
    );

    let big = format!(
        "a.test\tFALSE\t/\tFALSE\t0\tn\t{}\n",
        "s".repeat(MAX_COOKIE_BYTES)
    );
    let err = netscape::load_netscape_at(&big, NOW).unwrap_err();
    assert_eq!(
        err,
        CookieFileError::TooLarge {
            line: 1,
            limit: MAX_COOKIE_BYTES
        }
    );
    assert!(!err.to_string().contains("sss"));
}

#[test]
fn netscape_expired_cookies_do_not_count_against_the_caps() {
    let mut text = String::new();
    for i in 0..MAX_COOKIES_PER_DOMAIN * 2 {
        text.push_str(&format!("a.test\tFALSE\t/\tFALSE\t1000\tn{i}\tv\n"));
    }
    text.push_str("a.test\tFALSE\t/\tFALSE\t0\tlive\tv\n");
    assert_eq!(netscape::load_netscape_at(&text, NOW).unwrap().len(), 1);
}

#[test]
fn netscape_debug_leaves_the_value_out() {
    let cookies =
        netscape::load_netscape_at("a.test\tFALSE\t/\tFALSE\t0\tname\ttopsecret\n", NOW).unwrap();
    let shown = format!("{:?}", cookies[0]);
    assert!(!shown.contains("topsecret"), "{shown}");
    assert!(shown.contains("a.test"), "{shown}");
}

#[test]
fn empty_file_is_an_empty_jar() {
    assert!(CookieJar::from_netscape("").unwrap().is_empty());
    assert!(
        CookieJar::from_netscape("# only a comment\r\n\r\n")
            .unwrap()
            .is_empty()
    );
}
