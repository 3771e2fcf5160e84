//! `--render-when auto`: which served pages are shells that only a
//! browser fills in.
//!
//! The rule, from the served HTML alone (no browser is asked): a page is
//! rendered when it has a `<script` element **and** either the crawl
//! found fewer than [`FEW_LINKS`] links in it, or it holds an empty
//! mount element of the usual frameworks (`id="root"`, `"app"`,
//! `"__next"`, `"__nuxt"`, `"___gatsby"`, `"svelte"` closed at once: `<div
//! id="root"></div>`). A server-rendered page with its links in the
//! markup is not rendered; a page without script has nothing to render.

/// Fewer links than this in a page with script make it a shell.
pub const FEW_LINKS: u32 = 3;

/// The mount elements' ids that an empty one makes a shell.
const MOUNTS: [&str; 6] = ["root", "app", "__next", "__nuxt", "___gatsby", "svelte"];

/// True when the served `body`, in which the crawl found `links` links,
/// looks like an application shell.
pub fn is_shell(body: &[u8], links: u32) -> bool {
    if !contains_ignore_case(body, b"<script") {
        return false;
    }
    links < FEW_LINKS || has_empty_mount(body)
}

/// One pass over the body: at each `id=` whose quoted value is a mount
/// id, whether the element closes at once.
fn has_empty_mount(body: &[u8]) -> bool {
    find_all(body, b"id=").any(|at| {
        let rest = &body[at + 3..];
        let Some(&quote) = rest.first().filter(|q| matches!(q, b'"' | b'\'')) else {
            return false;
        };
        let value = &rest[1..];
        let Some(end) = value.iter().take(16).position(|b| *b == quote) else {
            return false;
        };
        if !MOUNTS.iter().any(|m| m.as_bytes() == &value[..end]) {
            return false;
        }
        // Other attributes may follow the id: up to the tag's end, then
        // its closing tag at once (spaces allowed).
        let after_value = &value[end + 1..];
        let Some(close) = after_value.iter().take(4096).position(|b| *b == b'>') else {
            return false;
        };
        let after = &after_value[close + 1..];
        let text = after
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(after.len());
        after[text..].starts_with(b"</")
    })
}

fn find_all<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    (0..hay.len().saturating_sub(needle.len() - 1))
        .filter(move |&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    find_all(hay, needle).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_is_script_with_few_links_or_an_empty_mount() {
        let shell =
            b"<html><head><SCRIPT src=/app.js></script></head><body><div id=\"app\"></div></body>";
        assert!(is_shell(shell, 0));
        assert!(is_shell(shell, 10), "an empty mount, whatever the links");
        let mount = b"<script></script><div class=x id='root' data-x=1>\n </div>";
        assert!(is_shell(mount, 40));
    }

    #[test]
    fn a_server_rendered_page_or_one_without_script_is_not() {
        let rendered = b"<script src=a.js></script><div id=\"root\"><a href=/a>a</a></div>";
        assert!(!is_shell(rendered, 12));
        assert!(!is_shell(b"<html><body><p>few links</p></body></html>", 0));
        assert!(!is_shell(b"", 0));
        assert!(!is_shell(b"<scrip", 0));
    }
}
