use super::*;
use crate::mcp_servers::McpTransport;
use crate::web::SearchKind;

fn user(text: &str) -> Result<Settings, ConfigError> {
    Settings::from_user_file(text, Path::new("/cfg/settings.json"))
}

fn user_err(text: &str) -> String {
    user(text).unwrap_err().to_string()
}

fn ws(base: Settings, text: &str) -> Result<Settings, ConfigError> {
    base.tightened_by_workspace_file(text, Path::new("/w/.superpi/settings.json"))
}

#[test]
fn defaults() {
    let s = Settings::default();
    assert!(s.permissions.allow.is_empty() && s.permissions.deny.is_empty());
    assert!(!s.permissions.allow_outside_workspace);
    assert!(s.permissions.network_in_plan_mode && s.permissions.ask);
    assert_eq!(s.permissions.question_timeout, Duration::from_secs(120));
    assert_eq!(s.network.policy, NetworkPolicy::Allow);
    assert_eq!((s.remote.default_mode, s.remote.max_mode), (Mode::AcceptEdits, Mode::AcceptEdits));
    assert_eq!(s.sandbox, SandboxSettings { extra_read_paths: vec![], deny_read_paths: vec![], disabled: false });
    assert_eq!(user("{}").unwrap(), s);
}

#[test]
fn a_full_user_file() {
    let s = user(
        r#"{
        "$schema": "ignored",
        "permissions": {
            "allow": ["git status", "cargo test *"],
            "deny": ["rm -rf *", "git push"],
            "allow_tools": ["todo"],
            "deny_tools": ["web_fetch"],
            "allow_outside_workspace": true,
            "protected_paths": ["*.sqlite", "config/prod/**"],
            "network_in_plan_mode": false,
            "ask": false,
            "question_timeout_secs": 300
        },
        "network": {"policy": "allowlist", "allow_hosts": ["GitHub.com.", "*.crates.io"]},
        "remote": {"default_mode": "plan", "max_mode": "auto"},
        "sandbox": {"extra_read_paths": ["/opt/rust"], "deny_read_paths": ["/opt/rust/secret"], "disabled": true}
    }"#,
    )
    .unwrap();
    let p = &s.permissions;
    assert_eq!(p.allow.iter().map(|c| c.as_str()).collect::<Vec<_>>(), ["git status", "cargo test *"]);
    assert_eq!(p.deny.iter().map(|c| c.as_str()).collect::<Vec<_>>(), ["rm -rf *", "git push"]);
    assert_eq!(p.allow_tools, BTreeSet::from(["todo".to_string()]));
    assert_eq!(p.deny_tools, BTreeSet::from(["web_fetch".to_string()]));
    assert!(p.allow_outside_workspace && !p.network_in_plan_mode && !p.ask);
    assert_eq!(p.protected_paths.iter().map(|c| c.as_str()).collect::<Vec<_>>(), ["*.sqlite", "config/prod/**"]);
    assert_eq!(p.question_timeout, Duration::from_secs(300));
    assert_eq!(
        s.network,
        Network {
            policy: NetworkPolicy::Allowlist,
            shell_default: ShellNetwork::Offline,
            allow_hosts: vec!["github.com".into(), "crates.io".into()]
        }
    );
    assert!(s.host_allowed("api.GITHUB.com") && s.host_allowed("crates.io") && !s.host_allowed("notgithub.com"));
    assert_eq!((s.remote.default_mode, s.remote.max_mode), (Mode::Plan, Mode::Auto));
    assert_eq!(
        s.sandbox,
        SandboxSettings {
            extra_read_paths: vec!["/opt/rust".into()],
            deny_read_paths: vec!["/opt/rust/secret".into()],
            disabled: true
        }
    );
}

