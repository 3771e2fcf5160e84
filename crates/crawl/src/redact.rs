//! The configuration of a crawl as it may be shown: in an archive's
//! `warcinfo`, which is made to be shared, every secret is `***` (header
//! values, proxy passwords, the users' passwords of seeds) and the cookie
//! file is left out whole (it may hold cookies of sites the crawl never
//! touched).

use crate::config::CrawlConfig;

pub use crawlkeeper_fetch::credentials::HIDDEN;

impl CrawlConfig {
    /// This configuration with its secrets replaced by [`HIDDEN`], for
    /// showing only (a crawl with it would send `***`).
    pub fn redacted(&self) -> Self {
        let mut shown = self.clone();
        let fetch = &mut shown.fetch;
        for header in &mut fetch.headers {
            *header = header.redacted();
        }
        for proxy in [&mut fetch.proxy.http, &mut fetch.proxy.https]
            .into_iter()
            .flatten()
        {
            *proxy = proxy.redacted();
        }
        for credential in &mut fetch.site_credentials {
            *credential = credential.redacted();
        }
        if fetch.cookies.file.is_some() {
            fetch.cookies.file = Some(HIDDEN.to_owned());
        }
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawlkeeper_fetch::ProxyConfig;
    use crawlkeeper_fetch::credentials::SiteCredential;

    #[test]
    fn no_secret_survives_redaction() {
        let mut c = CrawlConfig::default();
        c.fetch.headers = vec![
            "Authorization: Bearer S3cretToken".parse().unwrap(),
            "X-Api-Key: K3yValue".parse().unwrap(),
        ];
        c.fetch.proxy = ProxyConfig::all("http://user:Pr0xyPw@127.0.0.1:3128".parse().unwrap());
        c.fetch.cookies.file = Some(".example.test\tTRUE\t/\tFALSE\t0\tsid\tC00kieVal\n".into());
        c.fetch.site_credentials = vec![SiteCredential {
            host: "h.test".into(),
            user: "alice".into(),
            password: Some("S1tePw".into()),
        }];
        let shown = serde_json::to_string(&c.redacted()).unwrap();
        for secret in [
            "S3cretToken",
            "K3yValue",
            "Pr0xyPw",
            "C00kieVal",
            "example.test",
            "S1tePw",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("\"authorization: ***\""), "{shown}");
        assert!(shown.contains("http://user:***@127.0.0.1:3128/"), "{shown}");
        assert!(shown.contains("\"alice\""), "{shown}");
        // What is not secret is kept; the original is untouched.
        assert_eq!(c.redacted().fetch.user_agent, c.fetch.user_agent);
        assert!(serde_json::to_string(&c).unwrap().contains("S3cretToken"));
    }
}
