//! A live conversation: its settings, its publisher (seq, store, broadcast), what its actor
//! reads (`live.rs` runs the actor), and the table of live conversations. It does not name the
//! kernel: it reaches the store through [`EventStore`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use superpi_policy::{ConversationPolicy, Mode};
use superpi_proto::{EntryKind, Event, Message};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::store::{Commit, ConversationRow, Store, StoreError, TurnStatus};
use crate::sync::lock;

/// Where a conversation commits its events: the store, reached through whatever holds it (the
/// kernel). A trait so this module never names the kernel, which holds the conversations.
pub(crate) trait EventStore {
    fn event_store(&self) -> &Store;
}

impl EventStore for Store {
    fn event_store(&self) -> &Store {
        self
    }
}

impl<T: EventStore> EventStore for Arc<T> {
    fn event_store(&self) -> &Store {
        (**self).event_store()
    }
}

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
    /// A prompt to run as a turn, at most in `ceiling` (the submitter's highest mode: a remote
    /// caller's ceiling, whatever mode the conversation has stored).
    Submit {
        turn_id: i64,
        message: Message,
        ceiling: Mode,
    },
    Cancel {
        reply: oneshot::Sender<bool>,
    },
    TurnEnded {
        turn_id: i64,
    },
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
    /// The MCP tools of its latest turn: the only ones it can call.
    pub mcp_attached: Mutex<crate::mcp_client::Attached>,
    pub running: Mutex<Option<i64>>,
    /// The permission policy of this conversation (with the session's allow_always and
    /// reject_always answers), or why it could not be loaded (a bad workspace settings file).
    pub policy: Mutex<Result<superpi_policy::ConversationPolicy, String>>,
    /// Token totals since the conversation went live in this kernel.
    pub usage_total: Mutex<superpi_proto::Usage>,
    /// Set while the conversation's context is compacted: one compaction at a time.
    pub compacting: std::sync::atomic::AtomicBool,
}

impl Conversation {
    /// A conversation loaded from its row, its head seq and its policy (or why that could not
    /// load), and the receiver its actor reads.
    pub fn new(
        row: ConversationRow,
        head: u64,
        policy: Result<ConversationPolicy, String>,
        event_buffer: usize,
    ) -> (Arc<Conversation>, mpsc::Receiver<Input>) {
        let (input, rx) = mpsc::channel(64);
        let (tx, _) = broadcast::channel(event_buffer.max(16));
        let conv = Arc::new(Conversation {
            id: row.id,
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
            mcp_attached: Mutex::default(),
            running: Mutex::new(None),
            policy: Mutex::new(policy),
            usage_total: Mutex::new(Default::default()),
            compacting: std::sync::atomic::AtomicBool::new(false),
        });
        (conv, rx)
    }

    /// Publishes an event: stamps its seq, commits it (with its entry) unless it is a
    /// transient delta, and hands it to every watcher. A failed commit still reaches the
    /// watchers (and uses its seq): they never wait for an event the store refused.
    pub fn publish(
        &self,
        store: &impl EventStore,
        event: Event,
        entry: Option<(EntryKind, &Message)>,
    ) -> Result<u64, StoreError> {
        let mut seq = lock(&self.seq);
        let (next, json, stored) = self.commit_next(store, *seq, event, entry, None);
        *seq = next;
        let _ = self.tx.send(Arc::new(Published { seq: next, json }));
        stored.map(|()| next)
    }

    /// Publishes a turn's start or end with the status it gives the turn, in one transaction.
    /// When that commit fails at a turn's end, watchers get a `turn_error` saying so instead
    /// of the event (the turn stays `running` in the store; the next start marks it
    /// interrupted).
    pub fn publish_turn(
        &self,
        store: &impl EventStore,
        event: Event,
        entry: Option<(EntryKind, &Message)>,
        status: TurnStatus<'_>,
    ) -> Result<u64, StoreError> {
        let ends = event.body.is_turn_end();
        let mut seq = lock(&self.seq);
        let (next, mut json, stored) = self.commit_next(store, *seq, event, entry, Some(status));
        if let Err(err) = &stored
            && ends
        {
            let why = format!("the turn's end could not be stored: {err}");
            let mut error = Event::turn_error(self.id, status.turn_id, why);
            error.seq = next;
            json = error.to_json();
        }
        *seq = next;
        let _ = self.tx.send(Arc::new(Published { seq: next, json }));
        stored.map(|()| next)
    }

    /// Stamps the event with the seq after `head` and commits it (under the seq lock).
    fn commit_next(
        &self,
        store: &impl EventStore,
        head: u64,
        mut event: Event,
        entry: Option<(EntryKind, &Message)>,
        turn_status: Option<TurnStatus<'_>>,
    ) -> (u64, String, Result<(), StoreError>) {
        let next = head + 1;
        event.seq = next;
        event.conversation_id = self.id;
        let json = event.to_json();
        let stored = if event.body.is_transient() {
            Ok(())
        } else {
            store.event_store().commit(&Commit {
                conversation_id: self.id,
                seq: next,
                event_type: event.type_name(),
                wire: &json,
                entry: entry.map(|(kind, message)| (kind, event.turn_id, message)),
                turn_status,
            })
        };
        (next, json, stored)
    }

    /// Publishes, logging a store failure (the turn goes on; the event still reaches watchers).
    pub fn emit(&self, store: &impl EventStore, event: Event) {
        if let Err(err) = self.publish(store, event, None) {
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

/// The kernel's live conversations, by id.
#[derive(Default)]
pub(crate) struct LiveConversations {
    conversations: Mutex<HashMap<i64, Arc<Conversation>>>,
}

impl LiveConversations {
    pub fn get(&self, id: i64) -> Option<Arc<Conversation>> {
        lock(&self.conversations).get(&id).cloned()
    }

    /// Makes `conv` live unless its id already is: `Ok` with it when it was added, `Err` with
    /// the one that was live already.
    pub fn add(&self, conv: Arc<Conversation>) -> Result<Arc<Conversation>, Arc<Conversation>> {
        let mut live = lock(&self.conversations);
        if let Some(existing) = live.get(&conv.id) {
            return Err(existing.clone());
        }
        live.insert(conv.id, conv.clone());
        Ok(conv)
    }

    pub fn len(&self) -> usize {
        lock(&self.conversations).len()
    }
}
