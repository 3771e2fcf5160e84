//! URL normalisation: one spelling per resource, so the seen set can dedup.
//!
//! Parsing (by the `url` crate) already lowercases scheme and host, drops
//! default ports and resolves dot segments. On top of that we drop the
//! fragment, drop an empty query, and remove tracking parameters while
//! keeping the rest of the query exactly as written.

use url::{Position, Url};

/// Normalises URLs the same way for the whole crawl.
#[derive(Clone, Debug)]
pub struct Normalizer {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl Normalizer {
    /// A normaliser that strips the given query parameters; a trailing `*`
    /// makes a prefix (`utm_*`).
    pub fn new<S: AsRef<str>>(strip_params: &[S]) -> Self {
        let mut exact = Vec::new();
        let mut prefixes = Vec::new();
        for p in strip_params {
            let p = p.as_ref();
            match p.strip_suffix('*') {
                Some(prefix) => prefixes.push(prefix.to_owned()),
                None => exact.push(p.to_owned()),
            }
        }
        Self { exact, prefixes }
    }

    fn strips(&self, key: &str) -> bool {
        self.exact.iter().any(|e| e == key) || self.prefixes.iter().any(|p| key.starts_with(p))
    }

    /// Normalises `url` in place.
    pub fn normalize(&self, url: &mut Url) {
        if url.fragment().is_some() {
            url.set_fragment(None);
        }
        let Some(query) = url.query() else { return };
        if query.is_empty() {
            url.set_query(None);
            return;
        }
        if self.exact.is_empty() && self.prefixes.is_empty() {
            return;
        }
        let keeps = |pair: &&str| {
            let key = pair.split_once('=').map_or(*pair, |(k, _)| k);
            !self.strips(key)
        };
        if query.split('&').all(|pair| keeps(&pair)) {
            return;
        }
        let kept: Vec<&str> = query.split('&').filter(keeps).collect();
        let kept = kept.join("&");
        url.set_query(if kept.is_empty() { None } else { Some(&kept) });
    }

