use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;

use super::*;

fn serves_line(line: &str) -> bool {
    let args: Vec<OsString> = line.split_whitespace().map(OsString::from).collect();
    serves(&args)
}

#[test]
fn the_serving_roles_are_handed_over() {
    for line in [
        "acp",
        "mcp",
        "mcp --workspace /src/app",
        "rpc --unix /tmp/s.sock",
        "rpc --stdio",
        "gateway --port 0",
        "agui --port 0",
        "--data-dir /d acp",
        "--data-dir=/d --config-dir /c --runtime-dir=/r mcp",
        "acp --data-dir /d",
    ] {
        assert!(serves_line(line), "{line}");
    }
}

#[test]
fn everything_else_stays_in_this_binary() {
    for line in [
        "",
        "run hello",
        "kernel",
        "chat",
        "mcp list",
        "mcp add fs -- npx server",
        "mcp remove fs",
        "mcp disable fs",
        "mcp enable fs",
        "mcp help",
        "--help",
        "acp --help",
        "acp -h",
        "-V",
        "--version",
        "help acp",
        "gateway --help",
        "-p acp",
        "--data-dir acp",
        "--data-dir",
        "--data-dirx=/d acp",
        "__sandbox-tool acp",
    ] {
        assert!(!serves_line(line), "{line}");
    }
}

fn write(path: &std::path::Path, mode: u32, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn only_an_executable_sibling_of_the_same_build_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("superpi");
    let sibling = dir.path().join(FRONTEND_BIN);
    write(&exe, 0o755, "");
    assert!(usable_sibling(&exe, &BUILD_ID).is_err(), "missing");

    write(&sibling, 0o644, "");
    assert!(usable_sibling(&exe, &BUILD_ID).is_err(), "not executable");

    write(&sibling, 0o755, "#!/bin/sh\necho 0123456789abcdef\n");
    let why = usable_sibling(&exe, &BUILD_ID).unwrap_err();
    assert!(why.contains("no build identity"), "a script: {why}");

    // This test executable links the library, so it carries this build's identity.
    std::fs::remove_file(&sibling).unwrap();
    std::os::unix::fs::symlink(std::env::current_exe().unwrap(), &sibling).unwrap();
    assert_eq!(build_id_of(&sibling), Some(BUILD_ID));
    assert_eq!(usable_sibling(&exe, &BUILD_ID), Ok(sibling.clone()), "this build");
    let why = usable_sibling(&exe, b"0123456789abcdef").unwrap_err();
    assert!(why.contains("another build"), "{why}");

    std::fs::remove_file(&sibling).unwrap();
    std::fs::create_dir(&sibling).unwrap();
    assert!(usable_sibling(&exe, &BUILD_ID).is_err(), "a directory");
}
