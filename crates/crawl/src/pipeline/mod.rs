//! One request through the whole pipeline (Spyder's worker): robots check
//! → fetcher → extractor chain → scoper chain. Pure of scheduling state:
//! the engine decides what to fetch and when; this decides what a response
//! means.

use std::sync::Arc;

use crawlkeeper_model::key::KeySet;
use crawlkeeper_model::revisit::Observed;
use crawlkeeper_model::{Authority, CrawlRecord, ErrorKind, Known, RecordError};
use url::Url;

use crate::normalize::Normalizer;
use crate::politeness::parse_retry_after;
use crate::process::{Addition, Processor, ProcessorPage};
use crate::robots::RobotsRules;
use crate::scope::{Candidate, ScopeChain, Verdict};
use crawlkeeper_extract::{CutShort, Extracted, Extractor, Page, PageLimits};
use crawlkeeper_fetch::{FetchResponse, Fetcher};
use signature::{observed, same_copy, text_signature};

mod signature;

/// A URL the engine has decided to request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The normalised URL.
    pub url: Url,
    /// Its depth from the seeds.
    pub depth: u32,
    /// The page that linked or redirected here (`None` for seeds).
    pub parent: Option<Arc<str>>,
    /// The URLs that redirected, hop by hop, to this one (empty unless this
    /// URL is a redirect target).
    pub redirect_chain: Vec<Arc<str>>,
    /// Requests already made for this URL (retries).
    pub attempts: u32,
    /// What is known of it before the request (a sitemap's `lastmod`, an
    /// earlier copy's validators, which make the request conditional).
    pub known: Option<Arc<Known>>,
}

impl Request {
    /// How many sitemap indexes below the top one this sitemap file is;
    /// `None` for a page.
    pub fn sitemap_level(&self) -> Option<u8> {
        self.known.as_deref().and_then(|k| k.sitemap)
    }

    /// How many embeds from the page that needed it this requisite is
    /// (`--requisites`); `None` for a page.
    pub fn embed_hops(&self) -> Option<u8> {
        self.known.as_deref().and_then(|k| k.embed)
    }

    /// True for a page requisite (an image, script, stylesheet, font or
    /// frame a page needs).
    pub fn is_requisite(&self) -> bool {
        self.embed_hops().is_some()
    }

    /// True for a page and a frame, which `--max-pages` counts; false for
    /// the other requisites.
    pub fn counts_as_page(&self) -> bool {
        !self
            .known
            .as_deref()
            .is_some_and(Known::is_uncounted_requisite)
    }

    /// A seed request at depth 0.
    pub fn seed(url: Url) -> Self {
        Self {
            url,
            depth: 0,
            parent: None,
            redirect_chain: Vec::new(),
            attempts: 0,
            known: None,
        }
    }
}

/// A URL found while processing a request, in scope but not yet deduplicated.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The dedup key of the normalised URL.
    pub key: u128,
    /// The request that would fetch it.
    pub request: Request,
}

/// The outcome of one request: its record and the URLs it leads to.
#[derive(Debug, Clone)]
pub struct Processed {
    /// The record to write.
    pub record: CrawlRecord,
    /// In-scope URLs to offer the frontier (links when following, and
    /// redirect targets).
    pub discovered: Vec<Discovered>,
    /// Set when the failure is worth a retry (timeouts, connection errors,
    /// 429, 5xx), with the server's `Retry-After` if it sent one.
    pub retry: Option<RetryHint>,
    /// The page's WARC records, encoded, when the crawl archives.
    pub archive: Vec<u8>,
    /// What the response tells a continuous crawl of the page's content
    /// (`Failed`, telling nothing, outside continuous crawls).
    pub observed: Observed,
}

/// A failure that may succeed later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryHint {
    /// The wait the server asked for, capped.
    pub after: Option<std::time::Duration>,
}

/// The dedup key of a normalised URL: a 128-bit hash whose high bits are
/// its host's ([`crawlkeeper_model::key::key_of_url`]), so the seen set
/// costs 16 bytes a URL, a collision is practically impossible, and a
/// host's URLs sit together in a store's index.
pub fn url_key(url: &Url) -> u128 {
    crawlkeeper_model::key::key_of_url(url)
}

