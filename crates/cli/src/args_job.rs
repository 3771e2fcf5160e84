//! The options that define a crawl job, shared by `crawl` ([`crate::args`])
//! and `submit` ([`crate::args_cluster`]); this module imports neither.

use std::path::PathBuf;
use std::time::Duration;

use crate::values::{duration, positive_duration, positive_usize, request_rate};
use clap::{Args, ValueEnum};
use crawlkeeper_crawl::FieldSpec;
use crawlkeeper_crawl::config::{
    CrawlConfig, DEFAULT_MAX_WORKERS, DEFAULT_RUN_TIMEOUT, HostScope, HttpVersion, RequisitesScope,
    ResolveOverride, RevisitConfig,
};
use crawlkeeper_fetch::guard::Cidr;
use crawlkeeper_fetch::{ExtraHeader, ProxyConfig, ProxyUrl, split_list};
use crawlkeeper_model::MAX_DURATION;

/// Where links may lead.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ScopeArg {
    /// Only the seeds' hosts.
    SameHost,
    /// Hosts sharing a registrable domain with a seed.
    SameDomain,
    /// Any host.
    Any,
}

/// Which pages `--render` renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RenderWhenArg {
    /// Pages whose served HTML looks like an application shell.
    Auto,
    /// Every 2xx HTML page.
    Always,
}

/// What a continuous crawl's page signature is a hash of.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum SignatureArg {
    /// The body's bytes.
    Body,
    /// An HTML page's text as a reader sees it (takes --text).
    Text,
}

/// Which hosts a page's requisites may come from.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum RequisitesScopeArg {
    /// Any host the SSRF guard lets the crawler reach.
    Any,
    /// Only the page's own host.
    SameHost,
}

