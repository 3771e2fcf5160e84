#!/usr/bin/env bash
# Builds release binaries and runs the benchmarks. With no arguments: all of
# them (engine scenarios, a recrawl against a fresh crawl, rendering against the served HTML, memory with a million URLs seen, the stores on
# SQLite and PostgreSQL, the coordinators, fail-over, shards, the cluster of
# node processes). Otherwise the arguments go to crawlkeeper-bench,
# e.g. `scripts/bench.sh engine --scenario one-host --runs 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p crawlkeeper-cli -p crawlkeeper-testsite -p crawlkeeper-bench
bench=target/release/crawlkeeper-bench
if [ $# -gt 0 ]; then
  exec "$bench" "$@"
fi
"$bench" engine
"$bench" recrawl
"$bench" render
"$bench" memory
scripts/postgres.sh >/dev/null
"$bench" store
"$bench" coord
"$bench" failover --runs 20
"$bench" shards
"$bench" cluster
