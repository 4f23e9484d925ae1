use super::*;
use crate::test_tools::builtin_tools;
use superpi_proto::tool::Capability;

fn file(text: &str) -> Result<Harnesses, ConfigError> {
    Harnesses::with_file(text, Path::new("/cfg/harnesses.toml"), &builtin_tools())
}

fn err(text: &str) -> String {
    file(text).unwrap_err().to_string()
}

#[test]
fn builtins_are_as_specified() {
    let hs = Harnesses::builtin(&builtin_tools());
    assert_eq!(hs.ids(), ["superpi-code", "superpi-planner", "superpi-assistant", "superpi-librarian"]);
    let code = hs.get("superpi-code").unwrap();
    let all: Vec<String> = builtin_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(code.tools, all);
    assert_eq!(
        (code.default_mode, code.max_mode, code.workspace.clone()),
        (Mode::AcceptEdits, Mode::Auto, WorkspaceKind::Repo)
    );
    let planner = hs.get("superpi-planner").unwrap();
    assert_eq!(planner.tools, ["read", "grep", "find", "ls"]);
    assert_eq!((planner.default_mode, planner.max_mode), (Mode::Plan, Mode::Plan));
    let assistant = hs.get("superpi-assistant").unwrap();
    assert_eq!(assistant.workspace, WorkspaceKind::None);
    assert!(assistant.tools.is_empty(), "the built-in tools hold no capability block");
    assert_eq!(hs.default_harness().id, "superpi-code");
    assert_eq!(hs.resolve(None).unwrap().id, "superpi-code");
    for h in hs.iter() {
        assert!(h.default_mode <= h.max_mode);
        assert!(!h.prompt.is_empty() && !h.description.is_empty());
    }
}

#[test]
fn capability_blocks_go_to_the_assistant_and_stay_out_of_code_and_planner() {
    let block = |name: &str, effects: Vec<Effect>, capability| ToolDef {
        name: name.into(),
        effects,
        capability: Some(capability),
        ..Default::default()
    };
    let mut tools = builtin_tools();
    tools.push(block("web_fetch", vec![Effect::NetRead], Capability::Web));
    tools.push(block("memory_read", vec![Effect::Read], Capability::Memory));
    let hs = Harnesses::builtin(&tools);
    assert_eq!(hs.get("superpi-assistant").unwrap().tools, ["web_fetch", "memory_read"]);
    let code = hs.get("superpi-code").unwrap();
    assert!(!code.offers("web_fetch") && !code.offers("memory_read") && code.offers("bash"));
    assert_eq!(hs.get("superpi-planner").unwrap().tools, ["read", "grep", "find", "ls"]);
}

#[test]
fn short_ids_resolve_and_unknown_ids_list_the_known() {
    let hs = Harnesses::builtin(&builtin_tools());
    assert_eq!(hs.get("planner").unwrap().id, "superpi-planner");
    assert_eq!(hs.resolve(Some("assistant")).unwrap().id, "superpi-assistant");
    let e = hs.get("superpi-nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown harness `superpi-nope` (known: superpi-code, superpi-planner, superpi-assistant, superpi-librarian)"
    );
    assert!(hs.get("").is_err());
}

#[test]
fn harness_info_conversion() {
    let hs = Harnesses::builtin(&builtin_tools());
    let info = HarnessInfo::from(hs.get("superpi-planner").unwrap());
    assert_eq!(
        info,
        HarnessInfo {
            id: "superpi-planner".into(),
            name: "superpi planner".into(),
            description: "Reads a repository and plans; cannot write.".into(),
            default_mode: "plan".into(),
            max_mode: "plan".into(),
            tools: vec!["read".into(), "grep".into(), "find".into(), "ls".into()],
            workspace: "repo".into(),
            backend: None,
            no_effort: false,
            capabilities: Vec::new(),
        }
    );
    assert_eq!(hs.infos().len(), 4);
    assert_eq!(hs.infos()[2].workspace, "none");
}

#[test]
fn loadout_filters_available_tools() {
    let tool = |name: &str| ToolDef { name: name.into(), ..Default::default() };
    let available: Vec<ToolDef> = ["ls", "write", "read", "bash", "grep", "find", "edit"].map(tool).into();
    let hs = Harnesses::builtin(&builtin_tools());
    let names = |h: &Harness| h.loadout(&available).into_iter().map(|t| t.name).collect::<Vec<_>>();
    assert_eq!(names(hs.get("superpi-planner").unwrap()), ["read", "grep", "find", "ls"]);
    assert_eq!(names(hs.get("superpi-code").unwrap()).len(), 7);
    assert!(names(hs.get("superpi-assistant").unwrap()).is_empty());
    assert!(hs.get("superpi-planner").unwrap().offers("read"));
    assert!(!hs.get("superpi-planner").unwrap().offers("write"));
}

