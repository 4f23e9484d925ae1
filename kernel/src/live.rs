//! Conversations come alive: loaded from the store on first use (with their policy and the
//! "always" answers stored with them) and run by one actor each, an event loop over one
//! closed input enum that queues submits (and `session.compact`s and `session.clear`s) and
//! runs one at a time. After a quiet period
//! with nothing holding it (no watcher, turn or request) the actor takes its conversation out
//! of memory and ends (giving its lease up); the next use loads it again. Loading claims the
//! conversation's lease in the store: the turns a dead kernel left get their ends here, and a
//! conversation another live kernel runs is found `Elsewhere`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use superpi_policy::Mode;
use superpi_proto::message::codes;
use superpi_proto::{ErrorObject, Event, Message};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::conversation::feed::FeedBounds;
use crate::conversation::{Conversation, Input, Steer};
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::recovery;
use superpi_store::{Claim, ConversationRow, Lease, StoreError};

/// Where a conversation is run.
pub(crate) enum Found {
    /// Here: live in this kernel, which holds its lease.
    Here(Arc<Conversation>),
    /// By another live kernel on the same database (it holds the lease; `holder` is its id):
    /// this kernel serves it through the store (history, watch) and passes on to that kernel
    /// what only it can do (submits, cancels, answers, settings: `elsewhere.rs`).
    Elsewhere { row: Box<ConversationRow>, holder: String },
}

/// The live conversation of an id, loading it (claiming its lease, ending what a former
/// holder left unfinished, taking the prompts queued for it, and starting its actor) on first
/// use; `Elsewhere` when another live kernel holds its lease.
pub(crate) fn find(kernel: &Arc<Kernel>, id: i64) -> Result<Option<Found>, StoreError> {
    if let Some(conv) = running_here(kernel, id) {
        return Ok(Some(Found::Here(conv)));
    }
    // One load of a conversation at a time: the claim, the head read after it and the
    // recovery belong to one loader.
    let _loading = lock(&kernel.loads[id.rem_euclid(kernel.loads.len() as i64) as usize]);
    if let Some(conv) = running_here(kernel, id) {
        return Ok(Some(Found::Here(conv)));
    }
    let Some(row) = kernel.store.conversation(id)? else { return Ok(None) };
    let (lease, interrupted) = match kernel.store.claim(id, &kernel.id, lease_ms(kernel))? {
        Claim::Taken { lease, interrupted } => (lease, interrupted),
        Claim::Held { owner } => {
            tracing::debug!(conversation = id, owner, "another kernel runs this conversation");
            return Ok(Some(Found::Elsewhere { row: Box::new(row), holder: owner }));
        }
    };
    let (conv, rx) = match load(kernel, row, lease.clone()) {
        Ok(loaded) => loaded,
        Err(err) => {
            // Not loaded: the lease goes back, so nobody waits for its expiry.
            let _ = kernel.store.release(id, &lease);
            return Err(err);
        }
    };
    let conv = match kernel.live.add(conv) {
        Ok(conv) => conv,
        Err(live) => return Ok(Some(Found::Here(live))),
    };
    // Whether frontends on other kernels watch it already (they get its deltas).
    crate::turn::cluster_holder::refresh_watched(kernel, &conv);
    // What the former holder left unfinished ends before anything else runs here.
    for turn in interrupted {
        let turn_id = turn.turn_id;
        match &turn.unstarted_prompt {
            Some(prompt) => recovery::interrupt_unstarted(kernel, &conv, turn_id, prompt),
            None => match recovery::end_interrupted(kernel, &conv, turn_id, "while it ran") {
                Ok(closed) => tracing::info!(conversation = id, turn_id, closed, "recovered an interrupted turn"),
                Err(err) => tracing::error!(conversation = id, turn_id, "recovering a turn: {err}"),
            },
        }
    }
    let queued = take_queued(kernel, &conv);
    kernel.tasks.spawn(actor(kernel.clone(), conv.clone(), rx, queued));
    Ok(Some(Found::Here(conv)))
}

