//! The request map: ACP requests to kernel calls, and kernel answers back to ACP, with
//! ACP's own errors for bad input (`-32602` invalid params, `-32002` session not found).
//!
//! Pure functions, no I/O. A session id is the kernel's conversation id with a prefix
//! (`conv-17`): a fresh `superpi acp` process finds the conversation of any session id an
//! editor kept, with no table to consult, and a conversation started elsewhere (the CLI, the
//! gateway) can be loaded by its number.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock, EmbeddedResourceResource, McpServer, Meta, SessionConfigId,
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelect,
    SessionConfigSelectOption, SessionConfigSelectOptions, SessionConfigValueId, SessionId, SessionInfo, SessionMode,
    SessionModeId, SessionModeState, SystemPrompt, SystemPromptMode, UnstructuredCommandInput,
};
use agent_client_protocol::{Error, ErrorCode};
use superpi_client::{ClientError, Locations};
use superpi_proto::ContentBlock as KBlock;
use superpi_proto::Effort;
use superpi_proto::message::codes;
use superpi_proto::method::{CommandInfo, ConversationInfo, McpServerParam, ModelInfo};

/// The prefix of every session id this agent mints.
pub const SESSION_PREFIX: &str = "conv-";

/// The config option that chooses the model.
pub const MODEL_CONFIG_ID: &str = "model";

/// The config option that chooses the thinking effort (category `thought_level`).
pub const EFFORT_CONFIG_ID: &str = "effort";

/// The effort option's value for "the provider settings' default" (no effort of its own).
pub const DEFAULT_EFFORT: &str = "default";

/// The config option that chooses the mode (beside the legacy `modes`, for editors that only
/// show config options).
pub const MODE_CONFIG_ID: &str = "mode";

/// The default harness when `_meta` names none.
pub const DEFAULT_HARNESS: &str = "superpi-code";

/// The modes, from the most restrictive up.
pub const MODES: &[(&str, &str, &str)] = &[
    ("plan", "Plan", "Read-only: the agent reads and plans, changes nothing"),
    ("accept-edits", "Accept edits", "File edits go ahead; other commands ask first"),
    ("auto", "Auto", "Everything the policy allows runs without asking"),
];

/// The ACP session id of a conversation.
pub fn session_id(conversation_id: i64) -> SessionId {
    SessionId::new(format!("{SESSION_PREFIX}{conversation_id}"))
}

/// The conversation of an ACP session id, or ACP's session-not-found error. Only the id
/// [`session_id`] writes names a conversation: `conv-01` or `conv-+1` name none.
pub fn conversation_id(session: &SessionId) -> Result<i64, Error> {
    session
        .0
        .strip_prefix(SESSION_PREFIX)
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0'))
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| not_found(session))
}

pub fn not_found(session: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(session.clone()).into()
}

pub fn invalid_params(message: impl Into<String>) -> Error {
    let message = message.into();
    // The specific text goes in `message` (what editors show) and in `data.message`.
    Error::new(ErrorCode::INVALID_PARAMS, message.clone()).data(serde_json::json!({ "message": message }))
}

/// An ACP error for a kernel error, in the context of a session.
pub fn kernel_error(err: ClientError, session: Option<&SessionId>) -> Error {
    match (&err, session) {
        (ClientError::Kernel(e), Some(s)) if e.code == codes::NOT_FOUND => not_found(s),
        (ClientError::Kernel(e), _) if matches!(e.code, codes::INVALID_PARAMS | codes::FORBIDDEN | codes::PROVIDER) => {
            invalid_params(e.message.clone())
        }
        (ClientError::Kernel(e), _) if e.code == codes::UNAUTHORIZED => Error::auth_required(),
        _ => {
            let message = err.to_string();
            Error::new(ErrorCode::INTERNAL_ERROR, message.clone()).data(serde_json::json!({ "message": message }))
        }
    }
}

