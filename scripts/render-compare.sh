#!/usr/bin/env bash
# Render the same site with spider-rs's `chrome` feature and with
# `crawlkeeper crawl --render --render-when always`, and print their speed
# and cost side by side (issue #54).
#
#   scripts/render-compare.sh [--runs N]      # N pairs, default 1
#
# Environment: SPIDER_DIR (scratch cargo project, default
# /tmp/spider-chrome), PAGES (default 200), CRAWLKEEPER and TESTSITE
# (default target/release/…; build them first, this script doesn't).
#
# Both run inside a network namespace of their own whose only interface
# is loopback (`unshare -n`, as root): spider launches Chromium with its
# own switches, and whatever that browser tries to reach beyond the test
# site has no route out of the machine. spider is built once, outside the
# workspace, from crates.io (`spider` ~2.53 with `chrome`), with the
# defaults a user gets: Website::new(url) plus respect_robots_txt. Each
# run measures wall time, CPU (the crawler and every browser process it
# started, which it waits for) and the pages each tool reports.
set -euo pipefail

runs=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    *) sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
ck=${CRAWLKEEPER:-$repo/target/release/crawlkeeper}
site=${TESTSITE:-$repo/target/release/crawlkeeper-testsite}
spider_dir=${SPIDER_DIR:-/tmp/spider-chrome}
pages=${PAGES:-200}
for b in "$ck" "$site"; do
  [[ -x $b ]] || { echo "no binary at $b (cargo build --release -p crawlkeeper-cli -p crawlkeeper-testsite)" >&2; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "run as root: the tools run in a network namespace of their own (unshare -n)" >&2; exit 1; }

mkdir -p "$spider_dir/src"
cat > "$spider_dir/Cargo.toml.new" <<'EOF'
[package]
name = "spider-chrome-cmp"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
spider = { version = "~2.53", features = ["chrome"] }
EOF
cat > "$spider_dir/src/main.rs.new" <<'EOF'
// Crawl one site with spider-rs rendering every page in Chrome (its
// `chrome` feature), robots.txt respected; print pages and wall time.
use spider::tokio;
use spider::website::Website;
use std::time::Instant;

#[tokio::main]
async fn main() {
    let url = std::env::args().nth(1).expect("usage: spider-chrome-cmp URL");
    let mut website = Website::new(&url);
    website.with_respect_robots_txt(true);
    let start = Instant::now();
    website.crawl().await;
    let secs = start.elapsed().as_secs_f64();
    println!("pages {} wall {:.3}", website.get_links().len(), secs);
}
EOF
for f in Cargo.toml src/main.rs; do   # untouched if equal: cargo's cache stays fresh
  if cmp -s "$spider_dir/$f.new" "$spider_dir/$f"; then rm "$spider_dir/$f.new"; else mv "$spider_dir/$f.new" "$spider_dir/$f"; fi
done
echo "building spider with chrome in $spider_dir (the first time takes many minutes)…" >&2
nice -n 19 cargo build --release --quiet --manifest-path "$spider_dir/Cargo.toml"
spider=$spider_dir/target/release/spider-chrome-cmp

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The CPU of a command and of every process below it (browsers included,
# whoever waits for them), sampled from /proc every 100 ms.
cat > "$work/tree_cpu.py" <<'EOF'
import os, subprocess, sys, time
hz = os.sysconf('SC_CLK_TCK')
def ticks(pid):
    try:
        f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
        return int(f[11]) + int(f[12])
    except (OSError, IndexError, ValueError):
        return None
def below(root):
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f'/proc/{pid}/task')
        except OSError:
            continue
        for t in tasks:
            try:
                kids = open(f'/proc/{pid}/task/{t}/children').read().split()
            except OSError:
                continue
            found += [int(k) for k in kids]
            todo += [int(k) for k in kids]
    return found
p = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], 'w'))
seen = {}
while p.poll() is None:
    for pid in [p.pid] + below(p.pid):
        t = ticks(pid)
        if t is not None:
            seen[pid] = t
    time.sleep(0.1)
if p.returncode != 0:
    sys.exit(p.returncode)
print(sum(seen.values()) / hz)
EOF
# Everything below runs with loopback as the only network.
unshare -n bash -s "$ck" "$site" "$spider" "$work" "$pages" "$runs" <<'INNER'
set -euo pipefail
ck=$1 site=$2 spider=$3 work=$4 pages=$5 runs=$6
ip link set lo up
"$site" --hosts 1 --pages "$pages" --links 10 --embeds > "$work/site.out" 2>&1 &
site_pid=$!
trap 'kill $site_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q '^ready$' "$work/site.out" 2>/dev/null && break; sleep 0.1; done
url=$(head -1 "$work/site.out")/
# run TOOL: prints "pages cpu" (the CPU of the tool and every process
# below it, browsers included).
run() {
  local cpu
  case $1 in
    spider)
      cpu=$(python3 "$work/tree_cpu.py" "$work/spider.out" "$spider" "$url" 2> "$work/spider.err") \
        || { tail -5 "$work/spider.err" >&2; exit 1; }
      n=$(awk '{print $2}' "$work/spider.out") ;;
    crawlkeeper)
      cpu=$(python3 "$work/tree_cpu.py" /dev/null "$ck" crawl "$url" --follow --no-state --quiet \
        --render --render-when always --per-host 4 --out "$work/out.jsonl" --overwrite)
      n=$(wc -l < "$work/out.jsonl") ;;
  esac
  echo "$n $cpu"
}
for i in $(seq "$runs"); do
  for tool in spider crawlkeeper; do
    start=$(date +%s.%N)
    r=$(run $tool)
    end=$(date +%s.%N)
    echo "$tool $r $(echo "$end - $start" | bc)"
  done
done | awk -v pages="$pages" '
  BEGIN { print "| tool | pages | wall s | pages/s | CPU s | CPU ms/page |"; print "|---|--:|--:|--:|--:|--:|" }
  { printf "| %s | %d | %.2f | %.1f | %.2f | %.1f |\n", $1, $2, $4, $2 / $4, $3, 1000 * $3 / ($2 ? $2 : 1) }'
INNER
