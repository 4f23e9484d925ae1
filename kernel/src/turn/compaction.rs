//! Compaction: the model summarises the older part of a conversation's context, and a
//! `compaction` entry (with its `compaction_completed` event) makes the next requests read the
//! system prompt, the summary and the recent turns (see `context.rs`).
//!
//! Automatic before a model request that would pass the threshold of the window
//! (`providers.compact_at_percent`), on demand (`session.compact`, run by the conversation's
//! actor between turns), and after a server refused a request as longer than its window
//! ([`recover`]: the window learned from the refusal, then the step sent again once). The cut
//! keeps the most recent turns that fit a share of the window and never separates a tool call
//! from its result; the summary is asked in requests that each fit the window (`summary.rs`).
//! Nothing is deleted: history, replay and fork still show every entry.

use std::sync::Arc;

use serde_json::{Value, json};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;
use superpi_proto::{EntryKind, Event, Message, Role};
use superpi_providers::{ModelLimits, ModelRequest, ToolSpec};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Conversation, Input};
use crate::kernel::Kernel;
use crate::sync::lock;
pub(crate) use crate::turn::context::Frame;
use crate::turn::context::{self, Context};
use crate::turn::summary::{self, SummaryError};

/// The share of the window the kept recent turns may fill, in percent.
const KEEP_PERCENT: u64 = 30;

/// The smallest window a refusal teaches, in tokens (a server's figure below it is taken as
/// it is; a guess never goes below it).
const MIN_LEARNED_WINDOW: u64 = 1_024;

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

/// The tools as a model request offers them.
pub(crate) fn tool_specs(tools: &[superpi_proto::tool::ToolDef]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            deferred: false,
        })
        .collect()
}

/// Tells the watchers the conversation compacts, and once it is done, that its turn runs again
/// (between turns the actor says `idle`).
struct Told<'a> {
    kernel: &'a Arc<Kernel>,
    conv: &'a Arc<Conversation>,
    turn_id: Option<i64>,
}

impl<'a> Told<'a> {
    fn compacting(kernel: &'a Arc<Kernel>, conv: &'a Arc<Conversation>, turn_id: Option<i64>) -> Self {
        conv.set_status(&**kernel, turn_id, crate::conversation::status::COMPACTING);
        Told { kernel, conv, turn_id }
    }
}

impl Drop for Told<'_> {
    fn drop(&mut self) {
        if self.turn_id.is_some() {
            self.conv.set_status(&**self.kernel, self.turn_id, crate::conversation::status::RUNNING);
        }
    }
}

