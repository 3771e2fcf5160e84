//! Fields by CSS selector (`--extract 'NAME=SELECTOR[@attr|::text|::html]'`):
//! the specs as configured, and what collects their values while the
//! [`HtmlExtractor`](super::HtmlExtractor) streams a page through lol_html.
//!
//! A page is hostile input: a field keeps at most [`MAX_FIELD_VALUES`]
//! values of at most [`MAX_VALUE_BYTES`] bytes each, and a page's fields
//! together at most [`MAX_PAGE_FIELD_BYTES`]; a field that lost anything to
//! a cap is named in [`Extracted::fields_cut`](super::Extracted::fields_cut).

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The most values one field keeps from a page (`NAME[]`).
pub const MAX_FIELD_VALUES: usize = 1_000;
/// The most bytes one value keeps (of the source text, before entities are
/// decoded and whitespace collapsed).
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// The most bytes a page's fields keep together.
pub const MAX_PAGE_FIELD_BYTES: usize = 1024 * 1024;

/// Attributes whose values are URLs, resolved against the page's base.
const URL_ATTRIBUTES: [&str; 5] = ["href", "src", "action", "poster", "data"];

/// What a field takes from each element its selector matches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Take {
    /// The element's text, entities decoded and whitespace collapsed
    /// (`::text`, the default). Text in `<script>`, `<style>` and other raw
    /// text elements is left out.
    Text,
    /// The element's inner HTML as written in the page, between the end of
    /// its start tag and the start of its end tag (`::html`).
    Html,
    /// An attribute's value, entities decoded (`@name`); a URL attribute
    /// (`href`, `src`, `action`, `poster`, `data`) is resolved against the
    /// page's base.
    Attr(String),
}

/// One field to take from every HTML page: `NAME=SELECTOR[@attr|::text|::html]`,
/// or `NAME[]=…` for every match instead of the first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// The field's name in the record's `fields`.
    pub name: String,
    /// The CSS selector, as lol_html supports them.
    pub selector: String,
    /// What is taken from each matched element.
    pub take: Take,
    /// Keep every match (a list) rather than the first (a string).
    pub all: bool,
}

/// Why a field spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldSpecError {
    /// No `=` between the name and the selector.
    #[error("'{0}': expected NAME=SELECTOR[@attr|::text|::html]")]
    NoName(String),
    /// The name is empty or has characters other than letters, digits, `_`, `-` and `.`.
    #[error("'{0}': a field name is letters, digits, '_', '-' and '.', optionally followed by []")]
    BadName(String),
    /// The `@` names no attribute.
    #[error("'{0}': '@' must be followed by an attribute name")]
    BadAttribute(String),
    /// lol_html's parser refused the selector (it reports no position).
    #[error("'{spec}': selector '{selector}' does not parse: {error}")]
    BadSelector {
        /// The whole spec.
        spec: String,
        /// The selector part.
        selector: String,
        /// lol_html's message.
        error: String,
    },
}

impl FieldSpec {
    /// The spec in its command-line form.
    pub fn to_arg(&self) -> String {
        let suffix = match &self.take {
            Take::Text => "::text".to_owned(),
            Take::Html => "::html".to_owned(),
            Take::Attr(a) => format!("@{a}"),
        };
        let brackets = if self.all { "[]" } else { "" };
        format!("{}{brackets}={}{suffix}", self.name, self.selector)
    }

    /// Checks the name and compiles the selector.
    pub(crate) fn compile(&self) -> Result<lol_html::Selector, FieldSpecError> {
        if !valid_name(&self.name) {
            return Err(FieldSpecError::BadName(self.to_arg()));
        }
        if let Take::Attr(a) = &self.take
            && !valid_attribute(a)
        {
            return Err(FieldSpecError::BadAttribute(self.to_arg()));
        }
        self.selector
            .parse::<lol_html::Selector>()
            .map_err(|e| FieldSpecError::BadSelector {
                spec: self.to_arg(),
                selector: self.selector.clone(),
                error: e.to_string().trim_end_matches('.').to_owned(),
            })
    }

    /// True when the value is a URL to resolve against the page's base.
    pub(crate) fn is_url(&self) -> bool {
        matches!(&self.take, Take::Attr(a) if URL_ATTRIBUTES.iter().any(|u| u.eq_ignore_ascii_case(a)))
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn valid_attribute(a: &str) -> bool {
    !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':'))
}

