//! The pages the differential test reads, generated: every named character
//! reference of the WHATWG table in a title, a link and text (with and
//! without `;`, followed by `=` or a letter), numeric references at the
//! edges of their rules, random nestings of elements whose end tags may be
//! left out (`li`, `p`, `dt`, `dd`, `option`, `tr`, `td`, `th`), and
//! titles and links in foreign content and `<noscript>`.

/// A page: a name that says where it comes from, and its HTML.
pub(super) type Case = (String, String);

/// Every page of the corpus.
pub(super) fn all() -> Vec<Case> {
    let mut pages = named_references();
    pages.extend(numeric_references());
    pages.extend(nestings(600));
    pages.extend(titles_and_noscript());
    pages
}

/// One page per named reference of the WHATWG table.
fn named_references() -> Vec<Case> {
    let mut names: Vec<&str> = htmlize::ENTITIES
        .keys()
        .filter_map(|k| std::str::from_utf8(k).ok())
        .filter_map(|k| k.strip_prefix('&')?.strip_suffix(';'))
        .collect();
    names.sort_unstable();
    names
        .into_iter()
        .map(|n| {
            (
                format!("named &{n};"),
                format!(
                    "<title>T &{n}; &{n}= &{n}x &{n}</title>\
                     <a href=\"/e?a=&{n};&b=&{n}=&c=&{n}x&d=&{n}\">x</a>\
                     <a href='/f/&{n}'>y</a>\
                     <p>P &{n}; &{n}= &{n}x &{n}Z &{n};x</p>"
                ),
            )
        })
        .collect()
}

/// Numeric references: zero, controls, the C1 range browsers remap,
/// surrogates, the last code point and past it, with and without `;`.
fn numeric_references() -> Vec<Case> {
    let mut codes: Vec<u64> = vec![
        0,
        1,
        9,
        0x0A,
        0x0D,
        0x1F,
        0x20,
        0x26,
        0x3C,
        0x7F,
        0xA0,
        0xE9,
        0xD7FF,
        0xD800,
        0xDFFF,
        0xE000,
        0xFDD0,
        0xFFFE,
        0xFFFF,
        0x1F600,
        0x10FFFF,
        0x110000,
        0xFFFF_FFFF,
        0x1_0000_0000,
    ];
    codes.extend(0x80..=0x9F);
    let mut pages = Vec::new();
    for c in codes {
        for (form, r) in [
            ("dec;", format!("&#{c};")),
            ("dec", format!("&#{c}")),
            ("hex;", format!("&#x{c:x};")),
            ("HEX", format!("&#X{c:X}")),
            ("padded;", format!("&#x000{c:x};")),
        ] {
            pages.push((
                format!("numeric {c:#x} {form}"),
                format!(
                    "<title>T {r}a {r} {r}</title>\
                     <a href=\"/n?v={r}a&w={r}\">x</a>\
                     <p>P {r}a {r}; {r}</p>"
                ),
            ));
        }
    }
    for (name, r) in [
        ("empty", "&#;"),
        ("empty hex", "&#x;"),
        ("no digits", "&#a;"),
        ("hex no digits", "&#xg;"),
        ("long", "&#0000000000000000000000000065;"),
        ("huge", "&#99999999999999999999999;"),
    ] {
        pages.push((
            format!("numeric {name}"),
            format!("<title>T {r}</title><a href=\"/n?v={r}\">x</a><p>P {r} b</p>"),
        ));
    }
    pages
}

/// `count` pages of random nestings (a fixed seed: the same every run).
fn nestings(count: usize) -> Vec<Case> {
    let mut rng = fastrand::Rng::with_seed(51);
    (0..count)
        .map(|i| {
            let mut g = Gen {
                rng: &mut rng,
                html: String::new(),
                word: 0,
            };
            g.html.push_str("<!DOCTYPE html><title>n</title>");
            for _ in 0..g.rng.usize(1..5) {
                g.block(0);
            }
            (format!("nesting {i}"), g.html)
        })
        .collect()
}

struct Gen<'a> {
    rng: &'a mut fastrand::Rng,
    html: String,
    word: u32,
}

