//! A live conversation: its settings, its publisher (seq, store, feed), what its actor reads
//! (`live.rs` runs the actor), and the table of live conversations. It does not name the
//! kernel: it reaches the store through [`EventStore`].
//!
//! Over 500 lines: the conversation's state and its publisher (seq, store commit, hand-out to
//! the feed) belong together; its table of live conversations is the piece that could move out.

pub(crate) mod cluster_relay;
pub(crate) mod feed;
pub(crate) mod images;
pub(crate) mod questions;
pub(crate) mod status;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use superpi_policy::{ConversationPolicy, Mode};
use superpi_proto::{EntryKind, ErrorObject, Event, Message};
use tokio::sync::{mpsc, oneshot, watch};

use crate::conversation::cluster_relay::DeltaRelay;
pub(crate) use crate::conversation::feed::Published;
use crate::conversation::feed::{Feed, FeedBounds, Take};
use crate::sync::lock;
use superpi_store::{Commit, ConversationRow, Lease, Store, StoreError, TurnStatus};

/// Where a conversation commits its events: the store, reached through whatever holds it (the
/// kernel). A trait so this module never names the kernel, which holds the conversations.
pub(crate) trait EventStore {
    fn event_store(&self) -> &dyn Store;

    /// A conversation has deltas waiting for the watchers other kernels have of it (`relay.rs`):
    /// whoever relays them is told. A store alone relays nothing.
    fn deltas_waiting(&self, _conversation_id: i64) {}
}

// A store alone is an event store (tests, and whatever holds a store but no kernel).
macro_rules! store_is_event_store {
    ($($store:ty),*) => {$(
        impl EventStore for $store {
            fn event_store(&self) -> &dyn Store {
                self
            }
        }
    )*};
}
store_is_event_store!(dyn Store, superpi_store::SqliteStore, superpi_store::PostgresStore);

impl<T: EventStore + ?Sized> EventStore for Arc<T> {
    fn event_store(&self) -> &dyn Store {
        (**self).event_store()
    }

    fn deltas_waiting(&self, conversation_id: i64) {
        (**self).deltas_waiting(conversation_id)
    }
}

/// What a conversation's settings are now.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub harness: String,
    pub model: String,
    pub mode: String,
    pub workspace: Option<String>,
    /// The thinking effort of its model requests.
    pub effort: Option<superpi_proto::Effort>,
    /// Directories its tools may write besides the workspace (canonical).
    pub extra_dirs: Vec<String>,
    /// A frontend's instructions, after the harness's system prompt.
    pub system_prompt: Option<String>,
    /// The highest mode it may take, when lower than its harness's (kept by a hand-off).
    pub mode_ceiling: Option<Mode>,
}

pub(crate) enum Input {
    /// A prompt to run as a turn, at most in `ceiling` (the submitter's highest mode: a remote
    /// caller's ceiling, whatever mode the conversation has stored).
    Submit {
        turn_id: i64,
        /// Boxed: the channel's first block holds 32 inputs in every live conversation.
        message: Box<Message>,
        ceiling: Mode,
    },
    /// A prompt for the running turn (`session.submit` with `steer`): it joins that turn,
    /// whose id is the reply, or, with no turn taking it, queues as `Submit` would (`None`).
    Steer {
        steer: Steer,
        reply: oneshot::Sender<Option<i64>>,
    },
    Cancel {
        reply: oneshot::Sender<bool>,
    },
    TurnEnded {
        turn_id: i64,
    },
    /// `session.compact`: compacts the context between turns, after the running one and those
    /// queued before it; the reply is the method's answer.
    Compact {
        reply: oneshot::Sender<Result<serde_json::Value, ErrorObject>>,
    },
    /// `session.clear`: starts the context afresh between turns, after the running one and
    /// those queued before it; the reply is the method's answer.
    Clear {
        reply: oneshot::Sender<Result<serde_json::Value, ErrorObject>>,
    },
    /// The compaction a `Compact` started is over.
    CompactionEnded,
}

/// A prompt that joins the running turn: its own turn row (which holds it until it joins, so
/// an acknowledged one survives a kill), the message, and its submitter's ceiling.
pub(crate) struct Steer {
    pub turn_id: i64,
    pub message: Box<Message>,
    pub ceiling: Mode,
}

/// The running turn's door for steering prompts: open while it can still take one (until it
/// has decided to end), and the prompts waiting for its next model request.
#[derive(Default)]
pub(crate) struct Steering {
    open: bool,
    waiting: Vec<Steer>,
}

impl Steering {
    /// A turn starts: it takes prompts from now on.
    pub fn open(&mut self) {
        self.open = true;
    }

