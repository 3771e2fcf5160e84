//! The lol_html handlers of `--requisites`: what an HTML page needs to
//! render (images, scripts, stylesheets, icons, media, frames, the URLs in
//! its CSS), found in the [`HtmlExtractor`](super::HtmlExtractor)'s one
//! pass. They are added only when asked for: without `--requisites` no
//! selector is registered and a page costs what it did before.
//!
//! A `<link>` whose `rel` names something the page uses (a stylesheet, an
//! icon, a preload) is taken here instead of as a link ([`Requisites::take_link`]);
//! `rel=prefetch` is not: it names what a *next* navigation may need, so
//! it stays a link as it was. Meta robots `nofollow` does not clear the
//! requisites: it is about following links, and a browser showing the
//! page still loads what it needs.

use std::borrow::Cow;
use std::cell::RefCell;

use lol_html::html_content::{Element, TextChunk};
use lol_html::{ElementContentHandlers, Selector, Settings};

use super::prefilter::{contains_any_case, find_any_case};

use super::Extracted;
use super::css::{self, push_url};
use super::entities::decode_attribute as decode;

/// The most `<style>` text kept from one page for its URLs; the text of a
/// style element past it is not read, and the element counts as one
/// dropped requisite.
pub(crate) const MAX_STYLE_TEXT: usize = 1024 * 1024;

/// `<link rel>` tokens that make the link a requisite.
const REQUISITE_RELS: [&str; 8] = [
    "stylesheet",
    "icon",
    "apple-touch-icon",
    "apple-touch-icon-precomposed",
    "mask-icon",
    "preload",
    "modulepreload",
    "manifest",
];

/// The selectors of `--requisites`, compiled once per extractor.
pub(crate) struct RequisiteSelectors {
    /// Elements with a URL attribute the page needs, one selector per
    /// tag of [`TAGS`] (in its order); one handler tells them apart by
    /// tag name.
    elements: Vec<Selector>,
    /// Any element with a `style` attribute, whose value is CSS.
    styled: Selector,
    /// `<style>` elements, whose text is CSS.
    styles: Selector,
}

fn parse(s: &str) -> Selector {
    // Cannot fail: the selectors are constant and valid (a unit test
    // builds them).
    s.parse::<Selector>().expect("valid selector")
}

impl RequisiteSelectors {
    /// The selectors every page is read with when `--requisites` is on.
    pub(crate) fn new() -> Self {
        Self {
            elements: [
                "img",
                "source",
                "script[src]",
                "video",
                "audio[src]",
                "track[src]",
                "object[data]",
                "embed[src]",
                "input[src]",
                "iframe[src]",
                "frame[src]",
                "use",
                "image",
            ]
            .into_iter()
            .map(parse)
            .collect(),
            styled: parse("[style]"),
            styles: parse("style"),
        }
    }
}

/// The tags of elements whose attributes name requisites, in the order of
/// [`RequisiteSelectors`]'s element selectors.
const TAGS: [&[u8]; 13] = [
    b"img", b"source", b"script", b"video", b"audio", b"track", b"object", b"embed", b"input",
    b"iframe", b"frame", b"use", b"image",
];

/// Which of [`TAGS`] `page` has start tags of (bit `i` for `TAGS[i]`), in
/// one pass over its `<`s: a page of paragraphs and links has none, and
/// the parser then matches none of their selectors.
fn tags_present(page: &[u8]) -> u16 {
    const ALL: u16 = (1 << TAGS.len()) - 1;
    let mut found = 0u16;
    for at in memchr::memchr_iter(b'<', page) {
        let rest = &page[at + 1..];
        let len = rest
            .iter()
            .take(7)
            .position(|c| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len().min(7));
        if !(3..=6).contains(&len) {
            continue;
        }
        let name = &rest[..len];
        if let Some(i) = TAGS.iter().position(|t| t.eq_ignore_ascii_case(name)) {
            found |= 1 << i;
            if found == ALL {
                break;
            }
        }
    }
    found
}

