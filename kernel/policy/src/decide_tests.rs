//! The decision's tests: the matrix of effects by mode by network policy, generated
//! combinations that must never loosen, shell lines, questions, overrides, confinement.
//!
//! Over 500 lines on purpose: every test reads the same few helpers (`run`, `codes`,
//! `settings_with`), and the matrix is one table.

use serde_json::json;

use superpi_proto::tool::{PathAccess, PathArg};

use super::*;
use crate::net::Network;
use crate::pattern::CommandPattern;

use Effect::*;

const ROOT: &str = "/work/repo";

/// A compact outcome: `A` allow without network, `N` allow with network, `Q` ask, `D:rule`.
fn code(d: &Decision) -> String {
    match d {
        Decision::Allow { network: false } => "A".into(),
        Decision::Allow { network: true } => "N".into(),
        Decision::Ask { .. } => "Q".into(),
        Decision::Deny { rule, .. } => format!("D:{}", serde_json::to_value(rule).unwrap().as_str().unwrap()),
    }
}

fn settings_with(f: impl FnOnce(&mut Settings)) -> Settings {
    let mut s = Settings::default();
    f(&mut s);
    s
}

fn patterns(list: &[&str]) -> Vec<CommandPattern> {
    list.iter().map(|p| CommandPattern::parse(p).unwrap()).collect()
}

fn run(tool: &str, effects: &[Effect], args: Value, mode: Mode, s: &Settings, o: &Overrides) -> Decision {
    decide(&CallFacts {
        tool: &crate::test_tools::tool(tool, effects),
        arguments: &args,
        mode,
        workspace: Some(Path::new(ROOT)),
        settings: s,
        overrides: o,
        private_dirs: &[],
        extra_roots: &[],
    })
}

fn codes(tool: &str, effects: &[Effect], args: &Value, s: &Settings) -> [String; 3] {
    Mode::ALL.map(|m| code(&run(tool, effects, args.clone(), m, s, &Overrides::default())))
}

/// (name, tool, effects, arguments, settings, [plan, accept-edits, auto])
type Row<'a> = (&'a str, &'a str, &'a [Effect], Value, &'a Settings, [&'a str; 3]);

/// 0 allow, 1 ask, 2 deny.
fn strictness(d: &Decision) -> u8 {
    match d {
        Decision::Allow { .. } => 0,
        Decision::Ask { .. } => 1,
        Decision::Deny { .. } => 2,
    }
}

