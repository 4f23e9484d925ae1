//! The ACP registry entry, laid out as in the registry's repository (dist/acp-registry/):
//! `superpi/agent.json`, written version-pinned by the dist step from this crate's version,
//! beside `superpi/icon.svg` (16x16, `currentColor` only; the registry sets the entry's icon URL
//! from it), and `agent.schema.json`, the registry's schema kept as published (the README there
//! says where from).
//! Editors that read the registry (Zed) start the agent as `npx -y superpi@VERSION acp`.

use std::path::Path;

use serde_json::{Value, json};

use crate::write;

/// Where the entry lives in the repository.
pub(crate) const DIR: &str = "dist/acp-registry/superpi";

/// The entry of `version`: the npm meta package pinned to it, run with `acp`.
pub(crate) fn agent_json(version: &str) -> Value {
    json!({
        "id": "superpi",
        "name": "superpi",
        "version": version,
        "description": "An agent runtime: one durable kernel (conversations survive restarts), tools confined by landlock and seccomp, and any model: OpenAI, Anthropic, Gemini or a local server.",
        "repository": env!("CARGO_PKG_REPOSITORY"),
        "authors": ["The superpi authors"],
        "license": "MIT",
        "distribution": {
            "npx": {"package": format!("{}@{version}", crate::npm::META), "args": ["acp"]}
        }
    })
}

/// Writes `dir/agent.json` for `version`.
pub(crate) fn write_entry(dir: &Path, version: &str) -> Result<(), String> {
    let text = serde_json::to_string_pretty(&agent_json(version)).map_err(|err| err.to_string())?;
    write(&dir.join("agent.json"), &format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed entry is the one the dist step writes for this version: bumping the
    /// version without running `cargo xtask dist` fails here.
    #[test]
    fn the_committed_entry_is_pinned_to_this_version() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(DIR).join("agent.json")).unwrap()).unwrap();
        assert_eq!(committed, agent_json(env!("CARGO_PKG_VERSION")));
        assert_eq!(committed["distribution"]["npx"]["package"], format!("superpi@{}", env!("CARGO_PKG_VERSION")));
    }
}