impl FromStr for FieldSpec {
    type Err = FieldSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| FieldSpecError::NoName(s.to_owned()))?;
        let name = name.trim();
        let (name, all) = match name.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (name, false),
        };
        if !valid_name(name) {
            return Err(FieldSpecError::BadName(s.to_owned()));
        }
        let rest = rest.trim();
        let (selector, take) = if let Some(sel) = rest.strip_suffix("::text") {
            (sel, Take::Text)
        } else if let Some(sel) = rest.strip_suffix("::html") {
            (sel, Take::Html)
        } else {
            // `@attr` at the end; an `@` inside `[...]` or quotes is part of
            // the selector, which the characters after it then show.
            match rest.rfind('@') {
                Some(at) if !rest[at + 1..].contains([']', '"', '\'', ' ', ')', '>', '+', '~']) => {
                    let attr = &rest[at + 1..];
                    if !valid_attribute(attr) {
                        return Err(FieldSpecError::BadAttribute(s.to_owned()));
                    }
                    (&rest[..at], Take::Attr(attr.to_ascii_lowercase()))
                }
                _ => (rest, Take::Text),
            }
        };
        let spec = Self {
            name: name.to_owned(),
            selector: selector.trim().to_owned(),
            take,
            all,
        };
        spec.compile().map_err(|e| match e {
            FieldSpecError::BadSelector {
                selector, error, ..
            } => FieldSpecError::BadSelector {
                spec: s.to_owned(),
                selector,
                error,
            },
            other => other,
        })?;
        Ok(spec)
    }
}

impl fmt::Display for FieldSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_arg())
    }
}

/// A field's value in one page: the first match's, or every match's (`NAME[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// The first match's value.
    One(String),
    /// Every match's value, in document order.
    Many(Vec<String>),
}

impl From<FieldValue> for serde_json::Value {
    fn from(v: FieldValue) -> Self {
        match v {
            FieldValue::One(s) => Self::String(s),
            FieldValue::Many(v) => Self::Array(v.into_iter().map(Self::String).collect()),
        }
    }
}

/// A value being collected: the text so far (`::text`), or where the inner
/// HTML starts and, so far, ends (`::html`).
struct Open {
    generation: u32,
    html: bool,
    text: String,
    range: Range<usize>,
}

/// A value of one page, before it is finished.
enum Raw {
    Text(String),
    Html(Range<usize>),
    Attr(String),
}

/// One field's values in the page being parsed.
struct FieldState {
    all: bool,
    values: Vec<Raw>,
    open: Option<Open>,
    generation: u32,
    /// A first-match field has its value, or a field has its most values:
    /// later matches are ignored.
    done: bool,
    cut: bool,
}

/// What the field handlers collect while one page streams through.
pub(crate) struct Collector {
    fields: Vec<FieldState>,
    /// Bytes kept by all fields so far.
    total: usize,
}

impl Collector {
    /// A collector for fields that keep every match (`true`) or the first.
    pub(crate) fn new(all: impl Iterator<Item = bool>) -> Self {
        Self {
            fields: all
                .map(|all| FieldState {
                    all,
                    values: Vec::new(),
                    open: None,
                    generation: 0,
                    done: false,
                    cut: false,
                })
                .collect(),
            total: 0,
        }
    }

    /// Room left for a value of field `i` that has `used` bytes already,
    /// marking the field cut when there is none.
    fn room(&mut self, i: usize, used: usize) -> usize {
        let room = MAX_VALUE_BYTES
            .saturating_sub(used)
            .min(MAX_PAGE_FIELD_BYTES.saturating_sub(self.total));
        if room == 0 {
            self.fields[i].cut = true;
        }
        room
    }

    /// Field `i`'s selector matched an element whose start tag spans
    /// `start_tag`: ends the value being collected (a match inside another
    /// match of the same field, or after one closed implicitly) and, room
    /// allowing, begins another. Returns the generation of the new value
    /// when the element's end tag should end it.
    pub(crate) fn on_element(
        &mut self,
        i: usize,
        take: &Take,
        attribute: impl FnOnce(&str) -> Option<String>,
        start_tag: Range<usize>,
        has_content: bool,
    ) -> Option<u32> {
        self.finish(i);
        if self.fields[i].done {
            return None;
        }
        if self.fields[i].values.len() >= MAX_FIELD_VALUES {
            self.fields[i].cut = true;
            self.fields[i].done = true;
            return None;
        }
        match take {
            Take::Attr(name) => {
                let value = attribute(name)?;
                let room = self.room(i, 0);
                let kept = cut_at(&value, room);
                if kept.len() < value.len() {
                    self.fields[i].cut = true;
                }
                self.total += kept.len();
                let kept = kept.to_owned();
                self.push(i, Raw::Attr(kept));
                None
            }
            Take::Text | Take::Html => {
                let f = &mut self.fields[i];
                f.generation = f.generation.wrapping_add(1);
                f.open = Some(Open {
                    generation: f.generation,
                    html: matches!(take, Take::Html),
                    text: String::new(),
                    range: start_tag.end..start_tag.end,
                });
                if has_content {
                    Some(f.generation)
                } else {
                    self.finish(i);
                    None
                }
            }
        }
    }

    fn push(&mut self, i: usize, value: Raw) {
        let f = &mut self.fields[i];
        f.values.push(value);
        f.done = !f.all;
    }

