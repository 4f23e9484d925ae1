//! OpenCode's server, kept: one `opencode serve` per workspace and configuration, started
//! through the sandbox on the first turn that needs it (confined to that workspace, its home
//! writable) and reused by every later turn; a server that stopped is started again by the
//! next turn. A server with no turn for its idle period is stopped (started again by the next
//! turn), and one whose configuration (model, key) was replaced by a newer server of the same
//! workspace is stopped once its last turn ends. Its bus (`GET /event`) is read by one task
//! that hands each event to the turn of the session it is about (and of the sessions that
//! session started: subagents). A turn creates or reuses its conversation's session, sends the
//! prompt and translates what comes until the session is idle; dropping the turn aborts the
//! session's work.
//!
//! The server listens on 127.0.0.1 with a random password (HTTP basic auth), so another user
//! of the machine cannot drive it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use superpi_sandbox::{Sandbox, ServerHandle, ServerSpec};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{OnceCell, mpsc, oneshot};

use crate::driver::{RunningTurn, TurnInput, TurnSpec};
use crate::event::{Approval, ApprovalRequest, BackendEvent};
use crate::opencode::{self, Endpoint};

#[path = "opencode_server_io.rs"]
mod io;
use io::{drain, keep_tail, password, read_bus, stopped};

/// How long a server may take to say it listens (about 20 s offline on a quiet machine).
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// How long one request to the server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopped server's stderr is read on for its last words.
const STDERR_END_WAIT: Duration = Duration::from_secs(2);
/// The most stderr kept for the notice of a server that stopped.
const STDERR_TAIL: usize = 4096;
/// How long a server may have no turn before it is stopped, unless configured (as long as an
/// external MCP server's default).
pub const IDLE_STOP: Duration = Duration::from_secs(600);

/// What makes two turns able to share a server: the program, the workspace it is confined
/// to, and everything it was started with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    program: PathBuf,
    workspace: PathBuf,
    config: String,
    env: Vec<(String, String)>,
    confined: bool,
}

type Cells = Mutex<HashMap<Key, Arc<OnceCell<Arc<Server>>>>>;

/// The kernel's OpenCode servers.
pub struct Servers {
    /// One cell per key: the turns that need the same server wait for one start.
    running: Arc<Cells>,
    /// How many servers were started.
    started: AtomicUsize,
    /// How long a server may have no turn before it is stopped (zero: never).
    idle_stop: Duration,
}

impl Default for Servers {
    fn default() -> Self {
        Servers::new(IDLE_STOP)
    }
}

impl Servers {
    /// Servers stopped after `idle_stop` without a turn (zero: kept while the kernel runs).
    pub fn new(idle_stop: Duration) -> Self {
        Servers { running: Arc::default(), started: AtomicUsize::new(0), idle_stop }
    }

    /// How many servers this kernel started.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    /// The process ids of the servers kept now.
    pub fn pids(&self) -> Vec<i32> {
        let cells: Vec<_> = lock(&self.running).values().cloned().collect();
        cells.iter().filter_map(|cell| cell.get()).map(|server| server.handle.pid()).collect()
    }
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servers").field("idle_stop", &self.idle_stop).finish_non_exhaustive()
    }
}

/// One running `opencode serve`.
struct Server {
    base: String,
    password: String,
    http: reqwest::Client,
    /// The turn each session's events go to (shared with the bus reader).
    routes: Arc<Mutex<Routes>>,
    /// Its turns now, and since when it has none.
    activity: Mutex<Activity>,
    /// A newer server of the same workspace took its place: it stops with its last turn.
    superseded: AtomicBool,
    /// Kept until the server is dropped: dropping it kills the server's group.
    handle: ServerHandle,
}

struct Activity {
    turns: usize,
    idle_since: Instant,
}

#[derive(Default)]
struct Routes {
    turns: HashMap<String, mpsc::Sender<Value>>,
    /// Why the server stopped, once it did.
    stopped: Option<String>,
}

/// A turn's hold on its server: while any is held the server is busy; the last one dropped
/// starts its idle period (or stops a superseded server at once).
struct Busy {
    server: Arc<Server>,
    key: Key,
    cells: Weak<Cells>,
    idle_stop: Duration,
}

