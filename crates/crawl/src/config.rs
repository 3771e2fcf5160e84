//! Configuration of a crawl: one struct per component, documented defaults,
//! validated once before anything runs.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crawlkeeper_model::{MAX_DURATION, duration};

pub use crawlkeeper_extract::config::{DEFAULT_MAX_TEXT, ExtractConfig, STRUCTURED_FIELDS};
pub use crawlkeeper_fetch::config::{
    CookieConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_USER_AGENT, FetchConfig, HttpVersion, ResolveOverride,
};

/// Default maximum link depth from a seed.
pub const DEFAULT_MAX_DEPTH: u32 = 5;
/// Default maximum URL length in bytes.
pub const DEFAULT_MAX_URL_LENGTH: usize = 2048;
/// Default maximum number of redirect hops in one chain.
pub const DEFAULT_MAX_REDIRECTS: u32 = 10;
/// Default number of requests in flight across all authorities.
pub const DEFAULT_MAX_WORKERS: usize = 50;
/// Default number of requests in flight per authority.
pub const DEFAULT_PER_HOST: usize = 1;
/// Requests in flight per IP address, by default (`--per-ip`).
pub const DEFAULT_PER_IP: usize = 4;
/// Default run timeout: 6 hours.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(6 * 3600);
/// Time in-flight requests get to finish when the crawl stops early.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Query parameters removed during normalisation by default
/// (a trailing `*` matches any suffix).
pub const DEFAULT_STRIP_PARAMS: [&str; 3] = ["utm_*", "fbclid", "gclid"];
/// Default number of links taken from one page.
pub const DEFAULT_MAX_LINKS_PER_PAGE: usize = 10_000;
/// Default time allowed for finding the links of one page.
pub const DEFAULT_EXTRACT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default number of URL keys remembered in memory.
pub const DEFAULT_SEEN_CACHE: usize = 1_000_000;
/// Default number of URLs queued in memory.
pub const DEFAULT_MAX_QUEUED: usize = 100_000;
/// Default `max_load` (percent of time the crawler may keep a host busy).
pub const DEFAULT_MAX_LOAD: u8 = 50;
/// Longest `Crawl-delay` obeyed by default.
pub const DEFAULT_MAX_CRAWL_DELAY: Duration = Duration::from_secs(30);
/// Default number of retries of a URL after a retryable failure.
pub const DEFAULT_RETRIES: u32 = 3;
/// Default first retry backoff (doubled each attempt, with jitter).
pub const DEFAULT_RETRY_BASE: Duration = Duration::from_secs(1);
/// Default consecutive failures after which an authority is abandoned.
pub const DEFAULT_MAX_HOST_ERRORS: u32 = 20;
/// Requisites allowed per page of `--max-pages` when `--max-requisites`
/// is not given (a page needs tens: the median page loads about 70).
pub const DEFAULT_REQUISITES_PER_PAGE: u64 = 100;
/// Default extractor chain.
pub const DEFAULT_EXTRACTORS: [&str; 1] = ["html"];
/// Default scoper chain, in order.
pub const DEFAULT_SCOPERS: [&str; 5] = ["scheme", "url-length", "host", "depth", "pattern"];

/// Everything a crawl needs to know besides its seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrawlConfig {
    /// How pages are fetched.
    pub fetch: FetchConfig,
    /// Which URLs are followed.
    pub scope: ScopeConfig,
    /// How many requests run at once, and for how long.
    pub engine: EngineConfig,
    /// How gently each authority is treated: delays, retries, giving up.
    pub politeness: PolitenessConfig,
    /// Which processors run, by name and in order.
    pub pipeline: PipelineConfig,
    /// What of each page is kept beyond its record.
    pub archive: ArchiveConfig,
    /// Fields taken from every HTML page by CSS selector (`--extract`),
    /// its meta tags, JSON-LD and text. Left out of the serialized
    /// configuration when empty, so jobs made before fields existed keep
    /// their options.
    #[serde(skip_serializing_if = "ExtractConfig::is_empty")]
    pub extract: ExtractConfig,
    /// A continuous crawl (`--continuous`): every URL is fetched again
    /// when due, and the job never completes. Left out when `None` (a
    /// one-shot crawl).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revisit: Option<RevisitConfig>,
    /// Pages rendered in a browser (`--render`). Left out when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<crate::render::RenderJob>,
}

