//! The default extraction (links, base, meta refresh and robots, title)
//! through the scanner ([`super::scan`]) instead of lol_html, for an
//! extractor asked for nothing else: no field, meta tag, JSON-LD, text or
//! requisite. It finds what lol_html's path finds, in the same order; a
//! page the scanner is unsure of is left to lol_html.

use super::handlers::{MAX_TITLE, State, base, link, meta};
use super::scan::{Element, Tag, Unsure, Visitor, scan};
use super::{Extracted, Page, PageLimits};

/// Reads `page` (HTML) into `out` as lol_html's path would, or leaves
/// `out` as it was and says why the page is left to lol_html.
pub(super) fn extract(page: &Page<'_>, out: &mut Extracted) -> Result<(), Unsure> {
    // Empty in the pipeline (the HTML extractor runs first), so the copy
    // kept for giving up costs nothing there.
    let before = out.clone();
    let mut reader = Reader {
        state: State::new(std::mem::take(out)),
        limits: page.limits,
    };
    match scan(&page.response.body, &page.limits, &mut reader) {
        Ok(cut_short) => {
            let mut found = reader.state.finish();
            found.cut_short = found.cut_short.or(cut_short);
            *out = found;
            Ok(())
        }
        Err(why) => {
            *out = before;
            Err(why)
        }
    }
}

/// The handlers of lol_html's path, called by the scanner.
struct Reader {
    state: State,
    limits: PageLimits,
}

impl Visitor for Reader {
    fn start_tag(&mut self, element: Element, tag: &Tag<'_>) {
        let get = |name: &str| tag.get(name);
        let out = &mut self.state.out;
        match element {
            // `a[href], area[href], link[href]`
            Element::A | Element::Area | Element::Link if tag.has("href") => {
                link(get, out, &self.limits);
            }
            // `base[href]`
            Element::Base if tag.has("href") => base(get, out),
            // `meta[content]`
            Element::Meta if tag.has("content") => meta(get, out, &self.limits),
            // The scanner leaves foreign content to lol_html: a title it
            // reports is an HTML one.
            Element::Title => self.state.title_start(true),
            _ => {}
        }
    }

    fn title_text(&mut self, text: &[u8]) -> Result<(), Unsure> {
        if !self.state.takes_title_text() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(text);
        // A longer first title is left to lol_html's path, which cuts it
        // chunk by chunk.
        if self.state.title_len() + text.len() > MAX_TITLE {
            return Err(Unsure::LongTitle);
        }
        self.state.title_text(&text, true);
        Ok(())
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
