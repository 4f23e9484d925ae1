//! One backend turn as a process: started through the sandbox crate (confined to the
//! workspace, its own home writable), the prompt written to its stdin, its stdout translated
//! into [`BackendEvent`]s, approvals answered on its stdin (Gemini CLI's through its hook's
//! channel, [`crate::gemini_ask`]). Dropping the turn kills the
//! program's process group and cgroup: that is how a turn is cancelled. A program that ends
//! before its turn did ends the turn with a notice and [`BackendEvent::Failed`]; the next turn
//! starts it again (each turn is a process of its own, resuming the backend's session).

use std::path::{Path, PathBuf};

use superpi_policy::{BackendKind, Mode};
use superpi_proto::Effort;
use superpi_sandbox::{Sandbox, ServerSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot};

use crate::event::{Approval, ApprovalRequest, BackendEvent, PromptImage};
use crate::lines::Translate;
use crate::{claude, codex, gemini, gemini_ask};

/// The most stderr kept for the notice of a program that failed.
const STDERR_TAIL: usize = 4096;

/// What one turn needs.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    pub kind: BackendKind,
    pub program: PathBuf,
    pub workspace: PathBuf,
    /// The conversation's mode, which chooses the backend's own permission settings.
    pub mode: Mode,
    pub prompt: String,
    /// The prompt's images (only for a backend that [`takes_images`]).
    pub images: Vec<PromptImage>,
    /// The model to ask for, in the backend's own naming (see `backend_model`); none lets the
    /// backend choose.
    pub model: Option<String>,
    /// The conversation's thinking effort (see [`effort_refusal`]); none leaves the backend's own.
    pub effort: Option<Effort>,
    /// The backend's session to continue.
    pub resume: Option<String>,
    /// The program's home (see `Sessions::home`).
    pub home: PathBuf,
    /// Directories the program loads its own files from (its installation).
    pub install_dirs: Vec<PathBuf>,
    /// The backend's own variables from the kernel's environment (see `env_keys`).
    pub env: Vec<(String, String)>,
    /// Whether superpi confines the program (the sandbox is not disabled).
    pub confined: bool,
    /// The model API superpi routes the conversation's model to, for a backend that takes
    /// its model from superpi (OpenCode); none lets it choose its own.
    pub endpoint: Option<crate::opencode::Endpoint>,
}

/// Why `kind` cannot be given a prompt's images, or `None` when it can: Claude Code takes
/// them in its stream-json input and Codex in `turn/start`; headless Gemini CLI reads its
/// prompt as text on stdin, and OpenCode's prompt is sent as text parts.
pub fn image_refusal(kind: BackendKind) -> Option<String> {
    match kind {
        BackendKind::ClaudeCode | BackendKind::Codex => None,
        BackendKind::GeminiCli => Some(
            "Gemini CLI takes no images here: superpi runs it headless, and it reads that prompt as text \
             on stdin; send the text alone, or use a model's harness for images"
                .to_string(),
        ),
        BackendKind::Opencode => Some(
            "OpenCode takes no images from superpi yet (its prompts are sent as text parts); send the text \
             alone, or use a model's harness for images"
                .to_string(),
        ),
    }
}

/// Why `kind` cannot be given a conversation's thinking effort, or `None` when it can: Claude
/// Code takes `--effort` (and no thinking budget for `off`), Codex an `effort` in `turn/start`
/// (the Responses API's `reasoning.effort`), Gemini CLI an override of its model configs in its
/// settings (for the model superpi names); OpenCode's prompts have no such setting, so an effort
/// would be silently ignored.
pub fn effort_refusal(kind: BackendKind) -> Option<String> {
    match kind {
        BackendKind::ClaudeCode | BackendKind::Codex | BackendKind::GeminiCli => None,
        BackendKind::Opencode => Some(
            "OpenCode takes no thinking effort from superpi (its own settings choose how much it thinks); \
             leave the effort unset, or use a model's harness or Claude Code's, Codex's or Gemini CLI's"
                .to_string(),
        ),
    }
}

/// The names of the kernel's variables a backend gets besides the sandbox's allow list.
pub fn env_keys(kind: BackendKind) -> &'static [&'static str] {
    match kind {
        BackendKind::ClaudeCode => claude::ENV_KEYS,
        BackendKind::Codex => codex::ENV_KEYS,
        BackendKind::GeminiCli => gemini::ENV_KEYS,
        BackendKind::Opencode => &[],
    }
}

