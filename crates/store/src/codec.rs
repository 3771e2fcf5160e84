//! How values are written in rows: keys as 16 big-endian bytes, redirect
//! chains and records as JSON.

use crawlkeeper_model::{Authority, AuthorityState, FrontierEntry};

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

/// A redirect chain as JSON, or nothing when empty.
pub fn chain_text(entry: &FrontierEntry) -> Option<String> {
    if entry.redirect_chain.is_empty() {
        None
    } else {
        serde_json::to_string(&entry.redirect_chain).ok()
    }
}

/// A redirect chain from its JSON.
pub fn chain_from(text: Option<String>) -> Result<Vec<String>, StoreError> {
    match text {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(&t)
            .map_err(|e| StoreError::Corrupt(format!("redirect chain {t:?}: {e}"))),
    }
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
        };
        assert_eq!(chain_from(chain_text(&e)).unwrap(), e.redirect_chain);
        assert!(chain_from(Some("not json".into())).is_err());
    }
}
