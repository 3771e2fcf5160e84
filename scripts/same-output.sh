#!/usr/bin/env bash
# Runs the showcase crawl (`crawlkeeper demo`) with two builds and compares
# their JSON Lines, ignoring what differs from run to run of one build by
# nature: the times (fetched_at, response_ms), the site's ports, the order
# of the records, `parent` (of the pages that link to a URL at the same
# depth, the first to finish is its parent, and requests run
# concurrently) and `depth` (a URL is fetched at the depth it was first
# found at: on the showcase site /p/1 is the target of /redirect/p1, at
# depth 1, and linked from pages at depth 1, at depth 2; when one of those
# pages finishes first and /p/1 is fetched before the redirect arrives, it
# is recorded at depth 2. The same build differs from run to run so, in
# two runs of six on a 2-core machine). Exit 0 when the records are
# otherwise the same.
#   scripts/same-output.sh OLD/crawlkeeper NEW/crawlkeeper [extra demo args]
set -euo pipefail
old=$1 new=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for which in old new; do
  bin=${!which}
  mkdir "$work/$which"
  (cd "$work/$which" && "$bin" demo --out demo.jsonl "$@" >/dev/null 2>&1)
  python3 - "$work/$which/demo.jsonl" >"$work/$which.norm" <<'PY'
import json, re, sys
port = re.compile(r"(127\.0\.0\.\d+|localhost|\[::1\]):\d+")
def norm(v):
    if isinstance(v, str):
        return port.sub(r"\1:PORT", v)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items() if k not in ("fetched_at", "response_ms", "parent", "depth")}
    return v
rows = [json.dumps(norm(json.loads(l)), sort_keys=True) for l in open(sys.argv[1])]
print("\n".join(sorted(rows)))
PY
done
if diff -u "$work/old.norm" "$work/new.norm"; then
  echo "same records: $(wc -l <"$work/new.norm") of each build"
else
  echo "the records differ" >&2
  exit 1
fi