/// The conversation of an id live here, unless another kernel took it over (it is leaving
/// this kernel's memory: the store says who runs it now).
fn running_here(kernel: &Kernel, id: i64) -> Option<Arc<Conversation>> {
    let conv = kernel.live.get(id).filter(|conv| !conv.is_fenced())?;
    conv.touch();
    Some(conv)
}

/// The live conversation of an id (see [`find`]); `None` also when another kernel runs it.
pub(crate) fn conversation(kernel: &Arc<Kernel>, id: i64) -> Result<Option<Arc<Conversation>>, StoreError> {
    Ok(match find(kernel, id)? {
        Some(Found::Here(conv)) => Some(conv),
        _ => None,
    })
}

/// A conversation made from its row, under the lease just claimed: its head read after the
/// claim (a former holder commits nothing more), its policy with its stored "always" answers.
fn load(
    kernel: &Arc<Kernel>,
    row: ConversationRow,
    lease: Lease,
) -> Result<(Arc<Conversation>, mpsc::Receiver<Input>), StoreError> {
    let id = row.id;
    let mut row = row;
    managed_workspace(kernel, &mut row);
    let head = kernel.store.head_seq(id)?;
    let policy = kernel
        .catalog
        .conversation_policy(&row.harness, &row.mode, row.workspace.as_deref().map(std::path::Path::new))
        .map(|policy| policy.with_tool_limit(row.settings.tool_limit.clone()));
    // The "always" answers last as long as the conversation, across kernels.
    let overrides = match kernel.store.permission_overrides(id)?.map(|json| serde_json::from_str(&json)) {
        Some(Ok(overrides)) => overrides,
        Some(Err(err)) => {
            tracing::warn!("conversation {id}: ignoring unreadable stored permission answers: {err}");
            superpi_policy::Overrides::default()
        }
        None => superpi_policy::Overrides::default(),
    };
    let policy = policy.map(|p| p.with_overrides(overrides));
    let bounds = FeedBounds { events: kernel.config.event_buffer, bytes: kernel.config.event_buffer_bytes };
    Ok(Conversation::new(row, lease, head, policy, bounds))
}

/// A conversation of a harness whose workspace the kernel manages works in that directory,
/// made now if missing (a scratch one comes from its id, whatever a fork copied); without it
/// (it cannot be made) its tools get no workspace and are refused.
fn managed_workspace(kernel: &Kernel, row: &mut ConversationRow) {
    let Ok(harness) = kernel.catalog.harness(Some(&row.harness)) else { return };
    let root = &kernel.config.workspaces_dir;
    match crate::features::workspaces::managed(root, &harness.workspace, row.id) {
        Some(Ok(dir)) => row.workspace = Some(dir.to_string_lossy().into_owned()),
        Some(Err(err)) => {
            tracing::warn!(conversation = row.id, "making its {} workspace: {err}", harness.workspace);
            row.workspace = None;
        }
        None => {}
    }
}

/// The lease's length in milliseconds.
pub(crate) fn lease_ms(kernel: &Kernel) -> i64 {
    kernel.config.lease_ms()
}

/// A prompt another kernel queued for this conversation, as its actor takes it.
pub(crate) struct Forwarded {
    pub turn_id: i64,
    pub message: Box<Message>,
    pub ceiling: Mode,
    pub steer: bool,
}

/// Takes the prompts other kernels queued for a conversation this kernel runs (none when its
/// lease is gone: the holder takes them).
pub(crate) fn take_queued(kernel: &Kernel, conv: &Conversation) -> Vec<Forwarded> {
    match kernel.store.take_queued(conv.id, &conv.lease) {
        Ok(queued) => queued
            .into_iter()
            .map(|q| Forwarded {
                turn_id: q.turn_id,
                message: Box::new(q.prompt),
                // An unreadable ceiling is the tightest.
                ceiling: q.ceiling.parse().unwrap_or(Mode::Plan),
                steer: q.steer,
            })
            .collect(),
        Err(err) => {
            tracing::error!(conversation = conv.id, "taking the prompts queued for it: {err}");
            Vec::new()
        }
    }
}

