use super::*;

fn ctx(dir: &Path) -> Ctx {
    Ctx::new(dir.join("ws"), vec![dir.join("spill")], Default::default())
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("ws/sub")).unwrap();
    std::fs::create_dir_all(base.join("spill")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    (dir, base)
}

#[test]
fn relative_and_absolute_paths_inside_resolve() {
    let (_d, base) = setup();
    let c = ctx(&base);
    assert_eq!(c.resolve("t", "path", "sub/../a.txt", true).unwrap(), base.join("ws/a.txt"));
    assert_eq!(
        c.resolve("t", "path", base.join("ws/sub/new/b").to_str().unwrap(), true).unwrap(),
        base.join("ws/sub/new/b")
    );
    assert_eq!(c.display(&base.join("ws/sub/x")), "sub/x");
    assert_eq!(c.display(&base.join("ws")), ".");
}

#[test]
fn paths_outside_are_refused_naming_the_field() {
    let (_d, base) = setup();
    let c = ctx(&base);
    let e = c.resolve("write", "path", "../outside/x", true).unwrap_err();
    assert!(e.contains("`path`") && e.contains("outside the workspace"), "{e}");
    let e = c.resolve("read", "path", "/etc/passwd", false).unwrap_err();
    assert!(e.contains("outside the workspace"), "{e}");
    assert!(c.resolve("t", "path", "", false).unwrap_err().contains("empty"));
}

#[test]
fn read_roots_are_readable_not_writable() {
    let (_d, base) = setup();
    let c = ctx(&base);
    let spill = base.join("spill/3/call");
    assert!(c.resolve("read", "path", spill.to_str().unwrap(), false).is_ok());
    assert!(c.resolve("write", "path", spill.to_str().unwrap(), true).is_err());
}

#[test]
fn write_roots_are_written_like_the_workspace_and_only_they() {
    let (_d, base) = setup();
    std::fs::create_dir_all(base.join("docs")).unwrap();
    let c = ctx(&base).with_write_roots(vec![base.join("docs")]);
    let inside = base.join("docs/notes.md");
    assert_eq!(c.resolve("write", "path", inside.to_str().unwrap(), true).unwrap(), inside);
    assert!(c.resolve("read", "path", inside.to_str().unwrap(), false).is_ok());
    let e = c.resolve("write", "path", base.join("outside/x").to_str().unwrap(), true).unwrap_err();
    assert!(e.contains("outside the workspace"), "{e}");
    // A link in the extra root that leads elsewhere is refused as in the workspace.
    std::os::unix::fs::symlink(base.join("outside"), base.join("docs/link")).unwrap();
    let e = c.resolve("write", "path", base.join("docs/link/x").to_str().unwrap(), true).unwrap_err();
    assert!(e.contains("symbolic link"), "{e}");
}

#[test]
fn symlinks_leading_outside_are_refused() {
    let (_d, base) = setup();
    std::os::unix::fs::symlink(base.join("outside"), base.join("ws/link")).unwrap();
    std::os::unix::fs::symlink(base.join("ws/sub"), base.join("ws/inner")).unwrap();
    let c = ctx(&base);
    let e = c.resolve("write", "path", "link/new/file", true).unwrap_err();
    assert!(e.contains("symbolic link"), "{e}");
    assert!(c.resolve("write", "path", "inner/file", true).is_ok());
}

#[test]
fn editor_text_is_numbered_like_a_read_from_disk() {
    let out = crate::runner::format_read("note.txt", "alpha\nbeta\ngamma\n", Some(2), Some(1));
    assert!(!out.is_error);
    assert_eq!(out.output, "     2\tbeta\n[showing lines 2-2 of 3; continue with offset=3]\n");
    let all = crate::runner::format_read("note.txt", "one\n", None, None);
    assert_eq!(all.output, "     1\tone\n");
    assert!(crate::runner::format_read("note.txt", "one\n", Some(5), None).is_error);
    assert_eq!(crate::runner::format_read("e.txt", "", None, None).output, "(empty file)\n");
}

#[test]
fn a_hard_link_to_a_protected_file_is_refused_and_other_links_are_not() {
    let (_d, base) = setup();
    let ws = base.join("ws");
    std::fs::write(ws.join(".env"), "TOKEN=secret\n").unwrap();
    std::fs::create_dir_all(ws.join("deep/.git")).unwrap();
    std::fs::write(ws.join("deep/.git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "public\n").unwrap();
    std::fs::hard_link(ws.join(".env"), ws.join("sub/innocent.txt")).unwrap();
    std::fs::hard_link(ws.join("deep/.git/config"), ws.join("config.txt")).unwrap();
    std::fs::hard_link(ws.join("notes.txt"), ws.join("notes-again.txt")).unwrap();
    std::os::unix::fs::symlink(ws.join("sub/innocent.txt"), ws.join("pointer")).unwrap();
    let c = ctx(&base);
    for (name, twin) in [("sub/innocent.txt", ".env"), ("config.txt", "deep/.git/config"), ("pointer", ".env")] {
        let e = c.check_contents("read", &ws.join(name)).unwrap_err();
        assert!(e.contains("hard link to the protected") && e.contains(twin), "{name}: {e}");
    }
    assert_eq!(c.check_contents("read", &ws.join("notes-again.txt")), Ok(()));
    assert_eq!(c.check_contents("write", &ws.join("new.txt")), Ok(()));
    assert_eq!(c.check_contents("read", &ws.join("notes.txt")), Ok(()));
}
