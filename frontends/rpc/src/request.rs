//! The request map: the methods, routed by jsonrpsee's `RpcModule`, their kernel calls, and
//! the call path from a line's call to its answer.
//!
//! The module is built per connection with the connection as its context. A call goes in
//! through `raw_json_request` with a placeholder id; the answer is taken apart and written
//! back with the caller's own id (JSON-RPC allows ids jsonrpsee does not model, such as
//! negative or fractional numbers).

use std::future::Future;
use std::sync::Arc;

use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::{Value, json};
use superpi_proto::method::{ListResult, Method};

use crate::conn::Conn;
use crate::envelope::{Call, RpcError, codes};
use crate::wire::{self, parse};

/// Every method this server offers, in the order the README documents them.
pub const METHODS: &[&str] = &[
    "auth.login",
    "session.open",
    "session.submit",
    "session.watch",
    "session.ack",
    "session.unwatch",
    "session.cancel",
    "session.fork",
    "session.compact",
    "session.clear",
    "session.undo",
    "session.list",
    "session.history",
    "session.set_mode",
    "session.set_effort",
    "ui.respond",
    "workspace.metadata",
    "harness.list",
    "command.list",
    "schedule.list",
    "schedule.add",
    "schedule.remove",
    "schedule.resume",
    "memory.list",
    "memory.add",
    "memory.pin",
    "memory.remove",
    "artifact.list",
    "artifact.read",
];

type Reply = Result<Value, RpcError>;

fn to_jsonrpsee(err: RpcError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(err.code, err.message, err.data)
}

