//! Property tests across modules: the shell reader never panics, a denied command is found
//! wherever it hides in a line, and lines made only of allowed commands are allowed.

use proptest::prelude::*;
use serde_json::json;
use superpi_proto::tool::Effect;

use crate::decide::{CallFacts, Decision, Overrides, Rule, decide};
use crate::mode::Mode;
use crate::pattern::CommandPattern;
use crate::settings::Settings;
use crate::shell;

fn settings() -> Settings {
    let mut s = Settings::default();
    s.permissions.allow = ["ls *", "git status", "cargo test *", "echo *", "cat *"]
        .iter()
        .map(|p| CommandPattern::parse(p).unwrap())
        .collect();
    s.permissions.deny = ["rm -rf *"].iter().map(|p| CommandPattern::parse(p).unwrap()).collect();
    s
}

fn bash(line: &str, mode: Mode, s: &Settings) -> Decision {
    decide(&CallFacts {
        tool: &crate::test_tools::tool("bash", &[Effect::Exec, Effect::FsWrite]),
        arguments: &json!({ "command": line }),
        mode,
        workspace: Some(std::path::Path::new("/w")),
        settings: s,
        overrides: &Overrides::default(),
        private_dirs: &[],
        extra_roots: &[],
    })
}

fn allowed_command() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ls -la".to_string()),
        Just("git status".to_string()),
        "[a-z]{1,8}".prop_map(|a| format!("cargo test -p {a}")),
        "[a-z ]{0,10}".prop_map(|a| format!("echo '{a}'")),
        "[a-z;&| ]{0,10}".prop_map(|a| format!("cat \"{a}\"")),
        Just("ls 2>/dev/null".to_string()),
    ]
}

fn operator() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(" ; "), Just(" && "), Just(" || "), Just(" | "), Just("\n"), Just(" & "), Just(";")]
}

fn line_of(parts: Vec<(String, &'static str)>) -> String {
    let mut line = String::new();
    for (i, (cmd, op)) in parts.iter().enumerate() {
        if i > 0 {
            line.push_str(op);
        }
        line.push_str(cmd);
    }
    line
}

/// Ways to run `rm -rf /` inside a line.
const HIDDEN: [&str; 26] = [
    "rm -rf /",
    "/bin/rm -rf /",
    "\\rm -rf /",
    "r'm' -rf /",
    "sudo -u root rm -rf /",
    "(rm -rf /)",
    "{ rm -rf /; }",
    "bash -c 'rm -rf /'",
    "echo $(rm -rf /)",
    "echo \"`rm -rf /`\"",
    "cat <(rm -rf /)",
    "find . -exec rm -rf {} +",
    "find . -exec sh -c 'rm -rf /' \\;",
    "env -S 'rm -rf /'",
    "env --split-string='rm -rf /'",
    "if true; then rm -rf /; fi",
    "for f in a; do rm -rf /; done",
    "while false; do rm -rf /; done",
    "case x in x) rm -rf / ;; esac",
    "f() { rm -rf /; }",
    "function g { rm -rf /; }",
    "echo $(( $(rm -rf /) ))",
    "echo ${x:-$(rm -rf /)}",
    "[[ -n $(rm -rf /) ]]",
    "cat <<EOF\n$(rm -rf /)\nEOF\n",
    "cat <<EOF\nEO\\\nF\nrm -rf /\nEOF\n",
];

/// Words and operators of bash's grammar, for lines that exercise every branch of the reader.
const TOKENS: [&str; 44] = [
    "if", "then", "elif", "else", "fi", "for", "select", "x", "in", "do", "done", "while", "case", "esac", ";;", ";&",
    "(", ")", "((", "))", "$((", "$(", "${", "}", "{", "<<EOF", "<<-'E'", "\n", "EOF", "[[", "]]", "=~", "|", "&&",
    ";", "'", "\"", "`", "\\", "function", "f()", "<(", ">", "#",
];

proptest! {
    #[test]
    fn the_shell_reader_never_panics(line in "[a-z $(){}<>|&;'\"`\\\\\n#*!=~-]{0,120}") {
        let _ = shell::commands(&line);
    }

    #[test]
    fn the_shell_reader_ends_on_any_sequence_of_grammar_tokens(
        tokens in prop::collection::vec((0usize..TOKENS.len(), prop_oneof![Just(" "), Just("")]), 0..60),
    ) {
        let line: String = tokens.iter().map(|(i, sep)| format!("{}{sep}", TOKENS[*i])).collect();
        let _ = shell::commands(&line);
    }

    #[test]
    fn a_denied_command_is_found_wherever_it_hides(
        parts in prop::collection::vec((allowed_command(), operator()), 0..5),
        at in 0usize..6,
        hidden in 0usize..HIDDEN.len(),
        op in operator(),
    ) {
        let mut parts = parts;
        let at = at.min(parts.len());
        parts.insert(at, (HIDDEN[hidden].to_string(), op));
        let line = line_of(parts);
        let s = settings();
        for mode in Mode::ALL {
            let d = bash(&line, mode, &s);
            prop_assert!(matches!(d, Decision::Deny { .. }), "{mode} {line:?}: {d:?}");
            if mode != Mode::Plan {
                prop_assert!(matches!(d, Decision::Deny { rule: Rule::DenyList, .. }), "{mode} {line:?}: {d:?}");
            }
        }
    }

    #[test]
    fn lines_of_allowed_commands_are_allowed(parts in prop::collection::vec((allowed_command(), operator()), 1..6)) {
        let line = line_of(parts);
        let d = bash(&line, Mode::AcceptEdits, &settings());
        prop_assert!(d.is_allowed(), "{:?}: {:?}", line, d);
    }
}

#[test]
fn deep_subshells_are_refused_not_overflowed() {
    let line = format!("{}ls{}", "( ".repeat(5000), " )".repeat(5000));
    assert!(shell::commands(&line).is_err());
    let line = format!("{}ls{}", "echo `".repeat(40), "`".repeat(40));
    let _ = shell::commands(&line);
}
