//! The shape of the site: which paths exist, what they return, which links
//! they carry; and the oracle of what a correct crawl reaches.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use crate::tls::CertKind;

/// Length of a redirect chain served at `/chain/{CHAIN_START}`: longer than
/// the crawler's 10-hop limit.
pub const CHAIN_START: u32 = 12;
/// Size of `/huge`: more than the crawler's default 10 MiB body limit.
pub const HUGE_BYTES: usize = 12 * 1024 * 1024;

/// The whole site.
#[derive(Debug, Clone)]
pub struct SiteConfig {
    /// One entry per host (listener).
    pub hosts: Vec<HostConfig>,
    /// How long `/slow` waits before answering.
    pub slow: Duration,
    /// Serve HTTPS (HTTP/2 or HTTP/1.1 by ALPN) with a throw-away
    /// certificate authority instead of plain HTTP/1.1.
    pub tls: bool,
}

/// One host of the site.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Number of pages `/p/0 … /p/{pages-1}`.
    pub pages: u32,
    /// Child links per page (the page graph is a tree of this fan-out, plus
    /// back links that are duplicates).
    pub links: u32,
    /// Approximate size of a page in bytes (padding text is added).
    pub page_bytes: usize,
    /// Delay before every response (robots.txt excluded).
    pub delay: Duration,
    /// `Crawl-delay` written in robots.txt.
    pub crawl_delay: Option<f32>,
    /// What `/robots.txt` answers.
    pub robots: RobotsMode,
    /// Serve the special pages (redirects, traps, huge, slow …) from `/`.
    pub special: bool,
    /// Host name used in absolute links (must be pinned to the host's
    /// loopback address by the crawler); `None` uses the address itself.
    pub name: Option<String>,
    /// Link each page to the next host's pages too (cross-authority links).
    pub cross_links: bool,
    /// Fixed port, or `None` for any free port.
    pub port: Option<u16>,
    /// Answer every request but robots.txt with 500.
    pub fail_all: bool,
    /// Extra delay of up to this much per page, fixed for each page but
    /// different between pages, so responses finish out of order.
    pub delay_spread: Duration,
    /// The share of pages, in percent, that change in each new edition of
    /// the site ([`crate::edition`]).
    pub changed_percent: u32,
    /// The index's markup names the site's edition in a comment: a new
    /// edition changes its bytes, never its text (for `--signature text`).
    pub stamped_index: bool,
    /// Every page uses the shared stylesheet, logo and icon of the
    /// requisite pages (`/req/`), as the pages of a real site share theirs:
    /// a crawl with `--requisites` fetches each once.
    pub embeds: bool,
    /// The certificate the host presents when the site is served over TLS
    /// ([`SiteConfig::tls`]): a valid one, or one a client must refuse.
    pub cert: CertKind,
    /// Over TLS, offer only HTTP/1.1 by ALPN, not HTTP/2: clients then
    /// speak HTTP/1.1.
    pub http1_only: bool,
    /// Over plain HTTP, also speak HTTP/2 to a client that starts with
    /// its preface (h2c by prior knowledge), beside HTTP/1.1.
    pub h2c: bool,
}

/// What `/robots.txt` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsMode {
    /// 200 with rules disallowing `/private/`.
    Rules,
    /// 404: everything allowed.
    Missing,
    /// 503: everything disallowed for now (RFC 9309).
    Unavailable,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            pages: 50,
            links: 8,
            page_bytes: 4096,
            delay: Duration::ZERO,
            crawl_delay: None,
            robots: RobotsMode::Rules,
            special: false,
            name: None,
            cross_links: false,
            port: None,
            fail_all: false,
            delay_spread: Duration::ZERO,
            changed_percent: 10,
            stamped_index: false,
            embeds: false,
            cert: CertKind::Valid,
            http1_only: false,
            h2c: false,
        }
    }
}

impl SiteConfig {
    /// `hosts` identical hosts of `pages` pages.
    pub fn uniform(hosts: usize, pages: u32) -> Self {
        Self {
            hosts: (0..hosts)
                .map(|_| HostConfig {
                    pages,
                    ..HostConfig::default()
                })
                .collect(),
            slow: Duration::from_secs(30),
            tls: false,
        }
    }

