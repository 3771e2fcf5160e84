//! The scanner's path against lol_html's: the same `Extracted` for every
//! page, and the pages it leaves to lol_html left for the right reason.

use std::time::Duration;

use super::super::html::HtmlExtractor;
use super::super::scan::Unsure;
use super::super::tests_support::{html_response, run};
use super::super::{CutShort, Extracted, Page, PageLimits};
use std::time::Instant;
use url::Url;

const MAX_LINKS: usize = 10_000;

/// What the scanner's path makes of `html`, or why it leaves it.
fn scanned_limited(html: &[u8], max_links: usize, time: Duration) -> Result<Extracted, Unsure> {
    let response = html_response("text/html", html);
    let url = Url::parse("http://a.test/dir/page").unwrap();
    let page = Page {
        url: &url,
        response: &response,
        limits: PageLimits {
            max_links,
            deadline: Instant::now() + time,
        },
    };
    let mut out = Extracted::default();
    super::extract(&page, &mut out).map(|()| out)
}

fn scanned(html: &[u8]) -> Result<Extracted, Unsure> {
    scanned_limited(html, MAX_LINKS, Duration::from_secs(60))
}

/// What lol_html's path makes of `html`.
fn parsed(html: &[u8], max_links: usize) -> Extracted {
    let lol_html = HtmlExtractor::new().with_scanner(false);
    run(
        &lol_html,
        "text/html",
        html,
        max_links,
        Duration::from_secs(60),
    )
}

/// The scanner reads `html` and finds what lol_html finds.
#[track_caller]
fn same(html: &str) -> Extracted {
    let scanned = scanned(html.as_bytes()).unwrap_or_else(|why| panic!("left ({why:?}): {html}"));
    assert_eq!(scanned, parsed(html.as_bytes(), MAX_LINKS), "{html}");
    scanned
}

/// The scanner leaves `html` to lol_html for `why`, and the extractor
/// then finds what lol_html finds.
#[track_caller]
fn left(html: &str, why: Unsure) {
    assert_eq!(scanned(html.as_bytes()), Err(why), "{html}");
    let default = run(
        &HtmlExtractor::new(),
        "text/html",
        html.as_bytes(),
        MAX_LINKS,
        Duration::from_secs(60),
    );
    assert_eq!(default, parsed(html.as_bytes(), MAX_LINKS), "{html}");
}

fn hrefs(out: &Extracted) -> Vec<&str> {
    out.hrefs.iter().map(String::as_str).collect()
}

#[test]
fn the_test_sites_pages_read_the_same() {
    use crawlkeeper_testsite::site::{HostConfig, render_index, render_page};
    let host = HostConfig {
        special: true,
        ..HostConfig::default()
    };
    let page = same(&render_page(
        &host,
        7,
        1,
        "http://a.test",
        Some("http://b.test"),
    ));
    assert!(page.hrefs.len() >= 4, "{:?}", page.hrefs);
    assert_eq!(page.title.as_deref(), Some("Page 7 & friends"));
    let index = same(&render_index(&host, "http://a.test", None));
    assert!(
        !index
            .hrefs
            .iter()
            .any(|h| h.contains("never/script") || h.contains("comment")),
        "{:?}",
        index.hrefs
    );
}

