//! `--third-party`: the same checks against other implementations of the protocols, beside
//! superpi, offline: the ACP agents claude-agent-acp and codex-acp (each on a fake model of
//! its vendor's API) and the MCP server server-everything (stdio and Streamable HTTP). They
//! are pinned in conformance/third-party/ and installed once into a cache outside the
//! repository. The results are the record of conformance/THIRD_PARTY.md: the run fails when
//! they differ from it (or when superpi fails), and `--write-record` rewrites it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

use crate::args::{Args, Protocol, TargetSetup};
use crate::fake_model::FakeModel;
use crate::proc;
use crate::record::{self, Column, Table};
use crate::report::{Outcome, Row};
use crate::run::{self, conformance_dir};

/// An implementation other than superpi.
struct Target {
    /// The name its rows carry.
    label: &'static str,
    protocol: Protocol,
    /// The npm package (pinned in conformance/third-party/package.json).
    package: &'static str,
    /// Its program inside the package.
    program: &'static str,
}

const TARGETS: &[Target] = &[
    Target {
        label: "claude-agent-acp",
        protocol: Protocol::Acp,
        package: "@agentclientprotocol/claude-agent-acp",
        program: "dist/index.js",
    },
    Target {
        label: "codex-acp",
        protocol: Protocol::Acp,
        package: "@agentclientprotocol/codex-acp",
        program: "dist/index.js",
    },
    Target {
        label: "server-everything",
        protocol: Protocol::Mcp,
        package: "@modelcontextprotocol/server-everything",
        program: "dist/index.js",
    },
];

/// Variables of the caller's environment that would point an agent at a real account or
/// change how it runs; the run gives each agent its own (a fake model's key and address).
const CALLER_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CODEX_HOME",
    "CODEX_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    // claude-agent-acp offers bypassing permissions as root when IS_SANDBOX has any value;
    // the Claude CLI it starts accepts only "1" and refuses the session otherwise
    // (THIRD_PARTY.md). The record is taken as root without it, as CI runs.
    "IS_SANDBOX",
];

/// Codex reads its model provider from `$CODEX_HOME/config.toml` (default `~/.codex`): a
/// provider of its own on the fake's Responses API.
const CODEX_CONFIG: &str = r#"model = "gpt-5.1-codex"
model_provider = "fake"

[model_providers.fake]
name = "fake model"
base_url = "{model_url}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
"#;

/// Where the packages are installed: `$THIRD_PARTY_DIR`, else
/// `~/.cache/superpi-conformance/third-party`.
fn install_dir() -> PathBuf {
    run::cache_dir("THIRD_PARTY_DIR", "third-party")
}

/// Installs the pinned packages (`npm ci` of conformance/third-party/package-lock.json) unless
/// that lock file is installed already.
async fn install(dir: &Path) -> Result<()> {
    let pinned = conformance_dir().join("third-party");
    let lock = std::fs::read(pinned.join("package-lock.json")).context("reading third-party/package-lock.json")?;
    if std::fs::read(dir.join("package-lock.json")).is_ok_and(|installed| installed == lock)
        && dir.join("node_modules").is_dir()
    {
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(pinned.join(file), dir.join(file)).with_context(|| format!("copying {file}"))?;
    }
    eprintln!("installing the third-party implementations into {} (about 850 MB, once)", dir.display());
    proc::npm_ci(dir).await
}