    /// The site used by the end-to-end tests and the demo: host 0 has every
    /// special page, host 1 is a plain neighbour it links to.
    pub fn showcase() -> Self {
        Self {
            hosts: vec![
                HostConfig {
                    pages: 60,
                    links: 5,
                    special: true,
                    cross_links: true,
                    ..HostConfig::default()
                },
                HostConfig {
                    pages: 20,
                    links: 4,
                    ..HostConfig::default()
                },
            ],
            slow: Duration::from_secs(30),
            tls: false,
        }
    }
}

/// What a path returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/robots.txt`.
    Robots,
    /// `/`: links to `/p/0` and, on special hosts, to every special page.
    Index,
    /// `/p/{i}`.
    Page(u32),
    /// A redirect to a path.
    Redirect(u16, String),
    /// A leaf HTML page with these canonical links.
    Html(Vec<String>),
    /// `/meta-nofollow`: a page whose links must not be followed.
    MetaNofollow,
    /// `/base/page`: links relative to `<base href="/p/">`.
    Base,
    /// `/refresh`: meta refresh to `/p/3`.
    Refresh,
    /// `/product/{n}` (1 to [`PRODUCTS`]): a product page with known
    /// values ([`product`]), linked from no page.
    Product(u32),
    /// `/trap/{n}`: links to `/trap/{n+1}`, forever.
    Trap(u32),
    /// A non-HTML body with a type.
    File(&'static str),
    /// `/slow`: answers after the slow delay.
    Slow,
    /// `/huge`: larger than the crawler's body limit.
    Huge,
    /// `/gzip`: a gzip-encoded HTML page.
    Gzip,
    /// `/bomb`: a small gzip body that inflates to more than the crawler's
    /// body limit.
    Bomb,
    /// `/flaky/{k}`: 503 for the first `k` requests, then a page.
    Flaky(u32),
    /// `/busy`: 429 with `Retry-After: 1` on the first request, then a page.
    Busy,
    /// 500, on a host that fails everything.
    Fail,
    /// A sitemap file (showcase hosts: `/sitemap.xml`, an index, and the
    /// files it and robots.txt name), listing pages no page links to.
    Sitemap(SitemapFile),
    /// A file under `/req/`, the requisite pages every host serves
    /// ([`crate::requisite`]).
    Requisite,
    /// A file under `/js/`, the script pages every host serves
    /// ([`crate::script`]).
    Script,
    /// 404.
    NotFound,
}

