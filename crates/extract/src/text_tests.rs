//! The tests of [`super`].

use super::*;
use crate::tests_support::{extract_page, extractor};
use crate::{CutShort, FieldValue};
use std::time::{Duration, Instant};

/// The fast path adds words exactly as the general one does: strings
/// of up to four pieces with every kind of whitespace, capped or not,
/// after every start (empty, a word, a block ended).
#[test]
fn plain_text_is_added_as_the_general_path_adds_it() {
    let pieces = [
        "a", "bc", " ", "  ", "\n", "\t ", "é", "\u{a0}", ".", "&", "\r\n",
    ];
    let mut strings = vec![String::new()];
    for _ in 0..4 {
        let longer: Vec<String> = strings
            .iter()
            .flat_map(|s| pieces.iter().map(move |p| format!("{s}{p}")))
            .collect();
        strings.extend(longer);
    }
    strings.dedup();
    for before in ["", "x", "x\n"] {
        for s in &strings {
            for max in [3, 64] {
                let start = |t: &mut Text| {
                    if before.ends_with('\n') {
                        t.push_any_words("x");
                        t.block();
                    } else if !before.is_empty() {
                        t.push_any_words(before);
                    }
                };
                let mut fast = Text::new(max, bytes::Bytes::new());
                start(&mut fast);
                fast.push_words(s);
                fast.push_words("z");
                let mut slow = Text::new(max, bytes::Bytes::new());
                start(&mut slow);
                slow.push_any_words(s);
                slow.push_any_words("z");
                assert_eq!(
                    fast.finish(false),
                    slow.finish(false),
                    "{before:?} then {s:?}"
                );
            }
        }
    }
}

fn text_of(html: &str) -> String {
    text_with(html, 1024 * 1024).0
}

fn text_of_bytes(html: &[u8]) -> String {
    let x = extractor(&[], false, false, Some(1024 * 1024));
    match extract_page(&x, html, Duration::from_secs(60))
        .fields
        .get("text")
    {
        Some(FieldValue::One(t)) => t.clone(),
        other => panic!("text: {other:?}"),
    }
}

/// The text of `html` with a cap of `max`, and whether it was cut.
fn text_with(html: &str, max: u64) -> (String, bool) {
    let x = extractor(&[], false, false, Some(max));
    let out = extract_page(&x, html.as_bytes(), Duration::from_secs(60));
    match out.fields.get("text") {
        Some(FieldValue::One(t)) => (t.clone(), out.fields_cut.contains("text")),
        other => panic!("text: {other:?}"),
    }
}

#[test]
fn a_title_or_style_in_svg_is_markup_and_ends_with_the_svg() {
    assert_eq!(
        text_of("<svg><title>Icon <b>x</b></svg><p>y <a href=/a>z</a></p><title>P</title>"),
        "y z"
    );
    assert_eq!(
        text_of("<p>a<svg><style>.x{}</style><text>b</text></svg>c</p>"),
        "abc"
    );
    assert_eq!(text_of("<svg><title/><p>a</p>"), "a", "<p> leaves the svg");
    assert_eq!(text_of("<math><mi>x</mi></math><style>s</style>d"), "xd");
}

#[test]
fn scripts_styles_templates_noscript_and_hidden_elements_are_left_out() {
    let html = r#"<html><head><title>T</title><style>p { color: red }</style>
        <script>var a = "<p>no</p>";</script></head><body>
        <p>one</p><noscript><p>enable js</p></noscript>
        <template><p>tpl</p></template>
        <div hidden>secret <b>bold</b> <div>inner</div> tail</div>
        <p>two <span hidden="">h</span>three</p><img hidden><p>four</p>
        <textarea>typed</textarea></body></html>"#;
    assert_eq!(text_of(html), "one\ntwo three\nfour");
}

#[test]
fn blocks_end_lines_cells_are_apart_and_whitespace_collapses() {
    let html = "<h1>  Title\n  here </h1>intro <b>bold</b><i>it</i>\n\n<ul><li>a</li><li>b\
        <li>c</ul><table><tr><td>1</td><td>2</td></tr><tr><th>3</th></tr></table>\
        line<br>break<br><br><br>x<div><div><p></p></div></div>end";
    assert_eq!(
        text_of(html),
        "Title here\nintro boldit\na\nb\nc\n1 2\n3\nline\nbreak\nx\nend"
    );
    assert_eq!(text_of("<p>\n</p>  <div> </div>"), "", "no blank lines");
}

