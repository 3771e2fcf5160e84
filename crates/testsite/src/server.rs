//! Serving the site: one hyper HTTP/1.1 listener per host, each on its own loopback address.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::header::{
    ACCESS_CONTROL_ALLOW_ORIGIN, CONTENT_ENCODING, CONTENT_TYPE, ETAG, LAST_MODIFIED, LOCATION,
    RETRY_AFTER, USER_AGENT,
};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::HandshakeKind;
use tracing::debug;

use crate::edition::{not_modified, revision, validators};
use crate::log::{LogEntry, RequestLog};
use crate::site::{
    HUGE_BYTES, HostConfig, RobotsMode, Route, SiteConfig, SitemapFile, origin, render_index,
    render_leaf, render_page, render_robots,
};
use crate::tls::{Authority, CertKind};

const HTML: &str = "text/html; charset=utf-8";

/// The loopback address of host `i`: 127.0.0.1, 127.0.0.2, … (250 per
/// /24, then 127.0.1.1 …), so that every host is a host of its own.
pub fn loopback_ip(i: usize) -> std::net::Ipv4Addr {
    let third = u8::try_from(i / 250).expect("at most 64,000 hosts");
    std::net::Ipv4Addr::new(127, 0, third, 1 + (i % 250) as u8)
}

/// A running site. Dropping it stops its listeners.
pub struct TestSite {
    addrs: Vec<SocketAddr>,
    origins: Vec<String>,
    log: RequestLog,
    accept_loops: Vec<JoinHandle<()>>,
    ca_pem: Option<String>,
    shared: Arc<Shared>,
}

struct Shared {
    config: SiteConfig,
    origins: Vec<String>,
    log: RequestLog,
    gzip_page: Bytes,
    huge_page: OnceLock<Bytes>,
    bomb: OnceLock<Bytes>,
    /// The site's edition ([`crate::edition`]).
    edition: AtomicU32,
}

impl TestSite {
    /// Binds every host on its loopback address and starts serving.
    pub async fn start(config: SiteConfig) -> std::io::Result<Self> {
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        let mut origins = Vec::new();
        for (i, host) in config.hosts.iter().enumerate() {
            let ip = loopback_ip(i);
            let listener = TcpListener::bind((ip, host.port.unwrap_or(0))).await?;
            let addr = listener.local_addr()?;
            let name = host.name.clone().unwrap_or_else(|| ip.to_string());
            origins.push(origin(config.tls, &name, addr.port()));
            addrs.push(addr);
            listeners.push(listener);
        }
        // One authority; one acceptor per kind of certificate the hosts
        // present, each for every host's name and address.
        let mut acceptors: Vec<Option<TlsAcceptor>> = vec![None; config.hosts.len()];
        let mut ca_pem = None;
        if config.tls {
            let authority = Authority::new().map_err(std::io::Error::other)?;
            let names: Vec<String> = std::iter::once("localhost".to_owned())
                .chain(config.hosts.iter().filter_map(|h| h.name.clone()))
                .collect();
            let ips: Vec<std::net::IpAddr> = addrs.iter().map(|a| a.ip()).collect();
            let mut made: HashMap<(CertKind, bool), TlsAcceptor> = HashMap::new();
            for (slot, host) in acceptors.iter_mut().zip(&config.hosts) {
                let key = (host.cert, host.http1_only);
                let acceptor = match made.get(&key) {
                    Some(a) => a.clone(),
                    None => {
                        let alpn: &[&[u8]] = if host.http1_only {
                            &[b"http/1.1"]
                        } else {
                            &[b"h2", b"http/1.1"]
                        };
                        let a = authority
                            .acceptor_offering(host.cert, &names, &ips, alpn)
                            .map_err(std::io::Error::other)?;
                        made.insert(key, a.clone());
                        a
                    }
                };
                *slot = Some(acceptor);
            }
            ca_pem = Some(authority.pem().to_owned());
        }
        let log = RequestLog::new(config.hosts.len());
        let shared = Arc::new(Shared {
            gzip_page: gzip(&render_leaf(
                "Compressed",
                "",
                "<a href=\"/from-gzip\">inside the gzip</a>",
            )),
            config,
            origins: origins.clone(),
            log: log.clone(),
            huge_page: OnceLock::new(),
            bomb: OnceLock::new(),
            edition: AtomicU32::new(0),
        });
        let shared_site = shared.clone();
        let accept_loops = listeners
            .into_iter()
            .zip(acceptors)
            .enumerate()
            .map(|(host, (listener, acceptor))| {
                tokio::spawn(accept_loop(listener, host, shared.clone(), acceptor))
            })
            .collect();
        Ok(Self {
            addrs,
            origins,
            log,
            accept_loops,
            ca_pem,
            shared: shared_site,
        })
    }