impl HostConfig {
    /// The route of `target` (path and query) on this host.
    pub fn route(&self, target: &str) -> Route {
        let path = target.split('?').next().unwrap_or(target);
        if path == "/robots.txt" {
            return Route::Robots;
        }
        if self.fail_all {
            return Route::Fail;
        }
        if path == "/" {
            return Route::Index;
        }
        if path.starts_with("/new/") {
            return Route::Html(vec![]);
        }
        if let Some(i) = path.strip_prefix("/p/").and_then(|n| n.parse::<u32>().ok()) {
            return if i < self.pages {
                Route::Page(i)
            } else {
                Route::NotFound
            };
        }
        if path.starts_with("/req/") {
            return Route::Requisite;
        }
        if path.starts_with("/js/") {
            return Route::Script;
        }
        if !self.special {
            return Route::NotFound;
        }
        match path {
            "/redirect/p1" => Route::Redirect(301, "/p/1".into()),
            "/loop/a" => Route::Redirect(302, "/loop/b".into()),
            "/loop/b" => Route::Redirect(302, "/loop/a".into()),
            "/q" => Route::Html(vec![]),
            "/from-gzip" => Route::Html(vec![]),
            "/private/secret" => Route::Html(vec![]),
            "/sitemap.xml" => Route::Sitemap(SitemapFile::Index),
            "/sitemap-pages.xml" => Route::Sitemap(SitemapFile::Pages),
            "/sitemap-more.xml.gz" => Route::Sitemap(SitemapFile::MoreGz),
            "/sitemap-broken.xml" => Route::Sitemap(SitemapFile::Broken),
            "/sitemap-robots.txt" => Route::Sitemap(SitemapFile::Text),
            "/only-in-sitemap"
            | "/only-in-gz-sitemap"
            | "/only-in-broken-sitemap"
            | "/only-in-text-sitemap" => Route::Html(vec![]),
            "/meta-nofollow" => Route::MetaNofollow,
            "/base/page" => Route::Base,
            "/refresh" => Route::Refresh,
            p if p
                .strip_prefix("/product/")
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| (1..=PRODUCTS).contains(&n)) =>
            {
                Route::Product(p[9..].parse().unwrap_or(1))
            }
            "/file.pdf" => Route::File("application/pdf"),
            "/data.json" => Route::File("application/json"),
            "/slow" => Route::Slow,
            "/huge" => Route::Huge,
            "/gzip" => Route::Gzip,
            "/bomb" => Route::Bomb,
            "/busy" => Route::Busy,
            _ => {
                if let Some(k) = path
                    .strip_prefix("/flaky/")
                    .and_then(|n| n.parse::<u32>().ok())
                {
                    return Route::Flaky(k);
                }
                if let Some(n) = path
                    .strip_prefix("/chain/")
                    .and_then(|n| n.parse::<u32>().ok())
                {
                    return if n == 0 {
                        Route::Html(vec![])
                    } else {
                        Route::Redirect(301, format!("/chain/{}", n - 1))
                    };
                }
                if let Some(n) = path
                    .strip_prefix("/trap/")
                    .and_then(|n| n.parse::<u32>().ok())
                {
                    return Route::Trap(n);
                }
                Route::NotFound
            }
        }
    }

    /// Canonical same-host links of page `i`, children first.
    pub fn page_links(&self, i: u32) -> Vec<u32> {
        let n = self.pages;
        let mut out = Vec::with_capacity(self.links as usize + 2);
        for k in 0..self.links {
            let c = u64::from(i) * u64::from(self.links) + 1 + u64::from(k);
            if c < u64::from(n) {
                out.push(c as u32);
            }
        }
        // Back links: duplicates of pages found elsewhere.
        out.push(i / 2);
        out.push((i + 1) % n);
        out
    }

    /// Canonical links of `/` on this host.
    pub fn index_links(&self) -> Vec<String> {
        let mut out = vec!["/p/0".to_owned()];
        if self.special {
            for p in [
                "/redirect/p1",
                "/loop/a",
                "/missing",
                "/file.pdf",
                "/data.json",
                "/slow",
                "/huge",
                "/gzip",
                "/bomb",
                "/trap/0",
                "/meta-nofollow",
                "/base/page",
                "/refresh",
                "/q?id=1",
                "/q?id=2",
            ] {
                out.push(p.to_owned());
            }
            out.push(format!("/chain/{CHAIN_START}"));
        }
        out
    }

    /// Every path a correct crawl from `/` with `max_depth` must request on
    /// this host (same-host scope, robots obeyed, redirects followed up to
    /// 10 hops), with its depth. Special pages whose outcome is an error
    /// (loop, 404, slow, huge) are included: they are requested.
    pub fn expected(&self, max_depth: u32) -> BTreeMap<String, u32> {
        let mut seen = BTreeMap::new();
        let mut queue = VecDeque::from([("/".to_owned(), 0u32, 0u32)]);
        while let Some((path, depth, hops)) = queue.pop_front() {
            if depth > max_depth || seen.contains_key(&path) || path.starts_with("/private/") {
                continue;
            }
            seen.insert(path.clone(), depth);
            let links: Vec<String> = match self.route(&path) {
                Route::Index => self.index_links(),
                Route::Page(i) => self
                    .page_links(i)
                    .iter()
                    .map(|j| format!("/p/{j}"))
                    .collect(),
                Route::Redirect(_, to) => {
                    if hops < 10 {
                        queue.push_back((to, depth, hops + 1));
                    }
                    continue;
                }
                Route::Trap(n) => vec![format!("/trap/{}", n + 1)],
                Route::Base => vec!["/p/2".to_owned()],
                Route::Refresh => vec!["/p/3".to_owned()],
                Route::Gzip => vec!["/from-gzip".to_owned()],
                _ => vec![],
            };
            for l in links {
                queue.push_back((l, depth + 1, 0));
            }
        }
        seen
    }
}

