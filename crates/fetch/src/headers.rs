//! Headers a user adds to every request of a crawl (`--header 'Name:
//! value'`): checked when given, never shown (their values are often keys
//! or sessions).

use std::fmt;
use std::str::FromStr;

use http::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Headers the crawler sets itself, and why a user may not.
const OWNED: &[(&str, &str)] = &[
    ("host", "the crawler sets it from the URL"),
    ("content-length", "the crawler sends no body"),
    ("transfer-encoding", "the crawler sends no body"),
    ("connection", "the crawler manages its connections"),
    ("keep-alive", "the crawler manages its connections"),
    ("proxy-connection", "the crawler manages its connections"),
    ("upgrade", "the crawler manages its connections"),
    ("te", "the crawler manages its connections"),
    ("trailer", "the crawler sends no body"),
    (
        "accept-encoding",
        "the crawler decodes bodies itself (gzip, deflate, br)",
    ),
    ("user-agent", "use --user-agent (robots.txt is read for it)"),
    (
        "if-none-match",
        "the crawler sets it when it re-crawls a page",
    ),
    (
        "if-modified-since",
        "the crawler sets it when it re-crawls a page",
    ),
];

/// A header sent with every request of a crawl.
#[derive(Clone, PartialEq, Eq)]
pub struct ExtraHeader {
    /// Its name, lower case.
    pub name: HeaderName,
    /// Its value (a secret: never shown).
    pub value: HeaderValue,
}

/// Why a `--header` was refused (the value is never repeated: it may be
/// a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// No `:` between name and value.
    #[error("expected 'Name: value'")]
    NoColon,
    /// The name is not an HTTP token.
    #[error("'{0}' is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)")]
    BadName(String),
    /// The value holds a line break or another control character.
    #[error("the value of {0} holds a line break or a control character")]
    BadValue(String),
    /// The crawler sets this header itself.
    #[error("{name} cannot be set: {why}")]
    Owned {
        /// The header.
        name: String,
        /// Why.
        why: &'static str,
    },
}

impl FromStr for ExtraHeader {
    type Err = HeaderError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, value) = s.split_once(':').ok_or(HeaderError::NoColon)?;
        let shown: String = name.chars().take(64).collect();
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| HeaderError::BadName(shown.clone()))?;
        if let Some((_, why)) = OWNED.iter().find(|(n, _)| *n == name.as_str()) {
            return Err(HeaderError::Owned {
                name: name.as_str().to_owned(),
                why,
            });
        }
        // Surrounding spaces are not part of a value (RFC 9110 §5.5); a
        // tab inside is, any other control character is refused.
        let value = value.trim_matches(|c| c == ' ' || c == '\t');
        let value = HeaderValue::from_str(value)
            .map_err(|_| HeaderError::BadValue(name.as_str().to_owned()))?;
        Ok(Self { name, value })
    }
}

impl ExtraHeader {
    /// This header with its value shown as `***`.
    pub fn redacted(&self) -> Self {
        Self {
            name: self.name.clone(),
            value: HeaderValue::from_static(super::credentials::HIDDEN),
        }
    }
}

impl fmt::Debug for ExtraHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: <redacted>", self.name)
    }
}

impl Serialize for ExtraHeader {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value = String::from_utf8_lossy(self.value.as_bytes());
        s.serialize_str(&format!("{}: {value}", self.name))
    }
}

impl<'de> Deserialize<'de> for ExtraHeader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_a_name_and_a_value() {
        let h: ExtraHeader = "Accept-Language:  de, en;q=0.5 ".parse().unwrap();
        assert_eq!(h.name.as_str(), "accept-language");
        assert_eq!(h.value.to_str().unwrap(), "de, en;q=0.5");
        let empty: ExtraHeader = "X-Empty:".parse().unwrap();
        assert!(empty.value.is_empty());
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(json, "\"accept-language: de, en;q=0.5\"");
        assert_eq!(serde_json::from_str::<ExtraHeader>(&json).unwrap(), h);
    }

    #[test]
    fn malformed_headers_are_refused_without_their_values() {
        assert_eq!(
            "X-Api-Key S3cret".parse::<ExtraHeader>(),
            Err(HeaderError::NoColon)
        );
        assert!(matches!(
            "Bad Name: x".parse::<ExtraHeader>(),
            Err(HeaderError::BadName(_))
        ));
        assert!(matches!(
            ": x".parse::<ExtraHeader>(),
            Err(HeaderError::BadName(_))
        ));
        for smuggled in [
            "X-Key: S3cret\r\nHost: evil.test",
            "X-Key: a\nb",
            "X-Key: a\0b",
        ] {
            let e = smuggled.parse::<ExtraHeader>().unwrap_err();
            assert!(matches!(e, HeaderError::BadValue(_)), "{smuggled:?}");
            assert!(!e.to_string().contains("S3cret"), "{e}");
        }
    }

    #[test]
    fn headers_the_crawler_owns_are_refused() {
        for owned in [
            "Host: a.test",
            "content-length: 3",
            "Transfer-Encoding: chunked",
            "Connection: close",
            "Accept-Encoding: zstd",
            "User-Agent: me",
            "If-None-Match: \"x\"",
        ] {
            let e = owned.parse::<ExtraHeader>().unwrap_err();
            assert!(matches!(e, HeaderError::Owned { .. }), "{owned}: {e}");
        }
        // Anything else is the user's: Accept, Authorization, Cookie, …
        for theirs in [
            "Accept: text/html",
            "Authorization: Bearer t",
            "Cookie: a=b",
        ] {
            assert!(theirs.parse::<ExtraHeader>().is_ok(), "{theirs}");
        }
    }

    #[test]
    fn debug_never_shows_the_value() {
        let h: ExtraHeader = "X-Api-Key: S3cret".parse().unwrap();
        let shown = format!("{h:?} {:?}", vec![h.clone()]);
        assert!(!shown.contains("S3cret"), "{shown}");
        assert!(shown.contains("x-api-key"), "{shown}");
    }
}
