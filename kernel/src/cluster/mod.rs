//! Several kernels on one database. While this kernel lives it renews the leases of the
//! conversations it runs (every third of a lease), stops a conversation whose lease another
//! kernel took (it stalled past the expiry), and takes over conversations with work and no live
//! holder (a dead kernel's running turns end as interrupted, prompts queued for it run here).
//! It hears the other kernels through the store: an event committed wakes this kernel's
//! watchers of a conversation run elsewhere, and its deltas reach them; this kernel tells its
//! own deltas to the others' watchers (`relay.rs`); a prompt queued, or a cancel, for a conversation
//! run here reaches its actor, and so does a compaction or clear (`forwarded_jobs.rs`); an answer, or a mode or model change, given through another
//! kernel reaches the conversation run here (`elsewhere.rs`).

pub(crate) mod jobs;

use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::oneshot;

use crate::conversation::{Conversation, Input, Steer};
use crate::kernel::Kernel;
use crate::live;
use crate::turn::cluster_holder;
use superpi_store::{Heard, Notice, StoreError};

/// Takes over the conversations that have work and no live holder: at start (on SQLite, all
/// of them: their holder was this data directory's previous kernel) and at each renewal.
pub(crate) fn adopt_orphans(kernel: &Arc<Kernel>) -> Result<(), StoreError> {
    for id in kernel.store.orphans()? {
        match live::find(kernel, id) {
            Ok(Some(live::Found::Here(_))) => tracing::info!(conversation = id, "took over a conversation"),
            Ok(_) => {}
            Err(err) => tracing::error!(conversation = id, "taking over a conversation: {err}"),
        }
    }
    Ok(())
}

/// Renews this kernel's leases; a live conversation whose lease is gone stops here.
fn renew(kernel: &Kernel) -> Result<(), StoreError> {
    // Listed before the renewal: one claimed after it is not yet among those renewed.
    let live = kernel.live.leases();
    let held: std::collections::HashSet<(i64, i64)> =
        kernel.store.renew(&kernel.id, live::lease_ms(kernel))?.into_iter().collect();
    kernel.remote_watchers.renew();
    for (id, generation) in live {
        if !held.contains(&(id, generation))
            && let Some(conv) = kernel.live.get(id)
            && conv.lease.generation == generation
        {
            conv.fence();
        }
    }
    Ok(())
}

/// Renews, adopts and listens until the kernel stops.
pub(crate) async fn run(kernel: Arc<Kernel>) {
    let mut notices = kernel.store.notices();
    let mut tick = tokio::time::interval((kernel.config.lease_ttl / 3).max(std::time::Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = kernel.shutdown.cancelled() => return,
            _ = tick.tick() => {
                if let Err(err) = renew(&kernel) {
                    tracing::error!("renewing this kernel's leases: {err}");
                }
                if let Err(err) = adopt_orphans(&kernel) {
                    tracing::error!("looking for conversations without a live kernel: {err}");
                }
            }
            // In the order said: a batch of deltas reaches the watchers here before the notice of
            // the commit that follows it wakes them.
            heard_now = next(&mut notices) => match heard_now {
                Heard::Live(batch) => kernel.stored_heads.live(batch),
                Heard::Notice(notice) => heard(&kernel, notice),
            },
        }
    }
}

/// Tells the store the deltas waiting for watchers on other kernels, conversation by
/// conversation as they come, until the kernel stops (`relay.rs`).
pub(crate) async fn relay(kernel: Arc<Kernel>) {
    loop {
        let queued = tokio::select! {
            queued = kernel.relay_queue.next() => queued,
            _ = kernel.shutdown.cancelled() => return,
        };
        for id in queued {
            let Some(conv) = kernel.live.get(id) else { continue };
            let Some(sending) = conv.relay.sending() else { continue };
            let events = conv.relay.take(&sending);
            if events.is_empty() {
                continue;
            }
            if let Err(err) = kernel.store.tell_live(id, &events) {
                tracing::warn!(conversation = id, "telling other kernels' watchers its deltas: {err}");
            }
        }
    }
}

