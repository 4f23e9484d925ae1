//! External MCP servers: the user's `mcp_servers` settings and those a frontend attached to a
//! conversation. One server process per workspace and definition ([`ServerKey`]), shared by
//! the conversations of that workspace, started through the sandbox crate on the first turn
//! that needs it and stopped after it idled (`idle_stop_secs`). A turn gets an [`Attached`]
//! set: its tools (`mcp__SERVER__TOOL`) and the server each runs on, so a conversation calls
//! only the tools it attached, through the kernel's one tool-call pipeline (policy and
//! questions first). A server that does not start fails no turn: the caller gets a notice
//! naming it and the line of its stderr that says why (the refused path or call). Its
//! `npx`/`uvx` installs use the user's registry and proxy settings, never their tokens. A server that went away (a crash, even mid-call, or
//! an idle stop) is started again at its next use.
//!
//! superpi-mcp-client owns the client side of MCP (rmcp over stdio and Streamable HTTP) and
//! the conversion of servers' tools and results to superpi's. It must not know the kernel:
//! the kernel hands it a sandbox to start servers in and calls the tools through its pipeline.

mod connection;
mod deferred;
mod elicit;
pub mod oauth;
mod package_config;
mod sse;
mod stderr;
mod tools;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use superpi_policy::McpServerConfig;
use superpi_proto::method::McpServerStatus;
use superpi_proto::tool::{ToolCallResult, ToolDef};
use superpi_sandbox::{Sandbox, ToolCall};
use tokio_util::sync::CancellationToken;

use crate::connection::{Called, Connection, ServerKey, Unstarted};
pub use crate::deferred::{DEFER_BYTES, DEFER_TOOLS, Found, TOOL_SEARCH};
pub use crate::elicit::{Asker, Elicitation, Elicited};

/// How long a server may idle before it is stopped, when its settings do not say.
const IDLE_STOP: Duration = Duration::from_secs(600);
/// How often idle servers are looked for.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// A conversation's MCP tools for one turn (or a `tool.call`'s): each tool by the name the
/// model sees, with the server that runs it and whether it is deferred (found through
/// [`TOOL_SEARCH`] rather than sent with every request: see `deferred.rs`).
#[derive(Debug, Clone, Default)]
pub struct Attached {
    tools: BTreeMap<String, Route>,
    /// The servers that did not start, by name: why (the notice), and for an HTTP server that
    /// wants an OAuth login, what a login needs.
    missing: BTreeMap<String, (String, Option<NeedsLogin>)>,
}

/// An HTTP server that refused superpi for want of an OAuth login: what [`oauth::Login`]
/// needs to begin one.
#[derive(Debug, Clone)]
pub struct NeedsLogin {
    pub name: String,
    pub url: String,
    pub oauth: superpi_policy::McpOAuth,
}

#[derive(Debug, Clone)]
pub struct Route {
    pub def: ToolDef,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    /// A server's tool: its name there.
    Server { key: Arc<ServerKey>, tool: String, deferred: bool },
    /// `tool_search` over these deferred tools.
    Search(Arc<Vec<ToolDef>>),
}

impl Route {
    /// For `tool_search`, its answer to `arguments` (the names it found join the
    /// conversation's requests); `None` for a server's tool, which [`McpClients::call`] runs.
    pub fn search(&self, arguments: &serde_json::Value) -> Option<Found> {
        match &self.target {
            Target::Search(tools) => Some(deferred::search(tools, arguments)),
            Target::Server { .. } => None,
        }
    }
}

impl Attached {
    /// The route of a tool, deferred or not (a deferred tool is callable before a search
    /// found it), or of `tool_search` when some are deferred.
    pub fn get(&self, name: &str) -> Option<Route> {
        if name == TOOL_SEARCH {
            let tools = self.deferred_defs();
            return (!tools.is_empty())
                .then(|| Route { def: deferred::search_def(tools.len()), target: Target::Search(Arc::new(tools)) });
        }
        self.tools.get(name).cloned()
    }

    /// Why `tool` (`mcp__SERVER__…`) is not offered when its server did not start: the
    /// unknown tool's error the model reads (a login to run, a refused network).
    pub fn missing_tool(&self, tool: &str) -> Option<String> {
        self.missing.iter().find(|(server, _)| tool.starts_with(&tools::tool_name(server, ""))).map(|(_, (why, _))| {
            format!("`{tool}` cannot be called now: {why}. Tell the person; do not call it again this turn")
        })
    }

    /// The servers that wait for an OAuth login.
    pub fn needs_login(&self) -> Vec<NeedsLogin> {
        self.missing.values().filter_map(|(_, login)| login.clone()).collect()
    }

