//! The documents stay honest: every test (and module) the README and
//! the Markdown files under `docs/` (the guide, `docs/hostile-input.md`)
//! name as `path::to::name` exists in the workspace's sources, and every
//! relative link among them leads to a file (and to a heading of it). A
//! test renamed or deleted, or a chapter or heading moved, without its
//! documentation fails here.

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

/// The documents: the README and every Markdown file under `docs/`, by
/// path relative to the workspace.
fn documents() -> Vec<String> {
    fn markdown(dir: &Path, under: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = format!("{under}/{}", entry.file_name().to_string_lossy());
            if path.is_dir() {
                markdown(&path, &name, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(name);
            }
        }
    }
    let mut docs = vec!["README.md".to_owned()];
    markdown(&root().join("docs"), "docs", &mut docs);
    docs.sort();
    for expected in [
        "docs/hostile-input.md",
        "docs/guide/README.md",
        "docs/guide/testing.md",
    ] {
        assert!(docs.iter().any(|d| d == expected), "{expected} in {docs:?}");
    }
    docs
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
    for doc in documents() {
        let text = std::fs::read_to_string(root().join(&doc)).unwrap();
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

/// The lines of a Markdown text outside fenced code blocks, numbered
/// from 1.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The anchor GitHub gives a heading: lower case, spaces as dashes,
/// other punctuation (backticks, colons, commas, …) dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| slug(l.trim_start_matches('#')))
        .collect()
}

/// The targets of a Markdown text's links and images, `[…](target)`,
/// with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in prose(text) {
        for (i, _) in line.match_indices("](") {
            if let Some(end) = line[i + 2..].find(')') {
                found.push((n, line[i + 2..i + 2 + end].to_owned()));
            }
        }
    }
    found
}

#[test]
fn every_relative_link_leads_to_a_file_and_its_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(root().join(&doc)).unwrap();
        let dir = Path::new(&doc).parent().unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                root().join(&doc)
            } else {
                root().join(dir).join(path)
            };
            if !file.exists() {
                broken.push(format!("{doc}:{line}: `{target}`: no such file"));
            } else if !anchor.is_empty() {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!("{doc}:{line}: `{target}`: no such heading"));
                }
            }
        }
    }
    assert!(checked > 30, "the documents link to each other: {checked}");
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_reads_headings_as_github_does() {
    assert_eq!(
        slug(" WARC from the store: `--store-bodies` and `results --format warc`"),
        "warc-from-the-store---store-bodies-and-results---format-warc"
    );
    assert_eq!(
        slug(" `demo`: a real crawl, offline"),
        "demo-a-real-crawl-offline"
    );
    let text = "# A\n```sh\n# not a heading [x](y.md)\n```\n## B, c\n[l](z.md#b-c) ![i](i.png)\n";
    assert_eq!(anchors(text).into_iter().collect::<Vec<_>>(), ["a", "b-c"]);
    assert_eq!(
        links(text),
        [(6, "z.md#b-c".to_owned()), (6, "i.png".to_owned())]
    );
}
