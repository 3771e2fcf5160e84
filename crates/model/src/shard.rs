//! Shards: a job's hosts split into `N` parts, one holder each. A URL
//! belongs to shard `hash(host) mod N`: the host, not the authority, so
//! that http and https and every port of one host have one owner, and
//! per-host politeness holds across the processes of a job.

use serde::{Deserialize, Serialize};

use crate::Authority;

/// Most shards a job may have.
pub const MAX_SHARDS: u32 = 4096;

/// The shard of `host` in a job of `shards` shards (at least one). The
/// hash (XXH3, a specified algorithm) is stable across versions and
/// machines: every process of a job agrees on it.
pub fn shard_of(host: &str, shards: u32) -> u32 {
    let n = u64::from(shards.max(1));
    // Less than `shards`, so it fits.
    (xxhash_rust::xxh3::xxh3_64(host.as_bytes()) % n) as u32
}

/// Which shards of a job one process holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// The job's number of shards.
    pub shards: u32,
    /// The shards held, ascending, each below `shards`.
    pub held: Vec<u32>,
}

impl Partition {
    /// The whole of a one-shard job.
    pub fn whole() -> Self {
        Self {
            shards: 1,
            held: vec![0],
        }
    }

    /// Shards `held` of a job of `shards`; `None` when a shard is out of
    /// range or none is given.
    pub fn new(shards: u32, mut held: Vec<u32>) -> Option<Self> {
        held.sort_unstable();
        held.dedup();
        if shards == 0
            || shards > MAX_SHARDS
            || held.is_empty()
            || held.iter().any(|&s| s >= shards)
        {
            return None;
        }
        Some(Self { shards, held })
    }

    /// True when every shard is held (a one-shard job, or all of them).
    pub fn is_whole(&self) -> bool {
        self.held.len() as u64 == u64::from(self.shards)
    }

    /// The shard of `authority`'s host.
    pub fn shard(&self, authority: &Authority) -> u32 {
        shard_of(authority.host(), self.shards)
    }

    /// True when `authority` belongs to a held shard.
    pub fn owns(&self, authority: &Authority) -> bool {
        self.is_whole() || self.held.binary_search(&self.shard(authority)).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(s: &str) -> Authority {
        Authority::of(&url::Url::parse(s).unwrap()).unwrap()
    }

    #[test]
    fn every_port_and_scheme_of_a_host_has_one_shard() {
        let p = Partition::new(7, vec![0]).unwrap();
        let s = p.shard(&authority("http://a.example/"));
        assert_eq!(p.shard(&authority("https://a.example/")), s);
        assert_eq!(p.shard(&authority("http://a.example:8080/x")), s);
    }

    #[test]
    fn the_hash_is_pinned_across_builds() {
        // Values computed once and written here: a change of the hash (or
        // of what it is fed) would re-shard every stored job and make
        // processes of different builds disagree on who owns a host.
        let got: Vec<u32> = [
            "a.example",
            "127.0.0.1",
            "www.example.org",
            "host-1.test",
            "",
        ]
        .iter()
        .flat_map(|h| [shard_of(h, 2), shard_of(h, 7), shard_of(h, 1024)])
        .collect();
        assert_eq!(got, PINNED);
        assert_eq!(xxhash_rust::xxh3::xxh3_64(b"a.example"), PINNED_HASH);
    }

    const PINNED: [u32; 15] = [0, 3, 904, 0, 3, 652, 0, 3, 594, 0, 4, 540, 0, 4, 194];
    const PINNED_HASH: u64 = 11_440_313_777_401_458_568;

    #[test]
    fn the_hash_is_stable_and_spreads_hosts() {
        assert_eq!(shard_of("a.example", 1), 0);
        assert_eq!(shard_of("a.example", 1000), shard_of("a.example", 1000));
        let mut counts = [0u32; 4];
        for i in 0..4000 {
            counts[shard_of(&format!("host-{i}.test"), 4) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn partitions_are_checked() {
        assert!(Partition::new(0, vec![0]).is_none());
        assert!(Partition::new(3, vec![3]).is_none());
        assert!(Partition::new(3, vec![]).is_none());
        assert!(Partition::new(MAX_SHARDS + 1, vec![0]).is_none());
        let p = Partition::new(3, vec![2, 0, 2]).unwrap();
        assert_eq!(p.held, vec![0, 2]);
        assert!(!p.is_whole());
        assert!(Partition::whole().owns(&authority("http://x.test/")));
        let all = Partition::new(2, vec![0, 1]).unwrap();
        assert!(all.is_whole());
    }
}
