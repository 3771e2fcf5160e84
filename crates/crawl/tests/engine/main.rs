//! End-to-end tests of the crawl engine against the test site.

mod common;
mod corpus;
mod fetcher;
mod guard;
mod hostile;
mod pipeline;
mod politeness;
