//! The `mcp_servers` section of the user's settings: external MCP servers whose tools the
//! kernel offers as `mcp__SERVER__TOOL`. Only the user's file may name servers (a server runs
//! a program); a workspace file that tries is refused like any other loosening key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::ConfigError;
use crate::settings::{Network, NetworkPolicy, ShellNetwork};

/// One stdio MCP server: the program the kernel starts (through the sandbox crate) on first
/// need, and talks to over its stdin and stdout.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct McpServerConfig {
    pub command: String,
    pub args: Vec<String>,
    /// Variables set for the server, besides the sandbox's allow list.
    pub env: BTreeMap<String, String>,
    /// Its working directory; absent: the workspace of the conversation that first needs it.
    pub cwd: Option<PathBuf>,
    /// Seconds unused before it is stopped (0: never); absent: the kernel's default.
    pub idle_stop_secs: Option<u64>,
    /// `true` asks for the network (granted when the network policy is `allow`); absent: it
    /// gets what a shell command that does not ask gets.
    pub network: Option<bool>,
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
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    idle_stop_secs: Option<u64>,
    network: Option<bool>,
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
        let key = |k: &str| format!("mcp_servers.{name}{k}");
        if !valid_server_name(&name) {
            return Err(ConfigError::invalid(
                path,
                key(""),
                "a server name is 1 to 32 characters of a-z, A-Z, 0-9, `_` and `-`, without `__`",
            ));
        }
        if server.command.trim().is_empty() {
            return Err(ConfigError::invalid(path, key(".command"), "the command is empty"));
        }
        if let Some(cwd) = &server.cwd
            && !cwd.is_absolute()
        {
            return Err(ConfigError::invalid(
                path,
                key(".cwd"),
                format!("`{}` is not an absolute path", cwd.display()),
            ));
        }
        for variable in server.env.keys() {
            if variable.is_empty() || variable.contains('=') || variable.contains('\0') {
                return Err(ConfigError::invalid(path, key(".env"), format!("`{variable}` is not a variable name")));
            }
        }
        let config = McpServerConfig {
            command: server.command,
            args: server.args,
            env: server.env,
            cwd: server.cwd,
            idle_stop_secs: server.idle_stop_secs,
            network: server.network,
        };
        servers.insert(name, config);
    }
    Ok(servers)
}
