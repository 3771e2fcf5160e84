//! Decoding of character references (`&amp;`, `&eacute`, `&#39;`,
//! `&#x2F;`) as the HTML tokenizer does: the whole WHATWG table of named
//! references (htmlize's, generated from the WHATWG's `entities.json`),
//! the legacy names that need no `;` (`&amp`, `&copy`, `&eacute`…), and
//! the numeric rules (0, surrogates and code points past U+10FFFF give
//! U+FFFD; 0x80–0x9F are read as Windows-1252, `&#128;` is `€`; the `;` is
//! optional). In attribute values a legacy name without `;` followed by
//! `=` or an ASCII letter or digit is kept as written (`?a=1&copy=2`), as
//! browsers keep it; in text it is decoded (`&copyx` is `©x`).
//!
//! Linear in the text: each `&` looks at most at the longest name ahead
//! (numeric references consume their digits), and a text without `&` is
//! borrowed, not copied.

use std::borrow::Cow;

use htmlize::Context;

/// Decodes the character references of text (a title, an element's text).
pub fn decode_text(s: &str) -> Cow<'_, str> {
    decode_in(s, Context::General)
}

/// Decodes the character references of an attribute's value (`href`,
/// `src`, `content`, any attribute a field takes).
pub fn decode_attribute(s: &str) -> Cow<'_, str> {
    decode_in(s, Context::Attribute)
}

fn decode_in(s: &str, context: Context) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    htmlize::unescape_in(s, context)
}

/// The longest character reference decoded, `&` and `;` included
/// (`&CounterClockwiseContourIntegral;`): a text cut into chunks keeps an
/// unfinished one for the next chunk.
pub const MAX_NAMED_REFERENCE: usize = 33;

#[cfg(test)]
mod tests {
    use super::{MAX_NAMED_REFERENCE, decode_attribute, decode_text};
    use std::borrow::Cow;

    #[test]
    fn decodes_common_references() {
        assert_eq!(decode_attribute("/a?x=1&amp;y=2"), "/a?x=1&y=2");
        assert_eq!(
            decode_text("Tom &amp; Jerry&#39;s &#x2F; &lt;3"),
            "Tom & Jerry's / <3"
        );
        assert!(matches!(decode_text("no refs"), Cow::Borrowed("no refs")));
        assert!(matches!(decode_attribute("/a?b"), Cow::Borrowed("/a?b")));
    }

    #[test]
    fn knows_the_whole_whatwg_table() {
        assert_eq!(decode_text("&copy; &mdash; &AElig; &hellip;"), "© — Æ …");
        assert_eq!(decode_text("&CounterClockwiseContourIntegral;"), "\u{2233}");
        assert_eq!(
            decode_text("&NotEqualTilde;"),
            "\u{2242}\u{338}",
            "two code points"
        );
        assert_eq!(
            "&CounterClockwiseContourIntegral;".len(),
            MAX_NAMED_REFERENCE
        );
        assert_eq!(decode_text("&nosuch; &b"), "&nosuch; &b");
    }

    #[test]
    fn numeric_references_follow_the_tokenizer() {
        assert_eq!(decode_text("&#0128;"), "€", "Windows-1252 remap");
        assert_eq!(decode_text("&#x80;&#x99;&#x9F;"), "€™Ÿ");
        assert_eq!(decode_text("&#x81;"), "\u{81}", "no remap for 0x81");
        assert_eq!(decode_text("&#0;"), "\u{fffd}");
        assert_eq!(decode_text("&#xD800;"), "\u{fffd}");
        assert_eq!(decode_text("&#1114112;"), "\u{fffd}");
        assert_eq!(decode_text("&#99999999999999999999;"), "\u{fffd}");
        assert_eq!(decode_text("&#x0010FFFF;"), "\u{10ffff}");
        assert_eq!(decode_text("&#x000010FFFF;"), "\u{10ffff}", "any zeros");
        assert_eq!(decode_text("&#97a"), "aa", "no `;` needed");
        assert_eq!(decode_attribute("&#97a"), "aa", "in attributes too");
        assert_eq!(decode_text("&#xZZ; &#; &#x;"), "&#xZZ; &#; &#x;");
    }

    #[test]
    fn legacy_names_need_no_semicolon_in_text() {
        assert_eq!(
            decode_text("&amp &lt &copy &eacute &nbsp"),
            "& < © é \u{a0}"
        );
        assert_eq!(decode_text("&copyx &amp=1"), "©x &=1");
        assert_eq!(decode_text("&notin &notit;"), "¬in ¬it;");
        assert_eq!(
            decode_text("&hellip &mdash"),
            "&hellip &mdash",
            "not legacy"
        );
    }

    #[test]
    fn attributes_keep_a_legacy_name_before_equals_or_alphanumeric() {
        assert_eq!(decode_attribute("?a=1&copy=2&amp;b"), "?a=1&copy=2&b");
        assert_eq!(decode_attribute("?x&ampy &amp9"), "?x&ampy &amp9");
        assert_eq!(decode_attribute("&amp &amp# &copy."), "& &# ©.");
        assert_eq!(decode_attribute("&copy;x"), "©x");
        assert_eq!(decode_attribute("&notit;"), "&notit;");
    }

    #[test]
    fn decoding_is_linear_in_the_length() {
        // Every `&` once scanned the whole rest of the text for a `;`: a
        // 256 KiB attribute of `&` took seconds, 10 MiB about an hour. On
        // a thread of its own so that a regression fails instead of hanging.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let amps = "&".repeat(1024 * 1024);
            let mut tail = "&".repeat(1024 * 1024);
            tail.push(';');
            let names = "&amp".repeat(256 * 1024);
            let digits = format!("&#{}", "9".repeat(1024 * 1024));
            let letters = format!("&{}", "a".repeat(1024 * 1024)).repeat(2);
            let _ = tx.send((
                decode_text(&amps).len(),
                decode_attribute(&tail).len(),
                decode_text(&names).len(),
                decode_attribute(&names).len(),
                decode_text(&digits).into_owned(),
                decode_attribute(&letters).len(),
            ));
        });
        let lens = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("decoding 2 MiB of '&' took more than 10 s");
        assert_eq!(
            lens,
            (
                1024 * 1024,
                1024 * 1024 + 1,
                256 * 1024,
                256 * 1024,
                "\u{fffd}".to_owned(),
                2 * (1024 * 1024 + 1)
            )
        );
    }
}