/// False when no element of `page` can have a `style` attribute with a
/// value: nowhere is `style` (any case) followed, after optional
/// whitespace, by `=`.
fn may_have_style_attribute(page: &[u8]) -> bool {
    let mut from = 0;
    while let Some(at) = find_any_case(&page[from..], b"style") {
        let after = from + at + b"style".len();
        let rest = &page[after..];
        let next = rest.iter().find(|c| !c.is_ascii_whitespace());
        if next == Some(&b'=') {
            return true;
        }
        from = after;
    }
    false
}

/// What one page's requisite handlers gather.
#[derive(Default)]
struct Found {
    /// The requisites (its other fields are unused).
    out: Extracted,
    /// The text of the `<style>` element being read.
    style: String,
    /// Bytes of `<style>` text kept from the page so far.
    style_used: usize,
    /// The current `<style>` element's text went past [`MAX_STYLE_TEXT`].
    style_cut: bool,
}

impl Found {
    /// Keeps attribute value `raw` (entity-decoded, trimmed) as a URL.
    fn attr(&mut self, raw: Option<String>) {
        if let Some(raw) = raw {
            push_url(&mut self.out, &decode(&raw));
        }
    }

    /// Keeps frame source `raw` as a URL, marked a frame.
    fn frame(&mut self, raw: Option<String>) {
        let before = self.out.requisites.len();
        self.attr(raw);
        if self.out.requisites.len() > before
            && let Some(url) = self.out.requisites.last()
        {
            self.out.frames.push(url.clone());
        }
    }

    /// Scans the `<style>` text read so far and starts afresh.
    fn end_style(&mut self) {
        let text = std::mem::take(&mut self.style);
        css::scan(&text, !self.style_cut, &mut self.out);
        if std::mem::take(&mut self.style_cut) {
            self.out.dropped_requisites = self.out.dropped_requisites.saturating_add(1);
        }
    }
}

/// One page's requisites, gathered while it streams through the parser.
#[derive(Default)]
pub(crate) struct Requisites {
    found: RefCell<Found>,
}