fn register<F, Fut>(module: &mut RpcModule<Conn>, name: &'static str, handler: F) -> Result<(), crate::Error>
where
    F: Fn(Arc<Conn>, Option<String>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    module
        .register_async_method(name, move |params, conn, _| {
            let handler = handler.clone();
            let params = params.as_str().map(String::from);
            async move { handler(conn, params).await.map_err(to_jsonrpsee) }
        })
        .map_err(|err| crate::Error::Setup(err.to_string()))?;
    Ok(())
}

/// The methods of one connection.
pub fn module(conn: Arc<Conn>) -> Result<RpcModule<Conn>, crate::Error> {
    let mut m = RpcModule::from_arc(conn);
    register(&mut m, "auth.login", |conn, p| async move {
        let p: wire::LoginParams = parse("auth.login", p.as_deref())?;
        conn.login(&p.token)
    })?;
    register(&mut m, "session.open", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::OpenParams = parse("session.open", p.as_deref())?;
        let info = kernel.open(p.to_kernel(conn.shared.workspace.as_deref())).await.map_err(wire::kernel_error)?;
        Ok(wire::conversation(&info))
    })?;
    register(&mut m, "session.submit", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::SubmitParams = parse("session.submit", p.as_deref())?;
        let result = kernel.submit(p.to_kernel()?).await.map_err(wire::kernel_error)?;
        Ok(wire::submitted(&result))
    })?;
    register(&mut m, "session.watch", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::WatchParams = parse("session.watch", p.as_deref())?;
        let sub = kernel
            .watch(
                superpi_proto::method::WatchParams::live(p.conversation_id)
                    .catch_up(p.from_seq)
                    .interactive(p.interactive)
                    .reads_files(p.reads_files),
            )
            .await
            .map_err(wire::kernel_error)?;
        let head_seq = sub.head_seq();
        let watch = conn.add_watch(p.conversation_id, sub);
        Ok(json!({"watch": watch, "conversation_id": p.conversation_id, "head_seq": head_seq}))
    })?;
    register(&mut m, "session.ack", |conn, p| async move {
        conn.principal()?;
        let p: wire::AckParams = parse("session.ack", p.as_deref())?;
        conn.ack(p.watch, p.batch)
    })?;
    register(&mut m, "session.unwatch", |conn, p| async move {
        conn.principal()?;
        let p: wire::UnwatchParams = parse("session.unwatch", p.as_deref())?;
        conn.unwatch(p.watch)
    })?;
    register(&mut m, "session.cancel", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ConversationParams = parse("session.cancel", p.as_deref())?;
        let result = kernel.cancel(p.conversation_id).await.map_err(wire::kernel_error)?;
        Ok(json!({"cancelled": result.get("cancelled").and_then(Value::as_bool).unwrap_or(false)}))
    })?;
    register(&mut m, "session.fork", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ForkParams = parse("session.fork", p.as_deref())?;
        let info = kernel.fork(p.conversation_id, p.at_seq).await.map_err(wire::kernel_error)?;
        Ok(wire::conversation(&info))
    })?;
    register(&mut m, "session.compact", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ConversationParams = parse("session.compact", p.as_deref())?;
        kernel.compact(p.conversation_id).await.map_err(wire::kernel_error)
    })?;
    register(&mut m, "session.clear", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ConversationParams = parse("session.clear", p.as_deref())?;
        kernel.clear(p.conversation_id).await.map_err(wire::kernel_error)
    })?;
    register(&mut m, "session.undo", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::UndoParams = parse("session.undo", p.as_deref())?;
        let done = kernel.undo(p.conversation_id, p.turn_id).await.map_err(wire::kernel_error)?;
        Ok(serde_json::to_value(done).unwrap_or_default())
    })?;
    register(&mut m, "session.list", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ListParams = parse("session.list", p.as_deref())?;
        let list: ListResult = kernel
            .request(Method::SessionList(superpi_proto::method::ListParams {
                limit: p.limit,
                offset: p.offset,
                cursor: p.cursor,
            }))
            .await
            .map_err(wire::kernel_error)?;
        Ok(json!({
            "conversations": list.conversations.iter().map(wire::conversation).collect::<Vec<_>>(),
            "more": list.more,
            "next": list.next,
        }))
    })?;
    register(&mut m, "session.history", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::HistoryParams = parse("session.history", p.as_deref())?;
        // A page at a time, as the kernel answers: a long history never makes one huge line.
        let history = kernel.history_page(p.conversation_id, p.after_seq).await.map_err(wire::kernel_error)?;
        Ok(wire::history(&history))
    })?;
    register(&mut m, "session.set_mode", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::SetModeParams = parse("session.set_mode", p.as_deref())?;
        let result = kernel.set_mode(p.conversation_id, &p.mode).await.map_err(wire::kernel_error)?;
        Ok(json!({"mode": result.get("mode").cloned().unwrap_or(Value::Null),
                  "max_mode": result.get("max_mode").cloned().unwrap_or(Value::Null)}))
    })?;
    register(&mut m, "session.set_effort", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::SetEffortParams = parse("session.set_effort", p.as_deref())?;
        let result = kernel.set_effort(p.conversation_id, p.effort).await.map_err(wire::kernel_error)?;
        Ok(json!({"effort": result.get("effort").cloned().unwrap_or(Value::Null)}))
    })?;
    register(&mut m, "ui.respond", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::RespondParams = parse("ui.respond", p.as_deref())?;
        let request_id = p.request_id.clone();
        let result = match p.answer()? {
            wire::Answer::Permission(option) => kernel.respond_permission(&request_id, &option).await,
            wire::Answer::Ui(outcome) => kernel.respond_ui(&request_id, outcome).await,
        }
        .map_err(wire::kernel_error)?;
        Ok(json!({"accepted": result.get("accepted").and_then(Value::as_bool).unwrap_or(false)}))
    })?;
    register(&mut m, "workspace.metadata", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let _: wire::NoParams = parse("workspace.metadata", p.as_deref())?;
        let harnesses = kernel.harnesses().await.map_err(wire::kernel_error)?;
        let hello = kernel.kernel_hello();
        Ok(json!({
            "workspace": conn.shared.workspace,
            "principal": conn.principal()?,
            "auth": conn.shared.tokens.is_enabled(),
            "server": {"name": "superpi-rpc", "version": env!("CARGO_PKG_VERSION")},
            "kernel": {"version": hello.version, "protocol": hello.protocol, "pid": hello.pid},
            "modes": ["plan", "accept-edits", "auto"],
            "harnesses": harnesses.iter().map(wire::harness).collect::<Vec<_>>(),
            "methods": METHODS,
            "watch_window": crate::render::DEFAULT_WINDOW,
        }))
    })?;
    register(&mut m, "harness.list", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let _: wire::NoParams = parse("harness.list", p.as_deref())?;
        let harnesses = kernel.harnesses().await.map_err(wire::kernel_error)?;
        Ok(json!({"harnesses": harnesses.iter().map(wire::harness).collect::<Vec<_>>()}))
    })?;
    register(&mut m, "command.list", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ConversationParams = parse("command.list", p.as_deref())?;
        let commands = kernel.commands(Some(p.conversation_id)).await.map_err(wire::kernel_error)?;
        Ok(json!({"commands": commands}))
    })?;
    register(&mut m, "schedule.list", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ScheduleListParams = parse("schedule.list", p.as_deref())?;
        let schedules = kernel.schedule_list(p.runs).await.map_err(wire::kernel_error)?;
        Ok(json!({"schedules": schedules.iter().map(wire::schedule).collect::<Vec<_>>()}))
    })?;
    register(&mut m, "schedule.add", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ScheduleAddParams = parse("schedule.add", p.as_deref())?;
        let added =
            kernel.schedule_add(p.to_kernel(conn.shared.workspace.as_deref())).await.map_err(wire::kernel_error)?;
        Ok(json!({"schedule": wire::schedule(&added.schedule), "token": added.token, "secret": added.secret}))
    })?;
    register(&mut m, "schedule.remove", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ScheduleRemoveParams = parse("schedule.remove", p.as_deref())?;
        kernel.schedule_remove(p.id).await.map_err(wire::kernel_error)?;
        Ok(json!({"removed": true}))
    })?;
    register(&mut m, "schedule.resume", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: wire::ScheduleRemoveParams = parse("schedule.resume", p.as_deref())?;
        kernel.schedule_resume(p.id).await.map_err(wire::kernel_error)?;
        Ok(json!({"resumed": true}))
    })?;
    register(&mut m, "memory.list", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: superpi_proto::memory::MemoryListParams = parse("memory.list", p.as_deref())?;
        let notes = kernel.memory_list(p.limit).await.map_err(wire::kernel_error)?;
        Ok(json!({"notes": notes}))
    })?;
    register(&mut m, "memory.add", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: superpi_proto::memory::MemoryAddParams = parse("memory.add", p.as_deref())?;
        kernel.memory_add(p).await.map_err(wire::kernel_error)
    })?;
    register(&mut m, "memory.pin", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: superpi_proto::memory::MemoryPinParams = parse("memory.pin", p.as_deref())?;
        kernel.memory_pin(p.id, p.pinned).await.map_err(wire::kernel_error)
    })?;
    register(&mut m, "memory.remove", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: superpi_proto::memory::MemoryRemoveParams = parse("memory.remove", p.as_deref())?;
        kernel.memory_remove(p.id).await.map_err(wire::kernel_error)
    })?;
    register(&mut m, "artifact.list", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: superpi_proto::artifact::ArtifactListParams = parse("artifact.list", p.as_deref())?;
        let artifacts = kernel.artifact_list(p.conversation_id).await.map_err(wire::kernel_error)?;
        Ok(json!({"artifacts": artifacts}))
    })?;
    register(&mut m, "artifact.read", |conn, p| async move {
        let kernel = conn.kernel().await?;
        let p: superpi_proto::artifact::ArtifactReadParams = parse("artifact.read", p.as_deref())?;
        let read = kernel.artifact_read(p.conversation_id, &p.name).await.map_err(wire::kernel_error)?;
        let mut answer = json!(read.info);
        answer["data"] = json!(read.data);
        Ok(answer)
    })?;
    Ok(m)
}

