//! Sitemaps (sitemaps.org): XML `urlset` and `sitemapindex` files, gzip
//! ones, and text files of one URL per line. Read as hostile input: the
//! XML is parsed as a stream (quick-xml, no DOM), a document type
//! declaration is refused (so no entity of it is ever expanded: no
//! "billion laughs"), at most [`MAX_URLS`] URLs and [`MAX_BYTES`] of
//! (decompressed) text are read from one file, and a `loc` longer than
//! [`MAX_LOC`] is skipped. Sitemap files are fetched by the engine as
//! requests of their own (with a record each, `"via": "sitemap"`); this
//! module only reads them and names the ones robots.txt points at.

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;

/// URLs taken from one sitemap file (the protocol's limit).
pub const MAX_URLS: usize = 50_000;
/// Bytes of one sitemap file read, decompressed (the protocol's limit).
pub const MAX_BYTES: usize = 50 << 20;
/// A longer `loc` is no URL the crawl takes.
pub const MAX_LOC: usize = 2048;

/// What a sitemap file lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sitemap {
    /// Pages (`urlset`, or a text sitemap), with their `lastmod` if given.
    pub urls: Vec<(String, Option<String>)>,
    /// Other sitemap files (`sitemapindex`).
    pub sitemaps: Vec<String>,
    /// Entries past the limits, not taken.
    pub dropped: usize,
}

/// A sitemap file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SitemapError {
    /// The XML declares a document type (entities): refused.
    #[error("sitemap declares a document type; refused")]
    Doctype,
    /// The XML is malformed (what was read before is kept).
    #[error("malformed sitemap XML: {0}")]
    Xml(String),
    /// The gzip data does not decode.
    #[error("sitemap gzip data does not decode: {0}")]
    Gzip(String),
}

/// Reads a sitemap file's body (gzip or not, XML or text). A malformed
/// file gives what was read before the fault, with the error.
pub fn parse(body: &[u8]) -> (Sitemap, Option<SitemapError>) {
    let text = if body.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        let read = flate2::read::MultiGzDecoder::new(body)
            .take(MAX_BYTES as u64)
            .read_to_end(&mut out);
        if let Err(e) = read {
            return (Sitemap::default(), Some(SitemapError::Gzip(e.to_string())));
        }
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(&body[..body.len().min(MAX_BYTES)])
    };
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    let rest = text[start..]
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(&text[start..]);
    if rest.first() == Some(&b'<') {
        parse_xml(rest)
    } else {
        (parse_text(rest), None)
    }
}

/// One URL per line; lines that are no http(s) URL are skipped.
fn parse_text(text: &[u8]) -> Sitemap {
    let mut map = Sitemap::default();
    for line in String::from_utf8_lossy(text).lines() {
        let line = line.trim();
        if !(line.starts_with("http://") || line.starts_with("https://")) {
            continue;
        }
        if room(map.urls.len(), line, &mut map.dropped) {
            map.urls.push((line.to_owned(), None));
        }
    }
    map
}

/// Where in the document a text is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum In {
    Other,
    UrlLoc,
    UrlLastmod,
    SitemapLoc,
}

fn parse_xml(xml: &[u8]) -> (Sitemap, Option<SitemapError>) {
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().trim_text(true);
    let mut map = Sitemap::default();
    let mut stack: Vec<Vec<u8>> = Vec::new();
    let mut here = In::Other;
    // The text of the element read now (a `loc` or `lastmod`).
    let mut text = String::new();
    let mut loc: Option<String> = None;
    let mut lastmod: Option<String> = None;
    let mut buf = Vec::new();
    let error = loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(e) => break Some(SitemapError::Xml(e.to_string())),
        };
        match event {
            Event::DocType(_) => break Some(SitemapError::Doctype),
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_ascii_lowercase();
                let parent = stack.last().map(Vec::as_slice);
                here = match (parent, name.as_slice()) {
                    (Some(b"url"), b"loc") => In::UrlLoc,
                    (Some(b"url"), b"lastmod") => In::UrlLastmod,
                    (Some(b"sitemap"), b"loc") => In::SitemapLoc,
                    _ => In::Other,
                };
                text.clear();
                if name == b"url" {
                    loc = None;
                    lastmod = None;
                }
                // Only the path matters; a deep nest is no sitemap.
                if stack.len() < 16 {
                    stack.push(name);
                }
            }
            Event::End(e) => {
                let name = e.local_name().as_ref().to_ascii_lowercase();
                let value = text.trim().to_owned();
                match here {
                    In::UrlLoc => loc = Some(value),
                    In::UrlLastmod => lastmod = Some(value.chars().take(64).collect()),
                    In::SitemapLoc => {
                        if room(map.sitemaps.len(), &value, &mut map.dropped) {
                            map.sitemaps.push(value);
                        }
                    }
                    In::Other => {}
                }
                if name == b"url"
                    && let Some(l) = loc.take()
                    && room(map.urls.len(), &l, &mut map.dropped)
                {
                    map.urls.push((l, lastmod.take()));
                }
                stack.pop();
                here = In::Other;
                text.clear();
            }
            Event::Text(t) if here != In::Other && text.len() <= MAX_LOC => {
                text.push_str(&String::from_utf8_lossy(t.as_ref()));
            }
            Event::CData(t) if here != In::Other && text.len() <= MAX_LOC => {
                text.push_str(&String::from_utf8_lossy(t.as_ref()));
            }
            // A reference in text: the five the XML standard defines and
            // character references are read; any other is kept as written
            // (no entity is ever expanded).
            Event::GeneralRef(r) if here != In::Other && text.len() <= MAX_LOC => {
                let name = String::from_utf8_lossy(r.as_ref()).into_owned();
                match resolve_ref(&name) {
                    Some(c) => text.push(c),
                    None => {
                        text.push('&');
                        text.push_str(&name);
                        text.push(';');
                    }
                }
            }
            Event::Eof => break None,
            _ => {}
        }
        buf.clear();
    };
    (map, error)
}

