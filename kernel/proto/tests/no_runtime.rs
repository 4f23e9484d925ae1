//! The protocol crate is pure data: its dependency tree holds no tokio runtime. tokio is in it
//! (tokio-util's codec needs tokio's `sync`), but never with `rt` or `rt-multi-thread`, whatever
//! the rest of the workspace asks of tokio-util.
#![allow(clippy::expect_used, clippy::disallowed_methods)] // a test: runs cargo, fails loudly

#[test]
fn the_protocol_crates_tokio_has_no_runtime() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--manifest-path", manifest, "-p", "superpi-proto"])
        .args(["-e", "normal,features", "-i", "tokio", "--prefix", "none"])
        .output()
        .expect("cargo tree runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tree.contains("tokio v1"),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runtime: Vec<&str> = tree.lines().filter(|l| l.starts_with("tokio feature \"rt")).collect();
    assert!(runtime.is_empty(), "superpi-proto's tokio has a runtime: {runtime:?}\n{tree}");
}
