use std::ffi::OsString;
use std::fs::{File, FileTimes};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime};

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

fn touch(path: &std::path::Path, mode: u32, modified: SystemTime) {
    let file = File::create(path).unwrap();
    file.set_times(FileTimes::new().set_modified(modified)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn only_an_executable_sibling_of_the_same_build_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("superpi");
    let sibling = dir.path().join(FRONTEND_BIN);
    let now = SystemTime::now();
    touch(&exe, 0o755, now);
    assert_eq!(usable_sibling(&exe), None, "missing");

    touch(&sibling, 0o644, now);
    assert_eq!(usable_sibling(&exe), None, "not executable");

    touch(&sibling, 0o755, now - Duration::from_secs(30));
    assert_eq!(usable_sibling(&exe), Some(sibling.clone()), "linked half a minute before");

    touch(&sibling, 0o755, now + Duration::from_secs(600));
    assert_eq!(usable_sibling(&exe), Some(sibling.clone()), "built since");

    touch(&sibling, 0o755, now - STALE_AFTER - Duration::from_secs(1));
    assert_eq!(usable_sibling(&exe), None, "left from an earlier build");

    std::fs::remove_file(&sibling).unwrap();
    std::fs::create_dir(&sibling).unwrap();
    assert_eq!(usable_sibling(&exe), None, "a directory");
}