    /// Hands `steer` to the running turn, or back when none takes it.
    pub fn offer(&mut self, steer: Steer) -> Result<(), Steer> {
        if !self.open {
            return Err(steer);
        }
        self.waiting.push(steer);
        Ok(())
    }

    /// The prompts waiting for the next model request.
    pub fn take(&mut self) -> Vec<Steer> {
        std::mem::take(&mut self.waiting)
    }

    /// The turn ends: it takes no more, and hands back those that came too late to join it.
    pub fn close(&mut self) -> Vec<Steer> {
        self.open = false;
        self.take()
    }

    /// The turn would end: it closes unless prompts wait, which it then takes instead.
    pub fn close_unless_waiting(&mut self) -> bool {
        if self.waiting.is_empty() {
            self.open = false;
            true
        } else {
            false
        }
    }
}

pub(crate) struct Conversation {
    pub id: i64,
    pub owner: String,
    pub row: ConversationRow,
    /// This kernel's lease on it: every commit names it, and is refused once another kernel
    /// took the conversation over.
    pub lease: Lease,
    /// Another kernel took it over: it commits nothing more, its turn is cancelled, and it
    /// leaves this kernel's memory.
    fenced: std::sync::atomic::AtomicBool,
    pub settings: Mutex<Settings>,
    /// Held by one publisher at a time across seq assignment, the store commit and the hand-out,
    /// so seqs are committed and handed out in order.
    publishing: Mutex<()>,
    /// The events some watcher has not taken. Locked only to hand an event out, to join, leave or
    /// take: a watcher taking events never waits on a store commit or a serialization. A watcher
    /// that joins between a commit and its hand-out gets the head before it and takes the event
    /// from the feed, so the store up to the head and the feed after it still cover everything.
    feed: Mutex<Feed>,
    /// Turns at each publish, waking the watchers.
    published: watch::Sender<u64>,
    /// When a request or a watcher last let go of it: it leaves memory after a quiet period.
    last_used: Mutex<std::time::Instant>,
    pub input: mpsc::Sender<Input>,
    pub interactive_watchers: AtomicUsize,
    /// Watchers that can answer `read_text_file` questions (editors with unsaved buffers).
    pub file_readers: AtomicUsize,
    /// Watchers here that can show a URL (`ui_request` of kind `url`); not counted across
    /// kernels: a conversation followed through another kernel gets no URL login.
    pub url_openers: AtomicUsize,
    /// MCP servers a frontend attached (an editor's), besides the user's own.
    pub mcp_servers: Mutex<std::collections::BTreeMap<String, superpi_policy::McpServerConfig>>,
    /// The MCP tools of its latest turn: the only ones it can call.
    pub mcp_attached: Mutex<superpi_mcp_client::Attached>,
    /// The deferred MCP tools its `tool_search` calls found: offered from then on.
    pub mcp_loaded: Mutex<std::collections::BTreeSet<String>>,
    /// The tools frontends offered with their prompts, by the turn they submitted, until
    /// that turn takes them (`turn/client_tools.rs`).
    pub client_tools: Mutex<std::collections::HashMap<i64, Vec<superpi_proto::method::ClientTool>>>,
    /// The output schemas prompts were submitted with, by their turn, until that turn takes
    /// its own (`turn/structured.rs`).
    pub output_schemas: Mutex<std::collections::HashMap<i64, serde_json::Value>>,
    pub running: Mutex<Option<i64>>,
    /// The highest mode the running turn's tool calls run in (its submitter's ceiling, lowered
    /// by steering prompts): what a subagent it starts may have at most.
    pub turn_ceiling: Mutex<Option<Mode>>,
    /// The model the running turn's steps use (a cascade's escalation moves it on).
    pub turn_model: Mutex<Option<String>>,
    /// Prompts that steer the running turn.
    pub steering: Mutex<Steering>,
    /// The permission policy of this conversation (with the session's allow_always and
    /// reject_always answers), or why it could not be loaded (a bad workspace settings file).
    pub policy: Mutex<Result<superpi_policy::ConversationPolicy, String>>,
    /// Token totals since the conversation went live in this kernel.
    pub usage_total: Mutex<superpi_proto::Usage>,
    /// What it spent, in all and in its running turn (`turn/cost.rs`).
    pub spend: Mutex<crate::spend::ConversationSpend>,
    /// Set while the conversation's context is compacted: one compaction at a time.
    pub compacting: std::sync::atomic::AtomicBool,
    /// Its deltas for the watchers other kernels have of it.
    pub relay: DeltaRelay,
    /// The rules files of directories below the workspace its context already holds in tool
    /// results (features/rules.rs); None until read from the context, and after a compaction.
    pub rules_shown: Mutex<Option<std::collections::HashSet<std::path::PathBuf>>>,
    /// What its `session_start` hooks added for the model (`None`: they have not run here).
    pub session_context: Mutex<Option<String>>,
    /// What its actor is doing, as its watchers were told (`status.rs`).
    pub status: status::Status,
}

