//! The offline `mock` model: deterministic answers steered by directives in the last user
//! message, for demos, tests, conformance runs and benchmarks. See [`mock_directives_help`].

use std::time::Duration;

use serde_json::Value;
use superpi_proto::{ContentBlock, Message, Role};

use crate::Provider;
use crate::assemble::StreamBuilder;
use crate::limits::ModelLimits;
use crate::stream::{EventStream, ModelRequest, ProviderError, StopReason, StreamEvent};

/// How many characters of each tool result the mock quotes back.
pub const RESULT_QUOTE_CHARS: usize = 200;

const HELP: &str = "\
The `mock` model reads the last user message, line by line:
  @tool NAME {json}   call tool NAME with these arguments (one line per call; several lines,
                      several calls in one response); once the results come back it answers
                      with a sentence quoting the first 200 characters of each result
  @think TEXT         stream a thinking block with TEXT first (without it, a request with a
                      thinking effort streams `[effort LEVEL]` as its thinking)
  @slow MS            wait MS milliseconds before each delta
  @fail MESSAGE       end the answer with an error terminal carrying MESSAGE
  @deltas N           stream N short text deltas (for benchmarks)
  @system             echo the last paragraph of the request's system prompt
  @answer TEXT        answer TEXT alone; several lines answer in turn, one per request of the
                      turn, the last repeating (with an output schema, a request that asks
                      again after an answer the schema refused gets the next)
  an image            is answered `[image TYPE, N bytes]` (its decoded size), before the echo
                      (a tool's image, after the sentence quoting its result)
  any other text      is echoed back, a word per delta
";

/// The mock model's directives, as the README quotes them.
pub fn mock_directives_help() -> &'static str {
    HELP
}

/// The offline model. Deterministic: the same request always streams the same events.
///
/// It counts a request's input with [`crate::tokens::request`] and, like a real API, refuses
/// one that does not fit its context window (an HTTP 400 error terminal).
#[derive(Debug, Clone)]
pub struct MockProvider {
    limits: ModelLimits,
}

impl Default for MockProvider {
    fn default() -> Self {
        MockProvider { limits: crate::limits::MOCK }
    }
}

impl MockProvider {
    pub fn new() -> Self {
        MockProvider::default()
    }

    /// The mock with another context window and output limit (a tiny one, for tests).
    pub fn with_limits(limits: ModelLimits) -> Self {
        MockProvider { limits }
    }
}

impl Provider for MockProvider {
    fn name(&self) -> &str {
        "mock"
    }

    /// The mock takes an output schema as a vendor's structured-output mode does, and answers
    /// with what `@answer` says: it keeps to no schema, so that a caller's check is tested.
    fn structured_output(&self) -> bool {
        true
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let input = crate::tokens::request(&request);
        let plan = if input > self.limits.context_window {
            Plan { stages: vec![Stage::Refused { requested: input, window: self.limits.context_window }], slow: None }
        } else {
            plan(&request)
        };
        let generator = Generator::new(plan, &request, input);
        Box::pin(futures::stream::unfold(generator, |mut generator| async move {
            let event = generator.next_event()?;
            let is_delta = matches!(
                event,
                StreamEvent::TextDelta { .. } | StreamEvent::ThinkingDelta { .. } | StreamEvent::ToolCallDelta { .. }
            );
            if let Some(pause) = generator.slow.filter(|_| is_delta) {
                tokio::time::sleep(pause).await;
            }
            Some((event, generator))
        }))
    }
}

/// What one answer consists of, in order.
#[derive(Debug, Clone, PartialEq)]
enum Stage {
    Thinking(Vec<String>),
    Text(Vec<String>),
    Deltas(u64),
    Tool {
        id: String,
        name: String,
        arguments: Value,
    },
    Fail(String),
    /// The API's refusal of the request (an over-long context): its tokens, the window.
    Refused {
        requested: u64,
        window: u64,
    },
}

#[derive(Debug, Default, PartialEq)]
struct Plan {
    stages: Vec<Stage>,
    slow: Option<Duration>,
}

