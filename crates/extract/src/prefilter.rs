//! A cheap test that rules a CSS selector out of a page before the parser
//! runs: a selector can only match where the page's bytes contain the
//! literals it names (a class, an id, an attribute, a tag). Regular
//! expression engines skip a search the same way when a required literal
//! is absent.
//!
//! lol_html compiles its selectors for every page and matches them against
//! every element; a field whose class a page never mentions (a product's
//! `.price` on a category page) costs that work for nothing. Leaving it out
//! of that page's parser changes nothing in what is found, since it could
//! not have matched.
//!
//! Sound, not complete: a literal found does not mean a match. A selector
//! whose literals cannot be read with certainty (escapes, quoting the
//! reader does not know, a literal that is not ASCII) is never ruled out.
//! lol_html compares raw bytes (attribute values are not decoded before
//! matching), tag and attribute names without regard to ASCII case, class
//! and id exactly, and other attribute values with or without case by the
//! attribute: every literal but a class or an id is looked for without
//! regard to ASCII case.

use memchr::memmem::Finder;

/// A literal a page must contain.
#[derive(Debug)]
enum Needle {
    /// These bytes exactly (a class or an id).
    Exact(Box<Finder<'static>>),
    /// These bytes (ASCII lower case) in any ASCII case.
    AnyCase(Vec<u8>),
}

impl Needle {
    fn found_in(&self, page: &[u8]) -> bool {
        match self {
            Self::Exact(finder) => finder.find(page).is_some(),
            Self::AnyCase(needle) => contains_any_case(page, needle),
        }
    }
}

/// What a page must contain for a selector to match in it: for one of the
/// selector list's alternatives, that alternative's literal.
#[derive(Debug)]
pub(crate) struct Required {
    any_of: Vec<Needle>,
}

impl Required {
    /// The literals of `selector`, or `None` when a page can never be ruled
    /// out: an alternative names none (`*`, `:first-child`), or the
    /// selector is written in a way this reader does not follow.
    pub(crate) fn of(selector: &str) -> Option<Self> {
        let mut any_of = Vec::new();
        for alternative in split_top_level(selector)? {
            any_of.push(best_literal(alternative)?);
        }
        (!any_of.is_empty()).then_some(Self { any_of })
    }

    /// False when the selector cannot match anything in `page`.
    pub(crate) fn may_match(&self, page: &[u8]) -> bool {
        self.any_of.iter().any(|n| n.found_in(page))
    }
}

/// A literal of a compound selector, by how much it tells.
#[derive(Debug)]
enum Literal {
    /// A tag name: `<name` is in the page.
    Tag(Vec<u8>),
    /// An attribute's name.
    AttrName(Vec<u8>),
    /// A part of an attribute's value.
    AttrValue(Vec<u8>),
    /// A class or an id, matched exactly.
    Exact(Vec<u8>),
}

impl Literal {
    /// Rank: exact literals are searched fastest; then the longer the
    /// rarer.
    fn rank(&self) -> (u8, usize) {
        match self {
            Self::Tag(b) => (0, b.len()),
            Self::AttrName(b) => (1, b.len()),
            Self::AttrValue(b) => (2, b.len()),
            Self::Exact(b) => (3, b.len()),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Self::Tag(b) | Self::AttrName(b) | Self::AttrValue(b) | Self::Exact(b) => b,
        }
    }

