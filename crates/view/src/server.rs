//! The HTTP server of the metrics and the status page: `GET /metrics`,
//! `GET /` (the page), `GET /api/status` (its JSON). Read-only. An address
//! outside loopback is refused unless the operator allows it, and the
//! status page then needs a token (`Authorization: Bearer …` or
//! `?token=…`, compared in constant time). Unless other machines are
//! meant to reach it, only requests naming this machine in their `Host`
//! are answered (DNS rebinding). One request per connection, its head
//! read within [`HEAD_DEADLINE`]; idle connections give way to new ones.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};
use tracing::debug;

use crate::head::{Head, HeadError, MAX_HEAD, head_end, host_is_local, parse_head};
use crate::status_page::PAGE;

/// Connections open at once; past it, a new one evicts the oldest idle
/// one (see [`Open`]). Enough that a browser, a Prometheus and a few
/// `curl`s never meet, few enough to leave the crawl its descriptors.
pub const MAX_CONNECTIONS: usize = 128;
/// The time a connection has to send its whole request head: a scrape
/// on a local network sends it at once.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(3);
/// The time the answer has to be taken by the client.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// How long the client is given to close after the answer.
const LINGER: Duration = Duration::from_secs(1);

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
    /// Other machines are meant to reach it (`--listen-public`): any
    /// `Host` is answered. Otherwise only this machine's names are (the
    /// bound address, `localhost`, 127.0.0.0/8, `[::1]`).
    pub public: bool,
}

/// An address the server may not, or cannot, listen on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    let open = Arc::new(Mutex::new(Open::default()));
    Ok(tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, most likely: not in a tight loop.
                    debug!(error = %e, "status server cannot accept");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let id = lock(&open).admit();
            let (listen, source, open2) = (listen.clone(), source.clone(), open.clone());
            let task = tokio::spawn(async move {
                let _gone = Gone(open2.clone(), id);
                connection(stream, &listen, source.as_ref(), &open2, id).await;
            });
            lock(&open).started(id, task.abort_handle());
        }
    }))
}

/// The open connections, by the order they came in. When
/// [`MAX_CONNECTIONS`] are open, a new one evicts the oldest that is
/// still waiting for its request head (or, when every one is answering,
/// the oldest): a client holding connections open without asking, or
/// asking a byte at a time, cannot keep a scrape out, because the scrape
/// is always the newest and the stragglers go first. [`HEAD_DEADLINE`]
/// bounds what each straggler holds anyway.
#[derive(Default)]
struct Open {
    next: u64,
    conns: BTreeMap<u64, Conn>,
}

struct Conn {
    /// Its request head is read and the answer not yet written.
    answering: bool,
    abort: Option<AbortHandle>,
}

impl Open {
    /// Makes room for one more, evicting if full; its id.
    fn admit(&mut self) -> u64 {
        if self.conns.len() >= MAX_CONNECTIONS {
            let victim = self
                .conns
                .iter()
                .find(|(_, c)| !c.answering)
                .or_else(|| self.conns.iter().next())
                .map(|(id, _)| *id);
            if let Some(victim) = victim
                && let Some(c) = self.conns.remove(&victim)
                && let Some(abort) = c.abort
            {
                abort.abort();
            }
        }
        let id = self.next;
        self.next += 1;
        self.conns.insert(
            id,
            Conn {
                answering: false,
                abort: None,
            },
        );
        id
    }

    fn started(&mut self, id: u64, abort: AbortHandle) {
        match self.conns.get_mut(&id) {
            Some(c) => c.abort = Some(abort),
            // Evicted before its task was known (or done already).
            None => abort.abort(),
        }
    }

    fn answering(&mut self, id: u64, answering: bool) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.answering = answering;
        }
    }
}

/// Forgets a connection when its task ends, aborted or not.
struct Gone(Arc<Mutex<Open>>, u64);

impl Drop for Gone {
    fn drop(&mut self) {
        lock(&self.0).conns.remove(&self.1);
    }
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    // Short sections without panics: a poisoned map is still whole.
    open.lock().unwrap_or_else(|p| p.into_inner())
}

