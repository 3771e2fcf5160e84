#!/usr/bin/env python3
"""Counts each crate's lines of library code: `scripts/crate_lines.py`.
Counted: crates/*/src/**/*.rs, without test files (`tests.rs`,
`*_tests.rs`, `tests_*.rs`, files under a `tests/` or `differential/`
folder) and without what follows a `#[cfg(test)]` line at the left margin
(the unit tests at a file's end). Also prints each crate's public modules
and its direct dependencies outside the workspace."""
import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def is_test_file(path):
    parts = path.parts
    name = path.name
    return (
        name == "tests.rs"
        or name.endswith("_tests.rs")
        or name.startswith("tests_")
        or "tests" in parts
        or "differential" in parts
    )


def code_lines(path):
    n = 0
    for line in path.read_text().split("\n"):
        if line.startswith("#[cfg(test)]"):
            break
        n += 1
    return n


total = 0
print(f"{'crate':<24} {'lines':>7} {'pub mods':>8} {'ext deps':>8}")
for cargo in sorted(ROOT.glob("crates/*/Cargo.toml")):
    crate = cargo.parent
    meta = tomllib.loads(cargo.read_text())
    deps = meta.get("dependencies", {})
    external = [d for d in deps if not d.startswith("crawlkeeper")]
    lines = sum(
        code_lines(p)
        for p in crate.glob("src/**/*.rs")
        if not is_test_file(p.relative_to(crate))
    )
    lib = crate / "src" / "lib.rs"
    mods = len(re.findall(r"^pub mod ", lib.read_text(), re.M)) if lib.exists() else 0
    total += lines
    print(f"{meta['package']['name']:<24} {lines:>7} {mods:>8} {len(external):>8}")
print(f"{'all':<24} {total:>7}")
