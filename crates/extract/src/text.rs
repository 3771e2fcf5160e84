//! The page's text as a reader sees it (`--text`), read by a scanner of its
//! own in step with the [`HtmlExtractor`](super::HtmlExtractor)'s lol_html
//! pass (which has no handler for it).
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

use super::entities::{MAX_NAMED_REFERENCE, decode_text as decode};
use super::markup::{
    Lower, after_gt, attributes, is_raw_text, is_void, raw_text_end, tag_name_end,
};

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

/// True for the HTML start tags that end foreign content (`<svg><p>`
/// leaves the `<svg>`), as the tree builder's rules for them say.
fn breaks_out_of_foreign(tag: &str) -> bool {
    matches!(
        tag,
        "b" | "big"
            | "blockquote"
            | "body"
            | "br"
            | "center"
            | "code"
            | "dd"
            | "div"
            | "dl"
            | "dt"
            | "em"
            | "embed"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "head"
            | "hr"
            | "i"
            | "img"
            | "li"
            | "listing"
            | "menu"
            | "meta"
            | "nobr"
            | "ol"
            | "p"
            | "pre"
            | "ruby"
            | "s"
            | "small"
            | "span"
            | "strong"
            | "strike"
            | "sub"
            | "sup"
            | "table"
            | "tt"
            | "u"
            | "ul"
            | "var"
    )
}

/// The longest character reference [`decode`] decodes, `&` and `;` included:
/// a text chunk ending in an unfinished one keeps it for the next chunk.
const MAX_REFERENCE: usize = MAX_NAMED_REFERENCE;

/// The text of one page, read by a scanner of its own that walks the page
/// once, in step with the parser's chunks ([`Text::advance`]): it finds
/// the tags with a byte search for `<`, skips comments, doctypes and the
/// content of raw-text elements, and reads the text between the tags.
/// (An element handler lol_html would call for every element cost a
/// quarter of the crawl's throughput, with its selector matching and
/// dispatch.) Linear in the page: every step moves on, no byte is read
/// twice but by the searches that ended a step.
pub(crate) struct Text {
    body: bytes::Bytes,
    /// Where the page not scanned yet starts.
    pos: usize,
    /// Where the next `<` at or after `pos` is (the page's length if there
    /// is none), once searched for.
    next_lt: Option<usize>,
    max: usize,
    out: String,
    /// An unfinished character reference at the end of the last chunk.
    carry: String,
    /// The element hiding its content that is open (its name in lower
    /// case), and how many elements of that name are open in it, itself
    /// included: what is inside is hidden whatever it is.
    hiding: Option<(Vec<u8>, u32)>,
    /// `<svg>` and `<math>` elements open: inside them no element's content
    /// is raw text (a `<title>` or `<style>` there holds markup and ends
    /// with the `<svg>` at the latest).
    foreign: u32,
    /// The hiding element opened inside foreign content.
    hiding_foreign: bool,
    /// Whitespace came since the last word.
    space: bool,
    /// A line ended since the last word.
    newline: bool,
    cut: bool,
}

impl Text {
    /// An empty text of page `body` that keeps at most `max` bytes.
    pub(crate) fn new(max: usize, body: bytes::Bytes) -> Self {
        Self {
            max,
            out: String::with_capacity(body.len().min(max)),
            body,
            pos: 0,
            next_lt: None,
            carry: String::new(),
            hiding: None,
            foreign: 0,
            hiding_foreign: false,
            space: false,
            newline: false,
            cut: false,
        }
    }

    /// Scans the page up to byte `limit` at least (a tag or a raw-text
    /// element that starts before it is read whole; text is read up to the
    /// character boundary before it).
    pub(crate) fn advance(&mut self, limit: usize) {
        let body = self.body.clone();
        let b: &[u8] = &body;
        let limit = limit.min(b.len());
        while self.pos < limit {
            if self.cut {
                // Nothing more can be kept.
                self.pos = b.len();
                return;
            }
            let start = self.pos;
            let lt = match self.next_lt {
                Some(lt) if lt >= start => lt,
                _ => {
                    let lt = memchr::memchr(b'<', &b[start..]).map_or(b.len(), |i| start + i);
                    self.next_lt = Some(lt);
                    lt
                }
            };
            if lt > start {
                // Text, up to the limit when the next tag is beyond it (at a
                // character boundary: never inside a UTF-8 sequence).
                let mut end = lt;
                if lt > limit {
                    end = limit;
                    while end > start && b.get(end).is_some_and(|&c| c & 0xC0 == 0x80) {
                        end -= 1;
                    }
                    if end == start {
                        end = lt;
                    }
                }
                self.read(&b[start..end], end == lt);
                self.pos = end;
                continue;
            }
            self.flush_carry();
            self.pos = self.markup(b, lt);
        }
    }

