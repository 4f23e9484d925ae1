use std::path::Path;

use serde_json::{Value, json};
use superpi_proto::tool::{Effect, PathAccess, PathArg};

use super::*;
use crate::conversation::ConversationPolicy;
use crate::harness::Harnesses;
use crate::mode::Mode;
use crate::mode_choice::Caller;
use crate::permission_rules_edit::{append, remove, suggest, trust, untrust};
use crate::permission_rules_file as file;
use crate::test_tools::{builtin_tools, tool};
use crate::verdict::Scope;

struct Dirs {
    _tmp: tempfile::TempDir,
    config: PathBuf,
    ws: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    let ws = tmp.path().join("repo");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(ws.join(".superpi")).unwrap();
    Dirs { _tmp: tmp, config, ws }
}

fn write(path: &Path, value: Value) {
    std::fs::write(path, value.to_string()).unwrap();
}

fn policy(d: &Dirs, mode: Mode) -> ConversationPolicy {
    let h = Harnesses::builtin(&builtin_tools()).get("superpi-code").unwrap().clone();
    let mut p = ConversationPolicy::new(h, Settings::default(), Some(d.ws.clone()), Caller::Local, Some(mode));
    p.set_rules(PermissionRules::load(&d.config, Some(&d.ws)).map_err(|e| e.to_string()));
    p
}

fn bash() -> ToolDef {
    tool("bash", &[Effect::Exec, Effect::FsWrite])
}

fn run(p: &ConversationPolicy, line: &str) -> Decision {
    p.decide(&bash(), &json!({ "command": line }))
}

fn ask_rule_of(d: &Decision) -> bool {
    matches!(d, Decision::Ask { reason, .. } if reason.contains("permission rule"))
}

#[test]
fn a_prefix_rule_answers_only_the_commands_it_names() {
    let d = dirs();
    write(
        &d.config.join(USER_RULES_FILE),
        json!({"rules": [{"action": "allow", "tool": "bash", "command": "npm run test:*"}]}),
    );
    let p = policy(&d, Mode::AcceptEdits);
    assert_eq!(run(&p, "npm run test:unit"), Decision::Allow { network: false });
    assert_eq!(run(&p, "npm run test:e2e --ci"), Decision::Allow { network: false });
    for wider in ["npm run test:unit; rm -rf x", "npm run test:unit && curl x | sh", "npm run build", "npm run $T"] {
        assert!(run(&p, wider).askable(), "{wider}: {:?}", run(&p, wider));
    }
    assert!(run(&p, "npm run test:unit > out.txt").askable(), "a write through a redirection is not covered");
    let plan = policy(&d, Mode::Plan);
    assert!(matches!(run(&plan, "npm run test:unit"), Decision::Deny { rule: Rule::Mode, .. }), "never past the mode");
}

#[test]
fn deny_and_ask_rules_tighten_in_every_mode() {
    let d = dirs();
    let rules = json!({"rules": [
        {"action": "deny", "command": "git push"},
        {"action": "ask", "command": "cargo publish"},
        {"action": "deny", "tool": "write", "path": "vendor/**"},
    ]});
    write(&d.ws.join(WORKSPACE_RULES_FILE), rules);
    let p = policy(&d, Mode::Auto);
    let d1 = run(&p, "echo hi && sudo git push origin main");
    assert!(
        matches!(&d1, Decision::Deny { rule: Rule::PermissionRule, reason } if reason.contains(".superpi/permissions.json")),
        "{d1:?}"
    );
    // A word that may expand into a denied command is asked about, as with permissions.deny.
    let d3 = run(&p, "git $CMD origin");
    assert!(matches!(&d3, Decision::Ask { .. }), "{d3:?}");
    let asked = run(&p, "cargo publish --dry-run");
    assert!(ask_rule_of(&asked));
    // An answer for the session remembers the line's commands, never the whole shell tool.
    assert!(
        matches!(&asked, Decision::Ask { remember: Remember::Commands(c), .. } if c == &["cargo publish --dry-run"])
    );
    assert_eq!(run(&p, "cargo build"), Decision::Allow { network: false });
    let write_tool = tool("write", &[Effect::FsWrite]);
    let d2 = p.decide(&write_tool, &json!({"path": "vendor/x/a.rs", "content": ""}));
    assert!(
        matches!(&d2, Decision::Deny { rule: Rule::PermissionRule, reason } if reason.contains("vendor/**")),
        "{d2:?}"
    );
    assert!(p.decide(&write_tool, &json!({"path": "src/a.rs", "content": ""})).is_allowed());
    assert!(p.lasting_rules(&bash(), &json!({"command": "cargo publish"}), &run(&p, "cargo publish")).is_none());
}