/// The built pipeline of a crawl.
pub struct Pipeline {
    pub(crate) fetcher: Arc<dyn Fetcher>,
    pub(crate) extractors: Vec<Box<dyn Extractor>>,
    /// Run in order on every 2xx page after the extractors.
    pub(crate) processors: Vec<Arc<dyn Processor>>,
    pub(crate) scope: ScopeChain,
    pub(crate) normalizer: Normalizer,
    pub(crate) follow: bool,
    pub(crate) max_redirects: u32,
    pub(crate) max_links_per_page: usize,
    pub(crate) extract_timeout: std::time::Duration,
    /// Fields were asked for: every 2xx HTML page's record has `fields`.
    pub(crate) wants_fields: bool,
    /// Makes the WARC records of each page, when the crawl archives.
    pub(crate) archiver: Option<Arc<crate::archive::Archiver>>,
    /// Read each authority's sitemaps after its robots.txt.
    pub(crate) sitemaps: bool,
    /// Fetch each page's requisites, from these hosts (`--requisites`).
    pub(crate) requisites: Option<crate::config::RequisitesScope>,
    /// Longer URLs are not requested.
    pub(crate) max_url_length: usize,
    /// A continuous crawl: each 2xx body's signature is taken, to tell
    /// whether the page changed.
    pub(crate) signatures: bool,
    /// …of an HTML page's text (`fields.text`) rather than its body
    /// (`--signature text`).
    pub(crate) text_signatures: bool,
    /// Render pages in a browser (`--render`).
    pub(crate) render: Option<crate::render::Render>,
}

impl Pipeline {
    /// Sends every request through `wrap(fetcher)` from now on.
    pub(crate) fn wrap_fetcher(&mut self, wrap: impl FnOnce(Arc<dyn Fetcher>) -> Arc<dyn Fetcher>) {
        self.fetcher = wrap(self.fetcher.clone());
    }

    /// The archiver, when the crawl writes WARC records.
    pub fn archiver(&self) -> Option<&crate::archive::Archiver> {
        self.archiver.as_deref()
    }

    /// Whether each authority's sitemaps are read.
    pub fn reads_sitemaps(&self) -> bool {
        self.sitemaps
    }

    /// The sitemap files `authority` names (robots.txt's `Sitemap:` lines
    /// and `/sitemap.xml`), as requests at depth 1 that went through
    /// scope like links, each with the robots.txt that named it as parent;
    /// with the count of names skipped (too long, not http(s), too many).
    pub fn sitemap_jobs(
        &self,
        authority: &Authority,
        robots: &RobotsRules,
    ) -> (Vec<Discovered>, usize) {
        let (files, skipped) = crate::sitemap::named_by(authority, robots);
        let parent: Arc<str> = Arc::from(authority.robots_url().as_str());
        let known = Arc::new(Known::sitemap(0));
        let mut seen = KeySet::default();
        let requests = files
            .into_iter()
            .filter_map(|file| {
                let url = self.normalizer.resolve(&file, file.as_str()).ok()?;
                self.listed_job(url, &parent, Some(known.clone()), &mut seen)
            })
            .collect();
        (requests, skipped)
    }

    /// The request of a URL a sitemap names (a listed page, or another
    /// sitemap file when `known` says so) at depth 1, if it is in scope
    /// and not in `seen` yet.
    fn listed_job(
        &self,
        url: Url,
        parent: &Arc<str>,
        known: Option<Arc<Known>>,
        seen: &mut KeySet,
    ) -> Option<Discovered> {
        if self.scope.check(&Candidate {
            url: &url,
            depth: 1,
        }) != Verdict::Accept
        {
            return None;
        }
        let key = url_key(&url);
        seen.insert(key).then(|| Discovered {
            key,
            request: Request {
                url,
                depth: 1,
                parent: Some(parent.clone()),
                redirect_chain: Vec::new(),
                attempts: 0,
                known,
            },
        })
    }

