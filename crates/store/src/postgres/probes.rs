//! The statements that find a batch's rows of `urls` by their keys.
//!
//! Each key is one probe of the unique index `urls_key`: `unnest` of the
//! keys `CROSS JOIN LATERAL` a subquery with `LIMIT 1` (the limit keeps
//! the planner from merging it into a join), and the rows found are then
//! written by id. The probes are these statements' only plan. A finished
//! page whose row the writer loaded comes with the row's id, and is not
//! probed.
//!
//! A join with the keys, or `key = ANY($2)` beside `job = $1`, left the
//! planner to weigh reading the job's rows instead, from statistics that
//! lag a growing table. Prepared statements run generic plans, made
//! without the keys: a crawl's first minutes on PostgreSQL finished its
//! pages through a plan that took `job = $1` from the index and the keys
//! as a filter, reading all 8,400 rows of the job to finish 13 pages
//! (`bench cluster --parts scale`, session 23).

/// Marks finished URLs done, stores their results and adds them to the
/// job's counts (`$1` the job; arrays, in the order finished: `$2` keys,
/// `$3` failed, `$4` records, `$5` shards, `$6` generations, `$8` the
/// rows' ids where the writer knows them (`NULL` elsewhere: a probe of
/// `urls_key` finds the row); `$7` the writer's row of counts,
/// `job_counts.slot`). Positions are drawn in
/// that order for every key, and a row already done is left alone;
/// returns each key marked with its position and its row's id. The counts' rows are
/// taken in shard order, as [`crate::schema::PG_ADD_COUNTS`] takes them.
pub const FINISH: &str = "WITH v AS (
         SELECT k, f, r, h, g, i, nextval('result_seqs') AS s
         FROM unnest($2::bytea[], $3::int2[], $4::text[], $5::int4[], $6::int8[], $8::int8[])
             AS t(k, f, r, h, g, i)),
     w AS (
         SELECT o.id, v.* FROM v CROSS JOIN LATERAL (
             SELECT v.i AS id WHERE v.i IS NOT NULL
             UNION ALL
             SELECT id FROM urls WHERE v.i IS NULL AND job = $1 AND key = v.k
             LIMIT 1) AS o),
     c AS (
         UPDATE urls u SET state = 2, seq = w.s FROM w
         WHERE u.id = ANY(ARRAY(SELECT id FROM w)) AND u.id = w.id AND u.state <> 2
         RETURNING w.k, w.s, w.f, w.r, w.h, w.g, u.id),
     i AS (
         INSERT INTO results (job, seq, failed, record, shard, generation)
         SELECT $1, s, f, r, h, g FROM c),
     n AS (
         INSERT INTO job_counts (job, shard, slot, seen, done, errors)
         SELECT $1, h, $7, 0, count(*), count(*) FILTER (WHERE f = 1) FROM c
         GROUP BY h ORDER BY h
         ON CONFLICT (job, shard, slot) DO UPDATE SET done = job_counts.done + excluded.done,
             errors = job_counts.errors + excluded.errors)
     SELECT k, s, id FROM c";

/// Gives queued URLs found again by a shorter path that path (`$1` the
/// job; arrays `$2` keys, `$3` depths, `$4` parents, `$5` chains);
/// returns the hosts (`auth`) of the rows changed.
pub const LOWER: &str = "WITH w AS (
         SELECT o.id, v.d, v.p, v.c
         FROM unnest($2::bytea[], $3::int4[], $4::text[], $5::text[]) AS v(k, d, p, c)
         CROSS JOIN LATERAL (
             SELECT id FROM urls WHERE job = $1 AND key = v.k LIMIT 1) AS o)
     UPDATE urls u SET depth = w.d, parent = w.p, chain = w.c FROM w
     WHERE u.id = ANY(ARRAY(SELECT id FROM w)) AND u.id = w.id AND u.state = 0
         AND u.depth > w.d
     RETURNING u.auth";

