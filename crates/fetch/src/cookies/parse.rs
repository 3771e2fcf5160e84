//! One `Set-Cookie` header value parsed as RFC 6265 §5.2 says, and the
//! cookie-date algorithm of §5.1.1.
//!
//! Works on bytes: a header value may hold any octet but controls, and a
//! cookie's value is sent back exactly as it came. Nothing here panics or
//! allocates more than the input's length; every number saturates.

/// A `Set-Cookie` header as its attributes say, before the storage model
/// (§5.3) decides whether and where it goes.
pub(super) struct SetCookie<'a> {
    /// The cookie's name, never empty, trimmed of spaces and tabs.
    pub name: &'a [u8],
    /// The cookie's value, trimmed of spaces and tabs.
    pub value: &'a [u8],
    /// When it expires, in Unix seconds (`Max-Age` winning over
    /// `Expires`); `None` for a session cookie.
    pub expiry: Option<i64>,
    /// The `Domain` attribute lower-cased without its leading dot; `None`
    /// when absent or empty.
    pub domain: Option<Vec<u8>>,
    /// The `Path` attribute when it starts with `/`; `None` means the
    /// default path.
    pub path: Option<&'a [u8]>,
    /// The `Secure` attribute.
    pub secure: bool,
}

/// Parses one `Set-Cookie` value received at `now` (Unix seconds); `None`
/// when the cookie is to be ignored (no `=` in the name-value pair, an
/// empty name).
pub(super) fn parse_set_cookie(header: &[u8], now: i64) -> Option<SetCookie<'_>> {
    let (pair, attributes) = match memchr::memchr(b';', header) {
        Some(i) => (&header[..i], &header[i..]),
        None => (header, &header[header.len()..]),
    };
    // RFC 6265 ignores a pair without `=` (6265bis would make it a
    // nameless cookie; no site a crawler needs relies on that).
    let eq = memchr::memchr(b'=', pair)?;
    let name = trim_wsp(&pair[..eq]);
    let value = trim_wsp(&pair[eq + 1..]);
    if name.is_empty() {
        return None;
    }
    let mut cookie = SetCookie {
        name,
        value,
        expiry: None,
        domain: None,
        path: None,
        secure: false,
    };
    let mut expires = None;
    let mut max_age = None;
    // The first byte of `attributes` is the `;` that ends the pair.
    for attribute in attributes.split(|&b| b == b';').skip(1) {
        let (key, val) = match memchr::memchr(b'=', attribute) {
            Some(i) => (trim_wsp(&attribute[..i]), trim_wsp(&attribute[i + 1..])),
            None => (trim_wsp(attribute), &attribute[attribute.len()..]),
        };
        // The last of each attribute wins (§5.3 step 1 onwards).
        if key.eq_ignore_ascii_case(b"expires") {
            if let Some(t) = parse_cookie_date(val) {
                expires = Some(t);
            }
        } else if key.eq_ignore_ascii_case(b"max-age") {
            if let Some(delta) = parse_max_age(val) {
                max_age = Some(if delta <= 0 {
                    i64::MIN
                } else {
                    now.saturating_add(delta)
                });
            }
        } else if key.eq_ignore_ascii_case(b"domain") {
            let d = val.strip_prefix(b".").unwrap_or(val);
            cookie.domain = (!d.is_empty()).then(|| d.to_ascii_lowercase());
        } else if key.eq_ignore_ascii_case(b"path") {
            cookie.path = val.starts_with(b"/").then_some(val);
        } else if key.eq_ignore_ascii_case(b"secure") {
            cookie.secure = true;
        }
        // HttpOnly means nothing to a crawler (it has no scripts);
        // SameSite neither (every request is "top-level"); the rest is
        // unknown and ignored as §5.2 says.
    }
    cookie.expiry = max_age.or(expires);
    Some(cookie)
}

/// Space and tab off both ends (RFC 6265's WSP).
fn trim_wsp(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// `Max-Age`'s delta-seconds: an optional `-` then digits; too many digits
/// saturate. `None` when it is not that (the attribute is then ignored).
fn parse_max_age(val: &[u8]) -> Option<i64> {
    let (negative, digits) = match val.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, val),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if negative {
        // Any negative number (and -0) expires the cookie now.
        return Some(0);
    }
    let mut n: i64 = 0;
    for &d in digits {
        n = n.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    Some(n)
}

/// RFC 6265 §5.1.1's delimiter: the bytes that separate date tokens.
fn is_delimiter(b: u8) -> bool {
    matches!(b, 0x09 | 0x20..=0x2F | 0x3B..=0x40 | 0x5B..=0x60 | 0x7B..=0x7E)
}

/// The cookie-date of RFC 6265 §5.1.1, in Unix seconds; `None` when the
/// algorithm fails (the `Expires` attribute is then ignored).
pub(super) fn parse_cookie_date(input: &[u8]) -> Option<i64> {
    let mut time = None;
    let mut day = None;
    let mut month = None;
    let mut year = None;
    for token in input.split(|&b| is_delimiter(b)) {
        if token.is_empty() {
            continue;
        }
        if time.is_none()
            && let Some(t) = parse_time(token)
        {
            time = Some(t);
        } else if day.is_none()
            && let Some(d) = leading_digits(token, 1, 2)
        {
            day = Some(d);
        } else if month.is_none()
            && let Some(m) = parse_month(token)
        {
            month = Some(m);
        } else if year.is_none()
            && let Some(y) = leading_digits(token, 2, 4)
        {
            year = Some(y);
        }
    }
    let (hour, minute, second) = time?;
    let (day, month, mut year) = (day?, month?, year?);
    if (70..=99).contains(&year) {
        year += 1900;
    } else if year <= 69 {
        year += 2000;
    }
    if !(1..=31).contains(&day) || year < 1601 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(i64::from(year), month, day);
    Some(days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second))
}

/// `min..=max` digits at the start of `token`, followed by a non-digit or
/// nothing (§5.1.1's day-of-month and year productions).
fn leading_digits(token: &[u8], min: usize, max: usize) -> Option<u32> {
    let n = token.iter().take_while(|b| b.is_ascii_digit()).count();
    if n < min || n > max {
        return None;
    }
    // At most four digits: no overflow.
    Some(
        token[..n]
            .iter()
            .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0')),
    )
}

/// §5.1.1's time production: `1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT`, then a
/// non-digit or nothing.
fn parse_time(token: &[u8]) -> Option<(u32, u32, u32)> {
    let mut rest = token;
    let mut parts = [0u32; 3];
    for (i, part) in parts.iter_mut().enumerate() {
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=2).contains(&n) {
            return None;
        }
        *part = rest[..n]
            .iter()
            .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'));
        rest = &rest[n..];
        if i < 2 {
            rest = rest.strip_prefix(b":")?;
        }
    }
    Some((parts[0], parts[1], parts[2]))
}

/// A month by its first three letters, case-insensitively; 1 to 12.
fn parse_month(token: &[u8]) -> Option<u32> {
    const MONTHS: [&[u8; 3]; 12] = [
        b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov",
        b"dec",
    ];
    let prefix = token.get(..3)?;
    MONTHS
        .iter()
        .position(|m| prefix.eq_ignore_ascii_case(&m[..]))
        .and_then(|i| u32::try_from(i + 1).ok())
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard
/// Hinnant's algorithm); exact for every year this parser accepts.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (m, d) = (i64::from(month), i64::from(day));
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
