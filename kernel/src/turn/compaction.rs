//! Compaction: the model summarises the older part of a conversation's context, and a
//! `compaction` entry (with its `compaction_completed` event) makes the next requests read the
//! system prompt, the summary and the recent turns (see `context.rs`).
//!
//! Automatic before a model request that would pass the threshold of the window
//! (`providers.compact_at_percent`), and on demand (`session.compact`, run by the
//! conversation's actor between turns). The cut keeps the most
//! recent turns that fit a share of the window and never separates a tool call from its
//! result. Nothing is deleted: history, replay and fork still show every entry.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::{ContentBlock, EntryKind, Event, Message, Role};
use superpi_providers::{ModelLimits, ModelRequest, StreamEvent, ToolSpec};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Conversation, Input};
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::context::{self, Context};

/// What the model is asked, after the part to summarise.
const SUMMARY_PROMPT: &str = "Summarise the conversation so far for yourself, so that you can go on with the work \
without it: the user's requests and intent, decisions made and why, files, commands and their outcomes, what is \
done and what remains, and the user's latest request in their own words. Answer with the summary only; call no tool.";

/// The share of the window the kept recent turns may fill, in percent.
const KEEP_PERCENT: u64 = 30;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Compacted {
    /// The first seq kept after the summary (`None`: the summary stands for everything).
    pub first_kept_seq: Option<u64>,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// Why a compaction did not happen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotCompacted {
    /// Nothing before the recent turns to summarise.
    Nothing,
    Cancelled,
    Failed(String),
}

/// The model, its limits and the request framing of a conversation now.
pub(crate) struct Frame<'a> {
    pub model: &'a str,
    /// The conversation's thinking effort (turn requests only; summaries ask for none).
    pub effort: Option<superpi_proto::Effort>,
    pub system: Option<&'a str>,
    pub tools: &'a [ToolSpec],
    pub limits: ModelLimits,
}

/// The tools as a model request offers them.
pub(crate) fn tool_specs(tools: &[superpi_proto::tool::ToolDef]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
        })
        .collect()
}

/// Compacts `conv`'s context: summary by the model, then the compaction entry. One at a time
/// per conversation.
pub(crate) async fn compact(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: Option<i64>,
    frame: &Frame<'_>,
    cancel: &CancellationToken,
) -> Result<Compacted, NotCompacted> {
    let Some(_one_at_a_time) = Compacting::claim(conv) else {
        return Err(NotCompacted::Failed("another compaction of this conversation is running".into()));
    };
    let ctx = context::derive(&*kernel.store, conv.id).map_err(|e| NotCompacted::Failed(e.to_string()))?;
    let tokens_before = ctx.tokens(frame.system, frame.tools);
    let cut = choose_cut(&ctx, frame.limits).ok_or(NotCompacted::Nothing)?;
    let first_kept_seq = ctx.entries.get(cut).map(|e| e.seq);

    let request = summary_request(&ctx, cut, frame);
    let provider = kernel.catalog.provider(frame.model).map_err(|e| NotCompacted::Failed(e.message))?;
    let mut stream = provider.stream(request);
    let terminal = loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = cancel.cancelled() => return Err(NotCompacted::Cancelled),
        };
        match event {
            Some(StreamEvent::Done(terminal)) => break terminal,
            Some(StreamEvent::Error(terminal)) => {
                let why = terminal.error.map(|e| e.to_string()).unwrap_or_else(|| "the model stream failed".into());
                return Err(NotCompacted::Failed(format!("the model could not summarise: {why}")));
            }
            Some(_) => {}
            None => return Err(NotCompacted::Failed("the summary stream ended without an answer".into())),
        }
    };
    let summary = terminal.message.text();
    if summary.trim().is_empty() {
        return Err(NotCompacted::Failed("the model's summary was empty".into()));
    }
    let total = {
        let mut total = lock(&conv.usage_total);
        total.add(terminal.usage);
        *total
    };
    // A cut past the user's latest prompt keeps its words beside the summary.
    let latest_prompt = ctx.entries.iter().rposition(|e| e.kind == EntryKind::User).filter(|&at| at < cut);
    let latest_prompt = latest_prompt.map(|at| ctx.entries[at].message.text());
    let message = context::summary_message(summary.trim(), latest_prompt.as_deref());
    let event = Event::compaction_completed(
        conv.id,
        turn_id,
        context::head_entry_id(first_kept_seq),
        Some(summary.trim().to_string()),
    );
    conv.publish(kernel, event, Some((EntryKind::Compaction, &message)))
        .map_err(|e| NotCompacted::Failed(format!("storing the compaction: {e}")))?;
    // A harness that harvests writes the summary's durable facts as notes, beside the turn.
    let harvests = kernel.catalog.harness(Some(&conv.settings().harness)).is_ok_and(|h| h.harvest);
    if harvests {
        let job = crate::features::memory::Harvest {
            conversation_id: conv.id,
            owner: conv.owner.clone(),
            model: frame.model.to_string(),
            summary: summary.trim().to_string(),
        };
        tokio::spawn(crate::features::memory::harvest(kernel.store.clone(), provider.clone(), job));
    }
    let after = context::derive(&*kernel.store, conv.id).map_err(|e| NotCompacted::Failed(e.to_string()))?;
    let tokens_after = after.tokens(frame.system, frame.tools);
    conv.emit(
        kernel,
        Event::usage_updated(conv.id, turn_id, terminal.usage, total)
            .with_context(tokens_after, frame.limits.context_window),
    );
    Ok(Compacted { first_kept_seq, tokens_before, tokens_after })
}

