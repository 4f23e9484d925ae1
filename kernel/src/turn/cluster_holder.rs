//! What only the kernel that runs a conversation (its lease holder) can do, asked through
//! another kernel on the same database and passed on through the store. A question the holder
//! asks is recorded in the store while it is open; an answer given through another kernel is
//! checked there (the asking conversation's principal, the remote ceiling), written into the
//! question's row, and the holder, told, hands it to its asker. A mode or model changed through
//! another kernel is written to the conversation's row; the holder, told, applies it and
//! publishes `mode_changed`. The holder asks the interactive (and file-reading) watchers other
//! kernels say they have (`remote_watchers.rs`) as it asks its own, and sends its deltas while
//! any watch. On SQLite (one kernel per
//! file) none of this runs.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use superpi_policy::Mode;
use superpi_proto::Event;

use crate::conversation::Conversation;
use crate::conversation::questions::{Answerer, NotOpen, Refused, above_remote_ceiling};
use crate::kernel::Kernel;
use crate::sync::lock;
use superpi_store::{OpenQuestion, QuestionKind, Watchers};

/// Records a question this kernel asks, so a frontend attached to another kernel can answer it.
pub(crate) fn question_opened(
    kernel: &Kernel,
    conv: &Conversation,
    request_id: &str,
    kind: QuestionKind,
    remote_may_allow: bool,
) {
    if !kernel.store.shared() {
        return;
    }
    let question = OpenQuestion {
        request_id: request_id.to_string(),
        conversation_id: conv.id,
        owner: conv.owner.clone(),
        kind,
        remote_may_allow,
    };
    if let Err(err) = kernel.store.open_question(&question) {
        tracing::warn!(conversation = conv.id, "recording a question for the other kernels: {err}");
    }
}

/// The question is closed: nobody answers it through another kernel any more.
pub(crate) fn question_closed(kernel: &Kernel, request_id: &str) {
    if kernel.store.shared()
        && let Err(err) = kernel.store.close_question(request_id)
    {
        tracing::warn!("closing a question for the other kernels: {err}");
    }
}

/// Whether someone can be asked about a call of this conversation: a watcher of its feed that
/// answers questions, or one following it through the store.
pub(crate) fn interactive_watcher(kernel: &Kernel, conv: &Conversation) -> bool {
    conv.has_interactive_watcher() || stored_watchers(kernel, conv.id).interactive > 0
}

/// Whether an editor watches this conversation, through its feed or through the store.
pub(crate) fn file_reader(kernel: &Kernel, conv: &Conversation) -> bool {
    conv.file_readers.load(Ordering::Relaxed) > 0 || stored_watchers(kernel, conv.id).readers > 0
}

/// Looks again whether frontends follow this conversation run here through the store: while
/// any do, its deltas are sent to them through the store (`cluster_relay.rs`). One look at a
/// time, so a look begun before a watcher was counted never has the last word.
pub(crate) fn refresh_watched(kernel: &Kernel, conv: &Conversation) {
    if kernel.store.shared() {
        conv.relay.refresh(|| stored_watchers(kernel, conv.id).watching > 0);
    }
}

/// The watchers that follow a conversation through the store: those other kernels said they
/// have, and this kernel's own that began to watch while another kernel ran it (it may run it
/// now, when the other let it go or died: they hear its deltas and questions through the store
/// as the others do, or would hear only its committed events).
fn stored_watchers(kernel: &Kernel, conversation_id: i64) -> Watchers {
    if !kernel.store.shared() {
        return Watchers::default();
    }
    let here = kernel.remote_watchers.here(conversation_id);
    let elsewhere = kernel.store.watchers_elsewhere(conversation_id, &kernel.id).unwrap_or_else(|err| {
        tracing::warn!(conversation = conversation_id, "reading the watchers other kernels have: {err}");
        Watchers::default()
    });
    Watchers {
        watching: here.watching.saturating_add(elsewhere.watching),
        interactive: here.interactive.saturating_add(elsewhere.interactive),
        readers: here.readers.saturating_add(elsewhere.readers),
    }
}

/// The question another kernel asked, open and unanswered, when `principal` may answer it.
fn stored_question(kernel: &Kernel, principal: &str, request_id: &str, kind: QuestionKind) -> Option<OpenQuestion> {
    if !kernel.store.shared() {
        return None;
    }
    match kernel.store.question(request_id) {
        Ok(Some(question)) if question.owner == principal && question.kind == kind => Some(question),
        Ok(_) => None,
        Err(err) => {
            tracing::warn!("reading a question another kernel asked: {err}");
            None
        }
    }
}

