//! The guide's option tables stay honest against `--help`.
//!
//! An option table starts with a marker line naming the commands it
//! documents, `<!-- options: crawl -->` or `<!-- options: crawl node demo -->`,
//! and is the lines below it up to the next blank line; the options it
//! documents are those its rows name in their first column. Every long
//! option `crawlkeeper <command> --help` prints must be documented by a
//! table of that command, and every option a table documents must be in
//! the `--help` of each command its marker names. A table headed `| option |` without a marker
//! is an error, so is a marker naming no command the binary has, and so is
//! an option named anywhere in the documents that no command has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Options every command has, documented once by clap itself.
const GLOBAL: &[&str] = &["--help", "--version"];

/// Options of other tools the documents name: `scripts/bench.sh`, the
/// test site's binary, cargo and `cdxj-indexer`.
const OTHER_TOOLS: &[&str] = &[
    "--authorities",
    "--backend",
    "--budget",
    "--ca-out",
    "--call-graph",
    "--check",
    "--crawl-arg",
    "--delay-ms",
    "--embeds",
    "--fastest",
    "--first",
    "--groups",
    "--heartbeat",
    "--hosts",
    "--inclusive",
    "--page-bytes",
    "--page-requisites",
    "--pages",
    "--parts",
    "--postgres",
    "--processes",
    "--release",
    "--runs",
    "--scale",
    "--scale-dir",
    "--scale-explain",
    "--scale-from",
    "--scale-json",
    "--scale-keep",
    "--scale-keys",
    "--scale-loads",
    "--scale-ops",
    "--scale-pages",
    "--scale-run",
    "--scale-runners",
    "--scale-runs",
    "--scale-shards",
    "--scale-spare-gb",
    "--scale-warm",
    "--scenario",
    "--showcase",
    "--slowest",
    "--soak",
    "--sort",
    "--test",
    "--tls",
    "--tool",
];

/// The marker that opens an option table.
const MARKER: &str = "<!-- options:";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The guide's chapters, by path relative to the workspace, in order.
fn guide() -> Vec<(String, String)> {
    let dir = root().join("docs/guide");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "the guide has its chapters: {files:?}");
    files
        .iter()
        .map(|p| {
            let name = format!("docs/guide/{}", p.file_name().unwrap().to_string_lossy());
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// The guide, the README and the hostile-input table.
fn documents() -> Vec<(String, String)> {
    let mut docs = guide();
    for name in ["README.md", "docs/hostile-input.md"] {
        docs.push((
            name.to_owned(),
            std::fs::read_to_string(root().join(name)).unwrap(),
        ));
    }
    docs
}

/// What `crawlkeeper ARGS` prints; it must succeed.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "crawlkeeper {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands `crawlkeeper --help` lists, `help` aside.
fn subcommands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options a `--help` text defines: its lines that begin, after
/// at most six spaces, with an option (`--state <PATH>`, `-q, --quiet`).
/// Descriptions are indented further and are not read.
fn help_options(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| {
            let indent = l.len() - l.trim_start().len();
            (1..=6).contains(&indent) && l.trim_start().starts_with('-')
        })
        .filter_map(|l| named_options(l).into_iter().next())
        .collect()
}

fn is_option_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// Every `--name` in `text`: two dashes not inside a word, a lower-case
/// letter, then letters, digits and dashes.
fn named_options(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (i, _) in text.match_indices("--") {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-') {
            continue;
        }
        let rest = &bytes[i + 2..];
        if !rest.first().is_some_and(u8::is_ascii_lowercase) {
            continue;
        }
        let len = rest.iter().take_while(|b| is_option_byte(**b)).count();
        let name = text[i + 2..i + 2 + len].trim_end_matches('-');
        found.push(format!("--{name}"));
    }
    found
}

/// The first cell of a table row: up to its second `|` that is not
/// escaped (`same-host\|any`).
fn first_cell(row: &str) -> &str {
    let cells = row.strip_prefix('|').unwrap_or(row);
    let bytes = cells.as_bytes();
    let end = (0..bytes.len())
        .find(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\'))
        .unwrap_or(cells.len());
    &cells[..end]
}

/// One option table of the documents.
#[derive(Debug)]
struct Table {
    /// `file:line` of its marker.
    at: String,
    /// The commands its marker names.
    commands: Vec<String>,
    /// The options its rows name in their first column.
    options: BTreeSet<String>,
}

/// The option tables of one document, and what is wrong with its markers.
fn tables(file: &str, text: &str) -> (Vec<Table>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let at = format!("{file}:{}", i + 1);
        if line.starts_with("| option |")
            && !i
                .checked_sub(1)
                .is_some_and(|j| lines[j].starts_with(MARKER))
        {
            problems.push(format!(
                "{at}: an option table without a `{MARKER} … -->` line above it"
            ));
        }
        let Some(rest) = line.trim().strip_prefix(MARKER) else {
            continue;
        };
        let Some(names) = rest.strip_suffix("-->") else {
            problems.push(format!("{at}: a marker not closed on its line"));
            continue;
        };
        let commands: Vec<String> = names.split_whitespace().map(str::to_owned).collect();
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty())
            .copied()
            .collect();
        if commands.is_empty() || block.is_empty() || !block.iter().all(|l| l.starts_with('|')) {
            problems.push(format!(
                "{at}: a marker names its commands and stands right above a table"
            ));
            continue;
        }
        let options: BTreeSet<String> = block
            .iter()
            .flat_map(|l| named_options(first_cell(l)))
            .collect();
        if options.is_empty() {
            problems.push(format!("{at}: a table that names no option"));
        }
        found.push(Table {
            at,
            commands,
            options,
        });
    }
    (found, problems)
}