/// One connection: one request head read within [`HEAD_DEADLINE`], one
/// answer, then closed.
async fn connection(
    mut stream: TcpStream,
    listen: &Listen,
    source: &dyn Source,
    open: &Mutex<Open>,
    id: u64,
) {
    let head = match tokio::time::timeout(HEAD_DEADLINE, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(e)) => {
            debug!(error = %e, "status connection ended before its head");
            return;
        }
        Err(_) => {
            debug!("status connection let go: no request head in time");
            return;
        }
    };
    lock(open).answering(id, true);
    let reply = match head {
        Ok(head) => answer(listen, source, &head),
        Err(e) => {
            let code = if matches!(e, HeadError::TooLarge | HeadError::TooManyHeaders) {
                (431, "Request Header Fields Too Large")
            } else {
                (400, "Bad Request")
            };
            Reply::text(code, &format!("{e}\n"), true)
        }
    };
    let bytes = reply.bytes();
    let written = tokio::time::timeout(WRITE_DEADLINE, async {
        stream.write_all(&bytes).await?;
        stream.shutdown().await
    })
    .await;
    lock(open).answering(id, false);
    if !matches!(written, Ok(Ok(()))) {
        debug!("status connection ended while answering");
        return;
    }
    // Read what the client sent past its head until it closes, for a
    // moment, so that closing with unread bytes does not reset the
    // connection before the client has read the answer.
    let _ = tokio::time::timeout(LINGER, async {
        let mut sink = [0u8; 4096];
        let mut left = MAX_HEAD * 4;
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// Reads up to the end of a request head (at most [`MAX_HEAD`] bytes)
/// and parses it.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Result<Head, HeadError>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        // Search only where the blank line can newly be.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_end(&buf[from..]) {
            return Ok(parse_head(&buf[..from + end]));
        }
        if buf.len() >= MAX_HEAD {
            return Ok(Err(HeadError::TooLarge));
        }
    }
}

