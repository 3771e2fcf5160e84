//! A per-crawl cookie jar (RFC 6265), bounded against hostile servers, and
//! the Netscape cookie file (`cookies.txt`) that seeds it.
//!
//! The fetcher asks [`CookieJar::cookies`] for each request's `Cookie`
//! header and gives each response's `Set-Cookie` headers to
//! [`CookieJar::set_cookies`]. (Not through a client's cookie layer:
//! reqwest's parsed every request's URL again, 2–3% of a fast crawl's
//! CPU.)
//!
//! # What it follows
//!
//! RFC 6265 §5: domain matching, host-only cookies (no `Domain` attribute,
//! and always for an IP-address host), path matching with the default path,
//! `Secure` cookies sent over `https` only, `Expires` and `Max-Age`
//! (`Max-Age` winning; a time in the past deletes the cookie), `Domain`
//! attributes refused when they are a public suffix (`Domain=com`,
//! `Domain=co.uk`, `Domain=github.io`, by the `psl` list) or do not
//! domain-match the request host. `HttpOnly` and `SameSite` mean nothing to
//! a crawler and are ignored. One rule comes from RFC 6265bis: a `Secure`
//! cookie set over plain `http` is ignored, as every browser does.
//!
//! # Bounds
//!
//! A server controls what it sends, so the jar caps what it keeps:
//!
//! | cap | value |
//! |---|---|
//! | cookies per registrable domain ([`MAX_COOKIES_PER_DOMAIN`]) | 50 |
//! | cookies in all ([`MAX_COOKIES`]) | 3,000 |
//! | bytes per cookie, name + value + attributes ([`MAX_COOKIE_BYTES`]) | 4,096 |
//! | `Set-Cookie` headers read per response ([`MAX_SET_COOKIE_PER_RESPONSE`]) | 100 |
//!
//! These are RFC 6265 §6.1's minimums. When a domain or the jar is full,
//! expired cookies go first, then the least recently used (sent or set). A
//! larger `Set-Cookie` is ignored unparsed, headers past the hundredth are
//! not looked at, so one response with 10,000 of them costs a hundred
//! parses at most. Nothing panics on any input: unparsable dates are
//! ignored, huge `Max-Age` values saturate.
//!
//! # Why not the `cookie_store` crate
//!
//! It is what reqwest's `Jar` uses, but it has no
//! bounds, stores cookies in nested maps keyed by the server's strings, and
//! parses through the `cookie` crate's `Cookie` (UTF-8 only, `time` dates).
//! Enforcing the caps around it would mean walking its maps after every
//! insert. The rules are short, so they are written here, on bytes, with
//! the cookies kept grouped by registrable domain: a request looks at its
//! own domain's fifty cookies at most.
//!
//! # Secrets
//!
//! Cookies are credentials. The jar's `Debug` prints counts only, and the
//! cookie file's errors name a line and a field, never a value.

mod netscape;
mod parse;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::HeaderValue;
use url::{Host, Url};

pub use netscape::{CookieFileError, NetscapeCookie, load_netscape};

/// At most this many cookies per registrable domain (`example.co.uk` and
/// all its subdomains together; an IP address or a bare suffix is its own
/// domain).
pub const MAX_COOKIES_PER_DOMAIN: usize = 50;

/// At most this many cookies in one jar.
pub const MAX_COOKIES: usize = 3_000;

/// At most this many bytes per cookie: a `Set-Cookie` value (name, value
/// and attributes) longer than this is ignored; in a cookie file, the
/// name, value, domain and path together.
pub const MAX_COOKIE_BYTES: usize = 4_096;

/// At most this many `Set-Cookie` headers are read from one response; the
/// rest are ignored.
pub const MAX_SET_COOKIE_PER_RESPONSE: usize = 100;

/// The cookies of one crawl: what servers set, sent back where RFC 6265
/// says, within the caps of the [module](self) documentation.
///
/// Shared between the fetcher's tasks behind a [`Mutex`]; every operation
/// is short (one domain's cookies, or one pass over the jar when it is
/// full).
pub struct CookieJar {
    store: Mutex<Store>,
}

/// One stored cookie (RFC 6265 §5.3's fields that matter to a crawler).
struct Stored {
    name: Box<[u8]>,
    value: Box<[u8]>,
    /// Lower-case host or domain, without a leading dot.
    domain: Box<str>,
    host_only: bool,
    path: Box<[u8]>,
    secure: bool,
    /// Unix seconds; `None` for a session cookie (kept for the crawl).
    expiry: Option<i64>,
    /// When first created (ticks of [`Store::clock`]): kept on replacement.
    created: u64,
    /// When last set or sent (ticks of [`Store::clock`]).
    accessed: u64,
}

