//! What an independent HTML parser (html5ever, through `scraper`, scripting
//! on as in a browser with JavaScript) makes of a page: its links (`a`,
//! `area`, `link` hrefs, resolved against the first `<base href>`), its
//! title (`document.title`) and its text's words, by the same rules as the
//! extraction's but read from a real tree.

use scraper::{Html, Node};
use url::Url;

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";
/// The `--extract` fields compared: name and selector (each `NAME[]=SEL`).
pub(super) const FIELDS: [(&str, &str); 9] = [
    ("li", "li"),
    ("li2", "li:nth-child(2)"),
    ("p", "p"),
    ("dt", "dt"),
    ("dd", "dd"),
    ("option", "option"),
    ("tr", "tr"),
    ("td", "td"),
    ("th", "th"),
];
const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// What the reference finds in one page.
pub(super) struct Found {
    /// Links, resolved, sorted.
    pub(super) links: Vec<String>,
    /// `document.title`: the first HTML `<title>`'s text, ASCII whitespace
    /// stripped and collapsed; `None` when empty.
    pub(super) title: Option<String>,
    /// The page's text split into words.
    pub(super) words: Vec<String>,
    /// The values of each of [`FIELDS`] (words joined by one space).
    pub(super) fields: Vec<Vec<String>>,
}

/// Reads `html` as if fetched from `page`.
pub(super) fn read(html: &str, page: &Url) -> Found {
    let doc = Html::parse_document(html);
    let elements = || {
        doc.tree
            .root()
            .descendants()
            .filter_map(|n| match n.value() {
                Node::Element(e) if !inside_template(n) => Some((n, e)),
                _ => None,
            })
    };
    let base = elements()
        .find(|(_, e)| ns(e) == HTML_NS && e.name() == "base" && e.attr("href").is_some())
        .and_then(|(_, e)| page.join(e.attr("href").unwrap_or_default().trim()).ok())
        .unwrap_or_else(|| page.clone());
    let mut links: Vec<String> = elements()
        .filter(|(_, e)| {
            let ns = ns(e);
            (ns == HTML_NS && matches!(e.name(), "a" | "area" | "link"))
                || (ns == SVG_NS && e.name() == "a")
        })
        .filter_map(|(_, e)| {
            let href = e.attr("href")?.trim_matches(|c: char| c <= ' ');
            let rel = e.attr("rel").unwrap_or_default().to_ascii_lowercase();
            let skip = rel
                .split_ascii_whitespace()
                .any(|r| matches!(r, "nofollow" | "preconnect" | "dns-prefetch"));
            (!skip && !href.is_empty() && !href.starts_with('#')).then(|| resolve(&base, href))
        })
        .collect();
    links.sort();
    let title = elements()
        .find(|(_, e)| ns(e) == HTML_NS && e.name() == "title")
        .map(|(n, _)| {
            let mut s = String::new();
            for d in n.descendants() {
                if let Node::Text(t) = d.value() {
                    s.push_str(t);
                }
            }
            s.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
        })
        .filter(|t| !t.is_empty());
    let mut text = String::new();
    walk_text(doc.tree.root(), &mut text);
    let fields = FIELDS
        .iter()
        .map(|(_, selector)| {
            let selector = scraper::Selector::parse(selector).expect("valid selector");
            elements()
                .filter_map(|(n, _)| scraper::ElementRef::wrap(n))
                .filter(|e| selector.matches(e))
                .map(|e| field_text(e, &selector))
                .collect()
        })
        .collect();
    Found {
        links,
        title,
        words: words(&text),
        fields,
    }
}

/// `href` resolved against `base` as the extraction resolves its links (kept
/// as written when it does not parse).
pub(super) fn resolve(base: &Url, href: &str) -> String {
    base.join(href)
        .map(String::from)
        .unwrap_or_else(|_| href.to_owned())
}

/// The words of `s` (apart by any Unicode whitespace).
pub(super) fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn inside_template(n: ego_tree::NodeRef<'_, Node>) -> bool {
    n.ancestors().any(|a| matches!(a.value(), Node::Fragment))
}

/// The text of the tree under `n` by `--text`'s rules: hidden elements
/// left out, blocks and cells apart from what is around them.
fn walk_text(n: ego_tree::NodeRef<'_, Node>, out: &mut String) {
    match n.value() {
        Node::Text(t) => out.push_str(t),
        Node::Fragment => {}
        Node::Element(e) => {
            let kind = super::super::text::kind(e.name(), e.attr("hidden").is_some());
            use super::super::text::Kind;
            match kind {
                Kind::Hides => {}
                Kind::Block | Kind::Cell => {
                    out.push(' ');
                    n.children().for_each(|c| walk_text(c, out));
                    out.push(' ');
                }
                Kind::Inline => n.children().for_each(|c| walk_text(c, out)),
            }
        }
        _ => n.children().for_each(|c| walk_text(c, out)),
    }
}

/// The namespace of `e`.
fn ns(e: &scraper::node::Element) -> &str {
    &e.name.ns
}

/// The text of field match `e` by the fields' documented rule: the text of
/// its descendants (not of raw-text elements) up to where another match of
/// the same selector inside it begins, words joined by one space.
fn field_text(e: scraper::ElementRef<'_>, selector: &scraper::Selector) -> String {
    let mut s = String::new();
    for d in e.descendants().skip(1) {
        if let Some(inner) = scraper::ElementRef::wrap(d)
            && selector.matches(&inner)
        {
            break;
        }
        if let Node::Text(t) = d.value() {
            let raw = d
                .parent()
                .and_then(scraper::ElementRef::wrap)
                .is_some_and(|p| {
                    matches!(
                        p.value().name(),
                        "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript"
                    )
                });
            if !raw {
                s.push_str(t);
            }
        }
    }
    words(&s).join(" ")
}