impl Busy {
    fn new(servers: &Servers, key: Key, server: Arc<Server>) -> Busy {
        lock(&server.activity).turns += 1;
        Busy { server, key, cells: Arc::downgrade(&servers.running), idle_stop: servers.idle_stop }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        {
            let mut activity = lock(&self.server.activity);
            activity.turns = activity.turns.saturating_sub(1);
            if activity.turns > 0 {
                return;
            }
            activity.idle_since = Instant::now();
        }
        if self.server.superseded.load(Ordering::Acquire) {
            stop_if_idle(&self.cells, &self.key, &self.server, Duration::ZERO);
            return;
        }
        if self.idle_stop.is_zero() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (cells, key, server, idle_stop) =
            (self.cells.clone(), self.key.clone(), Arc::downgrade(&self.server), self.idle_stop);
        runtime.spawn(async move {
            tokio::time::sleep(idle_stop).await;
            if let Some(server) = server.upgrade() {
                stop_if_idle(&cells, &key, &server, idle_stop);
            }
        });
    }
}

/// Forgets `server` (the last reference dropped kills it) when it still serves `key` and has
/// had no turn for `idle`.
fn stop_if_idle(cells: &Weak<Cells>, key: &Key, server: &Arc<Server>, idle: Duration) {
    let Some(cells) = cells.upgrade() else { return };
    let mut cells = lock(&cells);
    let current = cells.get(key).and_then(|cell| cell.get()).is_some_and(|kept| Arc::ptr_eq(kept, server));
    let activity = lock(&server.activity);
    if current && activity.turns == 0 && activity.idle_since.elapsed() >= idle {
        tracing::info!(workspace = %key.workspace.display(), pid = server.handle.pid(), "OpenCode's server stopped: no turn for {} s", idle.as_secs());
        cells.remove(key);
    }
}

impl Servers {
    /// Runs one turn on the server for `spec`'s workspace, starting it when needed.
    pub async fn start(&self, sandbox: &Sandbox, spec: TurnSpec) -> Result<RunningTurn, String> {
        let endpoint = spec.endpoint.clone();
        let busy = self.server(sandbox, &spec, endpoint.as_ref()).await?;
        let server = busy.server.clone();
        let session = server.session(&spec).await.map_err(|err| format!("OpenCode: {err}"))?;
        let bus = server.subscribe(&session.id)?;
        let (tx, events) = mpsc::channel(256);
        let (stop_tx, stop) = oneshot::channel();
        if let Some(notice) = session.notice {
            let _ = tx.send(BackendEvent::Notice { level: "warning", message: notice }).await;
        }
        let _ = tx.send(BackendEvent::Session { id: session.id.clone() }).await;
        let body = opencode::prompt_body(&spec.prompt, endpoint.as_ref());
        let path = format!("/session/{}/prompt_async", session.id);
        if let Err(err) = server.request(reqwest::Method::POST, &path, Some(&body)).await {
            server.unsubscribe(&session.id);
            return Err(format!("OpenCode refused the prompt: {err}"));
        }
        let (replies_tx, replies) = mpsc::channel(16);
        tokio::spawn(turn(busy, session.id, bus, replies, tx, stop));
        Ok(RunningTurn::new(spec.kind, events, TurnInput::Replies(replies_tx), stop_tx))
    }

    /// The server for `spec`, held for a turn.
    async fn server(&self, sandbox: &Sandbox, spec: &TurnSpec, endpoint: Option<&Endpoint>) -> Result<Busy, String> {
        let config = opencode::config(endpoint, &spec.workspace).to_string();
        let mut env = spec.env.clone();
        if let Some(key) = endpoint.and_then(|e| e.api_key.clone()) {
            env.push((opencode::KEY_VAR.to_string(), key));
        }
        let key = Key {
            program: spec.program.clone(),
            workspace: spec.workspace.clone(),
            config,
            env,
            confined: spec.confined,
        };
        let cell = {
            let mut running = lock(&self.running);
            let cell = running.entry(key.clone()).or_default();
            // A server that stopped is started again.
            if cell.get().is_some_and(|server| server.stopped().is_some()) {
                *cell = Arc::default();
            }
            cell.clone()
        };
        let server = cell
            .get_or_try_init(|| async {
                let server = Server::start(sandbox, spec, &key).await?;
                self.started.fetch_add(1, Ordering::Relaxed);
                Ok::<_, String>(Arc::new(server))
            })
            .await?;
        let busy = Busy::new(self, key.clone(), server.clone());
        // The server of this turn's configuration is the workspace's current one again.
        server.superseded.store(false, Ordering::Release);
        self.supersede(&key);
        Ok(busy)
    }

