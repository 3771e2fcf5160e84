//! What collects the values of fields by CSS selector (see
//! [`crate::field_spec`]) while the [`HtmlExtractor`](super::HtmlExtractor)
//! streams a page through lol_html.

use std::ops::Range;

use crawlkeeper_model::text::cut_at;

use super::entities::{decode_attribute, decode_text};
use super::implied::{Implied, implied_end};

use crate::field_spec::{
    FieldSpec, FieldValue, MAX_FIELD_VALUES, MAX_PAGE_FIELD_BYTES, MAX_VALUE_BYTES, Take,
};

/// A value being collected: the text so far (`::text`), or where the inner
/// HTML starts and, so far, ends (`::html`).
struct Open {
    generation: u32,
    html: bool,
    text: String,
    range: Range<usize>,
    /// The rule that ends the element implicitly, if its end tag may be
    /// left out ([`super::implied`]).
    implied: Option<Implied>,
    /// With `implied`: where each text node of `text` was in the page,
    /// and where it starts in `text`, to cut the text at the implied end.
    pieces: Vec<(usize, usize)>,
    /// The raw text of the text node being read (its references are
    /// decoded once it ends: a reference may be cut between two chunks,
    /// never between two nodes), and where it starts in the page.
    node: String,
    node_at: usize,
}

impl Open {
    /// Adds the text node being read to `text`, decoded.
    fn end_node(&mut self) {
        if self.node.is_empty() {
            return;
        }
        if self.implied.is_some() {
            self.pieces.push((self.node_at, self.text.len()));
        }
        self.text.push_str(&decode_text(&self.node));
        self.node.clear();
    }
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
    /// The page, to find where elements end implicitly.
    body: bytes::Bytes,
}

impl Collector {
    /// A collector for fields that keep every match (`true`) or the first,
    /// in page `body`.
    pub(crate) fn new(all: impl Iterator<Item = bool>, body: bytes::Bytes) -> Self {
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
            body,
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
    /// when the element's end tag should end it. `implied` is the rule
    /// that ends the element without its end tag, if any.
    pub(crate) fn on_element(
        &mut self,
        i: usize,
        take: &Take,
        implied: Option<Implied>,
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
                    implied,
                    pieces: Vec::new(),
                    node: String::new(),
                    node_at: 0,
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
    /// page; `keep` is false for text not shown (scripts, styles); `last`
    /// when the chunk ends its text node.
    pub(crate) fn on_text(
        &mut self,
        i: usize,
        text: &str,
        at: Range<usize>,
        keep: bool,
        last: bool,
    ) {
        let (used, html) = match &mut self.fields[i].open {
            Some(o) => {
                o.range.end = o.range.end.max(at.end);
                (o.text.len() + o.node.len(), o.html)
            }
            None => return,
        };
        if html || !keep || text.is_empty() {
            if last && let Some(o) = &mut self.fields[i].open {
                o.end_node();
            }
            return;
        }
        let room = self.room(i, used);
        let part = cut_at(text, room);
        if part.len() < text.len() {
            self.fields[i].cut = true;
        }
        self.total += part.len();
        if let Some(o) = &mut self.fields[i].open {
            if o.node.is_empty() {
                o.node_at = at.start;
            }
            o.node.push_str(part);
            if last {
                o.end_node();
            }
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
        let Some(mut open) = self.fields[i].open.take() else {
            return;
        };
        open.end_node();
        if let Some(rule) = open.implied {
            self.cut_at_implied_end(rule, &mut open);
        }
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

    /// Ends `open` where its element ends implicitly (lol_html, with no
    /// tree, may report its end later, or never).
    fn cut_at_implied_end(&mut self, rule: Implied, open: &mut Open) {
        let end = open.range.end.min(self.body.len());
        let Some(content) = self.body.get(open.range.start..end) else {
            return;
        };
        let Some(cut) = implied_end(rule, content) else {
            return;
        };
        let cut = open.range.start + cut;
        open.range.end = cut;
        if let Some(&(_, from)) = open.pieces.iter().find(|(at, _)| *at >= cut) {
            self.total = self.total.saturating_sub(open.text.len() - from);
            open.text.truncate(from);
        }
    }

    /// Adds the fields' values to `out`: `body` is the page (for inner
    /// HTML), `resolve` turns a URL
    /// attribute's value into an absolute URL. Returns the bytes the
    /// fields kept, of the page's [`MAX_PAGE_FIELD_BYTES`].
    pub(crate) fn finish_page<'a>(
        mut self,
        specs: impl Iterator<Item = &'a FieldSpec>,
        body: &[u8],
        resolve: impl Fn(&str) -> String,
        out: &mut super::Extracted,
    ) -> usize {
        for i in 0..self.fields.len() {
            self.finish(i);
        }
        let total = self.total;
        for (spec, f) in specs.zip(self.fields) {
            if f.cut {
                out.fields_cut.insert(spec.name.clone());
            }
            let url = spec.is_url();
            let mut values = f.values.into_iter().map(|raw| match raw {
                Raw::Text(t) => collapse(&t),
                Raw::Html(r) => {
                    String::from_utf8_lossy(body.get(r).unwrap_or_default()).into_owned()
                }
                Raw::Attr(a) => {
                    let a = decode_attribute(a.trim()).into_owned();
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
        total
    }
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
