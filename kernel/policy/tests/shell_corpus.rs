//! The shell reader and the read-only list over real command lines (`shell_corpus.toml`): for
//! each line, the commands found and how a default configuration decides it.

use std::path::Path;

use serde::Deserialize;
use serde_json::json;
use superpi_policy::{CallFacts, Decision, Mode, Overrides, Settings, decide, shell};
use superpi_proto::tool::Effect;

#[derive(Deserialize)]
struct Corpus {
    line: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    line: String,
    commands: Vec<String>,
    class: Class,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Class {
    ReadOnly,
    Asks,
    Unsure,
}

fn decide_bash(line: &str, mode: Mode) -> Decision {
    let registry = superpi_sandbox::ToolRegistry::builtin();
    let Some(shell_tool) = registry.defs().into_iter().find(|t| t.shell.is_some()) else {
        panic!("the registry has no shell tool")
    };
    assert_eq!(shell_tool.effects, [Effect::Exec, Effect::FsWrite]);
    decide(&CallFacts {
        tool: &shell_tool,
        arguments: &json!({ "command": line }),
        mode,
        workspace: Some(Path::new("/work/repo")),
        settings: &Settings::default(),
        overrides: &Overrides::default(),
        private_dirs: &[],
        extra_roots: &[],
    })
}

#[test]
fn corpus_lines_are_read_and_classified() {
    let corpus: Corpus = toml::from_str(include_str!("shell_corpus.toml")).unwrap();
    assert!(corpus.line.len() >= 200, "the corpus holds {} lines", corpus.line.len());
    let mut wrong = Vec::new();
    for entry in &corpus.line {
        let (found, read) = match shell::commands(&entry.line) {
            Ok(cmds) => (cmds.iter().map(|c| c.text()).collect::<Vec<_>>(), true),
            Err(_) => (Vec::new(), false),
        };
        if found != entry.commands || read != (entry.class != Class::Unsure) {
            wrong.push(format!("{:?}: read {read}, found {found:?}", entry.line));
        }
        let accept = decide_bash(&entry.line, Mode::AcceptEdits);
        let plan = decide_bash(&entry.line, Mode::Plan);
        let as_expected = match entry.class {
            Class::ReadOnly => {
                accept == Decision::Allow { network: false } && plan == Decision::Allow { network: false }
            }
            Class::Asks | Class::Unsure => {
                matches!(accept, Decision::Ask { .. }) && matches!(plan, Decision::Deny { .. })
            }
        };
        if !as_expected {
            wrong.push(format!("{:?} ({:?}): accept-edits {accept:?}, plan {plan:?}", entry.line, entry.class));
        }
    }
    assert!(wrong.is_empty(), "{} of {} lines:\n{}", wrong.len(), corpus.line.len(), wrong.join("\n"));
}
