use std::path::Path;

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn args(name: Option<&str>, file: Option<&str>) -> Args {
    Args { name: name.map(String::from), file: file.map(String::from) }
}

#[test]
fn a_skill_loads_with_its_files_and_nothing_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    write(&root.join("forms/SKILL.md"), "---\nname: forms\ndescription: fill PDF forms\n---\nUse fill.py.\n");
    write(&root.join("forms/scripts/fill.py"), "print('fill')\n");
    write(&root.join("single.md"), "---\ndescription: one file\n---\nJust this.");
    write(&dir.path().join("secret.txt"), "secret");
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("forms/leak.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("forms/up")).unwrap();
    let read = |file: Option<&str>| crate::features::skills::read_here(dir.path(), None, file);
    let skills = read(None);

    let loaded = answer(&skills, args(Some("forms"), None)).unwrap();
    assert_eq!(
        loaded,
        "# Skill: forms\n\nUse fill.py.\n\nFiles of this skill (load one with `skill`, `name` and `file`): scripts/fill.py"
    );
    let with_file = read(Some("scripts/fill.py"));
    assert_eq!(answer(&with_file, args(Some("forms"), Some("scripts/fill.py"))).unwrap(), "print('fill')\n");
    assert_eq!(answer(&skills, args(Some("single"), None)).unwrap(), "# Skill: single\n\nJust this.");
    assert_eq!(answer(&skills, args(None, None)).unwrap(), "Skills:\n- forms: fill PDF forms\n- single: one file");

    let refused = [
        (args(Some("forms"), Some("../secret.txt")), "not a path inside the skill"),
        (args(Some("forms"), Some("/etc/passwd")), "not a path inside the skill"),
        (args(Some("forms"), Some("leak.txt")), "leak.txt is a symbolic link; superpi does not follow it"),
        (args(Some("forms"), Some("up/secret.txt")), "up is a symbolic link; superpi does not follow it"),
        (args(Some("forms"), Some("nope.txt")), "has no file `nope.txt`"),
        (args(Some("single"), Some("x.md")), "is a single file"),
        (args(Some("missing"), None), "no skill is named `missing`. Skills:\n- forms"),
        (args(None, Some("x")), "needs the skill's `name`"),
    ];
    for (args, said) in refused {
        let found = read(args.file.as_deref().filter(|f| inside_skill(f).is_ok()));
        let err = answer(&found, args).unwrap_err();
        assert!(err.contains(said), "{err}");
    }
}

/// The answer comes from what the read of the skills directories returned (for a workspace's,
/// the confined runner's answer): nothing is read again by path, so a skill's files removed or
/// swapped for a link after the read change nothing.
#[test]
fn the_tool_answers_from_what_was_read_and_reads_nothing_again() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let workspace = dir.path().join("ws");
    write(&workspace.join(".superpi/skills/forms/SKILL.md"), "---\ndescription: fill forms\n---\nUse fill.py.\n");
    write(&workspace.join(".superpi/skills/forms/fill.py"), "print('fill')\n");
    let found = crate::features::skills::read_here(&config, Some(&workspace), Some("fill.py"));

    std::fs::remove_dir_all(workspace.join(".superpi/skills/forms")).unwrap();
    std::os::unix::fs::symlink(dir.path(), workspace.join(".superpi/skills/forms")).unwrap();
    let loaded = answer(&found, args(Some("forms"), None)).unwrap();
    assert!(loaded.starts_with("# Skill: forms\n\nUse fill.py.") && loaded.ends_with(": fill.py"), "{loaded}");
    assert_eq!(answer(&found, args(Some("forms"), Some("fill.py"))).unwrap(), "print('fill')\n");
}