    fn into_needle(self) -> Needle {
        match self {
            Self::Exact(b) => Needle::Exact(Box::new(Finder::new(&b).into_owned())),
            Self::Tag(name) => {
                let mut n = Vec::with_capacity(name.len() + 1);
                n.push(b'<');
                n.extend(name.iter().map(u8::to_ascii_lowercase));
                Needle::AnyCase(n)
            }
            Self::AttrName(b) | Self::AttrValue(b) => {
                Needle::AnyCase(b.iter().map(u8::to_ascii_lowercase).collect())
            }
        }
    }
}

/// The most telling literal of one complex selector (compounds apart by
/// combinators: every one of them must match, so any literal of any of
/// them is required).
fn best_literal(selector: &str) -> Option<Needle> {
    let literals = literals(selector.as_bytes())?;
    literals
        .into_iter()
        .filter(|l| !l.bytes().is_empty() && l.bytes().is_ascii())
        .max_by_key(Literal::rank)
        .map(Literal::into_needle)
}

/// The selector list's alternatives (split at commas outside brackets,
/// parentheses and quotes); `None` when quoting is not closed.
fn split_top_level(selector: &str) -> Option<Vec<&str>> {
    let b = selector.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut quote) = (0usize, 0usize, None::<u8>);
    for (i, &c) in b.iter().enumerate() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), b'\\') => return None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(c),
            (None, b'(' | b'[') => depth += 1,
            (None, b')' | b']') => depth = depth.checked_sub(1)?,
            (None, b',') if depth == 0 => {
                parts.push(&selector[start..i]);
                start = i + 1;
            }
            (None, _) => {}
        }
    }
    if quote.is_some() || depth != 0 {
        return None;
    }
    parts.push(&selector[start..]);
    Some(parts)
}

/// Whether `c` may be part of a CSS identifier as this reader accepts it
/// (no escapes; non-ASCII is kept, and ruled out as a literal later).
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c >= 0x80
}