    /// Keeps the tools `keep` accepts.
    pub fn retain(&mut self, keep: impl Fn(&ToolDef) -> bool) {
        self.tools.retain(|_, route| keep(&route.def));
    }

    /// Every tool, deferred or not (what a `tool.call` caller may call).
    pub fn defs(&self) -> Vec<ToolDef> {
        self.tools.values().map(|r| r.def.clone()).collect()
    }

    /// What a model request offers: the tools not deferred, the deferred ones in `loaded` (a
    /// search found them), and `tool_search` while others stay deferred.
    pub fn offered(&self, loaded: &BTreeSet<String>) -> Vec<ToolDef> {
        let mut offered: Vec<ToolDef> = self
            .tools
            .values()
            .filter(|r| !r.deferred() || loaded.contains(&r.def.name))
            .map(|r| r.def.clone())
            .collect();
        let waiting = self.tools.values().filter(|r| r.deferred() && !loaded.contains(&r.def.name)).count();
        if waiting > 0 {
            offered.push(deferred::search_def(waiting));
        }
        offered
    }

    /// What a model request offers when the vendor's built-in tool search serves the model:
    /// the tools not deferred, and the deferred ones apart (sent with the vendor's flag; no
    /// [`TOOL_SEARCH`]).
    pub fn offered_to_builtin_search(&self) -> (Vec<ToolDef>, Vec<ToolDef>) {
        (self.tools.values().filter(|r| !r.deferred()).map(|r| r.def.clone()).collect(), self.deferred_defs())
    }

    /// The deferred tools among `names` (those a search found, to offer from now on).
    pub fn loaded_defs(&self, names: &BTreeSet<String>) -> Vec<ToolDef> {
        names.iter().filter_map(|n| self.tools.get(n)).filter(|r| r.deferred()).map(|r| r.def.clone()).collect()
    }

    fn deferred_defs(&self) -> Vec<ToolDef> {
        self.tools.values().filter(|r| r.deferred()).map(|r| r.def.clone()).collect()
    }

    /// Decides which tools are deferred (`deferred.rs`), by their servers' settings.
    fn decide_deferral(&mut self) {
        let candidates: Vec<deferred::Candidate> = self
            .tools
            .values()
            .map(|r| deferred::Candidate { def: &r.def, defer: r.server().and_then(|k| k.config.defer) })
            .collect();
        let decided = deferred::deferred(&candidates);
        for (route, defer) in self.tools.values_mut().zip(decided) {
            if let Target::Server { deferred, .. } = &mut route.target {
                *deferred = defer;
            }
        }
    }
}

impl Route {
    fn deferred(&self) -> bool {
        matches!(self.target, Target::Server { deferred: true, .. })
    }

    fn server(&self) -> Option<&Arc<ServerKey>> {
        match &self.target {
            Target::Server { key, .. } => Some(key),
            Target::Search(_) => None,
        }
    }
}

/// The kernel's MCP servers.
pub struct McpClients {
    sandbox: Sandbox,
    slots: Arc<Mutex<HashMap<Arc<ServerKey>, Arc<Slot>>>>,
    reaping: Arc<AtomicBool>,
}

/// One server's start, shared by the turns that wait for it, and its use.
struct Slot {
    started: tokio::sync::OnceCell<Result<Arc<Connection>, Unstarted>>,
    last_used: Mutex<Instant>,
    /// Calls running on it; a busy server is never stopped for idling.
    busy: AtomicUsize,
    conversations: Mutex<BTreeSet<i64>>,
}

impl Slot {
    fn new() -> Arc<Slot> {
        Arc::new(Slot {
            started: tokio::sync::OnceCell::new(),
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            conversations: Mutex::new(BTreeSet::new()),
        })
    }

    /// Its start failed or its server went away: the next use starts it again.
    fn stale(&self) -> bool {
        self.started.get().is_some_and(|r| r.as_ref().map_or(true, |c| !c.alive()))
    }