/// Runs one call through the module and reads its answer.
pub async fn dispatch(module: &RpcModule<Conn>, call: &Call) -> Reply {
    let mut request = serde_json::Map::new();
    request.insert("jsonrpc".into(), Value::from("2.0"));
    request.insert("id".into(), Value::from(0));
    request.insert("method".into(), Value::from(call.method.clone()));
    if let Some(params) = &call.params {
        request.insert("params".into(), params.clone());
    }
    let request = Value::Object(request).to_string();
    let (answer, _notifications) = module
        .raw_json_request(&request, 1)
        .await
        .map_err(|err| RpcError::new(codes::INTERNAL_ERROR, format!("internal error: {err}")))?;
    let mut answer: serde_json::Map<String, Value> = serde_json::from_str(answer.get())
        .map_err(|err| RpcError::new(codes::INTERNAL_ERROR, format!("internal error: {err}")))?;
    if let Some(error) = answer.remove("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(codes::INTERNAL_ERROR as i64) as i32;
        let message = error.get("message").and_then(Value::as_str).unwrap_or("error").to_string();
        return Err(RpcError { code, message, data: error.get("data").cloned() });
    }
    Ok(answer.remove("result").unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md documents exactly the methods the module serves, each under its own heading.
    #[test]
    fn the_readme_documents_every_method() {
        let readme = include_str!("../README.md");
        let documented: Vec<&str> =
            readme.lines().filter_map(|l| l.strip_prefix("### `").and_then(|rest| rest.strip_suffix('`'))).collect();
        assert_eq!(documented, METHODS);
        let (tx, _rx, _queued) = crate::conn::Outbox::new();
        let shared = Arc::new(crate::Shared {
            tokens: Default::default(),
            connect: superpi_client::ConnectOptions::new(superpi_client::Locations::resolve(|_| None), "rpc"),
            workspace: None,
        });
        let module = module(Conn::new(shared, tx)).unwrap();
        let mut served: Vec<&str> = module.method_names().collect();
        served.sort_unstable();
        let mut listed = METHODS.to_vec();
        listed.sort_unstable();
        assert_eq!(served, listed);
    }
}
