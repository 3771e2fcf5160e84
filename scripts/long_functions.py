#!/usr/bin/env python3
"""Lists the functions of crates/*/src longer than N lines (default 100),
longest first: `scripts/long_functions.py [N]`. A function runs from its
`fn` line to the closing brace at the same indent; tests/ are left out."""
import pathlib
import re
import sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 100
FN = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?fn\s+(\w+)")
ROOT = pathlib.Path(__file__).resolve().parent.parent
found = []
for path in sorted(ROOT.glob("crates/*/src/**/*.rs")):
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        end = m.group(1) + "}"
        for j in range(i + 1, len(lines)):
            if lines[j] == end:
                if j - i + 1 > LIMIT:
                    found.append((j - i + 1, str(path.relative_to(ROOT)), m.group(6)))
                break
for n, path, name in sorted(found, reverse=True):
    print(n, path, name)
print(f"{len(found)} functions over {LIMIT} lines")