#[test]
fn decision_matrix_effects_by_mode_by_policy() {
    let default = Settings::default();
    let net_deny = settings_with(|s| s.network.policy = NetworkPolicy::Deny);
    let allowlist = settings_with(|s| {
        s.network = Network {
            policy: NetworkPolicy::Allowlist,
            shell_default: ShellNetwork::Offline,
            allow_hosts: vec!["github.com".into()],
        }
    });
    let no_net_in_plan = settings_with(|s| s.permissions.network_in_plan_mode = false);
    let allow_todo_tool = settings_with(|s| {
        s.permissions.allow_tools.insert("mcp_edit".into());
    });
    let deny_read_tool = settings_with(|s| {
        s.permissions.deny_tools.insert("read".into());
    });
    let lists = settings_with(|s| {
        s.permissions.allow = patterns(&["git status", "cargo test *"]);
        s.permissions.deny = patterns(&["git push"]);
    });
    let url = |u: &str| json!({"url": u});
    let none = json!({});
    let file = json!({"path": "src/main.rs"});
    let cmd = |c: &str| json!({"command": c});
    let net = |c: &str| json!({"command": c, "network": true});
    let shell_net = settings_with(|s| s.network.shell_default = ShellNetwork::Allow);
    let shell_net_lists = settings_with(|s| {
        s.network.shell_default = ShellNetwork::Allow;
        s.permissions.allow = patterns(&["cargo test *"]);
    });
    let allow_bash = settings_with(|s| {
        s.permissions.allow_tools.insert("bash".into());
    });

    // (name, tool, effects, arguments, settings, [plan, accept-edits, auto])
    let table: Vec<Row> = vec![
        // Only read.
        ("read", "read", &[Read], file.clone(), &default, ["A", "A", "A"]),
        ("read, network denied", "read", &[Read], file.clone(), &net_deny, ["A", "A", "A"]),
        ("read, denied tool", "read", &[Read], file.clone(), &deny_read_tool, ["D:denied_tool"; 3]),
        ("ls", "ls", &[Read], json!({"path": "."}), &default, ["A", "A", "A"]),
        ("mcp read-only", "mcp_search", &[Read], none.clone(), &default, ["A", "A", "A"]),
        // net_read (with read).
        ("fetch", "web_fetch", &[Read, NetRead], url("https://x.org"), &default, ["N", "N", "N"]),
        (
            "fetch, no net in plan",
            "web_fetch",
            &[Read, NetRead],
            url("https://x.org"),
            &no_net_in_plan,
            ["D:mode", "N", "N"],
        ),
        ("fetch, network deny", "web_fetch", &[NetRead], url("https://x.org"), &net_deny, ["D:network"; 3]),
        ("fetch, listed host", "web_fetch", &[NetRead], url("https://api.github.com/x"), &allowlist, ["N", "N", "N"]),
        ("fetch, unlisted host", "web_fetch", &[NetRead], url("https://evil.com"), &allowlist, ["D:network"; 3]),
        ("fetch, no url", "web_search", &[NetRead], json!({"q": "x"}), &allowlist, ["D:network"; 3]),
        // state_write (with read, net_read).
        ("todo", "todo", &[StateWrite], none.clone(), &default, ["D:mode", "A", "A"]),
        ("memory", "memory_write", &[Read, NetRead, StateWrite], none.clone(), &default, ["D:mode", "N", "N"]),
        // fs_write, exec, net_write, or no effects.
        ("write", "write", &[Read, FsWrite], file.clone(), &default, ["D:mode", "A", "A"]),
        ("edit", "edit", &[Read, FsWrite], file.clone(), &default, ["D:mode", "A", "A"]),
        ("mcp fs write", "mcp_edit", &[FsWrite], none.clone(), &default, ["D:mode", "Q", "A"]),
        ("mcp fs write, allowed tool", "mcp_edit", &[FsWrite], none.clone(), &allow_todo_tool, ["D:mode", "A", "A"]),
        ("no effects stated", "mystery", &[], none.clone(), &default, ["D:mode", "Q", "A"]),
        ("net_write", "web_post", &[NetWrite], url("https://x.org"), &default, ["D:mode", "Q", "N"]),
        ("net_write, network deny", "web_post", &[NetWrite], url("https://x.org"), &net_deny, ["D:network"; 3]),
        ("exec tool", "run_tests", &[Exec], none.clone(), &default, ["D:mode", "Q", "N"]),
        ("exec tool, network deny", "run_tests", &[Exec], none.clone(), &net_deny, ["D:mode", "Q", "A"]),
        // The shell.
        ("bash unlisted", "bash", &[Exec], cmd("make"), &default, ["D:mode", "Q", "A"]),
        ("bash read-only", "bash", &[Exec], cmd("git status"), &default, ["A", "A", "A"]),
        ("bash read-only, network deny", "bash", &[Exec], cmd("ls -la; cat a"), &net_deny, ["A", "A", "A"]),
        ("bash read-only, allowlist", "bash", &[Exec], cmd("git log | head"), &allowlist, ["A", "A", "A"]),
        ("bash listed", "bash", &[Exec], cmd("cargo test"), &lists, ["D:mode", "A", "A"]),
        ("bash listed prefix", "bash", &[Exec], cmd("cargo test -p x"), &lists, ["D:mode", "A", "A"]),
        ("bash not exactly listed", "bash", &[Exec], cmd("cargo bench"), &lists, ["D:mode", "Q", "A"]),
        ("bash denied", "bash", &[Exec], cmd("git push origin"), &lists, ["D:deny_list"; 3]),
        ("bash, allowlisted network", "bash", &[Exec], cmd("make"), &allowlist, ["D:mode", "Q", "A"]),
        ("bash, network deny", "bash", &[Exec], cmd("make"), &net_deny, ["D:mode", "Q", "A"]),
        ("bash, old shell default", "bash", &[Exec], cmd("make"), &shell_net, ["D:mode", "Q", "N"]),
        ("bash listed, old shell default", "bash", &[Exec], cmd("cargo test"), &shell_net_lists, ["D:mode", "N", "N"]),
        // A call that asks for network is decided like a net_write tool.
        ("bash asks network", "bash", &[Exec], net("make"), &default, ["D:mode", "Q", "N"]),
        (
            "bash says no network",
            "bash",
            &[Exec],
            json!({"command": "make", "network": false}),
            &default,
            ["D:mode", "Q", "A"],
        ),
        ("bash asks network, listed", "bash", &[Exec], net("cargo test"), &lists, ["D:mode", "Q", "N"]),
        ("bash asks network, read-only", "bash", &[Exec], net("git status"), &default, ["D:mode", "Q", "N"]),
        ("bash asks network, denied", "bash", &[Exec], net("git push"), &lists, ["D:deny_list"; 3]),
        ("bash asks network, network deny", "bash", &[Exec], net("make"), &net_deny, ["D:network"; 3]),
        ("bash asks network, allowlist", "bash", &[Exec], net("curl https://github.com"), &allowlist, ["D:network"; 3]),
        ("bash asks network, old shell default", "bash", &[Exec], net("make"), &shell_net, ["D:mode", "Q", "N"]),
        ("bash asks network, allowed tool", "bash", &[Exec], net("make"), &allow_bash, ["D:mode", "N", "N"]),
    ];
    for (name, tool, effects, args, s, expected) in &table {
        let got = codes(tool, effects, args, s);
        assert_eq!(got, expected.map(String::from), "{name}");
    }

    // Never looser as the mode rises, over the whole table.
    for (name, tool, effects, args, s, _) in &table {
        let d = Mode::ALL.map(|m| run(tool, effects, args.clone(), m, s, &Overrides::default()));
        assert!(strictness(&d[0]) >= strictness(&d[1]) && strictness(&d[1]) >= strictness(&d[2]), "{name}: {d:?}");
    }
}