/// The conversation's compaction flag, held while it compacts.
struct Compacting<'a>(&'a Conversation);

impl<'a> Compacting<'a> {
    fn claim(conv: &'a Conversation) -> Option<Self> {
        (!conv.compacting.swap(true, std::sync::atomic::Ordering::AcqRel)).then_some(Compacting(conv))
    }
}

impl Drop for Compacting<'_> {
    fn drop(&mut self) {
        self.0.compacting.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// Where the kept part starts (an index of `ctx.entries`; its length keeps nothing): the
/// earliest cut whose recent turns fit [`KEEP_PERCENT`] of the window (at a prompt when one
/// fits), else the end.
/// `None` when there is nothing to summarise.
fn choose_cut(ctx: &Context, limits: ModelLimits) -> Option<usize> {
    let budget = limits.context_window * KEEP_PERCENT / 100;
    let sizes: Vec<u64> = ctx.entries.iter().map(|e| superpi_providers::tokens::message(&e.message)).collect();
    let cuts = context::cut_points(&ctx.entries);
    let kept = |cut: usize| sizes[cut..].iter().sum::<u64>();
    let at_prompt = |cut: usize| ctx.entries.get(cut).is_some_and(|e| e.kind == EntryKind::User);
    // A turn is best kept whole: a cut at a prompt first, else at an answer; when none fits,
    // nothing is kept (the summary holds the latest prompt verbatim).
    let fitting = cuts.iter().copied().find(|&cut| kept(cut) <= budget && at_prompt(cut));
    let fitting = fitting.or_else(|| cuts.iter().copied().find(|&cut| kept(cut) <= budget));
    let cut = fitting.or_else(|| (!cuts.is_empty()).then_some(ctx.entries.len()))?;
    // A cut at 0 summarises nothing new (only an earlier summary): not worth a model call.
    (cut > 0).then_some(cut)
}

/// The request that asks for the summary: the same system prompt and tools (the prefix a
/// provider may have cached), the previous summary and the entries before the cut, and the
/// instruction. When that does not fit the window, the oldest entries are left out.
fn summary_request(ctx: &Context, cut: usize, frame: &Frame<'_>) -> ModelRequest {
    let reserve = context::output_reserve(frame.limits);
    let limit = context::request_limit(frame.limits);
    let instruction =
        Message { role: Role::User, content: vec![ContentBlock::text(SUMMARY_PROMPT)], usage: None, stop_reason: None };
    let older = &ctx.entries[..cut];
    let starts = std::iter::once(0).chain(context::cut_points(older));
    let mut request = ModelRequest::default();
    for start in starts {
        let messages: Vec<Message> = ctx
            .summary
            .iter()
            .cloned()
            .chain(older[start..].iter().map(|e| e.message.clone()))
            .chain(std::iter::once(instruction.clone()))
            .collect();
        request = ModelRequest {
            model: frame.model.to_string(),
            system: frame.system.map(str::to_string),
            messages,
            tools: frame.tools.to_vec(),
            max_tokens: u32::try_from(reserve).ok(),
            // A summary needs no thinking of its own.
            effort: None,
        };
        if superpi_providers::tokens::request(&request) <= limit {
            break;
        }
    }
    request
}

/// `session.compact`: the conversation's actor compacts it between turns (after the running
/// one and those queued before this request); the answer comes when that is done.
pub(crate) async fn on_demand(conv: &Conversation) -> Result<Value, ErrorObject> {
    let stopping = || ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping");
    let (reply, answer) = oneshot::channel();
    conv.input.send(Input::Compact { reply }).await.map_err(|_| stopping())?;
    answer.await.map_err(|_| stopping())?
}

/// `session.clear`: the conversation's actor clears its context between turns (after the
/// running one and those queued before this request); the answer comes when that is done.
pub(crate) async fn clear_between_turns(conv: &Conversation) -> Result<Value, ErrorObject> {
    let stopping = || ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping");
    let (reply, answer) = oneshot::channel();
    conv.input.send(Input::Clear { reply }).await.map_err(|_| stopping())?;
    answer.await.map_err(|_| stopping())?
}

/// The clear the actor runs between turns: the model's context starts afresh. Stored as a
/// compaction entry with no summary and nothing kept (so the context rules need nothing new),
/// announced as `context_cleared`; every entry stays in the history.
pub(crate) fn clear(kernel: &Kernel, conv: &Conversation) -> Result<Value, ErrorObject> {
    let nothing = Message { role: Role::User, content: Vec::new(), usage: None, stop_reason: None };
    let seq = conv.publish(kernel, Event::context_cleared(conv.id), Some((EntryKind::Compaction, &nothing)));
    let seq = seq.map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("store error: {e}")))?;
    Ok(json!({"cleared": true, "seq": seq}))
}

