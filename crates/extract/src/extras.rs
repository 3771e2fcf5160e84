//! The lol_html handlers of `--extract-meta` and `--extract-jsonld`, added
//! to the [`HtmlExtractor`](super::HtmlExtractor)'s one pass only when
//! asked for (without them nothing is registered), and `--text`, read by a
//! scanner of its own in step with that pass.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Element, EndTag, TextChunk};
use lol_html::{ElementContentHandlers, Selector, Settings};

use super::jsonld::JsonLd;
use super::meta::Meta;
use super::text::Text;
use super::{Extracted, FieldValue};
use crate::config::ExtractConfig;

/// The selectors of the structured extracts a configuration asks for.
pub(crate) struct ExtraSelectors {
    meta: Option<[Selector; 3]>,
    jsonld: Option<Selector>,
    /// The text's cap in bytes: the text has no handler, it is read by a
    /// scanner of its own ([`Extras::advance`]).
    text: Option<usize>,
}

fn parse(s: &str) -> Selector {
    // Cannot fail: the selectors are constant and valid (a unit test
    // builds every one).
    s.parse::<Selector>().expect("valid selector")
}

impl ExtraSelectors {
    /// The selectors `config` needs.
    pub(crate) fn new(config: &ExtractConfig) -> Self {
        Self {
            meta: config.meta.then(|| {
                [
                    parse("meta[content]"),
                    parse("link[rel][href]"),
                    parse("html[lang]"),
                ]
            }),
            jsonld: config.jsonld.then(|| parse("script[type]")),
            text: config
                .text
                .map(|max| usize::try_from(max).unwrap_or(usize::MAX)),
        }
    }

    /// True when nothing is asked for.
    pub(crate) fn is_empty(&self) -> bool {
        self.meta.is_none() && self.jsonld.is_none() && self.text.is_none()
    }
}

/// What one page's structured extracts gather.
pub(crate) struct Extras {
    meta: Option<Rc<RefCell<Meta>>>,
    jsonld: Option<Rc<RefCell<JsonLd>>>,
    text: Option<Rc<RefCell<Text>>>,
}

impl Extras {
    /// Empty collectors for what `selectors` ask for, in page `body`.
    pub(crate) fn new(selectors: &ExtraSelectors, body: &bytes::Bytes) -> Self {
        Self {
            meta: selectors.meta.as_ref().map(|_| Rc::default()),
            jsonld: selectors.jsonld.as_ref().map(|_| Rc::default()),
            text: selectors
                .text
                .as_ref()
                .map(|max| Rc::new(RefCell::new(Text::new(*max, body.clone())))),
        }
    }

    /// `settings` with the handlers of every collector added.
    pub(crate) fn handlers<'h>(
        &'h self,
        selectors: &'h ExtraSelectors,
        mut settings: Settings<'h, 'h>,
    ) -> Settings<'h, 'h> {
        if let (Some(meta), Some([tags, links, html])) = (&self.meta, &selectors.meta) {
            settings = meta_handlers(meta, [tags, links, html], settings);
        }
        if let (Some(jsonld), Some(scripts)) = (&self.jsonld, &selectors.jsonld) {
            settings = settings.append_element_content_handler(jsonld_handlers(jsonld, scripts));
        }
        settings
    }

    /// The parser has read the page up to byte `to`: the text is read as
    /// far (the page's deadline holds for both).
    pub(crate) fn advance(&self, to: usize) {
        if let Some(text) = &self.text {
            text.borrow_mut().advance(to);
        }
    }

    /// Adds what was gathered to `out`'s fields: the page's other fields
    /// used `used` bytes of its cap; `resolve` makes a URL absolute;
    /// `complete` when the parser read the whole page.
    pub(crate) fn finish(
        self,
        mut used: usize,
        complete: bool,
        resolve: impl Fn(&str) -> String,
        out: &mut Extracted,
    ) {
        let budget = |used: usize| crate::field_spec::MAX_PAGE_FIELD_BYTES.saturating_sub(used);
        if let Some(meta) = self.meta.and_then(|m| Rc::try_unwrap(m).ok()) {
            let (value, kept, cut) = meta.into_inner().finish(budget(used), resolve);
            used += kept;
            out.add_structured("meta", FieldValue::Json(value), cut);
        }
        if let Some(jsonld) = self.jsonld.and_then(|j| Rc::try_unwrap(j).ok()) {
            let (value, _, cut) = jsonld.into_inner().finish(budget(used));
            out.add_structured("jsonld", FieldValue::Json(value), cut);
        }
        if let Some(text) = self.text.and_then(|t| Rc::try_unwrap(t).ok()) {
            let (value, cut) = text.into_inner().finish(complete);
            out.add_structured("text", FieldValue::One(value), cut);
        }
    }
}

