//! The DevTools protocol over Chromium's pipe (`--remote-debugging-pipe`):
//! commands written to the browser's fd 3, answers and events read from
//! its fd 4, each message a JSON object ended by a NUL byte.
//!
//! A pipe, not a WebSocket: no port is opened that another local process
//! (or a page, through a request the crawler failed to catch) could
//! reach, and the browser ends when its pipe closes. One reader task owns
//! the incoming side: it hands each answer to the call waiting for it and
//! each event to the tab (session) it belongs to. What the browser sends
//! is read as hostile too: a message over [`MAX_MESSAGE`] is skipped, one
//! that does not parse is dropped, neither stops the reader.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot};

use crate::RenderError;

/// The largest message read from the browser; a longer one is skipped
/// whole. A page's DOM comes back in one message and is capped below this
/// by the expression that reads it ([`crate::MAX_DOM_CHARS`]).
pub const MAX_MESSAGE: usize = 64 << 20;

/// An event the browser sent to a session.
#[derive(Debug)]
pub(crate) struct Event {
    /// The session it came on.
    pub session: String,
    /// The protocol method, `Domain.event`.
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

/// What an answer to a command was.
type Answer = Result<Value, RenderError>;

/// Where answers and events go.
#[derive(Default)]
struct Routes {
    closed: bool,
    pending: HashMap<u64, oneshot::Sender<Answer>>,
    sessions: HashMap<String, mpsc::UnboundedSender<Event>>,
}

/// One connection to one browser.
pub(crate) struct Connection {
    /// Whole messages to the writer task: a call given up (its page done,
    /// its deadline passed) never leaves half a message in the pipe.
    writer: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
    routes: Arc<Mutex<Routes>>,
}

#[derive(Deserialize)]
struct Incoming {
    id: Option<u64>,
    method: Option<String>,
    #[serde(default)]
    params: Value,
    result: Option<Value>,
    error: Option<ProtocolError>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct ProtocolError {
    #[serde(default)]
    message: String,
}

impl Connection {
    /// A connection over the two pipe ends, and its reader started.
    pub(crate) fn start(writer: pipe::Sender, reader: pipe::Receiver) -> Arc<Self> {
        let routes = Arc::new(Mutex::new(Routes::default()));
        tokio::spawn(read_loop(reader, routes.clone()));
        let (to_writer, messages) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(writer, messages, routes.clone()));
        Arc::new(Self {
            writer: to_writer,
            next_id: AtomicU64::new(1),
            routes,
        })
    }

    /// True once the browser's side of the pipe ended.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.routes).closed
    }

    /// Sends the events of `session` to `to` from now on.
    pub(crate) fn route(&self, session: &str, to: mpsc::UnboundedSender<Event>) {
        let mut routes = lock(&self.routes);
        if !routes.closed {
            routes.sessions.insert(session.to_owned(), to);
        }
    }

    /// Stops sending `session`'s events anywhere.
    pub(crate) fn unroute(&self, session: &str) {
        lock(&self.routes).sessions.remove(session);
    }

    /// Sends `method` with `params` (to `session`, or to the browser) and
    /// waits at most `within` for its answer.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Result<Value, RenderError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = serde_json::json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = Value::String(s.to_owned());
        }
        let mut bytes = serde_json::to_vec(&message)
            .map_err(|e| RenderError::Protocol(format!("{method}: {e}")))?;
        bytes.push(0);
        let (tx, rx) = oneshot::channel();
        {
            let mut routes = lock(&self.routes);
            if routes.closed {
                return Err(RenderError::BrowserGone);
            }
            routes.pending.insert(id, tx);
        }
        if self.writer.send(bytes).is_err() {
            lock(&self.routes).pending.remove(&id);
            return Err(RenderError::BrowserGone);
        }
        match tokio::time::timeout(within, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RenderError::BrowserGone),
            Err(_) => {
                lock(&self.routes).pending.remove(&id);
                Err(RenderError::Unresponsive(method.to_owned()))
            }
        }
    }
}

fn lock(routes: &Mutex<Routes>) -> std::sync::MutexGuard<'_, Routes> {
    // A panic while routing leaves the maps as they were: still usable.
    routes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes each message whole, in order; a write that fails closes the
/// connection (every waiting call fails).
async fn write_loop(
    mut writer: pipe::Sender,
    mut messages: mpsc::UnboundedReceiver<Vec<u8>>,
    routes: Arc<Mutex<Routes>>,
) {
    while let Some(m) = messages.recv().await {
        if writer.write_all(&m).await.is_err() {
            break;
        }
    }
    close(&routes);
}

/// Marks the connection closed: every waiting call fails, every
/// session's stream ends.
fn close(routes: &Mutex<Routes>) {
    let mut r = lock(routes);
    r.closed = true;
    for (_, waiting) in r.pending.drain() {
        let _ = waiting.send(Err(RenderError::BrowserGone));
    }
    r.sessions.clear();
}

/// Reads messages until the browser's side closes, then fails every
/// waiting call and ends every session's stream.
async fn read_loop(mut reader: pipe::Receiver, routes: Arc<Mutex<Routes>>) {
    let mut splitter = Splitter::default();
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        splitter.push(&chunk[..n], |message| dispatch(message, &routes));
    }
    close(&routes);
}

