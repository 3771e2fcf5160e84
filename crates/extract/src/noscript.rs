//! `--noscript-links`: the links inside `<noscript>`, read as a browser
//! with JavaScript off reads them. By default a page is read as a browser
//! with JavaScript on reads it (and as lol_html and html5ever do with
//! scripting on): the content of `<noscript>` is text, not markup, and
//! holds no link. With the option, each `<noscript>`'s content is parsed
//! as HTML of its own once its end tag (or the page's end) comes, and its
//! `a`, `area` and `link` hrefs are links of the page (their `rel` taken
//! into account as anywhere else; a `<noscript>` inside one is text again).
//! At most [`MAX_NOSCRIPT_BYTES`] of a page's `<noscript>` content is read.

use std::borrow::Cow;

use lol_html::html_content::Element;
use lol_html::{ElementContentHandlers, HtmlRewriter, MemorySettings, Selector, Settings};

use super::handlers::link;
use super::{Extracted, PageLimits};

/// The most bytes of `<noscript>` content read from one page.
pub(crate) const MAX_NOSCRIPT_BYTES: usize = 1024 * 1024;

/// The links selector, as on the page.
const LINKS: &str = "a[href], area[href], link[href]";

/// The `<noscript>` content of one page being read.
#[derive(Default)]
pub(crate) struct Noscript {
    /// The content of the `<noscript>` being read.
    text: String,
    /// Bytes of `<noscript>` content read from the page so far.
    used: usize,
}

impl Noscript {
    /// A chunk of a `<noscript>`'s content; `last` when it ends it: then
    /// the content's links are added to `out`.
    pub(crate) fn on_text(
        &mut self,
        chunk: &str,
        last: bool,
        out: &mut Extracted,
        limits: &PageLimits,
    ) {
        let room = MAX_NOSCRIPT_BYTES.saturating_sub(self.used);
        let kept = crawlkeeper_model::text::cut_at(chunk, room);
        self.used += kept.len();
        self.text.push_str(kept);
        if last && !self.text.is_empty() {
            let html = std::mem::take(&mut self.text);
            links(&html, out, limits);
        }
    }
}

/// Adds the links of `html` (a `<noscript>`'s content) to `out`.
fn links(html: &str, out: &mut Extracted, limits: &PageLimits) {
    let Ok(selector) = LINKS.parse::<Selector>() else {
        return;
    };
    let found = std::cell::RefCell::new(std::mem::take(out));
    let on_link = |el: &mut Element<'_, '_>| {
        link(|n| el.get_attribute(n), &mut found.borrow_mut(), limits);
        Ok(())
    };
    let settings = Settings::new()
        .with_memory_settings(
            MemorySettings::new().with_max_allowed_memory_usage(super::parser::MAX_PARSER_MEMORY),
        )
        .append_element_content_handler((
            Cow::Owned(selector),
            ElementContentHandlers::default().element(on_link),
        ));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    // The content is at most MAX_NOSCRIPT_BYTES: one write. A parser that
    // gives up keeps the links it found before.
    if super::parser::guarded(|| rewriter.write(html.as_bytes())).is_ok() {
        let _ = super::parser::guarded(|| rewriter.end());
    } else {
        drop(rewriter);
    }
    *out = found.into_inner();
}

#[cfg(test)]
mod tests {
    use super::super::html::HtmlExtractor;
    use super::super::tests_support::run;
    use super::MAX_NOSCRIPT_BYTES;
    use crate::config::ExtractConfig;
    use std::time::Duration;

    fn links(html: &str, on: bool) -> Vec<String> {
        let config = ExtractConfig {
            noscript_links: on,
            ..ExtractConfig::default()
        };
        let x = HtmlExtractor::from_config(&config).unwrap();
        run(
            &x,
            "text/html",
            html.as_bytes(),
            10_000,
            Duration::from_secs(60),
        )
        .hrefs
    }

    const PAGE: &str = "<a href=/a>a</a><noscript><a href=/ns>n</a><img src=/i.png>\
        <a rel=nofollow href=/no>x</a></noscript><a href=/b>b</a>\
        <head><noscript><link rel=stylesheet href=/s.css></noscript>";

    #[test]
    fn noscript_links_are_read_only_when_asked() {
        assert_eq!(links(PAGE, false), ["/a", "/b"]);
        assert_eq!(links(PAGE, true), ["/a", "/ns", "/b", "/s.css"]);
        // Unclosed: its content runs to the page's end.
        assert_eq!(links("<noscript><a href=/x>", true), ["/x"]);
        // A noscript inside one is text again.
        assert_eq!(
            links("<noscript><noscript><a href=/x></noscript>", true),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_page_s_noscript_content_is_read_up_to_its_cap() {
        let big = format!(
            "<noscript>{}<a href=/late>x</a></noscript><noscript><a href=/after></noscript><a href=/out>",
            " ".repeat(MAX_NOSCRIPT_BYTES)
        );
        assert_eq!(links(&big, true), ["/out"]);
        let many = "<noscript><a href=/n></noscript>".repeat(10_000);
        let started = std::time::Instant::now();
        assert_eq!(links(&many, true).len(), 10_000);
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
