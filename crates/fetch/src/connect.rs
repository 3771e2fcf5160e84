//! The HTTP client's connector: a connection to a site, directly or
//! through the proxy `--proxy` names for it, with TLS where the site's
//! scheme asks for it.
//!
//! Every name is resolved by the SSRF guard ([`GuardedResolver`]), so a
//! connection is only ever made to an address the policy allows (proxies
//! aside: the user named them). The whole of a connection (resolving,
//! TCP, the proxy's handshake, TLS) is bounded by the connect timeout.
//!
//! - Direct: TCP, then TLS for `https`.
//! - HTTP proxy, `http` site: a connection to the proxy, marked as
//!   proxied so that requests go in absolute form.
//! - HTTP proxy, `https` site: a `CONNECT` tunnel through the proxy, then
//!   TLS with the site inside it (the proxy sees the host name only).
//! - SOCKS5: the proxy connects to the site (by the address the guard
//!   resolved, or by name for `socks5h`), then TLS for `https`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Uri, header::USER_AGENT};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::proxy::{SocksV5, Tunnel};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tower_service::Service;
use url::Url;

use super::auth;
use super::proxy::{ProxyConfig, ProxyUrl};
use super::tls::TlsConfigs;
use crate::guard::GuardedResolver;
use crate::guard::resolve::BoxError;

/// TCP to an address the guard allows.
pub(super) type Tcp = HttpConnector<GuardedResolver>;

/// Connects the client to sites (see the module's documentation).
#[derive(Clone)]
pub(super) struct Connector {
    tcp: Tcp,
    tls: TlsConfigs,
    routes: Arc<Routes>,
    guard: GuardedResolver,
    timeout: Duration,
}

/// The proxies of the two schemes, ready to use.
struct Routes {
    config: ProxyConfig,
    http: Option<Route>,
    https: Option<Route>,
    /// The `User-Agent` a `CONNECT` carries.
    user_agent: Option<HeaderValue>,
}

/// A proxy, as the connector speaks to it.
#[derive(Clone)]
struct Route {
    /// Where the proxy listens (no credentials; the port always given).
    uri: Uri,
    kind: RouteKind,
}

#[derive(Clone)]
enum RouteKind {
    /// An HTTP (or HTTPS) proxy, with its `Proxy-Authorization`.
    Http(Option<HeaderValue>),
    /// A SOCKS5 proxy: its credentials; whether it resolves names itself.
    Socks5 {
        auth: Option<(String, String)>,
        remote_dns: bool,
    },
}

/// The connection took longer than the connect timeout (in reqwest's
/// words, which records used before #31).
#[derive(Debug, thiserror::Error)]
#[error("operation timed out")]
pub(super) struct ConnectTimeout;

