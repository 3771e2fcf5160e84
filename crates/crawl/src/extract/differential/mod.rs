//! The extraction against an independent parser (html5ever): on every page
//! of a generated [`corpus`], the links, the title, the `--text` words and
//! the values of fields of `li`, `p`, `dt`, `dd`, `option`, `tr`, `td` and `th` must be what html5ever's tree gives, but for
//! the differences listed in [`KNOWN`], each with its reason.

mod corpus;
mod reference;

use std::collections::BTreeSet;
use std::time::Duration;

use url::Url;

use super::html::HtmlExtractor;
use super::tests_support::{extract_page, extractor};
use super::{Extracted, FieldValue};

/// What is compared on each page.
const ASPECTS: [&str; 4] = ["links", "title", "text", "fields"];

/// The pages where the extraction and html5ever are known to differ, by
/// aspect and page name, with the reason.
const KNOWN: &[(&str, &str, &str)] = &[];

/// What the extraction finds in one page, as the reference reports it.
struct Ours {
    links: Vec<String>,
    title: Option<String>,
    words: Vec<String>,
    fields: Vec<Vec<String>>,
}

fn ours(html: &str, page: &Url) -> Ours {
    let time = Duration::from_secs(60);
    let specs: Vec<String> = reference::FIELDS
        .iter()
        .map(|(n, s)| format!("{n}[]={s}"))
        .collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let default = extract_page(&HtmlExtractor::new(), html.as_bytes(), time);
    let with_text = extract_page(
        &extractor(&specs, false, false, Some(1 << 20)),
        html.as_bytes(),
        time,
    );
    let base = default.base_url(page);
    let mut links: Vec<String> = default
        .hrefs
        .iter()
        .map(|h| reference::resolve(&base, h))
        .collect();
    links.sort();
    Ours {
        links,
        title: default.title.clone(),
        words: match with_text.fields.get("text") {
            Some(FieldValue::One(t)) => reference::words(t),
            _ => Vec::new(),
        },
        fields: reference::FIELDS
            .iter()
            .map(|(n, _)| values(&with_text, n))
            .collect(),
    }
}

fn values(out: &Extracted, name: &str) -> Vec<String> {
    match out.fields.get(name) {
        Some(FieldValue::Many(v)) => v.iter().map(|s| reference::words(s).join(" ")).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn extraction_agrees_with_html5ever() {
    let page = Url::parse("http://a.test/dir/page").unwrap();
    let pages = corpus::all();
    let mut agree = [0usize; ASPECTS.len()];
    let mut differ: BTreeSet<(&str, String)> = BTreeSet::new();
    let mut shown = [0usize; ASPECTS.len()];
    for (name, html) in &pages {
        let ours = ours(html, &page);
        let theirs = reference::read(html, &page);
        let same = [
            ours.links == theirs.links,
            ours.title == theirs.title,
            ours.words == theirs.words,
            ours.fields == theirs.fields,
        ];
        for (i, aspect) in ASPECTS.iter().enumerate() {
            if same[i] {
                agree[i] += 1;
                continue;
            }
            differ.insert((aspect, name.clone()));
            if shown[i] < 10 && !KNOWN.iter().any(|(a, n, _)| a == aspect && n == name) {
                shown[i] += 1;
                let (o, t) = match i {
                    0 => (format!("{:?}", ours.links), format!("{:?}", theirs.links)),
                    1 => (format!("{:?}", ours.title), format!("{:?}", theirs.title)),
                    2 => (format!("{:?}", ours.words), format!("{:?}", theirs.words)),
                    _ => (format!("{:?}", ours.fields), format!("{:?}", theirs.fields)),
                };
                println!("{aspect} differ on {name}: {html}\n  ours:      {o}\n  html5ever: {t}");
            }
        }
    }
    for (i, aspect) in ASPECTS.iter().enumerate() {
        println!("{aspect}: {}/{} pages agree", agree[i], pages.len());
    }
    let known: BTreeSet<(&str, String)> = KNOWN
        .iter()
        .map(|(a, n, _)| (*a, (*n).to_owned()))
        .collect();
    let unexpected: Vec<_> = differ.difference(&known).collect();
    let gone: Vec<_> = known.difference(&differ).collect();
    assert!(
        unexpected.is_empty(),
        "{} unexpected differences, the first: {:?}",
        unexpected.len(),
        &unexpected[..unexpected.len().min(20)]
    );
    assert!(gone.is_empty(), "known differences now agree: {gone:?}");
}
