//! Telling a refused TLS certificate from other connection failures.
//!
//! hyper's client reports a certificate rustls refused as a connect error, the
//! rustls error several causes deep, inside an `io::Error` inside another
//! (whose own `source()` skips the error it wraps, so walking the chain
//! alone never meets it). This finds it and says in a few words why it was refused.

use std::error::Error;

use rustls::CertificateError;

/// Why the server's certificate was refused, when `e` is a refused
/// certificate: `expired`, `not valid for this host name`, `unknown
/// issuer (self-signed or untrusted authority)`, `revoked`, `not yet
/// valid`, or rustls' own words for the rarer reasons.
pub(crate) fn certificate_error(e: &(dyn Error + 'static)) -> Option<String> {
    certificate_reason(e)
}

/// [`certificate_error`] for any error and its causes.
fn certificate_reason(e: &(dyn Error + 'static)) -> Option<String> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(reason) = refused(err) {
            return Some(reason);
        }
        // An io::Error's source() is its inner error's source, not the
        // inner error itself: look inside it too (and inside the io::Error
        // in it: hyper-rustls wraps tokio-rustls' io::Error in another).
        if let Some(reason) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| certificate_reason(inner))
        {
            return Some(reason);
        }
        next = err.source();
    }
    None
}

/// The reason, if `err` itself is rustls refusing a certificate.
fn refused(err: &(dyn Error + 'static)) -> Option<String> {
    let rustls::Error::InvalidCertificate(c) = err.downcast_ref::<rustls::Error>()? else {
        return None;
    };
    let reason = match c {
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired",
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "not valid for this host name"
        }
        CertificateError::UnknownIssuer => "unknown issuer (self-signed or untrusted authority)",
        CertificateError::Revoked => "revoked",
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "not yet valid"
        }
        _ => return Some(err.to_string()),
    };
    Some(reason.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a cause, as hyper's and reqwest's are.
    #[derive(Debug)]
    struct Outer(Box<dyn Error + Send + Sync>);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("client error (Connect)")
        }
    }

    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&*self.0)
        }
    }

    /// `c` as reqwest delivers it: in tokio-rustls' io::Error, in
    /// hyper-rustls' io::Error, under hyper's and reqwest's errors.
    fn wrapped(c: CertificateError) -> Outer {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(c),
        );
        Outer(Box::new(Outer(Box::new(std::io::Error::other(io)))))
    }

    #[test]
    fn a_single_io_error_around_it_is_looked_into_too() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        );
        let reason = certificate_reason(&Outer(Box::new(io))).unwrap();
        assert!(reason.starts_with("unknown issuer"), "{reason}");
    }

    #[test]
    fn each_common_reason_has_its_words() {
        let cases = [
            (CertificateError::Expired, "expired"),
            (
                CertificateError::NotValidForName,
                "not valid for this host name",
            ),
            (
                CertificateError::UnknownIssuer,
                "unknown issuer (self-signed or untrusted authority)",
            ),
            (CertificateError::Revoked, "revoked"),
            (CertificateError::NotValidYet, "not yet valid"),
        ];
        for (c, words) in cases {
            assert_eq!(
                certificate_reason(&wrapped(c)).as_deref(),
                Some(words),
                "{words}"
            );
        }
    }

    #[test]
    fn a_rare_reason_is_in_rustls_words() {
        let reason = certificate_reason(&wrapped(CertificateError::BadSignature)).unwrap();
        assert!(reason.contains("BadSignature"), "{reason}");
    }

    #[test]
    fn a_rustls_error_met_directly_in_the_chain_counts_too() {
        let e = Outer(Box::new(rustls::Error::InvalidCertificate(
            CertificateError::Expired,
        )));
        assert_eq!(certificate_reason(&e).as_deref(), Some("expired"));
    }

    #[test]
    fn other_failures_are_no_certificate_error() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(certificate_reason(&Outer(Box::new(refused))), None);
        let alert = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
        );
        assert_eq!(certificate_reason(&Outer(Box::new(alert))), None);
    }
}
