//! `session.compact` and `session.clear` asked through a kernel that does not run the
//! conversation: queued in the store (`forwarded_jobs`) for the kernel that does (its lease
//! holder), which takes each once, runs it in the conversation's actor between turns as it
//! runs its own, and stores the answer; the asking kernel answers its caller with it. A holder
//! that dies with a job taken gives it back (the next claim does), and the asking kernel tells
//! whoever runs the conversation again every [`LOOK_AGAIN`] until the answer comes, taking the
//! conversation over itself when nobody holds it. On SQLite every conversation runs here and
//! none of this runs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::live::{self, Found};
use superpi_store::{JobKind, Notice, StoreError};

/// How long the asking kernel waits for a word before it looks at the job again.
const LOOK_AGAIN: Duration = Duration::from_secs(2);

fn store_error(err: StoreError) -> ErrorObject {
    tracing::error!("store error: {err}");
    ErrorObject::new(codes::INTERNAL_ERROR, format!("store error: {err}"))
}

/// Asks the kernel that runs the conversation to run a job, and waits for its answer.
pub(crate) async fn forward(kernel: &Arc<Kernel>, conversation_id: i64, kind: JobKind) -> Result<Value, ErrorObject> {
    // Subscribed before the job is queued: an answer after it wakes the wait below.
    let mut answered = kernel.job_answers.subscribe();
    let job = kernel.store.queue_job(conversation_id, kind).map_err(store_error)?;
    let mut told = true;
    loop {
        answered.borrow_and_update();
        if let Some(answer) = kernel.store.take_job_answer(job).map_err(store_error)? {
            return read_answer(&answer);
        }
        if !told {
            // Its holder may have let it go, or died and been replaced: whoever runs it now is
            // told again, and when nobody does, this kernel takes it over and runs the job.
            match live::find(kernel, conversation_id) {
                Ok(Some(Found::Here(conv))) => drop(tokio::spawn(run(kernel.clone(), conv))),
                Ok(_) => {
                    if let Err(err) = kernel.store.notify(Notice::Job { conversation_id }) {
                        tracing::warn!(conversation = conversation_id, "telling its kernel of a job again: {err}");
                    }
                }
                Err(err) => tracing::warn!(conversation = conversation_id, "looking for its kernel: {err}"),
            }
        }
        told = tokio::select! {
            changed = answered.changed() => changed.is_ok(),
            _ = tokio::time::sleep(LOOK_AGAIN) => false,
            _ = kernel.shutdown.cancelled() => {
                return Err(ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping"));
            }
        };
    }
}

/// Runs the jobs other kernels queued for a conversation run here, in order, storing each
/// answer for the kernel that waits for it.
pub(crate) async fn run(kernel: Arc<Kernel>, conv: Arc<Conversation>) {
    if conv.is_fenced() {
        return;
    }
    let jobs = match kernel.store.take_jobs(conv.id, &conv.lease) {
        Ok(jobs) => jobs,
        Err(err) => {
            tracing::error!(conversation = conv.id, "taking the jobs other kernels queued: {err}");
            return;
        }
    };
    for (job, kind) in jobs {
        let answer = match kind {
            JobKind::Compact => crate::turn::compaction::on_demand(&conv).await,
            JobKind::Clear => crate::turn::compaction::clear_between_turns(&conv).await,
        };
        let answer = match answer {
            Ok(result) => json!({"result": result}),
            Err(error) => json!({"error": error}),
        };
        if let Err(err) = kernel.store.answer_job(job, &answer.to_string()) {
            tracing::error!(conversation = conv.id, job, "storing a job's answer: {err}");
        }
    }
}

/// A job's stored answer, as the method's.
fn read_answer(answer: &str) -> Result<Value, ErrorObject> {
    let mut answer: Value = serde_json::from_str(answer)
        .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("a job's stored answer: {e}")))?;
    if let Some(error) = answer.get_mut("error").map(Value::take) {
        return Err(serde_json::from_value(error)
            .unwrap_or_else(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("a job's stored error: {e}"))));
    }
    Ok(answer.get_mut("result").map(Value::take).unwrap_or(Value::Null))
}
