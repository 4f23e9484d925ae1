//! A live conversation: its publisher (seq, store, broadcast) and its actor, one event loop
//! over one closed input enum that queues submits and runs one turn at a time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use superpi_proto::{EntryKind, Event, Message};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::kernel::{Kernel, lock};
use crate::store::{Commit, ConversationRow, StoreError};

/// An event as published: serialized once, shared by every watcher.
#[derive(Debug)]
pub(crate) struct Published {
    pub seq: u64,
    pub json: String,
}

/// What a conversation's settings are now.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub harness: String,
    pub model: String,
    pub mode: String,
    pub workspace: Option<String>,
}

pub(crate) enum Input {
    Submit { turn_id: i64, message: Message },
    Cancel { reply: oneshot::Sender<bool> },
    TurnEnded { turn_id: i64 },
}

pub(crate) struct Conversation {
    pub id: i64,
    pub owner: String,
    pub row: ConversationRow,
    pub settings: Mutex<Settings>,
    /// Guards seq assignment, the store commit and the broadcast, so watchers that subscribe
    /// under it see a consistent head.
    seq: Mutex<u64>,
    tx: broadcast::Sender<Arc<Published>>,
    pub input: mpsc::Sender<Input>,
    pub interactive_watchers: AtomicUsize,
    /// Watchers that can answer `read_text_file` questions (editors with unsaved buffers).
    pub file_readers: AtomicUsize,
    /// MCP servers a frontend attached (an editor's), besides the user's own.
    pub mcp_servers: Mutex<std::collections::BTreeMap<String, superpi_policy::McpServerConfig>>,
    pub running: Mutex<Option<i64>>,
    /// The permission policy of this conversation (with the session's allow_always and
    /// reject_always answers), or why it could not be loaded (a bad workspace settings file).
    pub policy: Mutex<Result<superpi_policy::ConversationPolicy, String>>,
    /// Token totals since the conversation went live in this kernel.
    pub usage_total: Mutex<superpi_proto::Usage>,
}

impl Conversation {
    /// Publishes an event: stamps its seq, commits it (with its entry) unless it is a
    /// transient delta, and hands it to every watcher.
    pub fn publish(
        &self,
        kernel: &Kernel,
        mut event: Event,
        entry: Option<(EntryKind, &Message)>,
    ) -> Result<u64, StoreError> {
        let mut seq = lock(&self.seq);
        let next = *seq + 1;
        event.seq = next;
        event.conversation_id = self.id;
        let json = event.to_json();
        if !event.body.is_transient() {
            kernel.store.commit(&Commit {
                conversation_id: self.id,
                seq: next,
                event_type: event.type_name(),
                wire: &json,
                entry: entry.map(|(kind, message)| (kind, event.turn_id, message)),
            })?;
        }
        *seq = next;
        let _ = self.tx.send(Arc::new(Published { seq: next, json }));
        Ok(next)
    }

    /// Publishes, logging a store failure (the turn goes on; the event still reaches watchers).
    pub fn emit(&self, kernel: &Kernel, event: Event) {
        if let Err(err) = self.publish(kernel, event, None) {
            tracing::error!(conversation = self.id, "storing an event failed: {err}");
        }
    }

    /// Subscribes to live events, returning the head seq at that instant: every event with a
    /// greater seq arrives on the receiver, every other one is in the store.
    pub fn subscribe(&self) -> (u64, broadcast::Receiver<Arc<Published>>) {
        let seq = lock(&self.seq);
        (*seq, self.tx.subscribe())
    }

    pub fn head_seq(&self) -> u64 {
        *lock(&self.seq)
    }

    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    pub fn is_running(&self) -> bool {
        lock(&self.running).is_some()
    }

    pub fn has_interactive_watcher(&self) -> bool {
        self.interactive_watchers.load(Ordering::Relaxed) > 0
    }
}

/// The live conversation of an id, loading it (and starting its actor) on first use.
pub(crate) fn live(kernel: &Arc<Kernel>, id: i64) -> Result<Option<Arc<Conversation>>, StoreError> {
    if let Some(conv) = lock(&kernel.live).get(&id) {
        return Ok(Some(conv.clone()));
    }
    let Some(row) = kernel.store.conversation(id)? else { return Ok(None) };
    let head = kernel.store.head_seq(id)?;
    let mut live = lock(&kernel.live);
    if let Some(conv) = live.get(&id) {
        return Ok(Some(conv.clone()));
    }
    let policy =
        kernel.catalog.conversation_policy(&row.harness, &row.mode, row.workspace.as_deref().map(std::path::Path::new));
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
    let (input, rx) = mpsc::channel(64);
    let (tx, _) = broadcast::channel(kernel.config.event_buffer.max(16));
    let conv = Arc::new(Conversation {
        id,
        owner: row.owner.clone(),
        settings: Mutex::new(Settings {
            harness: row.harness.clone(),
            model: row.model.clone(),
            mode: row.mode.clone(),
            workspace: row.workspace.clone(),
        }),
        row,
        seq: Mutex::new(head),
        tx,
        input,
        interactive_watchers: AtomicUsize::new(0),
        file_readers: AtomicUsize::new(0),
        mcp_servers: Mutex::default(),
        running: Mutex::new(None),
        policy: Mutex::new(policy),
        usage_total: Mutex::new(Default::default()),
    });
    live.insert(id, conv.clone());
    drop(live);
    tokio::spawn(actor(kernel.clone(), conv.clone(), rx));
    Ok(Some(conv))
}

async fn actor(kernel: Arc<Kernel>, conv: Arc<Conversation>, mut rx: mpsc::Receiver<Input>) {
    let mut queue: VecDeque<(i64, Message)> = VecDeque::new();
    let mut current: Option<(i64, CancellationToken)> = None;
    loop {
        let input = tokio::select! {
            input = rx.recv() => input,
            _ = kernel.shutdown.cancelled() => None,
        };
        let Some(input) = input else { break };
        match input {
            Input::Submit { turn_id, message } => queue.push_back((turn_id, message)),
            Input::Cancel { reply } => {
                let cancelled = match &current {
                    Some((_, token)) => {
                        crate::questions::cancel_questions(&kernel, conv.id);
                        token.cancel();
                        true
                    }
                    None => false,
                };
                let _ = reply.send(cancelled);
            }
            Input::TurnEnded { turn_id } => {
                if current.as_ref().is_some_and(|(id, _)| *id == turn_id) {
                    current = None;
                    *lock(&conv.running) = None;
                    kernel.running_turns.fetch_sub(1, Ordering::Relaxed);
                    kernel.touch();
                }
            }
        }
        if current.is_none()
            && let Some((turn_id, message)) = queue.pop_front()
        {
            let token = kernel.shutdown.child_token();
            current = Some((turn_id, token.clone()));
            *lock(&conv.running) = Some(turn_id);
            kernel.running_turns.fetch_add(1, Ordering::Relaxed);
            let (k, c) = (kernel.clone(), conv.clone());
            tokio::spawn(async move {
                crate::turn::run(&k, &c, turn_id, message, token).await;
                let _ = c.input.send(Input::TurnEnded { turn_id }).await;
            });
        }
    }
    // Shutting down: turns still queued are marked by recovery at the next start.
}