/// A compaction the actor runs between turns, with the harness's prompt and tools.
pub(crate) async fn between_turns(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    cancel: &CancellationToken,
) -> Result<Value, ErrorObject> {
    let settings = conv.settings();
    let harness = kernel.catalog.harness(Some(&settings.harness))?;
    let specs = tool_specs(&kernel.catalog.tools_for(harness));
    let system =
        crate::features::memory::system_prompt(&*kernel.store, harness, &conv.owner, settings.workspace.as_deref());
    let limits = superpi_providers::limits::for_model(&settings.model, &kernel.catalog.providers);
    let frame = Frame { model: &settings.model, effort: None, system: system.as_deref(), tools: &specs, limits };
    match compact(kernel, conv, None, &frame, cancel).await {
        Ok(done) => Ok(json!({
            "compacted": true,
            "head_entry_id": context::head_entry_id(done.first_kept_seq),
            "tokens_before": done.tokens_before,
            "tokens_after": done.tokens_after,
            "context_window": limits.context_window,
        })),
        Err(NotCompacted::Nothing) => Ok(json!({"compacted": false, "reason": "nothing to compact yet"})),
        Err(NotCompacted::Cancelled) if kernel.shutdown.is_cancelled() => {
            Err(ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping"))
        }
        Err(NotCompacted::Cancelled) => Ok(json!({"compacted": false, "reason": "cancelled"})),
        Err(NotCompacted::Failed(why)) => Err(ErrorObject::new(codes::PROVIDER, why)),
    }
}

/// A model request ready to send, or why none is.
pub(crate) enum Prepared {
    /// The request and its size in tokens.
    Request(ModelRequest, u64),
    Cancelled,
}

/// The next model request of a turn: compacted first when it would pass the threshold, and
/// refused with a clear error when it cannot fit the window even then (rather than sent for a
/// provider to refuse).
pub(crate) async fn next_request(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    frame: &Frame<'_>,
    cancel: &CancellationToken,
) -> Result<Prepared, String> {
    let threshold = context::compact_threshold(frame.limits, kernel.catalog.providers.compact_at_percent());
    let limit = context::request_limit(frame.limits);
    let derive = || context::derive(&*kernel.store, conv.id).map_err(|e| e.to_string());
    let mut ctx = derive()?;
    let mut tokens = ctx.tokens(frame.system, frame.tools);
    let mut compacted = false;
    if tokens > threshold {
        match compact(kernel, conv, Some(turn_id), frame, cancel).await {
            Ok(_) => {
                ctx = derive()?;
                tokens = ctx.tokens(frame.system, frame.tools);
                compacted = true;
            }
            Err(NotCompacted::Cancelled) => return Ok(Prepared::Cancelled),
            Err(NotCompacted::Nothing) => {}
            Err(NotCompacted::Failed(why)) => {
                let message = format!("automatic compaction failed: {why}");
                conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", message));
            }
        }
    }
    if tokens > limit {
        let after = if compacted { " even after compaction" } else { "" };
        return Err(format!(
            "the conversation does not fit the context window of {} ({} tokens){after}: the next request would \
             hold about {tokens} tokens, and {limit} fit beside room for the answer. Start a new conversation, fork \
             this one at an earlier point, or switch to a model with a larger window",
            frame.model, frame.limits.context_window
        ));
    }
    let mut messages = ctx.messages();
    kernel.images.attach(frame.model, &kernel.catalog.providers, &mut messages);
    let request = ModelRequest {
        model: frame.model.to_string(),
        system: frame.system.map(str::to_string),
        messages,
        tools: frame.tools.to_vec(),
        max_tokens: None,
        effort: frame.effort,
    };
    Ok(Prepared::Request(request, tokens))
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
