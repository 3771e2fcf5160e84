//! The markup the text scanner ([`super::text`]) steps over: tag names,
//! a start tag's attributes (is it `hidden`?), where a raw-text element's
//! content ends, and which elements are void. Byte scans of a hostile page:
//! linear, and never past its end.

/// HTML's whitespace between the parts of a tag.
pub(super) fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

/// Where the tag name starting at `at` ends.
pub(super) fn tag_name_end(b: &[u8], at: usize) -> usize {
    let rest = b.get(at..).unwrap_or_default();
    at + rest
        .iter()
        .position(|&c| is_space(c) || c == b'/' || c == b'>')
        .unwrap_or(rest.len())
}

/// Past the next `>` from `at`, or the page's end.
pub(super) fn after_gt(b: &[u8], at: usize) -> usize {
    let rest = b.get(at..).unwrap_or_default();
    memchr::memchr(b'>', rest).map_or(b.len(), |i| at + i + 1)
}

/// The attributes of a tag from `at` (after its name): where the tag ends
/// (after its `>`) and whether one is `hidden`; `None` when the page ends
/// first. A value in quotes may hold `>`.
pub(super) fn attributes(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut hidden = false;
    loop {
        while b.get(i).is_some_and(|&c| is_space(c) || c == b'/') {
            i += 1;
        }
        if *b.get(i)? == b'>' {
            return Some((i + 1, hidden));
        }
        // A name (its first character may be `=`).
        let name = i;
        i += 1;
        while b
            .get(i)
            .is_some_and(|&c| !(is_space(c) || matches!(c, b'/' | b'>' | b'=')))
        {
            i += 1;
        }
        hidden |= b[name..i].eq_ignore_ascii_case(b"hidden");
        while b.get(i).is_some_and(|&c| is_space(c)) {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while b.get(i).is_some_and(|&c| is_space(c)) {
            i += 1;
        }
        match *b.get(i)? {
            q @ (b'"' | b'\'') => i += 1 + memchr::memchr(q, &b[i + 1..])? + 1,
            b'>' => return Some((i + 1, hidden)),
            _ => {
                while b.get(i).is_some_and(|&c| !(is_space(c) || c == b'>')) {
                    i += 1;
                }
            }
        }
    }
}

/// Where the content of raw-text element `name`, from `at`, and its end
/// tag end: past `</name` (any case) and the rest of that tag, or the
/// page's end.
pub(super) fn raw_text_end(b: &[u8], mut at: usize, name: &[u8]) -> usize {
    while let Some(i) = b.get(at..).and_then(|rest| memchr::memchr(b'<', rest)) {
        if b.get(at + i + 1) != Some(&b'/') {
            at += i + 1;
            continue;
        }
        let n = at + i + 2;
        let ends = b
            .get(n..n + name.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(name))
            && b.get(n + name.len())
                .is_none_or(|&c| is_space(c) || c == b'/' || c == b'>');
        if ends {
            return attributes(b, n + name.len()).map_or(b.len(), |(after, _)| after);
        }
        at = n;
    }
    b.len()
}

/// Elements whose content is text, not markup, up to their end tag.
pub(super) fn is_raw_text(tag: &str) -> bool {
    matches!(
        tag,
        "script"
            | "style"
            | "textarea"
            | "title"
            | "noscript"
            | "xmp"
            | "iframe"
            | "noembed"
            | "noframes"
    )
}

/// Elements without content nor end tag.
pub(super) fn is_void(tag: &str) -> bool {
    matches!(
        tag,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
            | "keygen"
            | "frame"
            | "basefont"
            | "bgsound"
    )
}

/// A tag name in lower case, without allocating: a name longer than any
/// [`kind`] knows, or not ASCII, is none of them.
pub(super) struct Lower {
    buf: [u8; 12],
    len: usize,
}

impl Lower {
    pub(super) fn new(name: &[u8]) -> Self {
        let mut buf = [0; 12];
        let len = if name.len() <= buf.len() && name.is_ascii() {
            buf[..name.len()].copy_from_slice(name);
            buf[..name.len()].make_ascii_lowercase();
            name.len()
        } else {
            0
        };
        Self { buf, len }
    }

    pub(super) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}