#[test]
fn file_adds_harnesses() {
    let hs = file(
        r#"
[harnesses.triage]
name = "Triage"
description = "Sorts tickets"
prompt = "You triage."
tools = ["read", "grep"]
default_mode = "plan"
max_mode = "accept-edits"

[harnesses.chat]
tools = ["web_fetch"]
workspace = "none"
"#,
    )
    .unwrap();
    assert_eq!(
        hs.ids(),
        ["superpi-code", "superpi-planner", "superpi-assistant", "superpi-librarian", "chat", "triage"]
    );
    let triage = hs.get("triage").unwrap();
    assert_eq!(
        triage,
        &Harness {
            id: "triage".into(),
            name: "Triage".into(),
            description: "Sorts tickets".into(),
            prompt: "You triage.".into(),
            tools: vec!["read".into(), "grep".into()],
            default_mode: Mode::Plan,
            max_mode: Mode::AcceptEdits,
            workspace: WorkspaceKind::Repo,
            backend: None,
            capabilities: Vec::new(),
            harvest: false,
            unattended: false,
            webhooks: false,
            subagents: None,
            handoff: Vec::new(),
            cost: Default::default(),
        }
    );
    let chat = hs.get("chat").unwrap();
    assert_eq!((chat.name.as_str(), chat.default_mode, chat.max_mode), ("chat", Mode::AcceptEdits, Mode::Auto));
    assert_eq!(chat.workspace, WorkspaceKind::None);
    // A ceiling below accept-edits lowers the default.
    let low = file("[harnesses.low]\ntools = []\nmax_mode = \"plan\"\n").unwrap();
    assert_eq!(low.get("low").unwrap().default_mode, Mode::Plan);
    assert_eq!(file("").unwrap(), Harnesses::builtin(&builtin_tools()));
}

#[test]
fn a_harness_budget_is_read_and_checked() {
    let hs = file("[harnesses.thrifty]\ntools = []\nbudget = { turn_usd = 0.5, day_usd = 5.0 }\n").unwrap();
    let budget = hs.get("thrifty").unwrap().cost.budget;
    assert_eq!((budget.turn_usd, budget.conversation_usd, budget.day_usd), (Some(0.5), None, Some(5.0)));
    let bad = err("[harnesses.x]\ntools = []\nbudget = { turn_usd = -1.0 }\n");
    assert!(bad.contains("key `harnesses.x.budget.turn_usd`: -1 is not an amount"), "{bad}");
}

#[test]
fn models_cascades_and_hand_off_targets_are_read_and_checked() {
    let hs = file(
        "[harnesses.a]\ntools = []\nmodel = [\"cheap\", \"strong\"]\ncompaction_model = \"cheap\"\n\
         subagent_model = \"tiny\"\nhandoff = [\"planner\", \"b\"]\n[harnesses.b]\ntools = []\nmodel = \"one\"\n",
    )
    .unwrap();
    let a = hs.get("a").unwrap();
    assert_eq!(a.cost.models, ["cheap", "strong"]);
    assert_eq!(
        (a.cost.escalation("cheap"), a.cost.escalation("strong"), a.cost.escalation("x")),
        (Some("strong"), None, None)
    );
    assert_eq!((a.cost.compaction_model.as_deref(), a.cost.subagent_model.as_deref()), (Some("cheap"), Some("tiny")));
    // Short ids are made full.
    assert_eq!(a.handoff, ["superpi-planner", "b"]);
    assert_eq!(hs.get("b").unwrap().cost.models, ["one"]);
    assert!(hs.get("superpi-code").unwrap().handoff.is_empty());
    let bad = err("[harnesses.x]\ntools = []\nhandoff = [\"nobody\"]\n");
    assert!(bad.contains("key `harnesses.x.handoff[0]`: unknown harness `nobody`"), "{bad}");
    let bad = err("[harnesses.x]\ntools = []\nhandoff = [\"x\"]\n");
    assert!(bad.contains("key `harnesses.x.handoff[0]`"), "{bad}");
    let bad = err("[harnesses.x]\ntools = []\nmodel = [\"m\", \"m\"]\n");
    assert!(bad.contains("key `harnesses.x.model[1]`"), "{bad}");
    let bad = err("[harnesses.x]\ntools = []\nmodel = []\n");
    assert!(bad.contains("key `harnesses.x.model`"), "{bad}");
}

