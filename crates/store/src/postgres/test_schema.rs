//! A schema of its own on the test server, for the module's tests.

use postgres::{Client, NoTls};

use crate::PgStore;

/// The test server's address (`CRAWLKEEPER_TEST_POSTGRES`), a client of
/// it, and the schema `{prefix}_{pid}` made afresh by the store (the
/// client's search path names it).
pub fn fresh(prefix: &str) -> (String, String, Client) {
    let url = std::env::var("CRAWLKEEPER_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let space = format!("{prefix}_{}", std::process::id());
    let mut c = Client::connect(&url, NoTls).unwrap_or_else(|e| {
        panic!("PostgreSQL is required for this test ({url}): {e}; run scripts/test.sh")
    });
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS {space} CASCADE"))
        .unwrap();
    drop(PgStore::connect_in_schema(&url, Some(&space)).unwrap());
    c.batch_execute(&format!("SET search_path TO {space}"))
        .unwrap();
    (url, space, c)
}
