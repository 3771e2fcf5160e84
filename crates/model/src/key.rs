//! URL keys: 128-bit hashes of normalised URLs whose high bits are their
//! host's, and maps and sets keyed by them that do not hash them again.
//!
//! A key is [`HOST_BITS`] bits of a hash of the URL's host followed by
//! 96 bits of a hash of the whole URL. Stores keep their seen sets in key
//! order (a B-tree of `(job, key)`), so a host's URLs sit together there,
//! as a crawl visits them: the links of a page, mostly on its own host,
//! are admitted, looked up and finished on a few pages of the index, not
//! one random page each (what makes the cost of a page flat as a job
//! grows to tens of millions of URLs). Two URLs collide only if their
//! hosts' 32 bits and their URLs' 96 bits both do: about one pair in
//! 2^48 URLs of one host bucket.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Bits of a key taken from a hash of its URL's host (the highest).
pub const HOST_BITS: u32 = 32;

/// The key of the normalised URL `url` whose host is `host` (the URL's
/// host as it is written in the URL; empty for URLs without one). Stable
/// across versions and machines (XXH3, a specified algorithm): stores
/// keep these keys, and every process of a job computes the same ones.
pub fn url_key(host: &str, url: &str) -> u128 {
    let host_part = u128::from(xxhash_rust::xxh3::xxh3_64(host.as_bytes()) >> (64 - HOST_BITS));
    let url_part = xxhash_rust::xxh3::xxh3_128(url.as_bytes()) & (u128::MAX >> HOST_BITS);
    (host_part << (128 - HOST_BITS)) | url_part
}

/// The key of a parsed URL: [`url_key`] of its host and its text.
pub fn key_of_url(url: &url::Url) -> u128 {
    url_key(url.host_str().unwrap_or(""), url.as_str())
}

/// The key of a URL given as text, as [`key_of_url`] computes it once
/// parsed (the URL's text as given, which for a URL the crawler stored is
/// its normalised form); `None` if it does not parse. For stores
/// re-keying URLs they kept as text.
pub fn key_of_text(url: &str) -> Option<u128> {
    let parsed = url::Url::parse(url).ok()?;
    Some(url_key(parsed.host_str().unwrap_or(""), url))
}

/// The keys are already uniform 128-bit hashes: fold them, hash nothing again.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(b);
        }
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = (k as u64) ^ ((k >> 64) as u64);
    }
}

/// A map keyed by URL keys.
pub type KeyMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

/// A set of URL keys.
pub type KeySet = HashSet<u128, BuildHasherDefault<KeyHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_begins_with_its_host_and_is_pinned() {
        let a = url_key("a.example", "http://a.example/x");
        let b = url_key("a.example", "https://a.example:8443/y?z");
        let c = url_key("b.example", "http://b.example/x");
        assert_eq!(a >> 96, b >> 96, "one host, one prefix");
        assert_ne!(a >> 96, c >> 96);
        assert_ne!(a, b);
        // Stores keep keys: the function must never change.
        assert_eq!(a, 0x9ec4_28c4_9c81_7385_4d14_b3dc_080d_4e5c);
        assert_eq!(key_of_text("http://a.example/x"), Some(a));
        assert_eq!(
            key_of_url(&url::Url::parse("http://a.example/x").unwrap()),
            a
        );
        assert_eq!(key_of_text("not a url"), None);
    }

    #[test]
    fn keys_fold_both_halves() {
        let mut set = KeySet::default();
        set.insert(1);
        set.insert(1 << 64);
        set.insert((1 << 64) | 1);
        assert_eq!(set.len(), 3);
        let mut h = KeyHasher::default();
        h.write_u128((3 << 64) | 5);
        assert_eq!(h.finish(), 3 ^ 5);
    }
}