#[test]
fn file_errors_name_the_file_and_the_key() {
    assert_eq!(
        err("[harnesses.x]\ntools = []\ntoolz = 1\n"),
        "/cfg/harnesses.toml: key `harnesses.x.toolz`: unknown field `toolz`, expected one of `name`, `description`, \
         `prompt`, `tools`, `default_mode`, `max_mode`, `workspace`, `backend`, `capabilities`, `harvest`, `unattended`, `webhooks`, `subagents`, \
         `handoff`, `budget`, `model`, `compaction_model`, `subagent_model` (line 3, column 1)"
    );
    assert_eq!(
        err("[harnesses.x]\ntools = []\nmax_mode = \"yolo\"\n"),
        "/cfg/harnesses.toml: key `harnesses.x.max_mode`: unknown variant `yolo`, expected one of `plan`, \
         `accept-edits`, `auto` (line 3, column 12)"
    );
    assert_eq!(
        err("[harnesses.x]\nname = \"X\"\n"),
        "/cfg/harnesses.toml: key `harnesses.x`: missing field `tools` (line 1, column 1)"
    );
    assert_eq!(
        err("[harnesses.x]\ntools = [1]\n"),
        "/cfg/harnesses.toml: key `harnesses.x.tools[0]`: invalid type: integer `1`, expected a string (line 2, column 10)"
    );
    assert_eq!(
        err("[harnesses.x]\ntools = []\ndefault_mode = \"auto\"\nmax_mode = \"plan\"\n"),
        "/cfg/harnesses.toml: key `harnesses.x.default_mode`: default mode `auto` is above the ceiling max_mode `plan`"
    );
    assert_eq!(
        err("[harnesses.x]\ntools = [\"web\", \"bash\"]\nworkspace = \"none\"\n"),
        "/cfg/harnesses.toml: key `harnesses.x.tools[1]`: a harness with workspace \"none\" cannot offer `bash`, \
         which acts in a workspace"
    );
    assert_eq!(
        err("[harnesses.x]\ntools = [\"a\", \"a\"]\n"),
        "/cfg/harnesses.toml: key `harnesses.x.tools[1]`: tool `a` is listed twice"
    );
    assert_eq!(
        err("[harnesses.superpi-planner]\ntools = [\"write\"]\nmax_mode = \"auto\"\n"),
        "/cfg/harnesses.toml: key `harnesses.superpi-planner`: a built-in harness cannot be redefined; choose another id"
    );
    assert!(
        err("[harnesses.\"Bad Id\"]\ntools = []\n")
            .starts_with("/cfg/harnesses.toml: key `harnesses.Bad Id`: a harness id")
    );
    assert!(err("harness = 1\n").contains("unknown field `harness`"));
    let e = file("[harnesses.x\n").unwrap_err();
    assert_eq!(e.key(), None);
    assert!(e.to_string().starts_with("/cfg/harnesses.toml: "), "{e}");
    assert!(e.to_string().contains("line 1"), "{e}");
}

#[test]
fn load_reads_the_config_dir() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(Harnesses::load(dir.path(), &builtin_tools()).unwrap(), Harnesses::builtin(&builtin_tools()));
    std::fs::write(dir.path().join(HARNESS_FILE), "[harnesses.mine]\ntools = [\"read\"]\n").unwrap();
    assert!(Harnesses::load(dir.path(), &builtin_tools()).unwrap().get("mine").is_ok());
    std::fs::write(dir.path().join(HARNESS_FILE), "[harnesses.mine]\n").unwrap();
    let e = Harnesses::load(dir.path(), &builtin_tools()).unwrap_err();
    assert_eq!(e.path(), dir.path().join(HARNESS_FILE));
    assert_eq!(e.key(), Some("harnesses.mine"));
    // A directory in the file's place is a read error naming the file.
    let dir2 = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir2.path().join(HARNESS_FILE)).unwrap();
    let e = Harnesses::load(dir2.path(), &builtin_tools()).unwrap_err();
    assert!(matches!(e, ConfigError::Read { ref path, .. } if *path == dir2.path().join(HARNESS_FILE)));
}

