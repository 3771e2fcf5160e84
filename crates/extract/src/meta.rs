//! The page's meta tags (`--extract-meta`), collected while the
//! [`HtmlExtractor`](super::HtmlExtractor) streams a page through lol_html:
//! `description`, `keywords`, `robots` and every `og:*` and `twitter:*`
//! (`<meta name=…>` or `<meta property=…>`), `canonical`
//! (`<link rel=canonical href>`, resolved against the page's base) and
//! `lang` (`<html lang>`).
//!
//! The first occurrence of a key wins; keys are lower-cased; values have
//! their character references decoded and whitespace collapsed. A page
//! keeps at most [`MAX_META_KEYS`] keys, each value at most
//! [`MAX_VALUE_BYTES`] of the source text, all of them within the page's
//! [`MAX_PAGE_FIELD_BYTES`]; losing anything to a cap names `meta` in the
//! record's `fields_cut`.

use crawlkeeper_model::text::cut_at;
use std::collections::BTreeMap;

use super::entities::decode_attribute as decode;
use crate::field_spec::{MAX_PAGE_FIELD_BYTES, MAX_VALUE_BYTES};

/// The most keys the `meta` object of a page has.
pub const MAX_META_KEYS: usize = 200;

/// The meta tags of one page, gathered as it streams through.
#[derive(Default)]
pub(crate) struct Meta {
    values: BTreeMap<String, String>,
    /// `<link rel=canonical href>` as written, resolved at the end.
    canonical: Option<String>,
    /// Bytes kept so far.
    total: usize,
    cut: bool,
}

/// True for the keys of `<meta name|property>` kept.
fn wanted(key: &str) -> bool {
    matches!(key, "description" | "keywords" | "robots")
        || key.starts_with("og:")
        || key.starts_with("twitter:")
}

impl Meta {
    /// A `<meta>` element: its `name` and `property` (either may name a
    /// key), and its `content`.
    pub(crate) fn on_meta(&mut self, name: Option<&str>, property: Option<&str>, content: &str) {
        for key in [property, name].into_iter().flatten() {
            let key = key.trim().to_ascii_lowercase();
            if wanted(&key) {
                self.insert(key, content);
            }
        }
    }

    /// A `<link>` element with `rel` and `href`.
    pub(crate) fn on_link(&mut self, rel: &str, href: &str) {
        if self.canonical.is_none()
            && rel
                .split_ascii_whitespace()
                .any(|r| r.eq_ignore_ascii_case("canonical"))
        {
            if self.values.len() >= MAX_META_KEYS {
                self.cut = true;
                return;
            }
            let Some(kept) = self.keep(href.trim()) else {
                return;
            };
            self.canonical = Some(decode(kept).into_owned());
        }
    }

    /// An `<html lang>`.
    pub(crate) fn on_lang(&mut self, lang: &str) {
        self.insert("lang".to_owned(), lang);
    }

    /// Keeps `raw` as `key`'s value unless the key has one already.
    fn insert(&mut self, key: String, raw: &str) {
        if self.values.contains_key(&key) {
            return;
        }
        // `canonical` is kept apart until the end; it counts as a key.
        let keys = self.values.len() + usize::from(self.canonical.is_some());
        if keys >= MAX_META_KEYS {
            self.cut = true;
            return;
        }
        if let Some(kept) = self.keep(raw) {
            let value = decode(kept)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            self.values.insert(key, value);
        }
    }

