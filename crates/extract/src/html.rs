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
use super::noscript::Noscript;
use super::parser::{MAX_PARSER_MEMORY, Stopped, guarded};
use super::prefilter::Required;
use super::requisites::{RequisiteSelectors, Requisites};
use super::{CutShort, Extracted, Extractor, Page};
use crate::config::ExtractConfig;
use crate::field_spec::{FieldSpec, FieldSpecError, Take};

/// Bytes handed to the parser at a time; the deadline is checked between
/// chunks, so a page overruns it by at most one chunk's work.
const CHUNK: usize = 64 * 1024;
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
    /// `--noscript-links`: the selector of `<noscript>`, whose content is
    /// then read for links ([`super::noscript`]); `None` when off.
    noscript: Option<Selector>,
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

/// A constant selector, valid.
fn parse_selector(s: &str) -> Selector {
    s.parse::<Selector>().expect("valid selector")
}

impl Default for HtmlExtractor {
    fn default() -> Self {
        // Cannot fail: the selectors are constant and valid.
        let parse = parse_selector;
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
            noscript: None,
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
        x.noscript = config.noscript_links.then(|| parse_selector("noscript"));
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
            && self.noscript.is_none()
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
        let noscript = self
            .noscript
            .as_ref()
            .map(|_| RefCell::new(Noscript::default()));
        let on_noscript_text = |t: &mut TextChunk<'_>| {
            if let Some(n) = &noscript
                && t.text_type() == TextType::RawText
            {
                n.borrow_mut().on_text(
                    t.as_str(),
                    t.last_in_text_node(),
                    &mut state.borrow_mut().out,
                    &limits,
                );
            }
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
        if let Some(selector) = &self.noscript {
            settings = settings.append_element_content_handler((
                Cow::Borrowed(selector),
                ElementContentHandlers::default().text(on_noscript_text),
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
            collector.borrow_mut().on_text(
                i,
                t.as_str(),
                t.source_location().bytes(),
                keep,
                t.last_in_text_node(),
            );
            Ok(())
        });
    }
    (Cow::Borrowed(selector), handlers)
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
