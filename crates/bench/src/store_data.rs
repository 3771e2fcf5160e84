//! What the store benchmarks write: generated URLs over authorities,
//! their records, and the job they belong to.

use std::path::PathBuf;

use anyhow::Result;
use crawlkeeper_model::{Authority, CrawlRecord, FrontierEntry};
use crawlkeeper_store::{JobId, JobSpec, SqliteStore, Store};
use serde::{Deserialize, Serialize};

/// A well-mixed 128-bit number for URL `i` (splitmix64 on both halves):
/// which URLs a seeded job has done ([`crate::store_seed::is_done`]).
pub(crate) fn key(i: u64) -> u128 {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (u128::from(mix(i)) << 64) | u128::from(mix(i ^ 0xdead_beef))
}

/// Number `j` of a fixed shuffle of `0..n` (for `j` in `0..n`; it repeats
/// after).
pub(crate) fn shuffled(j: u64, n: u64) -> u64 {
    // A prime that divides none of the sizes: a permutation of 0..n.
    ((u128::from(j) * 2_654_435_761 + 12_345) % u128::from(n.max(1))) as u64
}

pub(crate) fn authority(a: u64) -> Authority {
    Authority::try_from(format!("http://h{a}.bench.test:80")).expect("valid authority")
}

/// How the benchmarks' URLs are keyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Keys {
    /// Host-prefixed, as this build's crawler keys them
    /// (`crawlkeeper_model::key::url_key`).
    Host,
    /// A hash of the URL alone, as crawlers before PostgreSQL schema 8 and
    /// SQLite schema 5 keyed them.
    Flat,
}

/// The URLs of the store benchmarks. URL `i` is on host `host(i)`: with
/// `run` 1, host `i mod authorities` (each URL on another host than the
/// one before); with a longer run, `run` URLs in a row on one host (the
/// new links of a page, on its own host, admitted together), the runs'
/// hosts in a fixed shuffle.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Urls {
    /// Hosts the URLs are spread over.
    pub authorities: u64,
    /// URLs in a row on one host.
    pub run: u64,
    /// How they are keyed.
    pub keys: Keys,
}

impl Urls {
    /// The URLs of `authorities` hosts, one after another, keyed as the
    /// crawler keys them.
    pub fn spread(authorities: u64) -> Self {
        Self {
            authorities,
            run: 1,
            keys: Keys::Host,
        }
    }

    /// The host (authority number) of URL `i`.
    pub fn host(&self, i: u64) -> u64 {
        if self.run <= 1 {
            i % self.authorities
        } else {
            shuffled(i / self.run, self.authorities)
        }
    }

    /// URL `i` as the store is given it, and its authority.
    pub fn entry(&self, i: u64) -> (FrontierEntry, Authority) {
        let a = self.host(i);
        let url = format!("http://h{a}.bench.test/section/{}/page-{i}.html", i % 97);
        let key = match self.keys {
            Keys::Host => crawlkeeper_model::key::url_key(&format!("h{a}.bench.test"), &url),
            Keys::Flat => xxhash_rust::xxh3::xxh3_128(url.as_bytes()),
        };
        (
            FrontierEntry {
                key,
                url,
                depth: (i % 5) as u32,
                parent: Some(format!("http://h{a}.bench.test/section/{}/", i % 97)),
                redirect_chain: Vec::new(),
                known: None,
            },
            authority(a),
        )
    }
}

/// URL `i` of [`Urls::spread`]`(authorities)`.
pub(crate) fn entry(i: u64, authorities: u64) -> (FrontierEntry, Authority) {
    Urls::spread(authorities).entry(i)
}

pub(crate) fn record(e: &FrontierEntry, authority: &Authority) -> CrawlRecord {
    CrawlRecord {
        status: Some(200),
        parent: e.parent.clone(),
        fetched_at: "2026-11-21T12:00:00.000Z".into(),
        response_ms: Some(42),
        content_type: Some("text/html; charset=utf-8".into()),
        bytes: 30_000,
        title: Some("A page of a benchmark site".into()),
        links: 23,
        ..CrawlRecord::blank(e.url.clone(), authority.clone(), e.depth)
    }
}

/// A SQLite store in a fresh directory named after `label`.
pub(crate) fn fresh_sqlite(label: &str) -> Result<(PathBuf, SqliteStore)> {
    let dir =
        std::env::temp_dir().join(format!("crawlkeeper-bench-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let store = SqliteStore::open(dir.join("state.db"))?;
    Ok((dir, store))
}

/// The job `name` of a benchmark, created if new.
pub(crate) fn bench_job(store: &mut dyn Store, name: &str) -> Result<JobId> {
    Ok(store
        .open_job(&JobSpec {
            name: name.into(),
            seeds: vec!["http://h0.bench.test/".into()],
            options: "{}".into(),
            shards: 1,
        })?
        .id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shuffle_is_a_permutation_of_every_size() {
        for n in [1u64, 1000, 1_000_000] {
            let mut seen = vec![false; n as usize];
            for j in 0..n {
                let i = shuffled(j, n) as usize;
                assert!(!seen[i], "{i} twice in 0..{n}");
                seen[i] = true;
            }
        }
    }

    #[test]
    fn runs_of_urls_share_a_host_and_its_key_prefix() {
        let u = Urls {
            authorities: 1000,
            run: 16,
            keys: Keys::Host,
        };
        let (a, b) = (u.entry(32), u.entry(47));
        assert_eq!(a.1, b.1, "one run, one host");
        assert_eq!(a.0.key >> 96, b.0.key >> 96);
        assert_ne!(u.host(47), u.host(48), "the next run is another host's");
        let flat = Urls {
            keys: Keys::Flat,
            ..u
        };
        assert_eq!(
            flat.entry(32).0.key,
            xxhash_rust::xxh3::xxh3_128(a.0.url.as_bytes())
        );
        assert_eq!(Urls::spread(10).host(13), 3);
    }
}
