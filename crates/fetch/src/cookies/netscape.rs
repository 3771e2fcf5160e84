//! The Netscape cookie file: what curl's `--cookie-jar` and the browser
//! exporters write, one cookie a line.
//!
//! ```text
//! # Netscape HTTP Cookie File
//! .example.com → TRUE → / → FALSE → 1767225600 → session → abc123
//! #HttpOnly_www.example.com → FALSE → /app → TRUE → 0 → token → xyz
//! ```
//!
//! (`→` stands for a tab.) Seven tab-separated fields: domain, include
//! subdomains (`TRUE` or `FALSE`), path, secure (`TRUE` or `FALSE`), expiry
//! in Unix seconds (`0` for a session cookie), name, value. A line starting
//! with `#` is a comment, except `#HttpOnly_`, which prefixes the domain of
//! an HttpOnly cookie. Blank lines are ignored, and so is a trailing `\r`.
//! A line of six fields has an empty value (some tools strip the trailing
//! tab).

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{
    MAX_COOKIE_BYTES, MAX_COOKIES, MAX_COOKIES_PER_DOMAIN, is_ip, is_public_suffix, registrable,
};

/// What is wrong with a cookie file. Names the line (counted from 1) and
/// the field, never a cookie's name or value: those are secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CookieFileError {
    /// A line that is not a cookie in the Netscape format.
    #[error("cookie file line {line}: {problem}")]
    Malformed {
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it (never the value).
        problem: &'static str,
    },
    /// A cookie longer than [`MAX_COOKIE_BYTES`].
    #[error("cookie file line {line}: the cookie is longer than {limit} bytes")]
    TooLarge {
        /// The line, counted from 1.
        line: usize,
        /// [`MAX_COOKIE_BYTES`].
        limit: usize,
    },
    /// More cookies for one registrable domain than
    /// [`MAX_COOKIES_PER_DOMAIN`].
    #[error("cookie file line {line}: more than {limit} cookies for {domain}")]
    TooManyForDomain {
        /// The line of the first cookie over the limit.
        line: usize,
        /// The registrable domain.
        domain: String,
        /// [`MAX_COOKIES_PER_DOMAIN`].
        limit: usize,
    },
    /// More cookies than [`MAX_COOKIES`].
    #[error("cookie file line {line}: more than {limit} cookies in all")]
    TooMany {
        /// The line of the first cookie over the limit.
        line: usize,
        /// [`MAX_COOKIES`].
        limit: usize,
    },
}

/// One cookie of a Netscape cookie file. Its `Debug` leaves the value out.
#[derive(Clone, PartialEq, Eq)]
pub struct NetscapeCookie {
    /// The line it was on, counted from 1.
    pub line: usize,
    /// The host or domain, lower-cased, without `#HttpOnly_` or a leading
    /// dot.
    pub domain: String,
    /// True when subdomains of `domain` get it too (`TRUE`); false for a
    /// host-only cookie.
    pub include_subdomains: bool,
    /// The path it is sent under.
    pub path: String,
    /// True when it is sent over `https` only.
    pub secure: bool,
    /// True when the line had the `#HttpOnly_` prefix (nothing to a
    /// crawler, kept for the record).
    pub http_only: bool,
    /// When it expires; `None` for a session cookie (`0` in the file).
    pub expires: Option<SystemTime>,
    /// The cookie's name.
    pub name: String,
    /// The cookie's value: a secret.
    pub value: String,
}

impl fmt::Debug for NetscapeCookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetscapeCookie")
            .field("line", &self.line)
            .field("domain", &self.domain)
            .field("include_subdomains", &self.include_subdomains)
            .field("path", &self.path)
            .field("secure", &self.secure)
            .field("http_only", &self.http_only)
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// Reads a Netscape cookie file: its unexpired cookies, in file order, a
/// later line replacing an earlier one of the same domain, path and name.
///
/// A malformed line is an error naming its number; so is a file with more
/// cookies than a [`CookieJar`](super::CookieJar) holds (an error rather
/// than a silent cut: the crawl would otherwise run without cookies the
/// user gave it). Expired cookies are skipped and do not count.
pub fn load_netscape(text: &str) -> Result<Vec<NetscapeCookie>, CookieFileError> {
    load_netscape_at(text, super::unix_now())
}

pub(super) fn load_netscape_at(
    text: &str,
    now: i64,
) -> Result<Vec<NetscapeCookie>, CookieFileError> {
    let mut cookies: Vec<NetscapeCookie> = Vec::new();
    // (domain, path, name) → index in `cookies`.
    let mut seen: HashMap<(String, String, String), usize> = HashMap::new();
    let mut per_domain: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let Some(cookie) = parse_line(raw, line)? else {
            continue;
        };
        if cookie
            .expires
            .is_some_and(|t| super::unix_seconds(t) <= now)
        {
            continue;
        }
        let key = (
            cookie.domain.clone(),
            cookie.path.clone(),
            cookie.name.clone(),
        );
        if let Some(&at) = seen.get(&key) {
            if let Some(slot) = cookies.get_mut(at) {
                *slot = cookie;
            }
            continue;
        }
        let group = registrable(&cookie.domain, is_ip(&cookie.domain));
        let count = per_domain.entry(group).or_default();
        *count += 1;
        if *count > MAX_COOKIES_PER_DOMAIN {
            return Err(CookieFileError::TooManyForDomain {
                line,
                domain: registrable(&cookie.domain, is_ip(&cookie.domain)),
                limit: MAX_COOKIES_PER_DOMAIN,
            });
        }
        if cookies.len() >= MAX_COOKIES {
            return Err(CookieFileError::TooMany {
                line,
                limit: MAX_COOKIES,
            });
        }
        seen.insert(key, cookies.len());
        cookies.push(cookie);
    }
    Ok(cookies)
}

