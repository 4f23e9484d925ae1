//! Drives one turn: kernel events through the renderer to the HTTP response, and a cancel
//! when the client goes away first.

use bytes::Bytes;
use superpi_client::{ClientError, KernelClient, Subscription};
use superpi_proto::method::{SubmitParams, SubmitResult};
use tokio::sync::{mpsc, oneshot};

use axum::http::StatusCode;

use crate::render::{Failure, RenderOptions, Renderer};
use crate::wire::{ApiError, Chunk};

/// Where the chunks go.
pub enum Sink {
    /// An SSE response body: one `data:` frame per chunk, then, for a failure, one `data:`
    /// frame with the error object (as OpenAI reports an error mid-stream), `[DONE]` last.
    Stream(mpsc::Sender<Bytes>),
    /// A whole completion: every chunk, or the failure, handed over when the turn ends.
    Collect { chunks: Vec<Chunk>, done: Option<oneshot::Sender<Result<Vec<Chunk>, ApiError>>> },
    /// The chunks as they come, then the end, for a route that writes them in another API's
    /// shape (`responses/`). Dropping the receiver is the client going away.
    Forward(mpsc::Sender<Forwarded>),
    /// An SSE response body in another API's frames (Anthropic Messages' events), which
    /// `frames` makes of the chunks and the end.
    Framed(mpsc::Sender<Bytes>, Box<dyn Frames>),
}

/// What [`Sink::Forward`] hands on.
#[derive(Debug)]
pub enum Forwarded {
    Chunks(Vec<Chunk>),
    /// The answer is over: the failure that ended it, if any. Nothing follows.
    End(Option<Failure>),
}

/// Writes an answer's chunks as the SSE frames of an API other than Chat Completions.
pub trait Frames: Send {
    /// The frames for `chunks`; `end` is set when the answer is over (with its failure, if any).
    fn frames(&mut self, chunks: &[Chunk], end: Option<Option<&Failure>>) -> Vec<Bytes>;
}

/// How a failed answer is reported: a failed turn is the server's error (500; one an output
/// schema failed is a `model_error`, as OpenAI reports a model's invalid content), a lost
/// kernel an unavailable service (503).
pub fn failure_error(failure: &Failure) -> ApiError {
    let status = match failure.code {
        "kernel_unavailable" => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, failure.code, failure.message.clone())
}

/// The client is gone.
struct Gone;

impl Sink {
    /// Sends `chunks`; `end` is set when the answer is over (with its failure, if any).
    async fn push(&mut self, chunks: Vec<Chunk>, end: Option<Option<&Failure>>) -> Result<(), Gone> {
        match self {
            Sink::Stream(tx) => {
                for chunk in &chunks {
                    let json = serde_json::to_string(chunk).unwrap_or_default();
                    tx.send(superpi_http::sse_data(&json)).await.map_err(|_| Gone)?;
                }
                if let Some(failure) = end {
                    if let Some(failure) = failure {
                        let json = failure_error(failure).body().to_string();
                        tx.send(superpi_http::sse_data(&json)).await.map_err(|_| Gone)?;
                    }
                    tx.send(Bytes::from_static(superpi_http::SSE_DONE)).await.map_err(|_| Gone)?;
                }
                Ok(())
            }
            Sink::Framed(tx, frames) => {
                for frame in frames.frames(&chunks, end) {
                    tx.send(frame).await.map_err(|_| Gone)?;
                }
                Ok(())
            }
            Sink::Collect { chunks: all, done } => {
                all.extend(chunks);
                if let Some(failure) = end {
                    let tx = done.take().ok_or(Gone)?;
                    let answer = match failure {
                        Some(failure) => Err(failure_error(failure)),
                        None => Ok(std::mem::take(all)),
                    };
                    tx.send(answer).map_err(|_| Gone)?;
                }
                Ok(())
            }
            Sink::Forward(tx) => {
                if !chunks.is_empty() {
                    tx.send(Forwarded::Chunks(chunks)).await.map_err(|_| Gone)?;
                }
                if let Some(failure) = end {
                    tx.send(Forwarded::End(failure.cloned())).await.map_err(|_| Gone)?;
                }
                Ok(())
            }
        }
    }

    async fn closed(&mut self) {
        match self {
            Sink::Stream(tx) | Sink::Framed(tx, _) => tx.closed().await,
            Sink::Forward(tx) => tx.closed().await,
            Sink::Collect { done: Some(tx), .. } => tx.closed().await,
            Sink::Collect { done: None, .. } => std::future::pending().await,
        }
    }
}

/// Submits `submit` (to the watched conversation), answers `submitted` with how that went, then
/// drives the turn into `sink` (`options` get the turn's id). The request handler spawns this
/// before the submit goes out, so a client that leaves while the submit is on its way (the
/// kernel may already run the turn; the handler is dropped, which closes the sink) still
/// cancels its turn. A submit the kernel refuses (a schema it cannot compile) ran nothing: a
/// conversation `made` for this request is deleted, so the refused request leaves nothing.
pub async fn submit_and_drive(
    client: KernelClient,
    sub: Subscription,
    (submit, made): (SubmitParams, bool),
    mut options: RenderOptions,
    sink: Sink,
    submitted: oneshot::Sender<Result<SubmitResult, ClientError>>,
) {
    let conversation_id = sub.conversation_id();
    let structured = submit.output_schema.is_some();
    match client.submit(submit).await {
        Ok(result) => {
            options.id = format!("chatcmpl-{conversation_id}-{}", result.turn_id);
            options.turn_id = result.turn_id;
            // A handler that is gone no longer waits for this: the sink tells drive so.
            let _ = submitted.send(Ok(result));
            drive(client, sub, Renderer::new(options).structured(structured), sink).await;
        }
        Err(err) => {
            sub.close().await;
            if made && let Err(err) = client.delete(conversation_id).await {
                tracing::warn!(conversation_id, "deleting the conversation of a refused request: {err}");
            }
            let _ = submitted.send(Err(err));
        }
    }
}

/// Renders the turn into the sink until it ends. A client that leaves cancels the turn: at
/// once when it runs, or as soon as it starts when it waits behind another turn.
async fn drive(client: KernelClient, mut sub: Subscription, mut renderer: Renderer, mut sink: Sink) {
    let conversation_id = sub.conversation_id();
    let first = renderer.start();
    let mut gone = sink.push(first, None).await.is_err();
    let mut subscription_id = sub.id();
    while !gone && !renderer.is_finished() {
        tokio::select! {
            event = sub.next() => {
                // A new subscription id means the client library caught up after a lag.
                if sub.id() != subscription_id {
                    subscription_id = sub.id();
                    renderer.lagged();
                }
                let chunks = match event {
                    Some(event) => renderer.render(&event),
                    None => renderer.flush(),
                };
                let end = renderer.is_finished().then(|| renderer.failure());
                if sink.push(chunks, end).await.is_err() {
                    gone = true;
                }
            }
            _ = sink.closed() => gone = true,
        }
    }
    if gone && !renderer.is_finished() {
        tracing::info!(conversation_id, "client went away; cancelling its turn");
        while !renderer.turn_started() && !renderer.is_finished() {
            match sub.next().await {
                Some(event) => {
                    renderer.render(&event);
                }
                None => break,
            }
        }
        if renderer.turn_started()
            && !renderer.is_finished()
            && let Err(err) = client.cancel(conversation_id).await
        {
            tracing::warn!(conversation_id, "cancel failed: {err}");
        }
    }
    sub.close().await;
}
