//! The terminal frontend: `run` (one prompt, or one per stdin line, in text, JSON or a stream of
//! kernel events), and what `chat` (`chat.rs`) shares with it.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use superpi_client::{KernelClient, Locations, Subscription};
use superpi_proto::event::PermissionOption;
use superpi_proto::method::{ConversationInfo, OpenParams, WatchParams};
use superpi_proto::{Effort, Event, EventBody};
use tokio::io::AsyncBufReadExt;

use crate::connection::connect;
use crate::markdown::MarkdownRenderer;
use crate::output::{self, InputFormat, OutputFormat, TurnEnd, TurnResult};
use crate::question::{Form, Step};
use crate::render::{Out, TerminalRenderer};
use crate::style::{self, Spinner};

#[derive(Debug, Clone, Default, Args)]
pub struct SessionFlags {
    /// Continue the latest conversation of this workspace (the current directory).
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
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<String>,
    /// How much the model may think: off, low, medium, high (kept with the conversation; one
    /// the model takes, see `superpi models`).
    #[arg(long, value_parser = parse_effort)]
    pub effort: Option<Effort>,
}

/// A mode is checked here, so a misspelt one is a usage error (exit 2) before the kernel is
/// asked; the kernel gets its wire name.
fn parse_mode(name: &str) -> Result<String, String> {
    name.parse::<superpi_policy::Mode>().map(|m| m.as_str().to_string()).map_err(|e| e.to_string())
}

fn parse_effort(name: &str) -> Result<Effort, String> {
    Effort::parse(name).ok_or_else(|| format!("`{name}` is not one of off, low, medium, high"))
}

/// How `run` reads prompts and writes turns, and which conversation it uses.
#[derive(Debug, Clone, Default, Args)]
pub struct RunFlags {
    /// text: the answer on stdout, activity on stderr; json: one result object per prompt;
    /// stream-json: every kernel event of the turn, one JSON object per line.
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
    /// text: one prompt (the argument, or stdin); stream-json: one `{"prompt": "..."}` per stdin
    /// line, each a turn of one conversation.
    #[arg(long, value_enum, default_value_t)]
    pub input_format: InputFormat,
    /// A JSON Schema file (an object schema): each turn's final answer must be JSON that it
    /// accepts (asked again once, then the turn fails); `--output-format json` carries the
    /// parsed answer as `structured_output`.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub session: SessionFlags,
}

/// Reads `--output-schema FILE`: JSON, else a usage error said before the kernel is asked.
fn read_schema(flags: &RunFlags) -> Result<Option<serde_json::Value>, String> {
    let Some(path) = &flags.output_schema else { return Ok(None) };
    let text = std::fs::read_to_string(path).map_err(|err| format!("--output-schema {}: {err}", path.display()))?;
    let schema =
        serde_json::from_str(&text).map_err(|err| format!("--output-schema {}: not JSON: {err}", path.display()))?;
    Ok(Some(schema))
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The prompt; read from stdin when absent and stdin is not a terminal.
    pub prompt: Option<String>,
    /// The prompt, as a flag (`superpi -p PROMPT` is `superpi run PROMPT`).
    #[arg(short = 'p', long = "print", value_name = "PROMPT", conflicts_with = "prompt")]
    pub print: Option<String>,
    #[command(flatten)]
    pub flags: RunFlags,
}

#[derive(Debug, Clone, Default, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionFlags,
}

/// Where a turn's events go, by output format.
pub(crate) enum Printer {
    /// `markdown`: the answer's markdown styled, where stdout is a terminal with colours on.
    Text {
        renderer: Box<TerminalRenderer>,
        markdown: Option<MarkdownRenderer>,
        spinner: Spinner,
        waiting: bool,
    },
    Json,
    StreamJson,
}

impl Printer {
    pub(crate) fn new(format: OutputFormat) -> Self {
        match format {
            OutputFormat::Text => Printer::Text {
                renderer: Box::default(),
                markdown: style::styles_stdout().then(MarkdownRenderer::default),
                spinner: Spinner::new(true),
                waiting: true,
            },
            OutputFormat::Json => Printer::Json,
            OutputFormat::StreamJson => Printer::StreamJson,
        }
    }