#[test]
fn never_loosens_over_generated_combinations() {
    let all = [Read, FsWrite, Exec, NetRead, NetWrite, StateWrite];
    let variants = [
        Settings::default(),
        settings_with(|s| s.network.policy = NetworkPolicy::Deny),
        settings_with(|s| {
            s.network = Network {
                policy: NetworkPolicy::Allowlist,
                shell_default: ShellNetwork::Offline,
                allow_hosts: vec!["a.org".into()],
            }
        }),
        settings_with(|s| s.permissions.network_in_plan_mode = false),
        settings_with(|s| {
            s.permissions.allow = patterns(&["ls *"]);
            s.permissions.deny = patterns(&["rm *"]);
        }),
    ];
    let args = [json!({"url": "https://a.org", "command": "ls x", "path": "a"}), json!({"command": "rm $X; ls"})];
    for mask in 0u32..64 {
        let effects: Vec<Effect> =
            all.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, e)| *e).collect();
        for tool in ["bash", "write", "read", "other"] {
            for s in &variants {
                for a in &args {
                    let d = Mode::ALL.map(|m| run(tool, &effects, a.clone(), m, s, &Overrides::default()));
                    assert!(
                        strictness(&d[0]) >= strictness(&d[1]) && strictness(&d[1]) >= strictness(&d[2]),
                        "{tool} {effects:?} {a}: {d:?}"
                    );
                    // Network is granted only where the policy allows it.
                    for x in &d {
                        if let Decision::Allow { network: true } = x {
                            assert_ne!(s.network.policy, NetworkPolicy::Deny);
                        }
                    }
                }
            }
        }
    }
}

fn shell_settings() -> Settings {
    settings_with(|s| {
        s.permissions.allow =
            patterns(&["ls *", "git status", "cargo test *", "echo *", "cat *", "grep *", "bash -c *"]);
        s.permissions.deny = patterns(&["rm -rf *", "git push"]);
    })
}

