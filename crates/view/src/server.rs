//! The HTTP server of the metrics and the status page: `GET /metrics`,
//! `GET /` (the page), `GET /api/status` (its JSON). Read-only. An address
//! outside loopback is refused unless the operator allows it, and the
//! status page then needs a token (`Authorization: Bearer …` or
//! `?token=…`, compared in constant time).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::debug;

use crate::page::PAGE;

/// Connections served at once.
const MAX_CONNECTIONS: usize = 32;

/// What the server shows.
pub trait Source: Send + Sync + 'static {
    /// The JSON of `/api/status`.
    fn status(&self) -> serde_json::Value;
    /// The text of `/metrics` (Prometheus format).
    fn metrics(&self) -> String;
}

/// One listening address and what it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// Where.
    pub addr: SocketAddr,
    /// Serve `/metrics`.
    pub metrics: bool,
    /// Serve the status page and `/api/status`.
    pub status: bool,
    /// The token every request must carry, if any.
    pub token: Option<String>,
}

/// An address the server may not, or cannot, listen on.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Outside loopback without the operator's say-so.
    #[error("{flag} {addr} is not a loopback address; add --listen-public to serve other machines")]
    NotLoopback {
        /// The option.
        flag: &'static str,
        /// The address.
        addr: SocketAddr,
    },
    /// The status page outside loopback without a token.
    #[error("--status {0} is reachable from other machines: give --status-token too")]
    NoToken(SocketAddr),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl Listen {
    /// Checks the bind rules: loopback, or `public` (and then a token for
    /// the status page).
    pub fn check(&self, public: bool) -> Result<(), BindError> {
        if self.addr.ip().is_loopback() {
            return Ok(());
        }
        if !public {
            let flag = if self.status { "--status" } else { "--metrics" };
            return Err(BindError::NotLoopback {
                flag,
                addr: self.addr,
            });
        }
        if self.status && self.token.as_deref().is_none_or(str::is_empty) {
            return Err(BindError::NoToken(self.addr));
        }
        Ok(())
    }

    /// Binds the address (before anything else is started, so that a
    /// port in use is a clear error).
    pub fn bind(&self) -> Result<std::net::TcpListener, BindError> {
        let bound = std::net::TcpListener::bind(self.addr).map_err(|source| BindError::Bind {
            addr: self.addr,
            source,
        })?;
        bound
            .set_nonblocking(true)
            .map_err(|source| BindError::Bind {
                addr: self.addr,
                source,
            })?;
        Ok(bound)
    }
}

/// Serves `listen` on `bound` (from [`Listen::bind`]) until the task is
/// dropped or aborted.
pub fn serve(
    bound: std::net::TcpListener,
    listen: Listen,
    source: Arc<dyn Source>,
) -> std::io::Result<JoinHandle<()>> {
    let listener = TcpListener::from_std(bound)?;
    let listen = Arc::new(listen);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    Ok(tokio::spawn(async move {
        loop {
            // Connections share the process's descriptors with the crawl:
            // a few at a time, the others wait in the kernel's queue.
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, most likely: not in a tight loop.
                    debug!(error = %e, "status server cannot accept");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (listen, source) = (listen.clone(), source.clone());
            tokio::spawn(async move {
                let _slot = slot;
                let service = service_fn(move |req| {
                    let response = answer(&listen, source.as_ref(), &req);
                    async move { Ok::<_, Infallible>(response) }
                });
                // A client that sends its head slowly is let go.
                if let Err(e) = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(std::time::Duration::from_secs(10))
                    .max_buf_size(64 * 1024)
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    debug!(error = %e, "status connection ended with an error");
                }
            });
        }
    }))
}

fn answer(listen: &Listen, source: &dyn Source, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "read-only: GET only\n");
    }
    if let Some(token) = &listen.token
        && !carries(req, token)
    {
        return plain(
            StatusCode::UNAUTHORIZED,
            "a token is needed: ?token=… or Authorization: Bearer …\n",
        );
    }
    match req.uri().path() {
        "/metrics" if listen.metrics => typed(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            source.metrics(),
        ),
        "/" if listen.status => typed(StatusCode::OK, "text/html; charset=utf-8", PAGE.to_owned()),
        "/api/status" if listen.status => typed(
            StatusCode::OK,
            "application/json",
            source.status().to_string(),
        ),
        _ => plain(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// Whether the request carries `token`, as a bearer token or a query
/// parameter; compared in constant time.
fn carries(req: &Request<Incoming>, token: &str) -> bool {
    let bearer = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
        return true;
    }
    let query = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")));
    query.is_some_and(|given| same(&percent_decoded(given), token.as_bytes()))
}

/// A query value with `%XX` escapes and `+` decoded.
fn percent_decoded(v: &str) -> Vec<u8> {
    let b = v.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let (Some(Some(h)), Some(Some(l))) =
                (b.get(i + 1).map(|c| hex(*c)), b.get(i + 2).map(|c| hex(*c)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    out
}

/// Equal bytes, in a time that depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

fn typed(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; \
             script-src 'unsafe-inline'; img-src data:",
        ),
    );
    r
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    typed(status, "text/plain; charset=utf-8", text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen(addr: &str, status: bool, token: Option<&str>) -> Listen {
        Listen {
            addr: addr.parse().unwrap(),
            metrics: !status,
            status,
            token: token.map(str::to_owned),
        }
    }

    #[test]
    fn loopback_is_free_elsewhere_needs_a_flag_and_the_page_a_token() {
        assert!(listen("127.0.0.1:9898", true, None).check(false).is_ok());
        assert!(listen("[::1]:9898", true, None).check(false).is_ok());
        assert!(matches!(
            listen("0.0.0.0:9898", false, None).check(false),
            Err(BindError::NotLoopback {
                flag: "--metrics",
                ..
            })
        ));
        assert!(listen("0.0.0.0:9898", false, None).check(true).is_ok());
        assert!(matches!(
            listen("10.0.0.1:80", true, None).check(true),
            Err(BindError::NoToken(_))
        ));
        assert!(matches!(
            listen("10.0.0.1:80", true, Some("")).check(true),
            Err(BindError::NoToken(_))
        ));
        assert!(
            listen("10.0.0.1:80", true, Some("s3cret"))
                .check(true)
                .is_ok()
        );
    }

    #[test]
    fn query_tokens_are_percent_decoded() {
        assert_eq!(percent_decoded("a%2Bb%3D%3D"), b"a+b==");
        assert_eq!(percent_decoded("a+b"), b"a b");
        assert_eq!(percent_decoded("%zz%4"), b"%zz%4");
        assert_eq!(percent_decoded("%"), b"%");
        assert_eq!(percent_decoded("%41"), b"A");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"ab", b"abc"));
        assert!(!same(b"abc", b"ab"));
        assert!(!same(b"", b"a"));
        assert!(same(b"", b""));
    }
}
