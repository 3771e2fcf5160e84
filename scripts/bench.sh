#!/usr/bin/env bash
# Builds release binaries and runs the engine benchmark (issue #2 targets:
# >= 5,000 pages/s on one host, >= 3,500 on 50 hosts, <= 0.25 CPU-s per
# 1,000 pages, peak RSS <= 64 MB). Extra arguments go to crawlkeeper-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p crawlkeeper-cli -p crawlkeeper-testsite -p crawlkeeper-bench
exec target/release/crawlkeeper-bench "$@"
