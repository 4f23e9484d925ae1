//! `superpi chat`: a line-by-line conversation. The prompt keeps reading while a turn runs:
//! a line typed then waits and is sent after the turn (in order, as if typed after it), except
//! `/steer TEXT`, which joins the running turn before its next model request
//! (`session.submit` with `steer`). A permission question, or each of the model's questions
//! (`question.rs`), takes the next line as its answer; no spinner draws while one waits; and
//! Ctrl-C cancels the turn.

use std::collections::VecDeque;
use std::process::ExitCode;
use std::time::Duration;

use superpi_client::{KernelClient, Locations, Subscription};
use superpi_proto::EventBody;
use superpi_proto::event::PermissionOption;
use superpi_proto::method::SubmitParams;
use superpi_proto::question::QuestionAnswer;

use crate::connection::connect;
use crate::lines::{Line, LineReader};
use crate::output::{OutputFormat, TurnResult};
use crate::question::{Form, Step};
use crate::terminal::{ChatArgs, Printer, open, permission_option, permission_question, watch};

/// A question waiting for the next typed line.
enum Asking {
    /// A permission question's request id and options.
    Permission(String, Vec<PermissionOption>),
    Form(Form),
}

/// The command that steers the running turn.
const STEER: &str = "/steer";

pub async fn chat(locations: &Locations, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let info = open(&client, locations, &args.session).await?;
    eprintln!(
        "conversation {} ({}, {}, {}); /help lists the commands, /exit leaves",
        info.conversation_id, info.harness, info.model, info.mode
    );
    let mut sub = watch(&client, &info, true).await?;
    let mut chat = Chat {
        client,
        conversation_id: info.conversation_id,
        printer: Printer::new(OutputFormat::Text),
        reader: LineReader::start(Some(locations.data_dir.join("chat_history")))?,
        held: VecDeque::new(),
    };
    loop {
        let line = match chat.held.pop_front() {
            Some(line) => line,
            None => chat.reader.next().await,
        };
        let line = match line {
            Line::Text(line) => line,
            Line::Interrupted => continue,
            Line::End => return Ok(ExitCode::SUCCESS),
        };
        // The user's own commands (`/NAME`, expanded by the kernel) are read again at each
        // slash line, so one added meanwhile is known.
        let user = match line.trim_start().starts_with('/') {
            true => chat.client.commands(Some(chat.conversation_id)).await.unwrap_or_default(),
            false => Vec::new(),
        };
        let user: Vec<String> = user.into_iter().map(|c| c.name).collect();
        match classify(&line, &user) {
            ChatLine::Empty => continue,
            ChatLine::Exit => return Ok(ExitCode::SUCCESS),
            ChatLine::Help => eprint!("{}", help(&user)),
            ChatLine::Unknown(name) => eprint!("{name} is not a command of this chat.\n{}", help(&user)),
            ChatLine::Compact => chat.compact().await,
            ChatLine::Clear => match chat.client.clear(chat.conversation_id).await {
                Ok(_) => eprintln!("context cleared: the model starts afresh (the history keeps every turn)"),
                Err(err) => eprintln!("not cleared: {err}"),
            },
            ChatLine::Undo => match chat.client.undo(chat.conversation_id, None).await {
                Ok(done) => eprintln!("{done}"),
                Err(err) => eprintln!("nothing undone: {err}"),
            },
            // Nothing runs: a steering prompt is a prompt.
            ChatLine::Prompt(prompt) => chat.turn(&mut sub, prompt).await?,
        }
    }
}

/// The chat's own commands, with what each does (`/help` lists them).
const COMMANDS: [(&str, &str); 7] = [
    ("/help", "this list"),
    ("/compact", "summarise the earlier turns"),
    ("/clear", "start the model afresh (the history keeps every turn)"),
    ("/undo", "put back the files of the latest turn that changed them"),
    ("/steer TEXT", "while a turn runs: add TEXT to it"),
    ("/exit", "leave (also /quit, Ctrl-D)"),
    ("//TEXT", "send a line starting with / as a prompt (the first / dropped)"),
];