    /// The part of `raw` the caps leave room for, counted as kept; `None`
    /// (and the page's meta cut) when there is none.
    fn keep<'a>(&mut self, raw: &'a str) -> Option<&'a str> {
        let room = MAX_VALUE_BYTES.min(MAX_PAGE_FIELD_BYTES.saturating_sub(self.total));
        let kept = cut_at(raw, room);
        if kept.len() < raw.len() {
            self.cut = true;
            if kept.is_empty() {
                return None;
            }
        }
        self.total += kept.len();
        Some(kept)
    }

    /// The `meta` object, keeping to `budget` bytes (what the page's other
    /// fields left), the bytes it keeps, and whether anything was cut.
    /// `resolve` makes the canonical URL absolute.
    pub(crate) fn finish(
        mut self,
        budget: usize,
        resolve: impl Fn(&str) -> String,
    ) -> (serde_json::Value, usize, bool) {
        if let Some(c) = self.canonical.take() {
            self.values.insert("canonical".to_owned(), resolve(&c));
        }
        let mut used = 0;
        let mut object = serde_json::Map::new();
        for (k, v) in self.values {
            if used + v.len() > budget {
                self.cut = true;
                continue;
            }
            used += v.len();
            object.insert(k, serde_json::Value::String(v));
        }
        (serde_json::Value::Object(object), used, self.cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldValue;
    use crate::tests_support::{extract_page, extractor};
    use serde_json::{Value, json};
    use std::time::Duration;

    /// The `meta` object of `html` (at http://a.test/dir/page) and whether
    /// it was cut.
    fn meta_of(html: &str) -> (Value, bool) {
        let x = extractor(&[], true, false, None);
        let out = extract_page(&x, html.as_bytes(), Duration::from_secs(60));
        match out.fields.get("meta") {
            Some(FieldValue::Json(v)) => (v.clone(), out.fields_cut.contains("meta")),
            other => panic!("meta: {other:?}"),
        }
    }

    #[test]
    fn every_key_is_taken_decoded_and_collapsed() {
        let html = r#"<!DOCTYPE html><HTML LANG="en-GB"><head>
            <meta charset="utf-8">
            <meta name="Description" content="  A kettle
                 &amp; a cup  ">
            <meta name="keywords" content="kettle, cup">
            <meta name="robots" content="index, follow">
            <meta name="viewport" content="width=device-width">
            <meta property="og:title" content="Kettle &#38; Cup">
            <meta property="OG:Image" content="/img/1.jpg">
            <meta name="og:type" content="product">
            <meta name="twitter:card" content="summary">
            <meta property="twitter:site" content="@shop">
            <meta name="author" content="someone">
            <link rel="Canonical" href="/p/42?a=1&amp;b=2">
            </head><body><meta name="description" content="second"></body></html>"#;
        let (meta, cut) = meta_of(html);
        assert_eq!(
            meta,
            json!({
                "lang": "en-GB",
                "description": "A kettle & a cup",
                "keywords": "kettle, cup",
                "robots": "index, follow",
                "og:title": "Kettle & Cup",
                "og:image": "/img/1.jpg",
                "og:type": "product",
                "twitter:card": "summary",
                "twitter:site": "@shop",
                "canonical": "http://a.test/p/42?a=1&b=2",
            })
        );
        assert!(!cut);
    }

    #[test]
    fn absent_keys_are_absent_and_the_first_occurrence_wins() {
        assert_eq!(meta_of("<p>no head</p>"), (json!({}), false));
        let (meta, _) = meta_of(
            r#"<meta name="description" content="first"><meta property="description" content="2">
            <link rel="canonical" href="/a"><link rel="canonical" href="/b">
            <html lang="fr"><html lang="de">"#,
        );
        assert_eq!(
            meta,
            json!({"description": "first", "canonical": "http://a.test/a", "lang": "fr"})
        );
    }

    #[test]
    fn canonical_resolves_against_the_base() {
        let (meta, _) = meta_of(
            r#"<head><base href="http://b.test/x/"><link rel="alternate canonical" href="y"></head>"#,
        );
        assert_eq!(meta, json!({"canonical": "http://b.test/x/y"}));
        let (meta, _) = meta_of(r#"<link rel="canonical" href="other">"#);
        assert_eq!(meta, json!({"canonical": "http://a.test/dir/other"}));
    }

    #[test]
    fn keys_and_values_are_capped_and_the_cut_is_said() {
        let many: String = (0..1000)
            .map(|i| format!(r#"<meta property="og:k{i}" content="v">"#))
            .collect();
        let (meta, cut) = meta_of(&many);
        assert_eq!(meta.as_object().unwrap().len(), MAX_META_KEYS);
        assert!(cut);
        let huge = format!(
            r#"<meta name="description" content="{}">"#,
            "é".repeat(MAX_VALUE_BYTES)
        );
        let (meta, cut) = meta_of(&huge);
        let d = meta["description"].as_str().unwrap();
        assert_eq!(d.len(), MAX_VALUE_BYTES);
        assert!(cut);
        // Together within the page's cap.
        let value = "v".repeat(MAX_VALUE_BYTES);
        let big: String = (0..40)
            .map(|i| format!(r#"<meta property="og:k{i}" content="{value}">"#))
            .collect();
        let (meta, cut) = meta_of(&big);
        let kept: usize = meta
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_str().unwrap().len())
            .sum();
        assert_eq!(kept, MAX_PAGE_FIELD_BYTES);
        assert!(cut);
    }

    #[test]
    fn user_fields_and_meta_share_the_page_cap() {
        let value = "v".repeat(MAX_VALUE_BYTES);
        let html = format!(
            r#"{}<meta name="description" content="d">"#,
            format!("<p>{value}</p>").repeat(16)
        );
        let x = extractor(&["p[]=p"], true, false, None);
        let out = extract_page(&x, html.as_bytes(), Duration::from_secs(60));
        assert_eq!(out.fields.get("meta"), Some(&FieldValue::Json(json!({}))));
        assert!(out.fields_cut.contains("meta"), "{:?}", out.fields_cut);
    }
}