/// A running turn.
pub struct RunningTurn {
    kind: BackendKind,
    events: mpsc::Receiver<BackendEvent>,
    input: TurnInput,
    /// The program's process (none for a turn on OpenCode's kept server).
    pid: Option<i32>,
    /// Dropped with the turn: the reader task then drops the process handle, which kills it
    /// (or, on OpenCode's server, aborts the session's work).
    _stop: oneshot::Sender<()>,
}

/// Where a turn's answers go.
pub(crate) enum TurnInput {
    /// The program's stdin, until its turn ended.
    Stdin(Option<pipe::Sender>),
    /// The task that speaks to OpenCode's server, which sends each answer on.
    Replies(mpsc::Sender<(ApprovalRequest, Approval)>),
    /// The directory of the turn's questions, answered to Gemini CLI's hook.
    Hook(PathBuf),
}

impl std::fmt::Debug for RunningTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningTurn").field("kind", &self.kind).finish()
    }
}

/// Starts the backend's program for one turn and hands it the prompt.
pub async fn start(sandbox: &Sandbox, spec: TurnSpec) -> Result<RunningTurn, String> {
    if let Some(why) = image_refusal(spec.kind).filter(|_| !spec.images.is_empty()) {
        return Err(why);
    }
    let home = spec.home.display().to_string();
    // Gemini CLI reads its prompt to the end of stdin; its questions come through its hook.
    let prompt_only = spec.kind == BackendKind::GeminiCli;
    let asks = match spec.kind == BackendKind::GeminiCli && gemini::asks_about(spec.mode) {
        true => Some(gemini_ask::Asks::create(&spec.home)?),
        false => None,
    };
    let (args, fixed_env, first_input) = match spec.kind {
        BackendKind::ClaudeCode => {
            // As root, Claude Code refuses `bypassPermissions` unless told it runs in a sandbox;
            // superpi's confinement is that sandbox, and only there is bypassing offered.
            let args =
                claude::args(spec.mode, spec.confined, spec.model.as_deref(), spec.effort, spec.resume.as_deref());
            let mut env = claude::fixed_env(&home);
            if spec.effort == Some(Effort::Off) {
                // Claude Code thinks at every effort; no thinking budget turns it off.
                env.push(("MAX_THINKING_TOKENS".into(), "0".into()));
            }
            if spec.confined {
                env.push(("IS_SANDBOX".into(), "1".into()));
            }
            (args, env, claude::prompt_line(&spec.prompt, &spec.images))
        }
        BackendKind::Codex => {
            let base_url = spec.env.iter().find(|(k, _)| k == "OPENAI_BASE_URL").map(|(_, v)| v.as_str());
            let workspace = spec.workspace.canonicalize().unwrap_or_else(|_| spec.workspace.clone());
            (codex::args(base_url, &workspace), codex::fixed_env(&home), codex::opening(&codex_start(&spec)))
        }
        BackendKind::GeminiCli => {
            let thinking = spec.model.as_deref().zip(spec.effort);
            write_gemini_settings(&spec.home, &spec.env, thinking)?;
            let args = gemini::args(spec.mode, spec.model.as_deref(), spec.resume.as_deref());
            (args, gemini::fixed_env(&home, &spec.env), spec.prompt.clone())
        }
        // A turn of OpenCode runs on its kept server (`Servers::start`).
        BackendKind::Opencode => return Err("OpenCode turns run on its server, not as a program per turn".into()),
    };
    let mut env = spec.env.clone();
    env.extend(fixed_env);
    if let Some(asks) = &asks {
        env.push((gemini::ASK_DIR_VAR.into(), asks.dir().display().to_string()));
    }
    let server = ServerSpec {
        program: spec.program.display().to_string(),
        args,
        env,
        cwd: None,
        workspace: spec.workspace.clone(),
        // The backend talks to its model API itself.
        network: true,
        state_dir: Some(spec.home.clone()),
        readable: spec.install_dirs.clone(),
    };
    let process =
        sandbox.start_server(server).await.map_err(|e| format!("{} could not start: {e}", spec.kind.title()))?;
    let turn_pid = process.handle.pid();
    let (tx, events) = mpsc::channel(256);
    let (stop_tx, stop) = oneshot::channel();
    let translator: Box<dyn Translate> = match spec.kind {
        BackendKind::Codex => Box::new(codex::Translator::with(codex::Stream::new(codex_start(&spec)))),
        BackendKind::GeminiCli => Box::new(gemini::Translator::default()),
        _ => Box::new(claude::Translator::default()),
    };
    let hook_dir = asks.as_ref().map(|asks| asks.dir().to_path_buf());
    let output = Output { stdout: process.stdout, stderr: process.stderr, asks };
    tokio::spawn(read(spec.kind, translator, output, process.handle, tx, stop));
    let mut turn = RunningTurn::new(spec.kind, events, TurnInput::Stdin(Some(process.stdin)), stop_tx);
    turn.pid = Some(turn_pid);
    // A program that already exited is reported by the reader, with its status and stderr.
    turn.write(&first_input).await;
    if prompt_only {
        turn.input = hook_dir.map_or(TurnInput::Stdin(None), TurnInput::Hook);
    }
    Ok(turn)
}