    /// Reads `raw`, text of the page; `last` when a tag or the page's end
    /// comes right after it.
    fn read(&mut self, raw: &[u8], last: bool) {
        if self.hiding.is_some() || self.cut {
            return;
        }
        // Plain ASCII words without a reference in them (the common case)
        // go in at once, before any other pass over them.
        if self.carry.is_empty() && self.push_plain(raw, false) {
            return;
        }
        // Valid UTF-8 (the common case) is checked at its fast pace.
        let raw = match std::str::from_utf8(raw) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        let mut rest: &str = &raw;
        while !rest.is_empty() && !self.cut {
            // SLICE is far above a character's 4 bytes: never an empty slice.
            let (slice, after) = rest.split_at(crawlkeeper_model::text::cut_at(rest, SLICE).len());
            self.on_text(slice, true, last && after.is_empty());
            rest = after;
        }
    }

    /// The markup at `lt` (a `<`): what it does to the text; where the page
    /// after it starts.
    fn markup(&mut self, b: &[u8], lt: usize) -> usize {
        let end = b.len();
        match b.get(lt + 1) {
            Some(b'!') => {
                if b.get(lt + 2..lt + 4) == Some(b"--") {
                    let from = lt + 4;
                    // `<!-->` and `<!--->` are empty comments.
                    match b.get(from..) {
                        Some([b'>', ..]) => from + 1,
                        Some([b'-', b'>', ..]) => from + 2,
                        _ => memchr::memmem::find(&b[from.min(end)..], b"-->")
                            .map_or(end, |i| from + i + 3),
                    }
                } else {
                    after_gt(b, lt + 2)
                }
            }
            Some(b'?') => after_gt(b, lt + 1),
            Some(b'/') => match b.get(lt + 2) {
                Some(c) if c.is_ascii_alphabetic() => self.end_tag(b, lt + 2),
                Some(b'>') => lt + 3,
                Some(_) => after_gt(b, lt + 2),
                None => {
                    self.read(b"</", true);
                    end
                }
            },
            Some(c) if c.is_ascii_alphabetic() => self.start_tag(b, lt + 1),
            // Not markup: a `<` of the text.
            _ => {
                self.read(b"<", true);
                lt + 1
            }
        }
    }

    /// The start tag whose name starts at `at`; where the page after it
    /// starts (after the content of a raw-text element).
    fn start_tag(&mut self, b: &[u8], at: usize) -> usize {
        let name_end = tag_name_end(b, at);
        let name = &b[at..name_end];
        let Some((after, hidden)) = attributes(b, name_end) else {
            // A tag the page ends in is no tag, and no text.
            return b.len();
        };
        let lower = Lower::new(name);
        let lower = lower.as_str();
        if lower == "plaintext" && self.foreign == 0 {
            return b.len();
        }
        let self_closing = after >= 2 && b[after - 2] == b'/';
        if self.foreign > 0 && breaks_out_of_foreign(lower) && !self.hiding_foreign {
            self.foreign = 0;
        }
        if matches!(lower, "svg" | "math") && !self_closing {
            self.foreign = self.foreign.saturating_add(1);
        }
        let raw = self.foreign == 0 && is_raw_text(lower);
        if let Some((open, depth)) = &mut self.hiding {
            if !raw && open.eq_ignore_ascii_case(name) && !is_void(lower) {
                *depth = depth.saturating_add(1);
            }
        } else {
            match kind(lower, hidden) {
                Kind::Block => self.block(),
                Kind::Cell => self.gap(),
                Kind::Hides if !(raw || is_void(lower) || self.foreign > 0 && self_closing) => {
                    self.hiding = Some((name.to_ascii_lowercase(), 1));
                    self.hiding_foreign = self.foreign > 0;
                }
                Kind::Hides | Kind::Inline => {}
            }
        }
        if raw {
            raw_text_end(b, after, name)
        } else {
            after
        }
    }

