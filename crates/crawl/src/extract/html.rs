//! Links, base, meta refresh, meta robots and title from HTML, in one
//! streaming pass with lol_html (no DOM is built). Text inside `<script>`,
//! `<style>` and comments is never seen as markup, so never as a link.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use lol_html::errors::RewritingError;
use lol_html::html_content::{Element, EndTag, TextChunk, TextType};
use lol_html::{ElementContentHandlers, HtmlRewriter, MemorySettings, Selector, Settings};
use tracing::debug;

use super::extras::{ExtraSelectors, Extras};
use super::fast;
use super::fields::Collector;
use super::handlers::{State, base, finish, link, meta};
use super::implied::Implied;
use super::prefilter::Required;
use super::requisites::{RequisiteSelectors, Requisites};
use super::{CutShort, Extracted, Extractor, Page};
use crate::config::ExtractConfig;
use crate::field_spec::{FieldSpec, FieldSpecError, Take};

/// Bytes handed to the parser at a time; the deadline is checked between
/// chunks, so a page overruns it by at most one chunk's work.
const CHUNK: usize = 64 * 1024;
/// The most memory the parser may hold for one page (buffered tags and
/// attributes; the body itself is apart).
const MAX_PARSER_MEMORY: usize = 32 * 1024 * 1024;

/// The namespace lol_html gives HTML elements (not those inside `<svg>`
/// or `<math>`).
const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";
/// The selector of `<base href>`.
const BASE: &str = "base[href]";
/// The selector of the meta tags read for every page (refresh, robots).
const META: &str = "meta[content]";

/// The built-in HTML extractor (`html`): `a`, `area` and `link` hrefs,
/// `<base href>`, meta refresh, `rel=nofollow`, meta robots and the title,
/// and the fields by CSS selector, meta tags, JSON-LD and text it was built
/// with ([`HtmlExtractor::with_fields`], [`HtmlExtractor::from_config`]),
/// all in the same pass, and the page's requisites when asked
/// ([`HtmlExtractor::with_requisites`]).
/// Only responses typed as HTML are parsed.
pub struct HtmlExtractor {
    links: Selector,
    base: Selector,
    meta: Selector,
    title: Selector,
    /// What a page must contain for `base` and `meta` to match in it: a
    /// page without `<base` or `<meta` does not have them compiled and
    /// matched (compiling a selector costs about as much as parsing a
    /// twentieth of a 4 KB page).
    base_required: Option<Required>,
    meta_required: Option<Required>,
    fields: Vec<Field>,
    extras: ExtraSelectors,
    /// `--requisites`: `None` when off, so nothing is registered for it.
    requisites: Option<RequisiteSelectors>,
    /// Whether a page is first given to the scanner ([`super::fast`]) when
    /// nothing but the defaults is asked for.
    scanner: bool,
}

/// A field by CSS selector, compiled.
struct Field {
    spec: FieldSpec,
    selector: Selector,
    /// What a page must contain for the selector to match there (`None`:
    /// any page may).
    required: Option<Required>,
}

impl Default for HtmlExtractor {
    fn default() -> Self {
        // Cannot fail: the selectors are constant and valid.
        let parse = |s: &str| s.parse::<Selector>().expect("valid selector");
        Self {
            links: parse("a[href], area[href], link[href]"),
            base: parse(BASE),
            meta: parse(META),
            title: parse("title"),
            base_required: Required::of(BASE),
            meta_required: Required::of(META),
            fields: Vec::new(),
            extras: ExtraSelectors::new(&ExtractConfig::default()),
            requisites: None,
            scanner: true,
        }
    }
}

impl HtmlExtractor {
    /// A new HTML extractor.
    pub fn new() -> Self {
        Self::default()
    }

    /// An HTML extractor that also takes `fields` from every page.
    pub fn with_fields(fields: &[FieldSpec]) -> Result<Self, FieldSpecError> {
        let mut x = Self::default();
        for f in fields {
            x.fields.push(Field {
                spec: f.clone(),
                selector: f.compile()?,
                required: Required::of(&f.selector),
            });
        }
        Ok(x)
    }

    /// An HTML extractor that takes what `config` asks for from every page:
    /// its fields, and its meta tags, JSON-LD and text when asked
    /// (`fields.meta`, `fields.jsonld`, `fields.text`).
    pub fn from_config(config: &ExtractConfig) -> Result<Self, FieldSpecError> {
        let mut x = Self::with_fields(&config.fields)?;
        x.extras = ExtraSelectors::new(config);
        Ok(x)
    }

