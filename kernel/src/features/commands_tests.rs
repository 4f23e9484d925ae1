use super::*;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn arguments_fill_their_places_once() {
    assert_eq!(expand("Review $ARGUMENTS carefully", "  src/lib.rs tests "), "Review src/lib.rs tests carefully");
    assert_eq!(expand("from $1 to $2, not $3.", "main feature"), "from main to feature, not .");
    // Arguments that hold a placeholder are not expanded again; a lone `$` stays.
    assert_eq!(expand("$1 costs $5 or $", "$2 x"), "$2 costs  or $");
    assert_eq!(expand("$0 and $ARGUMENTS", "a"), "$0 and a");
}

#[test]
fn a_prompt_without_placeholders_gets_its_arguments_appended() {
    assert_eq!(expand("Write the changelog.", "since v1.2"), "Write the changelog.\n\nARGUMENTS: since v1.2");
    assert_eq!(expand("Write the changelog.", "   "), "Write the changelog.");
}

#[test]
fn front_matter_gives_the_description_and_hint() {
    let text = "---\ndescription: \"Review a file\"\nargument-hint: '[path] [focus]'\nallowed-tools: Bash(git:*)\n---\n\nReview $1 for $2.\n";
    let command = parse("review", "config", text);
    assert_eq!(command.info.description, "Review a file");
    assert_eq!(command.info.argument_hint.as_deref(), Some("[path] [focus]"));
    assert_eq!(command.info.source, "config");
    assert_eq!(command.body, "Review $1 for $2.");
    // No front matter: the first line describes it; an unclosed one is prompt text.
    let plain = parse("fix", "workspace", "Fix the failing tests.\nThen run them.");
    assert_eq!((plain.info.description.as_str(), plain.info.argument_hint), ("Fix the failing tests.", None));
    let unclosed = parse("odd", "config", "---\ndescription: x\nno end");
    assert_eq!(unclosed.body, "---\ndescription: x\nno end");
    let windows = parse("crlf", "config", "---\r\ndescription: d\r\n---\r\nbody\r\n");
    assert_eq!((windows.info.description.as_str(), windows.body.as_str()), ("d", "body"));
}

#[test]
fn the_workspace_overrides_the_config_and_links_are_skipped() {
    let config = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    write(&config.path().join("commands"), "review.md", "---\ndescription: mine\n---\nuser review");
    write(&config.path().join("commands"), "deploy.md", "deploy $ARGUMENTS");
    write(&config.path().join("commands"), "bad name.md", "x");
    write(&config.path().join("commands"), "notes.txt", "x");
    let project = workspace.path().join(".superpi/commands");
    write(&project, "review.md", "---\ndescription: the project's\n---\nproject review");
    let secret = config.path().join("secret.md");
    std::fs::write(&secret, "a secret").unwrap();
    std::os::unix::fs::symlink(&secret, project.join("leak.md")).unwrap();
    write(&project, "huge.md", &"x".repeat(MAX_COMMAND_BYTES as usize + 1));

    let commands = load(config.path(), Some(workspace.path()));
    assert_eq!(commands.keys().collect::<Vec<_>>(), ["deploy", "review"]);
    assert_eq!(commands["review"].info.source, "workspace");
    assert_eq!(commands["review"].body, "project review");
    assert_eq!(load(config.path(), None)["review"].body, "user review");
}

#[test]
fn a_commands_directory_linked_out_of_the_workspace_is_not_read() {
    let config = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    write(elsewhere.path(), "steal.md", "private");
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join(".superpi")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), workspace.path().join(".superpi/commands")).unwrap();
    assert!(load(config.path(), Some(workspace.path())).is_empty());
}

#[test]
fn a_prompt_calling_a_command_is_expanded_and_others_are_not() {
    let mut commands = BTreeMap::new();
    commands.insert("review".to_string(), parse("review", "config", "Review $ARGUMENTS."));
    let mut content =
        vec![ContentBlock::text("/review src/main.rs\nand the tests"), ContentBlock::image("image/png", "AA==")];
    assert!(expand_prompt(&commands, &mut content));
    assert_eq!(content[0], ContentBlock::text("Review src/main.rs\nand the tests."));
    assert!(matches!(content[1], ContentBlock::Image { .. }));
    for untouched in ["/unknown x", "please /review this", "/reviewer x"] {
        let mut content = vec![ContentBlock::text(untouched)];
        assert!(!expand_prompt(&commands, &mut content), "{untouched}");
        assert_eq!(content, vec![ContentBlock::text(untouched)]);
    }
}