#[test]
fn references_are_decoded_even_across_chunks() {
    assert_eq!(
        text_of("<p>Tom &amp; Jerry &lt;3 &#233;t&#xE9; &nbsp;x &unknown; a&b</p>"),
        "Tom & Jerry <3 été x &unknown; a&b"
    );
    // A reference split by the parser's 64 KiB chunks is still decoded.
    for pad in 65_520..65_540 {
        let html = format!("<p>{}</p><p>x &amp; y</p>", "a".repeat(pad));
        let text = text_of(&html);
        assert!(
            text.ends_with("\nx & y"),
            "{pad}: {}",
            &text[text.len() - 10..]
        );
    }
    let mut one = Text::new(100, bytes::Bytes::new());
    one.on_text("a &am", true, false);
    one.on_text("p; b &", true, false);
    one.on_text("#233", true, true);
    assert_eq!(one.finish(true).0, "a & b é", "no `;` needed");
    let mut legacy = Text::new(100, bytes::Bytes::new());
    legacy.on_text("&no", true, false);
    legacy.on_text("tin; &CounterClockwiseContour", true, false);
    legacy.on_text("Integral; &copy", true, false);
    legacy.on_text("x", true, true);
    assert_eq!(legacy.finish(true).0, "\u{2209} \u{2233} ©x");
}

#[test]
fn words_split_on_every_unicode_space_as_before() {
    let s = "a\u{a0}b\u{3000}c\u{2028}d\te\u{b}f\u{1c}g é\u{85}ü  \n";
    let mut t = Text::new(1000, bytes::Bytes::new());
    t.on_text(s, false, true);
    let want: Vec<&str> = s
        .split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(t.finish(true).0, want.join(" "));
}

#[test]
fn markup_left_between_tags_is_not_text() {
    assert_eq!(
        text_of("<!DOCTYPE html><p>a <!-- <p>x</p> --> b</p><p>c < d <![CDATA[e]]> f</p>"),
        "a b\nc < d f"
    );
    assert_eq!(text_of("a </b> c <!-- x"), "a c");
}

