//! An MCP server's OAuth login begun by a turn: when a server of the turn refused superpi for
//! want of a login and a watcher here shows URLs (an editor that declared ACP URL
//! elicitation), the login's authorization URL goes to the person as a `ui_request` of kind
//! `url`; once they agree to open it, the loopback redirect (as `superpi mcp login` listens)
//! waits for their browser, the tokens are stored, and the turn attaches the server again.
//! Where nobody can open a URL the notice stays: it says to run `superpi mcp login NAME`.
//! A login is single-flight per server name (`crate::mcp_logins`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use superpi_mcp_client::{Attached, NeedsLogin};
use superpi_proto::Event;
use superpi_proto::question::URL_KIND;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::put_question::{ask_ui, scheduled_run};

/// Logs in to each server of `attached` that waits for a login, through a watcher that opens
/// URLs; after a login, attaches the servers again. The notices to publish.
pub(crate) async fn log_in_where_asked(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    workspace: &Path,
    (attached, notices): (&mut Attached, Vec<String>),
    cancel: &CancellationToken,
) -> Vec<String> {
    let needs = attached.needs_login();
    if needs.is_empty() || conv.url_openers.load(Ordering::Relaxed) == 0 || scheduled_run(kernel, turn_id) {
        return notices;
    }
    let mut logged_in = Vec::new();
    for need in needs {
        // This turn's cancel drops the login before it has an outcome, so turns waiting for
        // it log in themselves rather than take "cancelled" for theirs.
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err("cancelled".to_string()),
            // Boxed: inline, the login's future overflowed a worker's stack in the turn's.
            done = Box::pin(kernel.mcp_logins.once(&need.name, log_in(kernel, conv, turn_id, &need, cancel))) => done,
        };
        match outcome {
            Ok(()) => logged_in.push(need.name),
            Err(why) => tracing::info!(server = %need.name, "no login through the editor: {why}"),
        }
    }
    if logged_in.is_empty() {
        return notices;
    }
    let own = lock(&conv.mcp_servers).clone();
    let (again, mut notices) = kernel.mcp.attach(&kernel.catalog.config_dir, own, workspace, Some(conv.id)).await;
    *attached = again;
    for name in logged_in {
        notices.push(format!("logged in to the MCP server `{name}`: its tools are offered from now on"));
    }
    notices
}

/// One server's login: the URL asked to be opened, then the browser's return awaited.
async fn log_in(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    need: &NeedsLogin,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let timeout = match &*lock(&conv.policy) {
        Ok(policy) => policy.question_timeout(),
        Err(reason) => return Err(reason.clone()),
    };
    let login = kernel.mcp.begin_login(need).await.map_err(|e| e.to_string())?;
    let request = json!({
        "kind": URL_KIND,
        "server": need.name,
        "url": login.url(),
        "message": format!("The MCP server `{}` asks you to log in to let superpi use it", need.name),
    });
    let Value::Object(request) = request else { return Err("no request".into()) };
    let (request_id, answer) =
        ask_ui(kernel, conv, turn_id, request, timeout, cancel).await.ok_or("the request could not be asked")?;
    let action = answer.as_ref().and_then(|a| a.get("action")).and_then(Value::as_str).map(str::to_string);
    let outcome = match action.as_deref() {
        Some("accept") => tokio::select! {
            done = login.finish(timeout) => match done {
                Ok(()) => Ok(()),
                Err(err) => Err(err.to_string()),
            },
            _ = cancel.cancelled() => Err("cancelled".to_string()),
        },
        Some(other) => Err(format!("the person answered {other}")),
        None => Err("no answer".to_string()),
    };
    let resolved = match &outcome {
        Ok(()) => json!({"outcome": "logged_in"}),
        Err(why) => json!({"outcome": "not_logged_in", "reason": why}),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(turn_id), &request_id, resolved));
    outcome
}
