//! Where a store is, as said to people, and every message that may hold
//! it: passwords hidden, whatever form they take. A PostgreSQL location is
//! a URL (`postgres://user:password@host/db?sslpassword=…`) or a libpq
//! key=value string (`host=… user=… password='a b'`); its secrets are the
//! user information's password and the value of every parameter whose
//! name contains `password` (any case).
//!
//! [`scrub`] is the one function every message, log line, status field
//! and metric that may hold a location (or an error a driver built from
//! one) goes through; [`redact`] shows a location itself.

use std::ops::Range;

/// What replaces a password.
pub const HIDDEN: &str = "***";

/// Whether `location` names a PostgreSQL database: a `postgres://` or
/// `postgresql://` URL, or a libpq key=value string (its first word is
/// `keyword=`, e.g. `host=db.test dbname=crawl`). Anything else is a
/// SQLite file's path (`./a=b.db` is a file).
pub fn is_postgres(location: &str) -> bool {
    url_rest(location).is_some() || is_key_value(location)
}

/// `location` as shown to people: its passwords replaced by `***`, the
/// rest kept (`postgres://alice:***@db.test/crawl`,
/// `host=db.test password=***`). A path is shown as it is, unless it looks
/// like it holds a password.
pub fn redact(location: &str) -> String {
    let (hidden, _) = hide_location(location);
    hide_free_text(&hidden)
}

/// `message` with every password hidden: the location's own (raw or as
/// the driver decoded it, wherever it appears), and any other URL's or
/// `password=` word's.
pub fn scrub(message: &str, location: &str) -> String {
    let (shown, mut secrets) = hide_location(location);
    let mut out = if location.is_empty() {
        message.to_owned()
    } else {
        message.replace(location, &shown)
    };
    // Longest first, so that a secret holding another goes whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), HIDDEN);
    }
    hide_free_text(&out)
}

/// A URL location without its scheme, if it is one.
fn url_rest(location: &str) -> Option<&str> {
    ["postgres://", "postgresql://"]
        .iter()
        .find_map(|p| location.strip_prefix(p))
}

fn is_key_value(location: &str) -> bool {
    let s = location.trim_start();
    let key_len = s
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    key_len > 0
        && s.as_bytes()[0].is_ascii_alphabetic()
        && s[key_len..].trim_start().starts_with('=')
}

fn is_secret_key(key: &str) -> bool {
    key.to_ascii_lowercase().contains("password")
}

/// `location` with its secrets replaced exactly as the driver reads them
/// (tokio-postgres, like libpq), and the secrets themselves.
fn hide_location(location: &str) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let spans = if let Some(rest) = url_rest(location) {
        url_spans(location, location.len() - rest.len(), &mut secrets)
    } else if is_key_value(location) {
        key_value_spans(location, &mut secrets)
    } else {
        Vec::new()
    };
    (replace_spans(location, spans), secrets)
}

/// The secret spans of a URL whose scheme ends at `start`, read like the
/// driver: the user information runs to the first `@`, the password after
/// its first `:`; parameters are split at `&`.
fn url_spans(s: &str, start: usize, secrets: &mut Vec<String>) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut at = start;
    if let Some(end) = s[start..].find('@').map(|i| start + i) {
        if let Some(colon) = s[start..end].find(':').map(|i| start + i) {
            let raw = &s[colon + 1..end];
            secrets.push(raw.to_owned());
            secrets.push(decode(raw));
            spans.push(colon + 1..end);
        }
        at = end + 1;
    }
    let Some(query) = s[at..].find('?').map(|i| at + i + 1) else {
        return spans;
    };
    let mut pos = query;
    while pos < s.len() {
        let end = s[pos..].find('&').map_or(s.len(), |i| pos + i);
        if let Some(eq) = s[pos..end].find('=').map(|i| pos + i)
            && is_secret_key(&decode(&s[pos..eq]))
        {
            let raw = &s[eq + 1..end];
            secrets.push(raw.to_owned());
            secrets.push(decode(raw));
            spans.push(eq + 1..end);
        }
        pos = end + 1;
    }
    spans
}