#[test]
fn attributes_are_read_as_lol_html_reads_them() {
    for html in [
        r#"<a href="/a>b">x</a><a href='/c"d'>y</a><a href=/e'f"g>z</a>"#,
        r#"<a/href=/slash><a href = "/spaced" ><A HREF=/upper><a hReF='/mixed'>"#,
        r#"<a href="/first" href="/second"><a =href=/eq><a href==/two-eq>"#,
        r#"<a b="c"href=/glued><a href="/q"/><a href=/unq/><a href=/x?a=1&amp;b=2>"#,
        r##"<a href><a href=""><a href="  "><a href="#frag"><a href=" /trim ">"##,
        r#"<a rel="nofollow" href=/nf><a rel="NoFollow Me" href=/nf2><a rel=next href=/ok>"#,
        r#"<link rel=preconnect href=//cdn><link rel="dns-prefetch" href=//d><link href=/css>"#,
        r#"<area href=/area><a href=/a1 href=/a2/><a x=">" href=/after-quote-gt>"#,
        "<a\thref=/tab><a\nhref=/nl><a\rhref=/cr><a\x0chref=/ff><a href=/v\x0bt>",
        r#"<a href=/l1 / href=/l2><a/ href=/self><a href="/x"y><a href="/x"/y=z>"#,
        r#"<a/x href=/after-slash><a href=/l3/ rel=next><a href="/l4"/ rel=nofollow>"#,
        r#"<div data-x="<a href=/in-attr>"><a href=/out></div><p x=> <a href=/after-eq>"#,
        r#"<a href="/unterminated>"#,
        r#"<a href=/cut"#,
        "<a href=/nul\0><a\0 href=/nul-name><a href\0=/nul-attr>",
    ] {
        same(html);
    }
    let out = same(r#"<a href="/first" href="/second"><A HREF=/upper>"#);
    assert_eq!(hrefs(&out), ["/first", "/upper"]);
}

#[test]
fn comments_doctypes_and_bogus_comments_end_where_lol_html_ends_them() {
    for html in [
        "<!-- <a href=/no> --><a href=/yes1>",
        "<!--><a href=/yes2>",
        "<!---><a href=/yes3>",
        "<!-- --!><a href=/yes4>",
        "<!-- -- ><a href=/no> --><a href=/yes5>",
        "<!---x--><a href=/yes6><!----><a href=/yes7><!-----><a href=/yes8>",
        "<!-- --!-><a href=/no> ---!><a href=/yes9>",
        "<!-- <!--><a href=/yes10> <!-- <!-x --> <a href=/yes11>",
        "<!x <a href=/no-bogus> <a href=/yes12>",
        "<?php <a href=/no-pi> ?><a href=/yes13>",
        "</ <a href=/no-end-bogus><a href=/yes14></><a href=/yes15>",
        r#"<!DOCTYPE html PUBLIC "a>b"><a href=/yes16>"#,
        "<![CDATA[ <a href=/no-cdata> ]]><a href=/yes17>",
        r#"</a title=">"><a href=/yes18></div x='>' ><a href=/yes19>"#,
        "<!-- never ends <a href=/no>",
        "<!--",
        "<!-",
        "<! <",
        "</",
        "<",
        "a < b <<a href=/yes20> <3 <a href=/yes21>",
    ] {
        same(html);
    }
    // Linear in a run of dashes (one byte at a time would be quadratic).
    same(&format!(
        "<!--{}x--><a href=/after-dashes>",
        "-".repeat(500_000)
    ));
    same(&format!("<!--{}", "-".repeat(500_000)));
    let out = same("<!-- <a href=/no> --><a href=/yes><!x <a href=/no2>");
    assert_eq!(hrefs(&out), ["/yes"]);
}

#[test]
fn text_elements_hide_markup_until_their_end_tag() {
    for html in [
        r#"<script>var a = '<a href="/no-script">';</script><a href=/yes1>"#,
        "<script>x</script ><a href=/yes2><script>y</SCRIPT><a href=/yes3>",
        "<script>x</scripts><a href=/no></script/><a href=/yes4>",
        "<script>a</script x='</script>'><a href=/yes5>",
        "<style>a { background: url(<a href=/no>) }</style><a href=/yes6>",
        "<textarea><a href=/no></textarea><a href=/yes7>",
        "<noscript><a href=/no-noscript></noscript><a href=/yes8>",
        "<iframe><a href=/no></iframe><xmp><a href=/no></xmp><a href=/yes9>",
        "<noembed><a href=/no></noembed><noframes><a href=/no></noframes><a href=/yes10>",
        "<script>never ends <a href=/no>",
        "<script>ends at </script",
        "<script>ends in </script attr",
        "<style/>self closing is ignored <a href=/no></style><a href=/yes11>",
        "<script><a href=/no></scr ipt></script\t><a href=/yes12>",
    ] {
        same(html);
    }
}

#[test]
fn the_first_title_is_kept_decoded_and_collapsed() {
    for html in [
        "<title>  One &amp; <b>two</b>\n three </title><title>Second</title>",
        "<title/>After a slash</title>",
        "<title>never ends <a href=/no>",
        "<title>ends at </title",
        "<title>ends in </title x",
        "<TITLE>Upper</Title >",
        "<title></title><title>second</title>",
        "<title>   </title>",
        "<title>caf\u{e9} &eacute; &#x263A;</title>",
        "<title>a</titles> b</title>",
    ] {
        same(html);
    }
    let out = same("<title>  One &amp; <b>two</b>\n three </title><title>Second</title>");
    assert_eq!(out.title.as_deref(), Some("One & <b>two</b> three"));
}

/// lol_html is given a page 64 KiB at a time: a title, a character or a
/// tag across the seam reads the same.
#[test]
fn what_crosses_lol_htmls_chunk_seam_reads_the_same() {
    const SEAM: usize = 64 * 1024;
    for shift in 0..12 {
        let pad = "x".repeat(SEAM - 9 - shift);
        let html = format!(
            "<p>{pad}<title>\u{e9}\u{e9}<\u{e9}\u{1F600}\u{e9}</title><a href='/\u{e9}\u{e9}'>"
        );
        let out = same(&html);
        assert_eq!(out.hrefs.len(), 1);
        assert!(out.title.is_some());
    }
    use crawlkeeper_testsite::site::{HostConfig, render_page};
    let host = HostConfig {
        links: 200,
        page_bytes: 300_000,
        ..HostConfig::default()
    };
    let out = same(&render_page(&host, 0, 0, "http://a.test", None));
    assert!(out.hrefs.len() >= 50, "{}", out.hrefs.len());
}

#[test]
fn base_and_meta_are_read_as_lol_html_reads_them() {
    for html in [
        r#"<base href="/b1/"><base href="/b2/"><a href=x>"#,
        r#"<base><base href><a href=x>"#,
        r#"<base target=_top><base href=" /b/ "><a href=x>"#,
        r#"<meta http-equiv="refresh" content="5; url='/next'"><a href=x>"#,
        r#"<meta http-equiv=REFRESH content="0;URL=/n2"><meta http-equiv=refresh>"#,
        r#"<meta name="robots" content="noindex, nofollow"><a href=/x>"#,
        r#"<meta name=ROBOTS content=NONE><a href=/x>"#,
        r#"<meta name="crawlkeeper" content="nofollow"><a href=/x>"#,
        r#"<meta name=robots content=noindex><meta content=nofollow><a href=/x>"#,
    ] {
        same(html);
    }
    assert!(same(r#"<meta name=robots content="nofollow"><a href=/x>"#).nofollow);
}

#[test]
fn invalid_utf8_is_replaced_as_lol_html_replaces_it() {
    let html = b"<title>a\xff\xfe b\xe2\x82</title><a href=\"/\xc3(\xf0\x9f\x98\">";
    let scanned = scanned(html).unwrap();
    assert_eq!(scanned, parsed(html, MAX_LINKS));
    assert_eq!(scanned.hrefs.len(), 1);
}

#[test]
fn an_attribute_starting_with_a_byte_order_mark_is_decoded_as_lol_html_decodes_it() {
    // lol_html decodes an attribute's value with encoding_rs's `decode`,
    // which honours a BOM: a UTF-16 one makes the value UTF-16.
    let html =
        b"<a href=\"\xff\xfe/\x00x\x00\"><a href='\xfe\xff\x00/\x00y'><a href=\xef\xbb\xbf/z>";
    let scanned = scanned(html).unwrap();
    assert_eq!(scanned, parsed(html, MAX_LINKS));
    assert_eq!(hrefs(&scanned), ["/x", "/y", "/z"]);
    // Found by fuzzing (fuzz/regressions/html_scanner): the scanner read
    // such a value as UTF-8.
    let found = include_bytes!("../../../fuzz/regressions/html_scanner/utf16-bom-in-an-attribute");
    assert_eq!(scanned_or_left(found), parsed(found, MAX_LINKS));
}

/// What the default extractor (the scanner, or lol_html where it leaves
/// the page) makes of `html`.
fn scanned_or_left(html: &[u8]) -> Extracted {
    run(
        &HtmlExtractor::new(),
        "text/html",
        html,
        MAX_LINKS,
        Duration::from_secs(60),
    )
}

#[test]
fn the_link_limit_and_the_deadline_hold() {
    let html: String = (0..50).map(|i| format!("<a href=/p/{i}>")).collect();
    let out = scanned_limited(html.as_bytes(), 10, Duration::from_secs(60)).unwrap();
    assert_eq!(out, parsed(html.as_bytes(), 10));
    assert_eq!((out.hrefs.len(), out.dropped_links), (10, 40));

    let out = scanned_limited(html.as_bytes(), 10, Duration::ZERO).unwrap();
    assert_eq!(out.cut_short, Some(CutShort::Time));
    assert!(out.hrefs.is_empty());
}

#[test]
fn what_the_scanner_does_not_model_is_left_to_lol_html() {
    left(
        "<a href=/1><svg><a href=/2><style><a href=/3></style></svg>",
        Unsure::Foreign,
    );
    left("<math><mi><a href=/m></mi></math>", Unsure::Foreign);
    left(
        "<script><!--<script></script><a href=/no>--></script><a href=/y>",
        Unsure::ScriptEscape,
    );
    left("<plaintext><a href=/no>", Unsure::PlainText);
    left(
        "<select><title><a href=/x></title></select>",
        Unsure::Ambiguous,
    );
    left(
        "<select><template><style>x</style></template></select>",
        Unsure::Ambiguous,
    );
    left(
        "<frameset><noscript><a href=/x></noscript>",
        Unsure::Ambiguous,
    );
    left("<script a=><a href=/x></a></script>", Unsure::EqualsThenEnd);
    left(
        &format!("<title>{}</title>", "t".repeat(5000)),
        Unsure::LongTitle,
    );
    left(&"<b>".repeat(16 * 1024 + 1), Unsure::ManyTags);
    let big = "x".repeat(1024 * 1024);
    for (before, after) in [
        ("<a href=\"/", "\">"),
        ("<!--", "-->"),
        ("<a href=/x><!--", ""),
        ("<a href=\"", ""),
    ] {
        left(&format!("{before}{big}{after}"), Unsure::LargeConstruct);
    }
    // What leaves `<select>` before the text element is fine.
    same("<select><option>x</select><title>t</title><select><script>s</script></select>");
    same("<select><input><title>t</title><noframes>n</noframes>");
    same("<select><textarea>t</textarea><title>x</title>");
    same("<frameset><noframes><a href=/x></noframes><a href=/y>");
    same(&"<b>".repeat(16 * 1024));
    same(&format!(
        "<script>{}</script><a href=/long-script>",
        "x".repeat(2 * 1024 * 1024)
    ));
}

/// A small, seeded random number generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// Pages stitched from the pieces that matter to a tokenizer read the
/// same both ways, and most of them by the scanner.
#[test]
fn random_pages_of_markup_pieces_read_the_same() {
    const PIECES: &[&str] = &[
        "<a href=",
        "<a href=\"/q\">",
        "<A HREF='/s'>",
        "<area href=/ar>",
        "<link rel=",
        "<base href=",
        "<meta name=robots content=",
        "<meta http-equiv=refresh content=\"1;url=/r\">",
        "<title>",
        "</title>",
        "<title/>",
        "<script>",
        "</script>",
        "</script ",
        "<style>",
        "</style>",
        "<textarea>",
        "</textarea>",
        "<noscript>",
        "</noscript>",
        "<select>",
        "</select>",
        "<template>",
        "</template>",
        "<!--",
        "-->",
        "--!>",
        "<!-",
        "<!",
        "<?",
        "</",
        "<",
        ">",
        "/>",
        "/",
        "=",
        "\"",
        "'",
        " ",
        "\n",
        "\t",
        "&amp;",
        "&#x2F;",
        "x",
        "/p",
        "nofollow",
        "none",
        "<div class=\"c\">",
        "</div>",
        "<p>",
        "<b>",
        "</a>",
        "<!DOCTYPE html>",
        "<svg>",
        "\u{e9}",
    ];
    let mut rng = Rng(0x5EED);
    let (mut scanned_pages, mut total) = (0u32, 0u32);
    for _ in 0..4000 {
        let n = 1 + rng.next() % 40;
        let html: String = (0..n).map(|_| rng.pick(PIECES)).collect();
        let by_lol_html = parsed(html.as_bytes(), 8);
        match scanned_limited(html.as_bytes(), 8, Duration::from_secs(60)) {
            Ok(out) => {
                assert_eq!(out, by_lol_html, "{html:?}");
                scanned_pages += 1;
            }
            Err(_) => {
                let default = run(
                    &HtmlExtractor::new(),
                    "text/html",
                    html.as_bytes(),
                    8,
                    Duration::from_secs(60),
                );
                assert_eq!(default, by_lol_html, "{html:?}");
            }
        }
        total += 1;
    }
    assert!(
        scanned_pages * 2 > total,
        "the scanner read only {scanned_pages} of {total} pages"
    );
}
