//! The request head the status server reads, parsed by a pure function
//! (fuzzed: `fuzz/fuzz_targets/status_head.rs`), and the rules it applies
//! to it: which `Host` is this machine's, whether a token came with it.
//!
//! Strict HTTP/1.x, GET-sized: the request line and at most
//! [`MAX_HEADERS`] header lines in at most [`MAX_HEAD`] bytes, each line
//! ended by CRLF, no obsolete line folding, no body. Only what the server
//! needs is kept.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The largest head read, its blank line included.
pub const MAX_HEAD: usize = 16 * 1024;
/// The most header lines a head may have.
pub const MAX_HEADERS: usize = 64;
/// The longest method.
const MAX_METHOD: usize = 16;

/// A parsed request head: what the server needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The method, as sent (methods are case-sensitive).
    pub method: String,
    /// The path of the target (origin form: begins with `/`).
    pub path: String,
    /// The query of the target (after `?`), if any.
    pub query: Option<String>,
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    pub minor: u8,
    /// The `Host` header (HTTP/1.1 requires exactly one).
    pub host: Option<String>,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

/// Why a head was refused (the server answers 400, or 431 when too
/// large, and closes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadError {
    /// More than [`MAX_HEAD`] bytes without a blank line.
    #[error("request head too large")]
    TooLarge,
    /// More than [`MAX_HEADERS`] header lines.
    #[error("too many header lines")]
    TooManyHeaders,
    /// The request line is not `METHOD SP /target SP HTTP/1.x`.
    #[error("bad request line")]
    RequestLine,
    /// A header line is not `name: value` of allowed bytes.
    #[error("bad header line")]
    HeaderLine,
    /// HTTP/1.1 without a `Host`, or a header the server needs twice.
    #[error("missing or repeated Host, or a repeated Authorization")]
    Repeated,
    /// A body is announced (`Content-Length` above 0, `Transfer-Encoding`).
    #[error("request bodies are not accepted")]
    Body,
}

/// Where the head ends in `buf`: the index just past its blank line
/// (`\r\n\r\n`), if it is there.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a request head: `buf` holds it whole, up to its blank line
/// (what follows the first `\r\n\r\n` is ignored; without one, the head
/// is taken to end with `buf`).
pub fn parse_head(buf: &[u8]) -> Result<Head, HeadError> {
    let end = head_end(buf).map_or(buf.len(), |e| e - 4);
    if end + 4 > MAX_HEAD {
        return Err(HeadError::TooLarge);
    }
    let mut head = &buf[..end];
    // A server should skip empty lines before the request line (RFC 9112
    // 2.2).
    while let Some(rest) = head.strip_prefix(b"\r\n") {
        head = rest;
    }
    let lines = split_lines(head)?;
    let Some((request_line, headers)) = lines.split_first() else {
        return Err(HeadError::RequestLine);
    };
    let (method, path, query, minor) = request_line_parts(request_line)?;
    let mut parsed = Head {
        method,
        path,
        query,
        minor,
        host: None,
        authorization: None,
    };
    let mut hosts = 0;
    for line in headers {
        let (name, value) = header(line)?;
        if name.eq_ignore_ascii_case("host") {
            hosts += 1;
            parsed.host = Some(value.to_owned());
        } else if name.eq_ignore_ascii_case("authorization") {
            if parsed.authorization.is_some() {
                return Err(HeadError::Repeated);
            }
            parsed.authorization = Some(value.to_owned());
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            || (name.eq_ignore_ascii_case("content-length") && value != "0")
        {
            return Err(HeadError::Body);
        }
    }
    if hosts > 1 || (minor == 1 && hosts == 0) {
        return Err(HeadError::Repeated);
    }
    Ok(parsed)
}

/// The lines of `head` (its blank line cut), each stripped of its
/// `\r\n`: every line must end with `\r\n` but the last. At most the
/// request line and [`MAX_HEADERS`] header lines.
fn split_lines(head: &[u8]) -> Result<Vec<&[u8]>, HeadError> {
    let mut out = Vec::new();
    let mut parts = head.split(|&b| b == b'\n').peekable();
    while let Some(part) = parts.next() {
        let line = if parts.peek().is_some() {
            part.strip_suffix(b"\r").ok_or(HeadError::HeaderLine)?
        } else {
            part
        };
        if out.len() > MAX_HEADERS {
            return Err(HeadError::TooManyHeaders);
        }
        out.push(line);
    }
    Ok(out)
}

/// `METHOD SP /target SP HTTP/1.x`.
fn request_line_parts(line: &[u8]) -> Result<(String, String, Option<String>, u8), HeadError> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::RequestLine);
    };
    if method.is_empty() || method.len() > MAX_METHOD || !method.iter().all(|&b| tchar(b)) {
        return Err(HeadError::RequestLine);
    }
    let minor = match version {
        b"HTTP/1.1" => 1,
        b"HTTP/1.0" => 0,
        _ => return Err(HeadError::RequestLine),
    };
    if target.first() != Some(&b'/') || !target.iter().all(|&b| (0x21..=0x7e).contains(&b)) {
        return Err(HeadError::RequestLine);
    }
    // Visible ASCII only: the target is valid UTF-8.
    let target = String::from_utf8_lossy(target);
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (target.into_owned(), None),
    };
    Ok((
        String::from_utf8_lossy(method).into_owned(),
        path,
        query,
        minor,
    ))
}