#[test]
fn live_tools_go_to_harnesses_with_tools_and_a_planner_gets_only_reads() {
    let hs = Harnesses::builtin(&builtin_tools());
    let server = Some("fs".to_string());
    let read = ToolDef {
        name: "mcp__fs__read".into(),
        effects: vec![Effect::Read],
        mcp_server: server.clone(),
        ..Default::default()
    };
    let exec =
        ToolDef { name: "mcp__fs__run".into(), effects: vec![Effect::Exec], mcp_server: server, ..Default::default() };
    let code = hs.get("superpi-code").unwrap();
    assert!(code.offers_live(&read) && code.offers_live(&exec));
    let planner = hs.get("superpi-planner").unwrap();
    assert!(planner.offers_live(&read) && !planner.offers_live(&exec));
    let assistant = hs.get("superpi-assistant").unwrap();
    assert!(!assistant.offers_live(&read));
    let unlisted = ToolDef { mcp_server: None, ..read };
    assert!(!code.offers_live(&unlisted), "a tool of no MCP server is offered by name only");
}

#[test]
fn backends_add_their_harnesses_after_the_builtins_and_files_name_programs() {
    let hs = file(
        r#"
[backends.claude-code]
program = "/opt/claude/bin/claude"

[harnesses.reviewer]
backend = "claude-code"
tools = []
default_mode = "plan"
"#,
    )
    .unwrap()
    .with_backends(&[BackendKind::ClaudeCode, BackendKind::Codex]);
    assert_eq!(
        hs.ids(),
        [
            "superpi-code",
            "superpi-planner",
            "superpi-assistant",
            "superpi-librarian",
            "claude-code",
            "codex",
            "reviewer"
        ]
    );
    let claude = hs.get("claude-code").unwrap();
    assert_eq!(claude.backend, Some(BackendKind::ClaudeCode));
    assert!(claude.tools.is_empty() && claude.prompt.is_empty());
    assert_eq!(
        (claude.default_mode, claude.max_mode, claude.workspace.clone()),
        (Mode::AcceptEdits, Mode::Auto, WorkspaceKind::Repo)
    );
    assert_eq!(claude.info().backend.as_deref(), Some("claude-code"));
    let reviewer = hs.get("reviewer").unwrap();
    assert_eq!((reviewer.backend, reviewer.default_mode), (Some(BackendKind::ClaudeCode), Mode::Plan));
    assert_eq!(hs.backend_program(BackendKind::ClaudeCode), Some(Path::new("/opt/claude/bin/claude")));
    assert_eq!(hs.backend_program(BackendKind::Codex), None);
}

#[test]
fn backend_harnesses_are_checked() {
    assert_eq!(
        err("[harnesses.x]\nbackend = \"claude-code\"\ntools = [\"read\"]\n"),
        "/cfg/harnesses.toml: key `harnesses.x.tools`: a harness with a backend runs the backend's own tools: `tools = []`"
    );
    assert_eq!(
        err("[harnesses.x]\nbackend = \"codex\"\ntools = []\nworkspace = \"none\"\n"),
        "/cfg/harnesses.toml: key `harnesses.x.workspace`: a backend works in a repository; `none` cannot be used with it"
    );
    assert!(
        err("[harnesses.x]\nbackend = \"codex\"\ntools = []\nworkspace = \"scratch\"\n")
            .ends_with("a backend works in a repository; `scratch` cannot be used with it")
    );
    assert_eq!(
        err("[harnesses.codex]\nbackend = \"codex\"\ntools = []\n"),
        "/cfg/harnesses.toml: key `harnesses.codex`: this id is a backend's built-in harness; choose another id and set `backend`"
    );
    assert!(err("[harnesses.x]\nbackend = \"aider\"\ntools = []\n").contains("harnesses.x.backend"));
    let e = err("[backends.codex]\nprogram = \"/x\"\nargs = []\n");
    assert!(e.contains("unknown field `args`"), "{e}");
    assert_eq!(
        err("[backends.codex]\nidle_stop_secs = 5\n"),
        "/cfg/harnesses.toml: key `backends.codex.idle_stop_secs`: only OpenCode's server is kept between turns; the other backends run a process per turn"
    );
}

#[test]
fn opencodes_idle_stop_is_read_without_a_program() {
    let hs = file("[backends.opencode]\nidle_stop_secs = 5\n").unwrap();
    assert_eq!((hs.opencode_idle_stop_secs(), hs.backend_program(BackendKind::Opencode)), (Some(5), None));
    assert_eq!(file("").unwrap().opencode_idle_stop_secs(), None);
}

