//! The terminal frontend: `run`, `chat`, `session`, `harnesses`, `models`.
#![allow(clippy::print_stdout)] // the terminal frontend's answers go to stdout by design

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use superpi_client::{KernelClient, Locations, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{Event, EventBody};

use crate::args::connect;

#[derive(Debug, Clone, Args)]
pub struct SessionFlags {
    /// Continue the latest conversation.
    #[arg(short = 'c', long = "continue")]
    pub continue_latest: bool,
    /// Continue the conversation with this id.
    #[arg(long)]
    pub conversation: Option<i64>,
    /// The harness of a new conversation (default superpi-code).
    #[arg(long)]
    pub harness: Option<String>,
    /// The model of a new conversation.
    #[arg(long)]
    pub model: Option<String>,
    /// The permission mode: plan, accept-edits, auto.
    #[arg(long)]
    pub mode: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The prompt; read from stdin when absent and stdin is not a terminal.
    pub prompt: Option<String>,
    #[command(flatten)]
    pub session: SessionFlags,
}

#[derive(Debug, Clone, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionFlags,
}

/// What the terminal prints for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Answer(String),
    Activity(String),
}

/// Turns kernel events into terminal output: answer text on stdout, everything else as one
/// line of activity on stderr. Pure: tested without a terminal.
#[derive(Debug, Default)]
pub struct TerminalRenderer {
    answer_open: bool,
}

impl TerminalRenderer {
    pub fn render(&mut self, event: &Event) -> Vec<Out> {
        let mut out = Vec::new();
        match &event.body {
            EventBody::TextDelta { delta, .. } => {
                self.answer_open = true;
                out.push(Out::Answer(delta.clone()));
            }
            EventBody::ThinkingDelta { .. } | EventBody::ToolcallDelta { .. } | EventBody::ToolOutput { .. } => {}
            EventBody::ToolStarted { name, arguments, .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(format!("→ {name} {}", compact(arguments))));
            }
            EventBody::ToolBlocked { name, reason, .. } => {
                out.push(Out::Activity(format!("✗ {name} blocked: {reason}")))
            }
            EventBody::ToolCompleted { name, is_error, output, .. } => {
                let text = output.as_str().map(str::to_string).unwrap_or_else(|| output.to_string());
                let first = text.lines().next().unwrap_or("").chars().take(120).collect::<String>();
                let mark = if *is_error { "✗" } else { "✓" };
                out.push(Out::Activity(format!("{mark} {name}: {first}")));
            }
            EventBody::PermissionRequest { tool_name, reason, .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(format!("? permission for {tool_name}: {reason}")));
            }
            EventBody::Notice { level, message } => out.push(Out::Activity(format!("[{level}] {message}"))),
            EventBody::StreamReset { retry_in_ms } => {
                out.push(Out::Activity(format!("(provider busy; retrying in {retry_in_ms} ms)")))
            }
            EventBody::TurnError { error } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(format!("error: {error}")));
            }
            EventBody::TurnCancelled {} => {
                self.close_answer(&mut out);
                out.push(Out::Activity("cancelled".into()));
            }
            EventBody::TurnCompleted { .. } => self.close_answer(&mut out),
            _ => {}
        }
        out
    }

    fn close_answer(&mut self, out: &mut Vec<Out>) {
        if self.answer_open {
            self.answer_open = false;
            out.push(Out::Answer("\n".into()));
        }
    }
}

fn compact(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 120 { format!("{}…", text.chars().take(120).collect::<String>()) } else { text }
}

fn emit(out: Vec<Out>) {
    for item in out {
        match item {
            Out::Answer(text) => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
            }
            Out::Activity(line) => eprintln!("{line}"),
        }
    }
}

async fn open(client: &KernelClient, flags: &SessionFlags) -> anyhow::Result<superpi_proto::method::ConversationInfo> {
    let conversation_id = match (flags.conversation, flags.continue_latest) {
        (Some(id), _) => Some(id),
        (None, true) => Some(
            client.list().await?.first().map(|c| c.conversation_id).context("there is no conversation to continue")?,
        ),
        (None, false) => None,
    };
    let workspace = std::env::current_dir().ok().map(|d| d.to_string_lossy().into_owned());
    let info = client
        .open(OpenParams {
            conversation_id,
            harness: flags.harness.clone(),
            model: flags.model.clone(),
            mode: flags.mode.clone(),
            workspace,
            ..Default::default()
        })
        .await?;
    if flags.model.is_none() && info.model == "mock" && info.created {
        eprintln!("superpi: no model provider is configured; using the offline mock model");
    }
    if conversation_id.is_some()
        && let Some(mode) = &flags.mode
    {
        client.set_mode(info.conversation_id, mode).await?;
    }
    Ok(info)
}

