//! `superpi chat`: a line-by-line conversation. The prompt keeps reading while a turn runs:
//! a line typed then waits and is sent after the turn (in order, as if typed after it), except
//! `/steer TEXT`, which joins the running turn before its next model request
//! (`session.submit` with `steer`). A permission question takes the next line as its answer,
//! and Ctrl-C cancels the turn.

use std::collections::VecDeque;
use std::process::ExitCode;
use std::time::Duration;

use superpi_client::{KernelClient, Locations, Subscription};
use superpi_proto::EventBody;
use superpi_proto::method::SubmitParams;

use crate::connection::connect;
use crate::lines::{Line, LineReader};
use crate::output::{OutputFormat, TurnResult};
use crate::terminal::{ChatArgs, PERMISSION_QUESTION, Printer, open, permission_option, watch};

/// The command that steers the running turn.
const STEER: &str = "/steer";

pub async fn chat(locations: &Locations, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let client = connect(locations, "cli").await?;
    let info = open(&client, &args.session).await?;
    eprintln!(
        "conversation {} ({}, {}, {}); /compact to summarise the earlier turns, /clear to start afresh, /undo to put back the files of the latest turn that changed them, /steer \
         TEXT while a turn runs to add to it, /exit to leave",
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
        match line.trim() {
            "" => continue,
            "/exit" | "/quit" => return Ok(ExitCode::SUCCESS),
            "/compact" => chat.compact().await,
            "/clear" => match chat.client.clear(chat.conversation_id).await {
                Ok(_) => eprintln!("context cleared: the model starts afresh (the history keeps every turn)"),
                Err(err) => eprintln!("not cleared: {err}"),
            },
            "/undo" => match chat.client.undo(chat.conversation_id, None).await {
                Ok(done) => eprintln!("{done}"),
                Err(err) => eprintln!("nothing undone: {err}"),
            },
            // Nothing runs: a steering prompt is a prompt.
            prompt => {
                let prompt = steer_text(prompt).unwrap_or(prompt);
                chat.turn(&mut sub, prompt).await?;
            }
        }
    }
}

/// The text of a `/steer TEXT` line.
fn steer_text(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix(STEER)?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
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
        let mut question: Option<String> = None;
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
                            (Some(request_id), _) => {
                                self.client.respond_permission(&request_id, permission_option(&text)).await?;
                            }
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
                _ = ticker.tick(), if ticks => {
                    self.printer.tick();
                    continue;
                }
            };
            let Some(event) = event else {
                anyhow::bail!("the kernel connection closed during the turn");
            };
            let current = following.front().copied();
            if event.turn_id.is_some() && event.turn_id != current {
                continue;
            }
            result.take(&event);
            self.printer.event(&event);
            if event.turn_id.is_some()
                && let EventBody::PermissionRequest { request_id, .. } = &event.body
            {
                if reading {
                    eprint!("{PERMISSION_QUESTION}");
                    question = Some(request_id.clone());
                } else {
                    // Nobody can type an answer any more.
                    self.client.respond_permission(request_id, permission_option("")).await?;
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
    fn a_steer_line_gives_its_text_and_other_lines_none() {
        assert_eq!(steer_text("/steer use the helper"), Some("use the helper"));
        assert_eq!(steer_text("  /steer   spaced  "), Some("spaced"));
        assert_eq!(steer_text("/steer"), Some(""));
        assert_eq!(steer_text("/steering wheel"), None);
        assert_eq!(steer_text("plain"), None);
    }
}
