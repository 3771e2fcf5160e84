//! No import circles inside a crate: for each crate of the workspace, the
//! modules (one per file; `mod.rs`, `lib.rs` and `main.rs` stand for their
//! directory) and the imports between them (`use crate::…`, `use super::…`,
//! `use self::…`, a child module's name, and the same paths written inline,
//! `crate::a::B` in a type) must form a graph without cycles.
//!
//! An import of a module's own ancestor (`super::err`, `crate::StoreError`)
//! is not an edge: a parent names its children (`mod`, re-exports) and its
//! children use what it defines, as Rust intends. Modules compiled only for
//! tests (`#[cfg(test)] mod tests`, inline or a file) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The source with comments, string and character literals blanked out (to
/// spaces, so that nothing inside them reads as a path or a brace).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, 2);
            while j < rest.len() && depth > 0 {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string(rest, i > 0 && is_ident(b[i - 1])) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let j = (j + 1).min(rest.len());
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == b'\'' {
            // A character literal ('a', '\n', '\u{..}'), not a lifetime.
            let len = if rest.get(1) == Some(&b'\\') {
                // The closing quote follows the escape (`\'`, `\n`, `\u{..}`).
                rest.get(3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| p + 4)
            } else {
                let c = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + c) == Some(&b'\'')).then_some(2 + c)
            };
            let len = len.unwrap_or(1);
            blank(&mut out, &rest[..len]);
            i += len;
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the
/// start of `s`, if one starts there.
fn raw_string(s: &[u8], after_ident: bool) -> Option<usize> {
    if after_ident {
        return None;
    }
    let start = if s.starts_with(b"br") || s.starts_with(b"cr") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = start + hashes + 1;
    let end = s[body..]
        .windows(close.len())
        .position(|w| w == close.as_slice())?;
    Some(body + end + close.len())
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Identifiers (`r#` dropped), `::`, and every other character as a token.
fn tokens(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if is_ident(c) {
            let mut j = i;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            if &code[i..j] == "r" && b.get(j) == Some(&b'#') {
                i = j + 1;
                continue;
            }
            out.push(code[i..j].to_owned());
            i = j;
        } else if code[i..].starts_with("::") {
            out.push("::".to_owned());
            i += 2;
        } else {
            let len = code[i..].chars().next().map_or(1, char::len_utf8);
            out.push(code[i..i + len].to_owned());
            i += len;
        }
    }
    out
}

/// `toks` without the modules compiled only for tests (`#[cfg(test)] mod
/// tests { … }` or `#[cfg(test)] mod tests;`), their attributes included.
fn without_test_modules(toks: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        if toks[i] != "#" {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        let end = attribute_end(toks, i);
        let attr = &toks[i..end];
        let cfg_test = attr.iter().any(|t| t == "cfg")
            && attr.iter().any(|t| t == "test")
            && !attr.iter().any(|t| t == "not");
        if cfg_test {
            // Further attributes and a visibility, then `mod name`.
            let mut j = end;
            loop {
                match toks.get(j).map(String::as_str) {
                    Some("#") => j = attribute_end(toks, j),
                    Some("pub") if toks.get(j + 1).is_some_and(|t| t == "(") => {
                        j = toks[j..]
                            .iter()
                            .position(|t| t == ")")
                            .map_or(j + 1, |p| j + p + 1);
                    }
                    Some("pub") => j += 1,
                    _ => break,
                }
            }
            if toks.get(j).is_some_and(|t| t == "mod") {
                i = match toks.get(j + 2).map(String::as_str) {
                    Some("{") => block_end(toks, j + 2),
                    _ => j + 3,
                };
                continue;
            }
        }
        out.extend_from_slice(attr);
        i = end;
    }
    out
}