/// A URL the connector cannot connect to.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to {0}: {1}")]
struct BadTarget(String, &'static str);

impl Route {
    fn new(proxy: &ProxyUrl) -> Self {
        let url = proxy.url();
        let scheme = url.scheme();
        let port = url.port_or_known_default().unwrap_or(1080);
        let host = url.host_str().unwrap_or_default();
        let credentials = auth::credentials(url);
        let uri = format!("{scheme}://{host}:{port}")
            .parse()
            .unwrap_or_else(|_| Uri::from_static("http://invalid.invalid:1"));
        let kind = match scheme {
            "socks5" | "socks5h" => RouteKind::Socks5 {
                auth: credentials.map(|(user, password)| (user, password.unwrap_or_default())),
                remote_dns: scheme == "socks5h",
            },
            _ => RouteKind::Http(
                credentials.map(|(user, password)| auth::basic(&user, password.as_deref())),
            ),
        };
        Self { uri, kind }
    }
}

impl Connector {
    /// A connector over `tcp` (TCP settings and the guard), with `tls`,
    /// through `proxies`, giving up after `timeout`.
    pub(super) fn new(
        tcp: Tcp,
        tls: TlsConfigs,
        proxies: &ProxyConfig,
        guard: GuardedResolver,
        timeout: Duration,
        user_agent: Option<HeaderValue>,
    ) -> Self {
        let routes = Routes {
            config: proxies.clone(),
            http: proxies.http.as_ref().map(Route::new),
            https: proxies.https.as_ref().map(Route::new),
            user_agent,
        };
        Self {
            tcp,
            tls,
            routes: Arc::new(routes),
            guard,
            timeout,
        }
    }

    /// The `Proxy-Authorization` a request for `url` carries: that of the
    /// HTTP proxy a plain `http` request goes through (the others are
    /// tunnels, which carry it in their handshake).
    pub(super) fn proxy_authorization(&self, url: &Url) -> Option<&HeaderValue> {
        if url.scheme() != "http" {
            return None;
        }
        self.routes.config.proxy_for(url)?;
        match &self.routes.http.as_ref()?.kind {
            RouteKind::Http(auth) => auth.as_ref(),
            RouteKind::Socks5 { .. } => None,
        }
    }

    /// The proxy a connection to `dst` goes through.
    fn route(&self, dst: &Uri) -> Option<&Route> {
        if self.routes.http.is_none() && self.routes.https.is_none() {
            return None;
        }
        let url = Url::parse(&dst.to_string()).ok()?;
        self.routes.config.proxy_for(&url)?;
        match url.scheme() {
            "https" => self.routes.https.as_ref(),
            _ => self.routes.http.as_ref(),
        }
    }

    /// TLS and plain TCP as the site's scheme says, to `dst` itself.
    fn https(&self, config: &Arc<rustls::ClientConfig>) -> HttpsConnector<Tcp> {
        HttpsConnector::from((self.tcp.clone(), config.clone()))
    }

    async fn connect(self, dst: Uri) -> Result<Conn, BoxError> {
        let is_https = dst.scheme() == Some(&http::uri::Scheme::HTTPS);
        let Some(route) = self.route(&dst).cloned() else {
            let io = self.https(&self.tls.origin).call(dst).await?;
            return Ok(Conn::new(io, false));
        };
        match route.kind {
            RouteKind::Http(auth) if is_https => {
                let mut tunnel = Tunnel::new(route.uri, self.https(&self.tls.proxy));
                if let Some(auth) = auth {
                    tunnel = tunnel.with_auth(auth);
                }
                if let Some(agent) = &self.routes.user_agent {
                    let mut headers = HeaderMap::new();
                    headers.insert(USER_AGENT, agent.clone());
                    tunnel = tunnel.with_headers(headers);
                }
                let io = tunnel.call(dst.clone()).await?;
                self.tls_over(io, &dst).await
            }
            RouteKind::Http(_) => {
                let io = self.https(&self.tls.proxy).call(route.uri).await?;
                Ok(Conn::new(io, true))
            }
            RouteKind::Socks5 { auth, remote_dns } => {
                let target = self.socks_target(&dst, is_https, remote_dns).await?;
                let mut socks = SocksV5::new(route.uri, self.tcp.clone());
                if let Some((user, password)) = auth {
                    socks = socks.with_auth(user, password);
                }
                let io = socks.call(target).await?;
                if is_https {
                    self.tls_over(io, &dst).await
                } else {
                    Ok(Conn::new(io, false))
                }
            }
        }
    }

    /// What a SOCKS5 proxy is asked to connect to: the address the guard
    /// resolved for `dst`'s host (or its name, when the proxy resolves),
    /// always with a port.
    async fn socks_target(
        &self,
        dst: &Uri,
        is_https: bool,
        remote_dns: bool,
    ) -> Result<Uri, BoxError> {
        let host = dst
            .host()
            .ok_or_else(|| BadTarget(dst.to_string(), "no host"))?;
        let port = dst.port_u16().unwrap_or(if is_https { 443 } else { 80 });
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let host = if remote_dns || bare.parse::<std::net::IpAddr>().is_ok() {
            host.to_owned()
        } else {
            let addr = self
                .guard
                .resolve_host(bare)
                .await?
                .next()
                .ok_or_else(|| BadTarget(dst.to_string(), "no address"))?;
            match addr.ip() {
                std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                ip => ip.to_string(),
            }
        };
        let scheme = if is_https { "https" } else { "http" };
        Ok(format!("{scheme}://{host}:{port}").parse()?)
    }

    /// TLS with `dst`'s host over `io` (a tunnel or a SOCKS connection).
    async fn tls_over<T>(&self, io: T, dst: &Uri) -> Result<Conn, BoxError>
    where
        T: Read + Write + Connection + Send + Unpin + 'static,
    {
        let host = dst
            .host()
            .ok_or_else(|| BadTarget(dst.to_string(), "no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.origin.clone())
            .connect(name, TokioIo::new(io))
            .await?;
        Ok(Conn::new(TlsConn(TokioIo::new(tls)), false))
    }
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let this = self.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, this.connect(dst)).await {
                Ok(connected) => connected,
                Err(_) => Err(ConnectTimeout.into()),
            }
        })
    }
}

