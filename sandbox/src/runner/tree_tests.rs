use std::path::Path;

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skills_read() -> TreeRead {
    TreeRead {
        beneath: vec![".superpi".into(), "skills".into()],
        depth: 3,
        texts: vec!["*.md".into(), "*/SKILL.md".into()],
        max_file_bytes: 16,
    }
}

/// Entries to the depth, texts only of the files asked for, and every refusal with its reason:
/// a link, a hard link (a second name), a protected path, a file past the size asked.
#[test]
fn a_tree_lists_to_its_depth_reads_what_is_asked_and_refuses_links_and_protected_files() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let skills = ws.join(".superpi/skills");
    write(&skills.join("a.md"), "one");
    write(&skills.join("big.md"), "seventeen bytes!!");
    write(&skills.join("forms/SKILL.md"), "two");
    write(&skills.join("forms/x/y/deep.txt"), "too deep");
    write(&skills.join("forms/id_rsa"), "key");
    write(&ws.join(".env"), "SECRET=1");
    std::fs::hard_link(ws.join(".env"), skills.join("twin.md")).unwrap();
    std::os::unix::fs::symlink(ws.join(".env"), skills.join("link.md")).unwrap();

    let tree = read_tree(&ws, &skills_read(), &ProtectedPaths::default()).unwrap().unwrap();
    let kinds: Vec<(&str, String)> = tree
        .entries
        .iter()
        .map(|e| {
            let kind = match &e.kind {
                TreeKind::Dir => "dir".to_string(),
                TreeKind::File { len, text } => format!("{len} {text:?}"),
                TreeKind::Refused(why) => why.replace(&format!("{}/", skills.display()), ""),
            };
            (e.path.as_str(), kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("a.md", "3 Some(\"one\")".to_string()),
            ("big.md", "big.md holds 17 bytes, more than the 16 read of one file".into()),
            ("forms", "dir".into()),
            (
                "link.md",
                "link.md is a symbolic link; superpi does not follow it (make it a directory or file of its own)"
                    .into()
            ),
            (
                "twin.md",
                format!(
                    "twin.md has 2 names (hard links); {}",
                    "a file with another name is not read, as that name may be outside the workspace"
                )
            ),
            ("forms/SKILL.md", "3 Some(\"two\")".into()),
            ("forms/id_rsa", "forms/id_rsa is a protected path (a private key)".into()),
            ("forms/x", "dir".into()),
            ("forms/x/y", "dir".into()),
        ]
    );
    assert_eq!(tree.text("forms/SKILL.md").unwrap(), Some("two"));
    assert_eq!(tree.text("none.md").unwrap(), None);
    assert!(tree.text("link.md/x").unwrap_err().contains("is a symbolic link"));
    assert!(tree.text("forms/x/y/deep.txt").unwrap().is_none());

    std::fs::remove_dir_all(ws.join(".superpi")).unwrap();
    assert_eq!(read_tree(&ws, &skills_read(), &ProtectedPaths::default()).unwrap(), None);
    std::os::unix::fs::symlink(dir.path(), ws.join(".superpi")).unwrap();
    let err = read_tree(&ws, &skills_read(), &ProtectedPaths::default()).unwrap_err();
    assert!(
        err.ends_with(
            ".superpi is a symbolic link; superpi does not follow it (make it a directory or file of its own)"
        ),
        "{err}"
    );
}

#[test]
fn patterns_match_name_by_name() {
    let path = |p: &str| p.split('/').map(String::from).collect::<Vec<_>>();
    assert!(matches("*.md", &path("a.md")) && matches("*/SKILL.md", &path("x/SKILL.md")));
    assert!(!matches("*.md", &path("x/a.md")) && !matches("*/SKILL.md", &path("SKILL.md")));
    assert!(matches("*", &path("x")) && !matches("a*a", &path("a")) && matches("x/b", &path("x/b")));
}