#[test]
fn a_workspace_file_allows_only_in_a_trusted_folder() {
    let d = dirs();
    write(&d.ws.join(WORKSPACE_RULES_FILE), json!({"rules": [{"action": "allow", "command": "make *"}]}));
    let p = policy(&d, Mode::AcceptEdits);
    assert!(run(&p, "make all").askable(), "an untrusted folder's allow rule is ignored");
    let rules = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert!(!rules.trusted());
    assert_eq!(rules.all()[0].ignored.as_deref(), Some("an allow rule of a folder you do not trust"));
    let parent = d.ws.parent().unwrap().to_path_buf();
    write(&d.config.join(USER_RULES_FILE), json!({"trusted_folders": [parent]}));
    let p = policy(&d, Mode::AcceptEdits);
    assert!(run(&p, "make all").askable(), "a trusted folder's file is not accepted until the user says so");
    let rules = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert_eq!(rules.all()[0].ignored.as_deref(), Some(NOT_ACCEPTED));
    assert!(rules.notices()[0].fix.contains("superpi permissions trust"), "{:?}", rules.notices());
    let done = trust(&d.config, &d.ws).unwrap();
    assert!(!done.newly && done.folder == parent && done.accepted.unwrap().len() == 1);
    let p = policy(&d, Mode::AcceptEdits);
    assert_eq!(run(&p, "make all"), Decision::Allow { network: false });
    // A workspace file cannot trust itself.
    write(&d.ws.join(WORKSPACE_RULES_FILE), json!({"trusted_folders": ["/"], "rules": []}));
    let err = PermissionRules::load(&d.config, Some(&d.ws)).unwrap_err();
    assert_eq!(err.key(), Some("trusted_folders"));
}

#[test]
fn a_bad_file_names_the_key_and_refuses_every_call() {
    let d = dirs();
    write(&d.config.join(USER_RULES_FILE), json!({"rules": [{"action": "allow", "command": "a; b"}]}));
    let err = PermissionRules::load(&d.config, None).unwrap_err();
    assert_eq!(err.key(), Some("rules[0].command"));
    for bad in [
        json!({"rules": [{"action": "allow"}]}),
        json!({"rules": [{"action": "allow", "tool": "x", "path": "a", "host": "b.org"}]}),
        json!({"rules": [{"action": "allow", "path": "../x"}]}),
        json!({"rules": [{"action": "allow", "host": "not a host"}]}),
        json!({"rules": [{"action": "allow", "tool": "x", "workspace": "relative"}]}),
        json!({"rules": [{"action": "maybe", "tool": "x"}]}),
        json!({"rulez": []}),
    ] {
        write(&d.config.join(USER_RULES_FILE), bad.clone());
        assert!(PermissionRules::load(&d.config, None).is_err(), "{bad}");
    }
    let p = policy(&d, Mode::Auto);
    let read = tool("read", &[Effect::Read]);
    assert!(matches!(p.decide(&read, &json!({"path": "a"})), Decision::Deny { rule: Rule::PermissionRule, .. }));
}

#[test]
fn path_and_host_rules_settle_a_tools_question() {
    let d = dirs();
    let mut mcp = tool("deploy", &[Effect::Exec]);
    mcp.paths = vec![PathArg { arg: "file".into(), access: PathAccess::Write }];
    mcp.mcp_server = Some("site".into());
    let mut post = tool("post", &[Effect::NetWrite]);
    post.mcp_server = Some("web".into());
    let p = policy(&d, Mode::AcceptEdits);
    let asked = p.decide(&mcp, &json!({"file": "site/index.html"}));
    let suggested = p.lasting_rules(&mcp, &json!({"file": "site/index.html"}), &asked).unwrap();
    assert_eq!(suggested[0].path.as_deref(), Some("site/index.html"));
    let url = json!({"url": "https://API.example.org/x"});
    let suggested_host = p.lasting_rules(&post, &url, &p.decide(&post, &url)).unwrap();
    assert_eq!(suggested_host[0].host.as_deref(), Some("api.example.org"));
    write(
        &d.config.join(USER_RULES_FILE),
        json!({"rules": [
            {"action": "allow", "tool": "deploy", "path": "site/**"},
            {"action": "allow", "tool": "post", "host": "*.example.org"},
        ]}),
    );
    let p = policy(&d, Mode::AcceptEdits);
    assert!(p.decide(&mcp, &json!({"file": "site/a/index.html"})).is_allowed());
    assert!(p.decide(&mcp, &json!({"file": "other/index.html"})).askable());
    assert!(p.decide(&mcp, &json!({})).askable(), "no path: a path rule says nothing");
    assert!(p.decide(&post, &json!({"url": "https://api.example.org/x"})).is_allowed());
    assert!(p.decide(&post, &json!({"url": "https://example.org/x"})).askable(), "*. is subdomains only");
    assert!(p.decide(&post, &json!({"url": "https://evil.org/?api.example.org"})).askable());
}

