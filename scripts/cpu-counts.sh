#!/usr/bin/env bash
# What one crawl of the test site costs the crawler, by counts that do not
# drift with the machine as timings do (issue #31): `one-host`'s site
# (1 host, 20 links a page, 4 KB pages, no delay) and its concurrency.
#
#   scripts/cpu-counts.sh MODE CRAWLKEEPER [PAGES] [crawl args...]
#
# MODE:
#   callgrind  user-space instructions of the whole run (valgrind; about
#              15 s for 5,000 pages)
#   stat       perf stat: CPU time (task-clock, ms), context switches, page faults and system
#              calls (all, and futex, writev, recvfrom, pwrite64) per page
#   time       /usr/bin/time: the crawler's user and system CPU seconds
#   profile    perf record -F 2999: the crawler's samples by where they
#              fall (kernel, lol_html, the HTML tokenizer and memchr, hyper and
#              reqwest, copies, allocator, tokio, URL parsing, SQLite,
#              crawlkeeper, other)
# CRAWLKEEPER is the binary to measure (compare builds by giving each);
# PAGES defaults to 5000; extra arguments go to `crawl` (`--no-state` for
# the state in memory). The test site is $TESTSITE, default
# target/release/crawlkeeper-testsite. Loopback only.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { sed -n '7p' "$0" | sed 's/^# *//' >&2; exit 2; }
mode=$1 ck=$(realpath "$2")
shift 2
pages=5000
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then pages=$1; shift; fi
site_bin=${TESTSITE:-$repo/target/release/crawlkeeper-testsite}
case $mode in callgrind | stat | time | profile) ;; *) echo "unknown mode '$mode'" >&2; exit 2 ;; esac
[[ -x $ck ]] || { echo "no crawler binary at $ck" >&2; exit 2; }
[[ -x $site_bin ]] || { echo "no test site at $site_bin (cargo build --release -p crawlkeeper-testsite)" >&2; exit 2; }

work=$(mktemp -d)
"$site_bin" --hosts 1 --pages "$pages" --links 20 --page-bytes 4096 --delay-ms 0 >"$work/site.out" &
site=$!
trap 'kill $site 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  grep -q 'http://' "$work/site.out" && break
  sleep 0.1
done
origin=$(grep -o 'http://[^ ]*' "$work/site.out" | head -1)
[[ -n $origin ]] || { echo "the test site did not start" >&2; exit 1; }
crawl=("$ck" crawl --follow --quiet --out "$work/out.jsonl" --state "$work/state.db"
  --per-host 64 --max-workers 64 --max-load 100 "$@" "$origin/")

case $mode in
  callgrind)
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "${crawl[@]}" 2>"$work/vg.err" >/dev/null
    ir=$(grep -o 'Collected : [0-9]*' "$work/vg.err" | grep -o '[0-9]*$')
    ;;
  stat)
    perf stat -x, -o "$work/stat.csv" -e task-clock,context-switches,page-faults,raw_syscalls:sys_enter,syscalls:sys_enter_futex,syscalls:sys_enter_writev,syscalls:sys_enter_recvfrom,syscalls:sys_enter_pwrite64 \
      -- "${crawl[@]}" >/dev/null
    ;;
  time)
    /usr/bin/time -o "$work/time.out" -f '%U %S' "${crawl[@]}" >/dev/null
    ;;
  profile)
    perf record -q -F 2999 -o "$work/perf.data" -- "${crawl[@]}" >/dev/null 2>&1
    ;;
esac
done_pages=$(wc -l <"$work/out.jsonl")
echo "$(basename "$ck") ($ck): $done_pages records of $((pages + 1)) URLs, crawl args: ${*:-(none)}"
case $mode in
  callgrind)
    echo "user-space instructions: $ir ($((ir / done_pages)) a page)"
    ;;
  time)
    read -r user sys <"$work/time.out"
    echo "user ${user} s, system ${sys} s"
    ;;
  stat)
    awk -F, -v p="$done_pages" '$1 ~ /^[0-9.]+$/ {printf "%-32s %12.0f  %.3f a page\n", $3, $1, $1 / p}' "$work/stat.csv"
    ;;
  profile)
    perf report -i "$work/perf.data" --no-children --sort dso,sym -g none 2>/dev/null | python3 -c '
import re, sys
groups = [
    ("lol_html", ("lol_html",)),
    ("HTML tokenizer, memchr", ("extract::scan", "memchr::")),
    ("URL parsing", ("url::", "idna", "percent_encoding", "form_urlencoded")),
    ("allocator", ("rjem", "je_", "tcache", "rallocx", "sdallocx", "mallocx")),
    ("copies (memmove)", ("memmove", "memcpy", "memset")),
    ("hyper and reqwest", ("hyper", "reqwest", "h2::", "http::", "httparse")),
    ("tokio", ("tokio", "mio")),
    ("SQLite", ("sqlite", "rusqlite")),
    ("crawlkeeper", ("crawlkeeper",)),
]
shares, total = {}, 0.0
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+\S+\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    share, space, sym = float(m.group(1)), m.group(2), m.group(3)
    total += share
    name = "kernel" if space == "k" else next(
        (g for g, needles in groups if any(n in sym for n in needles)), "other")
    shares[name] = shares.get(name, 0.0) + share
for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
    print(f"{name:24} {100 * share / total:5.1f} %")
'
    ;;
esac