/// The secret spans of a libpq key=value string, read like the driver:
/// `key = value`, the value quoted (`'a b'`) or up to white space, `\`
/// escaping the next character.
fn key_value_spans(s: &str, secrets: &mut Vec<String>) -> Vec<Range<usize>> {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_ws(i);
        let key_start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            i += 1;
        }
        if i == key_start {
            return spans;
        }
        let key = &s[key_start..i];
        i = skip_ws(i);
        if b.get(i) != Some(&b'=') {
            return spans;
        }
        i = skip_ws(i + 1);
        let (value, end) = kv_value(s, i);
        if is_secret_key(key) {
            secrets.push(s[i..end].to_owned());
            secrets.push(value);
            spans.push(i..end);
        }
        if end == i {
            return spans;
        }
        i = end;
    }
}

/// The value starting at `i` (unescaped) and where it ends.
fn kv_value(s: &str, i: usize) -> (String, usize) {
    let b = s.as_bytes();
    let mut value = Vec::new();
    let quoted = b.get(i) == Some(&b'\'');
    let mut j = if quoted { i + 1 } else { i };
    while j < b.len() {
        match b[j] {
            b'\'' if quoted => return (String::from_utf8_lossy(&value).into_owned(), j + 1),
            c if !quoted && c.is_ascii_whitespace() => break,
            b'\\' if j + 1 < b.len() => {
                value.push(b[j + 1]);
                j += 2;
                continue;
            }
            c => value.push(c),
        }
        j += 1;
    }
    // An unterminated quote runs to the end: all of it is hidden.
    (String::from_utf8_lossy(&value).into_owned(), b.len().min(j))
}

/// `text` with the passwords of every URL in it (a URL ends at white
/// space or a quote) and every `…password…=value` word hidden.
fn hide_free_text(text: &str) -> String {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut ignored = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://").map(|i| from + i) {
        let end = text[found..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .map_or(text.len(), |i| found + i);
        let token = &text[..end];
        spans.extend(url_spans(token, found + 3, &mut ignored));
        from = end.max(found + 3);
    }
    // `…password… = value` words (libpq strings inside a message).
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("password").map(|i| from + i) {
        let mut key_end = found + "password".len();
        while key_end < b.len() && (b[key_end].is_ascii_alphanumeric() || b[key_end] == b'_') {
            key_end += 1;
        }
        from = key_end;
        let mut i = key_end;
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        let in_query = found > 0 && {
            let mut k = found;
            while k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_') {
                k -= 1;
            }
            k > 0 && matches!(b[k - 1], b'?' | b'&')
        };
        let end = if in_query {
            text[i..]
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                .map_or(text.len(), |e| i + e)
        } else {
            kv_value(text, i).1
        };
        if end > i {
            spans.push(i..end);
            from = end;
        }
    }
    replace_spans(text, spans)
}

/// `s` with each span (merged where they overlap) replaced by [`HIDDEN`].
fn replace_spans(s: &str, mut spans: Vec<Range<usize>>) -> String {
    spans.retain(|r| r.start < r.end);
    if spans.is_empty() {
        return s.to_owned();
    }
    spans.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(s.len());
    let mut pos = 0;
    for r in spans {
        if r.end <= pos {
            continue;
        }
        let start = r.start.max(pos);
        out.push_str(&s[pos..start]);
        out.push_str(HIDDEN);
        pos = r.end;
    }
    out.push_str(&s[pos..]);
    out
}

