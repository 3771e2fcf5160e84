//! A plain HTTP GET on loopback, for the tests of what the binary serves.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// A loopback address no one listens on now.
pub fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// `GET path` at `addr`: status and body, or `None` when nothing answers.
pub fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// Polls `GET path` until `check` holds for a 200 body, within `limit`.
pub async fn wait_for(
    addr: SocketAddr,
    path: &str,
    limit: Duration,
    check: impl Fn(&str) -> bool,
) -> String {
    let end = tokio::time::Instant::now() + limit;
    loop {
        if let Some((200, body)) = tokio::task::block_in_place(|| get(addr, path))
            && check(&body)
        {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "{path} at {addr} did not show what was awaited within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Serves `html` as a 200 `text/html` page at every path but
/// `/robots.txt` (404) on a loopback port of its own, for as long as the
/// test runs: a page the test site does not have (hostile values).
pub fn serve_page(html: &str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let html = html.to_owned();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head);
            let robots = head.starts_with("GET /robots.txt ");
            let (status, body) = if robots {
                ("404 Not Found", "")
            } else {
                ("200 OK", html.as_str())
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}