/// The installed version of `package`.
fn version(dir: &Path, package: &str) -> String {
    let manifest = dir.join("node_modules").join(package).join("package.json");
    std::fs::read_to_string(manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("version").and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}

/// The flags and setup that point `protocol` at `target`.
fn args_for(args: &Args, target: &Target, program: &Path) -> Args {
    let mut a = args.clone();
    let node = format!("node {}", quoted(program));
    a.setup = TargetSetup { unset: CALLER_VARS.iter().map(|v| (*v).to_owned()).collect(), ..Default::default() };
    let shell = |name: &str, arg: &str, ask: serde_json::Value| {
        ("ACP_SHELL_TOOL".to_owned(), serde_json::json!({"name": name, "arg": arg, "ask": ask}).to_string())
    };
    match target.label {
        "claude-agent-acp" => {
            a.acp_command = Some(node);
            a.fake_model = Some(FakeModel::Anthropic);
            a.setup.vars = vec![
                shell("Bash", "command", serde_json::json!({})),
                ("ACP_ASKING_MODE".into(), "default".into()),
                ("DISABLE_TELEMETRY".into(), "1".into()),
                ("DISABLE_AUTOUPDATER".into(), "1".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
            ];
        }
        "codex-acp" => {
            a.acp_command = Some(node);
            a.fake_model = Some(FakeModel::OpenaiResponses);
            a.setup.vars = vec![
                // Codex's model asks to run a command outside the sandbox, and so the user,
                // with these arguments of its shell tool (the permission checks use them).
                shell(
                    "exec_command",
                    "cmd",
                    serde_json::json!({"sandbox_permissions": "require_escalated", "justification": "a conformance check"}),
                ),
                ("ACP_ASKING_MODE".into(), "read-only".into()),
                ("NO_BROWSER".into(), "1".into()),
            ];
            a.setup.files = vec![(".codex/config.toml".into(), CODEX_CONFIG.into())];
        }
        _ => a.mcp_command = Some(format!("{node} stdio")),
    }
    a
}

/// Runs superpi and every target, prints the table, and compares (or writes) the record.
/// Returns the rows and whether the run failed: superpi failed a check, or the record differs.
pub async fn run(args: &Args) -> Result<(Vec<Row>, bool)> {
    run::need_clients()?;
    let dir = install_dir();
    install(&dir).await?;
    let snapshot_dir = tempfile::Builder::new().prefix("superpi-conformance-bin-").tempdir()?;
    let bin = run::snapshot_bin(args, snapshot_dir.path())?;
    let mut tables = Vec::new();
    let mut all = Vec::new();
    for protocol in [Protocol::Acp, Protocol::Mcp] {
        let ours = run::run_protocol(args, Some(&bin), protocol, "superpi").await?;
        let mut columns = vec![Column { heading: "superpi".into(), rows: ours }];
        for target in TARGETS.iter().filter(|t| t.protocol == protocol) {
            let program = dir.join("node_modules").join(target.package).join(target.program);
            let mut a = args_for(args, target, &program);
            // server-everything's Streamable HTTP transport, on a port of its own.
            let http = if target.protocol == Protocol::Mcp {
                let log = std::env::temp_dir().join(format!("superpi-conformance-{}.log", target.label));
                let line = format!("node {} streamableHttp", quoted(&program));
                let (group, port) = proc::start_port_server(&line, &dir, &[], &log).await?;
                a.mcp_url = Some(format!("http://127.0.0.1:{port}/mcp"));
                Some(group)
            } else {
                None
            };
            let rows = run::run_protocol(&a, None, protocol, target.label).await?;
            drop(http);
            let heading = format!("{} {}", target.label, version(&dir, target.package));
            columns.push(Column { heading, rows });
        }
        for column in &columns {
            all.extend(column.rows.iter().cloned());
        }
        tables.push(Table { protocol: protocol.name(), columns });
    }
    let superpi_failed = tables
        .iter()
        .flat_map(|t| t.columns.first())
        .flat_map(|c| &c.rows)
        .any(|r| matches!(r.outcome, Outcome::Fail(_)));
    let block = record::render(&tables);
    let path = conformance_dir().join("THIRD_PARTY.md");
    let file = std::fs::read_to_string(&path).unwrap_or_default();
    let outcome = if args.write_record {
        std::fs::write(&path, record::with_block(&file, &block))
            .with_context(|| format!("writing {}", path.display()))?;
        Outcome::Pass
    } else {
        let recorded = record::block_of(&file)
            .ok_or_else(|| anyhow!("{} has no record: run with --write-record", path.display()))?;
        let diff = record::differences(recorded, &block);
        if diff.is_empty() {
            Outcome::Pass
        } else {
            let lines: Vec<String> = diff
                .iter()
                .map(|(old, new)| match (old, new) {
                    (Some(old), _) => format!("recorded: {old}"),
                    (None, Some(new)) => format!("this run: {new}"),
                    (None, None) => String::new(),
                })
                .collect();
            Outcome::Fail(format!(
                "the results differ from the record (run with --write-record and say why in the text):\n{}",
                lines.join("\n")
            ))
        }
    };
    let record_failed = matches!(outcome, Outcome::Fail(_));
    all.push(Row { protocol: "record", check: "THIRD_PARTY.md matches this run".into(), outcome });
    Ok((all, superpi_failed || record_failed))
}
