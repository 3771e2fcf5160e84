#!/usr/bin/env bash
# The due-time queries of a continuous crawl (`crawl --continuous`) on a
# job of N URLs (default 10 million), every one waiting for its next
# fetch, on both stores: their plans (EXPLAIN) and how long one poll's
# work takes. The statements are those of crates/store/src/sqlite/revisit.rs
# and crates/store/src/postgres/revisit.rs.
#
#   scripts/revisit-explain.sh [N]
#
# Needs a release build (cargo build --release), sqlite3, psql and the
# test PostgreSQL server (scripts/postgres.sh). Loopback only. Takes
# about 10 minutes and 4 GB of disk at 10 million.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
BIN=target/release/crawlkeeper
SITE=target/release/crawlkeeper-testsite
PG=${CRAWLKEEPER_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}
PG_SERVER=${PG%/*}
DB=ck_revisit_explain
DIR=$(mktemp -d /tmp/crawlkeeper-revisit-explain-XXXXXX)
trap 'kill $SITE_PID 2>/dev/null || true; rm -rf "$DIR"' EXIT

"$SITE" --hosts 1 --pages 1 >"$DIR/site.txt" &
SITE_PID=$!
for _ in $(seq 100); do grep -q ready "$DIR/site.txt" 2>/dev/null && break; sleep 0.1; done
URL=$(head -1 "$DIR/site.txt")/

# The schema and a continuous job (id 1), made by the crawler itself.
psql -q "$PG_SERVER/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
for place in "--state $DIR/explain.db" "--store $PG_SERVER/$DB"; do
    # shellcheck disable=SC2086
    "$BIN" crawl "$URL" --continuous --quiet --timeout 2s --out /dev/null $place || true
done

NOW=1800000000000 # a due time half-way through the rows' due times
echo "== SQLite: $N URLs, each with a revisit due within 14 days"
time sqlite3 -bail "$DIR/explain.db" <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
INSERT INTO urls (id, job, key, auth, url, depth, state)
SELECT i + 10, 1, randomblob(16), 1, 'http://a.test/p/' || i, 1, 2 FROM n;
INSERT INTO revisits (job, url, shard, due, failed)
SELECT 1, id, 0, $NOW - 604800000 + abs(random() % 1209600000), 0 FROM urls WHERE id >= 11;
ANALYZE;
SQL
sqlite3 "$DIR/explain.db" <<SQL
.timer on
EXPLAIN QUERY PLAN SELECT r.url, r.failed, u.auth FROM revisits r JOIN urls u ON u.id = r.url
    WHERE r.job = 1 AND r.shard = 0 AND r.due <= $NOW - 604000000 ORDER BY r.due LIMIT 10000;
SELECT count(*) FROM (SELECT r.url, r.failed, u.auth FROM revisits r JOIN urls u ON u.id = r.url
    WHERE r.job = 1 AND r.shard = 0 AND r.due <= $NOW - 604000000 ORDER BY r.due LIMIT 10000);
EXPLAIN QUERY PLAN SELECT due FROM revisits WHERE job = 1 AND shard = 0 ORDER BY due LIMIT 1;
SELECT due FROM revisits WHERE job = 1 AND shard = 0 ORDER BY due LIMIT 1;
SQL

echo "== PostgreSQL: $N URLs, each with a revisit due within 14 days"
time psql -q -v ON_ERROR_STOP=1 "$PG_SERVER/$DB" <<SQL
INSERT INTO urls (job, key, auth, url, depth, state)
SELECT 1, decode(md5(i::text) || md5((i + 1)::text), 'hex'), 1, 'http://a.test/p/' || i, 1, 2
FROM generate_series(1, $N) AS i;
INSERT INTO revisits (job, url, shard, due, failed)
SELECT 1, id, 0, $NOW - 604800000 + (random() * 1209600000)::bigint, 0 FROM urls
WHERE job = 1 AND url LIKE 'http://a.test/%';
VACUUM ANALYZE urls;
VACUUM ANALYZE revisits;
SQL
psql -v ON_ERROR_STOP=1 "$PG_SERVER/$DB" <<SQL
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
WITH d AS (
    DELETE FROM revisits r USING (
        SELECT x.url FROM unnest(ARRAY[0]::int4[]) AS s(shard)
        CROSS JOIN LATERAL (
            SELECT url, due FROM revisits
            WHERE job = 1 AND shard = s.shard AND due <= $NOW - 604000000
            ORDER BY due LIMIT 10000) AS x
        ORDER BY x.due LIMIT 10000) AS p
    WHERE r.job = 1 AND r.url = p.url
    RETURNING r.url, r.shard, r.failed),
 u AS (
    UPDATE urls SET state = 0, seq = NULL FROM d
    WHERE urls.id = d.url RETURNING urls.auth, d.shard, d.failed)
SELECT a.authority, u.shard, count(*), sum(u.failed)::int8
FROM u JOIN authorities a ON a.job = 1 AND a.id = u.auth
GROUP BY a.authority, u.shard;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
SELECT min(x.due) FROM unnest(ARRAY[0]::int4[]) AS s(shard)
CROSS JOIN LATERAL (
    SELECT due FROM revisits WHERE job = 1 AND shard = s.shard
    ORDER BY due LIMIT 1) AS x;
ROLLBACK;
SQL
psql -q "$PG_SERVER/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
