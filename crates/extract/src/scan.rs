//! A tokenizer for the default extraction (links, base, meta, title) that
//! reads a page exactly as lol_html 3.0.3 does, without compiling and
//! matching selectors per page: it reports the start tags of `a`, `area`,
//! `link`, `base`, `meta` and `title` with their attributes, and the text
//! of `<title>`. It follows lol_html's state machines (`parser/state_machine`
//! in its source): tags, attributes and their quotes, comments, doctypes,
//! bogus comments, and the raw text of `<script>`, `<style>`, `<textarea>`
//! and the others the tree builder simulator switches to.
//!
//! What it does not model, it refuses with [`Unsure`] as soon as it meets
//! it, and the caller reads the page with lol_html instead: foreign content
//! (`<svg>`, `<math>`), escapes in script text (`<!--`), `<plaintext>`, the
//! markup lol_html itself stops at as ambiguous, a text element's start
//! tag that ends right after an `=`, a construct larger than lol_html
//! buffers comfortably, and pages with so many tags that lol_html's stack
//! of open elements could reach its memory limit.

use memchr::{memchr, memchr_iter, memmem};

use super::{CutShort, PageLimits};

/// Bytes read between two looks at the page's deadline (lol_html's path
/// looks between chunks of the same size).
const CHECK_EVERY: usize = 64 * 1024;
/// The longest tag or comment read here; a longer one is left to lol_html,
/// whose buffer for an unfinished construct counts against its memory
/// limit (32 MB).
const MAX_CONSTRUCT: usize = 1024 * 1024;
/// The most start tags read here; a page with more is left to lol_html,
/// whose stack of open elements counts against its memory limit.
const MAX_START_TAGS: u32 = 16 * 1024;

/// Why the scanner left a page to lol_html.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsure {
    /// `<svg>` or `<math>`: lol_html simulates foreign content.
    Foreign,
    /// `<!--` inside a script: its escaped states.
    ScriptEscape,
    /// `<plaintext>`.
    PlainText,
    /// A text element where lol_html (strict) stops as ambiguous, such as
    /// `<title>` inside `<select>`.
    Ambiguous,
    /// A text element's start tag ending in `=>`, after which lol_html
    /// goes on in data state.
    EqualsThenEnd,
    /// A tag or comment over [`MAX_CONSTRUCT`] bytes.
    LargeConstruct,
    /// More than [`MAX_START_TAGS`] start tags.
    ManyTags,
    /// A first title longer than the extraction keeps (lol_html's path
    /// cuts it chunk by chunk).
    LongTitle,
}

/// The elements reported to a [`Visitor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Element {
    /// `<a>`.
    A,
    /// `<area>`.
    Area,
    /// `<link>`.
    Link,
    /// `<base>`.
    Base,
    /// `<meta>`.
    Meta,
    /// `<title>`.
    Title,
}

/// What the scanner reports to.
pub(super) trait Visitor {
    /// A start tag of `element`, once it is complete (`>` read).
    fn start_tag(&mut self, element: Element, tag: &Tag<'_>);
    /// The raw text (character references not decoded) of a `<title>`,
    /// reported after that title's start tag; the visitor may give up.
    fn title_text(&mut self, text: &[u8]) -> Result<(), Unsure>;
}

/// A start tag's attributes, as written.
pub(super) struct Tag<'a> {
    body: &'a [u8],
    attrs: &'a [Attr],
}

impl Tag<'_> {
    /// The value of the first attribute called `name` (ASCII lower case),
    /// any case in the page; `Some("")` for one without a value. Decoded
    /// as lol_html decodes it: as UTF-8 with invalid bytes replaced, unless
    /// it starts with a byte order mark (a UTF-16 one makes it UTF-16).
    pub(super) fn get(&self, name: &str) -> Option<String> {
        self.find(name).map(|a| {
            let value = &self.body[a.value.0..a.value.1];
            encoding_rs::UTF_8.decode(value).0.into_owned()
        })
    }

    /// True if the tag has an attribute called `name` (ASCII lower case).
    pub(super) fn has(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The first attribute called `name` (ASCII lower case), any case.
    fn find(&self, name: &str) -> Option<&Attr> {
        self.attrs
            .iter()
            .find(|a| self.body[a.name.0..a.name.1].eq_ignore_ascii_case(name.as_bytes()))
    }
}

/// An attribute's name and value as byte ranges of the page.
#[derive(Debug, Clone, Copy)]
struct Attr {
    name: (usize, usize),
    value: (usize, usize),
}

