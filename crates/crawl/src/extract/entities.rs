//! Decoding of the character references that appear in attribute values
//! and titles (`&amp;`, `&#39;`, `&#x2F;`). Unknown named references are
//! kept as written, as browsers do for ones without a semicolon.

use std::borrow::Cow;

/// Decodes character references in `s`; borrows when there are none.
pub fn decode(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        match decode_one(rest) {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The longest reference decoded, `&` and `;` excluded (`#x10FFFF` and every
/// name we know fit).
const MAX_REFERENCE: usize = 11;

/// Decodes the reference at the start of `s` (which starts with `&`),
/// returning the character and the bytes consumed. Looks at most
/// [`MAX_REFERENCE`] + 1 bytes ahead, so decoding a whole text is linear.
fn decode_one(s: &str) -> Option<(char, usize)> {
    let window = &s.as_bytes()[1..s.len().min(MAX_REFERENCE + 2)];
    let end = window.iter().position(|&b| b == b';')? + 1;
    let name = &s[1..end];
    let c = if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
    } else {
        match name {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            "nbsp" => '\u{a0}',
            _ => return None,
        }
    };
    Some((c, end + 1))
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_common_references() {
        assert_eq!(decode("/a?x=1&amp;y=2"), "/a?x=1&y=2");
        assert_eq!(
            decode("Tom &amp; Jerry&#39;s &#x2F; &lt;3"),
            "Tom & Jerry's / <3"
        );
        assert_eq!(decode("no refs"), "no refs");
    }

    #[test]
    fn leaves_unknown_or_broken_references() {
        assert_eq!(decode("a&b=c"), "a&b=c");
        assert_eq!(decode("&copy;"), "&copy;");
        assert_eq!(decode("&#xZZ;"), "&#xZZ;");
        assert_eq!(decode("&"), "&");
        assert_eq!(decode("&#1114112;"), "\u{fffd}");
        assert_eq!(decode("&#x0010FFFF;"), "\u{10ffff}");
        assert_eq!(
            decode("&#x000010FFFF;"),
            "&#x000010FFFF;",
            "past the window"
        );
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
            let _ = tx.send((decode(&amps).len(), decode(&tail).len()));
        });
        let lens = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("decoding 2 MiB of '&' took more than 10 s");
        assert_eq!(lens, (1024 * 1024, 1024 * 1024 + 1));
    }
}
