//! `store --scale --scale-explain`: the plans of what resuming a job and
//! loading a host run, on a seeded store, so that a figure that grows with
//! the job can be traced to its statement. The statements are the
//! store's (copied from `crawlkeeper_store`'s `resume` and `load`, with
//! the job, the state values and one host filled in, or the store's own
//! where it shares them); writes are rolled back.

use anyhow::Result;
use crawlkeeper_store::schema;

/// Statements of the PostgreSQL store's resume and load; `{job}` and
/// `{auth}` to fill in.
const PG: &[(&str, &str)] = &[
    (
        "resume: queue again what a gone run held",
        "UPDATE urls SET state = 0 WHERE job = {job} AND state = 1 AND (NULL::int4[] IS NULL
             OR auth IN (SELECT id FROM authorities WHERE job = {job} AND shard = ANY(NULL::int4[])))",
    ),
    ("resume: hosts with queued URLs", schema::PG_QUEUED_HOSTS),
    (
        "load: a host's next URLs",
        "UPDATE urls SET state = 1 WHERE id IN (
             SELECT id FROM urls WHERE job = {job} AND auth = {auth} AND state = 0
             ORDER BY depth LIMIT 64 FOR UPDATE SKIP LOCKED)
         RETURNING key, url, depth, parent, chain",
    ),
];

/// The same for the SQLite store.
const SQLITE: &[(&str, &str)] = &[
    (
        "resume: mark what a gone run held done or queued",
        "UPDATE urls SET state = CASE
             WHEN EXISTS (SELECT 1 FROM results r WHERE r.url = urls.id) THEN 2 ELSE 0 END
         WHERE id IN (SELECT url FROM loaded WHERE job = {job}) AND state = 1",
    ),
    (
        "resume: hosts with queued URLs",
        schema::SQLITE_QUEUED_HOSTS,
    ),
    (
        "load: a host's next URLs",
        "SELECT id, key, url, depth, parent, chain FROM urls u
         WHERE job = {job} AND auth = {auth} AND state = 0
           AND NOT EXISTS (SELECT 1 FROM results r WHERE r.url = u.id)
         ORDER BY depth LIMIT 64",
    ),
];

/// Read by both stores at resume and by `find_job`: the job's counts.
const COUNTS: (&str, &str) = ("resume and find_job: the job's counts", schema::READ_COUNTS);

/// `sql` with the job, the host and no shards filled in (the store's
/// parameters `$1`/`?1` and `$2`, or `{job}` and `{auth}`).
fn fill(sql: &str, job: i64, auth: u64) -> String {
    let job = job.to_string();
    sql.replace("{job}", &job)
        .replace("$1", &job)
        .replace("?1", &job)
        .replace("$2::int4[]", "NULL::int4[]")
        .replace("ANY($2)", "ANY(NULL::int4[])")
        .replace("{auth}", &auth.to_string())
}

/// Prints the plans, on stdout, for the store of `backend` at `location`.
pub fn explain(
    backend: &str,
    location: &str,
    schema: Option<&str>,
    job: i64,
    authorities: u64,
) -> Result<()> {
    // A host past those loaded by the measurements.
    let auth = authorities / 2 + 1;
    println!("\n### {backend}: plans\n");
    if backend == "sqlite" {
        let conn = rusqlite::Connection::open(location)?;
        for (what, sql) in SQLITE.iter().chain([&COUNTS]) {
            let sql = fill(sql, job, auth);
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let lines: Vec<String> = stmt
                .query_map([], |r| r.get::<_, String>(3))?
                .collect::<Result<_, _>>()?;
            let started = std::time::Instant::now();
            let took = if sql.starts_with("SELECT") {
                let mut s = conn.prepare(&sql)?;
                let mut rows = s.query([])?;
                while rows.next()?.is_some() {}
                format!("{:.3} s", started.elapsed().as_secs_f64())
            } else {
                "not run".into()
            };
            println!("{what} ({took}):\n```\n{}\n```", lines.join("\n"));
        }
    } else {
        let mut c = postgres::Client::connect(location, postgres::NoTls)?;
        if let Some(s) = schema {
            c.batch_execute(&format!("SET search_path TO {s}"))?;
        }
        for (what, sql) in PG.iter().chain([&COUNTS]) {
            let sql = fill(sql, job, auth);
            let mut tx = c.transaction()?;
            let rows = tx.query(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"), &[])?;
            tx.rollback()?;
            let lines: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
            println!("{what}:\n```\n{}\n```", lines.join("\n"));
        }
    }
    Ok(())
}
