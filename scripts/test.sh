#!/usr/bin/env bash
# Runs every test of the workspace. Installs and starts what the tests need
# (PostgreSQL on 127.0.0.1:5432, a standalone ZooKeeper on a free loopback
# port, stopped at the end, warcio, cdxj-indexer and pywb from PyPI, Debian's chromium for the
# browser tests, Debian's tinyproxy for the proxy tests); fails when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo is not installed (install Rust with rustup first)" >&2
  exit 1
fi

echo "== PostgreSQL"
scripts/postgres.sh
export CRAWLKEEPER_TEST_POSTGRES=${CRAWLKEEPER_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}

echo "== ZooKeeper"
zk=$(scripts/zookeeper.sh start)
zk_dir=${zk#* }
trap 'scripts/zookeeper.sh stop "$zk_dir"' EXIT
export CRAWLKEEPER_TEST_ZOOKEEPER=${zk% *}
echo "ZooKeeper at $CRAWLKEEPER_TEST_ZOOKEEPER"

echo "== Python tools (warcio and cdxj-indexer, to check the WARC files and indexes the tests write; pywb, to replay them)"
export PATH="$HOME/.local/bin:$PATH"
if ! command -v warcio >/dev/null 2>&1 || ! command -v cdxj-indexer >/dev/null 2>&1 \
  || ! command -v wayback >/dev/null 2>&1; then
  python3 -m pip install --quiet --user warcio cdxj-indexer pywb 2>/dev/null \
    || python3 -m pip install --quiet --user --break-system-packages warcio cdxj-indexer pywb \
    || python3 -m pip install --quiet warcio cdxj-indexer pywb
fi
warcio --help >/dev/null
cdxj-indexer --help >/dev/null
wayback --help >/dev/null

echo "== Chromium (headless, for the status page's browser tests)"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v chromium >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi
chromium --version

echo "== script (util-linux: a pseudo-terminal for the progress view's tests)"
echo "== tinyproxy (a real forward proxy for the proxy tests)"
if ! command -v tinyproxy >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq tinyproxy >/dev/null
fi
tinyproxy -v

command -v script >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq bsdutils >/dev/null

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== cargo test"
cargo test --workspace --all-targets "$@"

# --all-targets leaves out doc-tests: the guide's library examples are
# among them (compiled by the cli crate).
echo "== cargo test --doc"
cargo test --workspace --doc "$@"
