//! TLS for the test site: a throw-away certificate authority and one
//! server certificate for every host, so a crawler can be tested over
//! HTTPS and HTTP/2 (negotiated by ALPN) on loopback.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
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

impl SiteTls {
    /// A new authority and a server certificate for `names` and `ips`.
    pub fn new(names: &[String], ips: &[IpAddr]) -> Result<Self, TlsError> {
        let ca_key = KeyPair::generate().map_err(fail)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).map_err(fail)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut params = CertificateParams::new(names.to_vec()).map_err(fail)?;
        params
            .subject_alt_names
            .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        let key = KeyPair::generate().map_err(fail)?;
        let cert = params.signed_by(&key, &issuer).map_err(fail)?;

        let chain = vec![
            CertificateDer::from(cert.der().to_vec()),
            CertificateDer::from(ca_cert.der().to_vec()),
        ];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(fail)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            ca_pem: ca_cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}