/// How long an idle conversation stays in memory: the configured period, or under pressure
/// (more live conversations than `live_soft_limit`) at most [`PRESSED_QUIET`], so a flood of
/// one-shot conversations (a gateway's requests without a session id) stays bounded by what
/// arrives in that time.
fn quiet_period(kernel: &Kernel) -> Duration {
    let configured = kernel.config.conversation_idle;
    if kernel.live.len() > kernel.config.live_soft_limit { configured.min(PRESSED_QUIET) } else { configured }
}

const PRESSED_QUIET: Duration = Duration::from_secs(1);

/// Whether a quiet, idle conversation may leave memory: all it published is stored (so it
/// comes back with the same head), and no frontend attached MCP servers to it (their
/// definitions live only here). Nothing else may hold it: see
/// [`crate::conversation::LiveConversations::remove_unused`].
fn may_leave(conv: &Conversation) -> bool {
    conv.all_stored() && lock(&conv.mcp_servers).is_empty()
}

/// What the actor runs one at a time, in the order it came: a turn, or a compaction that
/// `session.compact` asked for, or the clear `session.clear` asked for (between turns, never
/// beside one).
enum Job {
    Turn { turn_id: i64, message: Box<Message>, ceiling: Mode },
    Compact(MethodReply),
    Clear(MethodReply),
}

/// The answer of the method that queued a job.
type MethodReply = oneshot::Sender<Result<serde_json::Value, ErrorObject>>;

/// The job running now.
#[derive(Clone, Copy, PartialEq)]
enum Running {
    Turn(i64),
    Compaction,
}

