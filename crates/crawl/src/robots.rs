//! robots.txt (RFC 9309): fetched once per authority before its first
//! request, cached for the crawl, matched with our product token.

use std::sync::Arc;

use crawlkeeper_model::{Authority, ErrorKind, RecordError, RobotsSnapshot};
use texting_robots::Robot;
use tracing::{debug, warn};
use url::Url;

use crate::archive::Archiver;
use crawlkeeper_fetch::Fetcher;

pub use crawlkeeper_model::PRODUCT_TOKEN;
/// RFC 9309 asks crawlers to parse at least 500 KiB; we stop there.
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;
/// Redirect hops followed when fetching robots.txt (RFC 9309: at least five).
pub const MAX_ROBOTS_REDIRECTS: usize = 5;

/// What robots.txt says about one authority.
#[derive(Debug, Clone)]
pub enum RobotsRules {
    /// Everything is allowed (no robots.txt, a 4xx, or `--ignore-robots`).
    AllowAll,
    /// Rules from a robots.txt.
    Parsed(Arc<Robot>),
    /// robots.txt was unreachable or answered 5xx: nothing is allowed.
    Unavailable(String),
    /// The authority's address is refused by the SSRF guard: nothing of it
    /// is requested, each URL is recorded as `blocked_address`.
    Blocked(String),
    /// The authority's TLS certificate was refused: nothing of it is
    /// requested, each URL is recorded as `certificate`, the reason said.
    Certificate(String),
    /// Fetching or reading robots.txt failed inside crawlkeeper (a caught
    /// panic): nothing is requested, and each URL is recorded as an
    /// internal error rather than left without a record.
    Failed(String),
}

impl RobotsRules {
    /// The `Sitemap:` lines of robots.txt, as written.
    pub fn sitemaps(&self) -> &[String] {
        match self {
            Self::Parsed(robot) => &robot.sitemaps,
            _ => &[],
        }
    }

    /// Whether requests to the authority may go out at all (rules read,
    /// or none).
    pub fn permits_requests(&self) -> bool {
        matches!(self, Self::AllowAll | Self::Parsed(_))
    }

    /// Whether `url` may be fetched; the error says why not.
    pub fn check(&self, url: &Url) -> Result<(), RecordError> {
        match self {
            Self::AllowAll => Ok(()),
            Self::Parsed(robot) => {
                // Match on path and query only: the authority is ours by construction.
                let target = match url.query() {
                    Some(q) => format!("{}?{q}", url.path()),
                    None => url.path().to_owned(),
                };
                if target == "/robots.txt" || robot.allowed(&target) {
                    Ok(())
                } else {
                    Err(RecordError::new(
                        ErrorKind::RobotsDenied,
                        "disallowed by robots.txt",
                    ))
                }
            }
            Self::Unavailable(why) => Err(RecordError::new(
                ErrorKind::RobotsUnavailable,
                format!("robots.txt unavailable ({why}); treated as disallow-all"),
            )),
            Self::Blocked(why) => Err(RecordError::new(ErrorKind::BlockedAddress, why.clone())),
            Self::Certificate(why) => Err(RecordError::new(ErrorKind::Certificate, why.clone())),
            Self::Failed(why) => Err(RecordError::new(
                ErrorKind::Internal,
                format!("robots.txt could not be processed (internal error: {why}); not requested"),
            )),
        }
    }

    /// The `Crawl-delay` for our agent, if robots.txt gave one.
    pub fn crawl_delay(&self) -> Option<f32> {
        match self {
            Self::Parsed(robot) => robot.delay,
            _ => None,
        }
    }

    /// Rules from the body of a robots.txt served with a 2xx status.
    pub fn parse(body: &[u8]) -> Self {
        let body = &body[..body.len().min(MAX_ROBOTS_BYTES)];
        match Robot::new(PRODUCT_TOKEN, body) {
            Ok(robot) => Self::Parsed(Arc::new(robot)),
            Err(e) => {
                // An unparsable file carries no rule we can follow; RFC 9309
                // says to use what can be parsed, which here is nothing.
                warn!(error = %e, "robots.txt could not be parsed; allowing all");
                Self::AllowAll
            }
        }
    }

    /// Rules from a snapshot kept by an earlier run.
    pub fn from_snapshot(snapshot: &RobotsSnapshot) -> Self {
        match snapshot {
            RobotsSnapshot::AllowAll => Self::AllowAll,
            RobotsSnapshot::Body(body) => Self::parse(body.as_bytes()),
        }
    }