impl Gen<'_> {
    fn maybe(&mut self, s: &str) {
        if self.rng.bool() {
            self.html.push_str(s);
        }
    }

    fn inline(&mut self) {
        for _ in 0..self.rng.usize(1..3) {
            self.word += 1;
            let w = self.word;
            match self.rng.u8(0..4) {
                0 => self.html.push_str(&format!("<a href=/l{w}>w{w}</a> ")),
                1 => self.html.push_str(&format!("<b>w{w}</b>")),
                _ => self.html.push_str(&format!("w{w} ")),
            }
        }
    }

    fn content(&mut self, depth: u32) {
        if depth < 3 && self.rng.u8(0..3) == 0 {
            self.block(depth + 1);
        } else {
            self.inline();
        }
    }

    fn block(&mut self, depth: u32) {
        match self.rng.u8(0..7) {
            0 => {
                let list = if self.rng.bool() { "ul" } else { "ol" };
                self.html.push_str(&format!("<{list}>"));
                for _ in 0..self.rng.usize(1..4) {
                    self.html.push_str("<li>");
                    self.content(depth);
                    self.maybe("</li>");
                }
                self.html.push_str(&format!("</{list}>"));
            }
            1 => {
                self.html.push_str("<p>");
                self.inline();
                self.maybe("</p>");
            }
            2 => {
                self.html.push_str("<dl>");
                for _ in 0..self.rng.usize(1..4) {
                    let t = if self.rng.bool() { "dt" } else { "dd" };
                    self.html.push_str(&format!("<{t}>"));
                    self.content(depth);
                    self.maybe(&format!("</{t}>"));
                }
                self.html.push_str("</dl>");
            }
            3 => {
                self.html.push_str("<select>");
                for _ in 0..self.rng.usize(1..4) {
                    self.word += 1;
                    self.html.push_str(&format!("<option>o{}", self.word));
                    self.maybe("</option>");
                }
                self.html.push_str("</select>");
            }
            4 => {
                self.html.push_str("<table>");
                for _ in 0..self.rng.usize(1..3) {
                    self.html.push_str("<tr>");
                    for _ in 0..self.rng.usize(1..3) {
                        let t = if self.rng.bool() { "td" } else { "th" };
                        self.html.push_str(&format!("<{t}>"));
                        self.content(depth);
                        self.maybe(&format!("</{t}>"));
                    }
                    self.maybe("</tr>");
                }
                self.html.push_str("</table>");
            }
            5 => {
                self.html.push_str("<h2>");
                self.inline();
                self.html.push_str("</h2>");
            }
            _ => {
                self.html.push_str("<div>");
                self.content(depth);
                self.html.push_str("</div>");
            }
        }
    }
}

/// Titles in and out of foreign content, and links in `<noscript>`.
fn titles_and_noscript() -> Vec<Case> {
    [
        (
            "svg title first",
            "<svg><title>Icon</title></svg><title>Page</title>",
        ),
        ("svg title only", "<body><svg><title>Icon</title></svg><p>x"),
        (
            "math title first",
            "<math><title>M</title></math><title>Page</title>",
        ),
        (
            "html title first",
            "<title>Page</title><svg><title>Icon</title></svg>",
        ),
        (
            "svg title then markup",
            "<svg><title>Icon <b>x</b></svg><p>y <a href=/after>z</a></p><title>Page</title>",
        ),
        ("title in body", "<p>x</p><title>Late</title>"),
        (
            "svg then html title in body",
            "<svg><title>I</title></svg><p>x<title>T</title>",
        ),
        (
            "noscript link",
            "<noscript><a href=/ns>n</a></noscript><a href=/y>y</a>",
        ),
        (
            "noscript in head",
            "<head><noscript><link href=/ns.css rel=stylesheet></noscript></head>",
        ),
        ("svg a", "<svg><a href=/svg-a>x</a></svg>"),
        (
            "base decoded",
            "<base href=\"/d&#47;e&sol;\"><a href=x>x</a>",
        ),
        (
            "href spaces",
            "<a href=\" \t/x&nbsp; \">x</a><a href=\"&#32;/y\">y</a>",
        ),
        (
            "area link unquoted",
            "<map><area href=/a&amp;b></map><link href='/c&lt;d'><a href=/x?y&copy=1&not>z</a>",
        ),
        (
            "rel",
            "<a rel=\"NoFollow\" href=/n>n</a><a rel=\"next\" href=/ok>o</a>",
        ),
        (
            "title entities",
            "<title>\n A&nbsp;B &amp;&amp C&#x9;D\n</title>",
        ),
        ("template", "<p>a<template><a href=/t>t</a></template>b"),
    ]
    .into_iter()
    .map(|(n, h)| (n.to_owned(), h.to_owned()))
    .collect()
}