/// Default shortest revisit interval (`--revisit-min`): 10 minutes.
pub const DEFAULT_REVISIT_MIN: Duration = Duration::from_secs(600);
/// Default longest revisit interval (`--revisit-max`): 14 days.
pub const DEFAULT_REVISIT_MAX: Duration = Duration::from_secs(14 * 86_400);
/// Default interval after a page's first fetch: 1 day (within the
/// bounds).
pub const DEFAULT_REVISIT_FIRST: Duration = Duration::from_secs(86_400);

/// How a continuous crawl revisits its pages (see
/// [`crawlkeeper_model::revisit`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RevisitConfig {
    /// The shortest interval between two fetches of a page. Default 10 min.
    #[serde(with = "duration::text")]
    pub min: Duration,
    /// The longest. Default 14 days.
    #[serde(with = "duration::text")]
    pub max: Duration,
    /// The interval after a page's first fetch, before anything is known
    /// of how it changes (within `min` and `max`). Default 1 day.
    #[serde(with = "duration::text")]
    pub first: Duration,
    /// The job's request budget for revisits (`--budget`), requests a
    /// second: intervals are chosen so that it buys the most freshness
    /// (the pages' share of the time their copy is current), pages that
    /// change faster than it can follow at `max`. Without: each page is
    /// revisited about once per expected change. Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// What a page's signature is taken of, to tell a change (`--signature`).
    /// Default the body.
    #[serde(skip_serializing_if = "SignatureOf::is_body")]
    pub signature: SignatureOf,
}

/// What a continuous crawl's page signature is a hash of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignatureOf {
    /// The body as received (decoded): any byte changed is a change.
    #[default]
    Body,
    /// An HTML page's text as a reader sees it (`fields.text`, as `--text`
    /// takes it): markup, scripts, comments and attributes that change
    /// (a timestamp, a session token, an ad) are not a change. Other
    /// bodies by their bytes.
    Text,
}

impl SignatureOf {
    fn is_body(&self) -> bool {
        *self == Self::Body
    }
}

impl Default for RevisitConfig {
    fn default() -> Self {
        Self {
            min: DEFAULT_REVISIT_MIN,
            max: DEFAULT_REVISIT_MAX,
            first: DEFAULT_REVISIT_FIRST,
            budget: None,
            signature: SignatureOf::Body,
        }
    }
}

impl RevisitConfig {
    /// What is wrong with the settings, one line each.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.min < Duration::from_secs(1) {
            problems.push("revisit_min must be at least 1s".to_owned());
        }
        if self.max < self.min {
            problems.push("revisit_max must be at least revisit_min".to_owned());
        }
        for (name, d) in [
            ("revisit_min", self.min),
            ("revisit_max", self.max),
            ("revisit_first", self.first),
        ] {
            if d > MAX_DURATION {
                problems.push(format!("{name} must be at most 365d"));
            }
        }
        if let Some(b) = self.budget
            && !(b.is_finite() && b > 0.0)
        {
            problems.push("budget must be a positive number of requests".to_owned());
        }
        problems
    }

    /// The rule each page's fetch applies, at the job's marginal value of
    /// freshness `mu` when it spends a budget (before `mu` is known, and
    /// without a budget: each page revisited about once per expected
    /// change), within the bounds.
    pub fn rule(&self, mu: Option<f64>) -> crawlkeeper_model::revisit::RevisitRule {
        crawlkeeper_model::revisit::RevisitRule {
            bounds: crawlkeeper_model::revisit::Bounds {
                min_secs: self.min.as_secs_f64(),
                max_secs: self.max.as_secs_f64(),
            },
            first_secs: self.first.as_secs_f64(),
            mu: mu.filter(|_| self.budget.is_some()),
        }
    }

    /// The job's marginal value of freshness `μ` for its rate histogram
    /// (`(bucket, pages)`): the one at which the pages' intervals spend
    /// the budget. `None` without a budget or without pages.
    pub fn mu(&self, histogram: &[(i16, u64)]) -> Option<f64> {
        let budget = self.budget?;
        if histogram.is_empty() {
            return None;
        }
        let rates: Vec<(f64, f64)> = histogram
            .iter()
            .map(|&(b, n)| (crawlkeeper_model::revisit::bucket_rate(b), n as f64))
            .collect();
        Some(crawlkeeper_model::revisit::solve_mu(
            &rates,
            budget,
            self.rule(None).bounds,
        ))
    }

    /// The expected freshness of the job's pages (the share of them whose
    /// copy holds the live content, at any moment) when each is revisited
    /// at the interval its estimated rate gets, from the job's rate
    /// histogram. `None` before any page's rate is estimated.
    pub fn expected_freshness(&self, histogram: &[(i16, u64)]) -> Option<f64> {
        self.rule(self.mu(histogram)).expected_freshness(histogram)
    }
}

