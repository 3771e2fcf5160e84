//! The page's text as a reader sees it (`--text`), collected while the
//! [`HtmlExtractor`](super::HtmlExtractor) streams a page through lol_html.
//!
//! Left out: the text of `<script>`, `<style>`, `<noscript>` and the other
//! raw-text elements, of `<title>` and `<textarea>`, and everything inside
//! `<template>` or an element with the `hidden` attribute (one whose end tag
//! never comes hides the rest of the page). Block elements
//! ([`BLOCKS`]) end a line, table cells ([`CELLS`]) are apart by a space;
//! whitespace inside a line is collapsed to one space, and there is no empty
//! line, nor a line break at the start or the end. Character references are
//! decoded. The text keeps at most its cap in bytes, cut at a character
//! boundary.

use std::borrow::Cow;

use super::entities::decode;

/// The elements that start and end a line (`<br>` and `<hr>` only end one).
pub(crate) const BLOCKS: &str = "address, article, aside, blockquote, body, br, caption, dd, \
    details, dialog, div, dl, dt, fieldset, figcaption, figure, footer, form, h1, h2, h3, h4, \
    h5, h6, header, hgroup, hr, li, main, nav, ol, p, pre, section, summary, table, tr, ul";

/// Table cells, apart from their neighbours by a space.
pub(crate) const CELLS: &str = "td, th";

/// What hides its content, whatever it is.
pub(crate) const HIDDEN: &str = "template, [hidden]";

/// The longest character reference [`decode`] decodes, `&` and `;` included:
/// a text chunk ending in an unfinished one keeps it for the next chunk.
const MAX_REFERENCE: usize = 13;

/// The text of one page, built as it streams through.
pub(crate) struct Text {
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
    /// An empty text that keeps at most `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            out: String::new(),
            carry: String::new(),
            hidden: 0,
            space: false,
            newline: false,
            cut: false,
        }
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
    /// or a block came before it.
    fn push_words(&mut self, s: &str) {
        for (i, word) in s.split(char::is_whitespace).enumerate() {
            if i > 0 {
                self.space = true;
            }
            if word.is_empty() || self.cut {
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
            self.push(word);
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
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.out.push_str(&s[..end]);
        self.cut = true;
    }

    /// The text, and whether it lost anything to its cap.
    pub(crate) fn finish(mut self) -> (String, bool) {
        self.flush_carry();
        // A separator kept just before the cap is not text.
        let end = self.out.trim_end().len();
        self.out.truncate(end);
        (self.out, self.cut)
    }
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
        let mut one = Text::new(100);
        one.on_text("a &am", true, false);
        one.on_text("p; b &", true, false);
        one.on_text("#233", true, true);
        assert_eq!(one.finish().0, "a & b &#233");
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
        // A void element with `hidden` hides nothing after it.
        assert_eq!(text_of("<p>a<br hidden>b<input hidden>c</p>"), "a\nbc");
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
