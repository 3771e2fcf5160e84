//! The script pages under `/js/`, served by every host: pages whose
//! content, links or behaviour only a browser running their JavaScript
//! sees, for the tests of rendering a page before extracting from it.
//!
//! - [`SHELL`] is an app shell: its served HTML holds no link and none of
//!   its text; its classic script ([`APP_JS`]; pywb 2.10 cannot replay
//!   module scripts, see [`crate::requisite`]) fetches [`DATA_JSON`] and
//!   builds the headline, the links and the price from it.
//! - [`FETCH_TO`] fetches whatever URL its `url` query parameter names
//!   (by default [`SECRET`], which allows every origin): a renderer must
//!   keep a page's own requests in the crawl's scope.
//! - [`USES_PRIVATE`] needs a script fetch and an image under `/private/`,
//!   which every host's robots.txt disallows.
//! - [`CRASH`] exhausts the renderer's memory, [`HANG`] never returns and
//!   [`LATE`] adds its content [`LATE_MS`] after loading: a renderer must
//!   survive a crashed tab, bound a hung one and wait for a selector.
//!
//! A page whose script fetches ([`SHELL`], [`FETCH_TO`], [`USES_PRIVATE`])
//! appends `<div id="done">` ([`DONE_SELECTOR`]) last, whether its fetch
//! succeeded or failed, so that a render can wait for it. No existing page
//! links here: a crawl starts at these pages.

use std::fmt::Write as _;

use bytes::Bytes;

/// The app shell: an empty `<div id="app">` its script fills.
pub const SHELL: &str = "/js/";
/// The shell's classic script, which fetches [`DATA_JSON`] and builds
/// the page from it.
pub const APP_JS: &str = "/js/app.js";
/// The data the shell's script builds the page from.
pub const DATA_JSON: &str = "/js/data.json";
/// The first static leaf page the shell links to (and [`CRASH`] too).
pub const LEAF_A: &str = "/js/a";
/// The second static leaf page the shell links to (and [`HANG`] too).
pub const LEAF_B: &str = "/js/b";
/// The third static leaf page the shell links to (and [`LATE`]'s late
/// link too).
pub const LEAF_C: &str = "/js/c";
/// A page fetching the URL its `url` query parameter names
/// ([`SECRET`] without one) and showing what it got.
pub const FETCH_TO: &str = "/js/fetch-to";
/// A plain-text secret every origin may read: [`secret`].
pub const SECRET: &str = "/js/secret";
/// A page whose script fetches [`PRIVATE_DATA`] and which shows
/// [`PRIVATE_PIXEL`], both disallowed by robots.txt.
pub const USES_PRIVATE: &str = "/js/uses-private";
/// What [`USES_PRIVATE`]'s script fetches: under `/private/`, a 404 on
/// every host, disallowed by robots.txt.
pub const PRIVATE_DATA: &str = "/private/js-data.json";
/// The image [`USES_PRIVATE`] shows: under `/private/`, a 404 on every
/// host, disallowed by robots.txt.
pub const PRIVATE_PIXEL: &str = "/private/pixel.png";
/// A page whose script exhausts the renderer's memory, crashing the tab.
pub const CRASH: &str = "/js/crash";
/// A page whose script never returns.
pub const HANG: &str = "/js/hang";
/// A page whose script adds `<div id="ready">` with a link to
/// [`LEAF_C`], [`LATE_MS`] after the page loaded.
pub const LATE: &str = "/js/late";

/// The HTML pages a render test may crawl: the shell, its leaves,
/// [`FETCH_TO`], [`USES_PRIVATE`] and [`LATE`] (not [`CRASH`] nor
/// [`HANG`]).
pub const SCRIPT_PAGES: &[&str] = &[SHELL, LEAF_A, LEAF_B, LEAF_C, FETCH_TO, USES_PRIVATE, LATE];