    /// It was running and went away (not a failed start).
    fn went_away(&self) -> bool {
        matches!(self.started.get(), Some(Ok(conn)) if !conn.alive())
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

/// Marks a slot busy for as long as it lives.
struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

impl McpClients {
    pub fn new(sandbox: Sandbox) -> Self {
        McpClients { sandbox, slots: Arc::default(), reaping: Arc::default() }
    }

    /// The tools of the user's servers as `settings.json` says now (`superpi mcp add` takes
    /// effect at once) and of `own` (a conversation's; a name of the user's wins), for
    /// `conversation` in `workspace`: those not running are started, with a notice for each
    /// that could not start or had to start again. The network each gets follows the network
    /// policy of the user's settings tightened by the workspace's; a workspace file that
    /// cannot be read attaches nothing.
    pub async fn attach(
        &self,
        config_dir: &Path,
        own: BTreeMap<String, McpServerConfig>,
        workspace: &Path,
        conversation: Option<i64>,
    ) -> (Attached, Vec<String>) {
        let (mut attached, mut notices) = (Attached::default(), Vec::new());
        let mut settings = match superpi_policy::Settings::load(config_dir, Some(workspace)) {
            Ok(settings) => settings,
            Err(err) => return (attached, vec![format!("no MCP server is started: {err}")]),
        };
        let mut servers = own;
        servers.extend(std::mem::take(&mut settings.mcp_servers));
        for (name, config) in servers {
            if config.disabled {
                continue;
            }
            if let Err(why) = config.reachable(&settings.network) {
                notices.push(format!("the MCP server `{name}` is not reached: {why}"));
                continue;
            }
            let key = Arc::new(ServerKey {
                workspace: workspace.to_path_buf(),
                network: config.gets_network(&settings.network),
                name: name.clone(),
                config,
            });
            let (slot, notice) = self.slot(&key);
            notices.extend(notice);
            match self.connect(&key, &slot).await {
                Ok(conn) => {
                    slot.touch();
                    if let Some(id) = conversation {
                        lock(&slot.conversations).insert(id);
                    }
                    for listed in conn.tools() {
                        let target = Target::Server { key: key.clone(), tool: listed.tool, deferred: false };
                        attached.tools.insert(listed.def.name.clone(), Route { def: listed.def, target });
                    }
                }
                Err(why) => {
                    let login = match (&key.config.transport, why.login) {
                        (superpi_policy::McpTransport::Http { url, oauth, .. }, true) => Some(NeedsLogin {
                            name: name.clone(),
                            url: url.clone(),
                            oauth: oauth.clone().unwrap_or_default(),
                        }),
                        _ => None,
                    };
                    let notice = unavailable(&key, &why);
                    attached.missing.insert(name, (notice.clone(), login));
                    notices.push(notice);
                }
            }
        }
        attached.decide_deferral();
        (attached, notices)
    }

    /// Runs one call on its route's server, starting the server again when it went away. A
    /// server that goes away during the call gives the call an error and a notice. A question
    /// the server asks meanwhile goes to `asker` (declined without one).
    pub async fn call(
        &self,
        route: &Route,
        call: &ToolCall,
        cancel: &CancellationToken,
        asker: Option<Arc<dyn Asker>>,
    ) -> (ToolCallResult, Vec<String>) {
        let Target::Server { key, tool, .. } = &route.target else {
            let found = route.search(&call.arguments).map(|f| f.result);
            return (found.unwrap_or_else(|| ToolCallResult::error("not a server's tool")), Vec::new());
        };
        let (slot, notice) = self.slot(key);
        let mut notices: Vec<String> = notice.into_iter().collect();
        let conn = match self.connect(key, &slot).await {
            Ok(conn) => conn,
            Err(why) => {
                let why = unavailable(key, &why);
                notices.push(why.clone());
                return (ToolCallResult::error(why), notices);
            }
        };
        slot.busy.fetch_add(1, Ordering::Relaxed);
        let _busy = Busy(slot.clone());
        match conn.call(tool, call, cancel, asker).await {
            Called::Answered(result) => (result, notices),
            Called::Lost(why) => {
                notices.push(format!("{why}; it starts again at its next use"));
                (ToolCallResult::error(why), notices)
            }
        }
    }

    /// The slot of `key`, a fresh one when there was none or its server went away (with a
    /// notice when it had been running).
    fn slot(&self, key: &Arc<ServerKey>) -> (Arc<Slot>, Option<String>) {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(key).filter(|slot| !slot.stale()) {
            return (slot.clone(), None);
        }
        let notice = slots
            .get(key)
            .filter(|slot| slot.went_away())
            .map(|_| format!("the MCP server `{}` had stopped and is started again", key.name));
        let slot = Slot::new();
        slots.insert(key.clone(), slot.clone());
        (slot, notice)
    }

    async fn connect(&self, key: &Arc<ServerKey>, slot: &Slot) -> Result<Arc<Connection>, Unstarted> {
        let started = slot
            .started
            .get_or_init(|| async {
                let state_dir = self.sandbox.config().data_dir.join("mcp").join(&key.name);
                let started = Connection::start(&self.sandbox, key, state_dir).await.map(Arc::new);
                if started.is_ok() {
                    self.reap_idle();
                }
                started
            })
            .await;
        started.clone()
    }

    /// Starts the task that stops idle servers, unless it runs; it ends when no server is left.
    fn reap_idle(&self) {
        if self.reaping.swap(true, Ordering::AcqRel) {
            return;
        }
        let (slots, reaping): (Weak<_>, _) = (Arc::downgrade(&self.slots), self.reaping.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE_CHECK).await;
                let Some(slots) = slots.upgrade() else { return };
                let mut slots = lock(&slots);
                let idled: Vec<Arc<ServerKey>> = slots
                    .iter()
                    .filter(|(key, slot)| {
                        let idle = key.config.idle_stop_secs.map_or(IDLE_STOP, Duration::from_secs);
                        slot.busy.load(Ordering::Relaxed) == 0
                            && slot.started.initialized()
                            && !idle.is_zero()
                            && lock(&slot.last_used).elapsed() >= idle
                    })
                    .map(|(key, _)| key.clone())
                    .collect();
                for key in idled {
                    tracing::info!(server = %key.name, workspace = %key.workspace.display(), "MCP server stopped after idling");
                    // Dropping the last reference kills its process group and cgroup.
                    slots.remove(&key);
                }
                if slots.is_empty() {
                    reaping.store(false, Ordering::Release);
                    return;
                }
            }
        });
    }

    /// Begins the OAuth login of a server that refused superpi (`superpi mcp login`'s, with
    /// its loopback redirect), for a frontend that shows its URL to the person.
    pub async fn begin_login(&self, need: &NeedsLogin) -> Result<oauth::Login, oauth::OAuthError> {
        let redirect = oauth::Redirect::bind(need.oauth.redirect_port).await?;
        let data_dir = &self.sandbox.config().data_dir;
        oauth::Login::begin(data_dir, &need.name, &need.url, &need.oauth, redirect).await
    }

    /// What `kernel.status` says of each server.
    pub fn status(&self) -> Vec<McpServerStatus> {
        let slots: Vec<(Arc<ServerKey>, Arc<Slot>)> =
            lock(&self.slots).iter().map(|(key, slot)| (key.clone(), slot.clone())).collect();
        let mut listed: Vec<McpServerStatus> = slots
            .into_iter()
            .map(|(key, slot)| {
                let mut status = McpServerStatus {
                    name: key.name.clone(),
                    workspace: key.workspace.display().to_string(),
                    state: "starting".into(),
                    pid: None,
                    tools: Vec::new(),
                    conversations: lock(&slot.conversations).iter().copied().collect(),
                    idle_ms: lock(&slot.last_used).elapsed().as_millis() as u64,
                    error: None,
                };
                match slot.started.get() {
                    None => {}
                    Some(Err(why)) => {
                        status.state = "failed".into();
                        status.error = Some(reason(&key, why));
                    }
                    Some(Ok(conn)) => {
                        status.state = if conn.alive() { "running" } else { "stopped" }.into();
                        status.pid = conn.pid();
                        status.tools = conn.tools().into_iter().map(|t| t.def.name).collect();
                    }
                }
                status
            })
            .collect();
        listed.sort_by(|a, b| (&a.workspace, &a.name).cmp(&(&b.workspace, &b.name)));
        listed
    }
}

