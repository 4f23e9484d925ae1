//! No module cycles: inside each crate of the workspace, no top-level module uses a module that
//! uses it back, directly or through others. A cycle means two modules own one piece between
//! them; the fix is to move that piece to the module that owns it.
//!
//! A module is a file `src/x.rs` or a directory `src/x/` (everything below it is `x`). A use is
//! a path `crate::x…` anywhere in the code, `super::x…` in a top-level module's own file, or
//! `crate::Name` where the crate root re-exports `Name` from `x`. Comments, strings and tests
//! (`*_tests.rs` files and a trailing `#[cfg(test)] mod tests { … }`) do not count: a test may
//! reach across. `cargo test -p superpi-tests --test module_cycles` lists what it finds.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: an unreadable tree fails it loudly

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn no_crate_has_a_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut found = Vec::new();
    let mut crates = 0;
    for src in crate_sources(root) {
        crates += 1;
        let graph = Graph::read(&src);
        for cycle in graph.cycles() {
            let within: Vec<String> = graph
                .edges
                .iter()
                .filter(|((from, to), _)| cycle.contains(from) && cycle.contains(to))
                .map(|((from, to), why)| format!("    {from} -> {to} ({why})"))
                .collect();
            found.push(format!(
                "{}: {}\n{}",
                src.strip_prefix(root).unwrap_or(&src).display(),
                cycle.iter().cloned().collect::<Vec<_>>().join(", "),
                within.join("\n")
            ));
        }
    }
    assert!(crates >= 10, "found only {crates} crates under {}", root.display());
    assert!(
        found.is_empty(),
        "module cycles (move the shared piece to the module that owns it):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_sees_every_kind_of_use() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("d")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "mod a; mod b; mod c; mod d; mod e;\npub use e::{Exported, other as renamed};\n");
    write("a.rs", "use crate::{b::X, c};\n// crate::e in a comment\nconst S: &str = \"crate::e\";\n");
    write("b.rs", "fn f() { super::c::g(); }\n#[cfg(test)]\nmod tests {\n    use crate::e::T;\n}\n");
    write("c.rs", "fn g() -> crate::Exported { todo!() }\n");
    write("d/mod.rs", "mod inner;\n");
    write("d/inner.rs", "use super::Thing;\nuse crate::a::Y;\n");
    write("e.rs", "use crate::d;\n");
    write("e_tests.rs", "use crate::a;\n");
    let graph = Graph::read(src);
    let edges: BTreeSet<(String, String)> = graph.edges.keys().cloned().collect();
    let expected: BTreeSet<(String, String)> = [("a", "b"), ("a", "c"), ("b", "c"), ("c", "e"), ("d", "a"), ("e", "d")]
        .iter()
        .map(|(from, to)| (from.to_string(), to.to_string()))
        .collect();
    assert_eq!(edges, expected);
    let cycles = graph.cycles();
    let expected: BTreeSet<String> = ["a", "b", "c", "d", "e"].iter().map(|m| m.to_string()).collect();
    assert_eq!(cycles, vec![expected]);
}

/// Every crate's `src` (a directory holding `lib.rs` or `main.rs`) below `root`.
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !path.is_dir() || name.starts_with('.') || ["target", "node_modules", "fuzz"].contains(&name.as_str()) {
                continue;
            }
            if name == "src" && (path.join("lib.rs").exists() || path.join("main.rs").exists()) {
                out.push(path.clone());
            }
            dirs.push(path);
        }
    }
    out.sort();
    out
}

/// The top-level modules of one crate and which uses which.
struct Graph {
    modules: BTreeSet<String>,
    /// (from, to) with the first path that makes the edge.
    edges: BTreeMap<(String, String), String>,
}