#[test]
fn suggested_rules_are_never_wider_than_the_call() {
    let d = dirs();
    let p = policy(&d, Mode::AcceptEdits);
    let suggest_for = |line: &str| {
        let args = json!({ "command": line });
        suggest(&bash(), &args, &p.decide(&bash(), &args), Some(&d.ws))
            .map(|rules| rules.into_iter().map(|r| r.command.unwrap()).collect::<Vec<_>>())
    };
    assert_eq!(suggest_for("npm run test:unit").unwrap(), ["npm run test:unit"]);
    assert_eq!(suggest_for("make a; make b 2>&1").unwrap(), ["make a", "make b"]);
    assert_eq!(suggest_for("touch '*' \"a b\"").unwrap(), [r"touch '*' 'a b'"]);
    assert_eq!(suggest_for("make $TARGET"), None, "a word that expands has no exact rule");
    assert_eq!(suggest_for("make a; make $B"), None, "one rule per command, or none");
    assert_eq!(suggest_for("a=( 1 ) make"), None, "a line that cannot be read");
    let net = json!({"command": "npm install", "network": true});
    assert_eq!(suggest(&bash(), &net, &p.decide(&bash(), &net), Some(&d.ws)), None);
    assert_eq!(suggest(&bash(), &net, &Decision::Allow { network: false }, Some(&d.ws)), None);
}

#[test]
fn answers_are_written_listed_and_removed() {
    let d = dirs();
    let rule = allow;
    // Not trusted: a project answer goes to the user's file, scoped to the workspace.
    let file = append(&d.config, Some(&d.ws), Scope::Project, vec![rule("make a")]).unwrap();
    assert_eq!(file, d.config.join(USER_RULES_FILE));
    append(&d.config, Some(&d.ws), Scope::User, vec![rule("make b"), rule("make b")]).unwrap();
    let loaded = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert_eq!(loaded.all().len(), 2, "a rule is written once");
    assert_eq!(loaded.all()[0].entry.workspace.as_deref(), Some(d.ws.as_path()));
    let elsewhere = PermissionRules::load(&d.config, Some(Path::new("/elsewhere"))).unwrap();
    assert!(elsewhere.all()[0].ignored.is_some() && elsewhere.all()[1].ignored.is_none());
    // Trusted: the workspace's file.
    let (mut user, _) = file::read_for_edit(&d.config.join(USER_RULES_FILE), RuleSource::User).unwrap();
    user.trusted_folders.push(d.ws.clone());
    std::fs::write(d.config.join(USER_RULES_FILE), serde_json::to_string(&user).unwrap()).unwrap();
    let file = append(&d.config, Some(&d.ws), Scope::Project, vec![rule("make c")]).unwrap();
    assert_eq!(file, d.ws.join(WORKSPACE_RULES_FILE));
    let loaded = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    let ids: Vec<String> = loaded.all().iter().map(|r| r.id.clone()).collect();
    assert_eq!(PermissionRules::load(&d.config, Some(&d.ws)).unwrap().all()[2].id, ids[2], "ids are stable");

    let removed = remove(&d.config, Some(&d.ws), &ids[0]).unwrap();
    assert_eq!(removed.len(), 1);
    let removed = remove(&d.config, Some(&d.ws), "make c").unwrap();
    assert_eq!(removed[0].source, RuleSource::Workspace);
    assert!(remove(&d.config, Some(&d.ws), "nothing").unwrap().is_empty());
    let left: Vec<String> = PermissionRules::load(&d.config, Some(&d.ws))
        .unwrap()
        .all()
        .iter()
        .map(|r| r.entry.pattern().to_string())
        .collect();
    assert_eq!(left, ["make b"]);
    assert_eq!(
        file::read_for_edit(&d.config.join(USER_RULES_FILE), RuleSource::User).unwrap().0.trusted_folders,
        vec![d.ws.clone()]
    );
}

#[test]
fn the_rules_file_is_protected_from_file_tools() {
    let d = dirs();
    let p = policy(&d, Mode::Auto);
    let write_tool = tool("write", &[Effect::FsWrite]);
    let decision = p.decide(&write_tool, &json!({"path": ".superpi/permissions.json", "content": "{}"}));
    assert!(matches!(decision, Decision::Deny { rule: Rule::ProtectedPath, .. }), "{decision:?}");
}

fn allow(command: &str) -> RuleEntry {
    RuleEntry {
        action: RuleAction::Allow,
        tool: Some("bash".into()),
        command: Some(command.into()),
        path: None,
        host: None,
        workspace: None,
    }
}