    /// Reads the sitemap file `request` fetched (off the async threads: up to
    /// 50 MB of XML) into `processed`: the pages it lists at depth 1 and,
    /// from an index less than [`sitemap::MAX_LEVEL`] deep, at most
    /// [`sitemap::MAX_FILES`] further sitemap files, each through scope.
    /// The record counts what was taken (`links`) and left
    /// (`links_dropped`). Every listed URL shares one copy of the file's
    /// URL as its parent: nothing per URL grows with what the server chose
    /// beyond the URL itself.
    ///
    /// [`sitemap::MAX_LEVEL`]: crate::sitemap::MAX_LEVEL
    /// [`sitemap::MAX_FILES`]: crate::sitemap::MAX_FILES
    async fn read_sitemap(
        &self,
        request: &Request,
        level: u8,
        body: bytes::Bytes,
        processed: &mut Processed,
    ) {
        use crate::sitemap::{MAX_FILES, MAX_LEVEL, Sitemap, SitemapError, parse};
        let (map, error) = tokio::task::spawn_blocking(move || parse(&body))
            .await
            .unwrap_or_else(|e| {
                (
                    Sitemap::default(),
                    Some(SitemapError::Xml(format!("reader stopped: {e}"))),
                )
            });
        let record = &mut processed.record;
        if let Some(e) = error
            && record.error.is_none()
        {
            record.error = Some(RecordError::new(
                ErrorKind::Sitemap,
                format!("{e}; the URLs read before are kept"),
            ));
        }
        let parent: Arc<str> = Arc::from(request.url.as_str());
        let mut seen = KeySet::with_capacity_and_hasher(map.urls.len(), Default::default());
        let mut dropped = map.dropped;
        let found = &mut processed.discovered;
        for (loc, lastmod) in map.urls {
            let Ok(url) = self.normalizer.resolve(&request.url, &loc) else {
                dropped += 1;
                continue;
            };
            let lastmod = lastmod.and_then(|l| crawlkeeper_model::known::validator(l.as_bytes()));
            let known = Known::lastmod(lastmod).map(Arc::new);
            found.extend(self.listed_job(url, &parent, known, &mut seen));
        }
        let listed = found.len();
        let nested = Arc::new(Known::sitemap(level.saturating_add(1)));
        let mut files = 0;
        for loc in map.sitemaps {
            if level >= MAX_LEVEL || files >= MAX_FILES {
                dropped += 1;
                continue;
            }
            let Ok(url) = self.normalizer.resolve(&request.url, &loc) else {
                dropped += 1;
                continue;
            };
            if let Some(d) = self.listed_job(url, &parent, Some(nested.clone()), &mut seen) {
                files += 1;
                found.push(d);
            }
        }
        record.links = u32::try_from(listed + files).unwrap_or(u32::MAX);
        record.links_dropped = u32::try_from(dropped).unwrap_or(u32::MAX);
    }

    /// The fetcher, for robots.txt requests.
    pub fn fetcher(&self) -> &dyn Fetcher {
        self.fetcher.as_ref()
    }

    /// The normaliser every URL of the crawl goes through.
    pub fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    /// Runs `request` through robots, fetch, extract and scope.
    pub async fn process(&self, request: &Request, robots: &RobotsRules) -> Processed {
        let mut record = blank_record(request);
        if let Err(denied) = robots.check(&request.url) {
            record.error = Some(denied);
            return Processed {
                record,
                discovered: Vec::new(),
                retry: None,
                archive: Vec::new(),
                observed: Observed::Failed,
            };
        }
        match self
            .fetcher
            .fetch_known(&request.url, request.known.as_deref())
            .await
        {
            Err(e) => {
                record.fetched_at = rfc3339(e.started_at);
                record.response_ms = Some(millis(e.elapsed));
                record.error = Some(e.to_record_error());
                // A refused certificate is the server's setting: asking
                // again soon gets the same one.
                let retry = !matches!(
                    e.kind,
                    ErrorKind::InvalidUrl | ErrorKind::BlockedAddress | ErrorKind::Certificate
                );
                let retry = retry.then_some(RetryHint { after: None });
                Processed {
                    record,
                    discovered: Vec::new(),
                    retry,
                    archive: Vec::new(),
                    observed: Observed::Failed,
                }
            }
            Ok(response) => {
                let (mut processed, mut nofollow) = self.interpret(request, record, &response);
                let rendered = self
                    .render_step(request, robots, &response, &mut processed, &mut nofollow)
                    .await;
                if let Some(level) = request.sitemap_level()
                    && (200..300).contains(&response.status)
                {
                    self.read_sitemap(request, level, response.body.clone(), &mut processed)
                        .await;
                } else if (200..300).contains(&response.status)
                    && (!request.is_requisite() || response.is_html())
                {
                    // An image or a script is not a page to process; a
                    // rendered page is processed as rendered.
                    let seen = rendered.dom.as_ref().unwrap_or(&response);
                    self.run_processors(request, seen, nofollow, &mut processed)
                        .await;
                }
                if self.text_signatures {
                    text_signature(&mut processed);
                }
                // Made even for a response that may be retried: the last
                // attempt's is the one kept (the others are dropped with it).
                if let Some(archiver) = &self.archiver {
                    let outlinks = processed
                        .discovered
                        .iter()
                        .map(|d| d.request.url.to_string())
                        .collect();
                    // An equal text is no equal payload: archived whole.
                    let same = (!self.text_signatures)
                        .then(|| same_copy(request, &processed.observed, &response))
                        .flatten();
                    processed.archive = archiver.page(&processed.record, &response, outlinks, same);
                    processed.archive.extend(rendered.archived);
                }
                processed
            }
        }
    }