impl HostConfig {
    /// The delay before answering `route`: the host's delay plus, for a
    /// page, its share of `delay_spread` (a fixed pseudo-random fraction).
    pub fn delay_for(&self, route: &Route) -> Duration {
        match route {
            Route::Robots => Duration::ZERO,
            Route::Page(i) => {
                let fraction = (u64::from(*i).wrapping_mul(2_654_435_761) % 1000) as u32;
                self.delay + self.delay_spread * fraction / 1000
            }
            _ => self.delay,
        }
    }
}

/// Product pages a special host serves (`/product/1` …).
pub const PRODUCTS: u32 = 3;

/// What product page `n` holds, for tests of fields by selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    /// `h1.product-title`, entities and whitespace as in the page.
    pub name: String,
    /// The first `.price` (a second one, the old price, follows).
    pub price: String,
    /// `img.gallery@src` as written: one absolute path, one relative to
    /// the page's directory.
    pub images: [String; 2],
    /// `div.desc`'s inner HTML.
    pub desc_html: String,
    /// The text of its `<script type="application/ld+json">`: a schema.org
    /// Product with the page's name and price.
    pub jsonld: String,
    /// The text of an element with the `hidden` attribute, which is not
    /// the page's text as a reader sees it.
    pub hidden: String,
}

/// The known values of product page `n`.
pub fn product(n: u32) -> Product {
    Product {
        name: format!("Kettle &amp; Cup\n   No. {n}"),
        price: format!("{n}9.99"),
        images: [format!("/img/{n}-a.jpg"), format!("img/{n}-b.jpg")],
        desc_html: format!("<p>Boils <b>fast</b>, model {n}.</p>"),
        jsonld: format!(
            "{{\"@context\": \"https://schema.org\", \"@type\": \"Product\", \
             \"name\": \"Kettle & Cup No. {n}\", \"offers\": {{\"@type\": \"Offer\", \
             \"price\": \"{n}9.99\", \"priceCurrency\": \"EUR\"}}}}"
        ),
        hidden: format!("Only {n} left in stock"),
    }
}

/// The HTML of product page `n`: besides [`product`]'s values, `<html
/// lang="en-GB">`, meta tags (description, keywords, og:title, og:type,
/// og:image, twitter:card, viewport, and a second description in the body),
/// a style, a script and a hidden element whose text a reader never sees.
pub fn render_product(n: u32) -> String {
    let p = product(n);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en-GB\"><head><title>Product {n}</title>\n\
         <link rel=\"canonical\" href=\"/product/{n}\">\n\
         <meta name=\"description\" content=\"A kettle &amp; a cup,\n   model {n}.\">\n\
         <meta name=\"keywords\" content=\"kettle, cup\">\n\
         <meta property=\"og:title\" content=\"Kettle &amp; Cup No. {n}\">\n\
         <meta property=\"og:type\" content=\"product\">\n\
         <meta property=\"og:image\" content=\"{img}\">\n\
         <meta name=\"twitter:card\" content=\"summary\">\n\
         <meta name=\"viewport\" content=\"width=device-width\">\n\
         <style>.price {{ color: red }}</style>\n\
         <script type=\"application/ld+json\">{jsonld}</script>\n\
         </head><body>\n\
         <h1 class=\"product-title\">{name}</h1>\n<span class=\"price\">{price}</span>\n\
         <span class=\"price old\">{n}0.00</span>\n\
         <img class=\"gallery\" src=\"{img}\"><img class=\"gallery\" src=\"{img2}\">\n\
         <div class=\"desc\">{desc}</div>\n<div hidden>{hidden}</div>\n\
         <script>var fake = '<h1 class=\"product-title\">x</h1>';</script>\n\
         <meta name=\"description\" content=\"a second description\">\n\
         </body></html>\n",
        img = p.images[0],
        img2 = p.images[1],
        jsonld = p.jsonld,
        name = p.name,
        price = p.price,
        desc = p.desc_html,
        hidden = p.hidden,
    )
}

/// Absolute base of a host's links: `http://name:port` (or `https://`).
pub fn origin(tls: bool, name: &str, port: u16) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{name}:{port}")
}

const PADDING: &str = "Crawlers read pages like this one all day long; the words here are \
    only padding so that the page has the size of a real one. ";

