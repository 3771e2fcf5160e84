//! The README and `docs/hostile-input.md` stay honest: every test (and
//! module) they name as `path::to::name` exists in the workspace's
//! sources. A test renamed or deleted without its documentation fails
//! here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Paths the documents name that are not ours (a profile's symbols).
const EXTERNAL: &[&str] = &["sha1"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'
}

/// The names the sources define: functions, modules, files (by stem) and
/// crates (`crawlkeeper_<dir>`).
fn defined_names() -> BTreeSet<String> {
    let mut files = Vec::new();
    sources(&root().join("crates"), &mut files);
    sources(&root().join("fuzz/fuzz_targets"), &mut files);
    assert!(files.len() > 100, "the sources were found: {}", files.len());
    let mut names = BTreeSet::new();
    for file in &files {
        if let Some(stem) = file.file_stem().and_then(|s| s.to_str()) {
            names.insert(stem.to_owned());
        }
        let text = std::fs::read_to_string(file).unwrap();
        for keyword in ["fn ", "mod "] {
            for (i, _) in text.match_indices(keyword) {
                let before = text[..i].bytes().next_back();
                if before.is_some_and(is_name_byte) {
                    continue;
                }
                let rest = &text.as_bytes()[i + keyword.len()..];
                let len = rest.iter().take_while(|b| is_name_byte(**b)).count();
                if len > 0 {
                    names.insert(text[i + keyword.len()..i + keyword.len() + len].to_owned());
                }
            }
        }
    }
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        if let Some(dir) = entry.file_name().to_str() {
            names.insert(format!("crawlkeeper_{dir}"));
        }
    }
    names
}

/// The `a::b::c` paths written in backticks in `text`, lower-case names
/// only (types and external items are not tests).
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.contains("::") && t.bytes().next().is_some_and(is_name_byte))
        .filter(|t| !t.ends_with(':'))
        .filter(|t| t.bytes().all(|b| is_name_byte(b) || b == b':' || b == b'*'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_test_the_documents_name_exists() {
    let names = defined_names();
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in ["README.md", "docs/hostile-input.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for path in named_paths(&text) {
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            if segments.first().is_some_and(|s| EXTERNAL.contains(s)) {
                continue;
            }
            checked += 1;
            for segment in segments.iter().filter(|s| **s != "*" && **s != "tests") {
                if !names.contains(*segment) {
                    missing.push(format!("{doc}: `{path}` ({segment})"));
                    break;
                }
            }
        }
    }
    assert!(checked > 50, "the documents name tests: {checked}");
    assert!(
        missing.is_empty(),
        "named but not found:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_check_sees_a_name_that_does_not_exist() {
    let names = defined_names();
    let paths = named_paths(
        "see `safety::no_such_test_was_ever_written`, `Type::new` and `::ffff:127.0.0.1`",
    );
    assert_eq!(paths, ["safety::no_such_test_was_ever_written"]);
    assert!(names.contains("safety") && !names.contains("no_such_test_was_ever_written"));
}