/// Admits URLs (`$1` the job; arrays, in key order: `$2` keys, `$3`
/// hosts, `$4` URLs, `$5` depths, `$6` parents, `$7` redirect chains,
/// `$8` states): each key the job knows is returned with its depth, read
/// from `urls_key` as [`DEPTHS`] reads it, and the others are inserted,
/// each returned with a `NULL` depth and, if inserted loaded (state 1),
/// its row's id. A key in neither was inserted by another writer
/// meanwhile. One round trip, as the insert alone was.
pub const ADMIT: &str = "WITH v AS (
         SELECT k, a, u, d, p, c, s
         FROM unnest($2::bytea[], $3::int8[], $4::text[], $5::int4[], $6::text[], $7::text[],
                     $8::int2[]) AS t(k, a, u, d, p, c, s)),
     w AS (
         SELECT v.*, o.depth AS known FROM v LEFT JOIN LATERAL (
             SELECT depth FROM urls WHERE job = $1 AND key = v.k LIMIT 1) AS o ON true),
     i AS (
         INSERT INTO urls (job, key, auth, url, depth, parent, chain, state)
         SELECT $1, k, a, u, d, p, c, s FROM w WHERE known IS NULL
         ON CONFLICT DO NOTHING RETURNING key, id, state)
     SELECT k, known, NULL::int8 FROM w WHERE known IS NOT NULL
     UNION ALL SELECT key, NULL, CASE WHEN state = 1 THEN id END FROM i";

/// The keys of `$2` the job (`$1`) knows, with their depths: an
/// admission's first statement where the job's limit counts new URLs
/// before any is inserted, or where recent admissions found many known
/// (`Cache::probe_first`; the others then go to [`ADMIT`], whose probe
/// of them finds the index pages this one read). `urls_key`
/// includes `depth`, so where the table's visibility map says a row's
/// page is all-visible (every page a vacuum has passed since it last
/// changed: the bulk of a large job) the probe reads the index alone.
/// A link to a URL the job has long known, the most common link a crawl
/// meets, then reads no page of `urls`: at 50 million URLs a random
/// page of the table, on the disk (`bench store --scale`).
pub const DEPTHS: &str =
    "SELECT o.key, o.depth FROM unnest($2::bytea[]) AS v(k) CROSS JOIN LATERAL (
         SELECT key, depth FROM urls WHERE job = $1 AND key = v.k LIMIT 1) AS o";

/// The keys of `$2` the job (`$1`) knows, with their results' positions
/// (`NULL` until done).
pub const KNOWN: &str = "SELECT o.key, o.seq FROM unnest($2::bytea[]) AS v(k) CROSS JOIN LATERAL (
         SELECT key, seq FROM urls WHERE job = $1 AND key = v.k LIMIT 1) AS o";

#[cfg(test)]
mod tests {
    use postgres::Client;

    use super::*;

    /// Rows a plan read and threw away, the most of any of its nodes.
    fn most_removed(plan: &[String]) -> u64 {
        plan.iter()
            .filter_map(|l| l.split("Rows Removed by Filter: ").nth(1))
            .filter_map(|n| n.trim().parse().ok())
            .max()
            .unwrap_or(0)
    }

    /// The plan of the prepared statement `name` run with `args` (an
    /// `EXECUTE`'s arguments, literals), then rolled back.
    fn explain(c: &mut Client, name: &str, args: &str) -> Vec<String> {
        let mut tx = c.transaction().unwrap();
        let rows = tx
            .query(&format!("EXPLAIN (ANALYZE) EXECUTE {name}({args})"), &[])
            .unwrap();
        tx.rollback().unwrap();
        rows.iter().map(|r| r.get::<_, String>(0)).collect()
    }

    /// Thirteen keys of the job from the `from`th row on, as an array's
    /// literal.
    fn keys_of(c: &mut Client, from: i64) -> String {
        c.query_one(
            "SELECT array_agg(key ORDER BY id)::text FROM urls WHERE id BETWEEN $1 AND $1 + 12",
            &[&from],
        )
        .unwrap()
        .get(0)
    }

