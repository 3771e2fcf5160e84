//! Where a store is, as said to people: a PostgreSQL URL with its password
//! replaced, so that no message or log line ever shows it.

/// What replaces a password.
const HIDDEN: &str = "***";

/// `location` with the password of a `scheme://user:password@host/…` URL
/// replaced by `***`; anything else unchanged.
pub fn redact(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else {
        return location.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some(at) = authority.rfind('@') else {
        return location.to_owned();
    };
    let (userinfo, host) = authority.split_at(at);
    let Some((user, _password)) = userinfo.split_once(':') else {
        return location.to_owned();
    };
    format!("{scheme}://{user}:{HIDDEN}{host}{tail}")
}

/// `message` with every appearance of the password in `location`
/// replaced, for errors a driver may have built from the URL.
pub fn scrub(message: &str, location: &str) -> String {
    let redacted = redact(location);
    let mut out = message.replace(location, &redacted);
    if let Some(password) = password(location) {
        out = out.replace(password, HIDDEN);
    }
    out
}

fn password(location: &str) -> Option<&str> {
    let (_, rest) = location.split_once("://")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let userinfo = &authority[..authority.rfind('@')?];
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_and_the_rest_kept() {
        assert_eq!(
            redact("postgres://alice:S3cretPw@db.test:5432/crawl?sslmode=disable"),
            "postgres://alice:***@db.test:5432/crawl?sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://bob:p@ss:w@rd@db.test/x"),
            "postgresql://bob:***@db.test/x",
            "the last @ ends the user information"
        );
        for unchanged in [
            "postgres://alice@db.test/crawl",
            "postgres://db.test/crawl",
            "crawlkeeper.db",
            "/tmp/a:b@c.db",
        ] {
            assert_eq!(redact(unchanged), unchanged);
        }
    }

    #[test]
    fn messages_lose_the_password_wherever_it_appears() {
        let url = "postgres://alice:S3cretPw@db.test/crawl";
        let said = format!("cannot connect to {url}: password S3cretPw refused");
        let clean = scrub(&said, url);
        assert!(!clean.contains("S3cretPw"), "{clean}");
        assert!(
            clean.contains("postgres://alice:***@db.test/crawl"),
            "{clean}"
        );
        assert_eq!(scrub("plain", "crawlkeeper.db"), "plain");
    }
}