    /// This extractor, also finding each page's requisites when `on`
    /// (`--requisites`): a `<link>` to a stylesheet, icon or preload is
    /// then a requisite instead of a link. Off, pages are read as before.
    pub fn with_requisites(mut self, on: bool) -> Self {
        self.requisites = on.then(RequisiteSelectors::new);
        self
    }

    /// This extractor reading pages with the scanner where it can (`on`,
    /// the default) or always with lol_html. Both find the same; the
    /// scanner, built for the default extraction (links, base, meta
    /// refresh and robots, title), does so in a fraction of the time, and
    /// is only used when no field, meta tag, JSON-LD, text or requisite is
    /// asked for. Off is for comparing the two (tests, fuzzing).
    pub fn with_scanner(mut self, on: bool) -> Self {
        self.scanner = on;
        self
    }

    /// True when the scanner can read pages for this extractor.
    fn scans(&self) -> bool {
        self.scanner
            && self.fields.is_empty()
            && self.extras.is_empty()
            && self.requisites.is_none()
    }

    /// This extractor with every field's selector run on every page (the
    /// prefilter's tests compare).
    #[cfg(test)]
    pub(crate) fn without_prefilter(mut self) -> Self {
        for f in &mut self.fields {
            f.required = None;
        }
        self.base_required = None;
        self.meta_required = None;
        self
    }
}

impl Extractor for HtmlExtractor {
    fn name(&self) -> &str {
        "html"
    }