    /// Runs the processors in order on a 2xx page: each sees the record
    /// as the ones before left it. A processor that fails the page leaves
    /// it as it was, with the error kind `processor` (unless the page had
    /// an error already); the others still run. On a page marked
    /// `nofollow` (meta robots), the links processors add are not followed
    /// either, as the page's own are not.
    async fn run_processors(
        &self,
        request: &Request,
        response: &FetchResponse,
        nofollow: bool,
        processed: &mut Processed,
    ) {
        for processor in &self.processors {
            let outcome = processor
                .process(&ProcessorPage {
                    url: &request.url,
                    response,
                    record: &processed.record,
                })
                .await;
            match outcome {
                Ok(addition) => self.add(request, addition, nofollow, processed),
                Err(e) => {
                    tracing::debug!(url = %request.url, error = %e, "processor failed a page");
                    if processed.record.error.is_none() {
                        processed.record.error =
                            Some(RecordError::new(ErrorKind::Processor, e.to_string()));
                    }
                }
            }
        }
    }

    /// Adds what a processor answered to the page's record and links (not
    /// its links when the page is `nofollow`).
    fn add(
        &self,
        request: &Request,
        addition: Addition,
        nofollow: bool,
        processed: &mut Processed,
    ) {
        let Addition {
            fields,
            links,
            drop_links,
        } = addition;
        if !fields.is_empty() {
            processed
                .record
                .fields
                .get_or_insert_with(Default::default)
                .extend(fields);
        }
        if drop_links {
            processed.discovered.clear();
        }
        if links.is_empty() || nofollow {
            return;
        }
        let depth = request.depth + 1;
        let parent: Arc<str> = Arc::from(request.url.as_str());
        let mut on_page: KeySet = processed.discovered.iter().map(|d| d.key).collect();
        let mut added = 0u32;
        for href in &links {
            let Some((key, url)) = self.new_link(&request.url, href, depth, &mut on_page) else {
                continue;
            };
            if on_page.len() > self.max_links_per_page {
                processed.record.links_dropped = processed.record.links_dropped.saturating_add(1);
                continue;
            }
            added += 1;
            if self.follow {
                processed.discovered.push(link(key, url, depth, &parent));
            }
        }
        processed.record.links = processed.record.links.saturating_add(added);
    }

    /// Link `href`, resolved against `base`, with its dedup key, if it
    /// parses, is in scope at `depth` and is not in `on_page` yet (it is
    /// added there).
    fn new_link(
        &self,
        base: &Url,
        href: &str,
        depth: u32,
        on_page: &mut KeySet,
    ) -> Option<(u128, Url)> {
        let url = self.normalizer.resolve(base, href).ok()?;
        if self.scope.check(&Candidate { url: &url, depth }) != Verdict::Accept {
            return None;
        }
        let key = url_key(&url);
        on_page.insert(key).then_some((key, url))
    }

