//! A server that misbehaves on purpose, for the hostile-input tests: each
//! path answers with a script of raw bytes and pauses (lying headers,
//! bodies trickled or cut, bombs, garbage), written straight to the socket
//! so nothing between the script and the crawler tidies it up. Listens on a
//! loopback address only, logs every request target, and closes each
//! connection at the end of its script.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The most of a request head read before it is answered anyway.
const MAX_REQUEST_HEAD: usize = 64 * 1024;

/// One step of a scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes at once.
    Send(Vec<u8>),
    /// Write these bytes one at a time, pausing between them.
    Trickle(Vec<u8>, Duration),
    /// Pause.
    Wait(Duration),
    /// Keep the connection open and silent until the client leaves.
    Hang,
}

/// What a path answers: steps run in order, then the connection closes.
#[derive(Debug, Clone, Default)]
pub struct Script(pub Vec<Step>);

impl Script {
    /// A complete HTTP/1.1 response: status line, `headers` as given, a
    /// `Content-Length` matching the body unless `headers` set one (or
    /// `Transfer-Encoding`), `Connection: close`, then the body.
    pub fn response(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        let body = body.into();
        let mut head = head(status, headers);
        let sets_length = headers.iter().any(|(n, _)| {
            n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
        });
        if !sets_length {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&body);
        Self(vec![Step::Send(bytes)])
    }

    /// An HTML page with status 200.
    pub fn html(body: impl Into<Vec<u8>>) -> Self {
        Self::response(200, &[("Content-Type", "text/html; charset=utf-8")], body)
    }

    /// Only the status line and `headers` (no blank line after them): the
    /// rest is up to the steps that follow.
    pub fn head_only(status: u16, headers: &[(&str, &str)]) -> Self {
        Self(vec![Step::Send(head(status, headers).into_bytes())])
    }

    /// Bytes exactly as given.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self(vec![Step::Send(bytes.into())])
    }

    /// This script followed by `step`.
    pub fn then(mut self, step: Step) -> Self {
        self.0.push(step);
        self
    }
}

/// `n` zero bytes compressed with `encoding` (`gzip`, `deflate` or `br`):
/// a small body that inflates past any sane limit.
pub fn bomb(encoding: &str, n: usize) -> Vec<u8> {
    use std::io::Write;
    let zeros = vec![0u8; 1 << 20];
    let write_all = |w: &mut dyn Write| {
        for _ in 0..n / zeros.len() {
            w.write_all(&zeros).expect("in memory");
        }
        w.write_all(&zeros[..n % zeros.len()]).expect("in memory");
    };
    match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            write_all(&mut e);
            e.finish().expect("in memory")
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            write_all(&mut e);
            e.finish().expect("in memory")
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 1 << 16, 9, 22);
                write_all(&mut e);
            }
            out
        }
        other => panic!("no bomb for encoding {other}"),
    }
}

fn head(status: u16, headers: &[(&str, &str)]) -> String {
    let mut head = format!("HTTP/1.1 {status} Scripted\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head
}

/// A running hostile server.
pub struct HostileServer {
    addr: SocketAddr,
    log: Arc<Log>,
    task: JoinHandle<()>,
}

/// The request targets received, and a signal for each new one.
#[derive(Default)]
struct Log {
    targets: Mutex<Vec<String>>,
    /// Each request's head (request line and headers) as received.
    heads: Mutex<Vec<String>>,
    arrived: Notify,
}

impl HostileServer {
    /// Serves `routes` (exact request targets, e.g. `/robots.txt` or
    /// `/a?x=1`) on `ip`, a loopback address, at a free port; any other
    /// target gets a 404.
    pub async fn start(ip: Ipv4Addr, routes: Vec<(&str, Script)>) -> std::io::Result<Self> {
        assert!(
            ip.is_loopback(),
            "the hostile server listens on loopback only"
        );
        let listener = TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let routes: Arc<HashMap<String, Script>> = Arc::new(
            routes
                .into_iter()
                .map(|(path, script)| (path.to_owned(), script))
                .collect(),
        );
        let log = Arc::new(Log::default());
        let task_log = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (routes, log) = (routes.clone(), task_log.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &routes, &log).await;
                });
            }
        });
        Ok(Self { addr, log, task })
    }

    /// `http://ip:port`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The absolute URL of `target` on this server.
    pub fn url(&self, target: &str) -> String {
        format!("{}{target}", self.origin())
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request target received, in order.
    pub fn requests(&self) -> Vec<String> {
        self.log.targets.lock().expect("log lock").clone()
    }

    /// Waits until `target` was requested `n` times (bound it with a
    /// timeout).
    pub async fn requested(&self, target: &str, n: usize) {
        loop {
            let arrived = self.log.arrived.notified();
            if self.count(target) >= n {
                return;
            }
            arrived.await;
        }
    }

    /// Waits until `n` requests were received, whatever their targets
    /// (bound it with a timeout).
    pub async fn received(&self, n: usize) {
        loop {
            let arrived = self.log.arrived.notified();
            if self.requests().len() >= n {
                return;
            }
            arrived.await;
        }
    }

    /// Every request's head (request line and headers, as received), in
    /// order.
    pub fn heads(&self) -> Vec<String> {
        self.log.heads.lock().expect("log lock").clone()
    }

    /// How many times `target` was requested.
    pub fn count(&self, target: &str) -> usize {
        self.requests().iter().filter(|t| *t == target).count()
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    routes: &HashMap<String, Script>,
    log: &Log,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let target = String::from_utf8_lossy(line)
        .split(' ')
        .nth(1)
        .unwrap_or("")
        .to_owned();
    log.heads
        .lock()
        .expect("log lock")
        .push(String::from_utf8_lossy(&head).into_owned());
    log.targets.lock().expect("log lock").push(target.clone());
    log.arrived.notify_waiters();
    let not_found = Script::response(404, &[("Content-Type", "text/plain")], "not found");
    let script = routes.get(&target).unwrap_or(&not_found);
    for step in &script.0 {
        match step {
            Step::Send(bytes) => stream.write_all(bytes).await?,
            Step::Trickle(bytes, every) => {
                for b in bytes {
                    stream.write_all(std::slice::from_ref(b)).await?;
                    tokio::time::sleep(*every).await;
                }
            }
            Step::Wait(d) => tokio::time::sleep(*d).await,
            Step::Hang => {
                // Until the client closes: reads return 0 or fail.
                while stream.read(&mut buf).await? > 0 {}
                return Ok(());
            }
        }
    }
    stream.shutdown().await
}
