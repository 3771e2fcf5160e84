//! The page's text as a reader sees it (`--text`), collected while the
//! [`HtmlExtractor`](super::HtmlExtractor) streams a page through lol_html.
//!
//! Left out: the text of `<script>`, `<style>`, `<noscript>` and the other
//! raw-text elements, of `<title>` and `<textarea>`, and everything inside
//! `<template>` or an element with the `hidden` attribute (one whose end tag
//! never comes hides the rest of the page). Block elements ([`kind`]) end
//! a line, table cells are apart by a space;
//! whitespace inside a line is collapsed to one space, and there is no empty
//! line, nor a line break at the start or the end. Character references are
//! decoded. The text keeps at most its cap in bytes, cut at a character
//! boundary.

use std::borrow::Cow;

use super::entities::decode;

/// The most bytes of text handed on at once (a gap between two tags may be
/// the whole page).
const SLICE: usize = 64 * 1024;

/// How an element bears on the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// It starts and ends a line (`<br>` and `<hr>` only end one).
    Block,
    /// A table cell, apart from its neighbours by a space.
    Cell,
    /// It hides its content (`<template>`, any with `hidden`, and the
    /// elements whose content is not markup: `<script>`, `<style>`,
    /// `<noscript>`, `<title>`, `<textarea>`, …).
    Hides,
    /// Inline: no bearing.
    Inline,
}

/// How element `tag` (lower case) bears on the text; `hidden` when it has
/// the `hidden` attribute.
pub(crate) fn kind(tag: &str, hidden: bool) -> Kind {
    if hidden {
        return Kind::Hides;
    }
    match tag {
        "template" | "script" | "style" | "noscript" | "title" | "textarea" | "xmp" | "iframe"
        | "noembed" | "noframes" | "plaintext" => Kind::Hides,
        "address" | "article" | "aside" | "blockquote" | "body" | "br" | "caption" | "dd"
        | "details" | "dialog" | "div" | "dl" | "dt" | "fieldset" | "figcaption" | "figure"
        | "footer" | "form" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "header" | "hgroup"
        | "hr" | "li" | "main" | "nav" | "ol" | "p" | "pre" | "section" | "summary" | "table"
        | "tr" | "ul" => Kind::Block,
        "td" | "th" => Kind::Cell,
        _ => Kind::Inline,
    }
}

/// The longest character reference [`decode`] decodes, `&` and `;` included:
/// a text chunk ending in an unfinished one keeps it for the next chunk.
const MAX_REFERENCE: usize = 13;

/// The text of one page, built as it streams through: the element handler
/// reports every start tag and the end tags of blocks and hiding elements
/// with their places in the page, and the text is read from the page
/// between them (lol_html's text handler would make it lex every byte of
/// text, which cost half the crawl's throughput).
pub(crate) struct Text {
    body: bytes::Bytes,
    /// Where the page's text not read yet starts.
    pos: usize,
    max: usize,
    out: String,
    /// An unfinished character reference at the end of the last chunk.
    carry: String,
    /// Elements hiding their content that are open.
    hidden: u32,
    /// Whitespace came since the last word.
    space: bool,
    /// A line ended since the last word.
    newline: bool,
    cut: bool,
}

impl Text {
    /// An empty text that keeps at most `max` bytes, with room for
    /// `expected` (a page's text is shorter than the page).
    pub(crate) fn new(max: usize, body: bytes::Bytes) -> Self {
        Self {
            max,
            out: String::with_capacity(body.len().min(max)),
            body,
            pos: 0,
            carry: String::new(),
            hidden: 0,
            space: false,
            newline: false,
            cut: false,
        }
    }

    /// Reads the page's text up to byte `at` (where a tag starts).
    pub(crate) fn read_to(&mut self, at: usize) {
        let end = at.min(self.body.len());
        if end <= self.pos {
            return;
        }
        let start = std::mem::replace(&mut self.pos, end);
        if self.hidden > 0 || self.cut {
            return;
        }
        let body = self.body.clone();
        let raw = String::from_utf8_lossy(&body[start..end]);
        let text = strip_markup(&raw);
        let mut rest: &str = &text;
        while !rest.is_empty() && !self.cut {
            // SLICE is far above a character's 4 bytes: never an empty slice.
            let (slice, after) = rest.split_at(crawlkeeper_model::text::cut_at(rest, SLICE).len());
            self.on_text(slice, true, after.is_empty());
            rest = after;
        }
    }