/// The built-in tools and a tool of each capability block, as a kernel has them.
fn tools_with_blocks() -> Vec<ToolDef> {
    let mut tools = builtin_tools();
    for (name, capability) in [
        ("web_fetch", Capability::Web),
        ("memory_write", Capability::Memory),
        ("schedule_create", Capability::Schedule),
    ] {
        tools.push(ToolDef {
            name: name.into(),
            effects: vec![Effect::StateWrite],
            capability: Some(capability),
            ..Default::default()
        });
    }
    tools
}

#[test]
fn capability_blocks_pick_the_builtins_tools_by_their_facts() {
    let hs = Harnesses::builtin(&tools_with_blocks());
    let tools = |id: &str| hs.get(id).unwrap().tools.clone();
    assert!(
        !tools("superpi-code").iter().any(|t| ["web_fetch", "memory_write", "schedule_create"].contains(&t.as_str()))
    );
    assert!(tools("superpi-code").contains(&"bash".to_string()));
    assert_eq!(tools("superpi-planner"), ["read", "grep", "find", "ls"]);
    assert_eq!(tools("superpi-assistant"), ["web_fetch", "memory_write"]);
    // Files in its own scratch directory, and no shell: nobody watches its turns.
    assert_eq!(
        tools("superpi-librarian"),
        ["read", "write", "grep", "find", "ls", "web_fetch", "memory_write", "schedule_create"]
    );
    let librarian = hs.get("librarian").unwrap();
    assert_eq!(librarian.workspace, WorkspaceKind::Scratch);
    assert!(librarian.harvest && librarian.takes(Capability::Schedule));
    assert!(librarian.unattended, "nobody is present at the librarian's turns");
    assert!(!hs.get("superpi-assistant").unwrap().takes(Capability::Schedule));
    assert!(!hs.get("superpi-assistant").unwrap().unattended);
    assert_eq!(librarian.info().capabilities, ["memory", "schedule", "web"]);
}

#[test]
fn a_file_harness_takes_capability_blocks_whole() {
    let text = r#"
[harnesses.notes]
tools = ["read"]
capabilities = ["memory", "web"]
harvest = true
unattended = true
"#;
    let hs = Harnesses::with_file(text, Path::new("/cfg/harnesses.toml"), &tools_with_blocks()).unwrap();
    let notes = hs.get("notes").unwrap();
    assert_eq!(notes.tools, ["read", "web_fetch", "memory_write"]);
    assert!(notes.takes(Capability::Memory) && notes.harvest && notes.unattended);
    let bad = |text: &str| {
        Harnesses::with_file(text, Path::new("/cfg/harnesses.toml"), &tools_with_blocks()).unwrap_err().to_string()
    };
    assert!(bad("[harnesses.x]\ntools = []\nharvest = true\n").contains("harnesses.x.harvest"));
    assert!(
        bad("[harnesses.x]\ntools = []\ncapabilities = [\"memory\", \"memory\"]\n")
            .contains("harnesses.x.capabilities[1]")
    );
    assert!(bad("[harnesses.x]\ntools = []\ncapabilities = [\"dreams\"]\n").contains("harnesses.x.capabilities"));
}

#[test]
fn scratch_and_shared_workspaces_are_read_and_a_shared_name_is_no_path() {
    let hs = file(
        "[harnesses.drafts]\ntools = [\"read\", \"write\"]\nworkspace = \"scratch\"\n\
         [harnesses.team]\ntools = [\"read\", \"write\"]\nworkspace = { shared = \"team-notes\" }\n",
    )
    .unwrap();
    assert_eq!(hs.get("drafts").unwrap().workspace, WorkspaceKind::Scratch);
    let team = &hs.get("team").unwrap().workspace;
    assert_eq!(*team, WorkspaceKind::Shared("team-notes".into()));
    assert!(team.managed() && !WorkspaceKind::Repo.managed());
    assert_eq!(
        (team.to_string(), hs.get("team").unwrap().info().workspace),
        ("shared:team-notes".into(), "shared".into())
    );
    for bad in ["../etc", "/tmp/x", "", "Team"] {
        let e = err(&format!("[harnesses.t]\ntools = []\nworkspace = {{ shared = \"{bad}\" }}\n"));
        assert!(e.contains("harnesses.t.workspace.shared") && e.contains("never a path"), "{bad}: {e}");
    }
}