/// What of each page is kept beyond its record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArchiveConfig {
    /// Keep each page's WARC records (request, response with headers and
    /// body as received, metadata) in the state store beside its record,
    /// for `results --format warc` (`--store-bodies`). Needs
    /// [`FetchConfig::capture`]. Default false.
    pub store_bodies: bool,
    /// The gzip level (0–9) of the records kept. Default 1.
    pub gzip_level: u32,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        Self {
            store_bodies: false,
            gzip_level: 1,
        }
    }
}

/// Which hosts a link may lead to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostScope {
    /// Only the seeds' hosts (and `allow_hosts`).
    #[default]
    SameHost,
    /// Any host under the seeds' registrable domains (and `allow_hosts`).
    SameDomain,
    /// Any host.
    Any,
}

/// Which URLs are followed and fetched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScopeConfig {
    /// Follow links found on pages; without it only seeds (and their
    /// redirects) are fetched.
    pub follow: bool,
    /// Maximum number of links from a seed. Default 5.
    pub max_depth: u32,
    /// Which hosts links may lead to. Default same-host.
    pub hosts: HostScope,
    /// Read each authority's sitemaps (robots.txt `Sitemap:` lines and
    /// `/sitemap.xml`) after its robots.txt; their URLs enter at depth 1.
    /// Default false (left out of the job's identity when false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sitemaps: bool,
    /// Extra hosts that are always in scope.
    pub allow_hosts: Vec<String>,
    /// If any are given, a URL must match at least one of these regexes.
    pub include: Vec<String>,
    /// A URL matching any of these regexes is out of scope.
    pub exclude: Vec<String>,
    /// Longer URLs are out of scope. Default 2,048 bytes.
    pub max_url_length: usize,
    /// Maximum number of pages requested in the crawl (seeds included;
    /// page requisites are not counted).
    pub max_pages: Option<u64>,
    /// Query parameters removed by normalisation; a trailing `*` is a prefix match.
    pub strip_params: Vec<String>,
    /// Fetch robots.txt and obey it. Default true.
    pub respect_robots: bool,
    /// `--requisites`: fetch what each fetched HTML page needs to render
    /// (images, scripts, stylesheets, fonts, frames), whatever its depth,
    /// on the hosts this allows. Default none (left out of the job's
    /// identity when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requisites: Option<RequisitesScope>,
    /// `--max-requisites`: the most requisites (frames aside, which count
    /// as pages) the whole crawl requests. Default none, or
    /// [`DEFAULT_REQUISITES_PER_PAGE`] per page when `max_pages` is set
    /// ([`ScopeConfig::requisite_limit`]). Left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_requisites: Option<u64>,
}

impl ScopeConfig {
    /// The most requisites the crawl requests: `max_requisites`, else
    /// [`DEFAULT_REQUISITES_PER_PAGE`] times `max_pages` when that is set.
    pub fn requisite_limit(&self) -> Option<u64> {
        self.max_requisites.or_else(|| {
            self.max_pages
                .map(|p| p.saturating_mul(DEFAULT_REQUISITES_PER_PAGE))
        })
    }
}

/// Which hosts a page's requisites may be fetched from (`--requisites-scope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequisitesScope {
    /// Any host the SSRF guard lets the crawler reach (a CDN is where a
    /// page's pictures and scripts often live). The default.
    #[default]
    Any,
    /// Only the page's own host.
    SameHost,
}