    /// The socket address of host `i`.
    pub fn addr(&self, i: usize) -> SocketAddr {
        self.addrs[i]
    }

    /// The origin of host `i` as its links write it (`http://127.0.0.2:port`).
    pub fn origin(&self, i: usize) -> &str {
        &self.origins[i]
    }

    /// The URL of `path` on host `i`.
    pub fn url(&self, i: usize, path: &str) -> String {
        format!("{}{path}", self.origins[i])
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.addrs.len()
    }

    /// The request log.
    pub fn log(&self) -> &RequestLog {
        &self.log
    }

    /// Moves the site to `edition`: the pages that change in the editions
    /// up to it are served in their new revision ([`crate::edition`]).
    pub fn set_edition(&self, edition: u32) {
        self.shared.edition.store(edition, Ordering::Relaxed);
    }

    /// The PEM certificate a client must trust, for a site served over TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }
}

impl Drop for TestSite {
    fn drop(&mut self) {
        for l in &self.accept_loops {
            l.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    host: usize,
    shared: Arc<Shared>,
    tls: Option<TlsAcceptor>,
) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let log = shared.log.clone();
        let tls = tls.clone();
        let h2c = shared.config.hosts[host].h2c;
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(respond(&shared, host, peer.ip(), req).await) }
            });
            let served = match tls {
                // HTTP/1.1 or HTTP/2, as the client's ALPN chose.
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => {
                        let kind = stream.get_ref().1.handshake_kind();
                        log.handshake(host, kind == Some(HandshakeKind::Resumed));
                        auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                            .map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                },
                // HTTP/1.1, or HTTP/2 too where the client's preface says so.
                None if h2c => auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                    .map_err(|e| e.to_string()),
                None => http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(e) = served {
                debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

fn html(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    typed(status, HTML, Bytes::from(body))
}

fn typed(status: StatusCode, content_type: &str, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        content_type.parse().expect("static content type"),
    );
    r
}

/// The answer to `req`, its body counted in the log's bytes served.
async fn respond(
    shared: &Shared,
    host: usize,
    peer: std::net::IpAddr,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let r = answer(shared, host, peer, req).await;
    shared
        .log
        .add_bytes(r.body().size_hint().exact().unwrap_or(0));
    r
}

async fn answer(
    shared: &Shared,
    host: usize,
    peer: std::net::IpAddr,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let target = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let user_agent = req
        .headers()
        .get(USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let _in_flight = shared.log.record(LogEntry {
        host,
        target: target.clone(),
        at: Instant::now(),
        wall: std::time::SystemTime::now(),
        user_agent,
        peer,
        version: format!("{:?}", req.version()),
    });
    let config: &HostConfig = &shared.config.hosts[host];
    let route = config.route(&target);
    let delay = config.delay_for(&route);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let me = &shared.origins[host];
    let next = (config.cross_links && shared.origins.len() > 1)
        .then(|| shared.origins[(host + 1) % shared.origins.len()].as_str());
    match route {
        Route::Robots => match config.robots {
            RobotsMode::Rules => typed(StatusCode::OK, "text/plain", render_robots(config).into()),
            RobotsMode::Missing => html(StatusCode::NOT_FOUND, "no robots".into()),
            RobotsMode::Unavailable => html(StatusCode::SERVICE_UNAVAILABLE, "down".into()),
        },
        Route::Index if config.stamped_index => {
            let edition = shared.edition.load(Ordering::Relaxed);
            let page = render_index(config, me, next);
            html(
                StatusCode::OK,
                format!("{page}<!-- edition {edition} -->\n"),
            )
        }
        Route::Index => html(StatusCode::OK, render_index(config, me, next)),
        Route::Page(i) => {
            let edition = shared.edition.load(Ordering::Relaxed);
            let rev = revision(i, edition, config.changed_percent);
            let v = validators(i, rev);
            let mut r = if not_modified(req.headers(), &v) {
                typed(StatusCode::NOT_MODIFIED, HTML, Bytes::new())
            } else {
                html(StatusCode::OK, render_page(config, i, rev, me, next))
            };
            let h = r.headers_mut();
            h.insert(ETAG, v.etag.parse().expect("ASCII entity tag"));
            h.insert(LAST_MODIFIED, v.last_modified.parse().expect("HTTP date"));
            r
        }
        Route::Redirect(status, to) => {
            let mut r = html(
                StatusCode::from_u16(status).expect("valid redirect status"),
                render_leaf(
                    "Moved",
                    "",
                    &format!("<a href=\"/never/redirect-body\">{to}</a>"),
                ),
            );
            r.headers_mut().insert(
                LOCATION,
                to.parse().expect("redirect targets are ASCII paths"),
            );
            r
        }
        Route::Html(links) => {
            let body: String = links
                .iter()
                .map(|l| format!("<a href=\"{l}\">{l}</a>"))
                .collect();
            html(StatusCode::OK, render_leaf("Leaf", "", &body))
        }
        Route::MetaNofollow => html(
            StatusCode::OK,
            render_leaf(
                "No follow",
                "<meta name=\"robots\" content=\"noindex, nofollow\">",
                "<a href=\"/never/meta-nofollow\">x</a>",
            ),
        ),
        Route::Base => html(
            StatusCode::OK,
            render_leaf(
                "Base",
                "<base href=\"/p/\">",
                "<a href=\"2\">page 2 via base</a>",
            ),
        ),
        Route::Product(n) => html(StatusCode::OK, crate::site::render_product(n)),
        Route::Refresh => html(
            StatusCode::OK,
            render_leaf(
                "Refresh",
                "<meta http-equiv=\"refresh\" content=\"0; url=/p/3\">",
                "",
            ),
        ),
        Route::Trap(n) => html(
            StatusCode::OK,
            render_leaf(
                "Trap",
                "",
                &format!("<a href=\"/trap/{}\">next day</a>", n + 1),
            ),
        ),
        Route::File(content_type) => typed(
            StatusCode::OK,
            content_type,
            Bytes::from_static(b"%PDF-1.4 {\"x\": \"<a href=\\\"/never/file-link\\\">\"}"),
        ),
        Route::Slow => {
            tokio::time::sleep(shared.config.slow).await;
            html(StatusCode::OK, render_leaf("Slow", "", "finally"))
        }
        Route::Huge => typed(
            StatusCode::OK,
            HTML,
            shared.huge_page.get_or_init(huge_page).clone(),
        ),
        Route::Bomb => {
            let body = shared.bomb.get_or_init(|| {
                let mut page = String::from("<html><body>");
                page.push_str(&" ".repeat(HUGE_BYTES * 4));
                page.push_str("<a href=\"/never/after-bomb\">end</a></body></html>");
                gzip(&page)
            });
            let mut r = typed(StatusCode::OK, HTML, body.clone());
            r.headers_mut()
                .insert(CONTENT_ENCODING, "gzip".parse().expect("static header"));
            r
        }
        Route::Sitemap(file) => {
            let body = file.body(me);
            match file {
                SitemapFile::MoreGz => {
                    let mut gz =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    gz.write_all(body.as_bytes()).expect("in memory");
                    typed(
                        StatusCode::OK,
                        "application/gzip",
                        gz.finish().expect("in memory").into(),
                    )
                }
                SitemapFile::Text => typed(StatusCode::OK, "text/plain", body.into()),
                _ => typed(StatusCode::OK, "application/xml", body.into()),
            }
        }
        Route::Gzip => {
            let mut r = typed(StatusCode::OK, HTML, shared.gzip_page.clone());
            r.headers_mut()
                .insert(CONTENT_ENCODING, "gzip".parse().expect("static header"));
            r
        }
        Route::Flaky(k) => {
            // The request being answered is already in the log.
            if shared.log.count(host, &target) <= k as usize {
                html(
                    StatusCode::SERVICE_UNAVAILABLE,
                    render_leaf("Try again", "", ""),
                )
            } else {
                html(StatusCode::OK, render_leaf("Recovered", "", ""))
            }
        }
        Route::Busy => {
            if shared.log.count(host, &target) <= 1 {
                let mut r = html(
                    StatusCode::TOO_MANY_REQUESTS,
                    render_leaf("Slow down", "", ""),
                );
                r.headers_mut()
                    .insert(RETRY_AFTER, "1".parse().expect("static header"));
                r
            } else {
                html(StatusCode::OK, render_leaf("Welcome back", "", ""))
            }
        }
        Route::Fail => html(
            StatusCode::INTERNAL_SERVER_ERROR,
            render_leaf("Broken", "", "<a href=\"/p/0\">x</a>"),
        ),
        Route::Requisite => {
            let path = target.split('?').next().unwrap_or(&target);
            let cdn = &shared.origins[(host + 1) % shared.origins.len()];
            match crate::requisite::file(path, cdn) {
                Some((content_type, body)) => {
                    let mut r = typed(StatusCode::OK, content_type, body);
                    // The CDN host's module script and font are loaded
                    // from another origin.
                    r.headers_mut().insert(
                        ACCESS_CONTROL_ALLOW_ORIGIN,
                        "*".parse().expect("static header"),
                    );
                    r
                }
                None => html(StatusCode::NOT_FOUND, render_leaf("Not found", "", "")),
            }
        }
        Route::Script => match crate::script::file(&target, host) {
            Some(served) => {
                let mut r = typed(StatusCode::OK, served.content_type, served.body);
                if served.cross_origin {
                    r.headers_mut().insert(
                        ACCESS_CONTROL_ALLOW_ORIGIN,
                        "*".parse().expect("static header"),
                    );
                }
                r
            }
            None => html(StatusCode::NOT_FOUND, render_leaf("Not found", "", "")),
        },
        Route::NotFound => html(
            StatusCode::NOT_FOUND,
            render_leaf("Not found", "", "<a href=\"/never/from-404\">x</a>"),
        ),
    }
}

/// A page larger than the crawler's body limit, with a link at its very end.
fn huge_page() -> Bytes {
    let mut page = String::with_capacity(HUGE_BYTES + 200);
    page.push_str("<html><head><title>Huge</title></head><body>");
    let line =
        "<p>0123456789 abcdefghijklmnopqrstuvwxyz 0123456789 abcdefghijklmnopqrstuvwxyz</p>\n";
    while page.len() < HUGE_BYTES {
        page.push_str(line);
    }
    page.push_str("<a href=\"/never/after-huge\">end</a></body></html>");
    Bytes::from(page)
}

fn gzip(s: &str) -> Bytes {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    enc.write_all(s.as_bytes()).expect("in-memory write");
    Bytes::from(enc.finish().expect("in-memory write"))
}