/// The options that define a crawl job (`crawl` and `submit`).
#[derive(Args, Debug, Clone)]
pub struct JobArgs {
    /// Follow links found on pages (without it only the seeds are fetched).
    #[arg(long)]
    pub follow: bool,
    /// Read each host's sitemaps (robots.txt `Sitemap:` lines and
    /// /sitemap.xml) after its robots.txt; their URLs are crawled at depth 1.
    #[arg(long)]
    pub sitemaps: bool,
    /// Fetch what each fetched HTML page needs to render: its images,
    /// scripts, stylesheets (and their fonts, images and imports), frames
    /// and media, whatever its depth, at most 500 for a page's whole tree;
    /// `--max-pages` counts pages and frames only.
    #[arg(long)]
    pub requisites: bool,
    /// The most requisites (frames aside) the whole crawl fetches
    /// (default: 100 per page of --max-pages when that is given, else no
    /// bound).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_requisites: Option<u64>,
    /// Which hosts requisites may come from: any (a CDN; the SSRF guard
    /// still applies) or only the page's own.
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub requisites_scope: Option<RequisitesScopeArg>,
    /// Keep each page's WARC records (request, response headers and body
    /// as received, metadata) in the state store, for
    /// `crawlkeeper results --format warc`.
    #[arg(long)]
    pub store_bodies: bool,
    /// Maximum link depth from a seed.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub depth: u32,
    /// Stop queueing after this many pages (requisites not counted).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_pages: Option<u64>,
    /// Which hosts links may lead to.
    #[arg(long, value_enum, default_value = "same-host")]
    pub scope: ScopeArg,
    /// A host that is always in scope (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Only URLs matching this regex (repeatable: any may match).
    #[arg(long, value_name = "RE")]
    pub include: Vec<String>,
    /// Never URLs matching this regex (repeatable).
    #[arg(long, value_name = "RE")]
    pub exclude: Vec<String>,
    /// The User-Agent header.
    #[arg(long, value_name = "S")]
    pub user_agent: Option<String>,
    /// A header sent with every request, robots.txt and sitemaps included
    /// (repeatable; its value is never shown). Authorization, Cookie and
    /// Proxy-Authorization go only to the seeds' hosts and --header-host's.
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// A host that the credential-bearing --header values (Authorization,
    /// Cookie, Proxy-Authorization) also go to, besides the seeds' hosts
    /// (repeatable).
    #[arg(long = "header-host", value_name = "HOST")]
    pub header_hosts: Vec<String>,
    /// Send the credential-bearing --header values to every host
    /// (requisites on a CDN, redirects and links to other hosts).
    #[arg(long, conflicts_with = "header_hosts")]
    pub header_everywhere: bool,
    /// Send requests through this proxy (http://, https://, socks5://,
    /// socks5h://, with user:password@ if needed) instead of the
    /// environment's (http_proxy, HTTPS_PROXY, ALL_PROXY).
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Hosts reached without the proxy: names (and their subdomains), IP
    /// addresses, CIDR networks, or * (comma-separated; replaces NO_PROXY).
    #[arg(long, value_name = "HOSTS")]
    pub no_proxy: Option<String>,
    /// Load these cookies (a Netscape cookie file, as curl and browsers'
    /// exporters write) into the crawl's cookie jar.
    #[arg(long, value_name = "FILE", conflicts_with = "no_cookies")]
    pub cookies: Option<PathBuf>,
    /// No cookie jar: cookies servers set are not sent back.
    #[arg(long)]
    pub no_cookies: bool,
    /// Speak HTTP/1.1 only, over TLS too. Default: HTTPS negotiates by
    /// ALPN (HTTP/2 where the server offers it), http:// speaks HTTP/1.1.
    #[arg(long, conflicts_with = "http2")]
    pub http1_only: bool,
    /// Speak HTTP/2 only: alone by ALPN over TLS, with prior knowledge
    /// (h2c) on http://; a server that does not speak it is an error.
    #[arg(long)]
    pub http2: bool,
    /// Do not fetch or obey robots.txt.
    #[arg(long)]
    pub ignore_robots: bool,
    /// Requests in flight across all hosts.
    #[arg(long, env = "CRAWLKEEPER_MAX_WORKERS", default_value_t = DEFAULT_MAX_WORKERS,
          value_name = "N", value_parser = positive_usize)]
    pub max_workers: usize,
    /// Requests in flight per host, across every job of the process (and
    /// of a cluster).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = positive_usize)]
    pub per_host: usize,
    /// Requests in flight per IP address: the hosts that resolve to one
    /// address share it, across every job of the process (and of a
    /// cluster). Default 4, or --per-host when that is more.
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub per_ip: Option<usize>,
    /// Stop the whole run after this long (e.g. 90s, 6h) and exit 124
    /// (default 6h; a --continuous crawl runs until stopped).
    #[arg(long, env = "CRAWLKEEPER_RUN_TIMEOUT", value_name = "DURATION",
          value_parser = duration)]
    pub timeout: Option<Duration>,
    /// Crawl forever: every page is fetched again when due, at an
    /// interval that follows how often it changes (conditionally, where
    /// its copy had validators), and new links join the crawl; each
    /// record says whether the page `changed`. Ends with `crawlkeeper
    /// stop`, Ctrl-C or --timeout; the same command goes on with the
    /// schedule kept. Part of the job's identity.
    #[arg(long)]
    pub continuous: bool,
    /// Render pages in headless Chromium before reading their links,
    /// fields, text and processors: every request the page makes goes
    /// through the crawl's rules (robots.txt, the SSRF guard, politeness,
    /// limits, proxies, headers, cookies) and fetcher; with --warc, what
    /// the page fetched is archived with it.
    #[arg(long)]
    pub render: bool,
    /// Which pages --render renders: auto (a served page with a script
    /// and fewer than 3 links, or an empty root/app mount element) or
    /// always (every 2xx HTML page).
    #[arg(long, value_enum, value_name = "WHEN", requires = "render")]
    pub render_when: Option<RenderWhenArg>,
    /// What a rendered page is waited for before its DOM is read: load
    /// (the load event; default), networkidle (then 500 ms without a
    /// request in flight), or a CSS selector (an element matching it).
    #[arg(long, value_name = "WAIT", requires = "render")]
    pub render_wait: Option<String>,
    /// Time a page has to render, from its tab's navigation; past it the
    /// page is recorded with the error kind render_timeout (and what its
    /// served HTML gave).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, requires = "render")]
    pub render_timeout: Option<Duration>,
    /// The shortest interval between two fetches of a page in a
    /// --continuous crawl (default 10m).
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "continuous")]
    pub revisit_min: Option<Duration>,
    /// The longest interval between two fetches of a page in a
    /// --continuous crawl (default 14d); a page that has not changed for
    /// long is still fetched this often.
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "continuous")]
    pub revisit_max: Option<Duration>,
    /// The request budget of a --continuous crawl's revisits (50/s,
    /// 3000/h, 20000/d): each page's interval is chosen so that the
    /// budget buys the most freshness, from how often each page changes;
    /// pages that change faster than it can follow are revisited at
    /// --revisit-max. Without it, each page about once per expected change.
    #[arg(long, value_name = "RATE", value_parser = request_rate, requires = "continuous")]
    pub budget: Option<f64>,
    /// What tells a --continuous crawl that a page changed: a hash of its
    /// body (default), or of its text as --text takes it (markup,
    /// scripts and comments that change are then no change; --text is
    /// implied, and each record carries fields.text).
    #[arg(long, value_enum, value_name = "OF", requires = "continuous")]
    pub signature: Option<SignatureArg>,
    /// Time allowed for one request, body included.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = duration)]
    pub request_timeout: Duration,
    /// Time allowed to connect.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = duration)]
    pub connect_timeout: Duration,
    /// Bodies longer than this many bytes are cut (after decompression).
    #[arg(long, default_value_t = 10 * 1024 * 1024, value_name = "BYTES")]
    pub max_body: u64,
    /// Links taken from one page; the record counts the rest (links_dropped).
    #[arg(long, default_value_t = crawlkeeper_crawl::config::DEFAULT_MAX_LINKS_PER_PAGE,
          value_name = "N", value_parser = positive_usize)]
    pub max_links_per_page: usize,
    /// Time allowed for finding the links of one page; past it the page is
    /// recorded with the links found so far (error kind extract_limit).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = duration)]
    pub extract_timeout: Duration,
    /// Query parameter removed from URLs (repeatable; `name*` is a prefix).
    /// Replaces the default list utm_*, fbclid, gclid.
    #[arg(long = "strip-param", value_name = "NAME")]
    pub strip_params: Vec<String>,
    /// Keep every query parameter.
    #[arg(long, conflicts_with = "strip_params")]
    pub keep_params: bool,
    /// Also trust the certificate authorities in this PEM file (repeatable).
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// Always allow connections into this network (CIDR, repeatable),
    /// despite the SSRF guard.
    #[arg(long = "allow-net", value_name = "CIDR", value_parser = cidr)]
    pub allow_nets: Vec<Cidr>,
    /// Never connect into this network (CIDR, repeatable), seeds included.
    #[arg(long = "deny-net", value_name = "CIDR", value_parser = cidr)]
    pub deny_nets: Vec<Cidr>,
    /// Turn the SSRF guard off: links may lead to private, loopback and
    /// link-local addresses (--deny-net still applies).
    #[arg(long)]
    pub allow_private: bool,
    /// Resolve HOST to IP instead of asking DNS (repeatable), like curl's --resolve.
    #[arg(long, value_name = "HOST=IP", value_parser = resolve_override)]
    pub resolve: Vec<ResolveOverride>,
    /// Percent of the time (1-100) the crawler may keep one host busy; the
    /// delay between requests adapts to response times. 100: no delay.
    #[arg(long, default_value_t = 50, value_name = "L",
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub max_load: u8,
    /// The least delay between two requests to one host.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = duration)]
    pub delay: Duration,
    /// A random extra delay per request, with this mean.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = duration)]
    pub random_delay: Duration,
    /// The longest robots.txt Crawl-delay obeyed.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = duration)]
    pub max_crawl_delay: Duration,
    /// Retries after a timeout, connection error, 429 or 5xx.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// Backoff before the first retry (doubled each time, with jitter).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = duration)]
    pub retry_base: Duration,
    /// Give up a host after this many failures in a row; its URLs are
    /// recorded as skipped.
    #[arg(long, default_value_t = 20, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_host_errors: u32,
    /// URL keys remembered in memory; past this the store is asked.
    #[arg(long, default_value_t = crawlkeeper_crawl::config::DEFAULT_SEEN_CACHE, value_name = "N")]
    pub seen_cache: usize,
    /// Also run the extractor called NAME on every fetched page, after the
    /// built-in `html` (repeatable; one a binary of your own registered).
    /// Part of the job's identity.
    #[arg(long = "extractor", value_name = "NAME")]
    pub extractors: Vec<String>,
    /// Also check every link with the scoper called NAME, after the
    /// built-in ones (repeatable; one a binary of your own registered).
    /// Part of the job's identity.
    #[arg(long = "scoper", value_name = "NAME")]
    pub scopers: Vec<String>,
    /// Run the processor called NAME on every fetched 2xx page, after the
    /// extractors (repeatable; in order). The job carries names only: a
    /// `crawl` runs what its --processor says, a node what its operator
    /// configured. Part of the job's identity.
    #[arg(long = "use", value_name = "NAME")]
    pub uses: Vec<String>,
    /// Take a field from every HTML page by CSS selector (repeatable):
    /// NAME=SELECTOR[@attr|::text|::html]; NAME[]=… keeps every match.
    #[arg(long = "extract", value_name = "NAME=SELECTOR", value_parser = field_spec)]
    pub extract: Vec<FieldSpec>,
    /// Take every HTML page's meta tags (description, keywords, robots,
    /// og:*, twitter:*), canonical URL and language into fields.meta.
    #[arg(long)]
    pub extract_meta: bool,
    /// Take every HTML page's JSON-LD scripts, parsed, into fields.jsonld.
    #[arg(long)]
    pub extract_jsonld: bool,
    /// Take every HTML page's text as a reader sees it into fields.text.
    #[arg(long)]
    pub text: bool,
    /// The most bytes of text kept from one page with --text (e.g. 65536,
    /// 64KiB, 2MiB); default 1MiB.
    #[arg(long, value_name = "BYTES", value_parser = byte_size)]
    pub max_text: Option<u64>,
    /// Read the links inside <noscript> too, as a browser with JavaScript
    /// off does (by default a page is read as with JavaScript on, and
    /// <noscript> holds no link). Part of the job's identity.
    #[arg(long)]
    pub noscript_links: bool,
    /// URLs queued in memory; more wait in the store.
    #[arg(long, default_value_t = crawlkeeper_crawl::config::DEFAULT_MAX_QUEUED, value_name = "N",
          value_parser = positive_usize)]
    pub max_queued: usize,
}