async fn actor(kernel: Arc<Kernel>, conv: Arc<Conversation>, mut rx: mpsc::Receiver<Input>, queued: Vec<Forwarded>) {
    // No turn runs yet: a queued steering prompt is a turn of its own.
    let mut queue: VecDeque<Job> =
        queued.into_iter().map(|q| Job::Turn { turn_id: q.turn_id, message: q.message, ceiling: q.ceiling }).collect();
    let mut current: Option<(Running, CancellationToken)> = None;
    conv.recall_status(&*kernel);
    loop {
        // Taken over by another kernel: once its job has ended it leaves (the other kernel
        // ends what was queued here).
        if conv.is_fenced() && current.is_none() {
            kernel.live.remove(&conv);
            return;
        }
        // Stopping: wait for the running job's end (its token is the kernel's child, so it
        // ends promptly), so the turns behind it are recorded after it, in order.
        let stopping = kernel.shutdown.is_cancelled();
        if stopping && current.is_none() {
            break;
        }
        if current.is_none()
            && !kernel.shutdown.is_cancelled()
            && let Some(job) = queue.pop_front()
        {
            let token = kernel.shutdown.child_token();
            let (k, c) = (kernel.clone(), conv.clone());
            match job {
                Job::Turn { turn_id, message, ceiling } => {
                    current = Some((Running::Turn(turn_id), token.clone()));
                    *lock(&conv.running) = Some(turn_id);
                    *lock(&conv.turn_ceiling) = Some(ceiling);
                    lock(&conv.steering).open();
                    kernel.activity.turn_started();
                    kernel.tasks.spawn(async move {
                        crate::turn::run(&k, &c, turn_id, ceiling, *message, token).await;
                        let _ = c.input.send(Input::TurnEnded { turn_id }).await;
                    });
                }
                Job::Compact(reply) => {
                    current = Some((Running::Compaction, token.clone()));
                    kernel.tasks.spawn(async move {
                        let _ = reply.send(crate::turn::compaction::between_turns(&k, &c, &token).await);
                        let _ = c.input.send(Input::CompactionEnded).await;
                    });
                }
                Job::Clear(reply) => {
                    // One stored event: done here, then the next job.
                    let _ = reply.send(crate::turn::compaction::clear(&kernel, &conv));
                    continue;
                }
            }
        }
        let idle = current.is_none() && queue.is_empty();
        if idle && !conv.is_fenced() {
            conv.set_status(&*kernel, None, crate::conversation::status::IDLE);
        }
        let quiet = quiet_period(&kernel);
        let input = tokio::select! {
            input = rx.recv() => input,
            _ = kernel.shutdown.cancelled(), if !stopping => continue,
            _ = tokio::time::sleep(quiet.saturating_sub(conv.quiet_for())), if idle && !stopping => {
                if conv.quiet_for() >= quiet {
                    if may_leave(&conv) && kernel.live.remove_unused(&conv) {
                        tracing::debug!(conversation = conv.id, "an idle conversation left memory");
                        kernel.freed.conversation_left();
                        break;
                    }
                    // Held (a watcher, a request) or kept: look again a period later.
                    conv.touch();
                }
                continue;
            }
        };
        let Some(input) = input else { break };
        // The quiet period starts again at each input (a turn's end too).
        conv.touch();
        match input {
            Input::Submit { turn_id, message, ceiling } => queue.push_back(Job::Turn { turn_id, message, ceiling }),
            Input::Steer { steer, reply } => {
                let running = match current {
                    Some((Running::Turn(id), _)) => Some(id),
                    _ => None,
                };
                let offered = match running {
                    Some(_) => lock(&conv.steering).offer(steer),
                    None => Err(steer),
                };
                match offered {
                    Ok(()) => {
                        let _ = reply.send(running);
                    }
                    Err(Steer { turn_id, message, ceiling }) => {
                        queue.push_back(Job::Turn { turn_id, message, ceiling });
                        let _ = reply.send(None);
                    }
                }
            }
            Input::Compact { reply } => {
                // Whoever watches learns why nothing happens yet.
                if current.is_some() || !queue.is_empty() {
                    let why = "compaction requested: it runs when the turns before it end";
                    conv.emit(&*kernel, Event::notice(conv.id, None, "info", why));
                }
                queue.push_back(Job::Compact(reply));
            }
            Input::Clear { reply } => {
                if current.is_some() || !queue.is_empty() {
                    let why = "clear requested: the context starts afresh when the turns before it end";
                    conv.emit(&*kernel, Event::notice(conv.id, None, "info", why));
                }
                queue.push_back(Job::Clear(reply));
            }
            Input::Cancel { reply } => {
                let cancelled = match &current {
                    Some((_, token)) => {
                        kernel.questions.cancel_conversation(conv.id);
                        token.cancel();
                        true
                    }
                    None => false,
                };
                let _ = reply.send(cancelled);
            }
            Input::TurnEnded { turn_id } => {
                if current.as_ref().is_some_and(|(running, _)| *running == Running::Turn(turn_id)) {
                    current = None;
                    *lock(&conv.running) = None;
                    kernel.activity.turn_ended();
                }
            }
            Input::CompactionEnded => {
                if current.as_ref().is_some_and(|(running, _)| *running == Running::Compaction) {
                    current = None;
                }
            }
        }
    }
    // Turns that never started, those queued here and those still in the channel, end as
    // interrupted with their prompts in the history: watchers see every acknowledged turn end.
    // Compactions and clears that never started are refused.
    rx.close();
    while let Ok(input) = rx.try_recv() {
        match input {
            Input::Submit { turn_id, message, ceiling }
            | Input::Steer { steer: Steer { turn_id, message, ceiling }, .. } => {
                queue.push_back(Job::Turn { turn_id, message, ceiling })
            }
            Input::Compact { reply } => queue.push_back(Job::Compact(reply)),
            Input::Clear { reply } => queue.push_back(Job::Clear(reply)),
            _ => {}
        }
    }
    for job in queue {
        match job {
            Job::Turn { turn_id, message, .. } => {
                crate::turn::recovery::interrupt_unstarted(&kernel, &conv, turn_id, &message)
            }
            Job::Compact(reply) | Job::Clear(reply) => {
                let _ = reply.send(Err(ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping")));
            }
        }
    }
    if kernel.shutdown.is_cancelled() || conv.is_fenced() {
        // A stop gives every lease up at its end; a fenced one is not this kernel's.
        return;
    }
    match kernel.store.release(conv.id, &conv.lease) {
        // A prompt another kernel queued as this one let go: run it (claiming again).
        Ok(true) => {
            if let Err(err) = find(&kernel, conv.id) {
                tracing::error!(conversation = conv.id, "loading it again for a queued prompt: {err}");
            }
        }
        Ok(false) => {}
        Err(err) => tracing::warn!(conversation = conv.id, "giving its lease up: {err}"),
    }
}