/// Compacts `conv`'s context: summary by the model, then the compaction entry. One at a time
/// per conversation. A summary request the server refuses as too long teaches the window
/// ([`learn_from_refusal`]) and the compaction starts again once with it.
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
    let _told = Told::compacting(kernel, conv, turn_id);
    // The harness's `compaction_model` writes the summary, in requests that fit both windows.
    let harness = kernel.catalog.harness(Some(&conv.settings().harness)).ok();
    let model = harness.and_then(|h| h.cost.compaction_model.clone()).unwrap_or_else(|| frame.model.to_string());
    let own_model = frame.model;
    let frame = &Frame { model: &model, ..*frame };
    let provider = kernel.catalog.provider(frame.model).map_err(|e| NotCompacted::Failed(e.message))?;
    let mut limits = frame.limits;
    limits.context_window = limits.context_window.min(kernel.catalog.limits(frame.model).context_window);
    let mut retried = false;
    let (ctx, cut, summary) = loop {
        let ctx = context::derive(&*kernel.store, conv.id).map_err(|e| NotCompacted::Failed(e.to_string()))?;
        let cut = choose_cut(&ctx, limits).ok_or(NotCompacted::Nothing)?;
        let framed = Frame { limits, ..*frame };
        match summary::summarise(&provider, ctx.summary.as_ref(), &ctx.entries[..cut], &framed, cancel).await {
            Ok(summary) => break (ctx, cut, summary),
            Err(SummaryError::Cancelled) => return Err(NotCompacted::Cancelled),
            Err(SummaryError::Failed(why)) => return Err(NotCompacted::Failed(why)),
            Err(SummaryError::Overflow { sent, window, requested }) => {
                let learned = learn_from_refusal(kernel, conv, turn_id, frame.model, limits, sent, window, requested);
                if retried || learned.context_window >= limits.context_window {
                    return Err(NotCompacted::Failed(format!(
                        "the model's server refused the summary request as longer than its context window \
                         ({} tokens as superpi takes it)",
                        learned.context_window
                    )));
                }
                (limits, retried) = (learned, true);
            }
        }
    };
    let tokens_before = ctx.tokens(frame.system, frame.tools);
    let first_kept_seq = ctx.entries.get(cut).map(|e| e.seq);
    if summary.pieces > 1 {
        tracing::info!(conversation = conv.id, pieces = summary.pieces, "summarised in pieces that fit the window");
    }
    let total = {
        let mut total = lock(&conv.usage_total);
        total.add(summary.usage);
        *total
    };
    // A cut past the user's latest prompt keeps its words beside the summary.
    let latest_prompt = ctx.entries.iter().rposition(|e| e.kind == EntryKind::User).filter(|&at| at < cut);
    let latest_prompt = latest_prompt.map(|at| ctx.entries[at].message.text());
    let message = context::summary_message(&summary.text, latest_prompt.as_deref());
    let event = Event::compaction_completed(
        conv.id,
        turn_id,
        context::head_entry_id(first_kept_seq),
        Some(summary.text.clone()),
    );
    conv.publish(kernel, event, Some((EntryKind::Compaction, &message)))
        .map_err(|e| NotCompacted::Failed(format!("storing the compaction: {e}")))?;
    // A harness that harvests writes the summary's durable facts as notes, beside the turn.
    let harvests = harness.is_some_and(|h| h.harvest);
    if harvests {
        let job = crate::features::memory::Harvest {
            conversation_id: conv.id,
            owner: conv.owner.clone(),
            model: frame.model.to_string(),
            summary: summary.text.clone(),
        };
        tokio::spawn(crate::features::memory::harvest(kernel.store.clone(), provider.clone(), job));
    }
    let after = context::derive(&*kernel.store, conv.id).map_err(|e| NotCompacted::Failed(e.to_string()))?;
    let tokens_after = after.tokens(frame.system, frame.tools);
    conv.emit(
        kernel,
        Event::usage_updated(conv.id, turn_id, summary.usage, total)
            .with_context(tokens_after, kernel.catalog.limits(own_model).context_window)
            .with_cost(crate::turn::cost::charge(kernel, conv, frame.model, summary.usage, None)),
    );
    Ok(Compacted { first_kept_seq, tokens_before, tokens_after })
}

/// The window to take after a server refused a request superpi counted `sent` tokens, where
/// the server said its `window` and the request's size as it counted it (`requested`): its
/// window, scaled to superpi's count when the server counted more than superpi did (so that
/// superpi's own estimates keep under it), by half at most (a count that far off is the
/// server's figure for something else, such as the answer's room); three quarters of what was
/// sent when it said no window. Never above `current`, nor a guess below [`MIN_LEARNED_WINDOW`].
pub(crate) fn learned_window(current: u64, sent: u64, window: Option<u64>, requested: Option<u64>) -> u64 {
    let learned = match (window, requested) {
        (Some(window), Some(requested)) if requested > sent && sent > 0 => {
            let scaled = u128::from(window) * u128::from(sent) / u128::from(requested);
            u64::try_from(scaled).unwrap_or(window).max(window / 2)
        }
        (Some(window), _) => window,
        (None, _) => (sent.saturating_mul(3) / 4).max(MIN_LEARNED_WINDOW),
    };
    learned.min(current)
}

