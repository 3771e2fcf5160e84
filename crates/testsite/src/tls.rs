//! TLS for the test site: a throw-away certificate authority and server
//! certificates from it, so a crawler can be tested over HTTPS and HTTP/2
//! (negotiated by ALPN) on loopback; and the certificates a client must
//! refuse (expired, for another name, self-signed), to test that it does.
//! Sessions can be resumed: the request log counts the handshakes that did.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority and the acceptor of a server it signed.
pub struct SiteTls {
    /// The authority's certificate, PEM: what a client must trust.
    pub ca_pem: String,
    /// Accepts TLS connections, offering `h2` and `http/1.1`.
    pub acceptor: TlsAcceptor,
}

/// Why TLS could not be set up.
#[derive(Debug)]
pub struct TlsError(pub String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "test site TLS: {}", self.0)
    }
}

impl std::error::Error for TlsError {}

fn fail(e: impl std::fmt::Display) -> TlsError {
    TlsError(e.to_string())
}

/// The kind of server certificate a host presents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CertKind {
    /// From the site's authority, for the host's names and addresses,
    /// valid now: a client trusting the authority accepts it.
    #[default]
    Valid,
    /// Like [`CertKind::Valid`], but its validity ended in 2001.
    Expired,
    /// From the site's authority and valid now, but for another host
    /// name only (`other-name.invalid`), none of the site's.
    OtherName,
    /// For the host's names and addresses, valid now, but signed by its
    /// own key: from no authority a client trusts.
    SelfSigned,
}

/// The name a [`CertKind::OtherName`] certificate is for.
pub const OTHER_NAME: &str = "other-name.invalid";

/// A throw-away certificate authority that signs server certificates.
pub struct Authority {
    pem: String,
    der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    /// A new authority, its key made now.
    pub fn new() -> Result<Self, TlsError> {
        let key = KeyPair::generate().map_err(fail)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "crawlkeeper test site authority");
        let cert = params.self_signed(&key).map_err(fail)?;
        Ok(Self {
            pem: cert.pem(),
            der: CertificateDer::from(cert.der().to_vec()),
            issuer: Issuer::new(params, key),
        })
    }

    /// The authority's certificate, PEM: what a client must trust.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// An acceptor presenting a certificate of `kind` for `names` and
    /// `ips` (but see [`CertKind`]), offering `h2` and `http/1.1`.
    pub fn acceptor(
        &self,
        kind: CertKind,
        names: &[String],
        ips: &[IpAddr],
    ) -> Result<TlsAcceptor, TlsError> {
        self.acceptor_offering(kind, names, ips, &[b"h2", b"http/1.1"])
    }

    /// [`Authority::acceptor`] offering the protocols `alpn` only (by
    /// ALPN, most preferred first): `&[b"http/1.1"]` makes every client
    /// speak HTTP/1.1.
    pub fn acceptor_offering(
        &self,
        kind: CertKind,
        names: &[String],
        ips: &[IpAddr],
        alpn: &[&[u8]],
    ) -> Result<TlsAcceptor, TlsError> {
        let mut params = match kind {
            CertKind::OtherName => CertificateParams::new(vec![OTHER_NAME.to_owned()]),
            _ => CertificateParams::new(names.to_vec()),
        }
        .map_err(fail)?;
        if kind != CertKind::OtherName {
            params
                .subject_alt_names
                .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        }
        // Named apart from the authority: a self-signed certificate with
        // the authority's name is one whose signature fails, not one from
        // an unknown issuer.
        params.distinguished_name.push(
            DnType::CommonName,
            match kind {
                CertKind::SelfSigned => "crawlkeeper test site host (self-signed)",
                _ => "crawlkeeper test site host",
            },
        );
        if kind == CertKind::Expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().map_err(fail)?;
        let chain = if kind == CertKind::SelfSigned {
            let cert = params.self_signed(&key).map_err(fail)?;
            vec![CertificateDer::from(cert.der().to_vec())]
        } else {
            let cert = params.signed_by(&key, &self.issuer).map_err(fail)?;
            vec![CertificateDer::from(cert.der().to_vec()), self.der.clone()]
        };
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(fail)?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        // Sessions are kept (rustls' in-memory cache, by default) and a
        // TLS 1.3 ticket, used once, is sent for each: four per handshake
        // (rustls' default is two), so a client opening four connections
        // to a host at once can resume every one of them.
        config.send_tls13_tickets = 4;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

impl SiteTls {
    /// A new authority and a valid server certificate for `names` and `ips`.
    pub fn new(names: &[String], ips: &[IpAddr]) -> Result<Self, TlsError> {
        let authority = Authority::new()?;
        let acceptor = authority.acceptor(CertKind::Valid, names, ips)?;
        Ok(Self {
            ca_pem: authority.pem,
            acceptor,
        })
    }
}
