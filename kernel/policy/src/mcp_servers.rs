//! The `mcp_servers` section of the user's settings: external MCP servers whose tools the
//! kernel offers as `mcp__SERVER__TOOL`, each a program (stdio) or a URL (Streamable HTTP).
//! Only the user's file may name servers (a server runs a program, or is sent the user's
//! data); a workspace file that tries is refused like any other loosening key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::ConfigError;
use crate::net::{Network, NetworkPolicy, ShellNetwork, url_host};

/// One external MCP server: how it is reached, and what it is granted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McpServerConfig {
    pub transport: McpTransport,
    /// Seconds unused before it is stopped (0: never); absent: the kernel's default.
    pub idle_stop_secs: Option<u64>,
    /// `true` asks for the network (granted when the network policy is `allow`); absent: it
    /// gets what a shell command that does not ask gets. For a stdio server only.
    pub network: Option<bool>,
    /// Kept in the settings but not started (`superpi mcp disable NAME`).
    pub disabled: bool,
    /// `true`: its tools are found through `tool_search` rather than sent with every request;
    /// `false`: always sent; absent: deferred when the attached tools pass the threshold.
    pub defer: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum McpTransport {
    /// A program the kernel starts (through the sandbox crate) on first need, and talks to
    /// over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Variables set for the server, besides the sandbox's allow list.
        env: BTreeMap<String, String>,
        /// Its working directory; absent: the workspace of the conversation that needs it.
        cwd: Option<PathBuf>,
    },
    /// A server the kernel reaches over Streamable HTTP.
    Http {
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// The environment variable (of the kernel) whose value is sent as a bearer token.
        bearer_token_env: Option<String>,
        /// It speaks only the older HTTP+SSE transport (2024-11-05): no Streamable HTTP is tried.
        sse: bool,
        /// How `superpi mcp login` gets it a token, where the defaults do not do.
        oauth: Option<McpOAuth>,
    },
}

/// A server's `oauth` settings: none is needed for a server that publishes its authorization
/// server and accepts Client ID Metadata Documents or dynamic client registration. No secret
/// lives here: the tokens are kept in superpi's data directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuth {
    /// A client id registered with the authorization server beforehand (no registration).
    pub client_id: Option<String>,
    /// The https URL of a Client ID Metadata Document naming superpi, used as the client id
    /// where the authorization server advertises support for them.
    pub client_metadata_url: Option<String>,
    /// The scopes asked for; none: those the server's challenge or metadata name.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The loopback port the browser is sent back to; none: any free one.
    pub redirect_port: Option<u16>,
}

impl McpServerConfig {
    /// A stdio server with these program and arguments and nothing else set.
    pub fn stdio(command: String, args: Vec<String>, env: BTreeMap<String, String>) -> Self {
        McpServerConfig {
            transport: McpTransport::Stdio { command, args, env, cwd: None },
            idle_stop_secs: None,
            network: None,
            disabled: false,
            defer: None,
        }
    }

    /// A server at `url` with these headers, over Streamable HTTP (falling back to HTTP+SSE),
    /// or over HTTP+SSE only with `sse`.
    pub fn http(url: String, headers: BTreeMap<String, String>, sse: bool) -> Self {
        McpServerConfig {
            transport: McpTransport::Http { url, headers, bearer_token_env: None, sse, oauth: None },
            idle_stop_secs: None,
            network: None,
            disabled: false,
            defer: None,
        }
    }

    /// How it is reached, for people: the command line, or the URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => {
                std::iter::once(command).chain(args).cloned().collect::<Vec<_>>().join(" ")
            }
            McpTransport::Http { url, .. } => url.clone(),
        }
    }

    /// Whether the kernel may reach an HTTP server under `network`: not with the policy
    /// `deny`, and with `allowlist` only at an allow-listed host.
    pub fn reachable(&self, network: &Network) -> Result<(), String> {
        let McpTransport::Http { url, .. } = &self.transport else { return Ok(()) };
        match network.policy {
            NetworkPolicy::Allow => Ok(()),
            NetworkPolicy::Deny => Err("the network policy is `deny`".into()),
            NetworkPolicy::Allowlist => match url_host(url) {
                Some(host) if network.host_allowed(&host) => Ok(()),
                _ => Err(format!("the host of {url} is not in network.allow_hosts")),
            },
        }
    }
}