fn field_spec(s: &str) -> Result<FieldSpec, String> {
    s.parse()
        .map_err(|e: crawlkeeper_extract::FieldSpecError| e.to_string())
}

/// A size in bytes: a number, optionally followed by `KiB`, `MiB` or `GiB`
/// (any case), at least 1.
pub fn byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => return Err(format!("'{s}': expected BYTES, e.g. 65536, 64KiB, 2MiB")),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{s}': expected BYTES, e.g. 65536, 64KiB, 2MiB"))?;
    match n.checked_mul(scale) {
        Some(0) => Err("must be at least 1 byte".to_owned()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("'{s}': too large")),
    }
}

fn cidr(s: &str) -> Result<Cidr, String> {
    s.parse()
        .map_err(|e: crawlkeeper_fetch::guard::CidrError| e.to_string())
}

/// The `--header` options, checked (never repeating a value: it may be a
/// secret, which clap's own errors would print).
fn extra_headers(given: &[String]) -> Result<Vec<ExtraHeader>, String> {
    given
        .iter()
        .map(|h| h.parse().map_err(|e| format!("--header: {e}")))
        .collect()
}

/// The text of the `--cookies` file, checked (never repeating a cookie:
/// they are secrets).
fn cookie_file(path: Option<&std::path::Path>) -> Result<Option<String>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--cookies {}: {e}", path.display()))?;
    crawlkeeper_fetch::CookieJar::from_netscape(&text)
        .map_err(|e| format!("--cookies {}: {e}", path.display()))?;
    Ok(Some(text))
}