/// Cuts the byte stream into NUL-ended messages, skipping any longer than
/// [`MAX_MESSAGE`].
#[derive(Default)]
struct Splitter {
    buf: Vec<u8>,
    /// Inside a message too long to keep: drop bytes up to its end.
    skipping: bool,
}

impl Splitter {
    fn push(&mut self, bytes: &[u8], mut each: impl FnMut(&[u8])) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let end = rest.iter().position(|b| *b == 0);
            if self.skipping {
                match end {
                    Some(i) => {
                        self.skipping = false;
                        rest = &rest[i + 1..];
                    }
                    None => return,
                }
                continue;
            }
            match end {
                Some(i) => {
                    if self.buf.is_empty() {
                        each(&rest[..i]);
                    } else if self.buf.len() + i <= MAX_MESSAGE {
                        self.buf.extend_from_slice(&rest[..i]);
                        each(&self.buf);
                        self.buf.clear();
                    } else {
                        tracing::warn!("a DevTools message over {MAX_MESSAGE} bytes was skipped");
                        self.buf.clear();
                    }
                    rest = &rest[i + 1..];
                }
                None => {
                    if self.buf.len() + rest.len() > MAX_MESSAGE {
                        tracing::warn!("a DevTools message over {MAX_MESSAGE} bytes was skipped");
                        self.buf = Vec::new();
                        self.skipping = true;
                    } else {
                        self.buf.extend_from_slice(rest);
                    }
                    return;
                }
            }
        }
    }
}

/// Hands one message to the call or the session it is for.
fn dispatch(message: &[u8], routes: &Mutex<Routes>) {
    let incoming: Incoming = match serde_json::from_slice(message) {
        Ok(m) => m,
        Err(e) => {
            tracing::debug!(error = %e, "unreadable DevTools message dropped");
            return;
        }
    };
    let mut r = lock(routes);
    if let Some(id) = incoming.id {
        if let Some(waiting) = r.pending.remove(&id) {
            let answer = match incoming.error {
                Some(e) => Err(RenderError::Protocol(e.message)),
                None => Ok(incoming.result.unwrap_or(Value::Null)),
            };
            let _ = waiting.send(answer);
        }
        return;
    }
    let Some(method) = incoming.method else {
        return;
    };
    // A detach is told to the browser; the session it ends hears of it.
    let session = match (&incoming.session_id, method.as_str()) {
        (None, "Target.detachedFromTarget") => incoming
            .params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        (s, _) => s.clone(),
    };
    let Some(session) = session else {
        return;
    };
    let Some(to) = r.sessions.get(&session) else {
        return;
    };
    let event = Event {
        session: session.clone(),
        method,
        params: incoming.params,
    };
    if to.send(event).is_err() {
        r.sessions.remove(&session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, |m| out.push(m.to_vec()));
        }
        out
    }

    #[test]
    fn messages_are_cut_at_nul_across_reads() {
        let out = split(&[b"{\"a\":1}\0{\"b\"", b":2}\0{\"c\":3}", b"\0"]);
        assert_eq!(
            out,
            vec![
                b"{\"a\":1}".to_vec(),
                b"{\"b\":2}".to_vec(),
                b"{\"c\":3}".to_vec()
            ]
        );
    }

    #[test]
    fn a_message_over_the_limit_is_skipped_and_the_next_one_read() {
        let big = vec![b'x'; MAX_MESSAGE / 2 + 1];
        let out = split(&[&big, &big, &big, b"\0{\"ok\":1}\0"]);
        assert_eq!(out, vec![b"{\"ok\":1}".to_vec()]);
    }

    #[test]
    fn answers_reach_their_call_and_events_their_session() {
        let routes = Mutex::new(Routes::default());
        let (tx, mut rx) = oneshot::channel();
        lock(&routes).pending.insert(7, tx);
        let (etx, mut erx) = mpsc::unbounded_channel();
        lock(&routes).sessions.insert("S".into(), etx);
        dispatch(br#"{"id":7,"result":{"x":1}}"#, &routes);
        dispatch(
            br#"{"method":"Page.loadEventFired","params":{},"sessionId":"S"}"#,
            &routes,
        );
        dispatch(
            br#"{"method":"Page.loadEventFired","params":{},"sessionId":"T"}"#,
            &routes,
        );
        dispatch(b"not json at all", &routes);
        dispatch(br#"{"id":"seven"}"#, &routes);
        assert_eq!(rx.try_recv().unwrap().unwrap()["x"], 1);
        let e = erx.try_recv().unwrap();
        assert_eq!(
            (e.session.as_str(), e.method.as_str()),
            ("S", "Page.loadEventFired")
        );
        assert!(
            erx.try_recv().is_err(),
            "another session's event is not ours"
        );
    }

    #[test]
    fn a_protocol_error_is_the_calls_error() {
        let routes = Mutex::new(Routes::default());
        let (tx, mut rx) = oneshot::channel();
        lock(&routes).pending.insert(1, tx);
        dispatch(
            br#"{"id":1,"error":{"code":-32000,"message":"No target"}}"#,
            &routes,
        );
        let e = rx.try_recv().unwrap().unwrap_err();
        assert!(matches!(e, RenderError::Protocol(m) if m == "No target"));
    }
}
