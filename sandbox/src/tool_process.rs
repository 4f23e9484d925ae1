//! The confined tool process: the `superpi` binary dispatches the hidden subcommand
//! [`TOOL_SUBCOMMAND`] to [`tool_main`], which reads one [`Request`] as JSON on stdin, runs
//! the built-in file tool it names (its body from the registry, `runner/`) and writes one
//! [`ToolCallResult`] as JSON on stdout, or, for the kernel, reads a directory beneath the
//! workspace (`runner/tree.rs`) and writes what it found.

use std::io::{Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use superpi_paths::ProtectedPaths;

use crate::ToolCallResult;
use crate::registry::Runner;
use crate::runner::tree::{TreeRead, read_tree};
use crate::runner::{Args, Ctx};

/// The hidden subcommand of the `superpi` binary that must call [`tool_main`].
pub const TOOL_SUBCOMMAND: &str = "__sandbox-tool";

/// Largest request accepted on stdin.
const REQUEST_MAX: u64 = 256 * 1024 * 1024;

/// What the runner does.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Op {
    /// A built-in file tool's call; the answer is a [`ToolCallResult`].
    Tool { tool: String, arguments: Value },
    /// The kernel's read of a directory beneath the workspace; the answer is
    /// `Result<Option<Tree>, String>`. No tool: the registry does not name it.
    ReadTree(TreeRead),
    /// A kernel that is not root asks for a call's namespaces (`mounts.rs`): the runner, run
    /// unconfined for it, makes them, says so on stdout and waits to be killed.
    Namespaces(crate::namespace_helper::HelperPlan),
}

/// One request, as the runner receives it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    pub op: Op,
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// Other trees the read tool may read (the conversation's spill files).
    pub read_roots: Vec<PathBuf>,
    /// Other trees the tools may write as they write the workspace (canonical, each checked as
    /// the workspace is): a conversation's extra directories.
    #[serde(default)]
    pub write_roots: Vec<PathBuf>,
    /// What no tool may touch.
    #[serde(default)]
    pub protected: ProtectedPaths,
}

impl Request {
    /// A namespace helper's request, as JSON.
    pub(crate) fn namespaces(plan: crate::namespace_helper::HelperPlan) -> Vec<u8> {
        let (workspace, read_roots, write_roots) = (PathBuf::new(), Vec::new(), Vec::new());
        let request = Request {
            op: Op::Namespaces(plan),
            workspace,
            read_roots,
            write_roots,
            protected: ProtectedPaths::default(),
        };
        serde_json::to_vec(&request).unwrap_or_default()
    }
}

/// Entry point of the tool runner. Reads the request on stdin, prints the outcome on stdout,
/// returns the process exit code (0 whenever an outcome was printed, error outcomes included).
pub fn tool_main() -> i32 {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().take(REQUEST_MAX).read_to_end(&mut input) {
        eprintln!("superpi tool runner: reading the request: {e}");
        return 2;
    }
    let request = serde_json::from_slice::<Request>(&input);
    if let Ok(Request { op: Op::Namespaces(plan), .. }) = &request {
        return crate::namespace_helper::helper_main(plan);
    }
    let mut stdout = std::io::stdout().lock();
    let written = match request {
        Ok(Request { op: Op::ReadTree(read), workspace, protected, .. }) => {
            serde_json::to_writer(&mut stdout, &read_tree(&workspace, &read, &protected))
        }
        Ok(request) => serde_json::to_writer(&mut stdout, &run(&request)),
        Err(e) => serde_json::to_writer(&mut stdout, &ToolCallResult::error(format!("tool runner: bad request: {e}"))),
    };
    match written.and_then(|_| stdout.flush().map_err(serde_json::Error::io)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("superpi tool runner: writing the outcome: {e}");
            2
        }
    }
}

pub(crate) fn run(request: &Request) -> ToolCallResult {
    let Op::Tool { tool, arguments } = &request.op else {
        return ToolCallResult::error("tool runner: not a tool call".to_string());
    };
    let ctx = Ctx::new(request.workspace.clone(), request.read_roots.clone(), request.protected.clone())
        .with_write_roots(request.write_roots.clone());
    let args = match arguments {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return ToolCallResult::error(format!("{tool}: the arguments must be a JSON object")),
    };
    let args = Args::new(tool, &args);
    // The body comes from the built-in registry: this process knows no registered tools.
    let result = match crate::ToolRegistry::builtin().entry(tool).map(|e| e.runner.clone()) {
        Some(Runner::File(body)) => body(&ctx, &args),
        _ => Err(format!("unknown tool `{tool}` (not a file tool)")),
    };
    result.unwrap_or_else(ToolCallResult::error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_requests_are_error_outcomes() {
        let out = run(&Request {
            op: Op::Tool { tool: "frobnicate".into(), arguments: serde_json::json!({}) },
            workspace: PathBuf::from("/nonexistent"),
            read_roots: Vec::new(),
            write_roots: Vec::new(),
            protected: Default::default(),
        });
        assert!(out.is_error && out.output.contains("unknown tool"));
    }
}