/// The headline the shell's script builds into `<h1 id="headline">`.
pub const HEADLINE: &str = "Built by script";
/// The links the shell's script builds into its `<ul>`, in order.
pub const LINKS: [&str; 3] = [LEAF_A, LEAF_B, LEAF_C];
/// The price the shell's script builds into `<span class="price">`.
pub const PRICE: &str = "42.50";
/// The text of the links the shell's script builds: this and the link's
/// number from 1 (`Scripted link 1` …).
pub const LINK_TEXT: &str = "Scripted link";
/// The selector of the element every finished script page ends with
/// (text `done`).
pub const DONE_SELECTOR: &str = "#done";
/// The selector of the element [`LATE`]'s script adds late.
pub const READY_SELECTOR: &str = "#ready";
/// How long after loading [`LATE`]'s script adds [`READY_SELECTOR`], in
/// milliseconds.
pub const LATE_MS: u64 = 300;
/// The text a script page writes into `<p id="refused">` when its fetch
/// failed.
pub const REFUSED: &str = "refused";

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "application/javascript";

/// A file under `/js/`: what [`file()`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its body.
    pub body: Bytes,
    /// Whether it is sent with `Access-Control-Allow-Origin: *`, so that a
    /// page on any origin may read it ([`SECRET`] only).
    pub cross_origin: bool,
}

/// The body of [`SECRET`] on host `host` (its index): `SECRET` and the
/// index, `SECRET0` on the first host.
pub fn secret(host: usize) -> String {
    format!("SECRET{host}")
}

/// The file at `path_and_query` (a request target under `/js/`) on host
/// `host` (its index); `None` for a 404.
pub fn file(path_and_query: &str, host: usize) -> Option<Served> {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let html = |body: String| Some(served(HTML, body));
    match path {
        SHELL => html(shell()),
        APP_JS => Some(served(JS, APP_SCRIPT.to_owned())),
        DATA_JSON => Some(served("application/json", data_json())),
        LEAF_A => html(leaf("Leaf A", "")),
        LEAF_B => html(leaf("Leaf B", "")),
        LEAF_C => html(leaf("Leaf C", "")),
        FETCH_TO => html(fetch_to(query)),
        SECRET => Some(Served {
            cross_origin: true,
            ..served("text/plain", secret(host))
        }),
        USES_PRIVATE => html(uses_private()),
        CRASH => html(leaf(
            "Crash",
            &format!("<a href=\"{LEAF_A}\">a leaf</a>\n<script>{CRASH_SCRIPT}</script>"),
        )),
        HANG => html(leaf(
            "Hang",
            &format!("<a href=\"{LEAF_B}\">a leaf</a>\n<script>while (true) {{}}</script>"),
        )),
        LATE => html(leaf("Late", &format!("<script>{}</script>", late_script()))),
        _ => None,
    }
}

/// A same-origin file of type `content_type`.
fn served(content_type: &'static str, body: String) -> Served {
    Served {
        content_type,
        body: Bytes::from(body),
        cross_origin: false,
    }
}

/// An HTML page titled `title` with `body` after an `<h1>` of the title.
fn leaf(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body>\n<h1>{title}</h1>\n{body}\n</body></html>\n"
    )
}

/// [`SHELL`]: a classic script in the head, an empty `#app`, nothing else.
fn shell() -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>App shell</title>\n\
         <script src=\"{APP_JS}\"></script>\n</head><body>\n<div id=\"app\"></div>\n</body></html>\n"
    )
}

/// [`DATA_JSON`]: the headline, the links and the price.
fn data_json() -> String {
    let links: Vec<String> = LINKS.iter().map(|l| json_string(l)).collect();
    format!(
        "{{\"headline\": {}, \"links\": [{}], \"price\": {}}}\n",
        json_string(HEADLINE),
        links.join(", "),
        json_string(PRICE)
    )
}

/// [`APP_JS`]: once the document is parsed, fetches [`DATA_JSON`] and
/// builds `#app` from it (or `<p id="failed">` with the error), `done`
/// last either way.
const APP_SCRIPT: &str = r#"// Builds #app from /js/data.json, then appends #done.
const add = (parent, tag, props) => {
  const el = document.createElement(tag);
  Object.assign(el, props);
  parent.append(el);
  return el;
};
const build = (app, data) => {
  add(app, "h1", { id: "headline", textContent: data.headline });
  const list = add(app, "ul", {});
  data.links.forEach((href, i) => {
    add(add(list, "li", {}), "a", { href, textContent: `Scripted link ${i + 1}` });
  });
  add(app, "span", { className: "price", textContent: data.price });
};
const start = () => {
  const app = document.getElementById("app");
  fetch("/js/data.json")
    .then((response) => response.json())
    .then((data) => build(app, data))
    .catch((error) => add(app, "p", { id: "failed", textContent: String(error && error.message || error) }))
    .then(() => add(app, "div", { id: "done", textContent: "done" }));
};
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
"#;