/// One line: `None` for a blank line or a comment.
fn parse_line(raw: &str, line: usize) -> Result<Option<NetscapeCookie>, CookieFileError> {
    let malformed = |problem| CookieFileError::Malformed { line, problem };
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    if raw.trim().is_empty() {
        return Ok(None);
    }
    let (raw, http_only) = match raw.strip_prefix("#HttpOnly_") {
        Some(rest) => (rest, true),
        None if raw.starts_with('#') => return Ok(None),
        None => (raw, false),
    };
    let fields: Vec<&str> = raw.splitn(8, '\t').collect();
    let (domain, include_subdomains, path, secure, expires, name, value) = match fields[..] {
        [d, i, p, s, e, n, v] => (d, i, p, s, e, n, v),
        // Six fields: the value is empty (its trailing tab stripped).
        [d, i, p, s, e, n] => (d, i, p, s, e, n, ""),
        [_, _, _, _, _, _, _, _] => return Err(malformed("more than 7 tab-separated fields")),
        _ => {
            return Err(malformed(
                "fewer than 7 tab-separated fields (domain, include subdomains, path, \
                 secure, expiry, name, value)",
            ));
        }
    };

    let domain = domain.trim();
    let domain = domain
        .strip_prefix('.')
        .unwrap_or(domain)
        .to_ascii_lowercase();
    if domain.is_empty() {
        return Err(malformed("the domain is empty"));
    }
    if !domain
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']'))
    {
        return Err(malformed(
            "the domain is not a host name (an internationalised one must be in its xn-- form)",
        ));
    }
    let include_subdomains = parse_bool(include_subdomains)
        .ok_or(malformed("include-subdomains is not TRUE or FALSE"))?;
    let ip = is_ip(&domain);
    if include_subdomains && !ip && is_public_suffix(&domain) {
        return Err(malformed(
            "a cookie for every subdomain of a public suffix (such as com or co.uk)",
        ));
    }
    if !path.starts_with('/') {
        return Err(malformed("the path does not start with /"));
    }
    if path.bytes().any(|b| b.is_ascii_control() || b == b';') {
        return Err(malformed("the path holds a control character or ;"));
    }
    let secure = parse_bool(secure).ok_or(malformed("secure is not TRUE or FALSE"))?;
    let expires =
        parse_expiry(expires).ok_or(malformed("the expiry is not a Unix time in seconds"))?;
    if name.is_empty() {
        return Err(malformed("the cookie name is empty"));
    }
    if name
        .bytes()
        .any(|b| b.is_ascii_control() || matches!(b, b'=' | b';' | b' '))
    {
        return Err(malformed(
            "the cookie name holds a control character, space, = or ;",
        ));
    }
    if value.bytes().any(|b| b.is_ascii_control() || b == b';') {
        return Err(malformed("the cookie value holds a control character or ;"));
    }
    let size = name.len() + value.len() + domain.len() + path.len();
    if size > MAX_COOKIE_BYTES {
        return Err(CookieFileError::TooLarge {
            line,
            limit: MAX_COOKIE_BYTES,
        });
    }
    Ok(Some(NetscapeCookie {
        line,
        domain,
        include_subdomains,
        path: path.to_owned(),
        secure,
        http_only,
        expires,
        name: name.to_owned(),
        value: value.to_owned(),
    }))
}

fn parse_bool(field: &str) -> Option<bool> {
    let field = field.trim();
    if field.eq_ignore_ascii_case("TRUE") {
        Some(true)
    } else if field.eq_ignore_ascii_case("FALSE") {
        Some(false)
    } else {
        None
    }
}

/// Unix seconds, `0` meaning a session cookie. Some exporters write a
/// fraction (`1767225600.5`): it is dropped. Negative times are refused;
/// absurdly large ones saturate.
fn parse_expiry(field: &str) -> Option<Option<SystemTime>> {
    let field = field.trim();
    let whole = match field.split_once('.') {
        Some((whole, fraction)) if fraction.bytes().all(|b| b.is_ascii_digit()) => whole,
        Some(_) => return None,
        None => field,
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs = whole.bytes().fold(0u64, |acc, d| {
        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    if secs == 0 {
        return Some(None);
    }
    // 9999-12-31T23:59:59Z: later than any cookie needs, and within what
    // SystemTime holds on every platform.
    const LATEST: u64 = 253_402_300_799;
    Some(Some(UNIX_EPOCH + Duration::from_secs(secs.min(LATEST))))
}