/// Splits text into word-sized deltas, each word with the whitespace that follows it.
fn word_chunks(text: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut in_space = false;
    for ch in text.chars() {
        if in_space && !ch.is_whitespace() {
            chunks.push(std::mem::take(&mut current));
        }
        in_space = ch.is_whitespace();
        current.push(ch);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// `[image TYPE, N bytes]` for each image of a message (its data decoded), so a test sees
/// what reached the model.
fn images_seen(message: &Message) -> Vec<String> {
    let describe = |block: &ContentBlock| match block {
        ContentBlock::Image { media_type, data, .. } => {
            let size = data.as_deref().map(|d| crate::image_data::decode(d).map_or(0, |bytes| bytes.len()));
            Some(match size {
                Some(n) => format!("[image {media_type}, {n} bytes]"),
                None => format!("[image {media_type}, without its data]"),
            })
        }
        _ => None,
    };
    message.content.iter().filter_map(describe).collect()
}

fn message_text(message: &Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        if let ContentBlock::Text { text } = block {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

fn first_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Reads the request into a plan: directives of the last user message, or the answer to the
/// tool results that end the conversation.
fn plan(request: &ModelRequest) -> Plan {
    let mut plan = Plan::default();
    if let Some(answer) = scripted_answer(request) {
        plan.stages.push(Stage::Text(word_chunks(&answer)));
        return plan;
    }
    let last_user = request.messages.iter().rev().find(|m| m.role == Role::User);
    let prompt = last_user.map(message_text).unwrap_or_default();
    let trailing_results: Vec<&Message> =
        request.messages.iter().rev().take_while(|m| m.role == Role::Tool).collect::<Vec<_>>();

    let mut echo: Vec<&str> = Vec::new();
    let mut tools = Vec::new();
    let mut think = None;
    let mut deltas = None;
    let mut fail = None;
    for line in prompt.lines() {
        let trimmed = line.trim();
        let (word, rest) = match trimmed.split_once(char::is_whitespace) {
            Some((word, rest)) => (word, rest.trim()),
            None => (trimmed, ""),
        };
        match word {
            "@tool" => {
                let (name, raw) = match rest.split_once(char::is_whitespace) {
                    Some((name, raw)) => (name, raw.trim()),
                    None => (rest, ""),
                };
                if name.is_empty() {
                    fail.get_or_insert_with(|| "mock: `@tool` needs a tool name".to_string());
                    continue;
                }
                let arguments = if raw.is_empty() {
                    Ok(Value::Object(Default::default()))
                } else {
                    serde_json::from_str::<Value>(raw)
                };
                match arguments {
                    Ok(arguments) => tools.push((name.to_string(), arguments)),
                    Err(err) => {
                        fail.get_or_insert_with(|| {
                            format!("mock: the arguments of `@tool {name}` are not JSON: {err}")
                        });
                    }
                }
            }
            "@think" => think = Some(rest.to_string()),
            "@slow" => match rest.parse::<u64>() {
                Ok(ms) => plan.slow = Some(Duration::from_millis(ms)),
                Err(_) => {
                    fail.get_or_insert_with(|| format!("mock: `@slow` needs milliseconds, not `{rest}`"));
                }
            },
            "@fail" => fail = Some(if rest.is_empty() { "mock failure".to_string() } else { rest.to_string() }),
            "@deltas" => match rest.parse::<u64>() {
                Ok(n) => deltas = Some(n),
                Err(_) => {
                    fail.get_or_insert_with(|| format!("mock: `@deltas` needs a count, not `{rest}`"));
                }
            },
            // The end of the system prompt, where a frontend's instructions go.
            "@system" => {
                let system = request.system.as_deref().unwrap_or("(no system prompt)");
                echo.push(system.trim_end().rsplit("\n\n").next().unwrap_or(system));
            }
            _ => echo.push(line),
        }
    }

    // A conversation's effort shows as the thinking it asked for, so tests see it arrive.
    let think = match (think, request.effort) {
        (Some(thinking), _) => Some(thinking),
        (None, Some(effort)) => Some(format!("[effort {effort}]")),
        (None, None) => None,
    };
    if let Some(thinking) = think {
        plan.stages.push(Stage::Thinking(word_chunks(&thinking)));
    }
    if !trailing_results.is_empty() {
        let mut answer = String::from("The tools answered.");
        for message in trailing_results.iter().rev() {
            for block in &message.content {
                if let ContentBlock::ToolResult { name, output, is_error, .. } = block {
                    let verb = if *is_error { "failed with" } else { "returned" };
                    answer.push_str(&format!(" {name} {verb}: {}", first_chars(output, RESULT_QUOTE_CHARS)));
                }
            }
            // An image a tool returned (the read tool's), as a prompt's image is answered.
            for seen in images_seen(message) {
                answer.push_str(&format!(" {seen}"));
            }
        }
        plan.stages.push(Stage::Text(word_chunks(&answer)));
        if let Some(message) = fail {
            plan.stages.push(Stage::Fail(message));
        }
        return plan;
    }
    let images = last_user.map(images_seen).unwrap_or_default();
    let echo = images.iter().map(String::as_str).chain(echo).collect::<Vec<_>>().join("\n");
    if !echo.trim().is_empty() {
        plan.stages.push(Stage::Text(word_chunks(&echo)));
    }
    if let Some(n) = deltas {
        plan.stages.push(Stage::Deltas(n));
    }
    let earlier_calls = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter())
        .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
        .count();
    if fail.is_none() {
        for (k, (name, arguments)) in tools.into_iter().enumerate() {
            plan.stages.push(Stage::Tool { id: format!("call_{}", earlier_calls + k + 1), name, arguments });
        }
    }
    if let Some(message) = fail {
        plan.stages.push(Stage::Fail(message));
    }
    if plan.stages.is_empty() || matches!(plan.stages.as_slice(), [Stage::Thinking(_)]) {
        plan.stages.push(Stage::Text(word_chunks("(mock: nothing to answer)")));
    }
    plan
}

/// The `@answer` lines of a user message.
fn answer_lines(message: &Message) -> Vec<String> {
    let text = message_text(message);
    let answers = text.lines().filter_map(|line| line.trim().strip_prefix("@answer"));
    answers
        .filter(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
        .map(|a| a.trim().to_string())
        .collect()
}

/// The answer `@answer` scripts for this request: the next of the prompt's answers, counted by
/// the answers given since. With an output schema the prompt is the latest user message that
/// has `@answer` lines (a request asking again after a refused answer has a user message of
/// its own after it); without one, only the last user message counts.
fn scripted_answer(request: &ModelRequest) -> Option<String> {
    if request.messages.last().is_some_and(|m| m.role == Role::Tool) {
        return None;
    }
    let users = request.messages.iter().enumerate().rev().filter(|(_, m)| m.role == Role::User);
    let mut prompts = users.take(if request.output_schema.is_some() { usize::MAX } else { 1 });
    let (at, answers) = prompts.find_map(|(at, m)| Some((at, answer_lines(m))).filter(|(_, a)| !a.is_empty()))?;
    let given = request.messages[at..].iter().filter(|m| m.role == Role::Assistant).count();
    answers.get(given.min(answers.len() - 1)).cloned()
}

/// Produces a plan's events lazily, one at a time.
struct Generator {
    builder: StreamBuilder,
    stages: std::vec::IntoIter<Stage>,
    current: Option<Stage>,
    cursor: u64,
    slow: Option<Duration>,
    called_tools: bool,
    over: bool,
}

impl Generator {
    fn new(plan: Plan, request: &ModelRequest, input_tokens: u64) -> Self {
        let mut builder = StreamBuilder::new();
        builder.start(Some(format!("mock-{}", request.messages.len())));
        builder.usage_mut().input_tokens = input_tokens;
        Generator {
            builder,
            stages: plan.stages.into_iter(),
            current: None,
            cursor: 0,
            slow: plan.slow,
            called_tools: false,
            over: false,
        }
    }

    fn next_event(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(event) = self.builder.pop() {
                return Some(event);
            }
            if self.over {
                return None;
            }
            self.advance();
        }
    }

    /// Moves the builder one step: at most one delta per call.
    fn advance(&mut self) {
        let Some(stage) = self.current.take().or_else(|| {
            self.cursor = 0;
            self.stages.next()
        }) else {
            let stop = if self.called_tools { StopReason::ToolUse } else { StopReason::EndTurn };
            self.builder.done(stop);
            self.over = true;
            return;
        };
        let at = self.cursor;
        self.cursor += 1;
        let finished = match &stage {
            Stage::Thinking(chunks) => match chunks.get(at as usize) {
                Some(chunk) => {
                    if at == 0 {
                        self.builder.thinking_start(false);
                    }
                    self.builder.thinking_delta(chunk);
                    self.count_output();
                    false
                }
                None => true,
            },
            Stage::Text(chunks) => match chunks.get(at as usize) {
                Some(chunk) => {
                    self.builder.text_delta(chunk);
                    self.count_output();
                    false
                }
                None => true,
            },
            Stage::Deltas(n) => {
                if at < *n {
                    self.builder.text_delta("x");
                    self.count_output();
                    false
                } else {
                    true
                }
            }
            Stage::Tool { id, name, arguments } => {
                if at == 0 {
                    self.builder.tool_start(Some(id.clone()), Some(name.clone()));
                    self.builder.tool_delta(&arguments.to_string(), None, None);
                    self.count_output();
                    self.called_tools = true;
                    false
                } else {
                    true
                }
            }
            Stage::Fail(message) => {
                self.builder.fail(ProviderError::Model { message: message.clone() });
                self.over = true;
                true
            }
            Stage::Refused { requested, window } => {
                let error = ProviderError::ContextOverflow {
                    provider: "mock".into(),
                    status: 400,
                    message: format!(
                        "the request holds {requested} tokens, more than the context window of {window} tokens"
                    ),
                    window: Some(*window),
                    requested: Some(*requested),
                };
                self.builder.fail(error);
                self.over = true;
                true
            }
        };
        if finished {
            self.builder.close();
        } else {
            self.current = Some(stage);
        }
    }

    fn count_output(&mut self) {
        self.builder.usage_mut().output_tokens += 1;
    }
}

#[cfg(test)]
#[path = "mock_tests.rs"]
mod tests;
