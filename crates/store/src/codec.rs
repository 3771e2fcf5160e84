//! How values are written in rows: keys as 16 big-endian bytes, redirect
//! chains (with what is known of a URL) and records as JSON.

use crawlkeeper_model::{Authority, AuthorityState, CrawlRecord, FrontierEntry, Known};

use crate::StoreError;

/// A URL key as 16 bytes.
pub fn key_bytes(key: u128) -> [u8; 16] {
    key.to_be_bytes()
}

/// A URL key from 16 bytes.
pub fn key_from(bytes: &[u8]) -> Result<u128, StoreError> {
    let arr: [u8; 16] = bytes
        .try_into()
        .map_err(|_| StoreError::Corrupt(format!("URL key of {} bytes", bytes.len())))?;
    Ok(u128::from_be_bytes(arr))
}

/// What the `chain` column holds besides the redirect chain.
#[derive(serde::Serialize, serde::Deserialize)]
struct Hints {
    #[serde(default)]
    chain: Vec<String>,
    known: Known,
}

/// The `chain` column of an entry: its redirect chain as a JSON array, or,
/// when something is known of the URL (a sitemap's `lastmod`, an earlier
/// copy's validators), `{"chain": [...], "known": {...}}`; nothing when
/// both are empty.
pub fn chain_text(entry: &FrontierEntry) -> Option<String> {
    match &entry.known {
        Some(known) => serde_json::to_string(&Hints {
            chain: entry.redirect_chain.clone(),
            known: known.clone(),
        })
        .ok(),
        None if entry.redirect_chain.is_empty() => None,
        None => serde_json::to_string(&entry.redirect_chain).ok(),
    }
}

/// The redirect chain and what is known, from the `chain` column.
pub fn chain_from(text: Option<String>) -> Result<(Vec<String>, Option<Known>), StoreError> {
    let corrupt =
        |t: &str, e: serde_json::Error| StoreError::Corrupt(format!("redirect chain {t:?}: {e}"));
    match text {
        None => Ok((Vec::new(), None)),
        Some(t) if t.starts_with('{') => {
            let h: Hints = serde_json::from_str(&t).map_err(|e| corrupt(&t, e))?;
            Ok((h.chain, Some(h.known)))
        }
        Some(t) => Ok((serde_json::from_str(&t).map_err(|e| corrupt(&t, e))?, None)),
    }
}

/// The `chain` column of a finished URL queued again for a re-crawl: its
/// redirect chain as it was, and what its record (`record`, JSON) tells
/// the next request (validators, date, `lastmod`).
pub fn requeued_chain(chain: Option<String>, record: &str) -> Result<Option<String>, StoreError> {
    let (redirect_chain, before) = chain_from(chain)?;
    let record: CrawlRecord = serde_json::from_str(record)
        .map_err(|e| StoreError::Corrupt(format!("stored record: {e}")))?;
    // A passing failure (no answer, 429, 5xx) says nothing of the page:
    // what an earlier pass knew still holds.
    let passing = matches!(record.status, None | Some(429 | 500..=599));
    let known = match Known::of_record(&record) {
        Some(k) if k.validates() => Some(k),
        fresh if passing => before.or(fresh),
        fresh => fresh,
    };
    Ok(chain_text(&FrontierEntry {
        key: 0,
        url: String::new(),
        depth: 0,
        parent: None,
        redirect_chain,
        known,
    }))
}

/// A saved authority state from its JSON.
pub fn saved_state(authority: &str, text: &str) -> Result<AuthorityState, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("state of authority {authority}: {e}")))
}

/// An authority from its stored name.
pub fn parse_authority(text: String) -> Result<Authority, StoreError> {
    Authority::try_from(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The current time, RFC 3339.
pub fn now_text() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_bad_lengths_are_corrupt() {
        let k = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        assert_eq!(key_from(&key_bytes(k)).unwrap(), k);
        assert!(matches!(key_from(&[1, 2, 3]), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn chains_round_trip() {
        let e = FrontierEntry {
            key: 1,
            url: "http://a.test/".into(),
            depth: 0,
            parent: None,
            redirect_chain: vec!["http://a.test/x".into()],
            known: None,
        };
        assert_eq!(
            chain_from(chain_text(&e)).unwrap(),
            (e.redirect_chain.clone(), None)
        );
        let known = Known {
            etag: Some("\"v1\"".into()),
            ..Known::default()
        };
        let e = FrontierEntry {
            known: Some(known.clone()),
            ..e
        };
        assert_eq!(
            chain_from(chain_text(&e)).unwrap(),
            (e.redirect_chain.clone(), Some(known))
        );
        let plain = FrontierEntry {
            redirect_chain: Vec::new(),
            known: None,
            ..e
        };
        assert_eq!(chain_text(&plain), None);
        assert!(chain_from(Some("not json".into())).is_err());
        assert!(chain_from(Some("{\"chain\": 1}".into())).is_err());
    }

    #[test]
    fn a_passing_failure_keeps_what_an_earlier_pass_knew() {
        let known = Known {
            etag: Some("\"v1\"".into()),
            captured_at: Some("2026-11-01T00:00:00.000Z".into()),
            ..Known::default()
        };
        let chain = chain_text(&FrontierEntry {
            key: 1,
            url: "http://a.test/".into(),
            depth: 0,
            parent: None,
            redirect_chain: Vec::new(),
            known: Some(known.clone()),
        });
        let record = |status: &str| {
            format!(
                r#"{{"url":"http://a.test/","final_url":"http://a.test/","status":{status},"depth":0,
                "parent":null,"authority":"http://a.test:80","fetched_at":"2026-11-25T00:00:00.000Z",
                "response_ms":1,"content_type":null,"bytes":0,"title":null,"links":0,
                "truncated":false,"error":null}}"#
            )
        };
        for passing in ["null", "503", "429"] {
            let next = requeued_chain(chain.clone(), &record(passing)).unwrap();
            assert_eq!(
                chain_from(next).unwrap().1,
                Some(known.clone()),
                "{passing}"
            );
        }
        let gone = requeued_chain(chain.clone(), &record("404")).unwrap();
        assert_eq!(chain_from(gone).unwrap().1, None, "a 404 validates nothing");
    }
}
