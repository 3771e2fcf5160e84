//! The job crate's tests, in one test binary: opening a job (`open`) and
//! taking shards while a crawl runs (`take_shards`).

mod open;
mod take_shards;
