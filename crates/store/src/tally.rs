//! What one transaction changed of its job's counts, added to the job's
//! row of `job_counts` before it commits (see [`crate::schema::PG_TO_V7`]).

/// URLs a transaction added to its job, and results it stored.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Rows of `urls` made.
    pub seen: i64,
    /// Results stored.
    pub done: i64,
    /// Results stored that record an error.
    pub errors: i64,
}

impl Tally {
    /// Whether the transaction changed no count.
    pub fn is_empty(&self) -> bool {
        self.seen == 0 && self.done == 0 && self.errors == 0
    }
}

/// What a batch changed of its job's counts, by shard, in shard order.
pub type Tallies = std::collections::BTreeMap<i32, Tally>;