/// HTML of page `i` of `host` in revision `rev` (0 first; later ones
/// say so and link to a page new in them), links written in rotating
/// forms. `me` is this host's origin, `next` the origin of the next host.
pub fn render_page(host: &HostConfig, i: u32, rev: u32, me: &str, next: Option<&str>) -> String {
    let mut html = String::with_capacity(host.page_bytes + 1024);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Page {i} &amp; friends</title>\
         <link rel=\"canonical\" href=\"/p/{i}\">"
    );
    if host.embeds {
        html.push_str(
            "<link rel=\"stylesheet\" href=\"/req/site.css\">\
             <link rel=\"icon\" href=\"/req/favicon.png\">",
        );
    }
    let _ = write!(html, "</head><body>\n<h1>Page {i}</h1>\n");
    if host.embeds {
        html.push_str("<img src=\"/req/logo.png\" alt=\"logo\">\n");
    }
    html.push_str("<ul>\n");
    for (k, j) in host.page_links(i).into_iter().enumerate() {
        let href = match k % 6 {
            0 => format!("{me}/p/{j}"),
            1 => format!("/p/{j}"),
            2 => format!("{j}"),
            3 => format!("../p/{j}"),
            4 => format!("/p/{j}#section-{k}"),
            _ => format!("/p/{j}?utm_source=testsite&amp;utm_medium=link"),
        };
        let _ = writeln!(html, "<li><a href=\"{href}\">Page {j}</a></li>");
    }
    if let Some(next) = next {
        let _ = writeln!(html, "<li><a href=\"{next}/p/{i}\">Elsewhere {i}</a></li>");
    }
    if rev > 0 {
        let new = crate::edition::new_page(i, rev);
        let _ = writeln!(html, "<li><a href=\"{new}\">New in revision {rev}</a></li>");
    }
    html.push_str("</ul>\n");
    while html.len() + 20 < host.page_bytes {
        html.push_str("<p>");
        html.push_str(PADDING);
        html.push_str("</p>\n");
    }
    html.push_str("</body></html>\n");
    html
}

/// HTML of `/` on `host`.
pub fn render_index(host: &HostConfig, me: &str, next: Option<&str>) -> String {
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><title>Test site</title>\
         <script>var trap = '<a href=\"/never/script\">x</a>'; fetch('/never/script-fetch');</script>\
         <style>body { background: url(/never/style.png) }</style></head><body>\n\
         <!-- <a href=\"/never/comment\">old link</a> -->\n",
    );
    for (k, l) in host.index_links().iter().enumerate() {
        let href = match (l.as_str(), k % 3) {
            ("/q?id=1", _) => "/q?id=1&amp;utm_source=index&amp;fbclid=abc".to_owned(),
            ("/q?id=2", _) => "q?id=2#top".to_owned(),
            (_, 0) => format!("{me}{l}"),
            (_, 1) => l.clone(),
            _ => l.trim_start_matches('/').to_owned(),
        };
        let _ = writeln!(html, "<a href=\"{href}\">{l}</a>");
    }
    if host.special {
        html.push_str(
            "<a href=\"/private/secret\">secret</a>\n\
             <a rel=\"nofollow\" href=\"/never/rel-nofollow\">nofollow</a>\n\
             <a href=\"mailto:someone@example.invalid\">mail</a>\n\
             <a href=\"javascript:void(0)\">js</a>\n\
             <a href=\"tel:+100\">tel</a>\n\
             <a href=\"#top\">top</a>\n\
             <a href=\"http://[broken\">broken</a>\n",
        );
    }
    if let Some(next) = next {
        let _ = writeln!(html, "<a href=\"{next}/p/0\">neighbour</a>");
    }
    html.push_str("</body></html>\n");
    html
}

/// HTML of a leaf page with `body` inside.
pub fn render_leaf(title: &str, head: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><title>{title}</title>{head}</head><body>{body}</body></html>\n"
    )
}