    /// The record and discoveries of response `r`, and whether the page
    /// asked robots not to follow its links.
    pub(crate) fn interpret(
        &self,
        request: &Request,
        mut record: CrawlRecord,
        r: &FetchResponse,
    ) -> (Processed, bool) {
        record.fetched_at = rfc3339(r.started_at);
        record.response_ms = Some(millis(r.elapsed));
        record.status = Some(r.status);
        record.content_type = r.content_type().map(str::to_owned);
        record.bytes = r.body.len() as u64;
        record.truncated = r.truncated;
        if r.truncated {
            record.error = Some(RecordError::new(
                ErrorKind::TooLarge,
                format!("body cut at the maximum of {} bytes", r.body.len()),
            ));
        }
        record.etag = header_validator(r, http::header::ETAG);
        record.last_modified = header_validator(r, http::header::LAST_MODIFIED);
        let mut discovered = Vec::new();
        let mut retry = None;
        let mut nofollow = false;
        match r.status {
            304 if let Some(known) = request.known.as_deref().filter(|k| k.validates()) => {
                // The earlier copy is current: its validators stay unless
                // the server sent new ones.
                record.etag = record.etag.or_else(|| known.etag.clone());
                record.last_modified = record.last_modified.or_else(|| known.last_modified.clone());
                record.unchanged_since = known.captured_at.clone();
            }
            304 => {
                // Nothing was asked conditionally: the answer confirms no
                // copy, and its validators describe a body never seen.
                record.etag = None;
                record.last_modified = None;
                record.error = Some(RecordError::new(
                    ErrorKind::UnsolicitedNotModified,
                    "304 Not Modified to a request that was not conditional",
                ));
            }
            300..=399 => self.redirect(request, r, &mut record, &mut discovered),
            // A sitemap file is read by `read_sitemap`, not as a page.
            200..=299 if request.sitemap_level().is_some() => {}
            200..=299 => nofollow = self.links(request, r, &mut record, &mut discovered),
            429 | 500..=599 => {
                let after = r
                    .headers
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| parse_retry_after(v, std::time::SystemTime::now()));
                retry = Some(RetryHint { after });
            }
            _ => {}
        }
        let observed = if self.signatures {
            observed(request, r)
        } else {
            Observed::Failed
        };
        let processed = Processed {
            record,
            discovered,
            retry,
            archive: Vec::new(),
            observed,
        };
        (processed, nofollow)
    }

    fn redirect(
        &self,
        request: &Request,
        r: &FetchResponse,
        record: &mut CrawlRecord,
        discovered: &mut Vec<Discovered>,
    ) {
        // 304 and friends carry no Location and are not redirects to follow.
        let Some(location) = r.location() else {
            if matches!(r.status, 301 | 302 | 303 | 307 | 308) {
                record.error = Some(RecordError::new(
                    ErrorKind::BadRedirect,
                    format!("status {} without a Location header", r.status),
                ));
            }
            return;
        };
        let target = match self.normalizer.resolve(&request.url, location) {
            Ok(t) => t,
            Err(e) => {
                record.error = Some(RecordError::new(
                    ErrorKind::BadRedirect,
                    format!("unusable Location {location:?}: {e}"),
                ));
                return;
            }
        };
        record.final_url = target.to_string();
        let target_str = target.as_str();
        if target_str == request.url.as_str()
            || request.redirect_chain.iter().any(|u| &**u == target_str)
        {
            record.error = Some(RecordError::new(
                ErrorKind::RedirectLoop,
                format!("redirect back to {target_str}, already in this chain"),
            ));
            return;
        }
        let hops = request.redirect_chain.len() as u32 + 1;
        if hops > self.max_redirects {
            record.error = Some(RecordError::new(
                ErrorKind::TooManyRedirects,
                format!("more than {} redirects in a chain", self.max_redirects),
            ));
            return;
        }
        let candidate = Candidate {
            url: &target,
            depth: request.depth,
        };
        if self.scope.check(&candidate) != Verdict::Accept {
            return;
        }
        let here: Arc<str> = Arc::from(request.url.as_str());
        let mut chain = request.redirect_chain.clone();
        chain.push(here.clone());
        discovered.push(Discovered {
            key: url_key(&target),
            request: Request {
                url: target,
                depth: request.depth,
                parent: Some(here),
                redirect_chain: chain,
                attempts: 0,
                // A sitemap file that moved is still a sitemap file, a
                // requisite still a requisite.
                known: match (request.sitemap_level(), request.known.as_deref()) {
                    (Some(level), _) => Some(Arc::new(Known::sitemap(level))),
                    (None, Some(k)) if k.embed.is_some() => Some(Arc::new(Known {
                        embed: k.embed,
                        frame: k.frame,
                        embed_budget: k.embed_budget,
                        ..Known::default()
                    })),
                    _ => None,
                },
            },
        });
    }

    /// Reads the links (and fields, title, requisites) of 2xx page `r`;
    /// true when the page is marked `nofollow`.
    fn links(
        &self,
        request: &Request,
        r: &FetchResponse,
        record: &mut CrawlRecord,
        discovered: &mut Vec<Discovered>,
    ) -> bool {
        let page = Page {
            url: &request.url,
            response: r,
            limits: PageLimits {
                max_links: self.max_links_per_page,
                deadline: std::time::Instant::now() + self.extract_timeout,
            },
        };
        let mut found = Extracted::default();
        if Self::is_stylesheet(request, r) {
            crawlkeeper_extract::stylesheet_requisites(&r.body, &page.limits, &mut found);
        } else {
            for extractor in &self.extractors {
                if page.limits.expired() {
                    found.cut_short = Some(CutShort::Time);
                    break;
                }
                extractor.extract(&page, &mut found);
            }
        }
        record.title = found.title.take();
        record.links_dropped = found.dropped_links;
        if (self.wants_fields && r.is_html()) || !found.fields.is_empty() {
            let fields = std::mem::take(&mut found.fields);
            record.fields = Some(fields.into_iter().map(|(k, v)| (k, v.into())).collect());
        }
        if !found.fields_cut.is_empty() {
            record.fields_cut = Some(std::mem::take(&mut found.fields_cut).into_iter().collect());
        }
        if let Some(cut) = found.cut_short
            && record.error.is_none()
        {
            let why = match cut {
                CutShort::Time => format!(
                    "link extraction stopped after {}",
                    crawlkeeper_model::format_duration(self.extract_timeout)
                ),
                CutShort::Memory => "link extraction stopped at the parser's memory limit".into(),
            };
            record.error = Some(RecordError::new(
                ErrorKind::ExtractLimit,
                format!("{why}; the links found before are kept"),
            ));
        }
        if found.hrefs.is_empty() && found.requisites.is_empty() && found.dropped_requisites == 0 {
            return found.nofollow;
        }
        let base = found.base_url(&request.url);
        let mut on_page = KeySet::with_capacity_and_hasher(found.hrefs.len(), Default::default());
        // Requisites first: a URL that is both is fetched as a requisite
        // (whatever the depth), not as a link.
        self.take_requisites(request, &base, &mut found, record, discovered, &mut on_page);
        let requisites = on_page.len();
        let depth = request.depth + 1;
        let parent: Arc<str> = Arc::from(request.url.as_str());
        for href in &found.hrefs {
            let Some((key, url)) = self.new_link(&base, href, depth, &mut on_page) else {
                continue;
            };
            if self.follow {
                discovered.push(link(key, url, depth, &parent));
            }
        }
        record.links = u32::try_from(on_page.len() - requisites).unwrap_or(u32::MAX);
        found.nofollow
    }
}

