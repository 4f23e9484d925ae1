//! `superpi --version` says which build it is. Also why this crate has an integration test at
//! all: Cargo builds a package's binaries for its integration tests, so `cargo test
//! --workspace` alone rebuilds `superpi` and `superpi-frontend` before the end-to-end tests of
//! the other crates run them (which refuse a binary of other sources, tests/src/lib.rs).
#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a test runs the binary it checks

#[test]
fn the_version_names_the_build() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_superpi")).arg("--version").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8(out.stdout).unwrap();
    let rest = line
        .trim()
        .strip_prefix(&format!("superpi {} (build ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{line}"));
    // `(build ID, commit COMMIT, built YYYY-MM-DD)`: the identity first (the tests read its first
    // 8 digits), then the commit (`git rev-parse --short=12`, `unknown` outside a git checkout)
    // and the build date.
    let inside = rest.strip_suffix(')').unwrap_or_else(|| panic!("{line}"));
    let parts: Vec<&str> = inside.split(", ").collect();
    let [id, commit, date] = parts[..] else { panic!("{line}") };
    assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");
    let commit = commit.strip_prefix("commit ").unwrap_or_else(|| panic!("{line}"));
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert!(commit == "unknown" || hash.len() == 12 && hash.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");
    let date = date.strip_prefix("built ").unwrap_or_else(|| panic!("{line}"));
    let digits: Vec<&str> = date.split('-').collect();
    assert!(
        matches!(digits[..], [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2)
            && date.bytes().all(|b| b.is_ascii_digit() || b == b'-'),
        "{line}"
    );
    // The frontend binary carries the same identity: it is of the same build.
    let frontend = std::fs::read(env!("CARGO_BIN_EXE_superpi-frontend")).unwrap();
    assert!(frontend.windows(16).any(|w| w == id.as_bytes()), "superpi-frontend carries build {id}");
}