    pub(crate) fn event(&mut self, event: &Event) {
        match self {
            Printer::Text { renderer, markdown, spinner, waiting } => {
                let out = renderer.render(event);
                if !out.is_empty() {
                    spinner.clear();
                }
                for item in out {
                    match item {
                        Out::Answer(text) => {
                            *waiting = text == "\n";
                            let text = match markdown.as_mut() {
                                Some(markdown) => markdown.push(&text),
                                None => text,
                            };
                            let mut stdout = anstream::stdout().lock();
                            let _ = stdout.write_all(text.as_bytes());
                            let _ = stdout.flush();
                        }
                        Out::Activity(tone, line) => {
                            *waiting = true;
                            anstream::eprintln!("{}", style::paint(style::style(tone), &line));
                        }
                    }
                }
            }
            Printer::Json => {}
            Printer::StreamJson => line_out(&output::event_line(event)),
        }
    }

    /// The turn ended: the spinner goes; `json` prints the result line.
    pub(crate) fn turn_ended(&mut self, result: &TurnResult) {
        match self {
            Printer::Text { spinner, waiting, markdown, .. } => {
                spinner.clear();
                *waiting = true;
                // A last line the turn's end did not close (it closes the answer's line).
                if let Some(rest) = markdown.as_mut().map(MarkdownRenderer::finish).filter(|r| !r.is_empty()) {
                    let mut stdout = anstream::stdout().lock();
                    let _ = writeln!(stdout, "{rest}");
                    let _ = stdout.flush();
                }
            }
            Printer::Json => line_out(&result.to_json().to_string()),
            Printer::StreamJson => {}
        }
    }

    /// Takes the spinner off its line, before a question is printed there.
    pub(crate) fn clear_spinner(&mut self) {
        if let Printer::Text { spinner, .. } = self {
            spinner.clear();
        }
    }

    /// Draws the next spinner frame while nothing streams.
    pub(crate) fn tick(&mut self) {
        if let Printer::Text { spinner, waiting: true, .. } = self {
            spinner.tick();
        }
    }

    pub(crate) fn ticks(&self) -> bool {
        matches!(self, Printer::Text { spinner, .. } if spinner.enabled())
    }
}

/// The latest conversation (of `list`, latest first) whose workspace is `workspace`, or why
/// there is none. Pure, for tests.
pub(crate) fn latest_of(list: &[ConversationInfo], workspace: Option<&std::path::Path>) -> anyhow::Result<i64> {
    let here = workspace.map(|w| w.to_string_lossy().into_owned());
    list.iter().find(|c| c.workspace.is_some() && c.workspace == here).map(|c| c.conversation_id).with_context(|| {
        let place = here.as_deref().unwrap_or("this directory");
        format!(
            "there is no conversation in {place} to continue (`superpi session list` shows them all; \
             `--conversation ID` continues one)"
        )
    })
}

/// One line on stdout, flushed (a script reads it at once).
fn line_out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