    /// A job of 8,400 URLs held and 400 queued, with statistics that say
    /// each job has one row, and generic plans (made without the keys):
    /// each statement still reads only the rows of its keys.
    #[test]
    fn rows_are_found_by_their_keys_whatever_the_statistics() {
        let (_, space, mut c) = crate::postgres::test_schema::fresh("ck_probes");
        c.batch_execute(&format!(
            "INSERT INTO urls (job, key, auth, url, depth, state)
             SELECT 1, decode(md5(i::text) || md5((i + 1)::text), 'hex'), i % 400,
                 'http://a.test/' || i, 5, CASE WHEN i <= 8400 THEN 1 ELSE 0 END
             FROM generate_series(1, 8800) AS i;
             ALTER TABLE urls ALTER COLUMN job SET (n_distinct = -1);
             ANALYZE urls;
             SET plan_cache_mode = force_generic_plan;
             PREPARE finish (bigint, bytea[], int2[], text[], int4[], int8[], int4, int8[])
                 AS {FINISH};
             PREPARE lower (bigint, bytea[], int4[], text[], text[]) AS {LOWER};
             PREPARE known (bigint, bytea[]) AS {KNOWN};
             PREPARE depths (bigint, bytea[]) AS {DEPTHS};
             PREPARE admit (bigint, bytea[], int8[], text[], int4[], text[], text[], int2[])
                 AS {ADMIT};"
        ))
        .unwrap();
        let (held, queued) = (keys_of(&mut c, 100), keys_of(&mut c, 8500));
        let thirteen = |v: &str| format!("'{{{}}}'", vec![v; 13].join(","));
        // The held URLs offered again: all known, none inserted.
        let admit_known = format!(
            "1, '{held}', {}, {}, {}, {}, {}, {}",
            thirteen("1"),
            thirteen("u"),
            thirteen("5"),
            thirteen("NULL"),
            thirteen("NULL"),
            thirteen("0")
        );
        let plans = [
            explain(
                &mut c,
                "finish",
                &format!(
                    "1, '{held}', {}, {}, {}, {}, 0, {}",
                    thirteen("0"),
                    thirteen("r"),
                    thirteen("0"),
                    thirteen("NULL"),
                    thirteen("NULL")
                ),
            ),
            // The rows named by their ids (the writer loaded them): no
            // probe of `urls_key`.
            explain(
                &mut c,
                "finish",
                &format!(
                    "1, '{held}', {}, {}, {}, {}, 0, '{{{}}}'",
                    thirteen("0"),
                    thirteen("r"),
                    thirteen("0"),
                    thirteen("NULL"),
                    (100..113)
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            ),
            explain(
                &mut c,
                "lower",
                &format!(
                    "1, '{queued}', {}, {}, {}",
                    thirteen("1"),
                    thirteen("NULL"),
                    thirteen("NULL")
                ),
            ),
            explain(&mut c, "known", &format!("1, '{held}'")),
            explain(&mut c, "depths", &format!("1, '{held}'")),
            explain(&mut c, "admit", &admit_known),
        ];
        for plan in &plans {
            assert!(most_removed(plan) < 100, "{}", plan.join("\n"));
            assert!(plan[0].contains("rows=13 "), "{}", plan.join("\n"));
        }
        let by_id = plans[1].join("\n");
        assert!(
            by_id
                .lines()
                .filter(|l| l.contains("using urls_key"))
                .all(|l| l.contains("never executed")),
            "{by_id}"
        );
        // Once a vacuum has marked the table's pages all-visible, known
        // URLs' depths are read from the index alone.
        c.batch_execute("VACUUM urls").unwrap();
        for plan in [
            explain(&mut c, "depths", &format!("1, '{held}'")),
            explain(&mut c, "admit", &admit_known),
        ] {
            let plan = plan.join("\n");
            assert!(plan.contains("Index Only Scan using urls_key"), "{plan}");
            assert!(plan.contains("Heap Fetches: 0"), "{plan}");
        }
        c.batch_execute(&format!("DROP SCHEMA {space} CASCADE"))
            .unwrap();
    }
}