    /// Skips the page up to byte `at` (where a tag ends).
    pub(crate) fn skip_to(&mut self, at: usize) {
        self.pos = self.pos.max(at.min(self.body.len()));
    }

    /// True when text now is hidden.
    pub(crate) fn is_hidden(&self) -> bool {
        self.hidden > 0
    }

    /// An element hiding its content starts.
    pub(crate) fn hide(&mut self) {
        self.flush_carry();
        self.hidden = self.hidden.saturating_add(1);
    }

    /// An element hiding its content ends.
    pub(crate) fn unhide(&mut self) {
        self.flush_carry();
        self.hidden = self.hidden.saturating_sub(1);
    }

    /// A block element starts or ends: the next word goes on a new line.
    pub(crate) fn block(&mut self) {
        if self.hidden == 0 {
            self.flush_carry();
            self.newline = !self.out.is_empty();
        }
    }

    /// A table cell starts: the next word is apart from the last.
    pub(crate) fn gap(&mut self) {
        if self.hidden == 0 {
            self.flush_carry();
            self.space = true;
        }
    }

    /// A chunk of text as written in the page; `references` when character
    /// references in it are decoded, `last` when it ends its text node.
    pub(crate) fn on_text(&mut self, raw: &str, references: bool, last: bool) {
        if self.hidden > 0 || self.cut {
            return;
        }
        if !references {
            self.flush_carry();
            self.push_words(raw);
            return;
        }
        let joined: Cow<'_, str> = if self.carry.is_empty() {
            Cow::Borrowed(raw)
        } else {
            let mut j = std::mem::take(&mut self.carry);
            j.push_str(raw);
            Cow::Owned(j)
        };
        let (ready, rest) = if last {
            (&joined[..], "")
        } else {
            split_unfinished_reference(&joined)
        };
        let decoded = decode(ready);
        self.push_words(&decoded);
        self.carry.push_str(rest);
    }

    /// Adds a kept carry as it is (a reference it began never finished).
    fn flush_carry(&mut self) {
        if !self.carry.is_empty() {
            let carry = std::mem::take(&mut self.carry);
            self.push_words(&decode(&carry));
        }
    }

    /// Adds `s`'s words, each after a space or a line break when whitespace
    /// or a block came before it. (Scans bytes: splitting on
    /// `char::is_whitespace` was the most costly step of `--text`.)
    fn push_words(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && !self.cut {
            let gap = i;
            while let Some(n) = whitespace_at(s, i) {
                i += n;
            }
            if i > gap {
                self.space = true;
            }
            // Words apart by one space each are copied at once, as one.
            let word = i;
            while i < bytes.len() {
                let b = bytes[i];
                if b == b' ' {
                    if i > word && whitespace_at(s, i + 1).is_none() && i + 1 < bytes.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
                if b < 0x80 {
                    if matches!(b, b'\t'..=b'\r') {
                        break;
                    }
                    i += 1;
                } else if whitespace_at(s, i).is_some() {
                    break;
                } else {
                    i += utf8_len(b);
                }
            }
            if i == word {
                continue;
            }
            if !self.out.is_empty() {
                if self.newline {
                    self.push("\n");
                } else if self.space {
                    self.push(" ");
                }
            }
            self.newline = false;
            self.space = false;
            self.push(&s[word..i]);
        }
    }

    /// Appends `s` as far as the cap allows.
    fn push(&mut self, s: &str) {
        if self.cut {
            return;
        }
        let room = self.max.saturating_sub(self.out.len());
        if s.len() <= room {
            self.out.push_str(s);
            return;
        }
        self.out.push_str(crawlkeeper_model::text::cut_at(s, room));
        self.cut = true;
    }

    /// The text, and whether it lost anything to its cap; `complete` when
    /// the parser read the whole page (the text after the last tag is read
    /// only then).
    pub(crate) fn finish(mut self, complete: bool) -> (String, bool) {
        if complete {
            self.read_to(self.body.len());
        }
        self.flush_carry();
        // A separator kept just before the cap is not text.
        let end = self.out.trim_end().len();
        self.out.truncate(end);
        (self.out, self.cut)
    }
}