impl Stored {
    fn expired(&self, now: i64) -> bool {
        self.expiry.is_some_and(|t| t <= now)
    }

    fn same_key(&self, other: &Stored) -> bool {
        self.name == other.name && self.domain == other.domain && self.path == other.path
    }
}

/// The cookies grouped by registrable domain.
#[derive(Default)]
struct Store {
    groups: HashMap<Box<str>, Vec<Stored>>,
    total: usize,
    /// A logical clock: creation and access order without ties.
    clock: u64,
}

impl Store {
    fn tick(&mut self) -> u64 {
        self.clock = self.clock.saturating_add(1);
        self.clock
    }

    /// Stores `cookie` under `group` (§5.3 steps 11 and 12), replacing the
    /// cookie of the same name, domain and path (keeping its creation
    /// time), evicting to stay within the caps.
    fn insert(&mut self, group: &str, mut cookie: Stored, now: i64) {
        let tick = self.tick();
        cookie.created = tick;
        cookie.accessed = tick;
        let mut removed = 0;
        if let Some(cookies) = self.groups.get_mut(group) {
            if let Some(i) = cookies.iter().position(|c| c.same_key(&cookie)) {
                cookie.created = cookies.swap_remove(i).created;
                removed += 1;
            }
            let before = cookies.len();
            cookies.retain(|c| !c.expired(now));
            removed += before - cookies.len();
        }
        self.total = self.total.saturating_sub(removed);
        if cookie.expired(now) {
            // An expiry in the past only deletes.
            self.drop_if_empty(group);
            return;
        }
        if let Some(cookies) = self.groups.get_mut(group)
            && cookies.len() >= MAX_COOKIES_PER_DOMAIN
            && let Some(i) = least_recently_used(cookies)
        {
            cookies.swap_remove(i);
            self.total = self.total.saturating_sub(1);
        }
        if self.total >= MAX_COOKIES {
            self.purge_expired(now);
        }
        if self.total >= MAX_COOKIES {
            self.evict_least_recently_used();
        }
        self.groups
            .entry(Box::from(group))
            .or_default()
            .push(cookie);
        self.total += 1;
    }

    fn drop_if_empty(&mut self, group: &str) {
        if self.groups.get(group).is_some_and(Vec::is_empty) {
            self.groups.remove(group);
        }
    }

    fn purge_expired(&mut self, now: i64) {
        let mut total = 0;
        self.groups.retain(|_, cookies| {
            cookies.retain(|c| !c.expired(now));
            total += cookies.len();
            !cookies.is_empty()
        });
        self.total = total;
    }

    /// Removes the least recently used cookie of the whole jar.
    fn evict_least_recently_used(&mut self) {
        let oldest = self
            .groups
            .iter()
            .filter_map(|(g, cookies)| {
                let i = least_recently_used(cookies)?;
                Some((cookies[i].accessed, g.clone(), i))
            })
            .min_by_key(|(accessed, _, _)| *accessed);
        if let Some((_, group, i)) = oldest
            && let Some(cookies) = self.groups.get_mut(&group)
        {
            cookies.swap_remove(i);
            self.total = self.total.saturating_sub(1);
            self.drop_if_empty(&group);
        }
    }

    /// The `Cookie` header for a request to `host` (in `group`) at `path`
    /// (§5.4), marking the cookies sent as used.
    fn header_for(
        &mut self,
        group: &str,
        host: &str,
        path: &[u8],
        secure: bool,
        now: i64,
    ) -> Option<HeaderValue> {
        let tick = self.tick();
        let cookies = self.groups.get_mut(group)?;
        let mut chosen: Vec<&mut Stored> = cookies
            .iter_mut()
            .filter(|c| {
                !c.expired(now)
                    && (!c.secure || secure)
                    && path_matches(path, &c.path)
                    && if c.host_only {
                        host == &*c.domain
                    } else {
                        domain_matches(host, &c.domain)
                    }
            })
            .collect();
        if chosen.is_empty() {
            return None;
        }
        // Longer paths first, then earlier creation (§5.4 step 2).
        chosen.sort_by(|a, b| {
            b.path
                .len()
                .cmp(&a.path.len())
                .then(a.created.cmp(&b.created))
        });
        let mut out = Vec::new();
        for c in chosen {
            c.accessed = tick;
            if !out.is_empty() {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(&c.name);
            out.push(b'=');
            out.extend_from_slice(&c.value);
        }
        HeaderValue::from_bytes(&out).ok()
    }
}

/// The index of the least recently used cookie in `cookies`.
fn least_recently_used(cookies: &[Stored]) -> Option<usize> {
    cookies
        .iter()
        .enumerate()
        .min_by_key(|(_, c)| c.accessed)
        .map(|(i, _)| i)
}

impl CookieJar {
    /// An empty jar.
    pub fn new() -> Self {
        CookieJar {
            store: Mutex::new(Store::default()),
        }
    }

