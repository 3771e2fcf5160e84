//! The URLs a stylesheet needs (`--requisites`): `url(...)`, `@import`
//! and the strings of `image-set()`, found by a linear scanner that
//! follows CSS tokenisation as far as finding them needs (comments,
//! strings, escapes, bad URLs) and no further. A stylesheet is hostile
//! input: the scanner never steps back, so its time is linear in the
//! input, and it allocates only for a URL it keeps (at most
//! `MAX_URL_BYTES` each).
//!
//! The same scanner reads a page's `style` attributes and `<style>`
//! elements (`scan`, called by the HTML side in `requisites.rs`) and a
//! fetched stylesheet ([`stylesheet_requisites`], called by the pipeline).

use super::{CutShort, Extracted, PageLimits};

/// The scanner checks the deadline each time it has read this many more
/// bytes (between tokens: a single comment or string is skipped whole, at
/// memory-search speed).
const CHECK_EVERY: usize = 64 * 1024;

/// The longest URL kept, in bytes once decoded; a longer one (a large
/// inline font as a `data:` URL, say) is skipped whole.
pub(crate) const MAX_URL_BYTES: usize = 8 * 1024;

/// URL schemes that never name something to fetch.
const SKIPPED_SCHEMES: [&str; 5] = ["data", "javascript", "about", "blob", "mailto"];

/// Adds the URLs stylesheet `body` needs to `out.requisites` (as written,
/// unresolved: relative to the stylesheet's own URL), at most
/// [`MAX_REQUISITES`](super::MAX_REQUISITES) kept and the rest counted in
/// `out.dropped_requisites`. `body` is read as UTF-8, invalid bytes
/// replaced. Stops when `limits` expire, setting `out.cut_short` to
/// [`CutShort::Time`] and keeping what it found.
pub fn stylesheet_requisites(body: &[u8], limits: &PageLimits, out: &mut Extracted) {
    let css = String::from_utf8_lossy(body);
    if !Scanner::new(&css, true).run(out, || limits.expired()) {
        out.cut_short = Some(CutShort::Time);
    }
}

/// Adds the URLs CSS text `css` needs to `out.requisites`. `complete` is
/// false when `css` was cut short: a URL the cut ends is then left out,
/// being only part of one.
pub(crate) fn scan(css: &str, complete: bool, out: &mut Extracted) {
    Scanner::new(css, complete).run(out, || false);
}

/// Keeps `url` (already decoded) as a requisite unless it names nothing to
/// fetch: empty, fragment-only, or of a scheme in [`SKIPPED_SCHEMES`].
pub(crate) fn push_url(out: &mut Extracted, url: &str) {
    // Browsers strip leading and trailing C0 controls and spaces from URLs.
    let url = url.trim_matches(|c: char| c <= ' ');
    if url.is_empty() || url.starts_with('#') {
        return;
    }
    if let Some((scheme, _)) = url.split_once(':')
        && SKIPPED_SCHEMES
            .iter()
            .any(|s| scheme.trim().eq_ignore_ascii_case(s))
    {
        return;
    }
    if out.requisites.len() >= super::MAX_REQUISITES {
        // Counted without allocating: hostile CSS may hold millions.
        out.dropped_requisites = out.dropped_requisites.saturating_add(1);
        return;
    }
    out.push_requisite(url.to_owned());
}

/// True for a byte that may continue a CSS identifier (escapes apart).
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b >= 0x80
}

/// True for CSS whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0C)
}

/// True for a CSS newline.
fn is_newline(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | 0x0C)
}

/// A URL being decoded, bounded to [`MAX_URL_BYTES`].
#[derive(Default)]
struct UrlText {
    text: String,
    too_long: bool,
}

impl UrlText {
    /// Adds `c`, or marks the URL too long to keep.
    fn push(&mut self, c: char) {
        if self.text.len() + c.len_utf8() > MAX_URL_BYTES {
            self.too_long = true;
        } else if !self.too_long {
            self.text.push(c);
        }
    }

    /// Adds `run`, or marks the URL too long to keep.
    fn push_str(&mut self, run: &str) {
        if self.text.len() + run.len() > MAX_URL_BYTES {
            self.too_long = true;
        } else if !self.too_long {
            self.text.push_str(run);
        }
    }

