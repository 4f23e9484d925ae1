//! The confined tool process: the `superpi` binary dispatches the hidden subcommand
//! [`TOOL_SUBCOMMAND`] to [`tool_main`], which reads one [`Request`] as JSON on stdin, runs
//! the built-in file tool it names (its body from the registry, `runner/`), and writes one
//! [`ToolCallResult`] as JSON on stdout.

use std::io::{Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use superpi_paths::ProtectedPaths;

use crate::ToolCallResult;
use crate::registry::Runner;
use crate::runner::{Args, Ctx};

/// The hidden subcommand of the `superpi` binary that must call [`tool_main`].
pub const TOOL_SUBCOMMAND: &str = "__sandbox-tool";

/// Largest request accepted on stdin.
const REQUEST_MAX: u64 = 256 * 1024 * 1024;

/// One file tool call, as the runner receives it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    pub tool: String,
    pub arguments: Value,
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// Other trees the read tool may read (the conversation's spill files).
    pub read_roots: Vec<PathBuf>,
    /// What no tool may touch.
    #[serde(default)]
    pub protected: ProtectedPaths,
}

/// Entry point of the tool runner. Reads the request on stdin, prints the outcome on stdout,
/// returns the process exit code (0 whenever an outcome was printed, error outcomes included).
pub fn tool_main() -> i32 {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().take(REQUEST_MAX).read_to_end(&mut input) {
        eprintln!("superpi tool runner: reading the request: {e}");
        return 2;
    }
    let outcome = match serde_json::from_slice::<Request>(&input) {
        Ok(request) => run(&request),
        Err(e) => ToolCallResult::error(format!("tool runner: bad request: {e}")),
    };
    let mut stdout = std::io::stdout().lock();
    match serde_json::to_writer(&mut stdout, &outcome).and_then(|_| stdout.flush().map_err(serde_json::Error::io)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("superpi tool runner: writing the outcome: {e}");
            2
        }
    }
}

pub(crate) fn run(request: &Request) -> ToolCallResult {
    let ctx = Ctx::new(request.workspace.clone(), request.read_roots.clone(), request.protected.clone());
    let args = match &request.arguments {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return ToolCallResult::error(format!("{}: the arguments must be a JSON object", request.tool)),
    };
    let args = Args::new(&request.tool, &args);
    // The body comes from the built-in registry: this process knows no registered tools.
    let result = match crate::ToolRegistry::builtin().entry(&request.tool).map(|e| e.runner.clone()) {
        Some(Runner::File(body)) => body(&ctx, &args),
        _ => Err(format!("unknown tool `{}` (not a file tool)", request.tool)),
    };
    result.unwrap_or_else(ToolCallResult::error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_requests_are_error_outcomes() {
        let out = run(&Request {
            tool: "frobnicate".into(),
            arguments: serde_json::json!({}),
            workspace: PathBuf::from("/nonexistent"),
            read_roots: Vec::new(),
            protected: Default::default(),
        });
        assert!(out.is_error && out.output.contains("unknown tool"));
    }
}