impl Requisites {
    /// Nothing found yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// `settings` with the requisite handlers page `body` may need: a
    /// selector of any element with a `style` attribute makes the parser
    /// read every element's attributes (a fifth of the crawler's CPU), so
    /// it is left out of a page without `style=`, the `<style>` selector
    /// out of a page without `<style`, each element's out of a page
    /// without its tag.
    pub(crate) fn handlers<'h>(
        &'h self,
        selectors: &'h RequisiteSelectors,
        body: &[u8],
        settings: Settings<'h, 'h>,
    ) -> Settings<'h, 'h> {
        let on_element = move |el: &mut Element<'_, '_>| {
            self.on_element(el);
            Ok(())
        };
        let on_styled = move |el: &mut Element<'_, '_>| {
            if let Some(style) = el.get_attribute("style") {
                let mut f = self.found.borrow_mut();
                css::scan(&decode(&style), true, &mut f.out);
            }
            Ok(())
        };
        let on_style_text = move |t: &mut TextChunk<'_>| {
            let mut f = self.found.borrow_mut();
            let room = MAX_STYLE_TEXT.saturating_sub(f.style_used);
            let text = crawlkeeper_model::text::cut_at(t.as_str(), room);
            if text.len() < t.as_str().len() {
                f.style_cut = true;
            }
            f.style_used += text.len();
            f.style.push_str(text);
            if t.last_in_text_node() {
                f.end_style();
            }
            Ok(())
        };
        let mut settings = settings;
        // Only the elements whose tag the page has: a selector costs its
        // compiling and matching on every page otherwise.
        let present = tags_present(body);
        for (i, selector) in selectors.elements.iter().enumerate() {
            if present & (1 << i) != 0 {
                settings = settings.append_element_content_handler((
                    Cow::Borrowed(selector),
                    ElementContentHandlers::default().element(on_element),
                ));
            }
        }
        if may_have_style_attribute(body) {
            settings = settings.append_element_content_handler((
                Cow::Borrowed(&selectors.styled),
                ElementContentHandlers::default().element(on_styled),
            ));
        }
        if contains_any_case(body, b"<style") {
            settings = settings.append_element_content_handler((
                Cow::Borrowed(&selectors.styles),
                ElementContentHandlers::default().text(on_style_text),
            ));
        }
        settings
    }

    /// Takes the URL attributes of `el` that the page needs.
    fn on_element(&self, el: &Element<'_, '_>) {
        let mut f = self.found.borrow_mut();
        match el.tag_name().as_str() {
            "img" | "source" => {
                f.attr(el.get_attribute("src"));
                if let Some(set) = el.get_attribute("srcset") {
                    srcset(&decode(&set), &mut f.out);
                }
            }
            "script" | "audio" | "track" | "embed" => {
                f.attr(el.get_attribute("src"));
            }
            "iframe" | "frame" => f.frame(el.get_attribute("src")),
            "video" => {
                f.attr(el.get_attribute("src"));
                f.attr(el.get_attribute("poster"));
            }
            "object" => f.attr(el.get_attribute("data")),
            "input"
                if el
                    .get_attribute("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("image")) =>
            {
                f.attr(el.get_attribute("src"));
            }
            "use" | "image" => {
                f.attr(el.get_attribute("href"));
                f.attr(el.get_attribute("xlink:href"));
            }
            _ => {}
        }
    }

    /// Takes `<link>` `el` as a requisite if its `rel` names something the
    /// page uses (see [`REQUISITE_RELS`]); false leaves it a link.
    pub(crate) fn take_link(&self, el: &Element<'_, '_>) -> bool {
        let Some(rel) = el.get_attribute("rel") else {
            return false;
        };
        let wanted = rel
            .split_ascii_whitespace()
            .any(|r| REQUISITE_RELS.iter().any(|w| r.eq_ignore_ascii_case(w)));
        if !wanted {
            return false;
        }
        let mut f = self.found.borrow_mut();
        f.attr(el.get_attribute("href"));
        if let Some(set) = el.get_attribute("imagesrcset") {
            srcset(&decode(&set), &mut f.out);
        }
        true
    }

    /// Adds what was gathered to `out`, within [`MAX_REQUISITES`](super::MAX_REQUISITES).
    pub(crate) fn finish(self, out: &mut Extracted) {
        let mut f = self.found.into_inner();
        if !f.style.is_empty() {
            // The page ended (or was cut) inside a `<style>` element.
            f.style_cut = true;
            f.end_style();
        }
        for url in f.out.requisites {
            out.push_requisite(url);
        }
        out.frames.extend(f.out.frames);
        out.dropped_requisites = out
            .dropped_requisites
            .saturating_add(f.out.dropped_requisites);
    }
}