pub(crate) async fn open(
    client: &KernelClient,
    locations: &Locations,
    flags: &SessionFlags,
) -> anyhow::Result<ConversationInfo> {
    // The workspace is the current directory, canonical (README "Using it").
    let workspace = superpi_client::workspace::resolve_workspace(None).ok();
    let conversation_id = match (flags.conversation, flags.continue_latest) {
        (Some(id), _) => Some(id),
        (None, true) => Some(latest_of(&client.list().await?, workspace.as_deref())?),
        (None, false) => None,
    };
    let workspace = workspace.map(|d| d.to_string_lossy().into_owned());
    let info = client
        .open(OpenParams {
            conversation_id,
            harness: flags.harness.clone(),
            model: flags.model.clone(),
            mode: flags.mode.clone(),
            effort: flags.effort,
            workspace: workspace.clone(),
            ..Default::default()
        })
        .await?;
    if let Some(used) = &info.workspace {
        // The sandbox would refuse every tool call there: say so now, with the fix, and fail.
        superpi_client::workspace::check_workspace(std::path::Path::new(used), locations)
            .map_err(|why| anyhow::anyhow!("{why}; run superpi in a project directory (`cd` into one first)"))?;
        if conversation_id.is_some() && workspace.as_deref() != Some(used.as_str()) {
            eprintln!("superpi: conversation {} works in {used}, not in the current directory", info.conversation_id);
        }
    }
    if flags.model.is_none() && info.model == "mock" && info.created {
        eprintln!("superpi: no model provider is configured; using the offline mock model");
    }
    if conversation_id.is_some()
        && let Some(mode) = &flags.mode
    {
        client.set_mode(info.conversation_id, mode).await?;
    }
    if conversation_id.is_some() && flags.effort.is_some() && flags.effort != info.effort {
        client.set_effort(info.conversation_id, flags.effort).await?;
        return Ok(ConversationInfo { effort: flags.effort, ..info });
    }
    Ok(info)
}

pub(crate) async fn watch(
    client: &KernelClient,
    info: &ConversationInfo,
    interactive: bool,
) -> anyhow::Result<Subscription> {
    Ok(client.watch(WatchParams::after(info.conversation_id, info.head_seq).interactive(interactive)).await?)
}

/// Submits one prompt and prints the conversation's events until that turn ends. Ctrl-C
/// cancels. Events of other turns are not this turn's output.
async fn one_turn(
    client: &KernelClient,
    sub: &mut Subscription,
    printer: &mut Printer,
    (conversation_id, output_schema): (i64, Option<&serde_json::Value>),
    prompt: &str,
) -> anyhow::Result<TurnEnd> {
    let params = superpi_proto::method::SubmitParams {
        conversation_id,
        prompt: Some(prompt.to_string()),
        output_schema: output_schema.cloned(),
        ..Default::default()
    };
    let turn = client.submit(params).await?;
    let mut result = TurnResult::new(conversation_id, turn.turn_id).structured(output_schema.is_some());
    let mut cancelling = false;
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    let ticks = printer.ticks();
    loop {
        let event = tokio::select! {
            event = sub.next() => event,
            _ = tokio::signal::ctrl_c(), if !cancelling => {
                cancelling = true;
                let _ = client.cancel(conversation_id).await;
                continue;
            }
            _ = ticker.tick(), if ticks => {
                printer.tick();
                continue;
            }
        };
        let Some(event) = event else {
            anyhow::bail!("the kernel connection closed during the turn");
        };
        if event.turn_id.is_some_and(|t| t != turn.turn_id) {
            continue;
        }
        result.take(&event);
        printer.event(&event);
        if event.turn_id.is_some()
            && let EventBody::PermissionRequest { request_id, options, .. } = &event.body
        {
            let option = ask_permission(options).await;
            client.respond_permission(request_id, &option).await?;
        }
        if event.turn_id.is_some()
            && let EventBody::UiRequest { request_id, request } = &event.body
            && let Some(form) = Form::of(request_id, request)
        {
            printer.clear_spinner();
            client.respond_ui(request_id, ask_form(form).await).await?;
        }
        if let Some(end) = result.end() {
            printer.turn_ended(&result);
            return Ok(end);
        }
    }
}

/// What a permission question asks on the terminal: the four answers, and the lasting ones
/// the question offers (`p`: a rule for this project, `m`: a rule for me, every project).
pub(crate) fn permission_question(options: &[PermissionOption]) -> String {
    let mut question = String::from("allow? [y]es once, [a]lways in this conversation");
    if offers(options, "allow_always_project") {
        question.push_str(", always in this [p]roject");
    }
    if offers(options, "allow_always_user") {
        question.push_str(", always for [m]e");
    }
    question.push_str(", [n]o, [r]eject always: ");
    question
}

fn offers(options: &[PermissionOption], id: &str) -> bool {
    options.iter().any(|o| o.option_id == id)
}