/// What a line typed in chat asks for.
#[derive(Debug, PartialEq, Eq)]
enum ChatLine<'a> {
    Empty,
    Exit,
    Help,
    Compact,
    Clear,
    Undo,
    /// A slash command neither the chat's nor the user's: refused, never sent to the model.
    Unknown(&'a str),
    Prompt(&'a str),
}

/// Reads a line: the chat's commands, the user's (`user`: their names, which the kernel
/// expands, so they go as prompts), `//TEXT` for a prompt starting with `/`. Pure.
fn classify<'a>(line: &'a str, user: &[String]) -> ChatLine<'a> {
    let line = line.trim();
    if let Some(text) = line.strip_prefix("//") {
        return ChatLine::Prompt(text).or_empty();
    }
    if let Some(text) = steer_text(line) {
        // Between turns a steering prompt is a prompt.
        return ChatLine::Prompt(text).or_empty();
    }
    let word = line.split_whitespace().next().unwrap_or_default();
    match word {
        "" => ChatLine::Empty,
        "/exit" | "/quit" => ChatLine::Exit,
        "/help" | "/?" => ChatLine::Help,
        "/compact" => ChatLine::Compact,
        "/clear" => ChatLine::Clear,
        "/undo" => ChatLine::Undo,
        command if command.starts_with('/') && !user.iter().any(|u| u == &command[1..]) => ChatLine::Unknown(command),
        _ => ChatLine::Prompt(line),
    }
}

impl ChatLine<'_> {
    fn or_empty(self) -> Self {
        match self {
            ChatLine::Prompt(text) if text.trim().is_empty() => ChatLine::Empty,
            other => other,
        }
    }
}

/// The commands `/help` lists: the chat's, then the user's. Pure.
fn help(user: &[String]) -> String {
    let width = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut text = String::from("commands:\n");
    for (command, what) in COMMANDS {
        text.push_str(&format!("  {command:<width$}  {what}\n"));
    }
    if !user.is_empty() {
        let names: Vec<String> = user.iter().map(|n| format!("/{n}")).collect();
        text.push_str(&format!("your commands (sent to the model expanded): {}\n", names.join(", ")));
    }
    text
}