/// `s` with its `%XX` escapes decoded (as the driver decodes them).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_user_information_are_hidden_and_the_rest_kept() {
        assert_eq!(
            redact("postgres://alice:S3cretPw@db.test:5432/crawl?sslmode=disable"),
            "postgres://alice:***@db.test:5432/crawl?sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://bob:p/ss@db.test/x"),
            "postgresql://bob:***@db.test/x",
            "the first @ ends the user information, as the driver reads it"
        );
        for unchanged in [
            "postgres://alice@db.test/crawl",
            "postgres://db.test/crawl",
            "crawlkeeper.db",
            "/tmp/a:b@c.db",
        ] {
            assert_eq!(redact(unchanged), unchanged);
        }
    }

    #[test]
    fn password_parameters_of_urls_are_hidden() {
        assert_eq!(
            redact("postgres://u@h/db?password=S3cret&sslmode=disable"),
            "postgres://u@h/db?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://h/db?sslmode=require&sslpassword=K3y&PassWord=P%40ss"),
            "postgresql://h/db?sslmode=require&sslpassword=***&PassWord=***"
        );
        assert_eq!(
            redact("postgres://h/db?my_password_file=x&application_name=a"),
            "postgres://h/db?my_password_file=***&application_name=a",
            "any parameter whose name holds 'password'"
        );
        assert_eq!(
            redact("postgres://h/db?pass%77ord=x"),
            "postgres://h/db?pass%77ord=***",
            "the name as decoded"
        );
    }

    #[test]
    fn key_value_strings_lose_their_passwords() {
        assert_eq!(
            redact("host=127.0.0.1 user=u password=S3cret dbname=x"),
            "host=127.0.0.1 user=u password=*** dbname=x"
        );
        assert_eq!(
            redact("host=h password = 'a b\\' c' sslpassword=k dbname=x"),
            "host=h password = *** sslpassword=*** dbname=x"
        );
        assert_eq!(redact("PASSWORD=x\\ y user=u"), "PASSWORD=*** user=u");
        assert_eq!(
            redact("host=h password='never closed"),
            "host=h password=***"
        );
        assert!(is_postgres("host=h dbname=d"));
        assert!(is_postgres(" dbname = d"));
        assert!(is_postgres("postgresql://h/d"));
        for path in ["crawlkeeper.db", "./a=b.db", "/tmp/x", "=x", "1a=b"] {
            assert!(!is_postgres(path), "{path}");
        }
    }

    #[test]
    fn messages_lose_the_password_wherever_it_appears() {
        let url = "postgres://alice:S3cretPw@db.test/crawl";
        let said = format!("cannot connect to {url}: password S3cretPw refused");
        let clean = scrub(&said, url);
        assert!(!clean.contains("S3cretPw"), "{clean}");
        assert!(
            clean.contains("postgres://alice:***@db.test/crawl"),
            "{clean}"
        );
        assert_eq!(scrub("plain", "crawlkeeper.db"), "plain");
        // As the driver decoded it.
        let url = "postgres://u:p%40ss@h/db?sslpassword=k%21ey";
        let clean = scrub("auth failed for p@ss, key k!ey", url);
        assert_eq!(clean, "auth failed for ***, key ***");
        // A key=value location's quoted password, unescaped.
        let kv = "host=h password='a \\'b' user=u";
        let clean = scrub(&format!("at {kv}: a 'b refused"), kv);
        assert_eq!(clean, "at host=h password=*** user=u: *** refused");
    }

    #[test]
    fn other_locations_in_a_message_are_hidden_too() {
        let said = "tried postgres://x:Pw1@h/db and 'host=h password=Pw2' and \
                    postgresql://h/db?password=Pw3#f";
        let clean = scrub(said, "crawlkeeper.db");
        for pw in ["Pw1", "Pw2", "Pw3"] {
            assert!(!clean.contains(pw), "{clean}");
        }
        assert_eq!(
            clean,
            "tried postgres://x:***@h/db and 'host=h password=*** and \
             postgresql://h/db?password=***",
            "an unquoted value runs to white space; a parameter to '&' (as the driver reads it)"
        );
        assert_eq!(
            scrub("password authentication failed for user \"u\"", ""),
            "password authentication failed for user \"u\""
        );
    }
}
