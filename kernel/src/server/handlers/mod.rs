//! The kernel's methods: each request's params, checks and result, by family: conversations
//! (`sessions`), their settings (`settings`), answers to their questions (`answers`), the
//! caller's notes (`memory`), files turns wrote for them (`artifacts`) and the kernel's own (`kernel_info`). Here: the dispatch and what every family shares.

mod answers;
mod artifacts;
mod kernel_info;
mod memory;
mod sessions;
mod settings;

use answers::{respond, ui_respond};
use kernel_info::{schedule_add, status, tool_list};
use sessions::{cancel, fork, history, list, open, submit, watch};
use settings::{command_list, set_effort, set_mode, set_model};

use std::sync::Arc;

use serde_json::{Value, json};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::method::Method;
use tokio::sync::oneshot;

use crate::cluster::jobs;
use crate::kernel::Kernel;
use crate::live::{self, Found};
use crate::server::peer::Peer;
use crate::sync::lock;
use superpi_store::{JobKind, StoreError};

/// A handled request: its result, and a signal to fire once the response is queued (a
/// subscription starts sending only after its watch was answered).
pub(crate) struct Handled {
    pub result: Result<Value, ErrorObject>,
    pub after_response: Option<oneshot::Sender<()>>,
}

pub(super) type Reply = Result<Value, ErrorObject>;

pub(super) fn internal(err: StoreError) -> ErrorObject {
    tracing::error!("store error: {err}");
    ErrorObject::new(codes::INTERNAL_ERROR, format!("store error: {err}"))
}

pub(super) fn not_found(id: i64) -> ErrorObject {
    ErrorObject::new(codes::NOT_FOUND, format!("conversation {id} not found"))
}

pub(super) fn stopping() -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping")
}

pub(super) fn to_value<T: serde::Serialize>(t: T) -> Reply {
    serde_json::to_value(t).map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
}