    /// The end tag whose name starts at `at`; where the page after it
    /// starts.
    fn end_tag(&mut self, b: &[u8], at: usize) -> usize {
        let name_end = tag_name_end(b, at);
        let name = &b[at..name_end];
        let Some((after, _)) = attributes(b, name_end) else {
            return b.len();
        };
        let lower = Lower::new(name);
        if self.foreign > 0 && matches!(lower.as_str(), "svg" | "math") {
            self.foreign -= 1;
            // The end of the `<svg>` ends what was open in it.
            if self.hiding_foreign && self.foreign == 0 {
                self.hiding = None;
                self.hiding_foreign = false;
            }
        }
        if let Some((open, depth)) = &mut self.hiding {
            if open.eq_ignore_ascii_case(name) {
                *depth = depth.saturating_sub(1);
                if *depth == 0 {
                    self.hiding = None;
                    self.hiding_foreign = false;
                }
            }
        } else if kind(lower.as_str(), false) == Kind::Block {
            self.block();
        }
        after
    }

    /// A block element starts or ends: the next word goes on a new line.
    fn block(&mut self) {
        self.flush_carry();
        self.newline = !self.out.is_empty();
    }

    /// A table cell starts: the next word is apart from the last.
    fn gap(&mut self) {
        self.flush_carry();
        self.space = true;
    }

    /// A chunk of text as written in the page; `references` when character
    /// references in it are decoded, `last` when it ends its text node.
    pub(crate) fn on_text(&mut self, raw: &str, references: bool, last: bool) {
        if self.hiding.is_some() || self.cut {
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
        if !self.push_plain(s.as_bytes(), true) {
            self.push_any_words(s);
        }
    }

    /// [`Text::push_words`] for any text.
    fn push_any_words(&mut self, s: &str) {
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
            loop {
                // The common case first: printable ASCII, one test a byte.
                while bytes.get(i).is_some_and(|&b| is_graphic(b)) {
                    i += 1;
                }
                let Some(&b) = bytes.get(i) else { break };
                if b == b' ' {
                    let next = bytes.get(i + 1).copied();
                    if i > word
                        && (next.is_some_and(is_graphic)
                            || (next.is_some() && whitespace_at(s, i + 1).is_none()))
                    {
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
            self.push_word(&s[word..i]);
        }
    }

    /// Adds `word` (or words apart by single spaces) after a line break or
    /// a space if one came before it.
    fn push_word(&mut self, word: &str) {
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

    /// [`Text::push_words`] at the pace of a vectorised scan for the common
    /// case, text whose words are printable ASCII apart by single spaces
    /// (with any ASCII whitespace around them), and without `&` unless
    /// `amp` (text of the page, whose references are not decoded yet):
    /// true when `b` was such text and is added.
    fn push_plain(&mut self, b: &[u8], amp: bool) -> bool {
        let is_space = |c: &u8| matches!(c, b' ' | b'\t'..=b'\r');
        let lead = b.iter().position(|c| !is_space(c)).unwrap_or(b.len());
        let end = b.iter().rposition(|c| !is_space(c)).map_or(lead, |i| i + 1);
        let words = &b[lead..end];
        // Folds without an early exit vectorise (a memmem searcher for the
        // double space cost more to build than the scan).
        let plain = words.iter().fold(true, |ok, &c| {
            ok & (c.wrapping_sub(b' ') < 0x5F) & (amp | (c != b'&'))
        });
        let single_spaces = words
            .iter()
            .zip(words.iter().skip(1))
            .fold(true, |ok, (&a, &b)| ok & !(a == b' ' && b == b' '));
        if !(plain && single_spaces) {
            return false;
        }
        // Printable ASCII is UTF-8: this cannot fail.
        let Ok(words) = std::str::from_utf8(words) else {
            return false;
        };
        if lead > 0 {
            self.space = true;
        }
        if !words.is_empty() {
            self.push_word(words);
        }
        if end < b.len() {
            self.space = true;
        }
        true
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
    /// the whole page was read (the page is scanned to its end only then).
    pub(crate) fn finish(mut self, complete: bool) -> (String, bool) {
        if complete {
            self.advance(self.body.len());
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

/// True for printable ASCII but the space (and DEL): never whitespace.
fn is_graphic(b: u8) -> bool {
    b.wrapping_sub(0x21) < 0x5F
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

/// `s` split before a character reference it ends in that is not finished
/// (an `&` close to the end with no `;` after it).
fn split_unfinished_reference(s: &str) -> (&str, &str) {
    match s.rfind('&') {
        Some(amp) if s.len() - amp < MAX_REFERENCE && !s[amp..].contains(';') => s.split_at(amp),
        _ => (s, ""),
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