#[test]
fn scanner_edge_cases() {
    // An unterminated comment hides the rest; `<!-->` is empty.
    assert_eq!(text_of("<p>a</p><!-- b <p>c</p>"), "a");
    assert_eq!(text_of("a<!-->b<!--->c"), "abc");
    // `<` and `>` in quoted attribute values are not markup.
    assert_eq!(
        text_of(r#"<p title="a > b <i>">x</p><p data-x='<div hidden>'>y</p>"#),
        "x\ny"
    );
    // An unquoted value ends at `>`.
    assert_eq!(text_of("<p class=a>x<p class=b/>y"), "x\ny");
    // `</script` not followed by the end of a name is script.
    assert_eq!(
        text_of(r#"<script>a = "</scripts>"; b = "</script" + "x";</script>after"#),
        "after"
    );
    assert_eq!(
        text_of("<SCRIPT>x</ScRiPt >a<STYLE>y</STYLE>b<Title>t</TITLE>c"),
        "abc"
    );
    // Upper case tags.
    assert_eq!(
        text_of("<DIV>a</DIV><P HIDDEN>b</P><TD>c<TD>d<BR>e"),
        "a\nc d\ne"
    );
    // `hidden` with a value, in any case; not `data-hidden` nor a value.
    assert_eq!(text_of("<p hidden=hidden>a</p>b"), "b");
    assert_eq!(text_of("<p HIDDEN = 'x'>a</p>b"), "b");
    assert_eq!(
        text_of(r#"<p data-hidden>a</p><p class="hidden">b</p><p hiddenx>c</p>"#),
        "a\nb\nc"
    );
    // A hidden element ends at its own end tag, nested ones counted.
    assert_eq!(
        text_of("<div hidden><div>x</div><script>'</div>'</script>y</div>z"),
        "z"
    );
    assert_eq!(
        text_of("<template><template>a</template>b</template>c"),
        "c"
    );
    // A self-closing slash does not make an element void in HTML.
    assert_eq!(text_of("<div hidden/>a</div>b"), "b");
    // An unterminated tag ends the page; a lone `<` is text.
    assert_eq!(text_of("a<b c=\"d>e"), "a");
    assert_eq!(text_of("a<div"), "a");
    assert_eq!(text_of("a < b <"), "a < b <");
    assert_eq!(text_of("a</"), "a</");
    assert_eq!(text_of("a</>b</ x>c<?php d ?>e<!x>f"), "abcef");
    assert_eq!(text_of("a<plaintext>b<p>c"), "a");
}

#[test]
fn hostile_bytes_never_panic_and_are_decoded_lossily() {
    assert_eq!(
        text_of_bytes(b"<p>a\xFF\xFEb\0c</p>"),
        "a\u{FFFD}\u{FFFD}b\0c"
    );
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let alphabet = b"<>/!-='\" ahidenscrptl\xC3\xA9\xFF\0&;#";
    for _ in 0..2000 {
        let len = (rng % 64) as usize;
        let page: Vec<u8> = (0..len)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                alphabet[(rng % alphabet.len() as u64) as usize]
            })
            .collect();
        let _ = text_of_bytes(&page);
        // Every prefix, as the scanner may stop anywhere.
        for cut in 0..page.len() {
            let mut t = Text::new(1000, bytes::Bytes::from(page.clone()));
            t.advance(cut);
            t.advance(page.len());
            let _ = t.finish(true);
        }
    }
}

#[test]
fn advancing_by_any_steps_gives_the_same_text() {
    let page = "<p>Tom &amp; Jerry</p><div>é&#233; <b>x</b></div><script>s</script>tail";
    let whole = {
        let mut t = Text::new(1000, bytes::Bytes::from(page));
        t.advance(page.len());
        t.finish(true).0
    };
    assert_eq!(whole, "Tom & Jerry\néé x\ntail");
    for step in 1..page.len() {
        let mut t = Text::new(1000, bytes::Bytes::from(page));
        let mut at = 0;
        while at < page.len() {
            at += step;
            t.advance(at);
        }
        assert_eq!(t.finish(true).0, whole, "{step}");
    }
}

#[test]
fn max_text_cuts_at_a_character_boundary_and_says_so() {
    let html = format!("<p>{}</p>", "é".repeat(100));
    let (text, cut) = text_with(&html, 51);
    assert_eq!((text.len(), cut), (50, true));
    let (text, cut) = text_with("<p>abc</p><p>def</p>", 6);
    assert_eq!((text.as_str(), cut), ("abc\nde", true));
    let (text, cut) = text_with("<p>abc</p><p>def</p>", 7000);
    assert_eq!((text.as_str(), cut), ("abc\ndef", false));
}

#[test]
fn an_element_hiding_its_content_never_closed_hides_to_the_end() {
    assert_eq!(text_of("<p>a</p><div hidden><p>b</p><p>c"), "a");
    assert_eq!(text_of("<p>a</p><noscript><p>b</p><p>c"), "a");
    assert_eq!(text_of("<p>a</p><template>b"), "a");
    // A void element with `hidden` hides nothing after it (and a hidden
    // `<br>` breaks no line).
    assert_eq!(
        text_of("<p>a<br hidden>b<input hidden>c<br>d</p>"),
        "abc\nd"
    );
}

#[test]
fn a_hundred_megabytes_of_text_stays_bounded_and_within_the_deadline() {
    let mut html = b"<p>".to_vec();
    html.resize(100 * 1024 * 1024, b'a');
    let x = extractor(&[], false, false, Some(1024 * 1024));
    let started = Instant::now();
    let out = extract_page(&x, &html, Duration::from_secs(1));
    let took = started.elapsed();
    let text = match out.fields.get("text") {
        Some(FieldValue::One(t)) => t,
        other => panic!("{other:?}"),
    };
    assert!(text.len() <= 1024 * 1024, "{}", text.len());
    assert!(
        out.fields_cut.contains("text") || out.cut_short == Some(CutShort::Time),
        "cut or stopped"
    );
    // The deadline is checked between 64 KiB chunks.
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn without_text_there_is_no_text_field() {
    let x = extractor(&[], false, false, None);
    let out = extract_page(&x, b"<p>x</p>", Duration::from_secs(60));
    assert!(out.fields.is_empty());
}