/// `name ":" OWS value OWS`: a token name, a value of visible ASCII,
/// spaces and tabs (bytes above 0x7e are refused: no header the server
/// reads needs them).
fn header(line: &[u8]) -> Result<(&str, &str), HeadError> {
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HeadError::HeaderLine)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| tchar(b)) {
        return Err(HeadError::HeaderLine);
    }
    if !value
        .iter()
        .all(|&b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
    {
        return Err(HeadError::HeaderLine);
    }
    let value = value.trim_ascii();
    // Both are ASCII by now.
    let name = std::str::from_utf8(name).map_err(|_| HeadError::HeaderLine)?;
    let value = std::str::from_utf8(value).map_err(|_| HeadError::HeaderLine)?;
    Ok((name, value))
}

/// A `tchar` of RFC 9110: the bytes of a method or a header name.
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether `host` (a `Host` header) names this server on loopback: the
/// bound address itself, `localhost`, an address of 127.0.0.0/8 or
/// `[::1]`, each with the bound port (a missing port is 80). Anything
/// else, a name that some DNS answers with 127.0.0.1 among them, is how a
/// DNS-rebinding page would reach the server from a browser.
pub fn host_is_local(host: Option<&str>, bound: SocketAddr) -> bool {
    let Some(host) = host else { return false };
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(p),
                None => return false,
            },
        };
        let Ok(ip) = v6.parse::<Ipv6Addr>() else {
            return false;
        };
        (Name::Ip(IpAddr::V6(ip)), port)
    } else {
        let (n, port) = match host.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        };
        let name = if n.eq_ignore_ascii_case("localhost") {
            Name::Localhost
        } else if let Ok(ip) = n.parse::<Ipv4Addr>() {
            Name::Ip(IpAddr::V4(ip))
        } else {
            return false;
        };
        (name, port)
    };
    let port = match port {
        None => 80,
        // Digits without a leading zero: one spelling per port.
        Some(p)
            if !p.is_empty()
                && p.len() <= 5
                && !p.starts_with('0')
                && p.bytes().all(|b| b.is_ascii_digit()) =>
        {
            match p.parse::<u16>() {
                Ok(p) => p,
                Err(_) => return false,
            }
        }
        Some(_) => return false,
    };
    if port != bound.port() {
        return false;
    }
    match name {
        Name::Localhost => true,
        Name::Ip(ip) => ip.is_loopback() || ip == bound.ip(),
    }
}

enum Name {
    Localhost,
    Ip(IpAddr),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> Head {
        parse_head(raw.as_bytes()).unwrap_or_else(|e| panic!("{raw:?}: {e}"))
    }

