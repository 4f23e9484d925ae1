//! The test house rules: each crate's integration tests are one test binary (`tests/all.rs`
//! declares a module per file), so the workspace is linked once per crate rather than once per
//! file; a test that changes its whole process is a `[[test]]` of its own, saying why in the
//! crate's Cargo.toml. A file left out of both would never run, so this test fails on it.
//! And no source file grows past 500 lines without saying why at its top (`Over 500 lines`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: an unreadable tree fails it loudly

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[test]
fn every_test_file_runs_and_each_crate_links_its_tests_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut problems = Vec::new();
    let mut crates = 0;
    for dir in crates_with_tests(root) {
        crates += 1;
        let name = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let files = test_files(&dir.join("tests"));
        if !manifest.lines().any(|l| l.trim() == "autotests = false") {
            // Cargo makes a binary of every file: fine for one.
            if files.len() > 1 {
                problems
                    .push(format!("{name}: {} test binaries ({files:?}); declare them in tests/all.rs", files.len()));
            }
            continue;
        }
        let targets: BTreeSet<String> = manifest
            .lines()
            .filter_map(|l| l.trim().strip_prefix("path = \"tests/")?.strip_suffix(".rs\"").map(str::to_string))
            .collect();
        let declared = modules(&dir.join("tests/all.rs"));
        if !targets.contains("all") {
            problems.push(format!("{name}: autotests = false without the `all` test target"));
        }
        for file in &files {
            if file != "all" && !targets.contains(file) && !declared.contains(file) {
                problems.push(format!("{name}: tests/{file}.rs is neither a module of tests/all.rs nor a [[test]]"));
            }
        }
    }
    assert!(crates >= 10, "found only {crates} crates with tests under {}", root.display());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_source_file_over_500_lines_says_why_at_its_top() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut long = Vec::new();
    let mut files = 0;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let (path, name) = (entry.path(), entry.file_name().to_string_lossy().into_owned());
            if path.is_dir() {
                // Test code, build output, installed packages and the fuzz workspace aside.
                if !name.starts_with('.') && !["target", "node_modules", "tests", "fuzz"].contains(&name.as_str()) {
                    dirs.push(path);
                }
                continue;
            }
            if !name.ends_with(".rs")
                || name.ends_with("_tests.rs")
                || !path.components().any(|c| c.as_os_str() == "src")
            {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let says_why = text.lines().take(40).any(|l| l.contains("Over 500 lines"));
            if text.lines().count() > 500 && !says_why {
                long.push(format!("{} ({} lines)", path.strip_prefix(root).unwrap().display(), text.lines().count()));
            }
        }
    }
    assert!(files > 100, "found only {files} source files under {}", root.display());
    assert!(long.is_empty(), "split these, or say at their top why not (`Over 500 lines ...`):\n{}", long.join("\n"));
}

/// The folders holding a Cargo.toml and a tests/ folder (build output and installed packages
/// aside).
fn crates_with_tests(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        if dir.join("Cargo.toml").is_file() && dir.join("tests").is_dir() {
            out.push(dir.clone());
        }
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            // A crate's own tests/ and src/ hold no crate; the workspace's tests/ is one.
            let inner = (name == "tests" || name == "src") && !path.join("Cargo.toml").exists();
            if path.is_dir() && !name.starts_with('.') && !inner && !["target", "node_modules"].contains(&name.as_str())
            {
                dirs.push(path);
            }
        }
    }
    out
}

/// The names of the `.rs` files directly in `tests`.
fn test_files(tests: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(tests)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(str::to_string))
        .collect();
    files.sort();
    files
}

/// The `mod x;` lines of a crate root.
fn modules(root: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root).unwrap_or_default();
    text.lines().filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_string)).collect()
}