impl McpServerConfig {
    /// Whether the server may open network sockets under `network`. Never with `deny` or
    /// `allowlist` (a socket cannot be checked against host names); with `allow`, when it asks
    /// (`network: true`) or, when it says nothing, when shell commands get the network without
    /// asking (`shell_default: "allow"`).
    pub fn gets_network(&self, network: &Network) -> bool {
        network.policy == NetworkPolicy::Allow && self.network.unwrap_or(network.shell_default == ShellNetwork::Allow)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMcpServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer_token_env: Option<String>,
    idle_stop_secs: Option<u64>,
    network: Option<bool>,
    #[serde(default)]
    disabled: bool,
    defer: Option<bool>,
    #[serde(default)]
    sse: bool,
    oauth: Option<McpOAuth>,
}

/// `value` with each `${NAME}` replaced by `lookup(NAME)`, so a header or a variable can hold
/// a secret from the kernel's environment rather than the settings file (`$$` is a `$`). An
/// unset variable is an error naming it: a server sent an empty token fails later and less
/// clearly.
pub fn expand_vars(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else { return Err(format!("`{value}`: `${{` without its `}}`")) };
            let name = &tail[..end];
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return Err(format!("`{value}`: `{name}` is not a variable name"));
            }
            let Some(found) = lookup(name) else {
                return Err(format!("`${{{name}}}` is not set in the kernel's environment"));
            };
            out.push_str(&found);
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A server's name is part of its tools' names (`mcp__NAME__TOOL`), so it is kept to the
/// characters every model vendor accepts, and cannot hold the `__` separator.
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !name.contains("__")
}

pub(crate) fn mcp_servers(
    raw: BTreeMap<String, RawMcpServer>,
    path: &Path,
) -> Result<BTreeMap<String, McpServerConfig>, ConfigError> {
    let mut servers = BTreeMap::new();
    for (name, server) in raw {
        let invalid = |k: &str, why: String| ConfigError::invalid(path, format!("mcp_servers.{name}{k}"), why);
        if !valid_server_name(&name) {
            let why = "a server name is 1 to 32 characters of a-z, A-Z, 0-9, `_` and `-`, without `__`";
            return Err(invalid("", why.into()));
        }
        let (idle_stop_secs, network, disabled, defer) =
            (server.idle_stop_secs, server.network, server.disabled, server.defer);
        let transport = match (&server.command, &server.url) {
            (Some(_), None) => stdio(server).map_err(|(k, why)| invalid(k, why))?,
            (None, Some(_)) => http(server).map_err(|(k, why)| invalid(k, why))?,
            _ => return Err(invalid("", "give either a `command` or a `url`".into())),
        };
        servers.insert(name, McpServerConfig { transport, idle_stop_secs, network, disabled, defer });
    }
    Ok(servers)
}

/// A failed check: the key under the server's, and why.
type Invalid = (&'static str, String);

fn stdio(server: RawMcpServer) -> Result<McpTransport, Invalid> {
    let command = server.command.unwrap_or_default();
    if command.trim().is_empty() {
        return Err((".command", "the command is empty".into()));
    }
    if !server.headers.is_empty() || server.bearer_token_env.is_some() || server.sse || server.oauth.is_some() {
        return Err(("", "`headers`, `bearer_token_env`, `sse` and `oauth` need a `url`".into()));
    }
    if let Some(cwd) = server.cwd.as_ref().filter(|cwd| !cwd.is_absolute()) {
        return Err((".cwd", format!("`{}` is not an absolute path", cwd.display())));
    }
    if let Some(variable) = server.env.keys().find(|v| v.is_empty() || v.contains(['=', '\0'])) {
        return Err((".env", format!("`{variable}` is not a variable name")));
    }
    for value in server.env.values() {
        expand_vars(value, |_| Some(String::new())).map_err(|why| (".env", why))?;
    }
    Ok(McpTransport::Stdio { command, args: server.args, env: server.env, cwd: server.cwd })
}

fn http(server: RawMcpServer) -> Result<McpTransport, Invalid> {
    let url = server.url.unwrap_or_default();
    if url_host(&url).is_none() {
        return Err((".url", format!("`{url}` is not an http(s) URL")));
    }
    if !server.args.is_empty() || !server.env.is_empty() || server.cwd.is_some() || server.network.is_some() {
        return Err(("", "`args`, `env`, `cwd` and `network` are for a `command`, not a `url`".into()));
    }
    let bad_header = |(name, value): &(&String, &String)| {
        name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') || value.contains(['\r', '\n'])
    };
    if let Some((name, _)) = server.headers.iter().find(bad_header) {
        return Err((".headers", format!("`{name}` is not a valid header")));
    }
    for value in server.headers.values() {
        expand_vars(value, |_| Some(String::new())).map_err(|why| (".headers", why))?;
    }
    if let Some(url) =
        server.oauth.as_ref().and_then(|o| o.client_metadata_url.as_ref()).filter(|u| !u.starts_with("https://"))
    {
        return Err((".oauth.client_metadata_url", format!("`{url}` is not an https URL")));
    }
    let (headers, bearer_token_env, sse, oauth) = (server.headers, server.bearer_token_env, server.sse, server.oauth);
    Ok(McpTransport::Http { url, headers, bearer_token_env, sse, oauth })
}