    fn extract(&self, page: &Page<'_>, out: &mut Extracted) {
        if !page.response.is_html() {
            return;
        }
        if self.scans() {
            match fast::extract(page, out) {
                Ok(()) => return,
                Err(why) => debug!(url = %page.url, ?why, "HTML left to lol_html"),
            }
        }
        let limits = page.limits;
        let state = RefCell::new(State::new(std::mem::take(out)));
        let requisites = self.requisites.as_ref().map(|_| Requisites::new());
        let on_link = |el: &mut Element<'_, '_>| {
            if let Some(r) = &requisites
                && r.take_link(el)
            {
                return Ok(());
            }
            link(
                |n| el.get_attribute(n),
                &mut state.borrow_mut().out,
                &limits,
            );
            Ok(())
        };
        let on_base = |el: &mut Element<'_, '_>| {
            base(|n| el.get_attribute(n), &mut state.borrow_mut().out);
            Ok(())
        };
        let on_meta = |el: &mut Element<'_, '_>| {
            meta(
                |n| el.get_attribute(n),
                &mut state.borrow_mut().out,
                &limits,
            );
            Ok(())
        };
        let on_title_start = |el: &mut Element<'_, '_>| {
            // lol_html follows foreign content: a `<title>` in `<math>` is
            // not the page's (one in `<svg>` is told by its text).
            state
                .borrow_mut()
                .title_start(el.namespace_uri() == HTML_NAMESPACE);
            Ok(())
        };
        let on_title_text = |t: &mut TextChunk<'_>| {
            // lol_html gives an `<svg>`'s `<title>` (an HTML integration
            // point) the HTML namespace, but reads its text as markup, not
            // as a title's RCDATA.
            let rcdata = t.text_type() == TextType::RCData;
            state.borrow_mut().title_text(t.as_str(), rcdata);
            Ok(())
        };
        let collector = (!self.fields.is_empty()).then(|| {
            Rc::new(RefCell::new(Collector::new(
                self.fields.iter().map(|f| f.spec.all),
                page.response.body.clone(),
            )))
        });
        let extras =
            (!self.extras.is_empty()).then(|| Extras::new(&self.extras, &page.response.body));
        let mut settings = Settings::new()
            .with_memory_settings(
                MemorySettings::new().with_max_allowed_memory_usage(MAX_PARSER_MEMORY),
            )
            .append_element_content_handler((
                Cow::Borrowed(&self.links),
                ElementContentHandlers::default().element(on_link),
            ))
            .append_element_content_handler((
                Cow::Borrowed(&self.title),
                ElementContentHandlers::default()
                    .element(on_title_start)
                    .text(on_title_text),
            ));
        let body: &[u8] = &page.response.body;
        let may_match = |r: &Option<Required>| r.as_ref().is_none_or(|r| r.may_match(body));
        if may_match(&self.base_required) {
            settings = settings.append_element_content_handler((
                Cow::Borrowed(&self.base),
                ElementContentHandlers::default().element(on_base),
            ));
        }
        if may_match(&self.meta_required) {
            settings = settings.append_element_content_handler((
                Cow::Borrowed(&self.meta),
                ElementContentHandlers::default().element(on_meta),
            ));
        }
        if let Some(collector) = &collector {
            for (i, f) in self.fields.iter().enumerate() {
                // A selector that cannot match in this page costs its
                // compiling and matching for nothing.
                if f.required.as_ref().is_none_or(|r| r.may_match(body)) {
                    settings = settings.append_element_content_handler(field_handlers(
                        i,
                        &f.spec,
                        &f.selector,
                        collector,
                    ));
                }
            }
        }
        if let Some(extras) = &extras {
            settings = extras.handlers(&self.extras, settings);
        }
        if let (Some(r), Some(selectors)) = (&requisites, &self.requisites) {
            settings = r.handlers(selectors, &page.response.body, settings);
        }
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let mut cut_short = None;
        let mut result = Ok(());
        let mut read = 0;
        for chunk in page.response.body.chunks(CHUNK) {
            if limits.expired() {
                cut_short = Some(CutShort::Time);
                break;
            }
            result = guarded(|| rewriter.write(chunk));
            if result.is_err() {
                break;
            }
            read += chunk.len();
            if let Some(extras) = &extras {
                extras.advance(read);
            }
        }
        if cut_short.is_none() && result.is_ok() {
            result = guarded(|| rewriter.end());
        } else {
            drop(rewriter);
        }
        let complete = cut_short.is_none() && result.is_ok();
        if let Err(e) = result {
            // A page the parser gives up on keeps whatever it yielded so far.
            debug!(url = %page.url, error = %e, "HTML parse stopped early");
            if matches!(e, Stopped::Parser(RewritingError::MemoryLimitExceeded(_))) {
                cut_short = Some(CutShort::Memory);
            }
        }
        let (mut found, title) = state.into_inner().into_parts();
        found.cut_short = found.cut_short.or(cut_short);
        if let Some(r) = requisites {
            r.finish(&mut found);
        }
        let base = found.base_url(page.url);
        let resolve = |s: &str| {
            base.join(s)
                .map(String::from)
                .unwrap_or_else(|_| s.to_owned())
        };
        let mut used = 0;
        if let Some(collector) = collector
            && let Ok(collector) = Rc::try_unwrap(collector)
        {
            used = collector.into_inner().finish_page(
                self.fields.iter().map(|f| &f.spec),
                &page.response.body,
                resolve,
                &mut found,
            );
        }
        if let Some(extras) = extras {
            extras.finish(used, complete, resolve, &mut found);
        }
        finish(&mut found, &title);
        *out = found;
    }
}

/// The handlers of field `i`: its element (an attribute, or the start of a
/// value its end tag ends) and the text inside it.
fn field_handlers<'h>(
    i: usize,
    spec: &'h FieldSpec,
    selector: &'h Selector,
    collector: &'h Rc<RefCell<Collector>>,
) -> (Cow<'h, Selector>, ElementContentHandlers<'h>) {
    let on_element = move |el: &mut Element<'_, '_>| {
        let has_content = el.can_have_content();
        let implied = match spec.take {
            Take::Attr(_) => None,
            _ => Implied::of(&el.tag_name()),
        };
        let generation = collector.borrow_mut().on_element(
            i,
            &spec.take,
            implied,
            |name| el.get_attribute(name),
            el.source_location().bytes(),
            has_content,
        );
        if let Some(generation) = generation {
            let c = Rc::clone(collector);
            el.on_end_tag(Box::new(move |end: &mut EndTag<'_>| {
                c.borrow_mut()
                    .on_end_tag(i, generation, end.source_location().bytes().start);
                Ok(())
            }))?;
        }
        Ok(())
    };
    let mut handlers = ElementContentHandlers::default().element(on_element);
    if !matches!(spec.take, Take::Attr(_)) {
        handlers = handlers.text(move |t: &mut TextChunk<'_>| {
            let keep = matches!(
                t.text_type(),
                TextType::Data | TextType::RCData | TextType::CDataSection
            );
            collector
                .borrow_mut()
                .on_text(i, t.as_str(), t.source_location().bytes(), keep);
            Ok(())
        });
    }
    (Cow::Borrowed(selector), handlers)
}