/// Keeps every URL of a `srcset` (`a.png 1x, b.png 2x`), read as the HTML
/// standard says: a URL runs up to whitespace (so it may hold commas),
/// trailing commas end it, and its descriptors run to the next comma
/// outside parentheses.
fn srcset(set: &str, out: &mut Extracted) {
    let is_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0C');
    let mut rest = set;
    loop {
        rest = rest.trim_start_matches(|c: char| is_space(c) || c == ',');
        if rest.is_empty() {
            return;
        }
        let end = rest.find(is_space).unwrap_or(rest.len());
        let (url, after) = rest.split_at(end);
        let trimmed = url.trim_end_matches(',');
        push_url(out, trimmed);
        rest = after;
        if trimmed.len() < url.len() {
            // Trailing commas ended the candidate: no descriptors.
            continue;
        }
        // Skip the descriptors up to a comma outside parentheses.
        let mut in_parens = false;
        let mut next = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => in_parens = true,
                ')' => in_parens = false,
                ',' if !in_parens => {
                    next = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &rest[next..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_REQUISITES;
    use crate::tests_support::{extract_page, requisites_extractor};
    use std::time::Duration;

    #[test]
    fn the_tags_a_page_has_are_found_in_any_case_and_only_whole() {
        let bit = |t: &[u8]| 1u16 << TAGS.iter().position(|x| *x == t).unwrap();
        assert_eq!(tags_present(b"<p><a href=x>img</a>"), 0);
        assert_eq!(
            tags_present(b"<IMG src=a><imgx><Iframe>"),
            bit(b"img") | bit(b"iframe")
        );
        assert_eq!(
            tags_present(b"<svg><use href=#a/><image href=b>"),
            bit(b"use") | bit(b"image")
        );
        assert_eq!(tags_present(b"<scrip><script"), bit(b"script"));
        assert_eq!(tags_present(b"<"), 0);
    }

    #[test]
    fn style_attributes_are_looked_for_only_where_a_page_may_have_one() {
        assert!(may_have_style_attribute(b"<p STYLE = 'x'>"));
        assert!(may_have_style_attribute(
            b"<link rel=stylesheet><p style=x>"
        ));
        assert!(!may_have_style_attribute(
            b"<link rel=stylesheet href=a.css><style>"
        ));
        assert!(!may_have_style_attribute(b"<p style>x</p> style"));
        // An element with both a URL attribute and a style gives each once.
        let found = page(
            "<img src=a.png style='background:url(b.png)'><p style=\"x:url(c.png)\">",
            true,
        );
        assert_eq!(found.requisites, ["a.png", "b.png", "c.png"]);
    }

    /// What the extractor finds in `html` with `--requisites` on or off.
    fn page(html: &str, on: bool) -> Extracted {
        extract_page(
            &requisites_extractor(on),
            html.as_bytes(),
            Duration::from_secs(60),
        )
    }

    fn srcset_urls(set: &str) -> Vec<String> {
        let mut out = Extracted::default();
        srcset(set, &mut out);
        out.requisites
    }

    const EVERY_FORM: &str = r##"<html><head>
        <link rel="stylesheet" href="/s.css"><link rel="Shortcut ICON" href="/favicon.ico">
        <link rel=apple-touch-icon href=/touch.png><link rel="preload" as="image" href="/hero.png"
          imagesrcset="/hero-2x.png 2x"><link rel=modulepreload href=/m.js>
        <link rel=manifest href=/app.webmanifest><link rel="alternate stylesheet" href="/alt.css">
        <link rel=canonical href=/canon><link rel=next href=/page2><link rel=prefetch href=/later>
        <script src="/app.js"></script><script>var x = "<img src=/trap.png>";</script>
        <style>@import "/imp.css"; body { background: url( '/bg.png' ) }</style>
        </head><body style="background-image:url(/body.png)">
        <img src="/a.png" srcset="/a-1x.png 1x, /a-2x.png 2x">
        <picture><source srcset="/p.webp 480w, /p-big.webp 1024w" type="image/webp"><img src=/p.jpg></picture>
        <video src="/v.mp4" poster="/poster.jpg"><source src="/v.webm"><track src="/subs.vtt"></video>
        <audio src="/a.mp3"></audio><object data="/o.swf"></object><embed src="/e.swf">
        <input type="IMAGE" src="/button.png"><input type=text src="/not-an-image">
        <iframe src="/frame.html"></iframe><frameset><frame src="/f.html"></frameset>
        <svg><use href="/sprite.svg#i"/><image xlink:href="/svg.png"/></svg>
        <div style="background: url(&quot;/div.png&quot;)">x</div>
        <a href="/link">link</a><a href="/a-with-img"><img src=/in-a.png></a>
        <!-- <img src="/comment.png"> -->
        </body></html>"##;

    #[test]
    fn finds_every_form_of_requisite() {
        let out = page(EVERY_FORM, true);
        let expected = [
            "/s.css",
            "/favicon.ico",
            "/touch.png",
            "/hero.png",
            "/hero-2x.png",
            "/m.js",
            "/app.webmanifest",
            "/alt.css",
            "/app.js",
            "/imp.css",
            "/bg.png",
            "/body.png",
            "/a.png",
            "/a-1x.png",
            "/a-2x.png",
            "/p.webp",
            "/p-big.webp",
            "/p.jpg",
            "/v.mp4",
            "/poster.jpg",
            "/v.webm",
            "/subs.vtt",
            "/a.mp3",
            "/o.swf",
            "/e.swf",
            "/button.png",
            "/frame.html",
            "/f.html",
            "/sprite.svg#i",
            "/svg.png",
            "/div.png",
            "/in-a.png",
        ];
        let mut found = out.requisites.clone();
        found.sort();
        let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(found, want);
        assert_eq!(
            out.hrefs,
            ["/canon", "/page2", "/later", "/link", "/a-with-img"],
            "links and prefetch stay links"
        );
        assert_eq!(out.dropped_requisites, 0);
    }

    #[test]
    fn off_the_page_reads_as_before() {
        let off = page(EVERY_FORM, false);
        let plain = extract_page(
            &crate::HtmlExtractor::new(),
            EVERY_FORM.as_bytes(),
            Duration::from_secs(60),
        );
        assert_eq!(off, plain);
        assert!(off.requisites.is_empty());
        assert!(off.hrefs.contains(&"/s.css".to_owned()), "{:?}", off.hrefs);
        let on = page(EVERY_FORM, true);
        assert!(!on.hrefs.contains(&"/s.css".to_owned()));
        assert!(on.requisites.contains(&"/s.css".to_owned()));
        assert_eq!(on.title, off.title);
    }

    #[test]
    fn values_are_decoded_trimmed_and_filtered() {
        let out = page(
            r##"<img src="  /a.png?x=1&amp;y=2 "><img src="data:image/png;base64,AA"><img src="">
               <img src="#f"><iframe src="about:blank"></iframe><script src="javascript:void(0)"></script>
               <img src="blob:http://a.test/x"><embed src="mailto:x@a.test"><img>"##,
            true,
        );
        assert_eq!(out.requisites, ["/a.png?x=1&y=2"]);
    }

    #[test]
    fn reads_srcset_as_browsers_do() {
        assert_eq!(srcset_urls("a.png 1x, b.png 2x"), ["a.png", "b.png"]);
        assert_eq!(srcset_urls("c.png 480w"), ["c.png"]);
        assert_eq!(
            srcset_urls("x.png?a=1,2 1x, y.png 2x"),
            ["x.png?a=1,2", "y.png"]
        );
        assert_eq!(srcset_urls("a.png,b.png 2x"), ["a.png,b.png"]);
        assert_eq!(
            srcset_urls("a.png, ,b.png,, c.png"),
            ["a.png", "b.png", "c.png"]
        );
        assert_eq!(srcset_urls("a.png (x, y) 1x, b.png"), ["a.png", "b.png"]);
        assert!(srcset_urls(" , ,").is_empty());
    }

    #[test]
    fn style_text_split_across_parser_chunks_is_read_whole() {
        // The parser is handed 64 KiB at a time: put a URL across the cut.
        let mut html = String::from("<style>");
        html.push_str(&" ".repeat(64 * 1024 - html.len() - 8));
        html.push_str("a{x:url(/across/the/cut.png)}</style><img src=/after.png>");
        let out = page(&html, true);
        assert_eq!(out.requisites, ["/across/the/cut.png", "/after.png"]);
    }

    #[test]
    fn style_text_past_the_page_s_cap_is_counted_not_read() {
        let mut html = String::from("<style>a{x:url(/first.png)}");
        html.push_str(&" ".repeat(MAX_STYLE_TEXT));
        html.push_str("b{x:url(/late.png)}</style><style>c{x:url(/later.png)}</style>");
        html.push_str("<img src=/img.png>");
        let out = page(&html, true);
        assert_eq!(out.requisites, ["/first.png", "/img.png"]);
        assert_eq!(out.dropped_requisites, 2, "each style element cut counts");
    }

    #[test]
    fn an_unclosed_style_is_read_to_the_end() {
        let out = page("<style>a{x:url(/a.png)}", true);
        assert_eq!(out.requisites, ["/a.png"]);
    }

    #[test]
    fn keeps_at_most_the_bound_and_counts_the_rest() {
        let html = "<img src=/x.png>".repeat(MAX_REQUISITES + 77);
        let out = page(&html, true);
        assert_eq!(out.requisites.len(), MAX_REQUISITES);
        assert_eq!(out.dropped_requisites, 77);
    }

    #[test]
    fn nofollow_clears_links_not_requisites() {
        let out = page(
            r#"<meta name=robots content=nofollow><a href=/l>l</a><img src=/i.png>"#,
            true,
        );
        assert!(out.hrefs.is_empty());
        assert_eq!(out.requisites, ["/i.png"]);
    }

    #[test]
    fn the_selectors_compile() {
        let _ = RequisiteSelectors::new();
    }
}