/// The notice for a server that could not start. One that tried the network without it (an
/// `npx -y` or `uvx` server downloads at start) is told how to give it; where its sockets are
/// not watched, a program without network that never answered is taken for one.
fn unavailable(key: &ServerKey, failed: &Unstarted) -> String {
    format!("the MCP server `{}` is not available: {}", key.name, reason(key, failed))
}

/// Why it did not start, and how to give it the network when that was what it lacked.
fn reason(key: &ServerKey, failed: &Unstarted) -> String {
    let mut text = failed.why.clone();
    let program = matches!(key.config.transport, superpi_policy::McpTransport::Stdio { .. });
    let offline = match &failed.network {
        Some(refused) => refused.hint().map(|hint| format!(". {hint}: it runs without network")),
        None => (program && !key.network && failed.why.starts_with(connection::NO_ANSWER))
            .then(|| ". It runs without network".to_string()),
    };
    if let Some(offline) = offline {
        text.push_str(&offline);
        text.push_str(&format!(
            "; if it downloads at start (as `npx -y` and `uvx` do), give it the network with \
             `superpi mcp add {} --network -- …` or `\"network\": true` in its `mcp_servers` entry",
            key.name
        ));
    }
    text
}

/// Locks a std mutex, recovering from poisoning (a panicked holder left plain data behind).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
