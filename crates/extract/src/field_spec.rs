//! Fields by CSS selector as a user asks for them (`--extract
//! 'NAME=SELECTOR[@attr|::text|::html]'`): plain data of the crawl's
//! configuration, and the caps that keep a hostile page's fields bounded.
//! The [`HtmlExtractor`](crate::HtmlExtractor) collects their
//! values (`fields.rs`).
//!
//! A page is hostile input: a field keeps at most [`MAX_FIELD_VALUES`]
//! values of at most [`MAX_VALUE_BYTES`] bytes each, and a page's fields
//! together at most [`MAX_PAGE_FIELD_BYTES`]; a field that lost anything to
//! a cap is named in the record's `fields_cut`.

use std::fmt;
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

/// A field's value in one page: the first match's, or every match's
/// (`NAME[]`), or any JSON (meta, JSON-LD, what a processor returns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// The first match's value.
    One(String),
    /// Every match's value, in document order.
    Many(Vec<String>),
    /// A structured value: an object of meta tags, parsed JSON-LD, or what
    /// a processor answered.
    Json(serde_json::Value),
}

impl From<FieldValue> for serde_json::Value {
    fn from(v: FieldValue) -> Self {
        match v {
            FieldValue::One(s) => Self::String(s),
            FieldValue::Many(v) => Self::Array(v.into_iter().map(Self::String).collect()),
            FieldValue::Json(v) => v,
        }
    }
}