/// Submits one prompt and renders the conversation until that turn ends. Ctrl-C cancels.
async fn one_turn(
    client: &KernelClient,
    sub: &mut Subscription,
    renderer: &mut TerminalRenderer,
    conversation_id: i64,
    prompt: &str,
) -> anyhow::Result<ExitCode> {
    let turn = client.submit_text(conversation_id, prompt).await?;
    let mut cancelling = false;
    loop {
        let event = tokio::select! {
            event = sub.next() => event,
            _ = tokio::signal::ctrl_c(), if !cancelling => {
                cancelling = true;
                let _ = client.cancel(conversation_id).await;
                continue;
            }
        };
        let Some(event) = event else {
            anyhow::bail!("the kernel connection closed during the turn");
        };
        let ours = event.turn_id == Some(turn.turn_id);
        if ours && let EventBody::PermissionRequest { request_id, .. } = &event.body {
            emit(renderer.render(&event));
            let option = ask_permission().await;
            client.respond_permission(request_id, &option).await?;
            continue;
        }
        emit(renderer.render(&event));
        if ours {
            match &event.body {
                EventBody::TurnCompleted { .. } => return Ok(ExitCode::SUCCESS),
                EventBody::TurnError { .. } | EventBody::TurnCancelled {} => return Ok(ExitCode::from(1)),
                _ => {}
            }
        }
    }
}

/// Asks on the terminal; anything but a clear yes is a rejection.
async fn ask_permission() -> String {
    eprint!("allow? [y]es once, [a]lways, [n]o, [r]eject always: ");
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line).unwrap_or_default()
    })
    .await
    .unwrap_or_default();
    match line.trim() {
        "y" | "yes" => "allow_once",
        "a" | "always" => "allow_always",
        "r" => "reject_always",
        _ => "reject_once",
    }
    .to_string()
}

pub async fn run(locations: &Locations, args: RunArgs) -> anyhow::Result<ExitCode> {
    let prompt = match args.prompt {
        Some(prompt) => prompt,
        None if !std::io::stdin().is_terminal() => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).context("reading the prompt from stdin")?;
            text
        }
        None => {
            eprintln!("superpi run: give a prompt, or pipe one on stdin");
            return Ok(ExitCode::from(2));
        }
    };
    if prompt.trim().is_empty() {
        eprintln!("superpi run: the prompt is empty");
        return Ok(ExitCode::from(2));
    }
    let client = connect(locations, "cli").await?;
    let info = open(&client, &args.session).await?;
    let interactive = std::io::stdin().is_terminal();
    let mut sub = client
        .watch(WatchParams {
            conversation_id: info.conversation_id,
            from_seq: None,
            window: None,
            interactive,
            reads_files: false,
        })
        .await?;
    let mut renderer = TerminalRenderer::default();
    one_turn(&client, &mut sub, &mut renderer, info.conversation_id, &prompt).await
}

pub async fn chat(locations: &Locations, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let info = open(&client, &args.session).await?;
    eprintln!(
        "conversation {} ({}, {}, {}); /exit to leave",
        info.conversation_id, info.harness, info.model, info.mode
    );
    let mut sub = client
        .watch(WatchParams {
            conversation_id: info.conversation_id,
            from_seq: None,
            window: None,
            interactive: true,
            reads_files: false,
        })
        .await?;
    let mut renderer = TerminalRenderer::default();
    loop {
        eprint!("> ");
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            }
        })
        .await
        .ok()
        .flatten();
        let Some(line) = line else { return Ok(ExitCode::SUCCESS) };
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" | "/quit" => return Ok(ExitCode::SUCCESS),
            prompt => {
                one_turn(&client, &mut sub, &mut renderer, info.conversation_id, prompt).await?;
            }
        }
    }
}

pub async fn session_list(locations: &Locations) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    for c in client.list().await? {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            c.conversation_id,
            c.harness,
            c.model,
            c.status,
            c.title.unwrap_or_default().replace('\n', " ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn session_show(locations: &Locations, id: i64) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let history = client.history(id).await?;
    for entry in history.entries {
        let text = match entry.message.content.first() {
            Some(superpi_proto::ContentBlock::ToolResult { name, output, .. }) => format!("[{name}] {output}"),
            _ => entry.message.text(),
        };
        let calls: Vec<String> = entry
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                superpi_proto::ContentBlock::ToolCall { name, arguments, .. } => Some(format!("{name} {arguments}")),
                _ => None,
            })
            .collect();
        println!("#{} {}: {}", entry.seq, entry.kind.as_str(), text);
        for call in calls {
            println!("    → {call}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn harnesses(locations: &Locations) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    for h in client.harnesses().await? {
        println!(
            "{}\t{} (mode {}, ceiling {}; tools: {})",
            h.id,
            h.description,
            h.default_mode,
            h.max_mode,
            h.tools.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The kernel's models (`model.list`), one JSON object a line: the kernel's providers decide,
/// not this process's environment.
pub async fn models(locations: &Locations) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    for model in client.models().await? {
        println!("{}", serde_json::to_string(&model).unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn print_json(value: &serde_json::Value) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answer_text_goes_to_stdout_and_activity_to_stderr() {
        let mut r = TerminalRenderer::default();
        assert_eq!(r.render(&Event::text_delta(1, Some(1), 0, "Hel")), vec![Out::Answer("Hel".into())]);
        assert_eq!(
            r.render(&Event::tool_started(1, Some(1), "c1", "ls", json!({"path": "."}), vec![])),
            vec![Out::Answer("\n".into()), Out::Activity("→ ls {\"path\":\".\"}".into())]
        );
        assert_eq!(
            r.render(&Event::tool_completed(1, Some(1), "c1", "ls", false, json!("a\nb"))),
            vec![Out::Activity("✓ ls: a".into())]
        );
        assert_eq!(r.render(&Event::turn_completed(1, 1, None, "end_turn")), vec![]);
        assert_eq!(r.render(&Event::turn_error(1, 1, "boom")), vec![Out::Activity("error: boom".into())]);
    }
}