/// The robots.txt of `host`.
/// The sitemap files of a showcase host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitemapFile {
    /// `/sitemap.xml`: an index of the three XML files.
    Index,
    /// `/sitemap-pages.xml`: a page only it lists, a linked page, a page
    /// robots.txt disallows.
    Pages,
    /// `/sitemap-more.xml.gz`: gzip.
    MoreGz,
    /// `/sitemap-broken.xml`: one entry, then malformed XML.
    Broken,
    /// `/sitemap-robots.txt`: a text sitemap, named by robots.txt.
    Text,
}

impl SitemapFile {
    /// The pages only this file lists (what a crawl with sitemaps finds).
    pub fn only_here(self) -> &'static [&'static str] {
        match self {
            SitemapFile::Index => &[],
            SitemapFile::Pages => &["/only-in-sitemap"],
            SitemapFile::MoreGz => &["/only-in-gz-sitemap"],
            SitemapFile::Broken => &["/only-in-broken-sitemap"],
            SitemapFile::Text => &["/only-in-text-sitemap"],
        }
    }

    /// The file's body on the host at `origin` (uncompressed; the server
    /// gzips `MoreGz`).
    pub fn body(self, origin: &str) -> String {
        let urlset = |paths: &[&str]| {
            let mut x = String::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
            );
            for p in paths {
                let _ = writeln!(
                    x,
                    "  <url><loc>{p}</loc><lastmod>2026-11-01</lastmod></url>"
                );
            }
            x.push_str("</urlset>\n");
            x
        };
        match self {
            SitemapFile::Index => "<?xml version=\"1.0\"?>\n<sitemapindex>\n\
                 <sitemap><loc>/sitemap-pages.xml</loc></sitemap>\n\
                 <sitemap><loc>/sitemap-more.xml.gz</loc></sitemap>\n\
                 <sitemap><loc>/sitemap-broken.xml</loc></sitemap>\n</sitemapindex>\n"
                .to_owned(),
            SitemapFile::Pages => {
                let absolute = format!("{origin}/only-in-sitemap");
                urlset(&[&absolute, "/p/0", "/private/in-sitemap"])
            }
            SitemapFile::MoreGz => urlset(&["/only-in-gz-sitemap"]),
            SitemapFile::Broken => {
                "<urlset><url><loc>/only-in-broken-sitemap</loc></url><url><loc>/x</oops>"
                    .to_owned()
            }
            SitemapFile::Text => format!("{origin}/only-in-text-sitemap\n# a comment\n"),
        }
    }
}

/// The robots.txt `host` answers.
pub fn render_robots(host: &HostConfig) -> String {
    let mut s =
        String::from("# test site\nUser-agent: *\nDisallow: /private/\nDisallow: /never/\n");
    if host.special {
        s.push_str("Sitemap: /sitemap-robots.txt\n");
    }
    if let Some(d) = host.crawl_delay {
        let _ = writeln!(s, "Crawl-delay: {d}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_reachable_within_a_small_depth() {
        let host = HostConfig {
            pages: 20_000,
            links: 20,
            ..HostConfig::default()
        };
        let expected = host.expected(5);
        assert_eq!(expected.len(), 20_001, "all pages plus the index");
    }

    #[test]
    fn special_routes() {
        let host = HostConfig {
            special: true,
            ..HostConfig::default()
        };
        assert_eq!(
            host.route("/loop/a"),
            Route::Redirect(302, "/loop/b".into())
        );
        assert_eq!(host.route("/p/49"), Route::Page(49));
        assert_eq!(host.route("/p/50"), Route::NotFound);
        assert_eq!(host.route("/never/script"), Route::NotFound);
        let expected = host.expected(5);
        assert!(expected.contains_key("/chain/12"));
        assert!(expected.contains_key("/chain/2"), "10th hop");
        assert!(
            !expected.contains_key("/chain/1"),
            "11th hop is over the limit"
        );
        assert!(!expected.contains_key("/private/secret"));
        assert!(expected.contains_key("/trap/4"));
        assert!(!expected.contains_key("/trap/5"), "depth 6");
        assert_eq!(
            expected.get("/chain/2"),
            Some(&1),
            "redirect targets keep the depth"
        );
    }

    #[test]
    fn pages_have_roughly_the_asked_size() {
        let host = HostConfig::default();
        let html = render_page(&host, 3, 0, "http://127.0.0.1:1", None);
        assert!(html.len() >= 4000 && html.len() < 5000, "{}", html.len());
    }
}