/// Why the parser stopped before the end of a page.
#[derive(Debug)]
enum Stopped {
    /// It returned an error.
    Parser(RewritingError),
    /// It panicked: lol_html 3.0.3 asserts on `<script f=><A </a>` (found
    /// by fuzzing) in builds with debug assertions; in others it errs.
    Panicked,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Parser(e) => e.fmt(f),
            Self::Panicked => f.write_str("the HTML parser panicked"),
        }
    }
}

/// Runs one step of the parser, a panic in it being an error like another.
fn guarded(step: impl FnOnce() -> Result<(), RewritingError>) -> Result<(), Stopped> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)) {
        Ok(result) => result.map_err(Stopped::Parser),
        Err(_) => Err(Stopped::Panicked),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests_support::run;
    use super::*;
    use crate::extract::handlers::MAX_TITLE;
    use crate::extract::{FieldValue, MAX_FIELD_VALUES, MAX_PAGE_FIELD_BYTES, MAX_VALUE_BYTES};
    use std::time::Duration;
    use url::Url;

    fn extract_with(content_type: &str, html: &str) -> Extracted {
        extract_limited(
            content_type,
            html.as_bytes(),
            10_000,
            Duration::from_secs(60),
        )
    }

    fn extract_limited(
        content_type: &str,
        html: &[u8],
        max_links: usize,
        time: Duration,
    ) -> Extracted {
        run(&HtmlExtractor::new(), content_type, html, max_links, time)
    }

    fn extract(html: &str) -> Extracted {
        extract_with("text/html; charset=utf-8", html)
    }

    /// The fields `specs` take from `html` (at http://a.test/dir/page).
    fn fields_in(specs: &[&str], html: &[u8], time: Duration) -> Extracted {
        let specs: Vec<FieldSpec> = specs.iter().map(|s| s.parse().unwrap()).collect();
        let extractor = HtmlExtractor::with_fields(&specs).unwrap();
        run(&extractor, "text/html", html, 10_000, time)
    }

    fn fields(specs: &[&str], html: &str) -> Extracted {
        fields_in(specs, html.as_bytes(), Duration::from_secs(60))
    }

    fn one(out: &Extracted, name: &str) -> Option<String> {
        match out.fields.get(name)? {
            FieldValue::One(s) => Some(s.clone()),
            other => panic!("{name} is not one string: {other:?}"),
        }
    }

    fn many(out: &Extracted, name: &str) -> Vec<String> {
        match out.fields.get(name) {
            Some(FieldValue::Many(v)) => v.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    const PRODUCT: &str = r#"<html><head><title>Shop</title>
        <link rel="canonical" href="/p/42">
        </head><body>
        <h1 class="product-title">  Blue
           &amp; Green   <b>Kettle</b> </h1>
        <span class="price">€ 19.99</span><span class="price">€ 1</span>
        <img class="gallery" src="img/1.jpg"><img class="gallery" src="/img/2.jpg">
        <img class="gallery" src="https://cdn.test/3.jpg"><img class="gallery">
        <div id="d"><p>One <i>two</i></p><!-- c --><script>var x = "<p>";</script></div>
        <a class="x" href="/next" data-id="A&amp;B">next</a>
        </body></html>"#;

    #[test]
    fn fields_take_text_by_default_whitespace_collapsed_entities_decoded() {
        let out = fields(&["name=h1.product-title", "price=.price::text"], PRODUCT);
        assert_eq!(one(&out, "name").as_deref(), Some("Blue & Green Kettle"));
        assert_eq!(one(&out, "price").as_deref(), Some("€ 19.99"), "the first");
        assert!(out.fields_cut.is_empty());
        // The links are found as before, in the same pass.
        assert!(out.hrefs.contains(&"/next".to_owned()), "{:?}", out.hrefs);
        assert_eq!(out.title.as_deref(), Some("Shop"));
    }

    #[test]
    fn list_fields_keep_every_match_in_order() {
        let out = fields(&["prices[]=.price", "none[]=table", "none=table"], PRODUCT);
        assert_eq!(many(&out, "prices"), ["€ 19.99", "€ 1"]);
        assert!(
            many(&out, "none").is_empty(),
            "a list with no match is empty"
        );
        assert!(!out.fields.contains_key("none") || many(&out, "none").is_empty());
        let out = fields(&["missing=table"], PRODUCT);
        assert_eq!(
            one(&out, "missing"),
            None,
            "a single field with no match is absent"
        );
    }

    #[test]
    fn url_attributes_resolve_against_the_base_others_do_not() {
        let out = fields(
            &[
                "images[]=img.gallery@src",
                "canonical=link[rel=canonical]@href",
                "id=a.x@data-id",
            ],
            PRODUCT,
        );
        assert_eq!(
            many(&out, "images"),
            [
                "http://a.test/dir/img/1.jpg",
                "http://a.test/img/2.jpg",
                "https://cdn.test/3.jpg"
            ],
            "an element without the attribute gives no value"
        );
        assert_eq!(
            one(&out, "canonical").as_deref(),
            Some("http://a.test/p/42")
        );
        assert_eq!(one(&out, "id").as_deref(), Some("A&B"));
        let out = fields(
            &["img=img@src"],
            r#"<head><base href="http://b.test/x/"></head><img src="y.png">"#,
        );
        assert_eq!(one(&out, "img").as_deref(), Some("http://b.test/x/y.png"));
    }

    #[test]
    fn html_fields_are_the_inner_html_as_written() {
        let out = fields(&["d=#d::html", "t=#d::text", "h[]=h1 b::html"], PRODUCT);
        assert_eq!(
            one(&out, "d").as_deref(),
            Some(r#"<p>One <i>two</i></p><!-- c --><script>var x = "<p>";</script>"#)
        );
        assert_eq!(one(&out, "t").as_deref(), Some("One two"), "no script text");
        assert_eq!(many(&out, "h"), ["Kettle"]);
        // Void elements have no inner HTML; implicitly closed ones end at
        // their last text.
        let out = fields(
            &["img=img::html", "li[]=li::html", "lt[]=li"],
            "<img src=x><ul><li>a <b>1</b><li>b</ul>",
        );
        assert_eq!(one(&out, "img").as_deref(), Some(""));
        assert_eq!(many(&out, "li"), ["a <b>1", "b"]);
        assert_eq!(many(&out, "lt"), ["a 1", "b"]);
    }

    #[test]
    fn values_end_where_the_element_ends_implicitly() {
        let out = fields(
            &["second=li:nth-child(2)", "h=li:nth-child(2)::html"],
            "<ul><li>1</li><li>2<li>3</ul><p>after",
        );
        assert_eq!(one(&out, "second").as_deref(), Some("2"));
        assert_eq!(one(&out, "h").as_deref(), Some("2"));
        let out = fields(&["p=p::html", "t=p"], "<p>x<h2>y</h2>z");
        assert_eq!(one(&out, "p").as_deref(), Some("x"));
        assert_eq!(one(&out, "t").as_deref(), Some("x"));
        let out = fields(
            &["dt[]=dt", "dd[]=dd", "o[]=option", "td[]=td", "tr[]=tr"],
            "<dl><dt>a<dd>b<dt>c</dl>z<select><option>1<option>2</select>\
             <table><tr><td>x<td>y<tr><td>w</table>q",
        );
        assert_eq!(many(&out, "dt"), ["a", "c"]);
        assert_eq!(many(&out, "dd"), ["b"]);
        assert_eq!(many(&out, "o"), ["1", "2"]);
        assert_eq!(many(&out, "td"), ["x", "y", "w"]);
        assert_eq!(many(&out, "tr"), ["xy", "w"]);
        let out = fields(&["li[]=li"], "<ul><li>a<ul><li>b</ul>c<li>d</ul>");
        assert_eq!(
            many(&out, "li"),
            ["a", "b", "d"],
            "a nested match ends the outer"
        );
    }

    #[test]
    fn a_field_matching_nothing_costs_no_record_of_it() {
        let out = fields(&[], PRODUCT);
        assert!(out.fields.is_empty() && out.fields_cut.is_empty());
        let out = extract(PRODUCT);
        assert!(out.fields.is_empty());
    }

    #[test]
    fn a_million_matches_keep_the_first_thousand_and_say_so() {
        let started = std::time::Instant::now();
        let html = "<i class=p>x</i>".repeat(1_000_000);
        let out = fields(&["p[]=i.p", "first=i.p", "at[]=i@class"], &html);
        assert_eq!(many(&out, "p").len(), MAX_FIELD_VALUES);
        assert_eq!(many(&out, "at").len(), MAX_FIELD_VALUES);
        assert_eq!(one(&out, "first").as_deref(), Some("x"));
        assert_eq!(
            out.fields_cut.iter().collect::<Vec<_>>(),
            ["at", "p"],
            "first-match fields lose nothing"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_hundred_megabyte_value_is_cut_at_the_value_cap() {
        let mut html = b"<h1>".to_vec();
        html.resize(100 * 1024 * 1024, b'a');
        html.extend_from_slice(b"</h1><a href=/after>x</a>");
        let out = fields_in(&["t=h1", "h=h1::html"], &html, Duration::from_secs(600));
        assert_eq!(one(&out, "t").unwrap().len(), MAX_VALUE_BYTES);
        assert_eq!(one(&out, "h").unwrap().len(), MAX_VALUE_BYTES);
        assert_eq!(out.fields_cut.iter().collect::<Vec<_>>(), ["h", "t"]);
        assert_eq!(out.hrefs, ["/after"], "the rest of the page is still read");
    }

    #[test]
    fn a_page_s_fields_together_stop_at_the_page_cap() {
        let value = "v".repeat(MAX_VALUE_BYTES);
        let html = format!("<p>{value}</p>").repeat(40);
        let out = fields(&["a[]=p", "b[]=p"], &html);
        let kept: usize = ["a", "b"]
            .iter()
            .flat_map(|f| many(&out, f))
            .map(|v| v.len())
            .sum();
        assert_eq!(kept, MAX_PAGE_FIELD_BYTES);
        assert!(out.fields_cut.contains("b"), "{:?}", out.fields_cut);
    }

    #[test]
    fn fields_stop_at_the_page_s_deadline() {
        let html = "<p>x</p>".repeat(100_000);
        let out = fields_in(&["p[]=p"], html.as_bytes(), Duration::ZERO);
        assert_eq!(out.cut_short, Some(CutShort::Time));
        assert!(many(&out, "p").is_empty());
    }

    #[test]
    fn finds_a_area_and_link_hrefs() {
        let out = extract(
            r##"<html><head><link rel="stylesheet" href="/s.css"><title> Hello
            &amp; welcome </title></head><body><a href="x">x</a><A HREF='/y?a=1&amp;b=2'>y</A>
            <map><area href="../z"></map><a name="anchor">no href</a><a href="#top">frag</a></body></html>"##,
        );
        assert_eq!(out.hrefs, vec!["/s.css", "x", "/y?a=1&b=2", "../z"]);
        assert_eq!(out.title.as_deref(), Some("Hello & welcome"));
        assert!(!out.nofollow);
    }

    #[test]
    fn ignores_script_style_and_comments() {
        let out = extract(
            r#"<script>var s = '<a href="/trap/script">x</a>';</script>
            <style>a { background: url(/trap/style) } </style>
            <!-- <a href="/trap/comment">old</a> -->
            <a href="/real">real</a>"#,
        );
        assert_eq!(out.hrefs, vec!["/real"]);
    }

    #[test]
    fn honours_rel_nofollow_and_meta_robots() {
        let out = extract(r#"<a rel="external nofollow" href="/no">n</a><a href="/yes">y</a>"#);
        assert_eq!(out.hrefs, vec!["/yes"]);
        let out =
            extract(r#"<meta name="ROBOTS" content="noindex, nofollow"><a href="/yes">y</a>"#);
        assert!(out.nofollow);
        assert!(out.hrefs.is_empty());
        let out = extract(r#"<meta name="crawlkeeper" content="none"><a href="/yes">y</a>"#);
        assert!(out.nofollow);
    }

    #[test]
    fn base_href_and_meta_refresh() {
        let out = extract(
            r#"<head><base href="/other/"><meta http-equiv="Refresh" content="0; URL='/next'"></head>"#,
        );
        assert_eq!(out.base.as_deref(), Some("/other/"));
        assert_eq!(out.hrefs, vec!["/next"]);
        let page = Url::parse("http://a.test/dir/page").unwrap();
        assert_eq!(out.base_url(&page).as_str(), "http://a.test/other/");
    }

    #[test]
    fn only_html_is_parsed() {
        let out = extract_with("application/json", r#"{"x": "<a href=\"/trap\">"}"#);
        assert!(out.hrefs.is_empty());
        let out = extract_with("application/xhtml+xml", r#"<a href="/ok">"#);
        assert_eq!(out.hrefs, vec!["/ok"]);
    }

    #[test]
    fn hostile_markup_does_not_panic() {
        let mut html = String::from("<a href=\"");
        html.push_str(&"x".repeat(100_000));
        html.push_str("<<<<>>>><title><title></a></a></");
        let out = extract(&html);
        assert!(out.hrefs.len() <= 1);
        let out = extract("<title>first</title><svg><title>second</title></svg>");
        assert_eq!(out.title.as_deref(), Some("first"));
    }

    #[test]
    fn the_title_is_the_first_html_title_not_one_in_svg_or_math() {
        for (html, title) in [
            (
                "<svg><title>Icon</title></svg><title>Page</title>",
                Some("Page"),
            ),
            ("<body><svg><title>Icon</title></svg><p>x", None),
            (
                "<math><title>M</title></math><title>Page</title>",
                Some("Page"),
            ),
            (
                "<svg><title>Icon <b>x</b></svg><p>y</p><title>Page</title>",
                Some("Page"),
            ),
            (
                "<title>Page</title><svg><title>Icon</title></svg>",
                Some("Page"),
            ),
            (
                "<svg><title>I</title></svg><p>x<title>T &amp; U</title>",
                Some("T & U"),
            ),
            ("<svg><title></title></svg><title>P</title>", Some("P")),
            // No text, no title chosen (lol_html reports no text there).
            ("<title></title><title>B</title>", Some("B")),
        ] {
            for scanner in [true, false] {
                let x = HtmlExtractor::new().with_scanner(scanner);
                let out = run(
                    &x,
                    "text/html",
                    html.as_bytes(),
                    100,
                    Duration::from_secs(60),
                );
                assert_eq!(out.title.as_deref(), title, "{html} (scanner {scanner})");
            }
        }
    }

    #[test]
    fn a_parser_that_gives_up_keeps_the_links_found_before() {
        // Found by fuzzing (fuzz/regressions/html_extract): lol_html panics
        // here in builds with debug assertions, errs in others.
        let out = extract("<a href=/before>b</a><script f=><A </a><a href=/after>a</a>");
        assert_eq!(out.hrefs.first().map(String::as_str), Some("/before"));
    }

    #[test]
    fn a_huge_title_is_cut_at_a_character_boundary() {
        let html = format!("<title>{}</title>", "é".repeat(1_000_000));
        let title = extract(&html).title.unwrap();
        assert!(
            title.len() <= MAX_TITLE && title.len() > MAX_TITLE - 4,
            "{}",
            title.len()
        );
    }

    #[test]
    fn links_past_the_limit_are_counted_not_kept() {
        let html = "<a href=/x>x</a>".repeat(300_000);
        let out = extract_limited(
            "text/html",
            html.as_bytes(),
            10_000,
            Duration::from_secs(60),
        );
        assert_eq!(out.hrefs.len(), 10_000);
        assert_eq!(out.dropped_links, 290_000);
        assert_eq!(out.cut_short, None);
    }

    #[test]
    fn extraction_stops_at_its_deadline_keeping_what_it_found() {
        let html = "<a href=/x>x</a>".repeat(100_000);
        let out = extract_limited("text/html", html.as_bytes(), 10_000, Duration::ZERO);
        assert_eq!(out.cut_short, Some(CutShort::Time));
        assert!(out.hrefs.is_empty());
    }

    #[test]
    fn hostile_pages_are_parsed_in_bounded_time() {
        // A 10 MiB attribute of `&` (entity decoding once rescanned the rest
        // of the text for every `&`) and a million nested tags.
        let started = std::time::Instant::now();
        let mut amps = b"<a href=\"".to_vec();
        amps.resize(10 * 1024 * 1024, b'&');
        amps.extend_from_slice(b"\">x</a>");
        let out = extract_limited("text/html", &amps, 10_000, Duration::from_secs(60));
        assert_eq!(out.hrefs.len(), 1);
        let nested = "<div><b><i>".repeat(1_000_000);
        let out = extract_limited(
            "text/html",
            nested.as_bytes(),
            10_000,
            Duration::from_secs(60),
        );
        assert!(out.hrefs.is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "took {:?}",
            started.elapsed()
        );
    }
}