    /// A jar holding the cookies of a Netscape cookie file (the format of
    /// curl's `--cookie-jar` and browser exporters; see [`load_netscape`]).
    ///
    /// A malformed line, or more cookies than the jar's caps, is an error:
    /// a file is the user's, and cutting it silently would leave a crawl
    /// logged out with no word why.
    pub fn from_netscape(text: &str) -> Result<Self, CookieFileError> {
        Self::from_netscape_at(text, unix_now())
    }

    fn from_netscape_at(text: &str, now: i64) -> Result<Self, CookieFileError> {
        let cookies = netscape::load_netscape_at(text, now)?;
        let jar = CookieJar::new();
        {
            let mut store = jar.lock();
            for c in cookies {
                let ip = is_ip(&c.domain);
                let group = registrable(&c.domain, ip);
                let stored = Stored {
                    name: c.name.into_bytes().into(),
                    value: c.value.into_bytes().into(),
                    host_only: !c.include_subdomains || ip,
                    domain: c.domain.into(),
                    path: c.path.into_bytes().into(),
                    secure: c.secure,
                    expiry: c.expires.map(unix_seconds),
                    created: 0,
                    accessed: 0,
                };
                store.insert(&group, stored, now);
            }
        }
        Ok(jar)
    }

    /// How many cookies the jar holds (expired ones not yet purged
    /// included: they go when their domain is next set or the jar fills).
    pub fn len(&self) -> usize {
        self.lock().total
    }

    /// True when the jar holds no cookie.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores the `Set-Cookie` headers of a response from `url`, received
    /// at `now` (Unix seconds).
    fn set_cookies_at(&self, headers: &mut dyn Iterator<Item = &HeaderValue>, url: &Url, now: i64) {
        let Some(origin) = Origin::of(url) else {
            return;
        };
        let mut store = self.lock();
        for header in headers.take(MAX_SET_COOKIE_PER_RESPONSE) {
            let bytes = header.as_bytes();
            if bytes.len() > MAX_COOKIE_BYTES {
                continue;
            }
            let Some(cookie) = parse::parse_set_cookie(bytes, now) else {
                continue;
            };
            if let Some(stored) = origin.accept(cookie, url) {
                store.insert(&origin.group, stored, now);
            }
        }
    }

    /// The `Cookie` header for a request to `url` at `now` (Unix seconds).
    fn cookies_at(&self, url: &Url, now: i64) -> Option<HeaderValue> {
        let origin = Origin::of(url)?;
        let secure = matches!(url.scheme(), "https" | "wss");
        self.lock().header_for(
            &origin.group,
            &origin.host,
            url.path().as_bytes(),
            secure,
            now,
        )
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic elsewhere cannot leave the store half-changed in a way
        // that matters: keep going with what is there.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for CookieJar {
    fn default() -> Self {
        CookieJar::new()
    }
}

impl CookieJar {
    /// Stores the cookies of a response from `url` (its `Set-Cookie`
    /// headers), as of now.
    pub fn set_cookies(&self, cookie_headers: &mut dyn Iterator<Item = &HeaderValue>, url: &Url) {
        self.set_cookies_at(cookie_headers, url, unix_now());
    }

    /// The `Cookie` header of a request to `url`, as of now; `None` when
    /// no cookie is sent there.
    pub fn cookies(&self, url: &Url) -> Option<HeaderValue> {
        self.cookies_at(url, unix_now())
    }
}

/// Counts only: names and values are secrets.
impl fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("CookieJar");
        // `try_lock`: formatting never waits, nor deadlocks if the jar is
        // printed while in use on the same thread.
        match self.store.try_lock() {
            Ok(store) => out
                .field("cookies", &store.total)
                .field("domains", &store.groups.len()),
            Err(std::sync::TryLockError::Poisoned(e)) => {
                let store = e.into_inner();
                out.field("cookies", &store.total)
                    .field("domains", &store.groups.len())
            }
            Err(std::sync::TryLockError::WouldBlock) => out.field("cookies", &"(in use)"),
        };
        out.finish()
    }
}