/// Learns `model`'s window from a refusal (see [`learned_window`]), says so in a notice when
/// it is news, and returns the limits to use from now on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn learn_from_refusal(
    kernel: &Kernel,
    conv: &Conversation,
    turn_id: Option<i64>,
    model: &str,
    current: ModelLimits,
    sent: u64,
    window: Option<u64>,
    requested: Option<u64>,
) -> ModelLimits {
    let learned = learned_window(current.context_window, sent, window, requested);
    if kernel.catalog.learn_window(model, learned) {
        let said = match window {
            Some(window) => format!("it says the window is {window} tokens"),
            None => "it did not say how long the window is".to_string(),
        };
        let message = format!(
            "the server of {model} refused a request of about {sent} tokens as longer than its context window \
             ({said}): superpi takes the window as {learned} tokens from now on, for every conversation with the \
             model until the kernel stops, and compacts to fit. Set `context_window` for the model in providers.toml \
             to keep it"
        );
        tracing::warn!(model, sent, ?window, ?requested, learned, "learned a context window from a refusal");
        conv.emit(kernel, Event::notice(conv.id, turn_id, "warning", message));
    }
    ModelLimits { context_window: learned, ..current }
}

/// After a turn's model request was refused as longer than the window: the window learned
/// from the refusal, the conversation compacted to fit it. `Ok(true)`: send the step again;
/// `Ok(false)`: cancelled; an error fails the turn saying why.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn recover(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    frame: &mut Frame<'_>,
    sent: u64,
    window: Option<u64>,
    requested: Option<u64>,
    cancel: &CancellationToken,
) -> Result<bool, String> {
    frame.limits = learn_from_refusal(kernel, conv, Some(turn_id), frame.model, frame.limits, sent, window, requested);
    let refused =
        format!("{}'s server refused the request (about {sent} tokens) as longer than its context window", frame.model);
    match compact(kernel, conv, Some(turn_id), frame, cancel).await {
        Ok(_) => Ok(true),
        Err(NotCompacted::Cancelled) => Ok(false),
        Err(NotCompacted::Nothing) => Err(format!(
            "{refused}, and there is nothing before the latest prompt to compact: the prompt and what the \
             turn added since do not fit a window of {} tokens. Start a new conversation with a shorter prompt, or \
             use a model with a larger window",
            frame.limits.context_window
        )),
        Err(NotCompacted::Failed(why)) => Err(format!("{refused}, and compacting the conversation failed: {why}")),
    }
}

/// Why a turn fails when the step sent again after compaction is refused as too long as well.
pub(crate) fn refused_again(model: &str, limits: ModelLimits, error: &str) -> String {
    format!(
        "{model}'s server refused the request again as longer than its context window after the conversation was \
         compacted to fit {} tokens ({error}). The conversation is kept: start a new one, fork it at an earlier \
         point, or set a smaller `context_window` for the model in providers.toml",
        limits.context_window
    )
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
        // The nested rules the context holds are read from it again.
        *crate::sync::lock(&self.0.rules_shown) = None;
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
    let limits = kernel.catalog.limits(&settings.model);
    let frame = Frame { model: &settings.model, effort: None, system: system.as_deref(), tools: &specs, limits };
    match compact(kernel, conv, None, &frame, cancel).await {
        Ok(done) => Ok(json!({
            "compacted": true,
            "head_entry_id": context::head_entry_id(done.first_kept_seq),
            "tokens_before": done.tokens_before,
            "tokens_after": done.tokens_after,
            "context_window": kernel.catalog.limits(&settings.model).context_window,
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
    Request(Box<ModelRequest>, u64),
    Cancelled,
}

/// The next model request of a turn: compacted first when it would pass the threshold, and
/// refused with a clear error when it cannot fit the window even then (rather than sent for a
/// provider to refuse). A window the compaction learned is `frame`'s from then on.
pub(crate) async fn next_request(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    frame: &mut Frame<'_>,
    cancel: &CancellationToken,
) -> Result<Prepared, String> {
    let threshold = context::compact_threshold(frame.limits, kernel.catalog.providers.compact_at_percent());
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
                let learned = kernel.catalog.limits(frame.model).context_window;
                frame.limits.context_window = frame.limits.context_window.min(learned);
            }
            Err(NotCompacted::Cancelled) => return Ok(Prepared::Cancelled),
            Err(NotCompacted::Nothing) => {}
            Err(NotCompacted::Failed(why)) => {
                let message = format!("automatic compaction failed: {why}");
                conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", message));
            }
        }
    }
    let limit = context::request_limit(frame.limits);
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
        output_schema: None,
    };
    Ok(Prepared::Request(Box::new(request), tokens))
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
