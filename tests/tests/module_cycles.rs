//! No module cycles: inside each crate of the workspace, no top-level module uses a module that
//! uses it back, directly or through others. A cycle means two modules own one piece between
//! them; the fix is to move that piece to the module that owns it.
//!
//! The same holds inside each folder of a crate (a room such as `kernel/src/turn/`): its files
//! and folders are its modules, and `crate::turn::x…` or a sibling's `super::x…` is a use.
//! A module is a file `src/x.rs` or a directory `src/x/` (everything below it is `x`). A use is
//! a path `crate::x…` anywhere in the code, `super::x…` in a top-level module's own file, or
//! `crate::Name` where the crate root re-exports `Name` from `x`. Comments, strings and tests
//! (`*_tests.rs` files and a trailing `#[cfg(test)] mod tests { … }`) do not count: a test may
//! reach across. `cargo test -p superpi-tests --test all module_cycles` lists what it finds.
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
        for (dir, path) in folders(&src) {
            let graph = Graph::read(&src, &dir, &path);
            for cycle in graph.cycles() {
                let within: Vec<String> = graph
                    .edges
                    .iter()
                    .filter(|((from, to), _)| cycle.contains(from) && cycle.contains(to))
                    .map(|((from, to), why)| format!("    {from} -> {to} ({why})"))
                    .collect();
                found.push(format!(
                    "{}: {}\n{}",
                    dir.strip_prefix(root).unwrap_or(&dir).display(),
                    cycle.iter().cloned().collect::<Vec<_>>().join(", "),
                    within.join("\n")
                ));
            }
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
    write("d/mod.rs", "mod inner; mod outer;\npub(crate) use outer::Thing;\n");
    write("d/inner.rs", "use super::Thing;\nuse crate::a::Y;\n");
    write("d/outer.rs", "use crate::d::inner::Z;\n");
    write("e.rs", "use crate::d;\n");
    write("e_tests.rs", "use crate::a;\n");
    let graph = Graph::read(src, src, "");
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

/// A crate's `src` and every folder below it (but `bin`), each with its module path (`""` for
/// `src`, `turn::pipeline` for `src/turn/pipeline/`).
fn folders(src: &Path) -> Vec<(PathBuf, String)> {
    let mut out = vec![(src.to_path_buf(), String::new())];
    let mut at = 0;
    while at < out.len() {
        let (dir, path) = out[at].clone();
        at += 1;
        let mut below: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
        below.sort();
        for sub in below.into_iter().filter(|p| p.is_dir()) {
            let name = sub.file_name().unwrap().to_string_lossy().into_owned();
            if (dir == src && name == "bin") || !sub.join("mod.rs").exists() && !has_rust(&sub) {
                continue;
            }
            let path = if path.is_empty() { name } else { format!("{path}::{name}") };
            out.push((sub, path));
        }
    }
    out
}

fn has_rust(dir: &Path) -> bool {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    !files.is_empty()
}

/// The modules of one folder of a crate (its files and folders) and which uses which.
struct Graph {
    modules: BTreeSet<String>,
    /// (from, to) with the first path that makes the edge.
    edges: BTreeMap<(String, String), String>,
}

impl Graph {
    fn read(src: &Path, dir: &Path, module_path: &str) -> Graph {
        let at_root = dir == src;
        let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(module) = name.strip_suffix(".rs") {
                let root_file = if at_root { ["lib", "main"].contains(&module) } else { module == "mod" };
                if !root_file && !module.ends_with("_tests") {
                    files.entry(module.to_string()).or_default().push(path);
                }
            } else if path.is_dir() && !(at_root && name == "bin") {
                let mut below = Vec::new();
                rust_files(&path, &mut below);
                files.entry(name).or_default().extend(below);
            }
        }
        let modules: BTreeSet<String> = files.keys().cloned().collect();
        let own_prefix = if at_root { "crate::".to_string() } else { format!("crate::{module_path}::") };
        let root = ["lib.rs", "main.rs", "mod.rs"].iter().map(|f| dir.join(f)).find(|p| p.exists());
        let root_text = root.map(|r| code(&std::fs::read_to_string(r).unwrap())).unwrap_or_default();
        let exported = root_exports(&root_text, &own_prefix, &modules);
        let mut edges = BTreeMap::new();
        for (module, paths) in &files {
            for path in paths {
                let text = code(&std::fs::read_to_string(path).unwrap());
                let is_mod_rs = path.file_name().is_some_and(|n| n == "mod.rs");
                let own_file = if at_root {
                    path.parent() == Some(src) || is_mod_rs
                } else {
                    (path.parent() == Some(dir) && !is_mod_rs)
                        || (is_mod_rs && path.parent().and_then(Path::parent) == Some(dir))
                };
                let mut prefixes = vec![own_prefix.as_str()];
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
fn root_exports(root: &str, own_prefix: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for item in root.split(';') {
        let Some(at) =
            item.match_indices("use ").map(|(at, _)| at).find(|at| *at == 0 || !is_ident_byte(item.as_bytes()[at - 1]))
        else {
            continue;
        };
        let path = item[at + 4..].trim();
        let path = path.strip_prefix(own_prefix).or_else(|| path.strip_prefix("self::")).unwrap_or(path);
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

#[test]
fn the_reader_sees_uses_inside_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("d")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "mod d;\n");
    write("d/mod.rs", "mod inner; mod outer;\npub(crate) use outer::Thing;\n");
    write("d/inner.rs", "use super::Thing;\n");
    write("d/outer.rs", "use crate::d::inner::Z;\n");
    let folders = folders(src);
    assert_eq!(folders.iter().map(|(_, path)| path.as_str()).collect::<Vec<_>>(), ["", "d"]);
    let graph = Graph::read(src, &src.join("d"), "d");
    let edges: BTreeSet<(String, String)> = graph.edges.keys().cloned().collect();
    let expected: BTreeSet<(String, String)> =
        [("inner", "outer"), ("outer", "inner")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(edges, expected);
    assert_eq!(graph.cycles().len(), 1);
}