#[test]
fn remote_default_follows_a_lower_ceiling() {
    let s = user(r#"{"remote": {"max_mode": "plan"}}"#).unwrap();
    assert_eq!((s.remote.default_mode, s.remote.max_mode), (Mode::Plan, Mode::Plan));
    assert_eq!(
        user_err(r#"{"remote": {"default_mode": "auto"}}"#),
        "/cfg/settings.json: key `remote.default_mode`: the remote default mode `auto` is above the remote ceiling \
         max_mode `accept-edits`"
    );
}

#[test]
fn errors_name_the_file_and_the_key() {
    let cases = [
        (r#"{"permision": {}}"#, "/cfg/settings.json: key `permision`: unknown field `permision`, expected one of"),
        (r#"{"permissions": {"alow": []}}"#, "/cfg/settings.json: key `permissions.alow`: unknown field `alow`"),
        (
            r#"{"permissions": {"allow": ["ok", 3]}}"#,
            "/cfg/settings.json: key `permissions.allow[1]`: invalid type: integer `3`",
        ),
        (
            r#"{"permissions": {"allow": ["ls", "a && b"]}}"#,
            "/cfg/settings.json: key `permissions.allow[1]`: command pattern `a && b` must be one simple command",
        ),
        (
            r#"{"permissions": {"deny": ["rm $X"]}}"#,
            "/cfg/settings.json: key `permissions.deny[0]`: command pattern `rm $X`: `$X` is not a literal word",
        ),
        (
            r#"{"permissions": {"deny_tools": [" x"]}}"#,
            "/cfg/settings.json: key `permissions.deny_tools[0]`: ` x` is not a tool name",
        ),
        (
            r#"{"permissions": {"question_timeout_secs": 0}}"#,
            "/cfg/settings.json: key `permissions.question_timeout_secs`: must be between 1 and 86400 seconds, not 0",
        ),
        (
            r#"{"permissions": {"question_timeout_secs": -1}}"#,
            "/cfg/settings.json: key `permissions.question_timeout_secs`: invalid value: integer `-1`",
        ),
        (
            r#"{"permissions": {"protected_paths": ["a["]}}"#,
            "/cfg/settings.json: key `permissions.protected_paths[0]`: bad protected path pattern `a[`",
        ),
        (
            r#"{"network": {"policy": "some"}}"#,
            "/cfg/settings.json: key `network.policy`: unknown variant `some`, expected one of `allow`, `allowlist`, `deny`",
        ),
        (
            r#"{"network": {"allow_hosts": ["x.com"]}}"#,
            "/cfg/settings.json: key `network.allow_hosts`: allow_hosts applies only with \"policy\": \"allowlist\"",
        ),
        (
            r#"{"network": {"policy": "allowlist", "allow_hosts": ["https://x.com/"]}}"#,
            "/cfg/settings.json: key `network.allow_hosts[0]`: `https://x.com/` is not a host name",
        ),
        (r#"{"remote": {"max_mode": "yolo"}}"#, "/cfg/settings.json: key `remote.max_mode`: unknown variant `yolo`"),
        (
            r#"{"sandbox": {"extra_read_paths": ["rel/dir"]}}"#,
            "/cfg/settings.json: key `sandbox.extra_read_paths[0]`: `rel/dir` is not an absolute path",
        ),
        (
            r#"{"sandbox": {"deny_read_paths": ["~/.ssh"]}}"#,
            "/cfg/settings.json: key `sandbox.deny_read_paths[0]`: `~/.ssh` is not an absolute path",
        ),
        (
            r#"{"sandbox": {"disabled": "yes"}}"#,
            "/cfg/settings.json: key `sandbox.disabled`: invalid type: string \"yes\", expected a boolean",
        ),
        (r#"{"permissions": }"#, "/cfg/settings.json: key `permissions`: expected value at line 1 column 17"),
        (r#"{} x"#, "/cfg/settings.json: trailing characters at line 1 column 4"),
        (r#"[]"#, "/cfg/settings.json: a settings file holds one JSON object: `{ ... }`"),
    ];
    for (text, expected) in cases {
        let got = user_err(text);
        assert!(got.starts_with(expected), "{text}\n got: {got}\nwant: {expected}");
    }
    let e = user(r#"{"permissions": {"alow": []}}"#).unwrap_err();
    assert_eq!(e.path(), Path::new("/cfg/settings.json"));
    assert_eq!(e.key(), Some("permissions.alow"));
}

#[test]
fn a_workspace_file_only_tightens() {
    let base = user(
        r#"{"permissions": {"allow": ["ls"], "deny": ["git push"], "question_timeout_secs": 60},
            "network": {"policy": "allowlist", "allow_hosts": ["github.com", "docs.rs"]},
            "remote": {"max_mode": "auto"}}"#,
    )
    .unwrap();
    let s = ws(
        base.clone(),
        r#"{"permissions": {"deny": ["curl *"], "deny_tools": ["bash"], "protected_paths": ["*.db"],
            "network_in_plan_mode": false, "ask": false, "question_timeout_secs": 600},
            "network": {"policy": "allowlist", "allow_hosts": ["api.github.com", "example.com"]},
            "remote": {"default_mode": "auto", "max_mode": "plan"}}"#,
    )
    .unwrap();
    assert_eq!(s.permissions.allow, base.permissions.allow);
    assert_eq!(s.permissions.deny.iter().map(|c| c.as_str()).collect::<Vec<_>>(), ["git push", "curl *"]);
    assert!(s.permissions.deny_tools.contains("bash"));
    assert_eq!(s.permissions.protected_paths.len(), 1);
    assert!(!s.permissions.network_in_plan_mode && !s.permissions.ask);
    assert_eq!(s.permissions.question_timeout, Duration::from_secs(60), "a longer wait is not taken");
    assert_eq!(s.network.allow_hosts, ["api.github.com"], "only hosts both allow");
    assert_eq!((s.remote.default_mode, s.remote.max_mode), (Mode::Plan, Mode::Plan));

    // True cannot undo the user's false.
    let strict = user(r#"{"permissions": {"network_in_plan_mode": false, "ask": false}}"#).unwrap();
    let s = ws(strict, r#"{"permissions": {"network_in_plan_mode": true, "ask": true}}"#).unwrap();
    assert!(!s.permissions.network_in_plan_mode && !s.permissions.ask);

    // Network: never looser than the user's.
    let allow = Settings::default();
    assert_eq!(ws(allow.clone(), r#"{"network": {"policy": "deny"}}"#).unwrap().network.policy, NetworkPolicy::Deny);
    let listed = ws(allow.clone(), r#"{"network": {"policy": "allowlist", "allow_hosts": ["a.org"]}}"#).unwrap();
    assert_eq!(
        listed.network,
        Network {
            policy: NetworkPolicy::Allowlist,
            shell_default: ShellNetwork::Offline,
            allow_hosts: vec!["a.org".into()]
        }
    );
    let denied = user(r#"{"network": {"policy": "deny"}}"#).unwrap();
    assert_eq!(ws(denied, r#"{"network": {"policy": "allow"}}"#).unwrap().network.policy, NetworkPolicy::Deny);
    assert_eq!(ws(base.clone(), r#"{"network": {"policy": "allow"}}"#).unwrap().network, base.network);

    // The shell default: offline unless the user says allow; a workspace can only take it back.
    assert_eq!(allow.network.shell_default, ShellNetwork::Offline);
    let old = user(r#"{"network": {"shell_default": "allow"}}"#).unwrap();
    assert_eq!(old.network.shell_default, ShellNetwork::Allow);
    assert_eq!(
        ws(old.clone(), r#"{"network": {"policy": "deny"}}"#).unwrap().network.shell_default,
        ShellNetwork::Allow
    );
    let back = ws(old, r#"{"network": {"shell_default": "offline"}}"#).unwrap();
    assert_eq!(back.network.shell_default, ShellNetwork::Offline);
    let no_loosening = ws(allow, r#"{"network": {"shell_default": "allow"}}"#).unwrap();
    assert_eq!(no_loosening.network.shell_default, ShellNetwork::Offline);
}

#[test]
fn a_workspace_file_cannot_allow() {
    for (text, key) in [
        (r#"{"permissions": {"allow": ["rm *"]}}"#, "permissions.allow"),
        (r#"{"permissions": {"allow_tools": ["bash"]}}"#, "permissions.allow_tools"),
        (r#"{"permissions": {"allow_outside_workspace": true}}"#, "permissions.allow_outside_workspace"),
        (r#"{"sandbox": {"disabled": true}}"#, "sandbox"),
    ] {
        let e = ws(Settings::default(), text).unwrap_err();
        assert_eq!(e.key(), Some(key), "{text}");
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("/w/.superpi/settings.json: key `{key}`: unknown field")), "{msg}");
        assert!(msg.contains("may only tighten"), "{msg}");
    }
}

#[test]
fn load_reads_both_files_and_tolerates_missing_ones() {
    let config = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    assert_eq!(Settings::load(config.path(), Some(workspace.path())).unwrap(), Settings::default());
    assert_eq!(Settings::load(config.path(), None).unwrap(), Settings::default());

    std::fs::write(config.path().join(SETTINGS_FILE), r#"{"permissions": {"allow": ["ls"]}}"#).unwrap();
    std::fs::create_dir(workspace.path().join(".superpi")).unwrap();
    std::fs::write(workspace.path().join(WORKSPACE_SETTINGS_FILE), r#"{"permissions": {"deny": ["ls"]}}"#).unwrap();
    let s = Settings::load(config.path(), Some(workspace.path())).unwrap();
    assert_eq!(s.permissions.allow.len(), 1);
    assert_eq!(s.permissions.deny.len(), 1);
    assert!(Settings::load(config.path(), None).unwrap().permissions.deny.is_empty());

    std::fs::write(workspace.path().join(WORKSPACE_SETTINGS_FILE), r#"{"permissions": {"allow": ["ls"]}}"#).unwrap();
    let e = Settings::load(config.path(), Some(workspace.path())).unwrap_err();
    assert_eq!(e.path(), workspace.path().join(WORKSPACE_SETTINGS_FILE));

    std::fs::write(config.path().join(SETTINGS_FILE), "{").unwrap();
    let e = Settings::load(config.path(), None).unwrap_err();
    assert_eq!(e.path(), config.path().join(SETTINGS_FILE));
    assert!(e.to_string().contains("EOF while parsing"), "{e}");
}

/// The examples of SETTINGS.md are valid, so the document cannot drift from the code.
#[test]
fn settings_md_examples_parse() {
    let doc = include_str!("../SETTINGS.md");
    let blocks = |lang: &str| -> Vec<String> {
        let fence = format!("```{lang}\n");
        doc.split(fence.as_str()).skip(1).map(|b| b.split("```").next().unwrap_or("").to_string()).collect()
    };
    let json = blocks("json");
    assert_eq!(json.len(), 3);
    let full = Settings::from_user_file(&json[0], Path::new("SETTINGS.md")).unwrap();
    assert_eq!(full.permissions.allow.len(), 5);
    assert_eq!(full.network.policy, NetworkPolicy::Allowlist);
    // The non-list values of the full example are the defaults, the network block aside.
    let d = Settings::default();
    assert_eq!(full.permissions.allow_outside_workspace, d.permissions.allow_outside_workspace);
    assert_eq!(full.permissions.network_in_plan_mode, d.permissions.network_in_plan_mode);
    assert_eq!(full.permissions.ask, d.permissions.ask);
    assert_eq!(full.permissions.question_timeout, d.permissions.question_timeout);
    assert_eq!(full.remote, d.remote);
    assert_eq!(full.sandbox.disabled, d.sandbox.disabled);
    assert_eq!((full.web.max_bytes, full.web.timeout), (d.web.max_bytes, d.web.timeout));
    assert_eq!(full.web.private_hosts, ["wiki.intranet.example"]);
    assert!(full.web.search.is_some());
    assert_eq!((full.hooks.before_tool.len(), full.hooks.after_turn.len()), (1, 1));
    assert_eq!(full.hooks.before_tool[0].timeout, crate::hooks::DEFAULT_HOOK_TIMEOUT);
    let tightened = d.tightened_by_workspace_file(&json[1], Path::new("SETTINGS.md")).unwrap();
    assert_eq!(tightened.network.policy, NetworkPolicy::Deny);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(crate::permission_rules::USER_RULES_FILE), &json[2]).unwrap();
    let rules = crate::PermissionRules::load(dir.path(), Some(Path::new("/home/me/src/app"))).unwrap();
    assert!(rules.trusted() && rules.all().len() == 6 && rules.all().iter().all(|r| r.ignored.is_none()));
    let toml = blocks("toml");
    assert_eq!(toml.len(), 2);
    let tools = crate::test_tools::builtin_tools();
    let hs = crate::harness::Harnesses::with_file(&toml[0], Path::new("SETTINGS.md"), &tools).unwrap();
    assert_eq!(hs.get("reviewer").unwrap().max_mode, Mode::AcceptEdits);
    let backends = crate::harness::Harnesses::with_file(&toml[1], Path::new("SETTINGS.md"), &tools).unwrap();
    assert_eq!(backends.opencode_idle_stop_secs(), Some(600));
}

#[test]
fn mcp_servers_are_read_from_the_user_file_with_errors_naming_the_key() {
    let path = Path::new("/cfg/settings.json");
    let text = r#"{"mcp_servers": {"fix": {"command": "/bin/fix", "args": ["-v"], "env": {"K": "V"}, "cwd": "/srv"}}}"#;
    let s = Settings::from_user_file(text, path).unwrap();
    let env = BTreeMap::from([("K".to_string(), "V".to_string())]);
    let McpTransport::Stdio { command, args, env: vars, cwd } = &s.mcp_servers["fix"].transport else { panic!() };
    assert_eq!((command.as_str(), args.clone()), ("/bin/fix", vec!["-v".to_string()]));
    assert_eq!((vars, cwd.as_deref()), (&env, Some(Path::new("/srv"))));
    let text = r#"{"mcp_servers": {"far": {"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "a"},
                  "bearer_token_env": "FAR_TOKEN"}}}"#;
    let s = Settings::from_user_file(text, path).unwrap();
    let McpTransport::Http { url, headers, bearer_token_env, .. } = &s.mcp_servers["far"].transport else { panic!() };
    assert_eq!((url.as_str(), bearer_token_env.as_deref()), ("https://mcp.example.com/mcp", Some("FAR_TOKEN")));
    assert_eq!(headers.get("X-Team").map(String::as_str), Some("a"));
    assert_eq!(s.mcp_servers["far"].defer, None);
    let text = r#"{"mcp_servers": {"old": {"url": "http://h/sse", "sse": true, "defer": true}}}"#;
    let s = Settings::from_user_file(text, path).unwrap();
    assert!(matches!(s.mcp_servers["old"].transport, McpTransport::Http { sse: true, .. }));
    assert_eq!(s.mcp_servers["old"].defer, Some(true));

    let bad = |text: &str| Settings::from_user_file(text, path).unwrap_err();
    assert_eq!(bad(r#"{"mcp_servers": {"a__b": {"command": "x"}}}"#).key(), Some("mcp_servers.a__b"));
    assert_eq!(bad(r#"{"mcp_servers": {"fix": {"command": " "}}}"#).key(), Some("mcp_servers.fix.command"));
    assert_eq!(bad(r#"{"mcp_servers": {"fix": {"command": "x", "cwd": "rel"}}}"#).key(), Some("mcp_servers.fix.cwd"));
    let both = bad(r#"{"mcp_servers": {"fix": {"command": "x", "url": "http://h"}}}"#);
    assert_eq!(both.key(), Some("mcp_servers.fix"));
    assert!(both.to_string().contains("/cfg/settings.json"), "{both}");
    assert_eq!(bad(r#"{"mcp_servers": {"fix": {"url": "ftp://h"}}}"#).key(), Some("mcp_servers.fix.url"));
    assert_eq!(bad(r#"{"mcp_servers": {"fix": {"url": "http://h", "args": ["x"]}}}"#).key(), Some("mcp_servers.fix"));
    assert_eq!(
        bad(r#"{"mcp_servers": {"fix": {"command": "x", "headers": {"A": "b"}}}}"#).key(),
        Some("mcp_servers.fix")
    );
    assert_eq!(bad(r#"{"mcp_servers": {"fix": {"command": "x", "sse": true}}}"#).key(), Some("mcp_servers.fix"));
    let header = bad(r#"{"mcp_servers": {"fix": {"url": "http://h", "headers": {"A": "b\r\nC: d"}}}}"#);
    assert_eq!(header.key(), Some("mcp_servers.fix.headers"));
    assert_eq!(bad(r#"{"mcp_servers": {"fix": {"command": "x", "nope": 1}}}"#).key(), Some("mcp_servers.fix.nope"));
    assert_eq!(
        bad(r#"{"mcp_servers": {"fix": {"command": "x", "env": {"K": "${A"}}}}"#).key(),
        Some("mcp_servers.fix.env")
    );
    let header = bad(r#"{"mcp_servers": {"fix": {"url": "http://h", "headers": {"A": "${1X}"}}}}"#);
    assert_eq!(header.key(), Some("mcp_servers.fix.headers"));
    let off =
        Settings::from_user_file(r#"{"mcp_servers": {"fix": {"command": "x", "disabled": true}}}"#, path).unwrap();
    assert!(off.mcp_servers["fix"].disabled);
}

#[test]
fn variables_in_server_settings_come_from_a_lookup_and_an_unset_one_is_named() {
    use crate::mcp_servers::expand_vars;
    let lookup = |name: &str| (name == "TOKEN").then(|| "t0k".to_string());
    assert_eq!(expand_vars("Bearer ${TOKEN}", lookup).unwrap(), "Bearer t0k");
    assert_eq!(expand_vars("${TOKEN}${TOKEN}-$HOME-$$-$", lookup).unwrap(), "t0kt0k-$HOME-$-$");
    assert_eq!(expand_vars("plain", lookup).unwrap(), "plain");
    assert!(expand_vars("${MISSING}", lookup).unwrap_err().contains("`${MISSING}` is not set"));
    assert!(expand_vars("${A-B}", lookup).unwrap_err().contains("not a variable name"));
    assert!(expand_vars("x ${TOKEN", lookup).unwrap_err().contains("without its"));
}

#[test]
fn an_mcp_server_gets_the_network_only_as_the_network_policy_allows() {
    let path = Path::new("/cfg/settings.json");
    let text = |network: &str, shell_default: &str| {
        format!(
            r#"{{"network": {{"policy": "{network}", "shell_default": "{shell_default}"}},
                "mcp_servers": {{"plain": {{"command": "x"}}, "asks": {{"command": "x", "network": true}},
                                 "refuses": {{"command": "x", "network": false}}}}}}"#
        )
    };
    let grants = |network: &str, shell_default: &str| {
        let s = Settings::from_user_file(&text(network, shell_default), path).unwrap();
        ["plain", "asks", "refuses"].map(|name| s.mcp_servers[name].gets_network(&s.network))
    };
    assert_eq!(grants("allow", "offline"), [false, true, false]);
    assert_eq!(grants("allow", "allow"), [true, true, false]);
    assert_eq!(grants("allowlist", "offline"), [false, false, false]);
    assert_eq!(grants("deny", "allow"), [false, false, false]);
}

#[test]
fn a_workspace_file_cannot_add_mcp_servers() {
    let err = Settings::default()
        .tightened_by_workspace_file(
            r#"{"mcp_servers": {"x": {"command": "sh"}}}"#,
            Path::new("/ws/.superpi/settings.json"),
        )
        .unwrap_err();
    assert_eq!(err.path(), Path::new("/ws/.superpi/settings.json"));
    assert!(err.to_string().contains("mcp_servers") && err.to_string().contains("only tighten"), "{err}");
}

#[test]
fn the_web_section_is_read_from_the_user_file_only() {
    let s = user(
        r#"{"web": {"private_hosts": ["Intranet.Example.", "127.0.0.1", "[::1]"], "max_bytes": 1000,
            "timeout_secs": 5, "search": {"backend": "searxng", "url": "http://127.0.0.1:8888/search"}}}"#,
    )
    .unwrap();
    assert_eq!(s.web.private_hosts, ["intranet.example", "127.0.0.1", "::1"]);
    assert!(s.web.private_host("INTRANET.example") && s.web.private_host("[::1]") && s.web.private_host("::1"));
    assert!(!s.web.private_host("a.intranet.example"), "an entry is one host, not its subdomains");
    assert_eq!((s.web.max_bytes, s.web.timeout), (1000, Duration::from_secs(5)));
    let search = s.web.search.unwrap();
    assert_eq!((search.kind, search.url.as_str()), (SearchKind::Searxng, "http://127.0.0.1:8888/search"));
    let brave = user(r#"{"web": {"search": {"backend": "brave", "api_key_env": "BRAVE_API_KEY"}}}"#).unwrap();
    assert_eq!(brave.web.search.unwrap().url, crate::web::BRAVE_URL);
    assert_eq!(Settings::default().web, WebSettings::default());
    assert!(Settings::default().web.search.is_none());

    for (text, key) in [
        (r#"{"web": {"private_hosts": ["http://x"]}}"#, "web.private_hosts[0]"),
        (r#"{"web": {"max_bytes": 0}}"#, "web.max_bytes"),
        (r#"{"web": {"timeout_secs": 301}}"#, "web.timeout_secs"),
        (r#"{"web": {"search": {"backend": "searxng"}}}"#, "web.search.url"),
        (r#"{"web": {"search": {"backend": "brave"}}}"#, "web.search.api_key_env"),
        (r#"{"web": {"search": {"backend": "searxng", "url": "ftp://x"}}}"#, "web.search.url"),
        (r#"{"web": {"search": {"backend": "bing", "url": "https://x"}}}"#, "web.search.backend"),
    ] {
        assert_eq!(user(text).unwrap_err().key(), Some(key), "{text}");
    }
    let e = ws(Settings::default(), r#"{"web": {"private_hosts": ["10.0.0.1"]}}"#).unwrap_err();
    assert!(e.to_string().contains("may only tighten"), "{e}");
}

#[test]
fn the_checkpoints_section_is_read_from_the_user_file_only() {
    let d = Settings::default().checkpoints;
    assert!(d.enabled && !d.auto_commit, "checkpoints on, auto-commit off by default");
    assert_eq!(d.commit_prefix, crate::checkpoints::DEFAULT_COMMIT_PREFIX);
    let s = user(r#"{"checkpoints": {"auto_commit": true, "commit_prefix": "bot: "}}"#).unwrap();
    assert!(s.checkpoints.enabled && s.checkpoints.auto_commit);
    assert_eq!(s.checkpoints.commit_prefix, "bot: ");
    assert!(!user(r#"{"checkpoints": {"enabled": false}}"#).unwrap().checkpoints.enabled);
    for (text, key) in [
        (r#"{"checkpoints": {"enabled": false, "auto_commit": true}}"#, "checkpoints.auto_commit"),
        (r#"{"checkpoints": {"commit_prefix": "two\nlines"}}"#, "checkpoints.commit_prefix"),
        (r#"{"checkpoints": {"auto": true}}"#, "checkpoints.auto"),
    ] {
        let err = user(text).unwrap_err();
        assert!(err.key() == Some(key) || err.to_string().contains("unknown field `auto`"), "{text}: {err}");
    }
    let e = ws(Settings::default(), r#"{"checkpoints": {"auto_commit": true}}"#).unwrap_err();
    assert!(e.to_string().contains("may only tighten"), "{e}");
}

#[test]
fn the_subagents_section_is_read_from_the_user_file_only() {
    let d = Settings::default().subagents;
    assert_eq!((d.max_depth, d.max_parallel, d.timeout), (2, 4, Duration::from_secs(120)));
    let s = user(r#"{"subagents": {"max_depth": 1, "max_parallel": 2, "timeout_secs": 30}}"#).unwrap();
    assert_eq!((s.subagents.max_depth, s.subagents.max_parallel, s.subagents.timeout), (1, 2, Duration::from_secs(30)));
    for (text, key) in [
        (r#"{"subagents": {"max_depth": 0}}"#, "subagents.max_depth"),
        (r#"{"subagents": {"max_depth": 6}}"#, "subagents.max_depth"),
        (r#"{"subagents": {"max_parallel": 17}}"#, "subagents.max_parallel"),
        (r#"{"subagents": {"timeout_secs": 0}}"#, "subagents.timeout_secs"),
    ] {
        assert_eq!(user(text).unwrap_err().key(), Some(key), "{text}");
    }
    let e = ws(Settings::default(), r#"{"subagents": {"max_depth": 5}}"#).unwrap_err();
    assert!(e.to_string().contains("may only tighten"), "{e}");
}

#[test]
fn a_budget_is_set_by_the_user_and_only_lowered_by_a_workspace() {
    let base = user(r#"{"budget": {"turn_usd": 1.0, "day_usd": 20}}"#).unwrap();
    assert_eq!(
        (base.budget.turn_usd, base.budget.conversation_usd, base.budget.day_usd),
        (Some(1.0), None, Some(20.0))
    );
    let s = ws(base.clone(), r#"{"budget": {"turn_usd": 5.0, "conversation_usd": 3.0, "day_usd": 10}}"#).unwrap();
    assert_eq!((s.budget.turn_usd, s.budget.conversation_usd, s.budget.day_usd), (Some(1.0), Some(3.0), Some(10.0)));
    let bad = user(r#"{"budget": {"turn_usd": -2}}"#).unwrap_err().to_string();
    assert!(bad.contains("key `budget.turn_usd`: -2 is not an amount"), "{bad}");
}

#[test]
fn the_scratch_idle_time_is_a_day_unless_the_user_says() {
    assert_eq!(Settings::default().scratch_ttl, Duration::from_secs(24 * 3600));
    assert_eq!(user(r#"{"scratch_ttl_hours": 2}"#).unwrap().scratch_ttl, Duration::from_secs(7200));
    assert_eq!(user(r#"{"scratch_ttl_hours": 9000}"#).unwrap_err().key(), Some("scratch_ttl_hours"));
    let e = ws(Settings::default(), r#"{"scratch_ttl_hours": 1}"#).unwrap_err();
    assert!(e.to_string().contains("may only tighten"), "{e}");
}
