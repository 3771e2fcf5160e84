#!/usr/bin/env python3
"""A processor for crawlkeeper's tests, behaving as MODE says (argv[1]).

Writes its pid, one per line, to the file PIDS (argv[2]) when it starts.
Modes: echo, links, silent, garbage, other-id, huge, crash, hang-start,
stderr-flood, refuse, slow (argv[3] seconds before each answer), nofollow
(adds a link on every page), near-cap (answers a line of argv[3] bytes,
fields of zeros), orphan (starts a worker of its own that sleeps, in its
process group, then answers as argv[3] says: silent or ok).
"""

import base64
import json
import sys
import time

mode = sys.argv[1]
with open(sys.argv[2], "a") as pids:
    pids.write(f"{__import__('os').getpid()}\n")

if mode == "hang-start":
    time.sleep(3600)

if mode == "orphan":
    worker = __import__('os').fork()
    if worker == 0:
        with open(sys.argv[2], "a") as pids:
            pids.write(f"{__import__('os').getpid()}\n")
        time.sleep(3600)
        sys.exit(0)


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    rid = request["id"]
    url = request["url"]
    if mode == "echo":
        body = base64.b64decode(request["body"])
        answer({"id": rid, "fields": {"echo": {"url": url, "status": request["status"],
                "bytes": len(body), "seen_fields": sorted(request["fields"])}}})
    elif mode == "links":
        if url.endswith("/"):
            answer({"id": rid, "drop_links": True, "fields": {"dropped": True}})
        elif url.endswith("/product/1"):
            answer({"id": rid, "links": ["/product/2", "http://[bad", "mailto:x@y"]})
        elif url.endswith("/product/2"):
            answer({"id": rid, "links": ["3", "/product/2"]})
        else:
            answer({"id": rid})
    elif mode == "silent":
        pass
    elif mode == "garbage":
        sys.stdout.write("this is not JSON\n")
        sys.stdout.flush()
    elif mode == "other-id":
        answer({"id": rid + "0", "fields": {"wrong": True}})
    elif mode == "huge":
        chunk = "x" * (1 << 20)
        sys.stdout.write('{"id": "' + rid + '", "fields": {"big": "')
        for _ in range(1024):  # a gigabyte, unless it is stopped first
            sys.stdout.write(chunk)
        sys.stdout.write('"}}\n')
        sys.stdout.flush()
    elif mode == "crash":
        sys.exit(3)
    elif mode == "stderr-flood":
        for i in range(20000):
            sys.stderr.write(f"noise {i} " + "y" * 200 + "\n")
        sys.stderr.flush()
        answer({"id": rid, "fields": {"ok": True}})
    elif mode == "refuse":
        answer({"id": rid, "error": "no price on " + url})
    elif mode == "nofollow":
        answer({"id": rid, "links": ["/product/3"]})
    elif mode == "near-cap":
        head = '{"id": "' + rid + '", "fields": {"a": ['
        n = (int(sys.argv[3]) - len(head) - 4) // 2
        sys.stdout.write(head + "0," * (n - 1) + "0]}}\n")
        sys.stdout.flush()
    elif mode == "orphan":
        if sys.argv[3] == "ok":
            answer({"id": rid, "fields": {"ok": True}})
    elif mode == "slow":
        time.sleep(float(sys.argv[3]))
        answer({"id": rid, "fields": {"slow": True}})
