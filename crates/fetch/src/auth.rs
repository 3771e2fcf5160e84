//! HTTP basic authentication (RFC 7617) from the credentials in a URL:
//! a proxy's (`Proxy-Authorization`) or a page's own (`Authorization`).

use http::HeaderValue;
use url::Url;

/// A URL's percent-encoded user or password, as text.
pub(super) fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The `Basic` credentials of `user` and `password`, marked sensitive (so
/// hyper never shows them in its debug output).
pub(super) fn basic(user: &str, password: Option<&str>) -> HeaderValue {
    use base64::Engine as _;
    let pair = format!("{user}:{}", password.unwrap_or_default());
    let text = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    );
    let mut value = HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("Basic"));
    value.set_sensitive(true);
    value
}

/// The user and password `url` carries, if any (decoded).
pub(super) fn credentials(url: &Url) -> Option<(String, Option<String>)> {
    let (user, password) = (url.username(), url.password());
    (!user.is_empty() || password.is_some()).then(|| (decode(user), password.map(decode)))
}

/// The `Authorization` a request for `url` carries for the credentials in
/// it, as curl and browsers send them.
pub(super) fn of_url(url: &Url) -> Option<HeaderValue> {
    let (user, password) = credentials(url)?;
    Some(basic(&user, password.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_decoded_and_sent_as_basic() {
        let url = Url::parse("http://al%20ice:p%40ss@127.0.0.1/").unwrap();
        // "al ice:p@ss"
        assert_eq!(of_url(&url).unwrap(), "Basic YWwgaWNlOnBAc3M=");
        assert!(of_url(&url).unwrap().is_sensitive());
        let user_only = Url::parse("http://bob@127.0.0.1/").unwrap();
        assert_eq!(of_url(&user_only).unwrap(), "Basic Ym9iOg==");
        assert_eq!(of_url(&Url::parse("http://127.0.0.1/").unwrap()), None);
    }
}