/// An answer, written whole.
struct Reply {
    status: (u16, &'static str),
    content_type: &'static str,
    body: Vec<u8>,
    /// A HEAD request: the body's length, not the body.
    head_only: bool,
}

impl Reply {
    fn text(status: (u16, &'static str), text: &str, head_only: bool) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: text.as_bytes().to_vec(),
            head_only,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n\
             cache-control: no-store\r\nx-content-type-options: nosniff\r\n\
             x-frame-options: DENY\r\ncontent-security-policy: default-src 'none'; \
             connect-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
             img-src data:\r\n{}connection: close\r\n\r\n",
            self.status.0,
            self.status.1,
            self.content_type,
            self.body.len(),
            if self.status.0 == 405 {
                "allow: GET, HEAD\r\n"
            } else {
                ""
            },
        )
        .into_bytes();
        if !self.head_only {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

fn answer(listen: &Listen, source: &dyn Source, head: &Head) -> Reply {
    let head_only = head.method == "HEAD";
    if head.method != "GET" && !head_only {
        return Reply::text((405, "Method Not Allowed"), "read-only: GET only\n", false);
    }
    // A browser on a page of another site that its DNS turns into
    // 127.0.0.1 (DNS rebinding) sends that site's name: only this
    // machine's own names are answered, unless other machines are meant
    // to reach the server.
    if !listen.public && !host_is_local(head.host.as_deref(), listen.addr) {
        return Reply::text(
            (421, "Misdirected Request"),
            "this server answers only to its own address or localhost\n",
            head_only,
        );
    }
    if let Some(token) = &listen.token
        && !carries(head, token)
    {
        return Reply::text(
            (401, "Unauthorized"),
            "a token is needed: ?token=… or Authorization: Bearer …\n",
            head_only,
        );
    }
    let typed = |content_type, body: String| Reply {
        status: (200, "OK"),
        content_type,
        body: body.into_bytes(),
        head_only,
    };
    match head.path.as_str() {
        "/metrics" if listen.metrics => {
            typed("text/plain; version=0.0.4; charset=utf-8", source.metrics())
        }
        "/" if listen.status => typed("text/html; charset=utf-8", PAGE.to_owned()),
        "/api/status" if listen.status => typed("application/json", source.status().to_string()),
        _ => Reply::text((404, "Not Found"), "not found\n", head_only),
    }
}

/// Whether the request carries `token`, as a bearer token or a query
/// parameter; compared in constant time.
fn carries(head: &Head, token: &str) -> bool {
    let bearer = head
        .authorization
        .as_deref()
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
        return true;
    }
    let query = head
        .query
        .as_deref()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn listen(addr: &str, status: bool, token: Option<&str>) -> Listen {
        Listen {
            addr: addr.parse().unwrap(),
            metrics: !status,
            status,
            token: token.map(str::to_owned),
            public: false,
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
    fn a_full_house_evicts_its_oldest_idle_connection() {
        let mut open = Open::default();
        for _ in 0..MAX_CONNECTIONS {
            open.admit();
        }
        // The two oldest are answering: the third oldest goes.
        open.answering(0, true);
        open.answering(1, true);
        let id = open.admit();
        assert_eq!(open.conns.len(), MAX_CONNECTIONS);
        assert!(open.conns.contains_key(&id));
        assert!(open.conns.contains_key(&0) && open.conns.contains_key(&1));
        assert!(!open.conns.contains_key(&2));
        // Every one answering: the oldest goes.
        for id in open.conns.keys().copied().collect::<Vec<_>>() {
            open.answering(id, true);
        }
        open.admit();
        assert!(!open.conns.contains_key(&0));
        assert_eq!(open.conns.len(), MAX_CONNECTIONS);
    }

    struct Fixed;

    impl Source for Fixed {
        fn status(&self) -> serde_json::Value {
            serde_json::json!({ "crawls": [] })
        }
        fn metrics(&self) -> String {
            "up 1\n".to_owned()
        }
    }

    fn ask(l: &Listen, raw: &str) -> String {
        let reply = match parse_head(raw.as_bytes()) {
            Ok(h) => answer(l, &Fixed, &h),
            Err(e) => panic!("{raw:?}: {e}"),
        };
        String::from_utf8(reply.bytes()).unwrap()
    }

    #[test]
    fn answers_follow_the_host_rule_then_the_token() {
        let mut l = listen("127.0.0.1:9898", true, Some("s3cret"));
        l.metrics = true;
        let local = "Host: localhost:9898\r\n";
        let got = ask(
            &l,
            &format!("GET /metrics?token=s3cret HTTP/1.1\r\n{local}\r\n"),
        );
        assert!(
            got.starts_with("HTTP/1.1 200 OK\r\n") && got.ends_with("\r\n\r\nup 1\n"),
            "{got}"
        );
        assert!(got.contains("content-length: 5\r\n") && got.contains("connection: close\r\n"));
        let got = ask(&l, &format!("GET /api/status HTTP/1.1\r\n{local}\r\n"));
        assert!(got.starts_with("HTTP/1.1 401 "), "{got}");
        let got = ask(
            &l,
            "GET /api/status HTTP/1.1\r\nHost: evil.example:9898\r\nAuthorization: Bearer s3cret\r\n\r\n",
        );
        assert!(got.starts_with("HTTP/1.1 421 "), "{got}");
        let got = ask(
            &l,
            &format!("HEAD / HTTP/1.1\r\n{local}Authorization: Bearer s3cret\r\n\r\n"),
        );
        assert!(
            got.starts_with("HTTP/1.1 200 ") && got.ends_with("\r\n\r\n"),
            "no body: {got}"
        );
        let got = ask(&l, &format!("DELETE / HTTP/1.1\r\n{local}\r\n"));
        assert!(
            got.starts_with("HTTP/1.1 405 ") && got.contains("allow: GET, HEAD\r\n"),
            "{got}"
        );
        l.public = true;
        let got = ask(
            &l,
            "GET /api/status HTTP/1.1\r\nHost: crawler.example\r\nAuthorization: Bearer s3cret\r\n\r\n",
        );
        assert!(got.starts_with("HTTP/1.1 200 "), "{got}");
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