/// The answer a typed line gives: anything but a clear yes is a rejection.
pub(crate) fn permission_option(line: &str, options: &[PermissionOption]) -> &'static str {
    match line.trim() {
        "y" | "yes" => "allow_once",
        "a" | "always" => "allow_always",
        "p" if offers(options, "allow_always_project") => "allow_always_project",
        "m" if offers(options, "allow_always_user") => "allow_always_user",
        "r" => "reject_always",
        _ => "reject_once",
    }
}

/// Asks on the terminal.
async fn ask_permission(options: &[PermissionOption]) -> String {
    eprint!("{}", permission_question(options));
    permission_option(&stdin_line().await, options).to_string()
}

/// The next line of stdin (empty at its end).
async fn stdin_line() -> String {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line).unwrap_or_default()
    })
    .await
    .unwrap_or_default()
}

/// Asks a form's questions on the terminal, a line each; the end of input declines.
async fn ask_form(mut form: Form) -> serde_json::Value {
    eprint!("{}", form.prompt());
    loop {
        match form.take(&stdin_line().await) {
            Step::Done(outcome) => return outcome,
            Step::Ask(why) => {
                if let Some(why) = why {
                    eprintln!("{why}");
                }
                eprint!("{}", form.prompt());
            }
        }
    }
}

fn exit_code(all_completed: bool) -> ExitCode {
    if all_completed { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

pub async fn run(locations: &Locations, args: RunArgs) -> anyhow::Result<ExitCode> {
    let RunArgs { prompt, print, flags } = args;
    let prompt = print.or(prompt);
    if flags.input_format == InputFormat::StreamJson {
        if prompt.is_some() {
            eprintln!("superpi run: --input-format stream-json reads its prompts from stdin, one per line");
            return Ok(ExitCode::from(2));
        }
        return run_lines(locations, &flags).await;
    }
    let prompt = match prompt {
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
    let schema = match read_schema(&flags) {
        Ok(schema) => schema,
        Err(why) => {
            eprintln!("superpi run: {why}");
            return Ok(ExitCode::from(2));
        }
    };
    let client = connect(locations, "cli").await?;
    let info = open(&client, locations, &flags.session).await?;
    let mut sub = watch(&client, &info, std::io::stdin().is_terminal()).await?;
    let mut printer = Printer::new(flags.output_format);
    let turn = (info.conversation_id, schema.as_ref());
    let end = one_turn(&client, &mut sub, &mut printer, turn, &prompt).await?;
    Ok(exit_code(end == TurnEnd::Completed))
}

/// `--input-format stream-json`: each stdin line is a prompt of one conversation, answered in
/// turn; a line that is not a prompt gets an `invalid_input` result and reading goes on.
async fn run_lines(locations: &Locations, flags: &RunFlags) -> anyhow::Result<ExitCode> {
    let schema = match read_schema(flags) {
        Ok(schema) => schema,
        Err(why) => {
            eprintln!("superpi run: {why}");
            return Ok(ExitCode::from(2));
        }
    };
    let client = connect(locations, "cli").await?;
    let info = open(&client, locations, &flags.session).await?;
    // Stdin carries prompts: nobody can answer a permission question there.
    let mut sub = watch(&client, &info, false).await?;
    let mut printer = Printer::new(flags.output_format);
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut all_completed = true;
    while let Some(line) = lines.next_line().await.context("reading stdin")? {
        if line.trim().is_empty() {
            continue;
        }
        match output::parse_input_line(&line) {
            Ok(prompt) => {
                let turn = (info.conversation_id, schema.as_ref());
                let end = one_turn(&client, &mut sub, &mut printer, turn, &prompt).await?;
                all_completed &= end == TurnEnd::Completed;
            }
            Err(error) => {
                all_completed = false;
                match flags.output_format {
                    OutputFormat::Text => eprintln!("superpi run: {error}"),
                    _ => line_out(&output::invalid_input(&error).to_string()),
                }
            }
        }
    }
    Ok(exit_code(all_completed))
}