/// The `--proxy` option, checked (shown without its password).
fn proxy_url(given: Option<&str>) -> Result<Option<ProxyUrl>, String> {
    given
        .map(|p| p.parse().map_err(|e| format!("--proxy: {e}")))
        .transpose()
}

fn resolve_override(s: &str) -> Result<ResolveOverride, String> {
    let (host, ip) = s
        .split_once('=')
        .ok_or_else(|| format!("expected HOST=IP, got '{s}'"))?;
    let ip: std::net::IpAddr = ip
        .parse()
        .map_err(|e| format!("bad IP address '{ip}': {e}"))?;
    if host.is_empty() {
        return Err("empty host name".to_owned());
    }
    Ok(ResolveOverride {
        host: host.to_ascii_lowercase(),
        addr: std::net::SocketAddr::new(ip, 0),
    })
}

impl JobArgs {
    /// Takes the proxies the environment names (as curl reads it) unless
    /// `--proxy` named one; `--no-proxy` still replaces `NO_PROXY`. For
    /// commands that crawl here (`crawl`), not for `submit`: a job's
    /// Runners are elsewhere.
    pub fn proxy_from_env(
        &self,
        config: &mut CrawlConfig,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        if self.proxy.is_some() {
            return Ok(());
        }
        let mut env = ProxyConfig::from_env(get).map_err(|e| format!("environment proxy: {e}"))?;
        if let Some(hosts) = &self.no_proxy {
            env.no_proxy = split_list(hosts);
        }
        config.fetch.proxy = env;
        Ok(())
    }

