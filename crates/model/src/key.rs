//! URL keys: 128-bit hashes of normalised URLs, and maps and sets keyed by
//! them that do not hash them again.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

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
