//! Command-line flags: which protocols run, and where each one's implementation is.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::fake_model::FakeModel;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    Acp,
    Mcp,
    Openai,
    Agui,
    Rpc,
    /// OpenCode (`opencode-ai`, ~185 MB, installed outside the repository) as an MCP host of
    /// `superpi mcp`. Not in the default set.
    Opencode,
    /// Every client configuration snippet of the READMEs against its client (Claude Code, Codex
    /// and OpenCode from npm, ~1 GB, installed outside the repository). Not in the default set.
    Clients,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Acp => "acp",
            Protocol::Mcp => "mcp",
            Protocol::Openai => "openai",
            Protocol::Agui => "agui",
            Protocol::Rpc => "rpc",
            Protocol::Opencode => "opencode",
            Protocol::Clients => "clients",
        }
    }
}

/// Runs the official client of each protocol against superpi (or another implementation) and
/// prints a table of checks, ending with `N passed, M failed`.
#[derive(Debug, Clone, Parser)]
#[command(name = "superpi-conformance")]
pub struct Args {
    /// Protocols to check, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "acp,mcp,openai,agui,rpc")]
    pub protocol: Vec<Protocol>,

    /// An ACP agent to check instead of `superpi acp` (a shell command line).
    #[arg(long)]
    pub acp_command: Option<String>,

    /// An MCP stdio server to check instead of `superpi mcp` (a shell command line).
    #[arg(long)]
    pub mcp_command: Option<String>,

    /// An MCP Streamable HTTP endpoint to check instead of `superpi gateway`'s `/mcp`.
    #[arg(long)]
    pub mcp_url: Option<String>,

    /// An OpenAI-compatible base URL (without `/v1`) to check instead of `superpi gateway`.
    #[arg(long)]
    pub openai_url: Option<String>,

    /// The API key sent to `--openai-url`.
    #[arg(long, default_value = "local")]
    pub openai_key: String,

    /// The model asked of `--openai-url` (default: superpi's `superpi-code`).
    #[arg(long)]
    pub openai_model: Option<String>,

    /// An AG-UI run endpoint (the URL HttpAgent posts to) to check instead of `superpi agui`.
    #[arg(long)]
    pub agui_url: Option<String>,

    /// A JSON-RPC 2.0 line server on stdio to check instead of `superpi rpc --stdio`.
    #[arg(long)]
    pub rpc_command: Option<String>,

    /// Starts a local fake model server speaking this vendor API for the implementation under
    /// test (the agent of `--acp-command`, say) and gives it the vendor's key and base URL
    /// variables (`ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY` and
    /// `OPENAI_BASE_URL`). The fake answers from the prompt as superpi's mock model does
    /// (`@tool NAME JSON`, `@hold`, else an echo), so the checks of tool calls, permissions,
    /// cancelling and session/load run against that agent too.
    #[arg(long, value_enum)]
    pub fake_model: Option<FakeModel>,

    /// Checks the third-party implementations of conformance/THIRD_PARTY.md (pinned in
    /// conformance/third-party/, installed once outside the repository) beside superpi, and
    /// fails when their results differ from the record there.
    #[arg(long)]
    pub third_party: bool,

    /// With `--third-party`: rewrite the record in conformance/THIRD_PARTY.md from this run.
    #[arg(long, requires = "third_party")]
    pub write_record: bool,

    /// What a third-party target needs beyond the flags (set by `--third-party`).
    #[arg(skip)]
    pub setup: TargetSetup,

    /// The superpi binary (default: `superpi` beside this program, i.e. target/debug/superpi).
    #[arg(long, env = "SUPERPI_BIN")]
    pub superpi: Option<PathBuf>,

    /// Node.js 20 or newer for the client scripts.
    #[arg(long, default_value = "node")]
    pub node: String,

    /// Seconds one protocol's script may run before it is killed and counted as failed.
    #[arg(long, default_value_t = 240)]
    pub timeout_secs: u64,

    /// Show every line the scripts print to stderr.
    #[arg(long)]
    pub verbose: bool,
}

/// The environment a third-party implementation runs in, beyond what flags say.
#[derive(Debug, Clone, Default)]
pub struct TargetSetup {
    /// Variables for the client script and so for the implementation it starts.
    pub vars: Vec<(String, String)>,
    /// Variables of the caller's environment the implementation must not see.
    pub unset: Vec<String>,
    /// Files written under the run's HOME (path relative to it, contents); `{model_url}` in
    /// the contents becomes the fake model's base URL.
    pub files: Vec<(String, String)>,
}