fn store_answer(kernel: &Kernel, request_id: &str, answer: &Value) -> bool {
    kernel.store.answer_question(request_id, &answer.to_string()).unwrap_or_else(|err| {
        tracing::warn!("storing an answer for another kernel: {err}");
        false
    })
}

/// Whether an answer given through this kernel to a question it asked came before any given
/// through another kernel (the store decides; on a store only this kernel uses, always).
pub(crate) fn first_answer(kernel: &Kernel, request_id: &str, answer: &Value) -> bool {
    if !kernel.store.shared() {
        return true;
    }
    kernel.store.answer_first(request_id, &answer.to_string()).unwrap_or_else(|err| {
        // Unsure which came first: this one is refused; the question stays open for another.
        tracing::warn!("storing an answer given here: {err}");
        false
    })
}

/// Answers a permission question another kernel asked (none of this kernel's is open under that
/// id), with the checks an answer there gets: whether the option is one it offered.
pub(crate) fn answer_permission(
    kernel: &Kernel,
    by: Answerer<'_>,
    request_id: &str,
    option_id: &str,
) -> Result<bool, Refused> {
    let question = stored_question(kernel, by.principal, request_id, QuestionKind::Permission);
    let question = question.ok_or(Refused::NotOpen)?;
    if above_remote_ceiling(by, option_id, question.remote_may_allow) {
        return Err(Refused::AboveRemoteCeiling);
    }
    if !store_answer(kernel, request_id, &json!(option_id)) {
        return Err(Refused::NotOpen);
    }
    Ok(superpi_proto::event::is_permission_option(option_id))
}

/// Answers a `ui_request` another kernel asked: true once the answer is stored for its asker.
pub(crate) fn answer_ui(kernel: &Kernel, principal: &str, request_id: &str, outcome: &Value) -> Result<bool, NotOpen> {
    stored_question(kernel, principal, request_id, QuestionKind::Ui).ok_or(NotOpen)?;
    store_answer(kernel, request_id, outcome).then_some(true).ok_or(NotOpen)
}

/// Told that answers were stored for a conversation this kernel runs: hands them to its askers.
pub(crate) fn answers_stored(kernel: &Kernel, conversation_id: i64) {
    match kernel.live.get(conversation_id) {
        Some(conv) if !conv.is_fenced() => {}
        // Another kernel's conversation: its answers are that kernel's to take.
        _ => return,
    }
    let answers = match kernel.store.take_answers(conversation_id) {
        Ok(answers) => answers,
        Err(err) => {
            tracing::error!(conversation = conversation_id, "taking answers given through another kernel: {err}");
            return;
        }
    };
    for (request_id, answer) in answers {
        let answer = serde_json::from_str(&answer).unwrap_or(Value::Null);
        if !kernel.questions.deliver(&request_id, answer) {
            tracing::debug!(conversation = conversation_id, "an answer came after its question closed");
        }
    }
}

/// Told that a conversation this kernel runs had its settings (mode, model, effort) changed
/// through another kernel, by a frontend that is `remote` or not: applies the stored ones (a
/// mode change is published as `mode_changed`, with that frontend's ceiling as `max_mode`).
pub(crate) fn settings_stored(kernel: &Kernel, conversation_id: i64, remote: bool) {
    let Some(conv) = kernel.live.get(conversation_id) else { return };
    let (mode, harness) = {
        // Read under the settings' lock, which a change here holds while it writes the row: the
        // row read is never older than what memory holds.
        let mut settings = lock(&conv.settings);
        let row = match kernel.store.conversation(conversation_id) {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(err) => {
                tracing::error!(conversation = conversation_id, "reading settings changed elsewhere: {err}");
                return;
            }
        };
        settings.model = row.model;
        settings.effort = row.settings.effort;
        settings.extra_dirs = row.settings.extra_dirs;
        settings.system_prompt = row.settings.system_prompt;
        if settings.mode == row.mode {
            return;
        }
        settings.mode = row.mode.clone();
        (row.mode, settings.harness.clone())
    };
    match mode.parse::<Mode>() {
        Ok(parsed) => {
            if let Ok(policy) = lock(&conv.policy).as_mut() {
                policy.set_mode(parsed);
            }
        }
        Err(_) => tracing::warn!(conversation = conversation_id, mode, "an unknown mode was stored"),
    }
    let max_mode = kernel.catalog.harness(Some(&harness)).ok().map(|h| kernel.catalog.max_mode(h, remote));
    conv.emit(kernel, Event::mode_changed(conversation_id, mode, max_mode.map(|m| m.as_str().to_string())));
}