    /// Stops the other servers of `key`'s workspace (an older model, key or configuration):
    /// at once when they have no turn, else when their last turn ends.
    fn supersede(&self, key: &Key) {
        let mut running = lock(&self.running);
        let older: Vec<Key> =
            running.keys().filter(|other| *other != key && other.workspace == key.workspace).cloned().collect();
        for other in older {
            let Some(server) = running.get(&other).and_then(|cell| cell.get()).cloned() else { continue };
            server.superseded.store(true, Ordering::Release);
            if lock(&server.activity).turns == 0 {
                tracing::info!(workspace = %other.workspace.display(), pid = server.handle.pid(), "OpenCode's server stopped: its configuration was replaced");
                running.remove(&other);
            }
        }
    }
}

/// A turn's session, and what a person should know about how it was found.
struct Session {
    id: String,
    notice: Option<String>,
}

impl Server {
    async fn start(sandbox: &Sandbox, spec: &TurnSpec, key: &Key) -> Result<Server, String> {
        let home = spec.home.clone();
        let config_dir = home.join(".config/opencode");
        std::fs::create_dir_all(&config_dir)
            .and_then(|()| std::fs::write(config_dir.join("opencode.json"), &key.config))
            .map_err(|e| format!("OpenCode's configuration in {}: {e}", config_dir.display()))?;
        let password = password()?;
        let mut env = key.env.clone();
        env.extend(opencode::fixed_env(&home, &password));
        let server = ServerSpec {
            program: spec.program.display().to_string(),
            args: ["serve", "--hostname", "127.0.0.1", "--port", "0"].map(String::from).to_vec(),
            env,
            cwd: None,
            workspace: spec.workspace.clone(),
            // The model API, and its own listening socket.
            network: true,
            state_dir: Some(home),
            readable: spec.install_dirs.clone(),
        };
        let process = sandbox.start_server(server).await.map_err(|e| format!("OpenCode could not start: {e}"))?;
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_ended = tokio::spawn(keep_tail(process.stderr, stderr.clone()));
        let mut stdout = BufReader::new(process.stdout);
        let mut handle = process.handle;
        let listening = tokio::time::timeout(START_TIMEOUT, async {
            let mut line = String::new();
            loop {
                line.clear();
                match stdout.read_line(&mut line).await {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                }
                if let Some(url) = line.trim().strip_prefix("opencode server listening on ") {
                    return Some(url.trim_end_matches('/').to_string());
                }
            }
        });
        let base = match listening.await {
            Ok(Some(base)) => base,
            Ok(None) => {
                let status = handle.exited().await;
                return Err(stopped(&format!("OpenCode's server exited at start: {status}"), &stderr));
            }
            Err(_) => return Err(format!("OpenCode did not start listening within {} s", START_TIMEOUT.as_secs())),
        };
        tokio::spawn(drain(stdout.into_inner()));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| format!("an HTTP client for OpenCode: {e}"))?;
        let server = Server {
            base,
            password,
            http,
            routes: Arc::new(Mutex::new(Routes::default())),
            activity: Mutex::new(Activity { turns: 0, idle_since: Instant::now() }),
            superseded: AtomicBool::new(false),
            handle,
        };
        // The bus is read before any prompt is sent, so a turn misses none of its events.
        let bus = server.get("/event").send().await.map_err(|e| format!("OpenCode's event stream: {e}"))?;
        if !bus.status().is_success() {
            return Err(format!("OpenCode's event stream: {}", bus.status()));
        }
        tokio::spawn(read_bus(bus, server.routes.clone(), stderr, stderr_ended));
        Ok(server)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(format!("{}{path}", self.base)).basic_auth("opencode", Some(&self.password))
    }

    fn stopped(&self) -> Option<String> {
        lock(&self.routes).stopped.clone()
    }

    async fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let mut request =
            self.http.request(method, url).basic_auth("opencode", Some(&self.password)).timeout(REQUEST_TIMEOUT);
        if let Some(body) = body {
            request = request.header(reqwest::header::CONTENT_TYPE, "application/json").body(body.to_string());
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("{status}: {}", text.chars().take(500).collect::<String>()));
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// The conversation's session: the stored one when the server knows it, else a new one.
    /// Either way its permission rules become those of this turn's mode.
    async fn session(&self, spec: &TurnSpec) -> Result<Session, String> {
        let rules = json!({"permission": opencode::rules(spec.mode)});
        let mut notice = None;
        if let Some(id) = &spec.resume {
            match self.request(reqwest::Method::PATCH, &format!("/session/{id}"), Some(&rules)).await {
                Ok(_) => return Ok(Session { id: id.clone(), notice }),
                Err(err) => {
                    notice = Some(format!("OpenCode's session {id} could not be continued ({err}); a new one starts"))
                }
            }
        }
        // A session with a title of its own: OpenCode would otherwise ask the model for one.
        let title: String = spec.prompt.lines().next().unwrap_or("").chars().take(60).collect();
        let mut create = rules;
        create["title"] = json!(if title.trim().is_empty() { "superpi".to_string() } else { title });
        let created = self.request(reqwest::Method::POST, "/session", Some(&create)).await?;
        let id = created.get("id").and_then(Value::as_str).ok_or("OpenCode created a session without an id")?;
        Ok(Session { id: id.to_string(), notice })
    }

    /// Sends a session's events (and its subagents') to a new channel.
    fn subscribe(&self, session: &str) -> Result<mpsc::Receiver<Value>, String> {
        let mut routes = lock(&self.routes);
        if let Some(why) = &routes.stopped {
            return Err(why.clone());
        }
        let (tx, rx) = mpsc::channel(1024);
        routes.turns.insert(session.to_string(), tx);
        Ok(rx)
    }

    /// Stops sending a session's events (the turn ended).
    fn unsubscribe(&self, session: &str) {
        let mut routes = lock(&self.routes);
        let Some(tx) = routes.turns.remove(session) else { return };
        routes.turns.retain(|_, other| !other.same_channel(&tx));
    }
}

