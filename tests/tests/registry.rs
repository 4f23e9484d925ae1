//! A tool added to the registry in a test build, with no change to any crate: a test-only
//! tool definition and runner registered through `ToolRegistry::register`, run by a kernel in
//! this process. The model is offered it (the code harness's loadout, `tool.list`), the policy
//! decides its calls from its facts, its runner runs, and an editor (ACP's renderer, fed the
//! facts from `tool.list`) shows it by its facts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{SessionUpdate, ToolKind as AcpKind};
use serde_json::{Value, json};
use superpi_acp::render::{Out, RenderOptions, Renderer};
use superpi_acp::tools::ToolFacts;
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::tool::{PathAccess, PathArg, ToolCallResult, ToolKind, ToolUi};
use superpi_proto::{EventBody, ToolDef};
use superpi_sandbox::{Effect, RunFuture, ToolCall, ToolRunner};
use superpi_tests::{TestEnv, superpi_bin, turn_events, wait};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The throwaway tool: it "stamps" a file of the workspace. Its runner only records the call
/// (it touches no file, so it needs no confinement) and answers.
struct Stamp {
    calls: Mutex<Vec<Value>>,
}

impl ToolRunner for Stamp {
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(call.arguments.clone());
            let path = call.arguments["path"].as_str().unwrap_or("?");
            ToolCallResult {
                output: format!("stamped {path}"),
                is_error: false,
                structured: None,
                details: None,
                images: Vec::new(),
            }
        })
    }
}

fn stamp_def() -> ToolDef {
    ToolDef {
        name: "stamp".into(),
        description: "Stamps a file of the workspace.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "mark": {"type": "string"}},
            "required": ["path"]
        }),
        effects: vec![Effect::FsWrite],
        workspace: true,
        paths: vec![PathArg { arg: "path".into(), access: PathAccess::Write }],
        edits: true,
        ui: ToolUi { kind: ToolKind::Edit, title: Some("Stamp {path}".into()), ..Default::default() },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_tool_is_offered_decided_run_and_shown_by_its_facts() {
    let env = TestEnv::new();
    let _forget = ForgetKernel(&env);
    let runner = Arc::new(Stamp { calls: Mutex::new(Vec::new()) });
    let l = &env.locations;
    let mut config = superpi_kernel::KernelConfig::new(l.data_dir.clone(), l.config_dir.clone(), l.runtime_dir.clone());
    config.workspaces_dir = l.workspaces_dir.clone();
    config.tool_exe = Some(superpi_bin());
    config.tools.register(stamp_def(), runner.clone()).unwrap();
    let kernel = tokio::spawn(superpi_kernel::run(config));

    let mut opts = env.connect_options("registry-test");
    opts.autostart = false;
    let client = wait::until("the in-process kernel listens", wait::PATIENCE, async || {
        superpi_client::KernelClient::connect(&opts).await
    })
    .await;

    // Offered: the code harness offers every tool of the registry, with its facts.
    let tools = client.tools(None).await.unwrap();
    let offered = tools.iter().find(|t| t.name == "stamp").expect("stamp is offered");
    assert_eq!(offered, &stamp_def());

    // Decided from its facts, then run: in accept-edits a file edit runs without asking; a
    // path outside the workspace and a protected path are refused (its `path` is a written
    // path); the runner sees only the call that was allowed.
    let open = OpenParams {
        workspace: Some(env.workspace.display().to_string()),
        model: Some("mock".into()),
        ..Default::default()
    };
    let conversation_id = client.open(open).await.unwrap().conversation_id;
    let watch = WatchParams::live(conversation_id);
    let mut sub = client.watch(watch).await.unwrap();
    let prompt = "@tool stamp {\"path\": \"notes.txt\"}\n\
                  @tool stamp {\"path\": \"/etc/passwd\"}\n\
                  @tool stamp {\"path\": \".env\"}";
    let submitted = client.submit_text(conversation_id, prompt).await.unwrap();
    let events = turn_events(&mut sub, submitted.turn_id).await;
    let completed: Vec<(bool, String)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolCompleted { name, is_error, output, .. } if name == "stamp" => {
                Some((*is_error, output.as_str().unwrap_or_default().to_string()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(completed.len(), 3, "{events:?}");
    assert_eq!(completed[0], (false, "stamped notes.txt".to_string()));
    assert!(completed[1].0 && completed[1].1.contains("outside the workspace"), "{completed:?}");
    assert!(completed[2].0 && completed[2].1.contains("protected path"), "{completed:?}");
    assert_eq!(*runner.calls.lock().unwrap(), vec![json!({"path": "notes.txt"})]);

    // Shown by its facts: an editor renders the call with the kind and title they give.
    let mut renderer = Renderer::new(RenderOptions {
        workspace: Some(env.workspace.clone()),
        tools: ToolFacts::new(tools),
        ..Default::default()
    });
    let started = events.iter().find(|e| matches!(&e.body, EventBody::ToolStarted { name, .. } if name == "stamp"));
    let shown = renderer.render(started.expect("tool_started"));
    let Some(Out::Update(SessionUpdate::ToolCall(call))) = shown.first() else { panic!("{shown:?}") };
    assert_eq!((call.kind, call.title.as_str()), (AcpKind::Edit, "Stamp notes.txt"));
    assert_eq!(call.locations[0].path, env.workspace.join("notes.txt"));

    client.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), kernel).await.expect("the kernel stops").unwrap().unwrap();
}

/// The kernel's lock file names this process: TestEnv (dropped after this) must not kill it,
/// whether the test passes or fails.
struct ForgetKernel<'a>(&'a TestEnv);

impl Drop for ForgetKernel<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0.locations.lock_path());
    }
}
