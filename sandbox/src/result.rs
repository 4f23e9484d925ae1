//! The three channels of a bash result: the model's text (head and tail past a limit, the spill
//! path, the exit status, a plain note when the sandbox likely refused something), structured
//! output and details.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::launch::{End, Finished};
use crate::output::{Collected, head_text, tail_text};
use crate::{SandboxConfig, ToolCallResult};

/// The model's text of a stream: all of it when short, else head, a note, and tail.
fn model_text(config: &SandboxConfig, out: &Collected, spill: &Path) -> (String, Option<PathBuf>) {
    let limit = config.model_output_bytes.max(1024);
    if out.spill.is_none() && out.total as usize <= limit {
        return (String::from_utf8_lossy(&out.head).into_owned(), None);
    }
    // Not spilled yet but too long for the model: keep the whole of it on disk too.
    let path = match &out.spill {
        Some(p) => Some(p.clone()),
        None => spill
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|_| std::fs::write(spill, &out.head))
            .ok()
            .map(|_| spill.to_path_buf()),
    };
    let head = head_text(&out.head, limit / 2);
    let tail_source: &[u8] = if out.tail.is_empty() { &out.head } else { &out.tail };
    let tail = tail_text(tail_source, limit / 2);
    let where_ = match &path {
        Some(p) => format!("the whole output is in {} (the read tool can page through it)", p.display()),
        None => format!("the rest could not be saved: {}", out.spill_error.as_deref().unwrap_or("unknown error")),
    };
    let text = format!(
        "{head}\n\n[... output truncated: {} bytes in total, showing the first and the last {} KiB; {where_} ...]\n\n{tail}",
        out.total,
        limit / 2 / 1024
    );
    (text, path)
}

/// A result from a registered runner (an MCP server's tool, say) bounded like a command's
/// output: past the model's limit the whole text goes to `spill` and the model gets the head,
/// the tail, the size and the path.
pub(crate) fn bounded(config: &SandboxConfig, mut result: ToolCallResult, spill: &Path) -> ToolCallResult {
    if result.output.len() <= config.model_output_bytes.max(1024) {
        return result;
    }
    let output = std::mem::take(&mut result.output).into_bytes();
    let total = output.len() as u64;
    let collected = Collected { head: output, tail: Vec::new(), total, spill: None, spill_error: None };
    result.output = model_text(config, &collected, spill).0;
    result
}

pub(crate) fn bash_outcome(
    config: &SandboxConfig,
    finished: Finished,
    timeout: Duration,
    workspace: &Path,
    elapsed: Duration,
    spill: &Path,
    network: bool,
) -> ToolCallResult {
    let (mut text, spill_path) = model_text(config, &finished.output, spill);
    let code = finished.exit_code();
    let signal = finished.signal();
    let status_line = match (finished.end, code, signal) {
        (End::TimedOut, _, _) => Some(format!("[timed out after {} s; the command was killed]", timeout.as_secs_f64())),
        (End::Cancelled, _, _) => Some("[cancelled; the command was killed]".to_string()),
        (_, Some(0), _) => None,
        (_, Some(c), _) => Some(format!("[exit code {c}]")),
        (_, None, Some(s)) => Some(format!("[killed by signal {s}]")),
        _ => Some("[no exit status]".to_string()),
    };
    let failed = status_line.is_some();
    if failed && looks_denied(&finished.output) {
        let net = if network { "" } else { "; network is not granted to this call" };
        let note = format!(
            "[sandbox: this command may write only inside the workspace {} and its temp dir $TMPDIR, \
             cannot read the rest of the home directory{net}; a denial above comes from the sandbox]",
            workspace.display()
        );
        text = join_line(text, &note);
    }
    if failed && !network {
        let refused = match &finished.network {
            Some(seen) => seen.hint().map(|hint| format!("{hint}: ")),
            // Not watched (the machine gives no listener): what the command printed.
            None => looks_offline(&finished.output).then(String::new),
        };
        if let Some(refused) = refused {
            text = join_line(
                text,
                &format!(
                    "[network: {refused}this command ran without network. If it needs the network \
                     (installing packages, fetching), run it again with \"network\": true, which may \
                     need the user's consent]"
                ),
            );
        }
    }
    if let Some(line) = &status_line {
        text = join_line(text, line);
    }
    if text.is_empty() {
        text = "(no output)".to_string();
    }
    let spill_json = spill_path.as_ref().map(|p| p.display().to_string());
    ToolCallResult {
        output: text,
        is_error: failed,
        structured: Some(json!({
            "exit_code": code,
            "signal": signal,
            "timed_out": finished.end == End::TimedOut,
            "cancelled": finished.end == End::Cancelled,
            "total_bytes": finished.output.total,
            "spill_path": spill_json,
            "network_refused": finished.network.as_ref().map(|n| n.sockets),
        })),
        details: Some(json!({
            "exit_code": code,
            "duration_ms": elapsed.as_millis() as u64,
            "total_bytes": finished.output.total,
            "spill_path": spill_json,
        })),
        images: Vec::new(),
    }
}

fn join_line(text: String, line: &str) -> String {
    if text.is_empty() {
        line.to_string()
    } else if text.ends_with('\n') {
        format!("{text}{line}")
    } else {
        format!("{text}\n{line}")
    }
}

fn looks_denied(out: &Collected) -> bool {
    mentions(out, &["Permission denied", "Operation not permitted", "Read-only file system", "permission denied"])
}

/// What commands print when they cannot reach the network: name resolution and connection
/// failures (without network the sandbox refuses internet sockets with EPERM). Used only where
/// the refusals are not watched (netwatch.rs).
fn looks_offline(out: &Collected) -> bool {
    mentions(
        out,
        &[
            "Operation not permitted",
            "resolve",
            "resolution",
            "Name or service not known",
            "getaddrinfo",
            "Network is unreachable",
            "network is unreachable",
            "onnection refused",
            "onnect to",
            "connect:",
            "socket:",
            "dns error",
        ],
    )
}

/// Whether the end of the output (where errors land) contains one of `needles`.
fn mentions(out: &Collected, needles: &[&str]) -> bool {
    let hay = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        needles.iter().any(|n| s.contains(n))
    };
    hay(&out.head[out.head.len().saturating_sub(16 * 1024)..]) || hay(&out.tail)
}