/// A link found on the page of `parent` (at `depth`) as a request.
fn link(key: u128, url: Url, depth: u32, parent: &Arc<str>) -> Discovered {
    Discovered {
        key,
        request: Request {
            url,
            depth,
            parent: Some(parent.clone()),
            redirect_chain: Vec::new(),
            attempts: 0,
            known: None,
        },
    }
}

/// A validator header of a response, if it is one worth keeping.
fn header_validator(r: &FetchResponse, name: http::header::HeaderName) -> Option<String> {
    let value = r.headers.get(name)?;
    crawlkeeper_model::known::validator(value.as_bytes())
}

/// The record of `request` before anything is known of its response.
pub(crate) fn blank_record(request: &Request) -> CrawlRecord {
    // Jobs only hold http(s) URLs with a host, which always have an authority.
    let authority = Authority::of(&request.url).expect("job URLs have an authority");
    CrawlRecord {
        parent: request.parent.as_deref().map(str::to_owned),
        fetched_at: rfc3339(std::time::SystemTime::now()),
        lastmod: request.known.as_deref().and_then(|k| k.lastmod.clone()),
        via: match (request.sitemap_level(), request.embed_hops()) {
            (Some(_), _) => Some(crawlkeeper_model::Via::Sitemap),
            (None, Some(_)) => Some(crawlkeeper_model::Via::Embed),
            (None, None) => None,
        },
        ..CrawlRecord::blank(request.url.as_str(), authority, request.depth)
    }
}

fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