/// The inline script that shows what fetching `target` (a JavaScript
/// expression) gave: its text in `<p id="{found}">`, or `refused` in
/// `<p id="refused">` if the fetch failed; `done` last.
fn fetch_script(target: &str, found: &str) -> String {
    format!(
        "\nconst show = (id, text) => {{\n  \
           const el = document.createElement(id === \"done\" ? \"div\" : \"p\");\n  \
           el.id = id;\n  el.textContent = text;\n  document.body.append(el);\n}};\n\
         fetch({target})\n  \
           .then((response) => response.text())\n  \
           .then((text) => show(\"{found}\", text), () => show(\"refused\", \"{REFUSED}\"))\n  \
           .then(() => show(\"done\", \"done\"));\n"
    )
}

/// [`FETCH_TO`] with `query`: fetches its `url` parameter, [`SECRET`]
/// without one, into `<p id="leak">`.
fn fetch_to(query: &str) -> String {
    let target = query_param(query, "url").unwrap_or_else(|| SECRET.to_owned());
    let script = fetch_script(&json_string(&target), "leak");
    leaf("Fetch to", &format!("<script>{script}</script>"))
}

/// [`USES_PRIVATE`]: [`PRIVATE_PIXEL`] shown, [`PRIVATE_DATA`] fetched
/// into `<p id="private">`.
fn uses_private() -> String {
    let script = fetch_script(&json_string(PRIVATE_DATA), "private");
    leaf(
        "Uses private",
        &format!("<img src=\"{PRIVATE_PIXEL}\" alt=\"pixel\">\n<script>{script}</script>"),
    )
}

/// [`CRASH`]'s script: retains ever more arrays of distinct numbers on
/// the JavaScript heap until the renderer runs out of memory (some
/// seconds). Each array (8 MiB) is large enough to be allocated straight
/// in V8's large-object space, never copied by a scavenge, and small
/// enough to keep fast (unboxed double) elements.
const CRASH_SCRIPT: &str = "\nconst hoard = [];\n\
    for (let i = 0; ; i++) hoard.push(new Array(1 << 20).fill(i + 0.5));\n";

/// [`LATE`]'s script: [`LATE_MS`] after loading, appends
/// `<div id="ready"><a href="/js/c">late</a></div>`, built element by
/// element so that the served HTML holds no `<a`.
fn late_script() -> String {
    format!(
        "\nwindow.addEventListener(\"load\", () => setTimeout(() => {{\n  \
           const ready = document.createElement(\"div\");\n  ready.id = \"ready\";\n  \
           const link = document.createElement(\"a\");\n  \
           link.href = {href};\n  link.textContent = \"late\";\n  \
           ready.append(link);\n  document.body.append(ready);\n}}, {LATE_MS}));\n",
        href = json_string(LEAF_C)
    )
}

/// `s` as a JSON string literal that is also safe inside an HTML
/// `<script>`: `<`, `>`, `&`, U+2028, U+2029 and control characters as
/// `\uXXXX`, so that no markup can close the script or open another.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The percent-decoded value of the first parameter `name` in `query`
/// (`+` for a space, as in a form); `None` if there is none.
fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| percent_decode(value))
}