/// What a start tag's name makes of the text after it, and of the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reported(Element),
    /// Text until its end tag, character references kept (`textarea`;
    /// `title` is `Reported` and read the same way).
    RcData,
    /// Text until its end tag (`style`, `iframe`, `xmp`, `noembed`,
    /// `noframes`, `noscript`).
    RawText,
    Script,
    PlainText,
    Foreign,
    Select,
    Template,
    Frameset,
    /// `input`, `keygen`: like `select` and `textarea`, they end a
    /// `<select>` for lol_html's ambiguity guard.
    EndsSelect,
    Other,
}

/// The kind of the element named `name`, any case. By length first: it
/// runs for every tag of every page.
fn kind(name: &[u8]) -> Kind {
    let is = |s: &[u8]| name.eq_ignore_ascii_case(s);
    match name.len() {
        1 if is(b"a") => Kind::Reported(Element::A),
        3 if is(b"xmp") => Kind::RawText,
        3 if is(b"svg") => Kind::Foreign,
        4 if is(b"link") => Kind::Reported(Element::Link),
        4 if is(b"meta") => Kind::Reported(Element::Meta),
        4 if is(b"area") => Kind::Reported(Element::Area),
        4 if is(b"base") => Kind::Reported(Element::Base),
        4 if is(b"math") => Kind::Foreign,
        5 if is(b"title") => Kind::Reported(Element::Title),
        5 if is(b"style") => Kind::RawText,
        5 if is(b"input") => Kind::EndsSelect,
        6 if is(b"script") => Kind::Script,
        6 if is(b"iframe") => Kind::RawText,
        6 if is(b"select") => Kind::Select,
        6 if is(b"keygen") => Kind::EndsSelect,
        7 if is(b"noembed") => Kind::RawText,
        8 if is(b"noscript") || is(b"noframes") => Kind::RawText,
        8 if is(b"textarea") => Kind::RcData,
        8 if is(b"template") => Kind::Template,
        8 if is(b"frameset") => Kind::Frameset,
        9 if is(b"plaintext") => Kind::PlainText,
        _ => Kind::Other,
    }
}

impl Kind {
    /// True for the elements whose start tag switches the text after it
    /// away from data (lol_html's `get_text_type_adjustment`).
    fn switches_text(self) -> bool {
        matches!(
            self,
            Kind::Reported(Element::Title)
                | Kind::RcData
                | Kind::RawText
                | Kind::Script
                | Kind::PlainText
        )
    }
}

/// lol_html's `AmbiguityGuard` (strict mode, its default): where it would
/// stop, the scanner gives up instead.
#[derive(Debug, Clone, Copy, Default)]
enum Guard {
    #[default]
    Default,
    InSelect,
    InTemplateInSelect(u64),
    InOrAfterFrameset,
}

impl Guard {
    fn start_tag(&mut self, kind: Kind, name: &[u8]) -> Result<(), Unsure> {
        let text = || {
            if kind.switches_text() {
                Err(Unsure::Ambiguous)
            } else {
                Ok(())
            }
        };
        match *self {
            Guard::Default => match kind {
                Kind::Select => *self = Guard::InSelect,
                Kind::Frameset => *self = Guard::InOrAfterFrameset,
                _ => {}
            },
            Guard::InSelect => match kind {
                // `textarea` is the one `RcData` element.
                Kind::Select | Kind::EndsSelect | Kind::RcData => *self = Guard::Default,
                Kind::Template => *self = Guard::InTemplateInSelect(1),
                Kind::Script => {}
                _ => text()?,
            },
            Guard::InTemplateInSelect(depth) => match kind {
                Kind::Template => *self = Guard::InTemplateInSelect(depth.saturating_add(1)),
                _ => text()?,
            },
            Guard::InOrAfterFrameset => {
                if !name.eq_ignore_ascii_case(b"noframes") {
                    text()?;
                }
            }
        }
        Ok(())
    }

    fn end_tag(&mut self, kind: Kind) {
        match (*self, kind) {
            (Guard::InSelect, Kind::Select) => *self = Guard::Default,
            (Guard::InTemplateInSelect(depth), Kind::Template) => {
                *self = if depth <= 1 {
                    Guard::InSelect
                } else {
                    Guard::InTemplateInSelect(depth - 1)
                }
            }
            _ => {}
        }
    }
}

