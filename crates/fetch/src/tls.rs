//! The client's TLS settings: the platform's trust store (plus the
//! authorities of `--ca-cert`), and the protocols offered by ALPN.

use std::path::Path;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::config::HttpVersion;

/// The TLS settings could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    /// A certificate file could not be read or holds no certificate.
    #[error("cannot use certificate file '{path}': {why}")]
    Certificate {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong.
        why: String,
    },
    /// The platform's verifier could not be set up with these roots.
    #[error("cannot set up TLS: {0}")]
    Verifier(#[from] rustls::Error),
}

/// The two configurations a client needs: `origin` for the sites it
/// crawls (ALPN as `version` says), `proxy` for the proxies it talks to
/// (no ALPN: a proxy is spoken to in HTTP/1.1).
#[derive(Clone, Debug)]
pub struct TlsConfigs {
    /// For connections to the sites.
    pub origin: Arc<ClientConfig>,
    /// For connections to HTTPS proxies.
    pub proxy: Arc<ClientConfig>,
}

/// The settings for a crawl trusting the platform's authorities and those
/// in `ca_certs` (PEM files).
pub fn client_configs(
    ca_certs: &[std::path::PathBuf],
    version: HttpVersion,
) -> Result<TlsConfigs, TlsConfigError> {
    let mut extra = Vec::new();
    for path in ca_certs {
        extra.extend(certificates(path)?);
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = if extra.is_empty() {
        rustls_platform_verifier::Verifier::new(provider.clone())?
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())?
    };
    let mut origin = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let proxy = origin.clone();
    origin.alpn_protocols = match version {
        HttpVersion::Negotiate => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        HttpVersion::Http1Only => vec![b"http/1.1".to_vec()],
        HttpVersion::Http2 => vec![b"h2".to_vec()],
    };
    Ok(TlsConfigs {
        origin: Arc::new(origin),
        proxy: Arc::new(proxy),
    })
}

/// The certificates in the PEM file at `path` (at least one).
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let bad = |why: String| TlsConfigError::Certificate {
        path: path.to_owned(),
        why,
    };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".to_owned()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpn(c: &ClientConfig) -> Vec<String> {
        c.alpn_protocols
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    #[test]
    fn alpn_offers_what_the_version_setting_allows_and_nothing_to_proxies() {
        for (version, offered) in [
            (HttpVersion::Negotiate, vec!["h2", "http/1.1"]),
            (HttpVersion::Http1Only, vec!["http/1.1"]),
            (HttpVersion::Http2, vec!["h2"]),
        ] {
            let c = client_configs(&[], version).unwrap();
            assert_eq!(alpn(&c.origin), offered, "{version:?}");
            assert!(c.proxy.alpn_protocols.is_empty(), "{version:?}");
        }
    }

    #[test]
    fn a_certificate_file_must_hold_a_pem_certificate() {
        let dir = std::env::temp_dir().join(format!("ck-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = client_configs(std::slice::from_ref(&empty), HttpVersion::Negotiate)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let missing = dir.join("missing.pem");
        let e = client_configs(&[missing], HttpVersion::Negotiate)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.pem"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
