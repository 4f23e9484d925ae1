//! Runs one tool call through the sandbox and prints the outcome as JSON, for trying the
//! sandbox by hand (as another user, for instance):
//! `superpi-sandbox-try WORKSPACE DATA_DIR TOOL ARGUMENTS_JSON`. The tool runner is looked for
//! beside this program. The confinement tests run it as an unprivileged user.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use superpi_sandbox::{Sandbox, SandboxConfig, ToolCall};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: superpi-sandbox-try WORKSPACE DATA_DIR TOOL ARGUMENTS_JSON");
        std::process::exit(2);
    }
    let mut config = SandboxConfig::new(PathBuf::from(&args[2]));
    config.tool_exe = std::env::current_exe().unwrap().with_file_name("superpi-sandbox-tool");
    config.tool_args = Vec::new();
    let sandbox = Sandbox::new(config).unwrap();
    eprintln!("{:?}", sandbox.status());
    let call = ToolCall {
        conversation_id: 1,
        call_id: "try".into(),
        name: args[3].clone(),
        arguments: serde_json::from_str(&args[4]).unwrap(),
        workspace: Some(PathBuf::from(&args[1])),
        network: false,
        read_only: false,
        timeout: None,
        protected: Default::default(),
        allowed_hosts: None,
        extra_roots: Vec::new(),
    };
    let out = sandbox.run(call, CancellationToken::new(), None).await;
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
}