    /// Fetches and parses the robots.txt of `authority`, following up to
    /// five redirects. 4xx means allow all; 5xx or no answer means disallow
    /// all. The snapshot is what a later run may reuse (none for an
    /// unavailable robots.txt, which is fetched again).
    pub async fn fetch(
        fetcher: &dyn Fetcher,
        authority: &Authority,
    ) -> (Self, Option<RobotsSnapshot>) {
        let mut archived = Vec::new();
        Self::fetch_archived(fetcher, authority, None, &mut archived).await
    }

    /// [`RobotsRules::fetch`], adding the WARC records of every response
    /// (redirects included) to `archived` when an `archiver` is given.
    pub async fn fetch_archived(
        fetcher: &dyn Fetcher,
        authority: &Authority,
        archiver: Option<&Archiver>,
        archived: &mut Vec<u8>,
    ) -> (Self, Option<RobotsSnapshot>) {
        let mut url = authority.robots_url();
        for hop in 0..=MAX_ROBOTS_REDIRECTS {
            let response = match fetcher.fetch(&url).await {
                Ok(r) => r,
                // The authority's own address is refused: so is every URL of it.
                Err(e) if e.kind == ErrorKind::BlockedAddress && hop == 0 => {
                    return (Self::Blocked(e.message), None);
                }
                // So is its certificate (not a redirect's, on another host).
                Err(e) if e.kind == ErrorKind::Certificate && hop == 0 => {
                    return (Self::Certificate(e.message), None);
                }
                Err(e) => {
                    debug!(%authority, error = %e, "robots.txt unreachable");
                    return (Self::Unavailable(e.message), None);
                }
            };
            if let Some(a) = archiver {
                archived.extend(a.exchange(url.as_str(), &response));
            }
            match response.status {
                200..=299 => {
                    let body = response
                        .body
                        .slice(..response.body.len().min(MAX_ROBOTS_BYTES));
                    let text = String::from_utf8_lossy(&body).into_owned();
                    // 500 KiB of wildcard rules take a while to compile:
                    // not on a thread that serves every other request.
                    let rules = tokio::task::spawn_blocking(move || Self::parse(&body))
                        .await
                        .unwrap_or_else(|e| Self::Failed(format!("parsing robots.txt: {e}")));
                    return (rules, Some(RobotsSnapshot::Body(text)));
                }
                300..=399 => match response.location().and_then(|l| url.join(l).ok()) {
                    Some(next) => url = next,
                    None => return (Self::AllowAll, Some(RobotsSnapshot::AllowAll)),
                },
                400..=499 => return (Self::AllowAll, Some(RobotsSnapshot::AllowAll)),
                status => return (Self::Unavailable(format!("status {status}")), None),
            }
        }
        // RFC 9309: past the redirect limit, treat as unavailable (4xx-like).
        (Self::AllowAll, Some(RobotsSnapshot::AllowAll))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(path: &str) -> Url {
        Url::parse(&format!("http://a.test{path}")).unwrap()
    }

    #[test]
    fn disallow_rules_apply_to_our_token() {
        let rules = RobotsRules::parse(
            b"User-agent: other\nDisallow: /\n\nUser-agent: crawlkeeper\nDisallow: /private\nCrawl-delay: 2\n",
        );
        assert!(rules.check(&url("/public")).is_ok());
        let err = rules.check(&url("/private/x")).unwrap_err();
        assert_eq!(err.kind, ErrorKind::RobotsDenied);
        assert_eq!(rules.crawl_delay(), Some(2.0));
    }

    #[test]
    fn wildcard_group_applies_when_no_group_names_us() {
        let rules = RobotsRules::parse(b"User-agent: *\nDisallow: /*?session=\n");
        assert!(rules.check(&url("/a?x=1")).is_ok());
        assert!(rules.check(&url("/a?session=1")).is_err());
    }

    #[test]
    fn garbage_is_not_a_rule() {
        let rules = RobotsRules::parse(b"\xff\xfe garbage \x00 <html>");
        assert!(rules.check(&url("/anything")).is_ok());
    }

    #[test]
    fn unavailable_denies_everything_with_its_own_kind() {
        let rules = RobotsRules::Unavailable("status 503".into());
        assert_eq!(
            rules.check(&url("/")).unwrap_err().kind,
            ErrorKind::RobotsUnavailable
        );
    }
}