fn bash(line: &str, mode: Mode, o: &Overrides) -> Decision {
    run("bash", &[Exec], json!({"command": line}), mode, &shell_settings(), o)
}

/// `bash` with `network.shell_default` `allow`: every command that runs gets network.
fn bash_with_network(line: &str, mode: Mode, o: &Overrides) -> Decision {
    let mut s = shell_settings();
    s.network.shell_default = ShellNetwork::Allow;
    run("bash", &[Exec], json!({"command": line}), mode, &s, o)
}

#[test]
fn compound_commands_need_every_part() {
    let o = Overrides::default();
    let cases: &[(&str, &str, &str)] = &[
        // (line, accept-edits, auto)
        // Read-only lines (A) run without network; listed ones (N) with (with the old shell
        // default, so that the two differ).
        ("ls -la && git status", "A", "A"),
        ("ls; echo hi | grep h || cat x", "A", "A"),
        ("ls | wc -l", "A", "A"),
        ("ls && git pull", "Q", "N"),
        ("(cd x && ls)", "A", "A"),
        ("{ ls; git status; }", "A", "A"),
        ("echo $(date)", "A", "A"),
        ("echo $(cargo test)", "N", "N"),
        ("echo $(make)", "Q", "N"),
        ("echo `git status`", "A", "A"),
        ("cat <(ls) <(git status)", "A", "A"),
        ("ls > files", "Q", "N"),
        ("ls; rm -rf /", "D:deny_list", "D:deny_list"),
        ("echo $(git push)", "D:deny_list", "D:deny_list"),
        ("echo `rm -rf x`", "D:deny_list", "D:deny_list"),
        ("echo \"$(git push --force)\"", "D:deny_list", "D:deny_list"),
        ("ls & rm -rf ~", "D:deny_list", "D:deny_list"),
        ("sudo rm -rf /", "D:deny_list", "D:deny_list"),
        ("/usr/bin/git push", "D:deny_list", "D:deny_list"),
        ("bash -c 'ls; git push'", "D:deny_list", "D:deny_list"),
        ("bash -c 'ls; git status'", "N", "N"),
        ("eval git push", "D:deny_list", "D:deny_list"),
        ("find . -exec rm -rf {} +", "D:deny_list", "D:deny_list"),
        ("find . -name x -exec wc -l {} ;", "Q", "N"),
        ("cat <<EOF\n$(rm -rf /)\nEOF", "D:deny_list", "D:deny_list"),
        ("cat <<'EOF'\nrm -rf /\nEOF", "A", "A"),
        ("for f in *; do rm -rf $f; done", "D:deny_list", "D:deny_list"),
        ("f() { git push; }", "D:deny_list", "D:deny_list"),
        ("case $x in a) git push;; esac", "D:deny_list", "D:deny_list"),
        ("echo $(( $(rm -rf /) ))", "D:deny_list", "D:deny_list"),
        ("cargo test > out.txt", "Q", "N"),
        ("cargo test 2>&1 >/dev/null", "N", "N"),
        ("FOO=1 ls", "Q", "N"),
        ("$CMD", "Q", "Q"),
        ("git $SUB", "Q", "Q"),
        ("rm $FLAGS x", "Q", "Q"),
        ("if true; then ls; fi", "A", "A"),
        ("if true; then make; fi", "Q", "N"),
        ("arr=(a b); ls", "Q", "Q"),
        ("ls 'unclosed", "Q", "Q"),
        ("", "A", "A"),
    ];
    for (line, accept, auto) in cases {
        assert_eq!(code(&bash_with_network(line, Mode::AcceptEdits, &o)), *accept, "accept-edits: {line:?}");
        assert_eq!(code(&bash_with_network(line, Mode::Auto, &o)), *auto, "auto: {line:?}");
        let plan = if *accept == "A" { "A" } else { "D" };
        assert_eq!(&code(&bash_with_network(line, Mode::Plan, &o))[..1], plan, "plan: {line:?}");
    }
    // Without a deny list, auto runs what it cannot read.
    let plain = Settings::default();
    let d = run("bash", &[Exec], json!({"command": "arr=(*); wc ${arr[0]}"}), Mode::Auto, &plain, &o);
    assert_eq!(d, Decision::Allow { network: false });
}

