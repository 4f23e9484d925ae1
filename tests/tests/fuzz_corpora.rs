//! Replays every fuzz corpus (tests/fuzz/corpus/TARGET/*) through the body of its fuzz
//! target, on stable and without fuzzing: what the fuzzer once found stays fixed, and a
//! change that breaks a target's property on a known input fails here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::path::Path;

#[test]
fn every_corpus_replays_through_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut total = 0;
    for (name, target) in targets::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (every target keeps a corpus)", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "the corpus of {name} is empty");
        for file in &files {
            let data = std::fs::read(file).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name} failed on {}", file.display());
        }
        total += files.len();
    }
    eprintln!("replayed {total} corpus files through {} targets", targets::TARGETS.len());
}

/// Every fuzz target binary has a corpus folder and a line in FINDINGS.md, and the other way round.
#[test]
fn targets_corpora_and_findings_agree() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let findings = std::fs::read_to_string(fuzz.join("FINDINGS.md")).unwrap();
    let mut binaries: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    binaries.sort();
    let mut names: Vec<String> = targets::TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    assert_eq!(binaries, names, "fuzz_targets/ and TARGETS differ");
    for name in &names {
        assert!(findings.contains(&format!("| `{name}` |")), "FINDINGS.md has no line for {name}");
    }
}
