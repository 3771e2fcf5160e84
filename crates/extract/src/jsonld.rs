//! The page's JSON-LD (`--extract-jsonld`): every
//! `<script type="application/ld+json">` (the type compared without regard
//! to case, parameters ignored), parsed with serde_json, collected while
//! the [`HtmlExtractor`](super::HtmlExtractor) streams a page through
//! lol_html.
//!
//! A page is hostile input: a script over [`MAX_SCRIPT_BYTES`] is not
//! parsed, at most [`MAX_SCRIPTS`] scripts are read, and their text counts
//! toward the page's [`MAX_PAGE_FIELD_BYTES`]. serde_json refuses nesting
//! deeper than 128 levels (its recursion limit), so no script can exhaust
//! the stack. A script left out for any of these reasons, or because it is
//! not valid JSON, names `jsonld` in the record's `fields_cut`.

use crate::field_spec::MAX_PAGE_FIELD_BYTES;

/// The most bytes of one script parsed.
pub const MAX_SCRIPT_BYTES: usize = 256 * 1024;
/// The most JSON-LD scripts read from one page.
pub const MAX_SCRIPTS: usize = 32;

/// A script being read.
struct Open {
    text: String,
    /// It outgrew a cap: its text is dropped, it will not be parsed.
    dropped: bool,
}

/// The JSON-LD of one page, gathered as it streams through.
#[derive(Default)]
pub(crate) struct JsonLd {
    open: Option<Open>,
    scripts: usize,
    /// Each parsed script, with the bytes of its text.
    values: Vec<(serde_json::Value, usize)>,
    /// Bytes of text held or kept so far.
    total: usize,
    cut: bool,
}

/// True when a `<script type>` holds JSON-LD.
pub(crate) fn is_jsonld(script_type: &str) -> bool {
    script_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"))
}

impl JsonLd {
    /// A `<script>` of type `script_type` starts; true when its text is
    /// read (its end tag should then be reported).
    pub(crate) fn on_script(&mut self, script_type: &str) -> bool {
        self.end();
        if !is_jsonld(script_type) {
            return false;
        }
        if self.scripts >= MAX_SCRIPTS {
            self.cut = true;
            return false;
        }
        self.scripts += 1;
        self.open = Some(Open {
            text: String::new(),
            dropped: false,
        });
        true
    }

    /// Text of the script being read, if any.
    pub(crate) fn on_text(&mut self, text: &str) {
        let Some(open) = &mut self.open else {
            return;
        };
        if open.dropped {
            return;
        }
        if open.text.len() + text.len() > MAX_SCRIPT_BYTES
            || self.total + text.len() > MAX_PAGE_FIELD_BYTES
        {
            self.total -= open.text.len();
            open.text = String::new();
            open.dropped = true;
            self.cut = true;
            return;
        }
        self.total += text.len();
        open.text.push_str(text);
    }

    /// The script being read ends: its text is parsed.
    pub(crate) fn end(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        if open.dropped {
            return;
        }
        match serde_json::from_str::<serde_json::Value>(open.text.trim()) {
            Ok(v) => self.values.push((v, open.text.len())),
            Err(_) => {
                self.total -= open.text.len();
                self.cut = true;
            }
        }
    }

    /// The `jsonld` array, keeping to `budget` bytes of script text (what
    /// the page's other fields left), the bytes it keeps, and whether any
    /// script was left out.
    pub(crate) fn finish(mut self, budget: usize) -> (serde_json::Value, usize, bool) {
        self.end();
        let mut used = 0;
        let mut kept = Vec::with_capacity(self.values.len());
        for (v, len) in self.values {
            if used + len > budget {
                self.cut = true;
                continue;
            }
            used += len;
            kept.push(v);
        }
        (serde_json::Value::Array(kept), used, self.cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldValue;
    use crate::tests_support::{extract_page, extractor};
    use serde_json::{Value, json};
    use std::time::Duration;

    /// The `jsonld` array of `html` and whether it was cut.
    fn jsonld_of(html: &str) -> (Value, bool) {
        let x = extractor(&[], false, true, None);
        let out = extract_page(&x, html.as_bytes(), Duration::from_secs(60));
        match out.fields.get("jsonld") {
            Some(FieldValue::Json(v)) => (v.clone(), out.fields_cut.contains("jsonld")),
            other => panic!("jsonld: {other:?}"),
        }
    }

    fn script(ty: &str, body: &str) -> String {
        format!(r#"<script type="{ty}">{body}</script>"#)
    }

    #[test]
    fn valid_scripts_are_parsed_in_order_whatever_the_case_of_the_type() {
        let html = format!(
            "<head>{}{}{}{}</head><body>{}</body>",
            script(
                "application/ld+json",
                r#" {"@type": "Product", "name": "Kettle &amp; <b>", "offers": {"price": "9.99"}} "#
            ),
            script("text/javascript", r#"{"not": "ld"}"#),
            script("Application/LD+JSON; charset=utf-8", r#"[1, 2]"#),
            r#"<script>{"no": "type"}</script>"#,
            script("APPLICATION/LD+JSON", r#"{"@type": "Organization"}"#),
        );
        let (v, cut) = jsonld_of(&html);
        assert_eq!(
            v,
            json!([
                {"@type": "Product", "name": "Kettle &amp; <b>", "offers": {"price": "9.99"}},
                [1, 2],
                {"@type": "Organization"}
            ])
        );
        assert!(!cut);
        assert_eq!(jsonld_of("<p>none</p>"), (json!([]), false));
    }

    #[test]
    fn an_invalid_script_is_left_out_and_said() {
        let html = format!(
            "{}{}{}",
            script("application/ld+json", r#"{"a": 1,}"#),
            script("application/ld+json", r#"{"b": 2}"#),
            script("application/ld+json", ""),
        );
        assert_eq!(jsonld_of(&html), (json!([{"b": 2}]), true));
        // Never closed: what it holds at the end is parsed.
        let (v, _) = jsonld_of(r#"<script type="application/ld+json">{"c": 3}"#);
        assert_eq!(v, json!([{"c": 3}]));
    }

    #[test]
    fn a_huge_script_is_not_parsed_and_said() {
        let big = format!(r#"{{"x": "{}"}}"#, "a".repeat(MAX_SCRIPT_BYTES));
        let html = format!(
            "{}{}",
            script("application/ld+json", &big),
            script("application/ld+json", "true")
        );
        assert_eq!(jsonld_of(&html), (json!([true]), true));
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        for body in ["[".repeat(100_000), "{\"a\":".repeat(50_000)] {
            let html = format!(
                "{}{}",
                script("application/ld+json", &body),
                script("application/ld+json", "{}")
            );
            assert_eq!(jsonld_of(&html), (json!([{}]), true));
        }
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let (v, cut) = jsonld_of(&script("application/ld+json", &ok));
        assert!(!cut && v.as_array().unwrap().len() == 1);
    }

    #[test]
    fn many_scripts_keep_the_first_ones_within_the_caps() {
        let html = script("application/ld+json", "1").repeat(1000);
        let (v, cut) = jsonld_of(&html);
        assert_eq!(v.as_array().unwrap().len(), MAX_SCRIPTS);
        assert!(cut);
        // Each under the script cap, together over the page's.
        let body = format!(r#""{}""#, "v".repeat(200 * 1024));
        let html = script("application/ld+json", &body).repeat(8);
        let (v, cut) = jsonld_of(&html);
        assert_eq!(v.as_array().unwrap().len(), 5, "5 × 200 KiB fit in 1 MiB");
        assert!(cut);
    }
}