/// The index after the attribute (`#[…]` or `#![…]`) starting at `i`.
fn attribute_end(toks: &[String], i: usize) -> usize {
    let mut j = i + 1;
    if toks.get(j).is_some_and(|t| t == "!") {
        j += 1;
    }
    if toks.get(j).is_none_or(|t| t != "[") {
        return i + 1;
    }
    let mut depth = 0;
    while j < toks.len() {
        match toks[j].as_str() {
            "[" => depth += 1,
            "]" => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// The index after the block whose `{` is at `i`.
fn block_end(toks: &[String], i: usize) -> usize {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(i) {
        match t.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

fn is_name(t: &str) -> bool {
    t.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
}

/// The code of one file, walked with the inline module each token is in.
struct Walk<'a> {
    toks: &'a [String],
    i: usize,
    depth: usize,
    /// Inline modules around the token, each with the depth its body
    /// closes at.
    inline: Vec<(String, usize)>,
}

/// What [`Walk`] meets.
enum Step<'a> {
    /// `mod name;`: a module in a file of its own.
    ModFile(&'a str),
    /// `mod name {`: an inline module, now the last of [`Walk::inline`].
    ModInline,
    /// Any other token.
    Token,
}

impl<'a> Walk<'a> {
    fn new(toks: &'a [String]) -> Self {
        Walk {
            toks,
            i: 0,
            depth: 0,
            inline: Vec::new(),
        }
    }

    /// The next step, with `self.i` at its token; `None` at the end.
    fn next(&mut self) -> Option<Step<'a>> {
        let toks = self.toks;
        let t = toks.get(self.i)?.as_str();
        match t {
            "{" => self.depth += 1,
            "}" => {
                self.depth = self.depth.saturating_sub(1);
                if self.inline.last().is_some_and(|m| m.1 == self.depth) {
                    self.inline.pop();
                }
            }
            "mod" if toks.get(self.i + 1).is_some_and(|n| is_name(n)) => {
                let name = toks[self.i + 1].as_str();
                match toks.get(self.i + 2).map(String::as_str) {
                    Some("{") => {
                        self.inline.push((name.to_owned(), self.depth));
                        self.depth += 1;
                        self.i += 3;
                        return Some(Step::ModInline);
                    }
                    Some(";") => {
                        self.i += 3;
                        return Some(Step::ModFile(name));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        self.i += 1;
        Some(Step::Token)
    }
}

/// One crate's modules, by path (`["sqlite", "apply"]`), each with the
/// file it lives in (inline modules live in their file's).
#[derive(Default)]
struct Crate {
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Each file's code, test modules left out.
    code: BTreeMap<PathBuf, Vec<String>>,
}

impl Crate {
    /// The crate whose root file is `root`.
    fn read(root: &Path) -> Self {
        let mut krate = Crate::default();
        krate.read_file(root, Vec::new());
        krate
    }

    /// Reads `file`, module `path`, and the module files it declares.
    fn read_file(&mut self, file: &Path, path: Vec<String>) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let toks = without_test_modules(&tokens(&code_only(&text)));
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let dir = if ["lib.rs", "main.rs", "mod.rs"].contains(&name) {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        self.modules.insert(path.clone(), file.to_path_buf());
        let mut walk = Walk::new(&toks);
        let mut children = Vec::new();
        while let Some(step) = walk.next() {
            match step {
                Step::ModInline => {
                    let mut sub = path.clone();
                    sub.extend(walk.inline.iter().map(|m| m.0.clone()));
                    self.modules.insert(sub, file.to_path_buf());
                }
                Step::ModFile(child) => {
                    let inline: Vec<String> = walk.inline.iter().map(|m| m.0.clone()).collect();
                    let mut at = dir.clone();
                    at.extend(&inline);
                    let flat = at.join(format!("{child}.rs"));
                    let child_file = if flat.exists() {
                        flat
                    } else {
                        at.join(child).join("mod.rs")
                    };
                    let mut sub = path.clone();
                    sub.extend(inline);
                    sub.push(child.to_owned());
                    children.push((child_file, sub));
                }
                Step::Token => {}
            }
        }
        self.code.insert(file.to_path_buf(), toks);
        for (child_file, sub) in children {
            self.read_file(&child_file, sub);
        }
    }

    /// The import edges between files: `from` → the files it imports.
    fn edges(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (path, file) in &self.modules {
            if !path.is_empty() && self.modules[&path[..path.len() - 1]] == *file {
                continue; // An inline module: read with its file.
            }
            let toks = &self.code[file];
            let mut walk = Walk::new(toks);
            while walk.next().is_some() {
                let i = walk.i - 1;
                let mut here = path.clone();
                here.extend(walk.inline.iter().map(|m| m.0.clone()));
                if !self.starts_path(toks, i, &here) {
                    continue;
                }
                let mut named = BTreeSet::new();
                walk.i = self.path(toks, i, &here, Vec::new(), &mut named);
                for target in named {
                    let to = &self.modules[&target];
                    // Its own module or an enclosing one: no edge.
                    let ancestor = path.starts_with(&target);
                    if to != file && !ancestor {
                        edges.entry(file.clone()).or_default().insert(to.clone());
                    }
                }
            }
        }
        edges
    }

    /// Whether `toks[i]` starts a path into the crate: `crate::`,
    /// `super::`, `self::` or a child module's name followed by `::`, and
    /// is not a later segment of a path (`x::crate`) nor a macro's `$crate`.
    fn starts_path(&self, toks: &[String], i: usize, here: &[String]) -> bool {
        let t = toks[i].as_str();
        if toks.get(i + 1).is_none_or(|n| n != "::") {
            return false;
        }
        if i > 0 && ["::", "$", "."].contains(&toks[i - 1].as_str()) {
            return false;
        }
        if ["crate", "super", "self"].contains(&t) {
            return true;
        }
        let mut child = here.to_vec();
        child.push(t.to_owned());
        self.modules.contains_key(&child)
    }

    /// Reads the path (or `use` tree) starting at `toks[i]`, written in
    /// module `here` after the segments `prefix`; adds the modules it names
    /// to `out` and returns the index after it.
    fn path(
        &self,
        toks: &[String],
        mut i: usize,
        here: &[String],
        mut prefix: Vec<String>,
        out: &mut BTreeSet<Vec<String>>,
    ) -> usize {
        loop {
            match toks.get(i).map(String::as_str) {
                Some("{") => {
                    // A use group: each part continues the prefix.
                    i += 1;
                    while i < toks.len() && toks[i] != "}" {
                        if toks[i] == "," {
                            i += 1;
                        } else {
                            let before = i;
                            i = self.path(toks, i, here, prefix.clone(), out);
                            if i == before {
                                i += 1;
                            }
                        }
                    }
                    return i + 1;
                }
                Some(t) if is_name(t) || t == "*" => {
                    prefix.push(t.to_owned());
                    i += 1;
                    if toks.get(i).is_some_and(|t| t == "::") {
                        i += 1;
                        continue;
                    }
                    if toks.get(i).is_some_and(|t| t == "as") {
                        i += 2;
                    }
                    break;
                }
                _ => break,
            }
        }
        if let Some(target) = self.resolve(here, &prefix) {
            out.insert(target);
        }
        i
    }

    /// The module `segments` (a path written in module `here`) names: the
    /// deepest module along it.
    fn resolve(&self, here: &[String], segments: &[String]) -> Option<Vec<String>> {
        let mut at: Vec<String> = here.to_vec();
        let mut rest = segments;
        match segments.first().map(String::as_str) {
            Some("crate") => {
                at.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            _ => {}
        }
        while rest.first().is_some_and(|s| s == "super") {
            at.pop()?;
            rest = &rest[1..];
        }
        for segment in rest {
            let mut next = at.clone();
            next.push(segment.clone());
            if !self.modules.contains_key(&next) {
                break;
            }
            at = next;
        }
        Some(at)
    }
}

/// A cycle in `edges`, as the files along it (the first again at the end),
/// if there is one.
fn find_cycle(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Option<Vec<PathBuf>> {
    fn visit<'a>(
        node: &'a PathBuf,
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        done: &mut BTreeSet<&'a PathBuf>,
        stack: &mut Vec<&'a PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        if let Some(start) = stack.iter().position(|n| *n == node) {
            let mut cycle: Vec<PathBuf> = stack[start..].iter().map(|p| (*p).clone()).collect();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node);
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut done, &mut Vec::new()))
}

/// The cycles of `edges`, each as `a -> b -> a`: one is found, its last
/// edge dropped, and so on, so that every edge in a circle is named once.
fn every_cycle(mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<String> {
    let mut cycles = Vec::new();
    while let Some(cycle) = find_cycle(&edges) {
        let (from, to) = (&cycle[cycle.len() - 2], &cycle[cycle.len() - 1]);
        if let Some(next) = edges.get_mut(from) {
            next.remove(to);
        }
        let names: Vec<String> = cycle.iter().map(|f| shown(f)).collect();
        cycles.push(names.join(" -> "));
    }
    cycles
}

/// Every crate root of the workspace: `crates/*/src/lib.rs` and `main.rs`.
fn crate_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        for name in ["lib.rs", "main.rs"] {
            let file = dir.join("src").join(name);
            if file.exists() {
                roots.push(file);
            }
        }
    }
    roots
}

fn shown(file: &Path) -> String {
    let root = root().canonicalize().unwrap();
    let file = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    file.strip_prefix(&root)
        .unwrap_or(&file)
        .display()
        .to_string()
}

#[test]
fn no_crate_imports_in_a_circle() {
    let roots = crate_roots();
    assert!(roots.len() >= 10, "the crates were found: {roots:?}");
    let mut circles = Vec::new();
    let mut edge_count = 0;
    for root in &roots {
        let krate = Crate::read(root);
        let edges = krate.edges();
        edge_count += edges.values().map(BTreeSet::len).sum::<usize>();
        circles.extend(every_cycle(edges));
    }
    // The check sees imports at all (a broken parser finds no circle).
    assert!(edge_count > 100, "imports found: {edge_count}");
    assert!(
        circles.is_empty(),
        "modules import each other in a circle (move what both need into a \
         module of its own):\n  {}",
        circles.join("\n  ")
    );
}

/// The parser on a sample: groups, inline paths, child modules, `super`,
/// ancestors left out, test modules left out.
#[test]
fn the_check_reads_imports() {
    let dir = std::env::temp_dir().join(format!("no-import-circles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::create_dir_all(dir.join("d")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\npub use a::X;\npub struct Root;\n",
    );
    // An inline module (a brace in a character literal), a test file.
    write(
        "d.rs",
        "pub mod inline {\n    fn g() -> char { '}' }\n    use crate::c::Z;\n}\n\
         pub fn h() -> &'static str { r#\"crate::a::X\"# }\n\
         #[cfg(test)]\nmod tests;\n",
    );
    write("d/tests.rs", "use crate::b::W;\n");
    write(
        "a/mod.rs",
        "mod inner;\nuse self::inner::Y;\nuse crate::Root;\npub struct X;\n\
         #[cfg(test)]\nmod tests { use crate::c::Z; }\n",
    );
    write("a/inner.rs", "use super::super::{b::{self, W}, Root};\n");
    write(
        "b.rs",
        "// use crate::c::Z;\nconst S: &str = \"crate::c::Z\";\npub struct W(crate::c::Z);\n",
    );
    write("c.rs", "pub struct Z;\nfn f() { let _ = crate::a::X; }\n");
    let krate = Crate::read(&dir.join("lib.rs"));
    let edges = krate.edges();
    let named = |from: &str| -> Vec<String> {
        let mut to: Vec<String> = edges
            .get(&dir.join(from))
            .into_iter()
            .flatten()
            .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        to.sort();
        to
    };
    assert_eq!(named("lib.rs"), ["a/mod.rs"]);
    assert_eq!(named("a/mod.rs"), ["a/inner.rs"]);
    assert_eq!(named("a/inner.rs"), ["b.rs"]);
    assert_eq!(named("b.rs"), ["c.rs"]);
    assert_eq!(named("c.rs"), ["a/mod.rs"]);
    assert_eq!(named("d.rs"), ["c.rs"]);
    assert!(!krate.code.contains_key(&dir.join("d/tests.rs")));
    let cycle = find_cycle(&edges).expect("a -> inner -> b -> c -> a");
    assert_eq!(cycle.len(), 5, "{cycle:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