/// The length of the whitespace character (`char::is_whitespace`) at byte
/// `i` of `s`, if it is one; `i` is at a character boundary or the end.
fn whitespace_at(s: &str, i: usize) -> Option<usize> {
    let b = *s.as_bytes().get(i)?;
    if b < 0x80 {
        return matches!(b, b' ' | b'\t'..=b'\r').then_some(1);
    }
    let c = s[i..].chars().next()?;
    c.is_whitespace().then(|| c.len_utf8())
}

/// The length of the UTF-8 sequence a leading byte `b` starts.
fn utf8_len(b: u8) -> usize {
    match b {
        0..0x80 => 1,
        0xE0..0xF0 => 3,
        0xF0.. => 4,
        _ => 2,
    }
}

/// `s`, text between two elements' tags, without the markup it may hold
/// still: comments, end tags of inline elements, a doctype.
fn strip_markup(s: &str) -> Cow<'_, str> {
    if !s.contains('<') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let tail = &rest[lt..];
        let skip = if let Some(comment) = tail.strip_prefix("<!--") {
            comment.find("-->").map_or(tail.len(), |e| e + 7)
        } else if tail[1..].starts_with(['!', '/', '?']) {
            tail.find('>').map_or(tail.len(), |e| e + 1)
        } else {
            out.push('<');
            1
        };
        rest = &tail[skip..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// `s` split before a character reference it ends in that is not finished
/// (an `&` close to the end with no `;` after it).
fn split_unfinished_reference(s: &str) -> (&str, &str) {
    match s.rfind('&') {
        Some(amp) if s.len() - amp < MAX_REFERENCE && !s[amp..].contains(';') => s.split_at(amp),
        _ => (s, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::html::tests_support::{extract_page, extractor};
    use crate::extract::{CutShort, FieldValue};
    use std::time::{Duration, Instant};

    fn text_of(html: &str) -> String {
        text_with(html, 1024 * 1024).0
    }

    /// The text of `html` with a cap of `max`, and whether it was cut.
    fn text_with(html: &str, max: u64) -> (String, bool) {
        let x = extractor(&[], false, false, Some(max));
        let out = extract_page(&x, html.as_bytes(), Duration::from_secs(60));
        match out.fields.get("text") {
            Some(FieldValue::One(t)) => (t.clone(), out.fields_cut.contains("text")),
            other => panic!("text: {other:?}"),
        }
    }

    #[test]
    fn scripts_styles_templates_noscript_and_hidden_elements_are_left_out() {
        let html = r#"<html><head><title>T</title><style>p { color: red }</style>
            <script>var a = "<p>no</p>";</script></head><body>
            <p>one</p><noscript><p>enable js</p></noscript>
            <template><p>tpl</p></template>
            <div hidden>secret <b>bold</b> <div>inner</div> tail</div>
            <p>two <span hidden="">h</span>three</p><img hidden><p>four</p>
            <textarea>typed</textarea></body></html>"#;
        assert_eq!(text_of(html), "one\ntwo three\nfour");
    }

    #[test]
    fn blocks_end_lines_cells_are_apart_and_whitespace_collapses() {
        let html = "<h1>  Title\n  here </h1>intro <b>bold</b><i>it</i>\n\n<ul><li>a</li><li>b\
            <li>c</ul><table><tr><td>1</td><td>2</td></tr><tr><th>3</th></tr></table>\
            line<br>break<br><br><br>x<div><div><p></p></div></div>end";
        assert_eq!(
            text_of(html),
            "Title here\nintro boldit\na\nb\nc\n1 2\n3\nline\nbreak\nx\nend"
        );
        assert_eq!(text_of("<p>\n</p>  <div> </div>"), "", "no blank lines");
    }

    #[test]
    fn references_are_decoded_even_across_chunks() {
        assert_eq!(
            text_of("<p>Tom &amp; Jerry &lt;3 &#233;t&#xE9; &nbsp;x &unknown; a&b</p>"),
            "Tom & Jerry <3 été x &unknown; a&b"
        );
        // A reference split by the parser's 64 KiB chunks is still decoded.
        for pad in 65_520..65_540 {
            let html = format!("<p>{}</p><p>x &amp; y</p>", "a".repeat(pad));
            let text = text_of(&html);
            assert!(
                text.ends_with("\nx & y"),
                "{pad}: {}",
                &text[text.len() - 10..]
            );
        }
        let mut one = Text::new(100, bytes::Bytes::new());
        one.on_text("a &am", true, false);
        one.on_text("p; b &", true, false);
        one.on_text("#233", true, true);
        assert_eq!(one.finish(true).0, "a & b &#233");
    }

    #[test]
    fn words_split_on_every_unicode_space_as_before() {
        let s = "a\u{a0}b\u{3000}c\u{2028}d\te\u{b}f\u{1c}g é\u{85}ü  \n";
        let mut t = Text::new(1000, bytes::Bytes::new());
        t.on_text(s, false, true);
        let want: Vec<&str> = s
            .split(char::is_whitespace)
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(t.finish(true).0, want.join(" "));
    }

    #[test]
    fn markup_left_between_tags_is_not_text() {
        assert_eq!(
            text_of("<!DOCTYPE html><p>a <!-- <p>x</p> --> b</p><p>c < d <![CDATA[e]]> f</p>"),
            "a b\nc < d f"
        );
        assert_eq!(strip_markup("a </b> c <!-- x"), "a  c ");
    }

    #[test]
    fn max_text_cuts_at_a_character_boundary_and_says_so() {
        let html = format!("<p>{}</p>", "é".repeat(100));
        let (text, cut) = text_with(&html, 51);
        assert_eq!((text.len(), cut), (50, true));
        let (text, cut) = text_with("<p>abc</p><p>def</p>", 6);
        assert_eq!((text.as_str(), cut), ("abc\nde", true));
        let (text, cut) = text_with("<p>abc</p><p>def</p>", 7000);
        assert_eq!((text.as_str(), cut), ("abc\ndef", false));
    }

    #[test]
    fn an_element_hiding_its_content_never_closed_hides_to_the_end() {
        assert_eq!(text_of("<p>a</p><div hidden><p>b</p><p>c"), "a");
        assert_eq!(text_of("<p>a</p><noscript><p>b</p><p>c"), "a");
        assert_eq!(text_of("<p>a</p><template>b"), "a");
        // A void element with `hidden` hides nothing after it (and a hidden
        // `<br>` breaks no line).
        assert_eq!(
            text_of("<p>a<br hidden>b<input hidden>c<br>d</p>"),
            "abc\nd"
        );
    }

    #[test]
    fn a_hundred_megabytes_of_text_stays_bounded_and_within_the_deadline() {
        let mut html = b"<p>".to_vec();
        html.resize(100 * 1024 * 1024, b'a');
        let x = extractor(&[], false, false, Some(1024 * 1024));
        let started = Instant::now();
        let out = extract_page(&x, &html, Duration::from_secs(1));
        let took = started.elapsed();
        let text = match out.fields.get("text") {
            Some(FieldValue::One(t)) => t,
            other => panic!("{other:?}"),
        };
        assert!(text.len() <= 1024 * 1024, "{}", text.len());
        assert!(
            out.fields_cut.contains("text") || out.cut_short == Some(CutShort::Time),
            "cut or stopped"
        );
        // The deadline is checked between 64 KiB chunks.
        assert!(took < Duration::from_secs(3), "{took:?}");
    }

    #[test]
    fn without_text_there_is_no_text_field() {
        let x = extractor(&[], false, false, None);
        let out = extract_page(&x, b"<p>x</p>", Duration::from_secs(60));
        assert!(out.fields.is_empty());
    }
}