    /// Parses `href` against `base` and normalises the result.
    pub fn resolve(&self, base: &Url, href: &str) -> Result<Url, url::ParseError> {
        let mut url = base.join(path_on_base_origin(base, href).unwrap_or(href))?;
        self.normalize(&mut url);
        Ok(url)
    }
}

/// When `href` is an absolute URL spelled with exactly the scheme and
/// authority `base` is serialised with, then a `/` and not a second slash:
/// the rest, from that `/`. Joined to `base` it gives the same URL as
/// `href` itself (the WHATWG parser's relative-slash state takes the
/// base's host and goes on in the path state, where the absolute URL's
/// authority state would have ended), without parsing the host again,
/// which is most of the work for such a link. A site's links to itself
/// are mostly written this way.
fn path_on_base_origin<'a>(base: &Url, href: &'a str) -> Option<&'a str> {
    // Only the schemes crawled, whose URLs always have a host (a base
    // that cannot be one, `mailto:`, would refuse the relative form).
    if !matches!(base.scheme(), "http" | "https") {
        return None;
    }
    let origin = &base[..Position::BeforePath];
    let rest = href.strip_prefix(origin)?;
    // The parser drops tabs and newlines wherever they are: one after the
    // slash could hide a second slash from the test below (found by the
    // fuzzer: `http://a.test/\t//b`).
    if rest.bytes().any(|b| matches!(b, b'\t' | b'\n' | b'\r')) {
        return None;
    }
    // A second slash (or a backslash, a slash in http) would make the
    // relative form a URL of another host.
    match rest.as_bytes() {
        [b'/', next, ..] if *next == b'/' || *next == b'\\' => None,
        [b'/', ..] => Some(rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_STRIP_PARAMS;

    fn norm(s: &str) -> String {
        let mut u = Url::parse(s).unwrap();
        Normalizer::new(&DEFAULT_STRIP_PARAMS).normalize(&mut u);
        u.to_string()
    }

    #[test]
    fn lowercases_scheme_and_host_and_drops_default_port() {
        assert_eq!(norm("HTTP://Example.COM:80/A"), "http://example.com/A");
        assert_eq!(norm("https://example.com:443/"), "https://example.com/");
        assert_eq!(norm("http://example.com:8080"), "http://example.com:8080/");
    }

    #[test]
    fn resolves_dot_segments_and_drops_fragments() {
        assert_eq!(norm("http://a.test/x/../y/./z#frag"), "http://a.test/y/z");
        assert_eq!(norm("http://a.test/p?"), "http://a.test/p");
    }

    #[test]
    fn strips_tracking_parameters_only() {
        assert_eq!(
            norm("http://a.test/p?b=2&utm_source=x&a=1&fbclid=9&gclid=3&utm_medium=y"),
            "http://a.test/p?b=2&a=1"
        );
        assert_eq!(norm("http://a.test/p?utm_source=x"), "http://a.test/p");
        // Order and spelling of the other parameters are kept as written.
        assert_eq!(
            norm("http://a.test/p?z=1&a=%41"),
            "http://a.test/p?z=1&a=%41"
        );
        assert_eq!(norm("http://a.test/p?utm=1"), "http://a.test/p?utm=1");
    }

    #[test]
    fn strip_list_is_configurable() {
        let n = Normalizer::new(&["sid"]);
        let mut u = Url::parse("http://a.test/?sid=1&utm_source=x").unwrap();
        n.normalize(&mut u);
        assert_eq!(u.as_str(), "http://a.test/?utm_source=x");
        let none: [&str; 0] = [];
        let n = Normalizer::new(&none);
        let mut u = Url::parse("http://a.test/?utm_source=x#f").unwrap();
        n.normalize(&mut u);
        assert_eq!(u.as_str(), "http://a.test/?utm_source=x");
    }

    #[test]
    fn a_link_spelled_with_the_pages_origin_resolves_as_it_is_written() {
        let n = Normalizer::new(&DEFAULT_STRIP_PARAMS);
        let bases = [
            "http://a.test/dir/page?x=1",
            "https://user:pw@a.test:8443/",
            "http://127.0.0.1:41745/p/1",
            "http://[::1]:8080/a/b/",
            "mailto:someone@a.test",
        ];
        let rests = [
            "",
            "/",
            "//",
            "//b.test/x",
            "/\\b.test/x",
            "\\b.test",
            "/./../x",
            "/%2e%2e/x",
            "/a\tb",
            "/a\nb ",
            "/\t//b.test/x",
            "/\r\n\\b.test",
            "/?q=1#f",
            "/#f",
            "/x?utm_source=y&b=2",
            ":80/x",
            ".evil/x",
            "@b.test/x",
            "/p/0",
            "/ü/ä?ö#x",
            "/a b",
            "/\u{1}x",
        ];
        let mut fast = 0;
        for base in bases {
            let base = Url::parse(base).unwrap();
            let origin = &base[..Position::BeforePath];
            for prefix in [
                origin.to_owned(),
                origin.to_uppercase(),
                format!("{origin}:80"),
            ] {
                for rest in rests {
                    let href = format!("{prefix}{rest}");
                    fast += usize::from(path_on_base_origin(&base, &href).is_some());
                    let slow = base.join(&href).map(|mut u| {
                        n.normalize(&mut u);
                        u
                    });
                    assert_eq!(n.resolve(&base, &href), slow, "{base} + {href:?}");
                }
            }
        }
        // The shortcut was taken (and agreed), not only refused.
        assert!(fast >= 40, "{fast}");
    }

    #[test]
    fn the_fuzzers_tab_before_a_second_slash_keeps_the_pages_host() {
        // Found by fuzzing (fuzz/regressions/url_normalize; the target puts
        // an input with an odd first byte behind `http://a.test`): the
        // parser drops the tab, so `/\t//b` joined as a path would have
        // been `///b`, a URL without a host, and `/\t/b` one of host `b`.
        let input =
            include_bytes!("../../../fuzz/regressions/url_normalize/tab-hides-a-second-slash");
        let href = format!("http://a.test{}", String::from_utf8_lossy(&input[1..]));
        let n = Normalizer::new(&DEFAULT_STRIP_PARAMS);
        let base = Url::parse("http://a.test/dir/page").unwrap();
        let url = n.resolve(&base, &href).unwrap();
        assert_eq!(url.host_str(), Some("a.test"));
        assert!(url.path().starts_with("///b"), "{url}");
        let other = n.resolve(&base, "http://a.test/\t/b.test/x").unwrap();
        assert_eq!(other.as_str(), "http://a.test//b.test/x");
    }

    #[test]
    fn the_fuzzers_file_url_normalises_in_place_stably_and_is_not_http() {
        // Found by fuzzing (fuzz/regressions/url_normalize): the `url` crate
        // does not re-parse this `file:` URL to itself; normalising in
        // place is still stable, and the crawler never keys such a URL (only
        // http(s) passes the scheme scoper).
        let href = String::from_utf8_lossy(include_bytes!(
            "../../../fuzz/regressions/url_normalize/file-url-drive-letter-reparse"
        ));
        let n = Normalizer::new(&crate::config::ScopeConfig::default().strip_params);
        let base = Url::parse("http://a.test/dir/page").unwrap();
        let mut url = n.resolve(&base, &href).unwrap();
        let once = url.as_str().to_owned();
        n.normalize(&mut url);
        assert_eq!(url.as_str(), once);
        assert_eq!(url.scheme(), "file");
        assert!(url.fragment().is_none());
    }

    #[test]
    fn resolve_joins_relative_links() {
        let n = Normalizer::new(&DEFAULT_STRIP_PARAMS);
        let base = Url::parse("http://a.test/dir/page.html").unwrap();
        assert_eq!(
            n.resolve(&base, "../x#y").unwrap().as_str(),
            "http://a.test/x"
        );
        assert_eq!(
            n.resolve(&base, "z").unwrap().as_str(),
            "http://a.test/dir/z"
        );
        assert_eq!(
            n.resolve(&base, "//b.test/").unwrap().as_str(),
            "http://b.test/"
        );
        assert!(n.resolve(&base, "http://[bad").is_err());
    }
}