/// The working directory of session/new or session/load: it must be absolute.
pub fn workspace(cwd: &Path) -> Result<String, Error> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!("cwd must be an absolute path, got `{}`", cwd.display())));
    }
    cwd.to_str().map(str::to_string).ok_or_else(|| invalid_params("cwd is not valid UTF-8"))
}

/// The working directory of session/new as a new session's workspace: absolute, and one the
/// sandbox accepts (not `/`, not holding the home directory or superpi's own data, config or
/// runtime directory of `locations`), so an editor opened outside a project is told at once,
/// not given a session whose every tool call fails.
pub fn new_workspace(cwd: &Path, locations: &Locations) -> Result<String, Error> {
    let workspace = workspace(cwd)?;
    superpi_client::workspace::check_workspace(cwd, locations).map_err(|why| {
        invalid_params(format!("{why}. Open a project folder in the editor: it is the session's workspace (`cwd`)"))
    })?;
    Ok(workspace)
}

/// `additionalDirectories` of session/new, load or resume: each absolute and one the sandbox
/// accepts as it accepts a workspace (the same check as `cwd`); the kernel lets the session's
/// tools write there as in the workspace.
pub fn extra_dirs(dirs: &[PathBuf], locations: &Locations) -> Result<Vec<String>, Error> {
    dirs.iter()
        .map(|dir| {
            let shown = dir.display();
            if !dir.is_absolute() {
                return Err(invalid_params(format!("additionalDirectories: `{shown}` is not an absolute path")));
            }
            superpi_client::workspace::check_workspace(dir, locations)
                .map_err(|why| invalid_params(format!("additionalDirectories: `{shown}`: {why}")))?;
            dir.to_str()
                .map(str::to_string)
                .ok_or_else(|| invalid_params(format!("additionalDirectories: `{shown}` is not valid UTF-8")))
        })
        .collect()
}

/// `systemPrompt` of session/new, load or resume: its text, appended after the harness's
/// system prompt. Only `append` is served and only text blocks; anything else, or no text,
/// refuses the request (the protocol asks an agent to refuse what it cannot apply).
pub fn system_prompt(prompt: Option<&SystemPrompt>) -> Result<Option<String>, Error> {
    let Some(prompt) = prompt else { return Ok(None) };
    if prompt.mode != SystemPromptMode::Append {
        return Err(invalid_params("systemPrompt: only the `append` mode is supported"));
    }
    let mut texts = Vec::new();
    for block in &prompt.content {
        match block {
            ContentBlock::Text(text) => texts.push(text.text.as_str()),
            _ => return Err(invalid_params("systemPrompt: only `text` content blocks are supported")),
        }
    }
    let text = texts.join("\n\n");
    if text.trim().is_empty() {
        return Err(invalid_params("systemPrompt: the content holds no text"));
    }
    Ok(Some(text))
}

/// The harness named in `_meta` (`harness`, or `superpi.harness`), else the default.
pub fn harness(meta: Option<&Meta>) -> Result<String, Error> {
    let Some(meta) = meta else { return Ok(DEFAULT_HARNESS.to_string()) };
    let value = meta.get("harness").or_else(|| meta.get("superpi").and_then(|s| s.get("harness")));
    match value {
        None | Some(serde_json::Value::Null) => Ok(DEFAULT_HARNESS.to_string()),
        Some(serde_json::Value::String(h)) if !h.trim().is_empty() => Ok(h.trim().to_string()),
        Some(other) => Err(invalid_params(format!("_meta.harness must be a harness id, got {other}"))),
    }
}

/// What to do with MCP servers an editor passes in session/new, load or resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EditorMcp {
    /// Attach its stdio servers to the session: the kernel starts them, confined, and offers
    /// their tools as `mcp__NAME__TOOL` (the default).
    #[default]
    Attach,
    /// Go on without them, with a warning on stderr.
    Ignore,
    /// Refuse the request, naming the servers.
    Refuse,
}