impl Extracted {
    /// Adds a structured field `name`, named in `fields_cut` when `cut`.
    fn add_structured(&mut self, name: &str, value: FieldValue, cut: bool) {
        self.fields.insert(name.to_owned(), value);
        if cut {
            self.fields_cut.insert(name.to_owned());
        }
    }
}

fn meta_handlers<'h>(
    meta: &'h Rc<RefCell<Meta>>,
    [tags, links, html]: [&'h Selector; 3],
    settings: Settings<'h, 'h>,
) -> Settings<'h, 'h> {
    let on_tag = move |el: &mut Element<'_, '_>| {
        let content = el.get_attribute("content").unwrap_or_default();
        meta.borrow_mut().on_meta(
            el.get_attribute("name").as_deref(),
            el.get_attribute("property").as_deref(),
            &content,
        );
        Ok(())
    };
    let on_link = move |el: &mut Element<'_, '_>| {
        if let (Some(rel), Some(href)) = (el.get_attribute("rel"), el.get_attribute("href")) {
            meta.borrow_mut().on_link(&rel, &href);
        }
        Ok(())
    };
    let on_html = move |el: &mut Element<'_, '_>| {
        if let Some(lang) = el.get_attribute("lang") {
            meta.borrow_mut().on_lang(&lang);
        }
        Ok(())
    };
    settings
        .append_element_content_handler((
            Cow::Borrowed(tags),
            ElementContentHandlers::default().element(on_tag),
        ))
        .append_element_content_handler((
            Cow::Borrowed(links),
            ElementContentHandlers::default().element(on_link),
        ))
        .append_element_content_handler((
            Cow::Borrowed(html),
            ElementContentHandlers::default().element(on_html),
        ))
}

fn jsonld_handlers<'h>(
    jsonld: &'h Rc<RefCell<JsonLd>>,
    scripts: &'h Selector,
) -> (Cow<'h, Selector>, ElementContentHandlers<'h>) {
    let on_script = move |el: &mut Element<'_, '_>| {
        let ty = el.get_attribute("type").unwrap_or_default();
        if jsonld.borrow_mut().on_script(&ty) && el.can_have_content() {
            let j = Rc::clone(jsonld);
            el.on_end_tag(Box::new(move |_: &mut EndTag<'_>| {
                j.borrow_mut().end();
                Ok(())
            }))?;
        }
        Ok(())
    };
    let on_text = move |t: &mut TextChunk<'_>| {
        jsonld.borrow_mut().on_text(t.as_str());
        Ok(())
    };
    (
        Cow::Borrowed(scripts),
        ElementContentHandlers::default()
            .element(on_script)
            .text(on_text),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selector_compiles_and_nothing_is_asked_by_default() {
        let all = ExtractConfig {
            meta: true,
            jsonld: true,
            text: Some(10),
            ..ExtractConfig::default()
        };
        let s = ExtraSelectors::new(&all);
        assert!(!s.is_empty());
        assert!(ExtraSelectors::new(&ExtractConfig::default()).is_empty());
    }
}