impl Graph {
    fn read(src: &Path) -> Graph {
        let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for entry in std::fs::read_dir(src).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(module) = name.strip_suffix(".rs") {
                if !["lib", "main"].contains(&module) && !module.ends_with("_tests") {
                    files.entry(module.to_string()).or_default().push(path);
                }
            } else if path.is_dir() && name != "bin" {
                let mut below = Vec::new();
                rust_files(&path, &mut below);
                files.entry(name).or_default().extend(below);
            }
        }
        let modules: BTreeSet<String> = files.keys().cloned().collect();
        let root = ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).find(|p| p.exists()).unwrap();
        let exported = root_exports(&code(&std::fs::read_to_string(&root).unwrap()), &modules);
        let mut edges = BTreeMap::new();
        for (module, paths) in &files {
            for path in paths {
                let text = code(&std::fs::read_to_string(path).unwrap());
                let own_file = path.parent() == Some(src) || path.file_name().is_some_and(|n| n == "mod.rs");
                let mut prefixes = vec!["crate::"];
                if own_file {
                    prefixes.push("super::");
                }
                for name in prefixes.iter().flat_map(|prefix| first_segments(&text, prefix)) {
                    let target = if modules.contains(&name) { Some(&name) } else { exported.get(&name) };
                    if let Some(target) = target.filter(|t| *t != module) {
                        let file = path.strip_prefix(src).unwrap_or(path).display().to_string();
                        edges.entry((module.clone(), target.clone())).or_insert(format!("{file}: {name}"));
                    }
                }
            }
        }
        Graph { modules, edges }
    }

    /// Groups of two or more modules that reach each other.
    fn cycles(&self) -> Vec<BTreeSet<String>> {
        let reach = |from: &String| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.clone()];
            while let Some(m) = todo.pop() {
                for (a, b) in self.edges.keys() {
                    if *a == m && seen.insert(b.clone()) {
                        todo.push(b.clone());
                    }
                }
            }
            seen
        };
        let reached: BTreeMap<&String, BTreeSet<String>> = self.modules.iter().map(|m| (m, reach(m))).collect();
        let mut done = BTreeSet::new();
        let mut out = Vec::new();
        for m in &self.modules {
            if done.contains(m) {
                continue;
            }
            let group: BTreeSet<String> = std::iter::once(m.clone())
                .chain(reached[m].iter().filter(|other| reached[other].contains(m)).cloned())
                .collect();
            done.extend(group.iter().cloned());
            if group.len() > 1 {
                out.push(group);
            }
        }
        out
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.to_string_lossy().ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// The names the crate root's `use` items bring in, each with the module it comes from.
fn root_exports(root: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for item in root.split(';') {
        let Some(at) =
            item.match_indices("use ").map(|(at, _)| at).find(|at| *at == 0 || !is_ident_byte(item.as_bytes()[at - 1]))
        else {
            continue;
        };
        let path = item[at + 4..].trim();
        let path = path.strip_prefix("crate::").or_else(|| path.strip_prefix("self::")).unwrap_or(path);
        let Some((module, rest)) = path.split_once("::") else { continue };
        if modules.contains(module.trim()) {
            for name in idents(rest) {
                out.insert(name, module.trim().to_string());
            }
        }
    }
    out
}

/// The first segment after each `prefix` (`crate::x::…` gives `x`; `crate::{x::A, y}` gives
/// `x` and `y`).
fn first_segments(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find(prefix) {
        let start = from + at;
        from = start + prefix.len();
        if start > 0 && is_ident_byte(bytes[start - 1]) {
            continue;
        }
        let rest = &text[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        item_start = false;
                        out.extend(idents(&group[i..]).into_iter().next());
                    }
                    _ => {}
                }
            }
        } else {
            out.extend(idents(rest).into_iter().next());
        }
    }
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn idents(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(String::from).collect()
}

/// The code of a file: comments, string and char literals blanked, a trailing inline test
/// module cut.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let at = |i: usize, s: &str| s.chars().enumerate().all(|(k, c)| chars.get(i + k) == Some(&c));
    let ident_before = |i: usize| i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    while i < chars.len() {
        let c = chars[i];
        if at(i, "//") {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if at(i, "/*") {
            let mut depth = 0;
            while i < chars.len() {
                if at(i, "/*") {
                    depth += 1;
                    i += 2;
                } else if at(i, "*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && chars.get(i + 1) == Some(&'r'))) && !ident_before(i) && {
            let mut j = i + if c == 'b' { 2 } else { 1 };
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            chars.get(j) == Some(&'"')
        } {
            // A raw string: r#"…"#, closed by the quote and as many hashes.
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while chars[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < chars.len() && !(chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || chars.get(i + 1) == Some(&'\\')) {
            // A char literal ('a', '\n', '\u{7f}'); a lifetime has no closing quote.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}