/// How much runs at once and for how long.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Requests in flight across all authorities. Default 50.
    pub max_workers: usize,
    /// Requests in flight per authority. Default 1. It bounds the host
    /// across every crawl of the process (and of a cluster): a request
    /// goes only while fewer than this are in flight there, whichever
    /// crawl sent them.
    pub per_host: usize,
    /// Requests in flight per IP address, across the hosts that resolve
    /// to it and every crawl of the process (and of a cluster). Default
    /// ([`EngineConfig::ip_limit`]): 4, or `per_host` when that is more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_ip: Option<usize>,
    /// The crawl stops (exit 124 from the CLI) after this long. Default 6 h.
    #[serde(with = "duration::text")]
    pub run_timeout: Duration,
    /// Time in-flight requests get to finish on an early stop. Default 5 s.
    #[serde(with = "duration::text")]
    pub shutdown_grace: Duration,
    /// Maximum redirect hops in one chain. Default 10.
    pub max_redirects: u32,
    /// Most URL keys remembered in memory to skip store lookups (16 bytes
    /// each, plus table overhead). Past it, the store answers. Default 1,000,000.
    pub seen_cache: usize,
    /// Most URLs queued in memory; more wait in the store. Default 100,000.
    pub max_queued: usize,
    /// Links taken from one page; the record counts the rest in
    /// `links_dropped`. Default 10,000.
    pub max_links_per_page: usize,
    /// CPU time allowed for finding the links of one page; past it the
    /// page is recorded with the links found so far (`extract_limit`).
    /// Default 5 s.
    #[serde(with = "duration::text")]
    pub extract_timeout: Duration,
}

/// Politeness per authority, after ScraperUtils: delays computed from
/// response times, robots.txt `Crawl-delay`, retries with backoff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolitenessConfig {
    /// Percent of the time (1 to 100) requests may keep an authority busy;
    /// the adaptive delay is `response_time × (100 − L) / L`. 100 means no
    /// adaptive delay. Default 50.
    pub max_load: u8,
    /// The least delay between requests to one authority. Default 0.
    #[serde(with = "duration::text")]
    pub delay: Duration,
    /// Mean of a random extra delay (uniform from 0 to twice this). Default 0.
    #[serde(with = "duration::text")]
    pub random_delay: Duration,
    /// The longest robots.txt `Crawl-delay` obeyed. Default 30 s.
    #[serde(with = "duration::text")]
    pub max_crawl_delay: Duration,
    /// Retries of a URL after a timeout, connection error, 429 or 5xx. Default 3.
    pub retries: u32,
    /// Backoff before the first retry; doubled each time, jittered. Default 1 s.
    #[serde(with = "duration::text")]
    pub retry_base: Duration,
    /// Consecutive failures after which an authority is abandoned and its
    /// remaining URLs recorded as skipped. Default 20.
    pub max_host_errors: u32,
}

/// The processors of the pipeline, by registered name, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineConfig {
    /// Extractors run on every fetched page. Default `["html"]`.
    pub extractors: Vec<String>,
    /// Scopers every discovered link must pass. Default
    /// `["scheme", "url-length", "host", "depth", "pattern"]`.
    pub scopers: Vec<String>,
    /// Processors run, in order, on every fetched 2xx page after the
    /// extractors (`--use NAME`): names only, each node or `crawl` says
    /// what a name runs. Default none; left out of the serialized
    /// configuration when empty, so jobs made before processors existed
    /// keep their options.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processors: Vec<String>,
}

impl CrawlConfig {
    /// What the job needs of a process to be crawled there: its
    /// processors by name, and [`BROWSER`](crate::render::BROWSER) when
    /// it renders.
    pub fn needs(&self) -> Vec<String> {
        let mut needs = self.pipeline.processors.clone();
        if self.render.is_some() {
            needs.push(crate::render::BROWSER.to_owned());
        }
        needs
    }
}

impl Default for ScopeConfig {
    fn default() -> Self {
        Self {
            follow: false,
            max_depth: DEFAULT_MAX_DEPTH,
            hosts: HostScope::default(),
            sitemaps: false,
            allow_hosts: Vec::new(),
            include: Vec::new(),
            exclude: Vec::new(),
            max_url_length: DEFAULT_MAX_URL_LENGTH,
            max_pages: None,
            max_requisites: None,
            strip_params: DEFAULT_STRIP_PARAMS.map(str::to_owned).to_vec(),
            respect_robots: true,
            requisites: None,
        }
    }
}

impl EngineConfig {
    /// Requests in flight per IP address: `per_ip`, or by default
    /// [`DEFAULT_PER_IP`] or `per_host` when that is more (a crawl that
    /// asks for more on one host asks for it on that host's address).
    pub fn ip_limit(&self) -> usize {
        self.per_ip.unwrap_or(DEFAULT_PER_IP.max(self.per_host))
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            max_workers: DEFAULT_MAX_WORKERS,
            per_host: DEFAULT_PER_HOST,
            per_ip: None,
            run_timeout: DEFAULT_RUN_TIMEOUT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            seen_cache: DEFAULT_SEEN_CACHE,
            max_queued: DEFAULT_MAX_QUEUED,
            max_links_per_page: DEFAULT_MAX_LINKS_PER_PAGE,
            extract_timeout: DEFAULT_EXTRACT_TIMEOUT,
        }
    }
}