/// MCP servers from the editor, as the kernel's `session.open` takes them: stdio, HTTP (its
/// headers passed on) and SSE (the older HTTP+SSE transport); a name becomes one the kernel
/// accepts (its other characters `-`).
pub fn mcp_servers(servers: &[McpServer], policy: EditorMcp) -> Result<Vec<McpServerParam>, Error> {
    if servers.is_empty() {
        return Ok(Vec::new());
    }
    let name_of = |s: &McpServer| match s {
        McpServer::Stdio(s) => s.name.clone(),
        McpServer::Http(s) => s.name.clone(),
        McpServer::Sse(s) => s.name.clone(),
        _ => "?".to_string(),
    };
    let names: Vec<String> = servers.iter().map(name_of).collect();
    match policy {
        EditorMcp::Ignore => {
            tracing::warn!("not attaching the editor's MCP servers ({}), as asked", names.join(", "));
            return Ok(Vec::new());
        }
        EditorMcp::Refuse => {
            return Err(invalid_params(format!(
                "superpi was started to refuse editor-provided MCP servers ({}); start `superpi acp \
                 --editor-mcp-servers attach` to use them or `ignore` to go on without them",
                names.join(", ")
            )));
        }
        EditorMcp::Attach => {}
    }
    servers
        .iter()
        .map(|server| match server {
            McpServer::Stdio(s) => Ok(McpServerParam {
                name: server_name(&s.name),
                command: s.command.to_string_lossy().into_owned(),
                args: s.args.clone(),
                env: s.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
                ..McpServerParam::default()
            }),
            McpServer::Http(s) => Ok(McpServerParam {
                name: server_name(&s.name),
                url: Some(s.url.clone()),
                headers: s.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
                ..McpServerParam::default()
            }),
            McpServer::Sse(s) => Ok(McpServerParam {
                name: server_name(&s.name),
                url: Some(s.url.clone()),
                headers: s.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
                sse: true,
                ..McpServerParam::default()
            }),
            other => Err(invalid_params(format!("superpi does not know the transport of `{}`", name_of(other)))),
        })
        .collect()
}

/// An editor's server name as the kernel accepts it: 1 to 32 of `a-z A-Z 0-9 _ -`, no `__`.
fn server_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().take(32) {
        let keep = c.is_ascii_alphanumeric() || c == '-' || (c == '_' && !out.ends_with('_'));
        out.push(if keep { c } else { '-' });
    }
    if out.is_empty() { "editor".to_string() } else { out }
}

/// An ACP prompt as the content of the kernel's user message. Text stays text; a resource
/// link becomes a reference line; an embedded text resource becomes its text with its URI.
/// An image (its base64 data) is passed on: the kernel checks it, stores it, and refuses it
/// for a model that does not take images. Audio and binary resources are refused: the prompt
/// capabilities do not offer them.
pub fn prompt(blocks: &[ContentBlock]) -> Result<Vec<KBlock>, Error> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            ContentBlock::Text(t) => out.push(KBlock::text(t.text.clone())),
            ContentBlock::ResourceLink(link) => {
                let name = link.title.as_deref().unwrap_or(&link.name);
                out.push(KBlock::text(format!("[@{name}]({})", link.uri)));
            }
            ContentBlock::Resource(res) => match &res.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    out.push(KBlock::text(format!("<context uri=\"{}\">\n{}\n</context>", t.uri, t.text)));
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    return Err(invalid_params(format!("binary resources are not accepted ({})", b.uri)));
                }
                _ => return Err(invalid_params("unsupported embedded resource")),
            },
            ContentBlock::Image(image) if !image.data.is_empty() => {
                out.push(KBlock::image(image.mime_type.clone(), image.data.clone()));
            }
            ContentBlock::Image(_) => {
                return Err(invalid_params("an image needs its data (base64); a URI alone is not fetched"));
            }
            ContentBlock::Audio(_) => return Err(invalid_params("audio is not accepted (promptCapabilities.audio)")),
            _ => return Err(invalid_params("unsupported content block")),
        }
    }
    if out.is_empty() {
        return Err(invalid_params("the prompt is empty"));
    }
    Ok(out)
}

