//! The test PostgreSQL server: a database per test, admin statements
//! (its restart is `tests/restarts`'s).

/// The test server's URL for database `db` (the server named by
/// `CRAWLKEEPER_TEST_POSTGRES`, default 127.0.0.1:5432).
pub fn postgres_url(db: &str) -> String {
    let base = std::env::var("CRAWLKEEPER_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{db}")
}

/// Runs `sql` on the server's `postgres` database (the sync client runs
/// outside the test's runtime).
pub async fn admin(sql: String) {
    tokio::task::spawn_blocking(move || {
        let url = postgres_url("postgres");
        let mut c = postgres::Client::connect(&url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("PostgreSQL is required ({url}): {e}; run scripts/test.sh"));
        c.batch_execute(&sql).unwrap();
    })
    .await
    .unwrap();
}