impl Conversation {
    /// A conversation loaded from its row, its head seq and its policy (or why that could not
    /// load), and the receiver its actor reads.
    pub fn new(
        row: ConversationRow,
        lease: Lease,
        head: u64,
        policy: Result<ConversationPolicy, String>,
        bounds: FeedBounds,
    ) -> (Arc<Conversation>, mpsc::Receiver<Input>) {
        let (input, rx) = mpsc::channel(64);
        let conv = Arc::new(Conversation {
            id: row.id,
            owner: row.owner.clone(),
            settings: Mutex::new(Settings {
                harness: row.harness.clone(),
                model: row.model.clone(),
                mode: row.mode.clone(),
                workspace: row.workspace.clone(),
                effort: row.settings.effort,
                extra_dirs: row.settings.extra_dirs.clone(),
                system_prompt: row.settings.system_prompt.clone(),
                mode_ceiling: row.settings.mode_ceiling.as_deref().and_then(|m| m.parse().ok()),
            }),
            row,
            lease,
            fenced: Default::default(),
            publishing: Mutex::new(()),
            feed: Mutex::new(Feed::new(head, bounds)),
            published: watch::Sender::new(head),
            last_used: Mutex::new(std::time::Instant::now()),
            input,
            interactive_watchers: AtomicUsize::new(0),
            file_readers: AtomicUsize::new(0),
            url_openers: AtomicUsize::new(0),
            mcp_servers: Mutex::default(),
            mcp_attached: Mutex::default(),
            mcp_loaded: Mutex::default(),
            client_tools: Mutex::default(),
            output_schemas: Mutex::default(),
            running: Mutex::new(None),
            turn_ceiling: Mutex::new(None),
            turn_model: Mutex::new(None),
            steering: Mutex::default(),
            policy: Mutex::new(policy),
            usage_total: Mutex::new(Default::default()),
            spend: Mutex::default(),
            compacting: std::sync::atomic::AtomicBool::new(false),
            rules_shown: Mutex::new(Default::default()),
            session_context: Mutex::new(None),
            status: Default::default(),
            relay: DeltaRelay::default(),
        });
        (conv, rx)
    }

    /// Publishes an event: stamps its seq, commits it (with its entry) unless it is a
    /// transient delta, and hands it to every watcher. A failed commit still reaches the
    /// watchers (and uses its seq): they never wait for an event the store refused. One refused
    /// because another kernel took the conversation over reaches nobody.
    pub fn publish(
        &self,
        store: &impl EventStore,
        event: Event,
        entry: Option<(EntryKind, &Message)>,
    ) -> Result<u64, StoreError> {
        let _publishing = lock(&self.publishing);
        let head = lock(&self.feed).head();
        let (next, json, stored) = self.commit_next(store, head, event, entry, None);
        if let Err(err @ StoreError::Fenced(_)) = stored {
            // Another kernel runs it now: what this one would have said is nobody's.
            return Err(err);
        }
        self.hand_out(Published { seq: next, json }, stored.as_ref().is_ok_and(|kept| *kept));
        stored.map(|_| next)
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
        let _publishing = lock(&self.publishing);
        let head = lock(&self.feed).head();
        let (next, mut json, stored) = self.commit_next(store, head, event, entry, Some(status));
        if let Err(err @ StoreError::Fenced(_)) = stored {
            return Err(err);
        }
        if let Err(err) = &stored
            && ends
        {
            let why = format!("the turn's end could not be stored: {err}");
            let mut error = Event::turn_error(self.id, status.turn_id, why);
            error.seq = next;
            json = error.to_json();
        }
        // The turn is over for everyone who sees its end (its status is `idle` right after
        // it), before the actor hears of it.
        if ends {
            let mut running = lock(&self.running);
            if *running == Some(status.turn_id) {
                *running = None;
            }
        }
        self.hand_out(Published { seq: next, json }, stored.as_ref().is_ok_and(|kept| *kept));
        stored.map(|_| next)
    }

    /// Puts a published event in the feed (under the publish lock) and wakes the watchers.
    fn hand_out(&self, event: Published, stored: bool) {
        let seq = event.seq;
        let event = Arc::new(event);
        lock(&self.feed).push(event, stored);
        self.published.send_replace(seq);
    }