    /// Keeps the URL in `out` unless it was too long.
    fn keep(self, out: &mut Extracted) {
        if !self.too_long {
            push_url(out, &self.text);
        }
    }
}

/// One pass over CSS text.
struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    /// The next byte to read (always at a character boundary).
    i: usize,
    /// False when the text was cut: a token the end cuts is not a URL.
    complete: bool,
    /// Open parentheses and functions (reset at `;`, `{` and `}`, where
    /// none can be open in valid CSS, so hostile input cannot skew it).
    depth: u32,
    /// The depth inside the innermost `image-set(`, whose strings are URLs.
    image_set: Option<u32>,
    /// The last token was `@import` (whitespace and comments apart): a
    /// string now is a URL.
    after_import: bool,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a str, complete: bool) -> Self {
        Self {
            s,
            b: s.as_bytes(),
            i: 0,
            complete,
            depth: 0,
            image_set: None,
            after_import: false,
        }
    }

    /// Reads to the end, or until `expired` says so (then false).
    fn run(&mut self, out: &mut Extracted, mut expired: impl FnMut() -> bool) -> bool {
        let mut next_check = 0;
        while self.i < self.b.len() {
            if self.i >= next_check {
                if expired() {
                    return false;
                }
                next_check = self.i + CHECK_EVERY;
            }
            self.token(out);
        }
        true
    }

    /// The length of the character at `at` (1 past the end).
    fn char_len(&self, at: usize) -> usize {
        self.s
            .get(at..)
            .and_then(|rest| rest.chars().next())
            .map_or(1, char::len_utf8)
    }

    /// Reads one token, keeping any URL it is.
    fn token(&mut self, out: &mut Extracted) {
        let b = self.b[self.i];
        let after_import = std::mem::take(&mut self.after_import);
        match b {
            b'/' if self.b.get(self.i + 1) == Some(&b'*') => {
                self.skip_comment();
                self.after_import = after_import;
            }
            _ if is_space(b) => {
                self.i += 1;
                self.after_import = after_import;
            }
            b'"' | b'\'' => {
                let is_url = after_import || self.image_set == Some(self.depth);
                self.string(b, is_url, out);
            }
            b'\\' => self.i += 1 + self.char_len(self.i + 1),
            b'@' => {
                self.i += 1;
                let name = self.ident();
                self.after_import = name.eq_ignore_ascii_case("import");
            }
            b'(' => {
                self.i += 1;
                self.depth = self.depth.saturating_add(1);
            }
            b')' => {
                self.i += 1;
                if self.image_set == Some(self.depth) {
                    self.image_set = None;
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b';' | b'{' | b'}' => {
                self.i += 1;
                self.depth = 0;
                self.image_set = None;
            }
            _ if is_ident_byte(b) => {
                let name = self.ident();
                if self.b.get(self.i) == Some(&b'(') {
                    self.i += 1;
                    if name.eq_ignore_ascii_case("url") {
                        self.url(out);
                    } else {
                        self.depth = self.depth.saturating_add(1);
                        if self.image_set.is_none()
                            && (name.eq_ignore_ascii_case("image-set")
                                || name.eq_ignore_ascii_case("-webkit-image-set"))
                        {
                            self.image_set = Some(self.depth);
                        }
                    }
                }
            }
            _ => self.i += 1,
        }
    }

    /// Skips the comment opened at `self.i`, up to its `*/` or the end.
    fn skip_comment(&mut self) {
        let mut at = self.i + 2;
        while let Some(star) = memchr::memchr(b'*', &self.b[at..]) {
            at += star + 1;
            if self.b.get(at) == Some(&b'/') {
                self.i = at + 1;
                return;
            }
        }
        self.i = self.b.len();
    }

    /// Reads an identifier (escapes kept as written) and returns it.
    fn ident(&mut self) -> &'a str {
        let start = self.i;
        while let Some(&b) = self.b.get(self.i) {
            if is_ident_byte(b) {
                self.i += 1;
            } else if b == b'\\' && self.b.get(self.i + 1).is_some_and(|&n| !is_newline(n)) {
                self.i += 1 + self.char_len(self.i + 1);
            } else {
                break;
            }
        }
        self.s.get(start..self.i).unwrap_or_default()
    }

    /// Reads the escape after a `\` at `self.i` (which the caller checked
    /// is not followed by a newline) and returns the character it means.
    fn escape(&mut self) -> char {
        self.i += 1;
        let hex_len = self.b[self.i..]
            .iter()
            .take(6)
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if hex_len == 0 {
            let Some(c) = self.s.get(self.i..).and_then(|r| r.chars().next()) else {
                return char::REPLACEMENT_CHARACTER;
            };
            self.i += c.len_utf8();
            return c;
        }
        let digits = &self.s[self.i..self.i + hex_len];
        self.i += hex_len;
        // One whitespace after the digits ends the escape (`\r\n` is one).
        if self.b.get(self.i..self.i + 2) == Some(b"\r\n") {
            self.i += 2;
        } else if self.b.get(self.i).is_some_and(|&b| is_space(b)) {
            self.i += 1;
        }
        u32::from_str_radix(digits, 16)
            .ok()
            .filter(|&v| v != 0)
            .and_then(char::from_u32)
            .unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    /// Reads a string opened by `quote` at `self.i`, keeping it as a URL
    /// when `is_url`. A newline in it makes it a bad string (not a URL).
    fn string(&mut self, quote: u8, is_url: bool, out: &mut Extracted) {
        self.i += 1;
        let mut url = is_url.then(UrlText::default);
        loop {
            // Skip plain bytes in one search.
            let rest = &self.b[self.i..];
            let plain = rest
                .iter()
                .position(|&b| b == quote || b == b'\\' || is_newline(b))
                .unwrap_or(rest.len());
            if let Some(url) = &mut url {
                url.push_str(&self.s[self.i..self.i + plain]);
            }
            self.i += plain;
            let Some(&b) = self.b.get(self.i) else {
                // The end closes a string, unless the text was cut.
                if let (Some(url), true) = (url, self.complete) {
                    url.keep(out);
                }
                return;
            };
            if b == quote {
                self.i += 1;
                if let Some(url) = url {
                    url.keep(out);
                }
                return;
            }
            if is_newline(b) {
                return;
            }
            // A backslash: a line continuation, the end, or an escape.
            match self.b.get(self.i + 1) {
                None => self.i += 1,
                Some(b'\r') if self.b.get(self.i + 2) == Some(&b'\n') => self.i += 3,
                Some(&n) if is_newline(n) => self.i += 2,
                Some(_) => {
                    let c = self.escape();
                    if let Some(url) = &mut url {
                        url.push(c);
                    }
                }
            }
        }
    }

    /// Reads what follows `url(` (just read): a quoted URL inside a
    /// function, or an unquoted URL up to `)`.
    fn url(&mut self, out: &mut Extracted) {
        while self.b.get(self.i).is_some_and(|&b| is_space(b)) {
            self.i += 1;
        }
        if let Some(&q @ (b'"' | b'\'')) = self.b.get(self.i) {
            // `url("x")` is a function whose argument is the URL.
            self.depth = self.depth.saturating_add(1);
            self.string(q, true, out);
            return;
        }
        let mut url = UrlText::default();
        loop {
            let Some(&b) = self.b.get(self.i) else {
                if self.complete {
                    url.keep(out);
                }
                return;
            };
            match b {
                b')' => {
                    self.i += 1;
                    url.keep(out);
                    return;
                }
                _ if is_space(b) => {
                    while self.b.get(self.i).is_some_and(|&b| is_space(b)) {
                        self.i += 1;
                    }
                    match self.b.get(self.i) {
                        Some(b')') => {
                            self.i += 1;
                            url.keep(out);
                        }
                        None if self.complete => url.keep(out),
                        None => {}
                        Some(_) => self.bad_url(),
                    }
                    return;
                }
                b'"' | b'\'' | b'(' | 0..=0x08 | 0x0B | 0x0E..=0x1F | 0x7F => {
                    self.bad_url();
                    return;
                }
                b'\\' => {
                    if self.b.get(self.i + 1).is_some_and(|&n| is_newline(n)) {
                        self.bad_url();
                        return;
                    }
                    let c = self.escape();
                    url.push(c);
                }
                _ => {
                    // Take plain bytes in one run (every byte that ends one
                    // is ASCII, so the run ends at a character boundary).
                    let rest = &self.b[self.i..];
                    let plain = rest
                        .iter()
                        .position(|&b| {
                            matches!(b, b')' | b'"' | b'\'' | b'(' | b'\\' | 0..=0x20 | 0x7F)
                        })
                        .unwrap_or(rest.len());
                    url.push_str(&self.s[self.i..self.i + plain]);
                    self.i += plain;
                }
            }
        }
    }

    /// Skips the rest of a bad URL: up to `)` or the end, escapes apart.
    fn bad_url(&mut self) {
        while let Some(&b) = self.b.get(self.i) {
            match b {
                b')' => {
                    self.i += 1;
                    return;
                }
                b'\\' => self.i += 1 + self.char_len(self.i + 1),
                _ => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_REQUISITES;
    use std::time::{Duration, Instant};

    /// The requisites of stylesheet `css`, read within a minute.
    fn urls(css: &str) -> Vec<String> {
        sheet(css.as_bytes(), Duration::from_secs(60)).requisites
    }

    fn sheet(css: &[u8], time: Duration) -> Extracted {
        let limits = PageLimits {
            max_links: 10,
            deadline: Instant::now() + time,
        };
        let mut out = Extracted::default();
        stylesheet_requisites(css, &limits, &mut out);
        out
    }

    #[test]
    fn finds_url_in_every_quoting() {
        assert_eq!(
            urls(
                r#"a{background:url(a.png)} b{x:URL( "b.png" )} c{x:url('c.png')} d{x:url(  d.png  )}"#
            ),
            ["a.png", "b.png", "c.png", "d.png"]
        );
    }

    #[test]
    fn finds_imports_with_and_without_url() {
        assert_eq!(
            urls(
                "@import \"a.css\";\n@import url(b.css) screen;\n@IMPORT /* c */ 'c.css' print;\n\
                 @import url(\"d.css\") layer(x) supports(display: grid);"
            ),
            ["a.css", "b.css", "c.css", "d.css"]
        );
        // A string after another at-rule is no URL.
        assert!(urls("@charset \"utf-8\"; @layer \"x\";").is_empty());
    }

    #[test]
    fn finds_image_set_strings_and_urls_but_not_their_types() {
        assert_eq!(
            urls(
                r#"a{background-image:image-set("a.png" 1x, url(b.png) 2x, 'c.avif' type("image/avif"));
                   b{x:-webkit-image-set(url(d.png) 1x)} c{content:"e.png"}"#
            ),
            ["a.png", "b.png", "c.avif", "d.png"]
        );
    }

    #[test]
    fn finds_font_face_sources_not_formats_or_local_names() {
        assert_eq!(
            urls(
                r#"@font-face{font-family:"F";src:local("F Regular"),url(a.woff2) format("woff2"),
                   url("b.woff") format('woff')}"#
            ),
            ["a.woff2", "b.woff"]
        );
    }

    #[test]
    fn skips_comments_and_other_strings() {
        assert_eq!(
            urls(
                r#"/* url(no1.png) */ a{content:"url(no2.png)"; b: 'x\' url(no3.png)'}
                   /* @import "no4.css"; */ c{x:url(yes.png)}"#
            ),
            ["yes.png"]
        );
        // A url() must be a whole identifier.
        assert!(urls("a{x:myurl(no.png)}").is_empty());
    }

    #[test]
    fn decodes_escapes() {
        assert_eq!(
            urls(
                r"a{x:url(a\(1\).png)} b{x:url(\62 .png)} c{x:url('\000063\'.png')} d{x:url(d\E9 x)}"
            ),
            ["a(1).png", "b.png", "c'.png", "déx"]
        );
        // A line continuation in a string is removed.
        assert_eq!(urls("@import 'a\\\nb.css';"), ["ab.css"]);
        // An escaped quote does not start a string.
        assert_eq!(urls(r#"a{x:\"; y:url(z.png)}"#), ["z.png"]);
    }

    #[test]
    fn bad_urls_and_bad_strings_are_not_kept() {
        assert_eq!(
            urls("a{x:url(a b)} b{x:url(c\"d)} c{x:url(e(f)} d{x:url(ok.png)}"),
            ["ok.png"]
        );
        assert_eq!(urls("@import 'a\nb.css; x{y:url(ok.png)}"), ["ok.png"]);
        // The end closes a URL and a string.
        assert_eq!(urls("a{x:url(end.png"), ["end.png"]);
        assert_eq!(urls("@import 'end.css"), ["end.css"]);
    }

    #[test]
    fn text_that_was_cut_keeps_no_part_of_a_url() {
        for cut in ["a{x:url(par", "@import 'par", "a{x:url(par  "] {
            let mut out = Extracted::default();
            scan(cut, false, &mut out);
            assert!(out.requisites.is_empty(), "{cut}: {:?}", out.requisites);
        }
    }

    #[test]
    fn skips_urls_that_fetch_nothing() {
        assert_eq!(
            urls(
                "a{x:url(data:image/png;base64,AAAA)} b{x:url(#f)} c{x:url()} d{x:url('')}\
                 e{x:url(JavaScript:x)} f{x:url(about:blank)} g{x:url(blob:x)} h{x:url(mailto:x)}\
                 i{x:url(https://cdn.test/i.png)}"
            ),
            ["https://cdn.test/i.png"]
        );
    }

    #[test]
    fn a_huge_url_is_skipped_whole() {
        let css = format!(
            "a{{x:url(data:font/woff2;base64,{})}} b{{x:url(b.png)}}",
            "A".repeat(MAX_URL_BYTES * 4)
        );
        assert_eq!(urls(&css), ["b.png"]);
    }

    #[test]
    fn keeps_at_most_the_bound_and_counts_the_rest() {
        let css = "a{x:url(x.png)}".repeat(MAX_REQUISITES + 123);
        let out = sheet(css.as_bytes(), Duration::from_secs(60));
        assert_eq!(out.requisites.len(), MAX_REQUISITES);
        assert_eq!(out.dropped_requisites, 123);
    }

    #[test]
    fn invalid_utf8_is_read_lossily() {
        let out = sheet(
            b"a{x:url(\xff.png)} b{x:url(b.png)}",
            Duration::from_secs(60),
        );
        assert_eq!(out.requisites, ["\u{FFFD}.png", "b.png"]);
    }

    #[test]
    fn stops_at_the_deadline() {
        let css = "a{x:url(x.png)}".repeat(10_000);
        let out = sheet(css.as_bytes(), Duration::ZERO);
        assert_eq!(out.cut_short, Some(CutShort::Time));
        assert!(out.requisites.is_empty());
    }

    /// Checks the invariants on what hostile `css` gave.
    fn check_hostile(css: &[u8]) {
        let out = sheet(css, Duration::from_secs(600));
        let shown = String::from_utf8_lossy(&css[..css.len().min(12)]);
        assert!(out.requisites.len() <= MAX_REQUISITES, "{shown}");
        assert!(out.requisites.iter().all(|u| !u.is_empty()), "{shown}");
        assert_eq!(out.cut_short, None, "{shown}");
    }

    #[test]
    fn ten_megabytes_of_hostile_stylesheet_finish_fast() {
        const SIZE: usize = 10 * 1024 * 1024;
        let started = Instant::now();
        check_hostile("url(".repeat(SIZE / 4).as_bytes());
        for open in ["\"", "/*", "url(", "@import '", "url('"] {
            let mut css = open.as_bytes().to_vec();
            css.resize(SIZE, b'x');
            check_hostile(&css);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_megabyte_of_each_hostile_pattern_finishes_fast() {
        const SIZE: usize = 1024 * 1024;
        let started = Instant::now();
        for unit in [
            "\"",
            "'",
            "/*",
            "*/",
            "(",
            ")",
            "\\",
            "@import ",
            "image-set(\"",
            "url(\"",
            "url(\\",
            "url( ",
            "\\\n",
            "\\0",
            "é",
            "url(é\\",
        ] {
            let mut css = unit.repeat(SIZE / unit.len()).into_bytes();
            css.truncate(SIZE);
            check_hostile(&css);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }
}
