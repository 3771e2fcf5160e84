//! The tests of [`super`].

use super::super::tests_support::run;
use super::*;
use crate::handlers::MAX_TITLE;
use crate::{FieldValue, MAX_FIELD_VALUES, MAX_PAGE_FIELD_BYTES, MAX_VALUE_BYTES};
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

fn extract_limited(content_type: &str, html: &[u8], max_links: usize, time: Duration) -> Extracted {
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
fn text_values_decode_each_text_node_as_a_whole() {
    // A reference cut by a tag is no reference (textContent keeps it).
    let out = fields(&["t=h1"], "<h1>&am<b>p;</b> x &amp; y</h1>");
    assert_eq!(one(&out, "t").as_deref(), Some("&amp; x & y"));
    // One cut by the parser's 64 KiB chunks is one.
    for pad in 65_515..65_530 {
        let html = format!(
            "<div>{}</div><h1>&amp; b &NotEqualTilde;</h1>",
            "x".repeat(pad)
        );
        let out = fields(&["t=h1"], &html);
        assert_eq!(
            one(&out, "t").as_deref(),
            Some("& b \u{2242}\u{338}"),
            "{pad}"
        );
    }
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
    let out = extract(r#"<meta name="ROBOTS" content="noindex, nofollow"><a href="/yes">y</a>"#);
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