/// Every literal of a complex selector's compounds; `None` when something
/// is written in a way this reader does not follow.
fn literals(b: &[u8]) -> Option<Vec<Literal>> {
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |i: usize| {
        let mut j = i;
        while j < b.len() && is_ident(b[j]) {
            j += 1;
        }
        j
    };
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() || c == b'>' || c == b'+' || c == b'~' => i += 1,
            b'*' => i += 1,
            b'.' | b'#' => {
                let end = ident(i + 1);
                if end == i + 1 {
                    return None;
                }
                out.push(Literal::Exact(b[i + 1..end].to_vec()));
                i = end;
            }
            b'[' => {
                let close = i + memchr::memchr(b']', &b[i..])?;
                attribute(&b[i + 1..close], &mut out)?;
                i = close + 1;
            }
            b':' => {
                // A pseudo-class names nothing a page must contain (its
                // argument, as in `:not(.x)`, may even exclude one).
                let mut j = i + 1;
                while j < b.len() && b[j] == b':' {
                    j += 1;
                }
                j = ident(j);
                if b.get(j) == Some(&b'(') {
                    let mut depth = 0usize;
                    loop {
                        match b.get(j)? {
                            b'(' => depth += 1,
                            b')' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            b'"' | b'\'' | b'\\' => return None,
                            _ => {}
                        }
                        j += 1;
                    }
                    j += 1;
                }
                i = j;
            }
            c if is_ident(c) => {
                let end = ident(i);
                // A namespace prefix (`svg|rect`) is not followed here.
                if b.get(end) == Some(&b'|') {
                    return None;
                }
                out.push(Literal::Tag(b[i..end].to_vec()));
                i = end;
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The literals of an attribute selector's inside (`name`, `name=value`,
/// `name^="value" i`, …).
fn attribute(inside: &[u8], out: &mut Vec<Literal>) -> Option<()> {
    let s = trim(inside);
    let name_end = s.iter().position(|&c| !is_ident(c)).unwrap_or(s.len());
    if name_end == 0 {
        return None;
    }
    out.push(Literal::AttrName(s[..name_end].to_vec()));
    let rest = trim(&s[name_end..]);
    if rest.is_empty() {
        return Some(());
    }
    let op_len = match rest {
        [b'=', ..] => 1,
        [b'~' | b'|' | b'^' | b'$' | b'*', b'=', ..] => 2,
        _ => return None,
    };
    let rest = trim(&rest[op_len..]);
    let value = match rest.first()? {
        &q @ (b'"' | b'\'') => {
            let end = 1 + memchr::memchr(q, &rest[1..])?;
            if rest[1..end].contains(&b'\\') {
                return None;
            }
            &rest[1..end]
        }
        _ => {
            let end = rest
                .iter()
                .position(|&c| !is_ident(c))
                .unwrap_or(rest.len());
            &rest[..end]
        }
    };
    out.push(Literal::AttrValue(value.to_vec()));
    Some(())
}

fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// Whether `haystack` contains `needle` (ASCII lower case) in any ASCII
/// case.
pub(super) fn contains_any_case(haystack: &[u8], needle: &[u8]) -> bool {
    find_any_case(haystack, needle).is_some()
}

/// Where `haystack` first contains `needle` (ASCII lower case) in any
/// ASCII case.
pub(super) fn find_any_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&first, rest)) = needle.split_first() else {
        return Some(0);
    };
    let upper = first.to_ascii_uppercase();
    let mut from = 0;
    while let Some(at) = memchr::memchr2(first, upper, &haystack[from..]) {
        let start = from + at;
        let tail = &haystack[start + 1..];
        if tail.len() < rest.len() {
            return None;
        }
        if tail[..rest.len()].eq_ignore_ascii_case(rest) {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn may(selector: &str, page: &str) -> bool {
        Required::of(selector).is_none_or(|r| r.may_match(page.as_bytes()))
    }

    #[test]
    fn a_class_absent_from_the_page_rules_the_selector_out() {
        assert!(!may(".price", "<p class=cost>1</p>"));
        assert!(may(".price", "<p class='a price'>1</p>"));
        // Classes match exactly: PRICE is not price.
        assert!(!may(".price", "<p class=PRICE>1</p>"));
        assert!(!may("div#main", "<div id=other>"));
    }

    #[test]
    fn tags_attributes_and_values_are_looked_for_in_any_case() {
        assert!(may("h1", "<H1>x</H1>"));
        assert!(!may("h1", "<h2>h1</h2>"));
        assert!(may("link[rel=canonical]", "<LINK REL=CANONICAL href=/>"));
        assert!(!may("link[rel=canonical]", "<link rel=icon>"));
        assert!(may("a[href^='https://']", "<a HREF='HTTPS://x'>"));
        assert!(may("[data-id]", "<p DATA-ID=1>"));
    }

    #[test]
    fn a_list_matches_where_any_alternative_may() {
        assert!(may(".aa, .bb", "<p class=bb>"));
        assert!(!may(".aa, .bb", "<p class=cc>"));
        // One alternative with nothing to look for: never ruled out.
        assert!(Required::of(".a, *").is_none());
        assert!(Required::of("*").is_none());
        assert!(Required::of(":first-child").is_none());
    }

    #[test]
    fn compounds_of_a_complex_selector_each_give_a_literal() {
        let r = Required::of("ul.menu > li a[href]").unwrap();
        // The exact class is the best of them.
        assert!(!r.may_match(b"<ul><li><a href=x>"));
        assert!(r.may_match(b"<ul class=menu>"));
    }

    #[test]
    fn what_it_cannot_read_for_sure_is_never_ruled_out() {
        for s in [
            r".a\:b",
            "svg|rect",
            "p:not([title='a,b'])",
            "[title=\"a\\\"b\"]",
            ".é",
            "[",
            "a[href=x",
        ] {
            assert!(Required::of(s).is_none(), "{s}");
        }
        // A non-ASCII class leaves the tag as the literal.
        assert!(may("p.é", "<p class=x>"));
        assert!(!may("p.é", "<div>"));
        // `:not(.x)` names nothing required; the tag still is.
        assert!(may("p:not(.x)", "<p>"));
        assert!(!may("p:not(.x)", "<div class=x>"));
    }

    /// What the extractor finds with the prefilter is what it finds
    /// without: every selector against every page, pages written to
    /// tempt a wrong shortcut (case, entities, comments, lists, `:not`).
    #[test]
    fn the_extractor_finds_the_same_fields_with_and_without_it() {
        use crate::tests_support::{extract_page, extractor};
        let selectors = [
            "h1",
            ".price",
            "img.gallery@src",
            "link[rel=canonical]@href",
            "div.desc::html",
            "#main",
            "[data-id]@data-id",
            "a[href^='https']@href",
            "p:not(.x)",
            ".aa, section",
            "ul > li.item",
            "[lang|=en]",
            "td[class~=num]",
            "*",
            "[title*=\"b c\"]",
            "meta[NAME=description]@content",
        ];
        let pages = [
            "<h1>One</h1><p class=price>3</p><img class='big gallery' src=/i.png>",
            "<H1>Caps</H1><LINK REL=CANONICAL HREF=/c><DIV CLASS=desc><b>x</b></DIV>",
            "<p class=PRICE>not a price</p><div class=Desc>no</div><div id=MAIN>no</div>",
            "<p class=&#112;rice>entity</p><!-- <h1>comment</h1> <p class=price>c</p> -->",
            "<div id=main data-ID=7 lang=en-GB><a HREF='HTTPS://x'>x</a></div>",
            "<ul><li class=item>1</li><li class='x item'>2</li></ul><section>s</section>",
            "<table><td class='a num'>5</td></table><p title='a b c'>t</p><p class=x>no</p>",
            "<meta name=DESCRIPTION content=d><script>'<h1>not</h1>'</script>",
            "",
        ];
        let mut found = 0;
        for selector in selectors {
            let spec = format!("f[]={selector}");
            let with = extractor(&[&spec], false, false, None);
            let without = extractor(&[&spec], false, false, None).without_prefilter();
            for page in pages {
                let t = std::time::Duration::from_secs(60);
                let fields = extract_page(&with, page.as_bytes(), t).fields;
                assert_eq!(
                    fields,
                    extract_page(&without, page.as_bytes(), t).fields,
                    "{selector} on {page}"
                );
                found += usize::from(!fields.is_empty());
            }
        }
        // The pages are matched, not only ruled out.
        assert!(found >= 30, "{found} pages with a match");
    }

    /// The built-in `<base href>` and meta tags are left out of pages that
    /// do not contain `<base` or `<meta`: what a page yields is the same.
    #[test]
    fn the_pages_base_and_meta_tags_are_read_the_same_with_and_without_it() {
        use crate::tests_support::{extract_page, extractor};
        let pages = [
            "<BASE HREF=/b/><a href=x>x</a><title>T</title>",
            "<meta http-equiv=refresh content='0; url=/next'><a href=y>y</a>",
            "<META NAME=ROBOTS CONTENT=NOFOLLOW><a href=z>z</a>",
            "<base\nhref=/c/><meta\tname=robots content=nofollow>",
            "<!-- <base href=/no/> --><p>base meta</p><a href=w>w</a>",
            "<a href=v>v</a>",
            "",
        ];
        let with = extractor(&[], false, false, None);
        let without = extractor(&[], false, false, None).without_prefilter();
        let t = std::time::Duration::from_secs(60);
        let mut read = 0;
        for page in pages {
            let found = extract_page(&with, page.as_bytes(), t);
            assert_eq!(found, extract_page(&without, page.as_bytes(), t), "{page}");
            read += usize::from(found.base.is_some() || found.nofollow);
        }
        // Base and meta tags were found, not only ruled out.
        assert!(read >= 3, "{read}");
    }

    #[test]
    fn any_case_search_finds_a_needle_at_the_very_end_and_not_past_it() {
        assert!(contains_any_case(b"xx<H1", b"<h1"));
        assert!(!contains_any_case(b"xx<H", b"<h1"));
        assert!(contains_any_case(b"", b""));
        assert!(!contains_any_case(b"", b"a"));
    }
}
