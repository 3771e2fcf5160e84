#!/usr/bin/env bash
# A static test site served by a private nginx on loopback, for crawler
# benchmarks (issue #31: crawlkeeper vs spider-rs).
#
#   scripts/nginx-site.sh start DIR [PORT] [PAGES]   # default PORT 8089, PAGES 5000
#   scripts/nginx-site.sh stop DIR
#   scripts/nginx-site.sh requests DIR               # requests served so far
#
# `start` generates DIR/www once (kept while PAGES is unchanged): /index.html
# linking to the first 40 pages, /robots.txt allowing everything, and PAGES
# pages /p/0.html … /p/N-1.html of 20–40 KB each, every one with a <title>,
# filler paragraphs and exactly 40 links to other pages. Sizes and link
# targets are derived from the page number, so the site is the same on every
# machine and every run. It then starts nginx as this user's own process
# (config, pid file and logs in DIR, listening on 127.0.0.1 only; no
# systemd), waits until it answers and prints the base URL on stdout.
set -euo pipefail

usage() { sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -ge 2 ]] || usage
cmd=$1
[[ $cmd == start ]] && mkdir -p "$2"
dir=$(cd "$2" && pwd)   # absolute: nginx wants absolute paths

# Whether the nginx recorded in DIR/nginx.pid is running.
running() { [[ -s $dir/nginx.pid ]] && kill -0 "$(cat "$dir/nginx.pid")" 2>/dev/null; }

generate() {  # generate PAGES: write DIR/www unless it is there for PAGES
  local pages=$1
  [[ $(cat "$dir/site.pages" 2>/dev/null) == "$pages" ]] && return 0
  rm -rf "$dir/www" "$dir/site.pages"
  python3 - "$dir/www" "$pages" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(os.path.join(root, "p"))
# One fixed block of filler paragraphs; each page takes a slice of it at an
# offset of its own, which is far faster than making text per page.
words = ("crawl fetch queue robots host page link index archive parse "
         "frontier budget politeness delay retry header body status cache").split()
paras, x = [], 12345
for _ in range(400):
    ws = []
    for _ in range(60 + x % 60):
        x = (x * 1103515245 + 12345) % 2**31   # a small LCG: deterministic
        ws.append(words[x % len(words)])
    paras.append("<p>" + " ".join(ws).capitalize() + ".</p>\n")
def targets(i):
    # i+1 chains every page to the next, so all are reachable from /p/0.html;
    # 39 more scattered by two primes look random but are fixed.
    return [(i + 1) % n] + [(i * 7919 + j * 104729) % n for j in range(1, 40)]
for i in range(n):
    size = 20000 + (i * 7919) % 20001            # 20–40 KB, fixed per page
    head = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>Page {i}</title></head>\n<body>\n<h1>Page {i}</h1>\n<ul>\n"
            + "".join(f"<li><a href=\"/p/{t}.html\">page {t}</a></li>\n" for t in targets(i))
            + "</ul>\n")
    tail = "</body></html>\n"
    body, k, room = [], i % len(paras), size - len(head) - len(tail)
    while room > 0:
        p = paras[k % len(paras)]
        if len(p) > room:                          # cut the last one to fit
            p = p[:room - 5] + "</p>\n" if room >= 20 else " " * room
        body.append(p); room -= len(p); k += 1
    with open(os.path.join(root, "p", f"{i}.html"), "w") as f:
        f.write(head + "".join(body) + tail)
first = "".join(f"<li><a href=\"/p/{i}.html\">page {i}</a></li>\n" for i in range(min(40, n)))
with open(os.path.join(root, "index.html"), "w") as f:
    f.write(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Test site</title>"
            f"</head>\n<body>\n<h1>Test site of {n} pages</h1>\n<ul>\n{first}</ul>\n</body></html>\n")
with open(os.path.join(root, "robots.txt"), "w") as f:
    f.write("User-agent: *\nAllow: /\n")
PY
  echo "$pages" > "$dir/site.pages"
}

start() {
  local port=${1:-8089} pages=${2:-5000}
  running && { echo "nginx already running for $dir (pid $(cat "$dir/nginx.pid"))" >&2; exit 1; }
  generate "$pages"
  # nginx run by root switches its workers to `nobody`, who may not reach DIR
  # (mktemp makes it 0700): keep them as the user who runs this script.
  local user=""
  [[ $EUID -eq 0 ]] && user="user $(id -un) $(id -gn);"
  cat > "$dir/nginx.conf" <<EOF
$user
daemon on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
  types { text/html html; text/plain txt; }
  default_type application/octet-stream;
  access_log $dir/access.log;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65s;
  keepalive_requests 100000;   # no reconnects mid-benchmark (default 1000)
  # Temp files in DIR too, so nothing outside it is needed or touched.
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $dir/www;
    index index.html;
  }
}
EOF
  mkdir -p "$dir/tmp"
  : > "$dir/access.log"   # `requests` counts this run's requests only
  # -e: the error log before the config is read (default: stderr; fine too).
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  # Wait, bounded (10 s), until it answers: polls, no long sleeps.
  local url="http://127.0.0.1:$port/" deadline=$(( ${EPOCHREALTIME/./} + 10000000 ))
  until curl -sf -o /dev/null --max-time 1 "$url"; do
    if (( ${EPOCHREALTIME/./} > deadline )); then
      echo "nginx did not answer at $url within 10 s; $dir/error.log:" >&2
      tail -5 "$dir/error.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "$url"
}

stop() {
  running || { rm -f "$dir/nginx.pid"; return 0; }
  local pid
  pid=$(cat "$dir/nginx.pid")
  kill -QUIT "$pid"   # graceful: finish open requests, then exit
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "nginx $pid still running after 10 s; killing it" >&2
  kill -KILL -- "-$pid" 2>/dev/null || true   # its process group: workers too
}

case $cmd in
  start) start "${@:3}" ;;
  stop) stop ;;
  requests) wc -l < "$dir/access.log" | tr -d ' ' ;;
  *) usage ;;
esac