    /// Text inside an element field `i`'s selector matched, at `at` in the
    /// page; `keep` is false for text not shown (scripts, styles).
    pub(crate) fn on_text(&mut self, i: usize, text: &str, at: Range<usize>, keep: bool) {
        let (used, html) = match &mut self.fields[i].open {
            Some(o) => {
                o.range.end = o.range.end.max(at.end);
                (o.text.len(), o.html)
            }
            None => return,
        };
        if html || !keep || text.is_empty() {
            return;
        }
        let room = self.room(i, used);
        let part = cut_at(text, room);
        if part.len() < text.len() {
            self.fields[i].cut = true;
        }
        self.total += part.len();
        if let Some(o) = &mut self.fields[i].open {
            o.text.push_str(part);
        }
    }

    /// The end tag, starting at `end_tag_start`, of the element that began
    /// field `i`'s value `generation`.
    pub(crate) fn on_end_tag(&mut self, i: usize, generation: u32, end_tag_start: usize) {
        if let Some(o) = &mut self.fields[i].open
            && o.generation == generation
        {
            o.range.end = end_tag_start.max(o.range.start);
            self.finish(i);
        }
    }

    /// Ends field `i`'s open value, if any.
    fn finish(&mut self, i: usize) {
        let Some(open) = self.fields[i].open.take() else {
            return;
        };
        let value = if open.html {
            // Inner HTML is counted here, once its length is known.
            let whole = open.range;
            let room = self.room(i, 0);
            let kept = whole.start..whole.end.min(whole.start.saturating_add(room));
            if kept.len() < whole.len() {
                self.fields[i].cut = true;
            }
            self.total += kept.len();
            Raw::Html(kept)
        } else {
            Raw::Text(open.text)
        };
        self.push(i, value);
    }

    /// Adds the fields' values to `out`: `body` is the page (for inner
    /// HTML), `decode` decodes character references, `resolve` turns a URL
    /// attribute's value into an absolute URL.
    pub(crate) fn finish_page<'a>(
        mut self,
        specs: impl Iterator<Item = &'a FieldSpec>,
        body: &[u8],
        decode: impl Fn(&str) -> String,
        resolve: impl Fn(&str) -> String,
        out: &mut super::Extracted,
    ) {
        for i in 0..self.fields.len() {
            self.finish(i);
        }
        for (spec, f) in specs.zip(self.fields) {
            if f.cut {
                out.fields_cut.insert(spec.name.clone());
            }
            let url = spec.is_url();
            let mut values = f.values.into_iter().map(|raw| match raw {
                Raw::Text(t) => collapse(&decode(&t)),
                Raw::Html(r) => {
                    String::from_utf8_lossy(body.get(r).unwrap_or_default()).into_owned()
                }
                Raw::Attr(a) => {
                    let a = decode(a.trim());
                    if url { resolve(&a) } else { a }
                }
            });
            let value = if spec.all {
                Some(FieldValue::Many(values.collect()))
            } else {
                values.next().map(FieldValue::One)
            };
            if let Some(v) = value {
                out.fields.insert(spec.name.clone(), v);
            }
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes ending at a character boundary.
fn cut_at(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> FieldSpec {
        s.parse().unwrap()
    }

    #[test]
    fn specs_parse_in_every_form() {
        let s = spec("name=h1.product-title");
        assert_eq!(
            (s.name.as_str(), s.selector.as_str()),
            ("name", "h1.product-title")
        );
        assert_eq!((s.take, s.all), (Take::Text, false));
        assert_eq!(spec("price=.price::text").take, Take::Text);
        assert_eq!(spec("d=div::html").take, Take::Html);
        let s = spec("images[]=img.gallery@src");
        assert_eq!((s.take, s.all), (Take::Attr("src".into()), true));
        let s = spec("canonical=link[rel=canonical]@href");
        assert_eq!(s.selector, "link[rel=canonical]");
        let s = spec(r#"mail=a[href="mailto:x@y"]"#);
        assert_eq!(
            (s.selector.as_str(), s.take),
            (r#"a[href="mailto:x@y"]"#, Take::Text)
        );
        assert_eq!(spec("images[]=img@src").to_arg(), "images[]=img@src");
    }

    #[test]
    fn bad_specs_are_refused_with_the_spec_and_the_error() {
        for (bad, says) in [
            ("h1", "expected NAME=SELECTOR"),
            ("=h1", "a field name is"),
            ("a b=h1", "a field name is"),
            ("x=a@", "'@' must be followed"),
            (
                "price=div[",
                "selector 'div[' does not parse: Unexpected end of selector",
            ),
            ("p=::text", "The selector is empty"),
            ("p=a:hover", "Unsupported pseudo-class"),
        ] {
            let e = bad.parse::<FieldSpec>().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }
}