    #[test]
    fn a_plain_get_is_read() {
        let h = ok(
            "GET /api/status?token=a%2Bb HTTP/1.1\r\nHost: 127.0.0.1:9898\r\n\
                    Authorization: Bearer s3cret \r\nAccept: */*\r\n\r\n",
        );
        assert_eq!(h.method, "GET");
        assert_eq!(h.path, "/api/status");
        assert_eq!(h.query.as_deref(), Some("token=a%2Bb"));
        assert_eq!(h.minor, 1);
        assert_eq!(h.host.as_deref(), Some("127.0.0.1:9898"));
        assert_eq!(h.authorization.as_deref(), Some("Bearer s3cret"));
        let h = ok("\r\nHEAD / HTTP/1.0\r\n\r\n");
        assert_eq!((h.method.as_str(), h.minor, h.host), ("HEAD", 0, None));
        // Without its blank line, the head ends with the bytes.
        assert_eq!(ok("GET / HTTP/1.1\r\nHost: x").host.as_deref(), Some("x"));
    }

    #[test]
    fn malformed_heads_are_refused() {
        for (raw, want) in [
            ("", HeadError::RequestLine),
            ("GET\r\n\r\n", HeadError::RequestLine),
            ("GET / HTTP/2\r\nHost: x\r\n\r\n", HeadError::RequestLine),
            ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", HeadError::RequestLine),
            (
                "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n",
                HeadError::RequestLine,
            ),
            (
                "GET /\u{e9} HTTP/1.1\r\nHost: x\r\n\r\n",
                HeadError::RequestLine,
            ),
            ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", HeadError::RequestLine),
            ("GET / HTTP/1.1\r\n\r\n", HeadError::Repeated),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
                HeadError::Repeated,
            ),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: a\r\nauthorization: b\r\n\r\n",
                HeadError::Repeated,
            ),
            ("GET / HTTP/1.1\nHost: x\r\n\r\n", HeadError::HeaderLine),
            (
                "GET / HTTP/1.1\r\nHost: x\nA: b\r\n\r\n",
                HeadError::HeaderLine,
            ),
            (
                "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
                HeadError::HeaderLine,
            ),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", HeadError::HeaderLine),
            (
                "GET / HTTP/1.1\r\nHost: \u{e9}\r\n\r\n",
                HeadError::HeaderLine,
            ),
            (
                "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n",
                HeadError::HeaderLine,
            ),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
                HeadError::Body,
            ),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                HeadError::Body,
            ),
        ] {
            assert_eq!(parse_head(raw.as_bytes()), Err(want), "{raw:?}");
        }
        assert!(parse_head(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").is_ok());
        let many = format!("GET / HTTP/1.1\r\nHost: x\r\n{}\r\n", "A: b\r\n".repeat(64));
        assert_eq!(parse_head(many.as_bytes()), Err(HeadError::TooManyHeaders));
        let big = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(parse_head(big.as_bytes()), Err(HeadError::TooLarge));
    }

    #[test]
    fn the_head_ends_at_its_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.0\r\n\r\nrest"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.0\r\n\r"), None);
    }

    #[test]
    fn only_this_machine_s_names_are_local() {
        let bound: SocketAddr = "127.0.0.1:9898".parse().unwrap();
        for host in [
            "127.0.0.1:9898",
            "localhost:9898",
            "LocalHost:9898",
            "127.5.6.7:9898",
            "[::1]:9898",
        ] {
            assert!(host_is_local(Some(host), bound), "{host}");
        }
        for host in [
            "evil.example:9898",
            "127.0.0.1.nip.io:9898",
            "localhost.evil.example:9898",
            "127.0.0.1:9899",
            "127.0.0.1",
            "127.0.0.1:",
            "127.0.0.1:+9898",
            "127.0.0.1:09898x",
            "127.0.0.1:09898",
            "127.0.0.1:99999",
            "[::1]9898",
            "[::1",
            "10.0.0.1:9898",
            "",
        ] {
            assert!(!host_is_local(Some(host), bound), "{host}");
        }
        assert!(!host_is_local(None, bound));
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert!(host_is_local(Some("[::1]"), v6));
        assert!(host_is_local(Some("localhost"), v6));
        let other: SocketAddr = "192.168.1.5:80".parse().unwrap();
        assert!(host_is_local(Some("192.168.1.5"), other));
    }
}