    /// Whether each page's text is taken: `--text`, or `--signature text`
    /// which hashes it.
    fn takes_text(&self) -> bool {
        self.text || matches!(self.signature, Some(SignatureArg::Text))
    }

    /// Refuses options that only make sense with another one, and
    /// malformed headers and proxies.
    pub fn check(&self) -> Result<(), String> {
        extra_headers(&self.headers)?;
        proxy_url(self.proxy.as_deref())?;
        cookie_file(self.cookies.as_deref())?;
        if self.max_text.is_some() && !self.takes_text() {
            return Err("--max-text sets the cap of --text: give --text too".to_owned());
        }
        for host in &self.header_hosts {
            if url::Host::parse(host).is_err() {
                return Err(format!(
                    "--header-host '{}' is not a host (a name or an IP address, without a port)",
                    crawlkeeper_job::seeds::shown(host)
                ));
            }
        }
        if let Some(w) = &self.render_wait {
            crawlkeeper_render::Wait::parse(w).map_err(|e| format!("--render-wait: {e}"))?;
        }
        if self.max_requisites.is_some() && !self.requisites {
            return Err("--max-requisites bounds --requisites: give --requisites too".to_owned());
        }
        if (!self.header_hosts.is_empty() || self.header_everywhere) && self.headers.is_empty() {
            return Err(
                "--header-host and --header-everywhere say where --header values go: give --header too"
                    .to_owned(),
            );
        }
        if self.requisites_scope.is_some() && !self.requisites {
            return Err(
                "--requisites-scope says where requisites may come from: give --requisites too"
                    .to_owned(),
            );
        }
        Ok(())
    }