/// The character a predefined entity or a character reference stands for.
fn resolve_ref(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let code = name.strip_prefix('#')?;
            let n = match code.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => code.parse().ok()?,
            };
            char::from_u32(n)
        }
    }
}

/// Whether one more entry with `loc` may join a list of `len`; counts
/// the ones past the limits.
fn room(len: usize, loc: &str, dropped: &mut usize) -> bool {
    let ok = len < MAX_URLS && !loc.is_empty() && loc.len() <= MAX_LOC;
    if !ok {
        *dropped += 1;
    }
    ok
}

/// Sitemap files taken from one robots.txt, and from one sitemap index.
pub const MAX_FILES: usize = 20;
/// Sitemap indexes followed this deep (an index of indexes, no deeper).
pub const MAX_LEVEL: u8 = 2;

/// The sitemap files an authority names: the `Sitemap:` lines of its
/// robots.txt (the first [`MAX_FILES`] http(s) URLs of at most
/// [`MAX_LOC`] bytes) and its `/sitemap.xml`, resolved against its
/// robots.txt; with the count of lines skipped. Nothing is fetched here:
/// each file becomes a request of its own authority, through scope, that
/// authority's robots.txt, politeness and the network guard.
pub fn named_by(
    authority: &crawlkeeper_model::Authority,
    robots: &crate::robots::RobotsRules,
) -> (Vec<url::Url>, usize) {
    let base = authority.robots_url();
    let mut skipped = 0;
    let mut files = Vec::new();
    for line in robots.sitemaps() {
        let usable = files.len() < MAX_FILES && line.len() <= MAX_LOC;
        match base
            .join(line)
            .ok()
            .filter(|u| usable && matches!(u.scheme(), "http" | "https"))
        {
            Some(url) => files.push(url),
            None => skipped += 1,
        }
    }
    if let Ok(own) = base.join("/sitemap.xml")
        && !files.contains(&own)
    {
        files.push(own);
    }
    (files, skipped)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn urlsets_indexes_text_and_gzip() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one?x=1&amp;y=2</loc><lastmod>2026-11-01</lastmod></url>
  <url><loc> http://a.test/two </loc></url>
  <url><lastmod>2026-11-02</lastmod></url>
</urlset>"#;
        let (m, e) = parse(xml);
        assert_eq!(e, None);
        assert_eq!(
            m.urls,
            [
                (
                    "http://a.test/one?x=1&y=2".into(),
                    Some("2026-11-01".into())
                ),
                ("http://a.test/two".into(), None)
            ]
        );
        let index = b"<sitemapindex><sitemap><loc>http://a.test/s1.xml</loc></sitemap>\
                      <sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap></sitemapindex>";
        let (m, _) = parse(index);
        assert_eq!(
            m.sitemaps,
            ["http://a.test/s1.xml", "http://a.test/s2.xml.gz"]
        );
        assert!(m.urls.is_empty());
        let (m, _) = parse(b"\xef\xbb\xbfhttp://a.test/a\n# no\nftp://x\nhttps://a.test/b\r\n");
        assert_eq!(m.urls.len(), 2);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(xml).unwrap();
        let (m, e) = parse(&gz.finish().unwrap());
        assert_eq!((m.urls.len(), e), (2, None));
    }

    #[test]
    fn hostile_sitemaps_are_refused_or_bounded() {
        let laughs = br#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]>
<urlset><url><loc>&lol2;</loc></url></urlset>"#;
        let (m, e) = parse(laughs);
        assert_eq!(e, Some(SitemapError::Doctype));
        assert!(m.urls.is_empty());
        // An undeclared entity is no expansion either.
        let (m, _) = parse(b"<urlset><url><loc>http://a.test/&lol;</loc></url></urlset>");
        assert_eq!(m.urls[0].0, "http://a.test/&lol;");
        // Malformed: what came before the fault is kept.
        let (m, e) =
            parse(b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>x</oops></urlset>");
        assert_eq!(m.urls.len(), 1);
        assert!(matches!(e, Some(SitemapError::Xml(_))));
        // Too many, too long, a huge attribute.
        let mut many = String::from("<urlset>");
        for i in 0..(MAX_URLS + 10) {
            many.push_str(&format!("<url><loc>http://a.test/{i}</loc></url>"));
        }
        many.push_str(&format!(
            "<url><loc>http://a.test/{}</loc></url>",
            "a".repeat(5000)
        ));
        many.push_str(&format!(
            "<url x=\"{}\"><loc>http://a.test/z</loc></url></urlset>",
            "b".repeat(1 << 20)
        ));
        let (m, e) = parse(many.as_bytes());
        assert_eq!(e, None);
        assert_eq!(m.urls.len(), MAX_URLS);
        assert_eq!(m.dropped, 12);
        assert!(parse(b"\x1f\x8bnot gzip").1.is_some());
    }
}
