//! `superpi mcp list|add|remove|enable|disable`: the `mcp_servers` section of the user's settings.json,
//! edited in place (the file's other keys kept; the result is checked as the kernel reads it
//! before it replaces the file), and what a running kernel says of each server; `login` and
//! `logout`: an HTTP server's OAuth tokens (kept in the data directory, never the settings). `superpi mcp`
//! with no subcommand is the MCP server (superpi-mcp).
#![allow(clippy::print_stdout)] // `list` answers on stdout, like the rest of the terminal frontend

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};
use superpi_client::{KernelClient, Locations};
use superpi_policy::McpTransport;
use superpi_policy::settings::SETTINGS_FILE;
use superpi_proto::method::McpServerStatus;

use crate::connection::connect_options;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// Without a subcommand: the MCP server over stdio.
    #[command(flatten)]
    pub serve: superpi_mcp::Args,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// The external MCP servers of your settings, with what a running kernel says of each.
    List(crate::listing::JsonFlag),
    /// Adds an external MCP server to your settings: `superpi mcp add NAME -- CMD ARGS...`, or
    /// `superpi mcp add NAME --url URL`.
    Add(AddArgs),
    /// Removes an external MCP server from your settings.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Keeps a server in your settings but starts it no more (`"disabled": true`).
    Disable {
        /// The server's name.
        name: String,
    },
    /// Starts a disabled server again at its next use.
    Enable {
        /// The server's name.
        name: String,
    },
    /// Logs in to an HTTP server that asks for OAuth: prints the URL to open in a browser and
    /// waits for the browser to come back; the tokens are kept in superpi's data directory.
    Login {
        /// The server's name.
        name: String,
        /// Seconds to wait for the browser.
        #[arg(long, default_value_t = 300)]
        wait_secs: u64,
    },
    /// Forgets the tokens of `superpi mcp login NAME`.
    Logout {
        /// The server's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name; its tools reach the model as `mcp__NAME__TOOL`.
    pub name: String,
    /// A variable set for the server (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Its working directory (default: the workspace of the conversation that needs it).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Lets it open network sockets when the network policy is `allow` (default: what a shell
    /// command that does not ask gets).
    #[arg(long)]
    pub network: bool,
    /// Replaces a server of the same name.
    #[arg(long)]
    pub replace: bool,
    /// A server reached over Streamable HTTP at this URL, instead of a command.
    #[arg(long, value_name = "URL", conflicts_with_all = ["command", "env", "cwd", "network"])]
    pub url: Option<String>,
    /// A header sent to a `--url` server with every request (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// Speak the older HTTP+SSE transport (2024-11-05) to a `--url` server at once, instead of
    /// trying Streamable HTTP first.
    #[arg(long, requires = "url")]
    pub sse: bool,
    /// Always offer its tools through `tool_search` (deferred), whatever their number.
    #[arg(long, conflicts_with = "no_defer")]
    pub defer: bool,
    /// Never defer its tools: offer each to the model directly.
    #[arg(long)]
    pub no_defer: bool,
    /// The environment variable (of the kernel) holding a `--url` server's bearer token.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub bearer_token_env: Option<String>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required_unless_present = "url", value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub async fn run(locations: &Locations, action: McpAction) -> anyhow::Result<ExitCode> {
    let path = locations.config_dir.join(SETTINGS_FILE);
    match action {
        McpAction::List(flag) => list(locations, &path, flag.json).await,
        McpAction::Add(args) => {
            let name = args.name.clone();
            let mut entry = match &args.url {
                Some(url) => http_entry(url, &args.headers, args.bearer_token_env.as_deref())?,
                None => {
                    let mut entry = stdio_entry(args.command, &args.env, args.cwd)?;
                    if args.network {
                        entry["network"] = json!(true);
                    }
                    entry
                }
            };
            if args.sse {
                entry["sse"] = json!(true);
            }
            if args.defer || args.no_defer {
                entry["defer"] = json!(args.defer);
            }
            edit(&path, |servers| {
                if servers.contains_key(&name) && !args.replace {
                    bail!("`{name}` is already in {}; remove it first, or add it with --replace", path.display());
                }
                servers.insert(name.clone(), entry);
                Ok(())
            })?;
            eprintln!(
                "added the MCP server `{name}` to {} (a running kernel uses it from its next turn)",
                path.display()
            );
            if args.url.is_none() && !args.network {
                eprintln!(
                    "it runs without network: a server that fetches itself at start (npx, uvx) needs \
                     `--network` (add it again with --network --replace)"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Disable { name } => set_disabled(&path, &name, true),
        McpAction::Enable { name } => set_disabled(&path, &name, false),
        McpAction::Login { name, wait_secs } => login(locations, &name, wait_secs).await,
        McpAction::Logout { name } => {
            match superpi_mcp_client::oauth::logout(&locations.data_dir, &name)? {
                true => eprintln!("logged out of the MCP server `{name}` (its tokens are removed)"),
                false => eprintln!("there was no login for the MCP server `{name}`"),
            }
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Remove { name } => {
            edit(&path, |servers| match servers.remove(&name) {
                Some(_) => Ok(()),
                None => bail!("there is no MCP server `{name}` in {}", path.display()),
            })?;
            eprintln!("removed the MCP server `{name}` from {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `superpi mcp login NAME`: the URL on stdout (alone on its line, for scripts), the rest on
/// stderr; done when the browser comes back to the loopback redirect.
async fn login(locations: &Locations, name: &str, wait_secs: u64) -> anyhow::Result<ExitCode> {
    use superpi_mcp_client::oauth::{Login, Redirect, token_path};
    let settings = superpi_policy::Settings::load(&locations.config_dir, None)?;
    let Some(server) = settings.mcp_servers.get(name) else {
        bail!("there is no MCP server `{name}` in your settings (superpi mcp list)")
    };
    let McpTransport::Http { url, oauth, .. } = &server.transport else {
        bail!("`{name}` is not an HTTP server: only those log in")
    };
    let oauth = oauth.clone().unwrap_or_default();
    let redirect = Redirect::bind(oauth.redirect_port).await?;
    let login = Login::begin(&locations.data_dir, name, url, &oauth, redirect)
        .await
        .with_context(|| format!("logging in to `{name}` ({url})"))?;
    eprintln!("open this URL in your browser to let superpi use `{name}`:");
    println!("{}", login.url());
    // A browser the person configured is started with the URL (directly, not by a shell).
    if let Some(browser) = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty()) {
        match superpi_sandbox::open_browser(&browser, login.url()) {
            Ok(()) => eprintln!("(opened with $BROWSER)"),
            Err(why) => eprintln!("$BROWSER could not open it: {why}"),
        }
    }
    login.finish(std::time::Duration::from_secs(wait_secs)).await.with_context(|| format!("logging in to `{name}`"))?;
    let path = token_path(&locations.data_dir, name);
    eprintln!("logged in to `{name}`; its tokens are in {} (superpi mcp logout {name} removes them)", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Sets or clears a server's `disabled` key.
fn set_disabled(path: &Path, name: &str, disabled: bool) -> anyhow::Result<ExitCode> {
    edit(path, |servers| {
        let Some(entry) = servers.get_mut(name).and_then(Value::as_object_mut) else {
            bail!("there is no MCP server `{name}` in {}", path.display())
        };
        if disabled {
            entry.insert("disabled".into(), json!(true));
        } else {
            entry.remove("disabled");
        }
        Ok(())
    })?;
    let what = if disabled { "disabled (kept in" } else { "enabled (in" };
    eprintln!("the MCP server `{name}` is {what} {}; a running kernel sees it from its next turn)", path.display());
    Ok(ExitCode::SUCCESS)
}

/// An HTTP server's settings entry.
fn http_entry(url: &str, headers: &[String], bearer_token_env: Option<&str>) -> anyhow::Result<Value> {
    let mut entry = Map::new();
    entry.insert("url".into(), json!(url));
    if !headers.is_empty() {
        let mut named = Map::new();
        for header in headers {
            let Some((name, value)) = header.split_once(':') else { bail!("--header `{header}` is not NAME: VALUE") };
            named.insert(name.trim().to_string(), json!(value.trim()));
        }
        entry.insert("headers".into(), Value::Object(named));
    }
    if let Some(variable) = bearer_token_env {
        entry.insert("bearer_token_env".into(), json!(variable));
    }
    Ok(Value::Object(entry))
}

/// A stdio server's settings entry.
fn stdio_entry(command: Vec<String>, env: &[String], cwd: Option<PathBuf>) -> anyhow::Result<Value> {
    let mut parts = command.into_iter();
    let Some(program) = parts.next() else { bail!("the server's command is missing (after `--`)") };
    let mut entry = Map::new();
    entry.insert("command".into(), json!(program));
    let args: Vec<String> = parts.collect();
    if !args.is_empty() {
        entry.insert("args".into(), json!(args));
    }
    if !env.is_empty() {
        let mut vars = Map::new();
        for pair in env {
            let Some((name, value)) = pair.split_once('=') else { bail!("--env `{pair}` is not NAME=VALUE") };
            vars.insert(name.to_string(), json!(value));
        }
        entry.insert("env".into(), Value::Object(vars));
    }
    if let Some(cwd) = cwd {
        let cwd = std::path::absolute(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
        entry.insert("cwd".into(), json!(cwd));
    }
    Ok(Value::Object(entry))
}

/// Reads the settings file (absent: empty), lets `change` edit its `mcp_servers`, checks the
/// result as the kernel would read it, and replaces the file in one rename.
fn edit(path: &Path, change: impl FnOnce(&mut Map<String, Value>) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "{}".to_string(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut settings: Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let Some(top) = settings.as_object_mut() else { bail!("{} is not a JSON object", path.display()) };
    let servers = top.entry("mcp_servers").or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else { bail!("`mcp_servers` in {} is not an object", path.display()) };
    change(servers)?;
    if servers.is_empty() {
        top.remove("mcp_servers");
    }
    let text = serde_json::to_string_pretty(&settings)? + "\n";
    superpi_policy::Settings::from_user_file(&text, path).map_err(|e| anyhow::anyhow!("not changed: {e}"))?;
    let dir = path.parent().context("the settings file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut temp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing in {}", dir.display()))?;
    std::io::Write::write_all(&mut temp, text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.persist(path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

async fn list(locations: &Locations, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let settings = superpi_policy::Settings::load(&locations.config_dir, None)?;
    let running = kernel_servers(locations).await.map(current);
    if json {
        // An array (the README: an array for lists): each server of the settings with its
        // instances in a running kernel (null when none runs), then the servers a frontend
        // attached (`"attached": true`).
        let states =
            |name: &str| running.as_ref().map(|r| r.iter().filter(|s| s.name == name).cloned().collect::<Vec<_>>());
        let servers: Vec<Value> = settings
            .mcp_servers
            .iter()
            .map(|(name, server)| match &server.transport {
                McpTransport::Stdio { command, args, env, cwd } => {
                    json!({"name": name, "command": command, "args": args, "env": env, "cwd": cwd,
                           "disabled": server.disabled, "running": states(name)})
                }
                // Header values may be secrets: their names only.
                McpTransport::Http { url, headers, bearer_token_env, .. } => {
                    let logged_in = superpi_mcp_client::oauth::logged_in(&locations.data_dir, name, url);
                    json!({"name": name, "url": url, "headers": headers.keys().collect::<Vec<_>>(),
                           "bearer_token_env": bearer_token_env, "logged_in": logged_in,
                           "disabled": server.disabled, "running": states(name)})
                }
            })
            .collect();
        let attached = running
            .iter()
            .flatten()
            .filter(|s| !settings.mcp_servers.contains_key(&s.name))
            .map(|s| json!({"name": s.name, "attached": true, "running": [s]}));
        let doc = Value::Array(servers.into_iter().chain(attached).collect());
        crate::listing::out(&format!("{}\n", serde_json::to_string_pretty(&doc)?));
        return Ok(ExitCode::SUCCESS);
    }
    if settings.mcp_servers.is_empty() {
        println!("no MCP servers in {} (add one with `superpi mcp add NAME -- COMMAND ARGS...`)", path.display());
    }
    for (name, server) in &settings.mcp_servers {
        println!("{name}: {}", server.describe());
        if let McpTransport::Http { url, .. } = &server.transport
            && superpi_mcp_client::oauth::logged_in(&locations.data_dir, name, url)
        {
            println!("  logged in (OAuth; `superpi mcp logout {name}` forgets it)");
        }
        if server.disabled {
            println!("  disabled (`superpi mcp enable {name}` starts it again)");
            continue;
        }
        match &running {
            None => println!("  (no kernel is running)"),
            Some(running) => {
                let states: Vec<&McpServerStatus> = running.iter().filter(|s| &s.name == name).collect();
                print_states(states.iter().copied());
                let failed = states.iter().any(|s| s.state == "failed");
                // Unless its error says already (the sandbox saw it try the network).
                let told = states.iter().any(|s| s.error.as_deref().is_some_and(|e| e.contains("--network")));
                let stdio = matches!(server.transport, McpTransport::Stdio { .. });
                if failed && !told && server.network != Some(true) && stdio {
                    println!("    it ran without network: one that fetches itself (npx, uvx) needs `--network`");
                }
            }
        }
    }
    // Servers a frontend attached (an editor's), which are not in the settings.
    let attached: Vec<&McpServerStatus> =
        running.iter().flatten().filter(|s| !settings.mcp_servers.contains_key(&s.name)).collect();
    if !attached.is_empty() {
        println!("attached by a frontend:");
        for server in attached {
            println!("{}:", server.name);
            print_states(std::iter::once(server));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_states<'a>(states: impl Iterator<Item = &'a McpServerStatus>) {
    let mut any = false;
    for s in states {
        any = true;
        let pid = s.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
        let conversations = s.conversations.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
        println!(
            "  {} in {}{pid}; conversations: [{conversations}]; idle {} s",
            s.state,
            s.workspace,
            s.idle_ms / 1000
        );
        if let Some(error) = &s.error {
            println!("    {error}");
        }
        if !s.tools.is_empty() {
            println!("    tools: {}", s.tools.join(", "));
        }
    }
    if !any {
        println!("  not running");
    }
}

/// One instance per server and workspace: a kernel keeps a failed instance of a server's
/// earlier definition (before `mcp add --replace`) beside the one now running, and the
/// listing shows the live one (running or starting) where there is one. Pure, for tests.
pub(crate) fn current(mut states: Vec<McpServerStatus>) -> Vec<McpServerStatus> {
    let live = |s: &McpServerStatus| matches!(s.state.as_str(), "running" | "starting");
    // Live instances first, so the first of each (name, workspace) is the one kept.
    states.sort_by_key(|s| !live(s));
    let mut seen = std::collections::HashSet::new();
    states.retain(|s| seen.insert((s.name.clone(), s.workspace.clone())));
    states.sort_by(|a, b| (&a.workspace, &a.name).cmp(&(&b.workspace, &b.name)));
    states
}

/// What a running kernel holds; `None` when no kernel runs (none is started for this).
async fn kernel_servers(locations: &Locations) -> Option<Vec<McpServerStatus>> {
    let mut opts = connect_options(locations, "cli");
    opts.autostart = false;
    opts.provider_env = None;
    let client = KernelClient::connect(&opts).await.ok()?;
    client.status().await.ok().map(|status| status.mcp_servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &str, workspace: &str, state: &str) -> McpServerStatus {
        McpServerStatus {
            name: name.into(),
            workspace: workspace.into(),
            state: state.into(),
            pid: None,
            tools: vec![],
            conversations: vec![],
            idle_ms: 0,
            error: None,
        }
    }

    #[test]
    fn a_stale_failed_instance_beside_a_running_one_is_not_listed() {
        let listed = current(vec![
            state("fs", "/w", "failed"),
            state("fs", "/w", "running"),
            state("fs", "/v", "failed"),
            state("git", "/w", "stopped"),
        ]);
        let shown: Vec<(&str, &str, &str)> =
            listed.iter().map(|s| (s.name.as_str(), s.workspace.as_str(), s.state.as_str())).collect();
        assert_eq!(shown, [("fs", "/v", "failed"), ("fs", "/w", "running"), ("git", "/w", "stopped")]);
    }
}
