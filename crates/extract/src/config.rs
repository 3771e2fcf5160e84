//! What the extractors are asked to take from every HTML page beyond its
//! links: fields by CSS selector, meta tags, JSON-LD, text.

use serde::{Deserialize, Serialize};

/// Default cap of a page's text (`--text`): 1 MiB.
pub const DEFAULT_MAX_TEXT: u64 = 1024 * 1024;
/// The names of the fields `--extract-meta`, `--extract-jsonld` and
/// `--text` fill, which `--extract` fields may not take while they are on.
pub const STRUCTURED_FIELDS: [&str; 3] = ["meta", "jsonld", "text"];

/// Fields taken from every HTML page, in the record's `fields`. Each
/// option is left out of the serialized configuration when off, so a job
/// keeps its identity when options it does not use are added.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExtractConfig {
    /// `--extract NAME=SELECTOR[@attr|::text|::html]`, in order; evaluated
    /// by the `html` extractor in its one pass over a page.
    pub fields: Vec<crate::field_spec::FieldSpec>,
    /// `--extract-meta`: the page's meta tags, canonical URL and language
    /// in `fields.meta`. Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub meta: bool,
    /// `--extract-jsonld`: the page's JSON-LD scripts, parsed, in
    /// `fields.jsonld`. Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub jsonld: bool,
    /// `--text` (with `--max-text`): the page's text as a reader sees it
    /// in `fields.text`, at most this many bytes. Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<u64>,
    /// `--noscript-links`: the links inside `<noscript>` are read too, as
    /// a browser with JavaScript off reads them. Default false: a page is
    /// read as a browser with JavaScript on reads it, `<noscript>` content
    /// being text.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub noscript_links: bool,
}

impl ExtractConfig {
    /// True when nothing is asked for (nor `--noscript-links`).
    pub fn is_empty(&self) -> bool {
        self.asks_no_fields() && !self.noscript_links
    }

    /// True when no field is asked for: records have no `fields`.
    pub fn asks_no_fields(&self) -> bool {
        self.fields.is_empty() && !self.meta && !self.jsonld && self.text.is_none()
    }

    /// Which of `meta`, `jsonld` and `text` are asked for.
    fn structured(&self) -> [bool; 3] {
        [self.meta, self.jsonld, self.text.is_some()]
    }

    /// What is wrong with the fields asked for, one sentence each: a name
    /// given twice, a name `--extract-meta`, `--extract-jsonld` or
    /// `--text` fills, a zero `--max-text`. Selectors are compiled (and
    /// refused) by the `html` extractor.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut names = std::collections::BTreeSet::new();
        for f in &self.fields {
            if !names.insert(f.name.as_str()) {
                problems.push(format!("--extract: the field '{}' is given twice", f.name));
            }
        }
        for (name, on) in STRUCTURED_FIELDS.iter().zip(self.structured()) {
            if on && names.contains(name) {
                let flag = match *name {
                    "meta" => "--extract-meta",
                    "jsonld" => "--extract-jsonld",
                    _ => "--text",
                };
                problems.push(format!(
                    "--extract: the field '{name}' is {flag}'s; give the field another name"
                ));
            }
        }
        if self.text == Some(0) {
            problems.push("max_text must be at least 1".to_owned());
        }
        problems
    }
}