/// How a tag ended.
struct TagEnd {
    /// The index after its `>`.
    next: usize,
    /// It ended in lol_html's `before_attribute_value_state` (`<x a=>`).
    after_equals: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | b'\x0C')
}

/// True for the bytes that end a tag's name.
fn ends_name(c: u8) -> bool {
    is_space(c) || c == b'/' || c == b'>'
}

/// Reads `body`, reporting to `visitor`, until its end or its deadline
/// (then `Ok(Some(CutShort::Time))`).
pub(super) fn scan(
    body: &[u8],
    limits: &PageLimits,
    visitor: &mut impl Visitor,
) -> Result<Option<CutShort>, Unsure> {
    Scanner {
        body,
        attrs: Vec::new(),
        guard: Guard::default(),
        start_tags: 0,
    }
    .run(limits, visitor)
}

struct Scanner<'a> {
    body: &'a [u8],
    /// The attributes of the current reported tag (reused).
    attrs: Vec<Attr>,
    guard: Guard,
    start_tags: u32,
}

impl Scanner<'_> {
    fn run(
        mut self,
        limits: &PageLimits,
        visitor: &mut impl Visitor,
    ) -> Result<Option<CutShort>, Unsure> {
        let body = self.body;
        let mut i = 0usize;
        let mut check_at = 0usize;
        loop {
            if i >= check_at {
                if limits.expired() {
                    return Ok(Some(CutShort::Time));
                }
                check_at = i.saturating_add(CHECK_EVERY);
            }
            let Some(lt) = memchr(b'<', &body[i..]).map(|p| i + p) else {
                return Ok(None);
            };
            let next = match body.get(lt + 1) {
                None => None,
                // Checks its own size and its end (the text after it may
                // be long).
                Some(c) if c.is_ascii_alphabetic() => match self.start_tag(lt, visitor)? {
                    Some(next) => {
                        i = next;
                        continue;
                    }
                    None => return Ok(None),
                },
                Some(b'!') => self.markup_declaration(lt + 2),
                Some(b'/') => self.end_tag_open(lt + 2)?,
                Some(b'?') => self.bogus_comment(lt + 2),
                // `<` then anything else is text; the other character is
                // read again as text.
                Some(_) => Some(lt + 1),
            };
            let Some(next) = next else {
                // The page ends inside a construct: lol_html drops it
                // (after buffering it).
                return self.ends_inside(lt);
            };
            i = self.sized(lt, next)?;
        }
    }

    /// The page ends inside a construct that starts at `start`: nothing
    /// more is found, unless the construct is too large to be sure of.
    fn ends_inside<T>(&self, start: usize) -> Result<Option<T>, Unsure> {
        self.sized(start, self.body.len()).map(|_| None)
    }

    /// `end`, if the construct from `start` to `end` is small enough to be
    /// sure of (lol_html buffers it whole).
    fn sized(&self, start: usize, end: usize) -> Result<usize, Unsure> {
        if end - start > MAX_CONSTRUCT {
            return Err(Unsure::LargeConstruct);
        }
        Ok(end)
    }

    /// The tag name starting at `from`: its end (the index of the space,
    /// `/` or `>` after it), `None` if the page ends first.
    fn name_end(&self, from: usize) -> Option<usize> {
        self.body[from..]
            .iter()
            .position(|&c| ends_name(c))
            .map(|p| from + p)
    }

    /// A start tag whose `<` is at `lt`; returns where reading goes on
    /// (`None`: the page ended).
    fn start_tag(
        &mut self,
        lt: usize,
        visitor: &mut impl Visitor,
    ) -> Result<Option<usize>, Unsure> {
        let body = self.body;
        let Some(name_end) = self.name_end(lt + 1) else {
            return self.ends_inside(lt);
        };
        let name = &body[lt + 1..name_end];
        let kind = kind(name);
        self.start_tags += 1;
        if self.start_tags > MAX_START_TAGS {
            return Err(Unsure::ManyTags);
        }
        self.guard.start_tag(kind, name)?;
        match kind {
            Kind::Foreign => return Err(Unsure::Foreign),
            Kind::PlainText => return Err(Unsure::PlainText),
            _ => {}
        }
        let collect = matches!(kind, Kind::Reported(_));
        let Some(end) = self.attributes(name_end, collect) else {
            return self.ends_inside(lt);
        };
        self.sized(lt, end.next)?;
        if let Kind::Reported(element) = kind {
            visitor.start_tag(
                element,
                &Tag {
                    body,
                    attrs: &self.attrs,
                },
            );
        }
        if !kind.switches_text() {
            return Ok(Some(end.next));
        }
        if end.after_equals {
            return Err(Unsure::EqualsThenEnd);
        }
        self.text_until_end_tag(end.next, name, kind, visitor)
    }

    /// The text of a text element, from `from` to its end tag (`</name`
    /// followed by a space, `/` or `>`) and past that end tag.
    fn text_until_end_tag(
        &mut self,
        from: usize,
        name: &[u8],
        kind: Kind,
        visitor: &mut impl Visitor,
    ) -> Result<Option<usize>, Unsure> {
        let body = self.body;
        let title = kind == Kind::Reported(Element::Title);
        for lt in memchr_iter(b'<', &body[from..]).map(|p| from + p) {
            let after = lt + 2 + name.len();
            let is_end = body.get(lt + 1) == Some(&b'/')
                && body
                    .get(lt + 2..after)
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
                && body.get(after).is_some_and(|&c| ends_name(c));
            if !is_end {
                continue;
            }
            if kind == Kind::Script && memmem::find(&body[from..lt], b"<!--").is_some() {
                return Err(Unsure::ScriptEscape);
            }
            if title {
                visitor.title_text(&body[from..lt])?;
            }
            let Some(end) = self.attributes(after, false) else {
                return self.ends_inside(lt);
            };
            return self.sized(lt, end.next).map(Some);
        }
        // No end tag: the text runs to the end of the page.
        if title {
            visitor.title_text(&body[from..])?;
        }
        Ok(None)
    }

    /// After `</` at `from`.
    fn end_tag_open(&mut self, from: usize) -> Result<Option<usize>, Unsure> {
        match self.body.get(from) {
            None => Ok(None),
            Some(b'>') => Ok(Some(from + 1)),
            Some(c) if c.is_ascii_alphabetic() => {
                let Some(name_end) = self.name_end(from) else {
                    return Ok(None);
                };
                let kind = kind(&self.body[from..name_end]);
                let Some(end) = self.attributes(name_end, false) else {
                    return Ok(None);
                };
                self.guard.end_tag(kind);
                Ok(Some(end.next))
            }
            Some(_) => Ok(self.bogus_comment(from)),
        }
    }

    /// After `<!` at `from`: a comment, or else a doctype, CDATA (a bogus
    /// comment outside foreign content) or bogus comment, all of which end
    /// at the first `>`.
    fn markup_declaration(&self, from: usize) -> Option<usize> {
        if self.body[from..].starts_with(b"--") {
            self.comment(from + 2)
        } else {
            self.bogus_comment(from)
        }
    }

    /// Up to the first `>` from `from`.
    fn bogus_comment(&self, from: usize) -> Option<usize> {
        memchr(b'>', &self.body[from..]).map(|p| from + p + 1)
    }

    /// A comment's text from `from` (after `<!--`): it ends at once with
    /// `>` or `->`, else at the first `>` after two or more dashes,
    /// optionally followed by `!`.
    fn comment(&self, from: usize) -> Option<usize> {
        let rest = &self.body[from..];
        if rest.starts_with(b">") {
            return Some(from + 1);
        }
        if rest.starts_with(b"->") {
            return Some(from + 2);
        }
        let mut at = 0;
        while let Some(p) = memmem::find(&rest[at..], b"--") {
            let mut k = at + p + 2;
            while rest.get(k) == Some(&b'-') {
                k += 1;
            }
            match rest.get(k) {
                Some(b'>') => return Some(from + k + 1),
                Some(b'!') if rest.get(k + 1) == Some(&b'>') => return Some(from + k + 2),
                None => return None,
                // No end inside this run of dashes either: on after it
                // (going on one byte at a time would be quadratic in it).
                Some(_) => at = k,
            }
        }
        None
    }

    /// A tag's attributes from `from` (the end of its name) to its `>`,
    /// kept in `self.attrs` when `collect`; `None` if the page ends first.
    fn attributes(&mut self, from: usize, collect: bool) -> Option<TagEnd> {
        #[derive(Clone, Copy)]
        enum S {
            BeforeName,
            Name(usize),
            AfterName((usize, usize)),
            BeforeValue((usize, usize)),
            Unquoted((usize, usize), usize),
            SelfClosing,
        }
        let body = self.body;
        self.attrs.clear();
        let push = |attrs: &mut Vec<Attr>, name, value| {
            if collect {
                attrs.push(Attr { name, value });
            }
        };
        let ended = |i: usize| TagEnd {
            next: i + 1,
            after_equals: false,
        };
        let mut state = S::BeforeName;
        let mut i = from;
        // The tag name state: `/` goes to self-closing, `>` ends.
        match body.get(i)? {
            b'/' => state = S::SelfClosing,
            b'>' => return Some(ended(i)),
            _ => {}
        }
        i += 1;
        loop {
            let c = *body.get(i)?;
            match state {
                S::BeforeName => match c {
                    b'/' => state = S::SelfClosing,
                    b'>' => return Some(ended(i)),
                    c if is_space(c) => {}
                    _ => state = S::Name(i),
                },
                S::Name(start) => match c {
                    b'=' => state = S::BeforeValue((start, i)),
                    b'/' => {
                        push(&mut self.attrs, (start, i), (i, i));
                        state = S::SelfClosing;
                    }
                    b'>' => {
                        push(&mut self.attrs, (start, i), (i, i));
                        return Some(ended(i));
                    }
                    c if is_space(c) => state = S::AfterName((start, i)),
                    _ => {}
                },
                S::AfterName(name) => match c {
                    b'/' => {
                        push(&mut self.attrs, name, (i, i));
                        state = S::SelfClosing;
                    }
                    b'=' => state = S::BeforeValue(name),
                    b'>' => {
                        push(&mut self.attrs, name, (i, i));
                        return Some(ended(i));
                    }
                    c if is_space(c) => {}
                    _ => {
                        push(&mut self.attrs, name, (i, i));
                        state = S::Name(i);
                    }
                },
                S::BeforeValue(name) => match c {
                    b'"' | b'\'' => {
                        let close = i + 1 + memchr(c, &body[i + 1..])?;
                        push(&mut self.attrs, name, (i + 1, close));
                        i = close;
                        state = S::BeforeName;
                    }
                    b'>' => {
                        push(&mut self.attrs, name, (i, i));
                        return Some(TagEnd {
                            next: i + 1,
                            after_equals: true,
                        });
                    }
                    c if is_space(c) => {}
                    _ => state = S::Unquoted(name, i),
                },
                S::Unquoted(name, start) => match c {
                    b'>' => {
                        push(&mut self.attrs, name, (start, i));
                        return Some(ended(i));
                    }
                    c if is_space(c) => {
                        push(&mut self.attrs, name, (start, i));
                        state = S::BeforeName;
                    }
                    _ => {}
                },
                S::SelfClosing => {
                    if c == b'>' {
                        return Some(ended(i));
                    }
                    // Read again as before an attribute's name.
                    state = S::BeforeName;
                    continue;
                }
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Element, Kind, kind};

    #[test]
    fn element_names_are_known_in_any_case_and_only_whole() {
        let known = [
            ("a", Kind::Reported(Element::A)),
            ("area", Kind::Reported(Element::Area)),
            ("link", Kind::Reported(Element::Link)),
            ("base", Kind::Reported(Element::Base)),
            ("meta", Kind::Reported(Element::Meta)),
            ("title", Kind::Reported(Element::Title)),
            ("textarea", Kind::RcData),
            ("style", Kind::RawText),
            ("iframe", Kind::RawText),
            ("xmp", Kind::RawText),
            ("noembed", Kind::RawText),
            ("noframes", Kind::RawText),
            ("noscript", Kind::RawText),
            ("script", Kind::Script),
            ("plaintext", Kind::PlainText),
            ("svg", Kind::Foreign),
            ("math", Kind::Foreign),
            ("select", Kind::Select),
            ("template", Kind::Template),
            ("frameset", Kind::Frameset),
            ("input", Kind::EndsSelect),
            ("keygen", Kind::EndsSelect),
        ];
        for (name, expected) in known {
            assert_eq!(kind(name.as_bytes()), expected, "{name}");
            assert_eq!(
                kind(name.to_ascii_uppercase().as_bytes()),
                expected,
                "{name}"
            );
            let mixed: String = name
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            assert_eq!(kind(mixed.as_bytes()), expected, "{mixed}");
            assert_eq!(kind(format!("{name}x").as_bytes()), Kind::Other, "{name}x");
            assert_eq!(kind(&name.as_bytes()[1..]), Kind::Other, "{name} cut");
        }
        for other in [
            "", "b", "div", "span", "abbr", "titles", "scrip", "svg\0", "\u{e9}",
        ] {
            assert_eq!(kind(other.as_bytes()), Kind::Other, "{other}");
        }
    }
}