/// What is heard next; `Missed` when this kernel fell behind; never when there is nobody to hear.
async fn next(notices: &mut Option<broadcast::Receiver<Heard>>) -> Heard {
    let Some(receiver) = notices else { return std::future::pending().await };
    match receiver.recv().await {
        Ok(heard) => heard,
        Err(RecvError::Lagged(_)) => Heard::Notice(Notice::Missed),
        Err(RecvError::Closed) => {
            *notices = None;
            Heard::Notice(Notice::Missed)
        }
    }
}

fn heard(kernel: &Arc<Kernel>, notice: Notice) {
    match notice {
        Notice::Event { conversation_id, seq } => kernel.stored_heads.committed(conversation_id, seq),
        Notice::Submit { conversation_id } => {
            if let Some(conv) = kernel.live.get(conversation_id) {
                tokio::spawn(forward_queued(kernel.clone(), conv));
            }
        }
        Notice::Cancel { conversation_id } => {
            if let Some(conv) = kernel.live.get(conversation_id) {
                let (reply, _) = oneshot::channel();
                let _ = conv.input.try_send(Input::Cancel { reply });
            }
        }
        Notice::Answer { conversation_id } => {
            let kernel = kernel.clone();
            tokio::task::spawn_blocking(move || cluster_holder::answers_stored(&kernel, conversation_id));
        }
        Notice::Settings { conversation_id, remote } => {
            let kernel = kernel.clone();
            tokio::task::spawn_blocking(move || cluster_holder::settings_stored(&kernel, conversation_id, remote));
        }
        Notice::Watchers { conversation_id } => {
            if let Some(conv) = kernel.live.get(conversation_id) {
                tokio::task::spawn_blocking({
                    let kernel = kernel.clone();
                    move || cluster_holder::refresh_watched(&kernel, &conv)
                });
            }
        }
        Notice::Job { conversation_id } => {
            if let Some(conv) = kernel.live.get(conversation_id) {
                tokio::spawn(jobs::run(kernel.clone(), conv));
            }
        }
        Notice::JobDone => kernel.job_answers.send_modify(|n| *n += 1),
        Notice::Missed => {
            kernel.stored_heads.wake_all();
            kernel.job_answers.send_modify(|n| *n += 1);
            let live = kernel.live.leases();
            for (id, _) in &live {
                if let Some(conv) = kernel.live.get(*id) {
                    tokio::spawn(forward_queued(kernel.clone(), conv.clone()));
                    tokio::spawn(jobs::run(kernel.clone(), conv));
                }
            }
            // What was answered or changed meanwhile, looked up again.
            let kernel = kernel.clone();
            tokio::task::spawn_blocking(move || {
                for id in kernel.questions.asking() {
                    cluster_holder::answers_stored(&kernel, id);
                }
                // Who changed them is lost with the notice: the local ceiling stands in.
                for (id, _) in live {
                    if let Some(conv) = kernel.live.get(id) {
                        cluster_holder::refresh_watched(&kernel, &conv);
                    }
                    cluster_holder::settings_stored(&kernel, id, false);
                }
            });
        }
    }
}

/// Hands the prompts other kernels queued for a conversation run here to its actor.
async fn forward_queued(kernel: Arc<Kernel>, conv: Arc<Conversation>) {
    for queued in live::take_queued(&kernel, &conv) {
        let (turn_id, message, ceiling) = (queued.turn_id, queued.message, queued.ceiling);
        let input = match queued.steer {
            true => Input::Steer { steer: Steer { turn_id, message, ceiling }, reply: oneshot::channel().0 },
            false => Input::Submit { turn_id, message, ceiling },
        };
        if conv.input.send(input).await.is_err() {
            // The actor stopped: the turn stays queued in the store, and whoever holds the
            // conversation next ends it as interrupted with its prompt in the history.
            tracing::warn!(conversation = conv.id, turn_id, "a queued prompt found its conversation stopping");
        }
    }
}