#[test]
fn a_file_changed_behind_the_kernel_keeps_only_its_tightening_rules_until_trusted_again() {
    let d = dirs();
    assert_eq!(trust(&d.config, &d.ws).unwrap().accepted, None);
    // Trusted without a file: one written later is a change.
    write(&d.ws.join(WORKSPACE_RULES_FILE), json!({"rules": [{"action": "allow", "command": "make *"}]}));
    let rules = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert_eq!(rules.all()[0].ignored.as_deref(), Some(CHANGED));
    std::fs::remove_file(d.ws.join(WORKSPACE_RULES_FILE)).unwrap();
    // The kernel's own write ("always for this project") is accepted as it writes it.
    let written = append(&d.config, Some(&d.ws), Scope::Project, vec![allow("make a")]).unwrap();
    assert_eq!(written, d.ws.join(WORKSPACE_RULES_FILE));
    let p = policy(&d, Mode::AcceptEdits);
    assert!(run(&p, "make a").is_allowed());
    assert!(PermissionRules::load(&d.config, Some(&d.ws)).unwrap().notices().is_empty());

    // A tool call rewrites it: its allow rules stop applying, its deny rule applies.
    let planted = json!({"rules": [
        {"action": "allow", "tool": "bash", "command": "make a"},
        {"action": "allow", "tool": "bash", "command": "curl *"},
        {"action": "deny", "tool": "bash", "command": "make b"},
    ]});
    write(&d.ws.join(WORKSPACE_RULES_FILE), planted);
    let mut p = policy(&d, Mode::AcceptEdits);
    assert!(run(&p, "make a").askable() && run(&p, "curl x").askable());
    assert!(matches!(run(&p, "make b"), Decision::Deny { .. }));
    let rules = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert_eq!(rules.all()[0].ignored.as_deref(), Some(CHANGED));
    assert!(rules.notices()[0].what.contains("changed since you trusted it"), "{:?}", rules.notices());
    assert!(p.set_rules(Ok(rules.clone())).is_empty(), "a notice is new once");

    // The kernel does not accept it by writing beside it: the next project rule is the user's.
    let written = append(&d.config, Some(&d.ws), Scope::Project, vec![allow("make c")]).unwrap();
    assert_eq!(written, d.config.join(USER_RULES_FILE));
    assert!(run(&policy(&d, Mode::AcceptEdits), "curl x").askable());

    // The person accepts it; untrusting takes it back.
    trust(&d.config, &d.ws).unwrap();
    assert!(run(&policy(&d, Mode::AcceptEdits), "curl x").is_allowed());
    let done = untrust(&d.config, &d.ws).unwrap();
    assert_eq!((done.folders, done.files, done.still_within), (vec![d.ws.clone()], 1, None));
    assert!(run(&policy(&d, Mode::AcceptEdits), "curl x").askable());
    assert!(untrust(&d.config, &d.ws).unwrap().folders.is_empty());
}

#[test]
fn a_linked_or_oversized_workspace_file_is_ignored_with_a_notice() {
    let d = dirs();
    let elsewhere = d.ws.join("grants.json");
    write(&elsewhere, json!({"rules": [{"action": "allow", "command": "make *"}]}));
    std::os::unix::fs::symlink(&elsewhere, d.ws.join(WORKSPACE_RULES_FILE)).unwrap();
    let rules = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert!(rules.all().is_empty());
    assert!(rules.notices()[0].what.contains("symbolic link"), "{:?}", rules.notices());
    assert!(trust(&d.config, &d.ws).is_err(), "a file superpi ignores cannot be accepted");
    std::fs::remove_file(d.ws.join(WORKSPACE_RULES_FILE)).unwrap();
    let big = format!("{{\"rules\": []{}}}", " ".repeat(file::MAX_RULES_FILE_BYTES as usize));
    std::fs::write(d.ws.join(WORKSPACE_RULES_FILE), big).unwrap();
    let rules = PermissionRules::load(&d.config, Some(&d.ws)).unwrap();
    assert!(rules.notices()[0].what.contains("larger than"), "{:?}", rules.notices());
}

#[test]
fn the_kernels_write_follows_no_link_planted_in_the_workspace() {
    let d = dirs();
    trust(&d.config, &d.ws).unwrap();
    let outside = d.config.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::remove_dir(d.ws.join(".superpi")).unwrap();
    std::os::unix::fs::symlink(&outside, d.ws.join(".superpi")).unwrap();
    let written = append(&d.config, Some(&d.ws), Scope::Project, vec![allow("make a")]);
    assert_eq!(written.unwrap(), d.config.join(USER_RULES_FILE), "written to the user's file instead");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written through the link");
}
