//! Who stored each result of a shared job, read from the database itself
//! rather than through the code under test: the lease history (`leases`:
//! every take of a shard, with the position of `result_seqs` drawn once
//! the take held the shard's row) and each result's shard and generation.
//!
//! The store refuses a second result for a URL, so "every URL has one
//! result" cannot see a write by a fenced holder; this can: a result
//! stored after its shard was taken again, under the old generation, is
//! above the new take's `from_seq`.

use serde_json::Value;

/// A take of a shard: one row of `leases`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Take {
    pub job: i64,
    pub shard: u32,
    pub generation: i64,
    pub holder: String,
    /// Every result stored under an earlier take is below this position,
    /// every one stored under this take above it.
    pub from_seq: i64,
}

/// A stored result: its position, shard, the generation it was stored
/// under, and its URL.
#[derive(Debug, Clone)]
pub struct Stored {
    pub job: i64,
    pub seq: i64,
    pub shard: u32,
    pub generation: Option<i64>,
    pub url: String,
}

/// The lease history and the results of every job in one database.
pub struct Writers {
    pub takes: Vec<Take>,
    pub results: Vec<Stored>,
}

impl Writers {
    /// Reads them from the database at `url` (the sync client runs outside
    /// the test's runtime).
    pub async fn read(url: &str) -> Self {
        let url = url.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls)
                .unwrap_or_else(|e| panic!("cannot read the writers from {url}: {e}"));
            let takes = c
                .query(
                    "SELECT job, shard, generation, holder, from_seq FROM leases
                     ORDER BY job, shard, generation",
                    &[],
                )
                .unwrap()
                .iter()
                .map(|r| Take {
                    job: r.get(0),
                    shard: r.get::<_, i32>(1) as u32,
                    generation: r.get(2),
                    holder: r.get(3),
                    from_seq: r.get(4),
                })
                .collect();
            let results = c
                .query(
                    "SELECT job, seq, shard, generation, record FROM results ORDER BY seq",
                    &[],
                )
                .unwrap()
                .iter()
                .map(|r| {
                    let record: Value = serde_json::from_str(r.get::<_, &str>(4)).unwrap();
                    Stored {
                        job: r.get(0),
                        seq: r.get(1),
                        shard: r.get::<_, i32>(2) as u32,
                        generation: r.get(3),
                        url: record["url"].as_str().unwrap_or_default().to_owned(),
                    }
                })
                .collect();
            Self { takes, results }
        })
        .await
        .unwrap()
    }

    /// The take of `shard` of `job` current at position `seq`: the last
    /// one whose `from_seq` is below it.
    pub fn current(&self, job: i64, shard: u32, seq: i64) -> Option<&Take> {
        self.takes
            .iter()
            .filter(|t| t.job == job && t.shard == shard && t.from_seq < seq)
            .max_by_key(|t| t.from_seq)
    }

    /// The take of `shard` after `take`, if it was taken again.
    pub fn next(&self, take: &Take) -> Option<&Take> {
        self.takes
            .iter()
            .filter(|t| t.job == take.job && t.shard == take.shard)
            .filter(|t| t.generation > take.generation)
            .min_by_key(|t| t.generation)
    }

    /// The takes by the node named `name` (holders are `<name>@<host>:<pid>`).
    pub fn takes_by_node(&self, name: &str) -> Vec<&Take> {
        let prefix = format!("{name}@");
        self.takes
            .iter()
            .filter(|t| t.holder.starts_with(&prefix))
            .collect()
    }

    /// The takes by the `crawl` process `pid` (holders are `<host>:<pid>`).
    pub fn takes_by_pid(&self, pid: u32) -> Vec<&Take> {
        let suffix = format!(":{pid}");
        self.takes
            .iter()
            .filter(|t| t.holder.ends_with(&suffix))
            .collect()
    }

    /// Checks that `take` was followed by a take of its shard whose holder
    /// `heir` accepts, and that nothing was stored under `take` from then
    /// on; returns the heir's take.
    pub fn check_taken_over(&self, take: &Take, heir: impl Fn(&str) -> bool) -> &Take {
        let next = self
            .next(take)
            .unwrap_or_else(|| panic!("{take:?} was never taken over: {:?}", self.takes));
        assert!(heir(&next.holder), "{take:?} was taken over by {next:?}");
        let late: Vec<_> = self
            .stored_under(take)
            .filter(|r| r.seq >= next.from_seq)
            .collect();
        assert!(
            late.is_empty(),
            "{} stored {late:?} under its lease after {} took the shard at {}",
            take.holder,
            next.holder,
            next.from_seq
        );
        next
    }

    /// The results stored under `take`.
    pub fn stored_under<'a>(&'a self, take: &'a Take) -> impl Iterator<Item = &'a Stored> {
        self.results
            .iter()
            .filter(|r| r.job == take.job && r.shard == take.shard)
            .filter(|r| r.generation == Some(take.generation))
    }

    /// Checks that every result was stored under a lease, and under the
    /// generation of its shard current when it was stored: never under one
    /// a later take had fenced off.
    pub fn check(&self) {
        assert!(!self.takes.is_empty(), "no shard was ever taken");
        for r in &self.results {
            let Some(generation) = r.generation else {
                panic!("{} (shard {}) was stored outside a lease", r.url, r.shard);
            };
            let current = self.current(r.job, r.shard, r.seq).unwrap_or_else(|| {
                panic!(
                    "{} was stored at {} before shard {} was first taken: {:?}",
                    r.url, r.seq, r.shard, self.takes
                )
            });
            assert_eq!(
                generation, current.generation,
                "{} (shard {}) was stored at position {} under generation {generation}, \
                 but generation {} ({}) had taken the shard at {}: a fenced holder wrote it",
                r.url, r.shard, r.seq, current.generation, current.holder, current.from_seq
            );
        }
    }
}