/// Anything a connection can be.
trait Io: Read + Write + Connection + Send + Unpin + 'static {}

impl<T: Read + Write + Connection + Send + Unpin + 'static> Io for T {}

/// A connection the client can use, whichever way it was made.
pub(super) struct Conn {
    io: Box<dyn Io>,
    /// Through an HTTP proxy that takes requests in absolute form.
    proxied: bool,
}

impl Conn {
    fn new(io: impl Io, proxied: bool) -> Self {
        Self {
            io: Box::new(io),
            proxied,
        }
    }
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.proxied)
    }
}

impl Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_shutdown(cx)
    }
}

/// TLS over a tunnel or a SOCKS connection; HTTP/2 when ALPN chose it.
struct TlsConn<T>(TokioIo<tokio_rustls::client::TlsStream<TokioIo<T>>>);

impl<T: Connection + Read + Write + Unpin> Connection for TlsConn<T> {
    fn connected(&self) -> Connected {
        let (io, session) = self.0.inner().get_ref();
        let connected = io.inner().connected();
        if session.alpn_protocol() == Some(b"h2") {
            connected.negotiated_h2()
        } else {
            connected
        }
    }
}

impl<T: Read + Write + Unpin> Read for TlsConn<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<T: Read + Write + Unpin> Write for TlsConn<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(proxy: &str) -> Route {
        Route::new(&proxy.parse().unwrap())
    }

    #[test]
    fn a_proxy_route_always_names_its_port_and_never_its_credentials() {
        let r = route("http://alice:S%20cret@127.0.0.1:3128");
        assert_eq!(r.uri.to_string(), "http://127.0.0.1:3128/");
        let RouteKind::Http(Some(auth)) = r.kind else {
            panic!("credentials");
        };
        assert!(auth.is_sensitive());
        // "alice:S cret", percent-decoded as curl does.
        assert_eq!(auth, "Basic YWxpY2U6UyBjcmV0");
        assert_eq!(route("http://127.0.0.1").uri.port_u16(), Some(80));
        assert_eq!(route("https://127.0.0.1").uri.port_u16(), Some(443));
        let socks = route("socks5h://u:p@127.0.0.1");
        assert_eq!(socks.uri.port_u16(), Some(1080));
        let RouteKind::Socks5 { auth, remote_dns } = socks.kind else {
            panic!("socks");
        };
        assert_eq!(auth, Some(("u".into(), "p".into())));
        assert!(remote_dns);
        assert!(matches!(
            route("socks5://127.0.0.1:9").kind,
            RouteKind::Socks5 {
                auth: None,
                remote_dns: false
            }
        ));
        assert!(matches!(
            route("http://127.0.0.1").kind,
            RouteKind::Http(None)
        ));
    }
}