impl RunningTurn {
    pub(crate) fn new(
        kind: BackendKind,
        events: mpsc::Receiver<BackendEvent>,
        input: TurnInput,
        stop: oneshot::Sender<()>,
    ) -> Self {
        RunningTurn { kind, events, input, pid: None, _stop: stop }
    }

    /// The program's process id (the leader of its process group), for a turn that runs a
    /// process of its own.
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// The next event; `None` once the program's output ended and everything was said.
    /// Requests superpi does not serve are refused here, without the caller.
    pub async fn next(&mut self) -> Option<BackendEvent> {
        loop {
            let event = self.events.recv().await?;
            match &event {
                BackendEvent::Unsupported { request_id, what } => {
                    let line = match self.kind {
                        BackendKind::Codex => codex::refusal_line(request_id, what),
                        _ => claude::refusal_line(request_id, what),
                    };
                    self.write(&line).await;
                    continue;
                }
                BackendEvent::Write { line } => {
                    let line = line.clone();
                    self.write(&line).await;
                    continue;
                }
                // The turn is over: closing stdin lets the program exit.
                BackendEvent::End { .. } | BackendEvent::Failed { .. } => {
                    if let TurnInput::Stdin(stdin) = &mut self.input {
                        *stdin = None;
                    }
                }
                _ => {}
            }
            return Some(event);
        }
    }

    /// Answers an approval request.
    pub async fn answer(&mut self, request: &ApprovalRequest, approval: &Approval) {
        if let TurnInput::Replies(replies) = &self.input {
            // A turn that ended takes no answer; OpenCode's events say what came of it.
            let _ = replies.send((request.clone(), approval.clone())).await;
            return;
        }
        if let TurnInput::Hook(dir) = &self.input {
            if let Err(err) = gemini_ask::answer(dir, &request.id, approval) {
                // The hook is gone (the turn ended or was killed); the CLI's output says so.
                tracing::warn!("answering Gemini CLI's question {}: {err}", request.id);
            }
            return;
        }
        let line = match self.kind {
            BackendKind::ClaudeCode => claude::approval_line(request, approval),
            BackendKind::Codex => codex::approval_line(request, approval),
            _ => return,
        };
        self.write(&line).await;
    }

    async fn write(&mut self, line: &str) {
        if let TurnInput::Stdin(Some(stdin)) = &mut self.input
            && let Err(err) = stdin.write_all(line.as_bytes()).await
        {
            // The program is gone; its end is reported by the reader.
            tracing::debug!("{}: writing to the program: {err}", self.kind);
            self.input = TurnInput::Stdin(None);
        }
    }
}

/// Gemini CLI's user settings in its home (superpi's, rewritten each turn).
fn write_gemini_settings(
    home: &Path,
    env: &[(String, String)],
    thinking: Option<(&str, Effort)>,
) -> Result<(), String> {
    let dir = home.join(".gemini");
    let settings = gemini::settings(env, thinking, &gemini::hook_name()?);
    let written =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join("settings.json"), settings.to_string()));
    written.map_err(|e| format!("Gemini CLI's settings in {}: {e}", dir.display()))
}