#[test]
fn questions_name_the_unlisted_parts() {
    let d = bash("ls && git pull && make -j4 && git pull", Mode::AcceptEdits, &Overrides::default());
    assert_eq!(
        d,
        Decision::Ask {
            reason: "`git pull; make -j4` is not in the allow list of shell commands".into(),
            risk: Risk::High,
            network: false,
            remember: Remember::Commands(vec!["git pull".into(), "make -j4".into()]),
        }
    );
    let d = bash("rm $X", Mode::Auto, &Overrides::default());
    assert_eq!(d.reason(), Some("`rm $X` may expand to a command that permissions.deny refuses"));
    let d = bash("ls 'x", Mode::AcceptEdits, &Overrides::default());
    assert_eq!(d.reason(), Some("the command cannot be checked against permissions.deny (an unclosed single quote)"));
    let d = run("mcp_edit", &[FsWrite], json!({}), Mode::AcceptEdits, &Settings::default(), &Overrides::default());
    assert_eq!(
        d,
        Decision::Ask {
            reason: "accept-edits mode asks before `mcp_edit` runs: it would write files, run commands or send to the \
                     network"
                .into(),
            risk: Risk::Medium,
            network: false,
            remember: Remember::Tool("mcp_edit".into()),
        }
    );
    assert!(d.askable() && !d.is_allowed());
}