impl Server {
    /// Answers one of OpenCode's questions.
    async fn reply(&self, request: &ApprovalRequest, approval: &Approval) {
        let path = format!("/permission/{}/reply", request.id);
        if let Err(err) = self.request(reqwest::Method::POST, &path, Some(&opencode::reply_body(approval))).await {
            // The turn goes on or ends as OpenCode decides; its events say which.
            tracing::warn!("answering OpenCode's question {}: {err}", request.id);
        }
    }
}

/// One turn: its session's events translated until the session is idle, the server stops,
/// or the turn is dropped (then the session's work is aborted); the answers to its questions
/// sent on as they come.
async fn turn(
    busy: Busy,
    session: String,
    mut bus: mpsc::Receiver<Value>,
    mut replies: mpsc::Receiver<(ApprovalRequest, Approval)>,
    tx: mpsc::Sender<BackendEvent>,
    mut stop: oneshot::Receiver<()>,
) {
    let server = &busy.server;
    let mut stream = opencode::Stream::new(&session);
    loop {
        let event = tokio::select! {
            Some((request, approval)) = replies.recv() => {
                server.reply(&request, &approval).await;
                continue;
            }
            event = bus.recv() => event,
            _ = &mut stop => {
                if let Err(err) = server.request(reqwest::Method::POST, &format!("/session/{session}/abort"), None).await {
                    tracing::warn!("aborting OpenCode's session {session}: {err}");
                }
                break;
            }
        };
        let Some(event) = event else {
            let why = server.stopped().unwrap_or_else(|| "OpenCode's server stopped".to_string());
            let _ = tx
                .send(BackendEvent::Notice {
                    level: "error",
                    message: format!("{why}. The next prompt starts it again."),
                })
                .await;
            let _ = tx.send(BackendEvent::Failed { message: why }).await;
            break;
        };
        let mut out = Vec::new();
        stream.event(&event, &mut out);
        for event in out {
            if tx.send(event).await.is_err() {
                break;
            }
        }
        if stream.ended() {
            break;
        }
    }
    server.unsubscribe(&session);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
