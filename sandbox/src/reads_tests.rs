#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn patterns_match_one_name_with_stars() {
    assert!(matches(".ssh", ".ssh"));
    assert!(!matches(".ssh", ".sshd"));
    assert!(matches(".*history*", ".bash_history"));
    assert!(matches(".*history*", ".zhistory"));
    assert!(matches(".*history*", ".python_history-old"));
    assert!(!matches(".*history*", ".bashrc"));
    assert!(matches("credentials*", "credentials.toml"));
    assert!(matches("a*b*c", "a-b-c"));
    assert!(!matches("a*b*c", "a-c-b"));
}

#[test]
fn a_home_is_granted_entry_by_entry_without_its_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    for d in [".ssh", ".cargo/bin", ".cargo/registry", ".config/git", ".config/gh", ".pyenv", "src/proj"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    for f in [
        ".gitconfig",
        ".netrc",
        ".bash_history",
        ".cargo/credentials.toml",
        ".cargo/env",
        ".config/git/config",
        ".config/git/credentials",
    ] {
        std::fs::write(home.join(f), "x").unwrap();
    }
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
    std::os::unix::fs::symlink("/", home.join("root")).unwrap();
    let denied = Denied::new(Some(&home), &[home.join("src/proj")]);
    let grants = ReadGrants::compute(std::slice::from_ref(&home), &denied);
    let rel = |paths: &[PathBuf]| -> Vec<String> {
        paths.iter().map(|p| p.strip_prefix(&home).unwrap().display().to_string()).collect()
    };
    assert_eq!(
        rel(&grants.granted),
        [".cargo/bin", ".cargo/env", ".cargo/registry", ".config/git/config", ".gitconfig", ".pyenv"]
    );
    assert_eq!(
        rel(&grants.denied),
        [
            ".bash_history",
            ".cargo/credentials.toml",
            ".config/gh",
            ".config/git/credentials",
            ".netrc",
            ".ssh",
            "src/proj"
        ]
    );
    assert!(!grants.stale());
    std::fs::write(home.join(".config/new"), "x").unwrap();
    assert!(grants.stale(), "a new entry in a directory decided entry by entry");
}

#[test]
fn a_root_without_secrets_beneath_is_granted_whole() {
    let denied = Denied::new(Some(Path::new("/home/someone")), &[]);
    let grants = ReadGrants::compute(&[PathBuf::from("/usr")], &denied);
    assert_eq!(grants.granted, [PathBuf::from("/usr")]);
    assert!(grants.watched.is_empty());
}
