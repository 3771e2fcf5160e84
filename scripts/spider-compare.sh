#!/usr/bin/env bash
# Crawl the same static nginx site (scripts/nginx-site.sh) with spider-rs and
# with crawlkeeper, and print their speed and cost side by side (issue #31).
#
#   scripts/spider-compare.sh [--runs N]      # N pairs, default 1
#
# Environment: SPIDER_DIR (scratch cargo project for spider, default
# /tmp/spider-cmp), PORT (default 8089), PAGES (default 5000), CRAWLKEEPER
# (default target/release/crawlkeeper; build it first, this script doesn't).
#
# spider is built once, outside the workspace, from crates.io (`spider`
# ~2.53, default features) with the defaults a user gets: Website::new(url)
# plus respect_robots_txt, its own default concurrency. crawlkeeper is given
# 64 requests in flight and no politeness delay, since the server is ours.
# Each run measures wall time, CPU and peak RSS with /usr/bin/time, and the
# requests nginx served (its access log, before and after).
set -euo pipefail
shopt -s inherit_errexit   # a failure inside $(run …) stops the script too

runs=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    *) sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
site=$repo/scripts/nginx-site.sh
ck=${CRAWLKEEPER:-$repo/target/release/crawlkeeper}
spider_dir=${SPIDER_DIR:-/tmp/spider-cmp}
port=${PORT:-8089}
pages=${PAGES:-5000}
[[ -x $ck ]] || { echo "no crawlkeeper binary at $ck (cargo build --release)" >&2; exit 1; }
if [[ ! -x /usr/bin/time ]]; then   # GNU time: bash's builtin has no RSS
  apt-get update -qq && apt-get install -y -qq time >/dev/null
fi

# --- spider: a scratch cargo project, rebuilt only when its sources change.
write_if_changed() {  # FILE: stdin → FILE, untouched if equal (keeps cargo's cache fresh)
  local new; new=$(cat)
  [[ -f $1 && $(cat "$1") == "$new" ]] || printf '%s\n' "$new" > "$1"
}
mkdir -p "$spider_dir/src"
write_if_changed "$spider_dir/Cargo.toml" <<'EOF'
[package]
name = "spider-cmp"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
spider = "~2.53"
EOF
write_if_changed "$spider_dir/src/main.rs" <<'EOF'
// Crawl one site with spider-rs defaults (robots.txt respected) and print
// the pages crawled and the wall time, for scripts/spider-compare.sh.
use spider::tokio;
use spider::website::Website;
use std::time::Instant;

#[tokio::main]
async fn main() {
    let url = std::env::args().nth(1).expect("usage: spider-cmp URL");
    let mut website = Website::new(&url);
    website.with_respect_robots_txt(true);
    let start = Instant::now();
    website.crawl().await;
    let secs = start.elapsed().as_secs_f64();
    // get_links(): the URLs visited (crawl() keeps no page bodies).
    println!("pages {} wall {:.3}", website.get_links().len(), secs);
}
EOF
echo "building spider in $spider_dir (the first time takes minutes)…" >&2
# Its own target dir: never the workspace's. nice: the machine is shared.
nice -n 19 cargo build --release --quiet --manifest-path "$spider_dir/Cargo.toml"
spider=$spider_dir/target/release/spider-cmp

# --- the site, stopped (and its files removed) however the script ends.
work=$(mktemp -d)
trap '"$site" stop "$work"; rm -rf "$work"' EXIT
url=$("$site" start "$work" "$port" "$pages")

# run TOOL: crawl once; prints "pages requests wall user sys rss_kb".
run() {
  local before n
  before=$("$site" requests "$work")
  case $1 in
    spider)
      /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$spider" "$url" > "$work/spider.out"
      n=$(awk '{print $2}' "$work/spider.out") ;;
    crawlkeeper)
      rm -f "$work"/state.db* "$work/out.jsonl"   # a fresh job each run, no resume
      /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$ck" crawl "$url" --follow \
        --state "$work/state.db" --out "$work/out.jsonl" \
        --per-host 64 --max-workers 64 --max-load 100 2> "$work/crawlkeeper.log" \
        || { cat "$work/crawlkeeper.log" >&2; exit 1; }
      n=$(wc -l < "$work/out.jsonl") ;;   # one JSON line per page
  esac
  echo "$n $(( $("$site" requests "$work") - before )) $(tail -1 "$work/time")"
}

for i in $(seq "$runs"); do
  s=$(run spider)
  c=$(run crawlkeeper)
  echo
  echo "### run $i of $runs ($pages-page site, $url)"
  echo
  awk -v s="$s" -v c="$c" '
  function q(x, y) { return y ? x / y : 0 }   # 0, not a crash, if a tool crawled nothing
  function row(name, x) {
    printf "| %s | %d | %d | %.2f | %.0f | %.2f | %.3f | %.1f |\n", name, x[1], x[2], x[3],
      q(x[1], x[3]), x[4] + x[5], 1000 * q(x[4] + x[5], x[1]), x[6] / 1024
  }
  BEGIN {
    split(s, a); split(c, b)   # pages requests wall user sys rss_kb
    print "| tool | pages | nginx requests | wall s | pages/s | CPU s | CPU ms/page | peak RSS MB |"
    print "|---|--:|--:|--:|--:|--:|--:|--:|"
    row("spider-rs", a); row("crawlkeeper", b)
    printf "\ncrawlkeeper÷spider pages/s: %.2f; spider÷crawlkeeper CPU per page: %.2f\n",
      q(q(b[1], b[3]), q(a[1], a[3])), q(q(a[4] + a[5], a[1]), q(b[4] + b[5], b[1]))
  }'
done