/// `s` with `%XX` escapes decoded and `+` as a space; a `%` not followed
/// by two hex digits is kept as it is, bytes that are not UTF-8 become
/// U+FFFD.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(hex_byte);
        match (escaped, b) {
            (Some(decoded), _) => {
                out.push(decoded);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte two ASCII hex digits stand for.
fn hex_byte(digits: &[u8]) -> Option<u8> {
    let digit = |d: u8| char::from(d).to_digit(16);
    match digits {
        [hi, lo] => u8::try_from(digit(*hi)? * 16 + digit(*lo)?).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(path: &str) -> String {
        let served = file(path, 0).unwrap();
        String::from_utf8(served.body.to_vec()).unwrap()
    }

    #[test]
    fn the_shell_holds_no_link_and_none_of_what_its_script_builds() {
        let served = file(SHELL, 0).unwrap();
        assert_eq!(served.content_type, HTML);
        let html = text(SHELL);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>App shell</title>"));
        assert!(html.contains("<script src=\"/js/app.js\"></script>"));
        assert!(!html.contains("type=\"module\""));
        assert!(html.contains("<div id=\"app\"></div>"));
        assert!(!html.contains("<a"));
        for built in [HEADLINE, PRICE, LINK_TEXT, "done"] {
            assert!(!html.contains(built), "{built}");
        }
        assert_eq!(file(APP_JS, 0).unwrap().content_type, JS);
        assert!(text(APP_JS).contains(DATA_JSON));
    }

    #[test]
    fn the_data_holds_the_headline_the_three_links_and_the_price() {
        let served = file(DATA_JSON, 0).unwrap();
        assert_eq!(served.content_type, "application/json");
        let json = text(DATA_JSON);
        assert!(json.contains("\"headline\": \"Built by script\""));
        assert!(json.contains("\"links\": [\"/js/a\", \"/js/b\", \"/js/c\"]"));
        assert!(json.contains("\"price\": \"42.50\""));
    }

    #[test]
    fn the_leaves_are_static() {
        for leaf in LINKS {
            let html = text(leaf);
            assert!(html.contains("<title>Leaf "), "{leaf}");
            assert!(!html.contains("<script") && !html.contains("<a"), "{leaf}");
        }
    }

    #[test]
    fn fetch_to_cannot_be_made_to_inject_a_script() {
        for query in [
            "?url=%3C%2Fscript%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",
            "?url=</script><script>alert(1)</script>",
            "?x=1&url=%3C/SCRIPT%3E%3Cscript%3E%E2%80%A8%26",
        ] {
            let html = text(&format!("{FETCH_TO}{query}"));
            let lower = html.to_lowercase();
            assert_eq!(lower.matches("<script").count(), 1, "{html}");
            assert_eq!(lower.matches("</script").count(), 1, "{html}");
            assert!(!html.contains('\u{2028}'), "{html}");
        }
        let html = text(&format!(
            "{FETCH_TO}?url=%3C%2Fscript%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E"
        ));
        assert!(html.contains(
            r#"fetch("\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e")"#
        ));
    }

    #[test]
    fn fetch_to_fetches_its_decoded_url_or_the_secret() {
        assert!(text(FETCH_TO).contains("fetch(\"/js/secret\")"));
        let html = text(&format!(
            "{FETCH_TO}?url=http%3A%2F%2F127.0.0.2%3A80%2Fjs%2Fsecret%3Fa%3D1+2"
        ));
        assert!(html.contains("fetch(\"http://127.0.0.2:80/js/secret?a=1 2\")"));
        assert!(html.contains("show(\"leak\", text)"));
        let secret = file(SECRET, 3).unwrap();
        assert_eq!(secret.content_type, "text/plain");
        assert_eq!(&secret.body[..], b"SECRET3");
        assert!(secret.cross_origin);
        assert!(!file(SHELL, 0).unwrap().cross_origin);
    }

    #[test]
    fn the_other_pages_hold_what_their_tests_need() {
        let private = text(USES_PRIVATE);
        assert!(private.contains("<img src=\"/private/pixel.png\""));
        assert!(private.contains("fetch(\"/private/js-data.json\")"));
        let crash = text(CRASH);
        assert!(crash.contains("<title>Crash</title>"));
        assert!(crash.find("<a href=\"/js/a\">") < crash.find("<script>"));
        let hang = text(HANG);
        assert!(hang.contains("<title>Hang</title>") && hang.contains("<a href=\"/js/b\">"));
        assert!(hang.contains("while (true) {}"));
        let late = text(LATE);
        assert!(!late.contains("<a") && late.contains("\"/js/c\"") && late.contains("300"));
        for page in SCRIPT_PAGES {
            assert_eq!(file(page, 1).unwrap().content_type, HTML, "{page}");
        }
    }

    #[test]
    fn an_unknown_file_is_not_found() {
        assert!(file("/js/x", 0).is_none());
        assert!(file("/js/a/", 0).is_none());
        assert!(file("/js", 0).is_none());
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%2Fb+c%zz%4"), "a/b c%zz%4");
        assert_eq!(percent_decode("%C3%A9%FF"), "é\u{fffd}");
        assert_eq!(query_param("a=1&url", "url").as_deref(), Some(""));
        assert_eq!(query_param("a=1", "url"), None);
    }
}