fn rank(mode: &str) -> Option<usize> {
    MODES.iter().position(|(id, _, _)| *id == mode)
}

/// The modes a session may use: those up to its ceiling.
pub fn modes(current: &str, max_mode: &str) -> SessionModeState {
    let top = rank(max_mode).unwrap_or(0);
    let available = MODES[..=top]
        .iter()
        .map(|(id, name, description)| SessionMode::new(*id, *name).description(description.to_string()))
        .collect();
    SessionModeState::new(SessionModeId::new(current), available)
}

/// The mode chooser: a select of category `mode` over the modes up to the ceiling.
pub fn mode_option(current: &str, max_mode: &str) -> SessionConfigOption {
    let state = modes(current, max_mode);
    let options: Vec<SessionConfigSelectOption> = state
        .available_modes
        .into_iter()
        .map(|m| SessionConfigSelectOption::new(m.id.0.to_string(), m.name).description(m.description))
        .collect();
    SessionConfigOption::new(
        SessionConfigId::new(MODE_CONFIG_ID),
        "Mode",
        SessionConfigKind::Select(SessionConfigSelect::new(
            SessionConfigValueId::new(current.to_string()),
            SessionConfigSelectOptions::Ungrouped(options),
        )),
    )
    .category(SessionConfigOptionCategory::Mode)
}

/// A requested mode, checked against the session's ceiling.
pub fn mode(requested: &SessionModeId, max_mode: &str) -> Result<String, Error> {
    let Some(r) = rank(&requested.0) else {
        return Err(invalid_params(format!("unknown mode `{}`: use plan, accept-edits or auto", requested.0)));
    };
    if r > rank(max_mode).unwrap_or(0) {
        return Err(invalid_params(format!("mode `{}` is above this session's ceiling `{max_mode}`", requested.0)));
    }
    Ok(requested.0.to_string())
}

/// The model chooser: a select of category `model` over the models the kernel offers
/// (`model.list`), each described by its provider; the current model is always listed.
pub fn model_option(current: &str, models: &[ModelInfo]) -> SessionConfigOption {
    let mut options: Vec<SessionConfigSelectOption> = models
        .iter()
        .map(|m| {
            let description = if m.default { format!("{} (default)", m.provider) } else { m.provider.clone() };
            SessionConfigSelectOption::new(m.id.clone(), m.id.clone()).description(description)
        })
        .collect();
    if !models.iter().any(|m| m.id == current) {
        options.insert(0, SessionConfigSelectOption::new(current.to_string(), current.to_string()));
    }
    SessionConfigOption::new(
        SessionConfigId::new(MODEL_CONFIG_ID),
        "Model",
        SessionConfigKind::Select(SessionConfigSelect::new(
            SessionConfigValueId::new(current.to_string()),
            SessionConfigSelectOptions::Ungrouped(options),
        )),
    )
    .category(SessionConfigOptionCategory::Model)
}

/// The thinking effort chooser: a select of category `thought_level` over `default` and the
/// levels the session's model takes (`model.list`'s `efforts`); none for a model without a
/// thinking setting. A level set under another model stays listed, so the select holds it.
pub fn effort_option(current: Option<Effort>, levels: &[Effort]) -> Option<SessionConfigOption> {
    if levels.is_empty() {
        return None;
    }
    let describe = |effort: Effort| match effort {
        Effort::Off => "No thinking where the model can go without, else its least",
        Effort::Low => "Little thinking: quicker answers",
        Effort::Medium => "Some thinking",
        Effort::High => "The most thinking: slower, for hard problems",
    };
    let default = SessionConfigSelectOption::new(DEFAULT_EFFORT, "Default")
        .description("What the provider settings say (providers.toml)");
    let mut listed: Vec<Effort> = levels.to_vec();
    if let Some(current) = current.filter(|c| !levels.contains(c)) {
        listed.push(current);
        listed.sort();
    }
    let options = std::iter::once(default)
        .chain(
            listed.into_iter().map(|e| SessionConfigSelectOption::new(e.as_str(), e.as_str()).description(describe(e))),
        )
        .collect();
    let current = current.map_or(DEFAULT_EFFORT, Effort::as_str);
    Some(
        SessionConfigOption::new(
            SessionConfigId::new(EFFORT_CONFIG_ID),
            "Thinking effort",
            SessionConfigKind::Select(SessionConfigSelect::new(
                SessionConfigValueId::new(current),
                SessionConfigSelectOptions::Ungrouped(options),
            )),
        )
        .category(SessionConfigOptionCategory::ThoughtLevel),
    )
}

