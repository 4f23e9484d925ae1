use std::path::Path;

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn front_matter_gives_name_and_description_and_the_rest_is_the_body() {
    let parsed = parse(
        "---\nname: release\ndescription: \"Cut a release: tag, notes\"\nallowed-tools: bash\n---\n\n# Steps\n1. tag\n",
    );
    assert_eq!(
        parsed,
        Parsed {
            name: Some("release".into()),
            description: Some("Cut a release: tag, notes".into()),
            body: "# Steps\n1. tag\n".into(),
        }
    );
    // No closing line, or none at all: the whole text is the body.
    assert_eq!(parse("---\nname: x\n# no end").body, "---\nname: x\n# no end");
    assert_eq!(parse("just words").name, None);
}

#[test]
fn names_are_plain_words() {
    assert!(valid_name("pdf-forms") && valid_name("a_b.c"));
    assert!(!valid_name("") && !valid_name("../x") && !valid_name(".hidden") && !valid_name("a b"));
    assert!(!valid_name(&"x".repeat(65)));
}

#[test]
fn the_workspaces_skill_replaces_the_users_of_the_same_name_and_bad_files_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let workspace = dir.path().join("ws");
    write(&config.join("skills/review/SKILL.md"), "---\nname: review\ndescription: the user's review\n---\nuser");
    write(&config.join("skills/review/checklist.md"), "- tests");
    write(&config.join("skills/notes.md"), "---\ndescription: how to write notes\n---\nbody");
    write(&config.join("skills/nodesc.md"), "---\nname: nodesc\n---\nbody");
    write(&config.join("skills/readme.txt"), "not a skill");
    write(
        &workspace.join(".superpi/skills/review.md"),
        "---\nname: review\ndescription: the project's review\n---\nproject",
    );
    std::os::unix::fs::symlink(config.join("skills/notes.md"), workspace.join(".superpi/skills/linked.md")).unwrap();

    let found = read_here(&config, Some(&workspace), None);
    assert_eq!(found.refused.len(), 1, "{:?}", found.refused);
    assert!(found.refused[0].contains("linked.md is a symbolic link; superpi does not follow it"));
    let skills = found.skills;
    let names: Vec<(&str, &str)> = skills.iter().map(|s| (s.name.as_str(), s.description.as_str())).collect();
    assert_eq!(names, vec![("notes", "how to write notes"), ("review", "the project's review")]);
    assert_eq!(skills[1].dir, None);
    let user_only = read_here(&config, None, None).skills;
    assert_eq!(user_only[1].dir.as_deref(), Some(config.join("skills/review").as_path()));
}

/// A workspace's `.superpi` (or `skills`) that is a symbolic link, or another user's, is refused
/// with a message: the confined `read` would refuse the files it leads to.
#[test]
fn a_symlinked_or_foreign_superpi_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let outside = dir.path().join("outside");
    write(&outside.join("skills/leak.md"), "---\ndescription: a file outside the workspace\n---\nsecret");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::os::unix::fs::symlink(&outside, workspace.join(".superpi")).unwrap();
    let found = read_here(&config, Some(&workspace), None);
    assert_eq!(found.skills, vec![]);
    assert_eq!(
        found.refused,
        [format!(
            "{} is a symbolic link; superpi does not follow it (make it a directory or file of its own)",
            workspace.join(".superpi").display()
        )]
    );

    std::fs::remove_file(workspace.join(".superpi")).unwrap();
    std::fs::create_dir(workspace.join(".superpi")).unwrap();
    std::os::unix::fs::symlink(outside.join("skills"), workspace.join(".superpi/skills")).unwrap();
    let found = read_here(&config, Some(&workspace), None);
    assert!(found.skills.is_empty() && found.refused[0].contains("skills is a symbolic link"), "{found:?}");

    if nix::unistd::geteuid().is_root() {
        std::fs::remove_file(workspace.join(".superpi/skills")).unwrap();
        write(&workspace.join(".superpi/skills/mine.md"), "---\ndescription: mine\n---\nbody");
        assert_eq!(read_here(&config, Some(&workspace), None).skills.len(), 1);
        std::os::unix::fs::chown(workspace.join(".superpi"), Some(65534), None).unwrap();
        let found = read_here(&config, Some(&workspace), None);
        assert!(found.skills.is_empty() && found.refused[0].contains("belongs to another user"), "{found:?}");
    }
}

#[test]
fn the_index_lists_each_skill_within_its_budget() {
    let skill = |i: usize| Skill {
        name: format!("skill-{i}"),
        description: "d".repeat(500),
        file: format!("/s/{i}.md").into(),
        dir: None,
        tree: 0,
        at: None,
        relative: format!("{i}.md"),
    };
    assert_eq!(index(&[]), None);
    let one = index(&[skill(1)]).unwrap();
    assert!(one.contains("`skill` tool") && one.ends_with(&format!("- skill-1: {}", "d".repeat(500))), "{one}");
    let many: Vec<Skill> = (0..40).map(skill).collect();
    let text = index(&many).unwrap();
    assert!(text.len() <= INDEX_BUDGET_BYTES + 100, "{}", text.len());
    assert!(text.ends_with("more (the `skill` tool lists them all)"), "{text}");
}