    /// Stamps the event with the seq after `head` and commits it (under the publish lock):
    /// `Ok(true)` when it is now in the store, `Ok(false)` for a transient delta.
    fn commit_next(
        &self,
        store: &impl EventStore,
        head: u64,
        mut event: Event,
        entry: Option<(EntryKind, &Message)>,
        turn_status: Option<TurnStatus<'_>>,
    ) -> (u64, String, Result<bool, StoreError>) {
        let next = head + 1;
        event.seq = next;
        event.conversation_id = self.id;
        let json = event.to_json();
        let stored = if event.body.is_transient() {
            if self.relay.watched() && self.relay.keep(next, &json) {
                store.deltas_waiting(self.id);
            }
            Ok(false)
        } else {
            // The deltas still waiting for the watchers elsewhere go with it, before it.
            let sending = self.relay.sending();
            let live = sending.as_ref().map(|guard| self.relay.take(guard)).unwrap_or_default();
            store
                .event_store()
                .commit(&Commit {
                    conversation_id: self.id,
                    seq: next,
                    event_type: event.type_name(),
                    wire: &json,
                    entry: entry.map(|(kind, message)| (kind, event.turn_id, message)),
                    turn_status,
                    lease: Some(&self.lease),
                    live: &live,
                })
                .map(|()| true)
        };
        if let Err(StoreError::Fenced(_)) = &stored {
            self.fence();
        }
        (next, json, stored)
    }

    /// Another kernel took this conversation over: its running turn is cancelled (its commits
    /// are refused anyway), its watchers are woken to follow it through the store, and its
    /// actor takes it out of memory.
    pub fn fence(&self) {
        if self.retire() {
            tracing::warn!(conversation = self.id, "another kernel took this conversation over: it stops here");
        }
    }

    /// Stops the conversation here as [`Self::fence`] does (it is being deleted, or another
    /// kernel took it over); false when it had stopped already.
    pub fn retire(&self) -> bool {
        if self.fenced.swap(true, Ordering::Relaxed) {
            return false;
        }
        let (reply, _) = oneshot::channel();
        let _ = self.input.try_send(Input::Cancel { reply });
        self.published.send_modify(|_| {});
        true
    }

    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::Relaxed)
    }

    /// Publishes, logging a store failure (the turn goes on; the event still reaches watchers).
    pub fn emit(&self, store: &impl EventStore, event: Event) {
        if let Err(err) = self.publish(store, event, None) {
            tracing::error!(conversation = self.id, "storing an event failed: {err}");
        }
    }

    /// A watcher joins the feed, returning the head seq at that instant: every event with a
    /// greater seq it takes from the feed, every other one is in the store.
    pub fn join(&self, watcher: u64) -> (u64, u64) {
        lock(&self.feed).join(watcher)
    }

    /// A watcher leaves the feed (what only it lacked is dropped).
    pub fn leave(&self, watcher: u64) {
        lock(&self.feed).leave(watcher);
        self.touch();
    }

    /// Up to `most` events after the watcher's place in the feed.
    pub fn take(&self, watcher: u64, most: usize) -> Take {
        lock(&self.feed).take(watcher, most)
    }

    /// A receiver that wakes at each publish.
    pub fn wake(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }

    pub fn head_seq(&self) -> u64 {
        lock(&self.feed).head()
    }

    /// Whether every published event is in the store: then it can leave memory and come back
    /// from the store with the same head.
    pub fn all_stored(&self) -> bool {
        // Not while an event is between its commit and its hand-out.
        let _publishing = lock(&self.publishing);
        lock(&self.feed).all_stored()
    }

    /// Marks it used now: the quiet period before it leaves memory starts again.
    pub fn touch(&self) {
        *lock(&self.last_used) = std::time::Instant::now();
    }

    /// How long since it was last used.
    pub fn quiet_for(&self) -> std::time::Duration {
        lock(&self.last_used).elapsed()
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

    /// Removes `conv` whoever holds it (another kernel took it over).
    pub fn remove(&self, conv: &Arc<Conversation>) {
        let mut live = lock(&self.conversations);
        if live.get(&conv.id).is_some_and(|held| Arc::ptr_eq(held, conv)) {
            live.remove(&conv.id);
        }
    }

    /// The live conversations' ids and lease generations, in id order.
    pub fn leases(&self) -> Vec<(i64, i64)> {
        let mut leases: Vec<(i64, i64)> =
            lock(&self.conversations).values().map(|c| (c.id, c.lease.generation)).collect();
        leases.sort_unstable();
        leases
    }

    /// Removes `conv` (held by the caller, its actor) when nothing else holds it: no request,
    /// watcher or turn. Anyone else reaches it only through this table, under the same lock, so
    /// none can get it afterwards; the next use loads it again from the store.
    pub fn remove_unused(&self, conv: &Arc<Conversation>) -> bool {
        let mut live = lock(&self.conversations);
        // The table's reference and the caller's.
        if Arc::strong_count(conv) > 2 || !live.get(&conv.id).is_some_and(|held| Arc::ptr_eq(held, conv)) {
            return false;
        }
        live.remove(&conv.id);
        true
    }
}
