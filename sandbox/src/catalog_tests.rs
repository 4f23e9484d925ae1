use super::*;

/// The argument keys of a tool's input schema.
fn properties(def: &ToolDef) -> Vec<String> {
    def.input_schema["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
}

/// The `{arg}` placeholders of a title template.
fn placeholders(template: &str) -> Vec<String> {
    template.split('{').skip(1).filter_map(|rest| rest.split_once('}')).map(|(inner, _)| inner.to_string()).collect()
}

#[test]
fn every_fact_names_an_argument_of_the_schema() {
    for entry in builtin() {
        let def = &entry.def;
        let props = properties(def);
        let named = |arg: &str, what: &str| assert!(props.iter().any(|p| p == arg), "{}: {what} `{arg}`", def.name);
        for path in &def.paths {
            named(&path.arg, "path argument");
        }
        if let Some(shell) = &def.shell {
            named(shell, "shell argument");
        }
        if let Some(net) = &def.network_arg {
            named(net, "network argument");
            assert_eq!(def.input_schema["properties"][net]["type"], "boolean", "{}: the network argument", def.name);
        }
        if let Some(line) = &def.ui.line {
            named(line, "line argument");
        }
        if let Some(diff) = &def.ui.diff {
            named(&diff.path, "diff path");
            named(&diff.new, "diff text");
            if let Some(old) = &diff.old {
                named(old, "diff old text");
            }
        }
        for arg in placeholders(def.ui.title.as_deref().unwrap_or_default()) {
            named(&arg, "title argument");
        }
        if let Some(read) = &entry.editor_read {
            for arg in [read.path, read.offset, read.limit] {
                named(arg, "editor read argument");
            }
        }
        assert!(def.workspace, "{}: every built-in tool acts in the workspace", def.name);
        assert!(def.ui.title.is_some() && def.ui.kind != ToolKind::Other, "{}: shown by its facts", def.name);
        // Only a tool that writes files may say it edits, and only one that runs commands has a shell.
        assert!(!def.edits || def.effects == [Effect::FsWrite], "{}", def.name);
        assert_eq!(def.shell.is_some(), def.effects.contains(&Effect::Exec), "{}", def.name);
        assert_eq!(matches!(entry.runner, Runner::Shell), def.shell.is_some(), "{}", def.name);
    }
}

#[test]
fn titles_come_from_the_facts() {
    let defs: Vec<ToolDef> = builtin().into_iter().map(|e| e.def).collect();
    let titled = |i: usize, args: Value| defs[i].title(&args);
    assert_eq!(titled(0, json!({"path": "src/a.rs"})), "Read src/a.rs");
    assert_eq!(titled(0, json!({})), "Read file");
    assert_eq!(titled(3, json!({"command": "ls -la\necho hi"})), "Run `ls -la…`");
    assert_eq!(titled(6, json!({})), "List .");
}