/// What Codex's turn starts with.
fn codex_start(spec: &TurnSpec) -> codex::Start {
    codex::Start {
        prompt: spec.prompt.clone(),
        images: spec.images.clone(),
        cwd: spec.workspace.display().to_string(),
        mode: Some(spec.mode),
        confined: spec.confined,
        model: spec.model.clone(),
        effort: spec.effort,
        resume: spec.resume.clone(),
    }
}

/// What a turn's program says: its stdout, its stderr and (Gemini CLI's) its questions.
struct Output {
    stdout: pipe::Receiver,
    stderr: pipe::Receiver,
    asks: Option<gemini_ask::Asks>,
}

async fn read(
    kind: BackendKind,
    mut translator: Box<dyn Translate>,
    output: Output,
    mut handle: superpi_sandbox::ServerHandle,
    tx: mpsc::Sender<BackendEvent>,
    mut stop: oneshot::Receiver<()>,
) {
    let Output { mut stdout, stderr, mut asks } = output;
    let stderr_tail = tokio::spawn(tail(stderr));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            read = stdout.read(&mut buf) => read.unwrap_or(0),
            asked = next_ask(&mut asks) => {
                let Some((id, request)) = asked else {
                    asks = None;
                    continue;
                };
                // The CLI printed the call before it ran the hook: its output comes first.
                let mut events = Vec::new();
                while let Ok(n) = stdout.try_read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    events.extend(translator.push(&buf[..n]));
                }
                events.extend(translator.ask(id, &request));
                if !send_all(&tx, events).await {
                    return;
                }
                continue;
            }
            _ = &mut stop => return,
        };
        let events = if n == 0 { translator.finish() } else { translator.push(&buf[..n]) };
        if !send_all(&tx, events).await {
            return;
        }
        if n == 0 {
            break;
        }
    }
    let status = tokio::select! {
        status = handle.exited() => status,
        _ = &mut stop => return,
    };
    if translator.ended() {
        return;
    }
    let stderr = stderr_tail.await.unwrap_or_default();
    let mut message = format!("{} ({}) stopped before its turn ended: {status}", kind.title(), kind.program());
    if !stderr.trim().is_empty() {
        message.push_str(&format!("; its last output: {}", stderr.trim()));
    }
    let _ = tx
        .send(BackendEvent::Notice { level: "error", message: format!("{message}. The next prompt starts it again.") })
        .await;
    let _ = tx.send(BackendEvent::Failed { message }).await;
}

/// The next of the turn's questions; never, for a turn without them.
async fn next_ask(asks: &mut Option<gemini_ask::Asks>) -> Option<(String, serde_json::Value)> {
    match asks {
        Some(asks) => asks.next().await,
        None => std::future::pending().await,
    }
}

/// Sends events to the turn; false once nobody listens.
async fn send_all(tx: &mpsc::Sender<BackendEvent>, events: Vec<BackendEvent>) -> bool {
    for event in events {
        if tx.send(event).await.is_err() {
            return false;
        }
    }
    true
}

/// The last bytes of a stream.
async fn tail(mut stream: pipe::Receiver) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The directories a program loads its own files from, which the confined program must
/// read: for a program installed by npm (`PREFIX/node_modules/.bin/NAME`, a link into its
/// package), the outermost `node_modules` (its package and the packages it needs). Nothing
/// for a program elsewhere: the program file itself is always readable, and a directory
/// beside it (a `~/bin`) is not handed over.
pub fn install_dirs(program: &Path) -> Vec<PathBuf> {
    let real = program.canonicalize().unwrap_or_else(|_| program.to_path_buf());
    let outermost = real.ancestors().filter(|dir| dir.file_name().is_some_and(|n| n == "node_modules")).last();
    outermost.map(Path::to_path_buf).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_npm_installation_is_handed_over() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let package = root.join("node_modules/@scope/tool/bin");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::create_dir_all(root.join("node_modules/.bin")).unwrap();
        std::fs::write(package.join("tool.exe"), "").unwrap();
        std::os::unix::fs::symlink("../@scope/tool/bin/tool.exe", root.join("node_modules/.bin/tool")).unwrap();
        assert_eq!(install_dirs(&root.join("node_modules/.bin/tool")), vec![root.join("node_modules")]);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/tool"), "").unwrap();
        assert_eq!(install_dirs(&root.join("bin/tool")), Vec::<PathBuf>::new());
    }
}
