//! What the default extraction does with each element it reads (links,
//! base, meta refresh and robots, title), shared by lol_html's path
//! ([`super::html`]) and the scanner's ([`super::fast`]), so both find
//! the same.

use super::entities::{decode_attribute, decode_text};
use super::{Extracted, PageLimits};

/// The most of a title kept, in bytes.
pub(super) const MAX_TITLE: usize = 4096;

/// What the handlers collect while the page streams through.
#[derive(Default)]
pub(super) struct State {
    pub(super) out: Extracted,
    title: String,
    /// The page's title was chosen (its text may still be read).
    title_chosen: bool,
    /// What is done with the text of the `<title>` being read.
    reading: Reading,
}

/// What becomes of the text of the `<title>` being read.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Ignored: a title in foreign content, or after the page's title.
    #[default]
    Ignored,
    /// An HTML title while none was chosen: its first text decides.
    Pending,
    /// The page's title.
    Kept,
}

impl State {
    /// Collecting onto `out`.
    pub(super) fn new(out: Extracted) -> Self {
        Self {
            out,
            ..Self::default()
        }
    }

    /// A `<title>` starts: an HTML one (`html`) may be the page's title,
    /// one inside `<math>` is not, as `document.title` reads the first
    /// HTML title only.
    pub(super) fn title_start(&mut self, html: bool) {
        self.reading = if html && !self.title_chosen {
            Reading::Pending
        } else {
            Reading::Ignored
        };
    }

    /// True when text of the `<title>` being read would be kept.
    pub(super) fn takes_title_text(&self) -> bool {
        self.reading != Reading::Ignored
    }

    /// A piece of a title's raw text; `rcdata` when read as a title's
    /// text (RCDATA), not as markup (a `<title>` in `<svg>`). The first
    /// HTML title with text is the page's: its text is kept, up to
    /// [`MAX_TITLE`] bytes. (A title without text is not chosen: lol_html
    /// reports no text for it, and the scanner does the same.)
    pub(super) fn title_text(&mut self, text: &str, rcdata: bool) {
        if self.reading == Reading::Pending && !text.is_empty() {
            self.reading = if rcdata {
                self.title_chosen = true;
                Reading::Kept
            } else {
                Reading::Ignored
            };
        }
        if self.reading == Reading::Kept {
            let room = MAX_TITLE.saturating_sub(self.title.len());
            let text = crawlkeeper_model::text::cut_at(text, room);
            self.title.push_str(text);
        }
    }

    /// The bytes of the first title's text so far.
    pub(super) fn title_len(&self) -> usize {
        self.title.len()
    }

    /// What was found, and the first title's raw text.
    pub(super) fn into_parts(self) -> (Extracted, String) {
        (self.out, self.title)
    }

    /// What was found, finished: the title decoded and its whitespace
    /// collapsed, no links if the page asked robots not to follow them.
    pub(super) fn finish(self) -> Extracted {
        let mut found = self.out;
        finish(&mut found, &self.title);
        found
    }
}

/// The title decoded and its whitespace collapsed (unless an extractor
/// set one), and no links if the page asked robots not to follow them.
pub(super) fn finish(found: &mut Extracted, title: &str) {
    let title = collapse_whitespace(&decode_text(title));
    if !title.is_empty() && found.title.is_none() {
        found.title = Some(title);
    }
    if found.nofollow {
        found.hrefs.clear();
    }
}

/// A link (`a`, `area` or `link` with `href`; `get` reads its
/// attributes): its href, unless its `rel` says not to follow it.
pub(super) fn link(get: impl Fn(&str) -> Option<String>, out: &mut Extracted, limits: &PageLimits) {
    if let Some(rel) = get("rel") {
        let rel = rel.to_ascii_lowercase();
        if rel
            .split_ascii_whitespace()
            .any(|r| matches!(r, "nofollow" | "preconnect" | "dns-prefetch"))
        {
            return;
        }
    }
    if let Some(href) = get("href") {
        push_href(out, &href, limits);
    }
}

/// A `<base href>`: the first one is the page's base.
pub(super) fn base(get: impl Fn(&str) -> Option<String>, out: &mut Extracted) {
    if out.base.is_none() {
        out.base = get("href").map(|h| decode_attribute(h.trim()).into_owned());
    }
}

/// A `<meta content>`: a refresh's target is a link; robots (or
/// crawlkeeper) told `nofollow` or `none` follow no link of the page.
pub(super) fn meta(get: impl Fn(&str) -> Option<String>, out: &mut Extracted, limits: &PageLimits) {
    let content = get("content").unwrap_or_default();
    if let Some(equiv) = get("http-equiv")
        && equiv.eq_ignore_ascii_case("refresh")
        && let Some(target) = refresh_target(&content)
    {
        push_href(out, target, limits);
    }
    if let Some(name) = get("name") {
        let name = name.to_ascii_lowercase();
        if (name == "robots" || name == crawlkeeper_model::PRODUCT_TOKEN)
            && content
                .split(',')
                .map(|d| d.trim().to_ascii_lowercase())
                .any(|d| d == "nofollow" || d == "none")
        {
            out.nofollow = true;
        }
    }
}

fn push_href(out: &mut Extracted, raw: &str, limits: &PageLimits) {
    // Trimmed as the URL parser trims (C0 controls and spaces), after
    // decoding: a `&nbsp;` at the end is part of the URL.
    let decoded = decode_attribute(raw);
    let href = decoded.trim_matches(|c: char| c <= ' ');
    if href.is_empty() || href.starts_with('#') {
        return;
    }
    out.push_href(href.to_owned(), limits);
}

/// The URL of a meta refresh `content` such as `5; url='/next'`.
fn refresh_target(content: &str) -> Option<&str> {
    let (_, rest) = content.split_once([';', ','])?;
    let rest = rest.trim_start();
    let eq = rest.find('=')?;
    if !rest[..eq].trim().eq_ignore_ascii_case("url") {
        return None;
    }
    let target = rest[eq + 1..].trim();
    let target = target
        .strip_prefix(['\'', '"'])
        .map(|t| t.trim_end_matches(['\'', '"']))
        .unwrap_or(target);
    (!target.is_empty()).then_some(target)
}

/// `s` with ASCII whitespace stripped and collapsed, as `document.title`
/// is (a no-break space, `&nbsp;`, is kept).
fn collapse_whitespace(s: &str) -> String {
    s.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::refresh_target;

    #[test]
    fn refresh_parsing_variants() {
        assert_eq!(refresh_target("5;url=/a"), Some("/a"));
        assert_eq!(refresh_target("5, URL = \"/b\""), Some("/b"));
        assert_eq!(refresh_target("5"), None);
        assert_eq!(refresh_target("5; foo=/c"), None);
    }
}