#[test]
fn session_overrides_follow_answers() {
    let mut o = Overrides::default();
    let d = bash("ls && git pull", Mode::AcceptEdits, &o);
    assert_eq!(d.clone().answer(Some(Answer::AllowOnce), &mut o), Decision::Allow { network: false });
    assert!(o.is_empty(), "allow_once records nothing");
    assert_eq!(code(&bash("ls && git pull", Mode::AcceptEdits, &o)), "Q", "asked again");
    assert_eq!(d.clone().answer(Some(Answer::AllowAlways), &mut o), Decision::Allow { network: false });
    assert!(o.allow_commands.contains("git pull"));
    assert_eq!(code(&bash("git pull; ls", Mode::AcceptEdits, &o)), "A", "not asked a second time");
    assert_eq!(code(&bash("git pull --rebase", Mode::AcceptEdits, &o)), "Q", "only that command");

    // reject_always: refused without asking, in every mode.
    let d = bash("make", Mode::AcceptEdits, &o);
    let refused = d.answer(Some(Answer::RejectAlways), &mut o);
    assert_eq!(
        refused,
        Decision::Deny { reason: "`make` is not in the allow list of shell commands".into(), rule: Rule::Rejected }
    );
    assert_eq!(code(&bash("ls && make", Mode::AcceptEdits, &o)), "D:session_reject");
    assert_eq!(code(&bash("make", Mode::Auto, &o)), "D:session_reject");
    // A later allow_always replaces the rejection.
    o.record(Answer::AllowAlways, &Remember::Commands(vec!["make".into()]));
    assert_eq!(code(&bash("make", Mode::AcceptEdits, &o)), "A");
    assert!(o.deny_commands.is_empty());

    // A session allow never lifts the deny list or plan.
    o.record(Answer::AllowAlways, &Remember::Commands(vec!["git push".into()]));
    assert_eq!(code(&bash("git push", Mode::AcceptEdits, &o)), "D:deny_list");
    assert_eq!(code(&bash("make", Mode::Plan, &o)), "D:mode");

    // Tools.
    let s = Settings::default();
    let mut o = Overrides::default();
    let ask = run("mcp_edit", &[FsWrite], json!({}), Mode::AcceptEdits, &s, &o);
    assert_eq!(ask.answer(Some(Answer::AllowAlways), &mut o), Decision::Allow { network: false });
    assert_eq!(code(&run("mcp_edit", &[FsWrite], json!({}), Mode::AcceptEdits, &s, &o)), "A");
    assert_eq!(code(&run("mcp_edit", &[FsWrite], json!({}), Mode::Plan, &s, &o)), "D:mode");
    o.record(Answer::RejectAlways, &Remember::Tool("mcp_edit".into()));
    assert_eq!(code(&run("mcp_edit", &[FsWrite], json!({}), Mode::Auto, &s, &o)), "D:session_reject");

    // Overrides serialise for storage.
    let text = serde_json::to_string(&o).unwrap();
    assert_eq!(text, r#"{"deny_tools":["mcp_edit"]}"#);
    assert_eq!(serde_json::from_str::<Overrides>(&text).unwrap(), o);
}

#[test]
fn unanswered_questions_fail_closed_with_the_same_message() {
    let mut o = Overrides::default();
    let d = bash("make", Mode::AcceptEdits, &o);
    let reason = d.reason().unwrap().to_string();
    assert_eq!(d.answer(None, &mut o), Decision::Deny { reason, rule: Rule::Unanswered });
    assert!(o.is_empty());
    assert_eq!(Answer::from_option_id("allow_sometimes"), None);
    for a in [Answer::AllowOnce, Answer::AllowAlways, Answer::RejectOnce, Answer::RejectAlways] {
        assert_eq!(Answer::from_option_id(a.option_id()), Some(a));
    }
    let ids: Vec<String> = superpi_proto::event::permission_options().into_iter().map(|o| o.option_id).collect();
    assert!(ids.iter().all(|id| Answer::from_option_id(id).is_some()), "every option the kernel offers is known");
    // Answering a decision that is not a question changes nothing.
    let allow = Decision::Allow { network: false };
    assert_eq!(allow.clone().answer(Some(Answer::RejectAlways), &mut o), allow);
}

fn file_tool(tool: &str, args: Value, s: &Settings) -> String {
    code(&run(tool, &[Read, FsWrite], args, Mode::Auto, s, &Overrides::default()))
}

#[test]
fn workspace_confinement() {
    let s = Settings::default();
    assert_eq!(file_tool("read", json!({"path": "src/lib.rs"}), &s), "A");
    assert_eq!(file_tool("read", json!({"path": "/work/repo/src/lib.rs"}), &s), "A");
    assert_eq!(file_tool("read", json!({"path": "../other/x"}), &s), "D:workspace");
    assert_eq!(file_tool("read", json!({"path": "src/../../x"}), &s), "D:workspace");
    assert_eq!(file_tool("write", json!({"path": "/etc/passwd"}), &s), "D:workspace");
    assert_eq!(
        file_tool("read", json!({"path": "/work/repository/x"}), &s),
        "D:workspace",
        "a sibling with a common prefix"
    );
    assert_eq!(file_tool("read", json!({"path": "~/.bashrc"}), &s), "D:workspace");
    assert_eq!(file_tool("grep", json!({"pattern": "x", "path": "/"}), &s), "D:workspace");
    assert_eq!(file_tool("ls", json!({"path": 3}), &s), "D:workspace");
    // Any tool's facts name its paths: every item of an array of paths is checked.
    let many = ToolDef {
        name: "mcp_copy".into(),
        effects: vec![FsWrite],
        paths: vec![PathArg { arg: "paths".into(), access: PathAccess::Write }],
        ..Default::default()
    };
    let facts = |args: Value| {
        code(&decide(&CallFacts {
            tool: &many,
            arguments: &args,
            mode: Mode::Auto,
            workspace: Some(Path::new(ROOT)),
            settings: &s,
            overrides: &Overrides::default(),
            private_dirs: &[],
            extra_roots: &[],
        }))
    };
    assert_eq!(facts(json!({"paths": ["a", "/tmp/b"]})), "D:workspace");
    assert_eq!(facts(json!({"paths": ["a", ".env"]})), "D:protected_path");
    assert_eq!(facts(json!({"paths": ["a", "b"], "other": "/etc"})), "A");
    assert_eq!(file_tool("read", json!({"file_path": "/etc/x"}), &s), "A", "not a path the tool names");
    assert_eq!(file_tool("find", json!({"pattern": "*.rs"}), &s), "A");
    assert_eq!(
        code(&run("bash", &[Exec], json!({"command": "ls", "cwd": "/tmp"}), Mode::Auto, &s, &Overrides::default())),
        "D:workspace"
    );
    // Never askable, in any mode.
    for m in Mode::ALL {
        let d = run("read", &[Read], json!({"path": "/etc/shadow"}), m, &s, &Overrides::default());
        assert_eq!(code(&d), "D:workspace");
        assert_eq!(d.reason(), Some("`/etc/shadow` is outside the workspace /work/repo"));
    }
    let outside = settings_with(|s| s.permissions.allow_outside_workspace = true);
    assert_eq!(file_tool("read", json!({"path": "/etc/passwd"}), &outside), "A");
    assert_eq!(file_tool("read", json!({"path": "/home/u/.ssh/id_ed25519"}), &outside), "D:protected_path");

    // No workspace: no file or shell tool runs.
    let none = Settings::default();
    let o = Overrides::default();
    for tool in ["read", "ls", "bash"] {
        let d = decide(&CallFacts {
            tool: &crate::test_tools::tool(tool, &[Read]),
            arguments: &json!({"path": "/abs"}),
            mode: Mode::Auto,
            workspace: None,
            settings: &none,
            overrides: &o,
            private_dirs: &[],
            extra_roots: &[],
        });
        assert_eq!(code(&d), "D:workspace", "{tool}");
    }
    let d = decide(&CallFacts {
        tool: &crate::test_tools::tool("web_fetch", &[NetRead]),
        arguments: &json!({"url": "https://x.org"}),
        mode: Mode::Plan,
        workspace: None,
        settings: &none,
        overrides: &o,
        private_dirs: &[],
        extra_roots: &[],
    });
    assert_eq!(d, Decision::Allow { network: true });
}

#[test]
fn protected_paths_are_refused_for_read_write_and_edit() {
    let s =
        settings_with(|s| s.permissions.protected_paths = vec![crate::pattern::PathPattern::parse("*.db").unwrap()]);
    for tool in ["read", "write", "edit", "grep"] {
        for path in
            [".env", "app/.env.production", ".git/config", "deploy/id_rsa", "certs/site.pem", ".npmrc", "data/x.db"]
        {
            for m in Mode::ALL {
                let d = run(tool, &[Read, FsWrite], json!({"path": path}), m, &s, &Overrides::default());
                assert_eq!(code(&d), "D:protected_path", "{tool} {path} {m}");
            }
        }
    }
    let d = run("read", &[Read], json!({"path": ".env"}), Mode::Auto, &s, &Overrides::default());
    assert_eq!(d.reason(), Some("`.env` is a protected path (an environment file (.env))"));
    assert_eq!(file_tool("read", json!({"path": ".env.example"}), &s), "A");
    assert_eq!(file_tool("ls", json!({"path": ".git"}), &s), "A", "listing names is not reading them");
}

#[test]
fn deny_list_wins_over_everything() {
    let s = settings_with(|s| {
        s.permissions.allow = patterns(&["git *"]);
        s.permissions.deny = patterns(&["git push"]);
        s.permissions.allow_tools.insert("bash".into());
    });
    let mut o = Overrides::default();
    o.allow_commands.insert("git push".into());
    o.allow_tools.insert("bash".into());
    for m in Mode::ALL {
        let d = run("bash", &[Exec], json!({"command": "git push"}), m, &s, &o);
        assert_eq!(code(&d), "D:deny_list", "{m}");
        assert!(!d.askable());
    }
    // allow_tools lifts the allow list, not the deny list.
    assert_eq!(code(&run("bash", &[Exec], json!({"command": "make"}), Mode::AcceptEdits, &s, &o)), "A");
}

#[test]
fn network_is_asked_for_the_line_with_network() {
    let s = settings_with(|s| s.permissions.allow = patterns(&["cargo build *"]));
    let net = |line: &str, mode: Mode, o: &Overrides| {
        run("bash", &[Exec], json!({"command": line, "network": true}), mode, &s, o)
    };
    let mut o = Overrides::default();
    let d = net("cargo build", Mode::AcceptEdits, &o);
    assert_eq!(
        d,
        Decision::Ask {
            reason: "accept-edits mode asks before `bash` reaches the network".into(),
            risk: Risk::High,
            network: true,
            remember: Remember::Commands(vec!["network: cargo build".into()]),
        }
    );
    // Allowing the line with network always does not give other lines network, nor the line
    // without asking network.
    assert_eq!(d.answer(Some(Answer::AllowAlways), &mut o), Decision::Allow { network: true });
    assert_eq!(code(&net("cargo build", Mode::AcceptEdits, &o)), "N");
    assert_eq!(code(&net("cargo build --release", Mode::AcceptEdits, &o)), "Q");
    let plain = run("bash", &[Exec], json!({"command": "cargo build"}), Mode::AcceptEdits, &s, &o);
    assert_eq!(code(&plain), "A");
    // Allowing a command (without network) always does not allow it network.
    o.record(Answer::AllowAlways, &Remember::Commands(vec!["make".into()]));
    assert_eq!(code(&net("make", Mode::AcceptEdits, &o)), "Q");
    // Rejecting the line with network always refuses it in every mode, not the line without.
    let d = net("make", Mode::AcceptEdits, &o);
    assert!(matches!(d.answer(Some(Answer::RejectAlways), &mut o), Decision::Deny { rule: Rule::Rejected, .. }));
    for m in Mode::ALL {
        assert_eq!(code(&net("make", m, &o)), "D:session_reject", "{m}");
    }
    let plain = run("bash", &[Exec], json!({"command": "make"}), Mode::AcceptEdits, &s, &o);
    assert_eq!(code(&plain), "A");
}

/// `git push`, `fetch`, `pull` and `clone` ask for network like any network call (issue #31):
/// not read-only (plan does not run them), without `network` they run offline like curl, and
/// with it they are asked about in accept-edits as a line with network.
#[test]
fn git_push_and_fetch_ask_for_network_like_any_network_call() {
    let s = Settings::default();
    let o = Overrides::default();
    let curl =
        |network: bool| codes("bash", &[Exec], &json!({"command": "curl https://example.com", "network": network}), &s);
    assert_eq!(curl(false), ["D:mode", "Q", "A"]);
    assert_eq!(curl(true), ["D:mode", "Q", "N"]);
    for line in ["git fetch origin", "git push origin main", "git pull", "git clone https://example.com/x.git"] {
        for network in [false, true] {
            let args = json!({"command": line, "network": network});
            assert_eq!(codes("bash", &[Exec], &args, &s), curl(network), "{line} network={network}");
        }
        let asked = run("bash", &[Exec], json!({"command": line, "network": true}), Mode::AcceptEdits, &s, &o);
        let Decision::Ask { network: true, remember: Remember::Commands(lines), .. } = asked else {
            panic!("{line}: {asked:?}")
        };
        assert_eq!(lines, [format!("network: {line}")]);
    }
}

#[test]
fn an_extra_root_is_writable_like_the_workspace_and_nothing_else_is() {
    let s = Settings::default();
    let o = Overrides::default();
    let extra = [std::path::PathBuf::from("/work/docs")];
    let write = |path: &str| {
        code(&decide(&CallFacts {
            tool: &crate::test_tools::tool("write", &[Read, FsWrite]),
            arguments: &json!({"path": path}),
            mode: Mode::Auto,
            workspace: Some(Path::new(ROOT)),
            settings: &s,
            overrides: &o,
            private_dirs: &[],
            extra_roots: &extra,
        }))
    };
    assert_eq!(write("/work/docs/notes.md"), "A");
    assert_eq!(write("/work/repo/src/a.rs"), "A");
    assert_eq!(write("/work/docs/../secrets/a"), "D:workspace");
    assert_eq!(write("/work/docsx/a"), "D:workspace");
    assert_eq!(write("/work/elsewhere/a"), "D:workspace");
    // Protected paths apply inside it as in the workspace.
    assert_eq!(write("/work/docs/.env"), "D:protected_path");
}