/// The text of a `/steer TEXT` line.
fn steer_text(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix(STEER)?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// Which events of the subscription a turn prints. Those of other turns are not its output,
/// and those of no turn that came before it (the kernel's `turn undone` or `context
/// compacted` after `/undo` or `/compact`, which chat said already, queued while it waited for
/// a line) are not said again.
#[derive(Debug, Default)]
struct Follow {
    started: bool,
}

impl Follow {
    fn admits(&mut self, event: &superpi_proto::Event, current: Option<i64>) -> bool {
        match event.turn_id {
            Some(turn) if Some(turn) == current => {
                self.started = true;
                true
            }
            Some(_) => false,
            None => self.started,
        }
    }
}

struct Chat {
    client: KernelClient,
    conversation_id: i64,
    printer: Printer,
    reader: LineReader,
    /// Lines typed while a turn ran, waiting for it to end.
    held: VecDeque<Line>,
}

impl Chat {
    async fn compact(&self) {
        match self.client.compact(self.conversation_id).await {
            Ok(done) if done["compacted"] == true => eprintln!(
                "context compacted: about {} tokens before, {} after (window {})",
                done["tokens_before"], done["tokens_after"], done["context_window"]
            ),
            Ok(done) => eprintln!("not compacted: {}", done["reason"].as_str().unwrap_or("nothing to do")),
            Err(err) => eprintln!("compaction failed: {err}"),
        }
    }

    /// Submits a prompt and prints the conversation's events until its turn ends (and any
    /// turn a late `/steer` became), reading lines meanwhile. Events of other turns are not
    /// this chat's output.
    async fn turn(&mut self, sub: &mut Subscription, prompt: &str) -> anyhow::Result<()> {
        let submitted = self.client.submit_text(self.conversation_id, prompt).await?;
        let mut following = VecDeque::from([submitted.turn_id]);
        let mut result = TurnResult::new(self.conversation_id, submitted.turn_id);
        let mut follow = Follow::default();
        let mut question: Option<Asking> = None;
        let mut cancelling = false;
        let mut reading = !self.held.iter().any(|line| matches!(line, Line::End));
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        let ticks = self.printer.ticks();
        loop {
            if reading {
                self.reader.ask();
            }
            let event = tokio::select! {
                event = sub.next() => event,
                line = self.reader.recv(), if reading => {
                    match line {
                        Line::Interrupted if !cancelling => {
                            cancelling = true;
                            let _ = self.client.cancel(self.conversation_id).await;
                        }
                        Line::Interrupted => {}
                        Line::End => {
                            reading = false;
                            self.held.push_back(Line::End);
                        }
                        Line::Text(text) => match (question.take(), steer_text(&text)) {
                            (Some(Asking::Permission(request_id, options)), _) => {
                                let option = permission_option(&text, &options);
                                self.client.respond_permission(&request_id, option).await?;
                            }
                            (Some(Asking::Form(mut form)), _) => match form.take(&text) {
                                Step::Done(outcome) => {
                                    self.client.respond_ui(&form.request_id, outcome).await?;
                                }
                                Step::Ask(why) => {
                                    if let Some(why) = why {
                                        eprintln!("{why}");
                                    }
                                    eprint!("{}", form.prompt());
                                    question = Some(Asking::Form(form));
                                }
                            },
                            (None, Some(steer)) if !steer.is_empty() => {
                                if let Some(queued) = self.steer(steer).await? {
                                    following.push_back(queued);
                                }
                            }
                            (None, Some(_)) => eprintln!("{STEER} TEXT: what to add to the running turn"),
                            (None, None) => self.held.push_back(Line::Text(text)),
                        },
                    }
                    continue;
                }
                _ = tokio::signal::ctrl_c(), if !cancelling => {
                    cancelling = true;
                    let _ = self.client.cancel(self.conversation_id).await;
                    continue;
                }
                // Nothing draws over a question while it waits for its answer.
                _ = ticker.tick(), if ticks && question.is_none() => {
                    self.printer.tick();
                    continue;
                }
            };
            let Some(event) = event else {
                anyhow::bail!("the kernel connection closed during the turn");
            };
            if !follow.admits(&event, following.front().copied()) {
                continue;
            }
            result.take(&event);
            self.printer.event(&event);
            if event.turn_id.is_some()
                && let EventBody::PermissionRequest { request_id, options, .. } = &event.body
            {
                if reading {
                    eprint!("{}", permission_question(options));
                    question = Some(Asking::Permission(request_id.clone(), options.clone()));
                } else {
                    // Nobody can type an answer any more.
                    self.client.respond_permission(request_id, permission_option("", options)).await?;
                }
            }
            if event.turn_id.is_some()
                && let EventBody::UiRequest { request_id, request } = &event.body
                && let Some(form) = Form::of(request_id, request)
            {
                if reading {
                    self.printer.clear_spinner();
                    eprint!("{}", form.prompt());
                    question = Some(Asking::Form(form));
                } else {
                    self.client.respond_ui(request_id, QuestionAnswer::Decline.to_outcome()).await?;
                }
            }
            if result.end().is_some() {
                self.printer.turn_ended(&result);
                following.pop_front();
                let Some(&next) = following.front() else { return Ok(()) };
                result = TurnResult::new(self.conversation_id, next);
                cancelling = false;
            }
        }
    }

    /// Steers the running turn with `text`; a prompt no turn could take any more is a turn of
    /// its own, whose id is returned to be followed after the running one.
    async fn steer(&self, text: &str) -> anyhow::Result<Option<i64>> {
        let params = SubmitParams {
            conversation_id: self.conversation_id,
            prompt: Some(text.to_string()),
            steer: true,
            ..Default::default()
        };
        let submitted = self.client.submit(params).await?;
        if submitted.steered {
            eprintln!("(joins the running turn before its next model request)");
            Ok(None)
        } else {
            eprintln!("(the turn was ending: this runs as the next turn)");
            Ok(Some(submitted.turn_id))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_queued_before_the_turn_is_not_printed_again() {
        use superpi_proto::Event;
        let mut follow = Follow::default();
        let undone = Event::notice(1, None, "info", "turn undone");
        assert!(!follow.admits(&undone, Some(5)), "said by /undo already");
        assert!(!follow.admits(&Event::turn_started(1, 4), Some(5)), "another turn");
        assert!(follow.admits(&Event::turn_started(1, 5), Some(5)));
        assert!(follow.admits(&Event::notice(1, None, "info", "context compacted"), Some(5)), "during the turn");
    }

    #[test]
    fn unknown_slash_commands_are_refused_and_never_prompts() {
        let user = vec!["review".to_string()];
        assert_eq!(classify("/help", &user), ChatLine::Help);
        assert_eq!(classify("  /exit ", &user), ChatLine::Exit);
        assert_eq!(classify("/halp me", &user), ChatLine::Unknown("/halp"));
        assert_eq!(classify("/model gpt", &[]), ChatLine::Unknown("/model"));
        assert_eq!(classify("/review src/", &user), ChatLine::Prompt("/review src/"));
        assert_eq!(classify("//etc is a directory", &user), ChatLine::Prompt("etc is a directory"));
        assert_eq!(classify("/steer use it", &user), ChatLine::Prompt("use it"));
        assert_eq!(classify("explain /etc", &user), ChatLine::Prompt("explain /etc"));
        assert_eq!(classify("   ", &user), ChatLine::Empty);
        let listed = help(&user);
        for (command, _) in COMMANDS {
            assert!(listed.contains(command), "{listed}");
        }
        assert!(listed.contains("/review"), "{listed}");
    }

    #[test]
    fn a_steer_line_gives_its_text_and_other_lines_none() {
        assert_eq!(steer_text("/steer use the helper"), Some("use the helper"));
        assert_eq!(steer_text("  /steer   spaced  "), Some("spaced"));
        assert_eq!(steer_text("/steer"), Some(""));
        assert_eq!(steer_text("/steering wheel"), None);
        assert_eq!(steer_text("plain"), None);
    }
}
