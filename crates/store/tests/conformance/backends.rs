//! The backends the suite runs on.

use std::sync::atomic::{AtomicU32, Ordering};

use crawlkeeper_store::{PgStore, SqliteStore, Store};

/// A store under test and a way to open a second connection to it.
pub struct Backend {
    pub store: Box<dyn Store>,
    pub reopen: Box<dyn Fn() -> Box<dyn Store>>,
    cleanup: Option<Box<dyn FnOnce()>>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(c) = self.cleanup.take() {
            c();
        }
    }
}

static N: AtomicU32 = AtomicU32::new(0);

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

pub fn sqlite() -> Backend {
    let dir = std::env::temp_dir().join(unique("ck_store"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    let p = path.clone();
    Backend {
        store: Box::new(SqliteStore::open(&path).unwrap()),
        reopen: Box::new(move || Box::new(SqliteStore::open(&p).unwrap())),
        cleanup: Some(Box::new(move || {
            let _ = std::fs::remove_dir_all(dir);
        })),
    }
}

pub fn postgres_url() -> String {
    std::env::var("CRAWLKEEPER_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

pub fn postgres() -> Backend {
    let url = postgres_url();
    let schema = unique("ck_test");
    let store = PgStore::connect_in_schema(&url, Some(&schema)).unwrap_or_else(|e| {
        panic!("PostgreSQL is required for these tests ({url}): {e}; run scripts/test.sh")
    });
    let (u, s) = (url.clone(), schema.clone());
    Backend {
        store: Box::new(store),
        reopen: Box::new(move || Box::new(PgStore::connect_in_schema(&u, Some(&s)).unwrap())),
        cleanup: Some(Box::new(move || {
            if let Ok(mut c) = postgres::Client::connect(&url, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
            }
        })),
    }
}

/// A client of the test server, with the name of an empty schema of its
/// own (`{prefix}_{pid}`) for a test that writes an older version's
/// tables by hand.
pub fn old_schema(prefix: &str) -> (String, String, postgres::Client) {
    let url = postgres_url();
    let space = format!("{prefix}_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS {space} CASCADE"))
        .unwrap();
    (url, space, c)
}

/// The schema version a database says it has (the client's search path
/// names its schema).
pub fn version(c: &mut postgres::Client) -> i64 {
    c.query_one("SELECT max(version) FROM crawlkeeper_version", &[])
        .unwrap()
        .get(0)
}

/// The job of the migration tests, made by a store of the older version.
pub fn old_job() -> crawlkeeper_store::JobSpec {
    crawlkeeper_store::JobSpec {
        name: "old".into(),
        seeds: vec!["http://a.test/".into()],
        options: "{}".into(),
        shards: 1,
    }
}