impl Default for PolitenessConfig {
    fn default() -> Self {
        Self {
            max_load: DEFAULT_MAX_LOAD,
            delay: Duration::ZERO,
            random_delay: Duration::ZERO,
            max_crawl_delay: DEFAULT_MAX_CRAWL_DELAY,
            retries: DEFAULT_RETRIES,
            retry_base: DEFAULT_RETRY_BASE,
            max_host_errors: DEFAULT_MAX_HOST_ERRORS,
        }
    }
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            extractors: DEFAULT_EXTRACTORS.map(str::to_owned).to_vec(),
            scopers: DEFAULT_SCOPERS.map(str::to_owned).to_vec(),
            processors: Vec::new(),
        }
    }
}

/// Every problem found in a configuration, reported at once.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid configuration: {}", .problems.join("; "))]
pub struct ConfigError {
    /// One sentence per problem.
    pub problems: Vec<String>,
}

impl CrawlConfig {
    /// Every duration of the configuration, by name.
    fn durations(&self) -> [(&'static str, Duration); 9] {
        [
            ("extract_timeout", self.engine.extract_timeout),
            ("connect_timeout", self.fetch.connect_timeout),
            ("request_timeout", self.fetch.request_timeout),
            ("run_timeout", self.engine.run_timeout),
            ("shutdown_grace", self.engine.shutdown_grace),
            ("delay", self.politeness.delay),
            ("random_delay", self.politeness.random_delay),
            ("max_crawl_delay", self.politeness.max_crawl_delay),
            ("retry_base", self.politeness.retry_base),
        ]
    }

    /// Checks the numbers and names that do not need the registry; the
    /// registry reports unknown processors and bad regexes when it builds
    /// the pipeline.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if self.engine.max_workers == 0 {
            problems.push("max_workers must be at least 1".to_owned());
        }
        if self.scope.sitemaps && !self.scope.respect_robots {
            problems.push(
                "sitemaps are read with each host's robots.txt: --sitemaps cannot go with \
                 --ignore-robots yet"
                    .to_owned(),
            );
        }
        let mut used = std::collections::BTreeSet::new();
        for name in &self.pipeline.processors {
            if !crate::name::valid_name(name) {
                problems.push(format!(
                    "processor name '{name}': letters, digits, '_', '-' and '.' only"
                ));
            } else if !used.insert(name) {
                problems.push(format!("processor '{name}' is used twice"));
            }
        }
        if self.engine.max_queued == 0 {
            problems.push("max_queued must be at least 1".to_owned());
        }
        if self.engine.per_host == 0 {
            problems.push("per_host must be at least 1".to_owned());
        }
        if self.engine.per_ip == Some(0) {
            problems.push("per_ip must be at least 1".to_owned());
        }
        problems.extend(self.fetch.problems());
        if self.engine.extract_timeout.is_zero() {
            problems.push("extract_timeout must be longer than zero".to_owned());
        }
        if self.engine.run_timeout.is_zero() {
            problems.push("run_timeout must be longer than zero".to_owned());
        }
        if self.scope.max_url_length < 10 {
            problems.push("max_url_length must be at least 10".to_owned());
        }
        if self.scope.max_pages == Some(0) {
            problems.push("max_pages must be at least 1".to_owned());
        }
        if self.scope.max_requisites.is_some() && self.scope.requisites.is_none() {
            problems.push("max_requisites bounds --requisites, which is off".to_owned());
        }
        if !(1..=100).contains(&self.politeness.max_load) {
            problems.push(format!(
                "max_load must be from 1 to 100, not {}",
                self.politeness.max_load
            ));
        }
        if self.politeness.max_host_errors == 0 {
            problems.push("max_host_errors must be at least 1".to_owned());
        }
        problems.extend(self.extract.problems());
        if let Some(r) = &self.revisit {
            problems.extend(r.problems());
            if r.signature == SignatureOf::Text && self.extract.text.is_none() {
                problems.push("signature text hashes the page's text: take it (text)".to_owned());
            }
        }
        for (name, d) in self.durations() {
            if d > MAX_DURATION {
                problems.push(format!("{name} must be at most 365d"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems })
        }
    }
}

#[cfg(test)]
mod tests;