/// The request host as the storage model needs it.
struct Origin {
    /// Canonical host (`url` lower-cases and punycodes it; IPv6 bracketed).
    host: String,
    ip: bool,
    /// The registrable domain the host's cookies are grouped under.
    group: String,
}

impl Origin {
    fn of(url: &Url) -> Option<Origin> {
        let (host, ip) = match url.host()? {
            Host::Domain(d) => (d.to_ascii_lowercase(), false),
            Host::Ipv4(_) | Host::Ipv6(_) => (url.host_str()?.to_owned(), true),
        };
        if host.is_empty() {
            return None;
        }
        let group = registrable(&host, ip);
        Some(Origin { host, ip, group })
    }

    /// RFC 6265 §5.3 steps 2 to 10 for a cookie from `url`: what to store,
    /// or `None` when the cookie is refused.
    fn accept(&self, cookie: parse::SetCookie<'_>, url: &Url) -> Option<Stored> {
        if cookie.secure && !matches!(url.scheme(), "https" | "wss") {
            // RFC 6265bis: only a secure origin sets a Secure cookie.
            return None;
        }
        let (domain, host_only) = match cookie.domain {
            None => (self.host.clone(), true),
            Some(d) => {
                // Not UTF-8 means not ASCII: it cannot match the host.
                let d = String::from_utf8(d).ok()?;
                if self.ip || is_public_suffix(&d) {
                    // An IP address, or a public suffix, may only name
                    // itself, and then the cookie is host-only (§5.3
                    // step 5).
                    if d != self.host {
                        return None;
                    }
                    (d, true)
                } else if domain_matches(&self.host, &d) {
                    (d, false)
                } else {
                    return None;
                }
            }
        };
        let path = match cookie.path {
            Some(p) => p.to_vec(),
            None => default_path(url.path().as_bytes()).to_vec(),
        };
        Some(Stored {
            name: cookie.name.into(),
            value: cookie.value.into(),
            domain: domain.into(),
            host_only,
            path: path.into(),
            secure: cookie.secure,
            expiry: cookie.expiry,
            created: 0,
            accessed: 0,
        })
    }
}

/// True when `host` looks like an IP address (v4, or bracketed v6).
fn is_ip(host: &str) -> bool {
    host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok()
}

/// The group a host's cookies live in: its registrable domain; an IP
/// address or a bare public suffix is its own group.
fn registrable(host: &str, ip: bool) -> String {
    if ip {
        return host.to_owned();
    }
    psl::domain_str(host).unwrap_or(host).to_owned()
}

/// True when `domain` is a public suffix (`com`, `co.uk`, `github.io`, or
/// any unknown top-level label, by the list's `*` rule).
fn is_public_suffix(domain: &str) -> bool {
    let trimmed = domain.strip_suffix('.').unwrap_or(domain);
    psl::suffix_str(trimmed).is_some_and(|s| s.eq_ignore_ascii_case(trimmed))
}

/// RFC 6265 §5.1.3: `host` is `domain` or a subdomain of it (IP addresses
/// only match themselves, which the callers check apart).
fn domain_matches(host: &str, domain: &str) -> bool {
    if host == domain {
        return true;
    }
    !domain.is_empty()
        && !is_ip(host)
        && host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// RFC 6265 §5.1.4: the request path `path` is within `cookie_path`.
fn path_matches(path: &[u8], cookie_path: &[u8]) -> bool {
    let path = if path.is_empty() { b"/" as &[u8] } else { path };
    match path.strip_prefix(cookie_path) {
        Some(rest) => rest.is_empty() || cookie_path.ends_with(b"/") || rest.starts_with(b"/"),
        None => false,
    }
}

/// RFC 6265 §5.1.4's default-path of a request path: up to, not including,
/// its last `/`; `/` when that leaves nothing.
fn default_path(path: &[u8]) -> &[u8] {
    if !path.starts_with(b"/") {
        return b"/";
    }
    match memchr::memrchr(b'/', path) {
        Some(0) | None => b"/",
        Some(i) => &path[..i],
    }
}

/// Now in Unix seconds.
fn unix_now() -> i64 {
    unix_seconds(SystemTime::now())
}

/// A time in Unix seconds, saturating.
fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}