    /// The crawl configuration these arguments describe.
    pub fn to_config(&self) -> CrawlConfig {
        let mut c = CrawlConfig::default();
        c.scope.follow = self.follow;
        c.scope.sitemaps = self.sitemaps;
        c.scope.requisites = self.requisites.then_some(match self.requisites_scope {
            Some(RequisitesScopeArg::SameHost) => RequisitesScope::SameHost,
            Some(RequisitesScopeArg::Any) | None => RequisitesScope::Any,
        });
        c.archive.store_bodies = self.store_bodies;
        c.fetch.capture = self.store_bodies;
        c.scope.max_depth = self.depth;
        c.scope.max_pages = self.max_pages;
        c.scope.max_requisites = self.max_requisites;
        c.scope.hosts = match self.scope {
            ScopeArg::SameHost => HostScope::SameHost,
            ScopeArg::SameDomain => HostScope::SameDomain,
            ScopeArg::Any => HostScope::Any,
        };
        c.scope.allow_hosts = self.allow_hosts.clone();
        c.scope.include = self.include.clone();
        c.scope.exclude = self.exclude.clone();
        c.scope.respect_robots = !self.ignore_robots;
        if self.keep_params {
            c.scope.strip_params.clear();
        } else if !self.strip_params.is_empty() {
            c.scope.strip_params = self.strip_params.clone();
        }
        if let Some(ua) = &self.user_agent {
            c.fetch.user_agent = ua.clone();
        }
        c.fetch.request_timeout = self.request_timeout;
        c.fetch.connect_timeout = self.connect_timeout;
        c.fetch.max_body_bytes = self.max_body;
        c.fetch.resolve = self.resolve.clone();
        c.fetch.ca_certs = self.ca_certs.clone();
        // Checked by `check` first: what fails here is left out.
        c.fetch.headers = extra_headers(&self.headers).unwrap_or_default();
        c.fetch.header_hosts = self.header_hosts.clone();
        c.fetch.header_everywhere = self.header_everywhere;
        if let Ok(Some(proxy)) = proxy_url(self.proxy.as_deref()) {
            c.fetch.proxy = ProxyConfig::all(proxy);
        }
        if let Some(hosts) = &self.no_proxy {
            c.fetch.proxy.no_proxy = split_list(hosts);
        }
        c.fetch.http_version = match (self.http1_only, self.http2) {
            (true, _) => HttpVersion::Http1Only,
            (false, true) => HttpVersion::Http2,
            (false, false) => HttpVersion::Negotiate,
        };
        c.fetch.cookies.jar = !self.no_cookies;
        c.fetch.cookies.file = cookie_file(self.cookies.as_deref()).unwrap_or_default();
        c.fetch.allow_nets = self.allow_nets.clone();
        c.fetch.deny_nets = self.deny_nets.clone();
        c.fetch.allow_private = self.allow_private;
        c.engine.max_workers = self.max_workers;
        c.engine.per_host = self.per_host;
        c.engine.per_ip = self.per_ip;
        c.revisit = self.continuous.then(|| {
            let mut r = RevisitConfig::default();
            r.min = self.revisit_min.unwrap_or(r.min);
            r.max = self.revisit_max.unwrap_or(r.max);
            r.budget = self.budget;
            if let Some(SignatureArg::Text) = self.signature {
                r.signature = crawlkeeper_crawl::SignatureOf::Text;
            }
            // A page's first interval, before anything is known of it,
            // within the bounds given.
            r.first = r.first.clamp(r.min, r.max.max(r.min));
            r
        });
        c.render = self.render.then(|| {
            let mut r = crawlkeeper_crawl::render::RenderJob::default();
            if let Some(RenderWhenArg::Always) = self.render_when {
                r.when = crawlkeeper_crawl::render::RenderWhen::Always;
            }
            if let Some(w) = &self.render_wait {
                r.wait = w.trim().to_owned();
            }
            r.timeout = self.render_timeout.unwrap_or(r.timeout);
            r
        });
        c.engine.run_timeout = match self.timeout {
            Some(t) => t,
            None if self.continuous => MAX_DURATION,
            None => DEFAULT_RUN_TIMEOUT,
        };
        c.politeness.max_load = self.max_load;
        c.politeness.delay = self.delay;
        c.politeness.random_delay = self.random_delay;
        c.politeness.max_crawl_delay = self.max_crawl_delay;
        c.politeness.retries = self.retries;
        c.politeness.retry_base = self.retry_base;
        c.politeness.max_host_errors = self.max_host_errors;
        c.pipeline.processors = self.uses.clone();
        c.pipeline
            .extractors
            .extend(self.extractors.iter().cloned());
        c.pipeline.scopers.extend(self.scopers.iter().cloned());
        c.engine.seen_cache = self.seen_cache;
        c.engine.max_queued = self.max_queued;
        c.engine.max_links_per_page = self.max_links_per_page;
        c.engine.extract_timeout = self.extract_timeout;
        c.extract.fields = self.extract.clone();
        c.extract.meta = self.extract_meta;
        c.extract.jsonld = self.extract_jsonld;
        c.extract.noscript_links = self.noscript_links;
        c.extract.text = self.takes_text().then(|| {
            self.max_text
                .unwrap_or(crawlkeeper_crawl::config::DEFAULT_MAX_TEXT)
        });
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_take_binary_units() {
        assert_eq!(byte_size("65536"), Ok(65_536));
        assert_eq!(byte_size("64KiB"), Ok(65_536));
        assert_eq!(byte_size("2mib"), Ok(2 << 20));
        assert_eq!(byte_size("1 GiB"), Ok(1 << 30));
        for bad in [
            "",
            "KiB",
            "64KB",
            "-1",
            "1.5MiB",
            "0",
            "0KiB",
            "99999999999999GiB",
        ] {
            assert!(byte_size(bad).is_err(), "{bad}");
        }
    }
}
