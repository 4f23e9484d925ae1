// The sources the binaries are built from, hashed: included by this crate's build.rs (the
// first half of the build identity both binaries carry) and by the tests' build.rs (so the
// end-to-end tests refuse a binary built from other sources than theirs).

/// The sources the binaries are built from (paths from the workspace root): the crates they
/// depend on and the lock file. `tests/` and `conformance/` are not.
const SOURCES: &[&str] = &["Cargo.toml", "Cargo.lock", "kernel", "providers", "sandbox", "frontends"];

/// A hash of every file under [`SOURCES`] in the workspace at `root` (names and contents), and
/// the `rerun-if-changed` lines that make Cargo run the build script again when one changes.
/// Outside the workspace (a packaged crate, `root` its own folder) every file under `root`.
fn sources_hash(root: &std::path::Path) -> u64 {
    use std::hash::Hasher;
    let mut files = Vec::new();
    let sources = if root.join("frontends").is_dir() { SOURCES } else { &["."] };
    for source in sources {
        let path = root.join(source);
        println!("cargo:rerun-if-changed={}", path.display());
        collect_sources(&path, &mut files);
    }
    files.sort();
    let mut hash = std::hash::DefaultHasher::new();
    for file in &files {
        hash.write(file.strip_prefix(root).unwrap_or(file).as_os_str().as_encoded_bytes());
        hash.write(&std::fs::read(file).unwrap_or_default());
    }
    hash.finish()
}

/// The files under `path` (or `path` itself), skipping build output and hidden folders.
fn collect_sources(path: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(meta) = std::fs::metadata(path) else { return };
    if meta.is_file() {
        files.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == "target" || name == "node_modules" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        collect_sources(&entry.path(), files);
    }
}