pub(crate) async fn handle(kernel: &Arc<Kernel>, peer: &Arc<Peer>, method: &str, params: Value) -> Handled {
    let method = match Method::parse(method, params) {
        Ok(method) => method,
        Err(err) => return Handled { result: Err(err), after_response: None },
    };
    if let Method::SessionWatch(p) = method {
        return watch(kernel, peer, p);
    }
    let result = match method {
        Method::SessionOpen(p) => open(kernel, peer, p),
        Method::SessionSubmit(p) => submit(kernel, peer, p).await,
        Method::SessionUnwatch(p) => {
            let removed = lock(&peer.subscriptions).remove(&p.subscription).is_some();
            if removed {
                Ok(json!({"unwatched": true}))
            } else {
                Err(ErrorObject::new(codes::NOT_FOUND, format!("no subscription {}", p.subscription)))
            }
        }
        Method::SessionCancel(p) => cancel(kernel, peer, p.conversation_id).await,
        Method::SessionList(p) => list(kernel, peer, p),
        Method::SessionHistory(p) => history(kernel, peer, p),
        Method::SessionFork(p) => fork(kernel, peer, p),
        Method::SessionSetMode(p) => set_mode(kernel, peer, p.conversation_id, &p.mode),
        Method::SessionSetModel(p) => set_model(kernel, peer, p.conversation_id, &p.model),
        Method::SessionSetEffort(p) => set_effort(kernel, peer, p.conversation_id, p.effort),
        Method::SessionCompact(p) => match found(kernel, peer, p.conversation_id) {
            Ok(Found::Here(conv)) => crate::turn::compaction::on_demand(&conv).await,
            Ok(Found::Elsewhere { .. }) => jobs::forward(kernel, p.conversation_id, JobKind::Compact).await,
            Err(err) => Err(err),
        },
        Method::SessionClear(p) => match found(kernel, peer, p.conversation_id) {
            Ok(Found::Here(conv)) => crate::turn::compaction::clear_between_turns(&conv).await,
            Ok(Found::Elsewhere { .. }) => jobs::forward(kernel, p.conversation_id, JobKind::Clear).await,
            Err(err) => Err(err),
        },
        Method::SessionDelete(p) => sessions::delete(kernel, peer, p.conversation_id),
        Method::SessionUndo(p) => match found(kernel, peer, p.conversation_id) {
            Ok(Found::Here(conv)) => {
                let settings = conv.settings();
                let harness = kernel.catalog.harness(Some(&settings.harness)).map_err(|e| e.message);
                let kept = settings.mode_ceiling;
                let ceiling =
                    harness.map_or(superpi_policy::Mode::Plan, |h| kernel.catalog.ceiling(h, kept, peer.remote));
                crate::turn::checkpoint::undo(kernel, &conv, ceiling, p.turn_id).await
            }
            // The workspace is on the machine of the kernel that runs the conversation.
            Ok(Found::Elsewhere { holder, .. }) => Err(ErrorObject::new(
                codes::RUN_ELSEWHERE,
                format!(
                    "conversation {} is run by kernel {holder}, whose machine holds its workspace: undo through that kernel",
                    p.conversation_id
                ),
            )),
            Err(err) => Err(err),
        },
        Method::CommandList(p) => command_list(kernel, peer, p.conversation_id),
        Method::HarnessList => Ok(json!({
            "harnesses": kernel.catalog.harness_infos(),
            "backends": crate::turn::backend::statuses(kernel).await,
        })),
        Method::ModelList => Ok(json!({"models": kernel.catalog.models()})),
        Method::ToolCancel(p) => Ok(json!({"cancelled": crate::server::tool_call::cancel(kernel, peer, &p.call_id)})),
        Method::PermissionRespond(p) => respond(kernel, peer, &p.request_id, p.option_id),
        Method::UiRespond(p) => ui_respond(kernel, peer, &p.request_id, p.outcome),
        Method::ToolList(p) => tool_list(kernel, p.harness.as_deref()),
        Method::ToolCall(p) => crate::server::tool_call::call(kernel, peer, p).await,
        Method::KernelStatus => status(kernel, peer),
        Method::KernelMetrics => to_value(kernel.telemetry.metrics.snapshot()),
        Method::ScheduleAdd(p) => schedule_add(kernel, peer, p),
        Method::ScheduleList(p) => crate::scheduler::list(kernel, &peer.principal, p.runs),
        Method::ScheduleRemove(p) => crate::scheduler::remove(kernel, &peer.principal, p.id),
        Method::ScheduleResume(p) => crate::scheduler::resume(kernel, &peer.principal, p.id),
        Method::TriggerFire(p) => crate::scheduler::fire(kernel, p).await,
        Method::MemoryList(p) => memory::list(kernel, &peer.principal, p.limit),
        Method::MemoryAdd(p) => memory::add(kernel, &peer.principal, p),
        Method::MemoryPin(p) => memory::pin(kernel, &peer.principal, p.id, p.pinned),
        Method::MemoryRemove(p) => memory::remove(kernel, &peer.principal, p.id),
        Method::ArtifactList(p) => artifacts::list(kernel, peer, p.conversation_id),
        Method::ArtifactRead(p) => artifacts::read(kernel, peer, p.conversation_id, &p.name),
        Method::KernelShutdown => {
            // The stop begins once the answer is queued; connections stay open (and flush)
            // until running turns have ended (server.rs), so the answer reaches the client.
            let (queued, answered) = oneshot::channel();
            let kernel = kernel.clone();
            tokio::spawn(async move {
                let _ = answered.await;
                kernel.shutdown.cancel();
            });
            return Handled { result: Ok(json!({"stopping": true})), after_response: Some(queued) };
        }
        _ => Err(ErrorObject::new(codes::METHOD_NOT_FOUND, "method not served")),
    };
    Handled { result, after_response: None }
}

/// The conversation, wherever it runs, if it exists and the peer's principal owns it. Another
/// principal's conversation answers exactly like a missing one.
pub(super) fn found(kernel: &Arc<Kernel>, peer: &Peer, id: i64) -> Result<Found, ErrorObject> {
    let found = live::find(kernel, id).map_err(internal)?.ok_or_else(|| not_found(id))?;
    let owner = match &found {
        Found::Here(conv) => &conv.owner,
        Found::Elsewhere { row, .. } => &row.owner,
    };
    if *owner != peer.principal {
        return Err(not_found(id));
    }
    Ok(found)
}