/// The effort an option value asks for (`default`: none of its own).
pub fn effort_choice(value: &str) -> Result<Option<Effort>, Error> {
    if value == DEFAULT_EFFORT {
        return Ok(None);
    }
    Effort::parse(value)
        .map(Some)
        .ok_or_else(|| invalid_params(format!("unknown effort `{value}`: use default, off, low, medium or high")))
}

/// A slash command the agent answers itself, without a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/status`: the session's conversation, harness, model and mode.
    Status,
    /// `/mode NAME`: switch the mode (within the ceiling).
    Mode(String),
    /// `/compact`: summarise the earlier turns so the context has room again.
    Compact,
    /// `/clear`: the model's context starts afresh (the session's history keeps everything).
    Clear,
    /// `/undo`: the files the latest turn that changed the workspace changed are put back.
    Undo,
}

/// The slash commands offered to the editor (`available_commands_update`).
pub fn commands() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new("status", "Show the conversation, harness, model and mode of this session"),
        AvailableCommand::new("mode", "Switch the permission mode: plan, accept-edits or auto")
            .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("plan | accept-edits | auto"))),
        AvailableCommand::new("compact", "Summarise the earlier turns so the context window has room again"),
        AvailableCommand::new("clear", "Start afresh: the model forgets this session's earlier turns"),
        AvailableCommand::new("undo", "Put back the files the latest turn changed (its checkpoint)"),
    ]
}

/// The agent's own commands, then the user-defined ones (those named like one of the agent's
/// are left out: the agent answers that name itself).
pub fn commands_with(user: &[CommandInfo]) -> Vec<AvailableCommand> {
    let mut all = commands();
    for command in user {
        if all.iter().any(|c| c.name == command.name) {
            continue;
        }
        let mut offered = AvailableCommand::new(command.name.clone(), command.description.clone());
        if let Some(hint) = &command.argument_hint {
            offered = offered.input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint.clone())));
        }
        all.push(offered);
    }
    all
}

/// The command a prompt is, if it is one: a single text block `/name [input]` naming one of
/// [`commands`]. Anything else (also an unknown `/word`) goes to the model.
pub fn command(prompt: &[KBlock]) -> Option<Command> {
    let [KBlock::Text { text }] = prompt else { return None };
    let rest = text.trim().strip_prefix('/')?;
    let (name, input) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    match (name, input.trim()) {
        ("status", "") => Some(Command::Status),
        ("compact", "") => Some(Command::Compact),
        ("clear", "") => Some(Command::Clear),
        ("undo", "") => Some(Command::Undo),
        ("mode", m) if !m.is_empty() && !m.contains(char::is_whitespace) => Some(Command::Mode(m.to_string())),
        _ => None,
    }
}

/// A title for a session that has none, from its first prompt: the first non-empty line,
/// at most 60 characters.
pub fn title_from_prompt(prompt: &[KBlock]) -> Option<String> {
    let text = prompt.iter().find_map(|b| match b {
        KBlock::Text { text } => text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('@')),
        _ => None,
    })?;
    let mut title: String = text.chars().take(60).collect();
    if title.len() < text.len() {
        title.push('…');
    }
    Some(title)
}

/// A conversation as session/list shows it.
pub fn session_info(info: &ConversationInfo) -> SessionInfo {
    let cwd = info.workspace.clone().unwrap_or_else(|| "/".to_string());
    SessionInfo::new(session_id(info.conversation_id), cwd).title(info.title.clone())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