/// What is wrong between the commands' options and the tables: an option
/// no table of its command names, an option a table names that one of its
/// commands does not have, a marker naming a command that does not exist.
fn check(commands: &BTreeMap<String, BTreeSet<String>>, tables: &[Table]) -> Vec<String> {
    let mut problems = Vec::new();
    for table in tables {
        for command in &table.commands {
            let Some(options) = commands.get(command) else {
                problems.push(format!("{}: no command `{command}`", table.at));
                continue;
            };
            for option in table.options.difference(options) {
                if !GLOBAL.contains(&option.as_str()) {
                    problems.push(format!(
                        "{}: `{option}` is not an option of `crawlkeeper {command}`",
                        table.at
                    ));
                }
            }
        }
    }
    for (command, options) in commands {
        let documented: BTreeSet<&String> = tables
            .iter()
            .filter(|t| t.commands.contains(command))
            .flat_map(|t| &t.options)
            .collect();
        for option in options {
            if !GLOBAL.contains(&option.as_str()) && !documented.contains(option) {
                problems.push(format!(
                    "`crawlkeeper {command} {option}` is in no option table of `{command}`"
                ));
            }
        }
    }
    problems
}

/// Each subcommand and the long options its `--help` prints.
fn commands_and_options() -> BTreeMap<String, BTreeSet<String>> {
    let commands = subcommands(&help(&["--help"]));
    for expected in [
        "crawl", "results", "jobs", "node", "submit", "status", "demo",
    ] {
        assert!(
            commands.iter().any(|c| c == expected),
            "`{expected}` is among the commands {commands:?}"
        );
    }
    commands
        .into_iter()
        .map(|c| {
            let options = help_options(&help(&[c.as_str(), "--help"]));
            assert!(
                options.contains("--help") && options.len() >= 2,
                "`crawlkeeper {c} --help` lists its options: {options:?}"
            );
            (c, options)
        })
        .collect()
}

#[test]
fn every_option_of_every_command_is_in_its_tables_and_every_table_option_exists() {
    let commands = commands_and_options();
    let mut all_tables = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in documents() {
        let (found, wrong) = tables(&file, &text);
        all_tables.extend(found);
        problems.extend(wrong);
    }
    assert!(
        all_tables.len() >= commands.len(),
        "every command has a table: {all_tables:?}"
    );
    problems.extend(check(&commands, &all_tables));
    assert!(
        problems.is_empty(),
        "the option tables and --help disagree:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_option_the_documents_name_is_an_option_of_some_command() {
    let known: BTreeSet<String> = commands_and_options()
        .into_values()
        .flatten()
        .chain(OTHER_TOOLS.iter().map(|s| (*s).to_owned()))
        .chain(GLOBAL.iter().map(|s| (*s).to_owned()))
        .collect();
    let mut unknown = Vec::new();
    for (file, text) in documents() {
        for (i, line) in text.lines().enumerate() {
            for option in named_options(line) {
                if !known.contains(&option) {
                    unknown.push(format!("{file}:{}: `{option}`", i + 1));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "options no command has (or add another tool's to OTHER_TOOLS):\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_check_sees_a_renamed_an_undocumented_and_an_unmarked_option() {
    let help_text = "Options:\n      --follow\n          Follow links (not --fake)\n      \
                     --depth <N>  Maximum depth\n  -q, --quiet\n  -h, --help  Print help\n";
    let options = help_options(help_text);
    assert_eq!(
        options.iter().map(String::as_str).collect::<Vec<_>>(),
        ["--depth", "--follow", "--help", "--quiet"]
    );
    let commands = BTreeMap::from([("crawl".to_owned(), options)]);
    let doc = "<!-- options: crawl -->\n| option | meaning |\n|---|---|\n\
               | `--follow` | follow, not `--depth` |\n| `--max-depth N` | renamed |\n| `-q`, `--quiet` | |\n\n\
               <!-- options: crawl scrape -->\n| option |\n| `--follow` |\n\n\
               | option | meaning |\n| `--depth` | unmarked |\n";
    let (found, wrong) = tables("doc.md", doc);
    assert_eq!(
        wrong,
        ["doc.md:12: an option table without a `<!-- options: … -->` line above it"]
    );
    assert_eq!(found.len(), 2);
    let problems = check(&commands, &found);
    assert_eq!(
        problems,
        [
            "doc.md:1: `--max-depth` is not an option of `crawlkeeper crawl`",
            "doc.md:8: no command `scrape`",
            "`crawlkeeper crawl --depth` is in no option table of `crawl`",
        ]
    );
    assert_eq!(first_cell("| `--scope a\\|b` | c |"), " `--scope a\\|b` ");
    assert_eq!(
        named_options("`--a-b`, x--y, <!-- z -->, |---|, --9, `--warc-dedup`."),
        ["--a-b", "--warc-dedup"]
    );
}
