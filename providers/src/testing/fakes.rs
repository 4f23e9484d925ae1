//! Fake vendor servers that enforce the vendors' request rules.
//!
//! A fake listens on 127.0.0.1, serves each connection in its own task, and for every request:
//! records it; checks the path, the key and the body against [`super::rules`]; answers a broken
//! rule with the vendor's error status and body (and records the [`Violation`]); answers a valid
//! request with the next scripted [`Answer`] in the vendor's stream format, or the fallback
//! answer (`Answer::text("ok")` unless set) once the script is used up.
//!
//! ```ignore
//! let fake = OpenAiFake::start(vec![Answer::tool_call("bash", json!({"command": "true"})), Answer::text("done")]).await?;
//! cmd.envs(fake.env());                       // OPENAI_API_KEY and OPENAI_BASE_URL
//! ...
//! assert!(fake.rejections().is_empty());
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use super::answers::{Answer, Served};
use super::prompt_cache::PromptCaches;
pub use super::prompt_cache::counted_tokens;
use super::rules::{Vendor, Violation, anthropic, gemini, openai, responses, tool_search};
use super::{Recorded, Reply, read_request, write_reply};

/// The key the fakes' [`FakeServer::env`] hands out (any non-empty key is accepted).
pub const FAKE_KEY: &str = "sk-fake-key";

/// A request and what the fake made of it.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub vendor: Option<Vendor>,
    pub request: Recorded,
    /// The broken rule, when the request was refused.
    pub rejection: Option<Violation>,
    /// The input tokens the answer reported, the part of them read from the cache, and the
    /// part written to it (Anthropic's `cache_creation_input_tokens`).
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub cache_written_tokens: u64,
}

/// Chooses the answer to a valid request from its body (before the script is consulted);
/// `None` leaves it to the script.
pub type Responder = Box<dyn Fn(Vendor, &Value) -> Option<Answer> + Send + Sync>;

struct State {
    script: VecDeque<Answer>,
    responder: Option<Responder>,
    fallback: Answer,
    exchanges: Vec<Exchange>,
    keyless: bool,
    betas: bool,
    served: u64,
    /// The context window a request must fit, in tokens as the fake counts them.
    context_window: Option<u64>,
    /// The summary a reasoning model's answers open with (the Responses API).
    reasoning: Option<String>,
    /// The organisation is not verified: reasoning summaries are refused.
    unverified: bool,
    /// What the vendors' prompt caches hold.
    caches: PromptCaches,
}

/// The prompt tokens a fake reports when no context window is set.
const FLAT_PROMPT_TOKENS: u64 = 10;

/// A running fake. Dropping it does not stop the listener task; the test's runtime does.
pub struct FakeServer {
    vendors: Vec<Vendor>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<State>>,
    seen: watch::Receiver<usize>,
    /// Notified when the client closes a held connection (`Reply { hold: true, .. }`).
    pub client_gone: Arc<Notify>,
}

/// OpenAI Chat Completions: `POST /v1/chat/completions`.
pub struct OpenAiFake;
/// OpenAI Responses: `POST /v1/responses` (Codex's API).
pub struct ResponsesFake;
/// Anthropic Messages: `POST /v1/messages`.
pub struct AnthropicFake;
/// Gemini: `POST /v1beta/models/M:streamGenerateContent?alt=sse` and `:generateContent`.
pub struct GeminiFake;

impl OpenAiFake {
    pub async fn start(script: Vec<Answer>) -> std::io::Result<FakeServer> {
        FakeServer::start(&[Vendor::Openai], script).await
    }
}

impl ResponsesFake {
    pub async fn start(script: Vec<Answer>) -> std::io::Result<FakeServer> {
        FakeServer::start(&[Vendor::OpenaiResponses], script).await
    }
}

impl AnthropicFake {
    pub async fn start(script: Vec<Answer>) -> std::io::Result<FakeServer> {
        FakeServer::start(&[Vendor::Anthropic], script).await
    }
}

impl GeminiFake {
    pub async fn start(script: Vec<Answer>) -> std::io::Result<FakeServer> {
        FakeServer::start(&[Vendor::Gemini], script).await
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FakeServer {
    /// A fake serving `vendors`' paths (one, or all three for a conversation that switches
    /// providers), answering valid requests with `script` in order.
    pub async fn start(vendors: &[Vendor], script: Vec<Answer>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            responder: None,
            fallback: Answer::text("ok"),
            exchanges: Vec::new(),
            keyless: false,
            betas: false,
            served: 0,
            context_window: None,
            reasoning: None,
            unverified: false,
            caches: PromptCaches::default(),
        }));
        let (seen_tx, seen) = watch::channel(0usize);
        let seen_tx = Arc::new(seen_tx);
        let client_gone = Arc::new(Notify::new());
        let served = vendors.to_vec();
        let (task_state, gone) = (state.clone(), client_gone.clone());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (state, gone, seen_tx, vendors) =
                    (task_state.clone(), gone.clone(), seen_tx.clone(), served.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else { return };
                    let reply = answer(&vendors, &state, request);
                    seen_tx.send_modify(|n| *n += 1);
                    write_reply(&mut socket, &reply, &gone).await;
                });
            }
        });
        Ok(FakeServer { vendors: vendors.to_vec(), base, state, seen, client_gone })
    }

    /// The endpoint to configure for `vendor`: OpenAI's with `/v1`, the others' without.
    pub fn base_url(&self, vendor: Vendor) -> String {
        match vendor {
            Vendor::Openai | Vendor::OpenaiResponses => format!("{}/v1", self.base),
            Vendor::Anthropic | Vendor::Gemini => self.base.clone(),
        }
    }

    /// The key and endpoint variables of every vendor this fake serves.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut vars = Vec::new();
        for vendor in &self.vendors {
            let (key, url) = match vendor {
                Vendor::Openai | Vendor::OpenaiResponses => ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
                Vendor::Anthropic => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
                Vendor::Gemini => ("GEMINI_API_KEY", "GEMINI_BASE_URL"),
            };
            vars.push((key.to_string(), FAKE_KEY.to_string()));
            vars.push((url.to_string(), self.base_url(*vendor)));
        }
        vars
    }

    /// Appends an answer to the script.
    pub fn push(&self, answer: Answer) {
        lock(&self.state).script.push_back(answer);
    }

    /// Answers from each request's body (a model that reacts to what it is asked), before the
    /// script.
    pub fn set_responder(&self, responder: Responder) {
        lock(&self.state).responder = Some(responder);
    }

    /// The answer once the script is used up.
    pub fn set_fallback(&self, answer: Answer) {
        lock(&self.state).fallback = answer;
    }

    /// Accepts requests without a key (a local OpenAI-compatible server such as Ollama).
    pub fn allow_without_key(&self) {
        lock(&self.state).keyless = true;
    }

    /// Counts each request's prompt ([`counted_tokens`]), reports that count as its usage, and
    /// refuses a request over `tokens` as the vendor does ([`overflow_refusal`]): the window is
    /// said only in that refusal, as a server superpi has no figures for.
    pub fn set_context_window(&self, tokens: u64) {
        lock(&self.state).context_window = Some(tokens);
    }

    /// Answers the Responses API's requests to reasoning models (those with `reasoning`) with
    /// a reasoning item first: `summary` streamed as its summary, and the item's encrypted
    /// content when the request `include`s it (which a later request must send back whole).
    pub fn set_reasoning(&self, summary: &str) {
        lock(&self.state).reasoning = Some(summary.to_string());
    }

    /// An organisation OpenAI has not verified: a request asking for reasoning summaries is
    /// refused as OpenAI refuses it.
    pub fn refuse_reasoning_summaries(&self) {
        lock(&self.state).unverified = true;
    }

    /// Accepts what Anthropic's betas add to a request that names them in `anthropic-beta`
    /// (Claude Code's requests: see [`anthropic::check_beta`]); the documented rules still
    /// check the rest.
    pub fn accept_betas(&self) {
        lock(&self.state).betas = true;
    }

    pub fn exchanges(&self) -> Vec<Exchange> {
        lock(&self.state).exchanges.clone()
    }

    /// Every request received, refused ones included.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state).exchanges.iter().map(|e| e.request.clone()).collect()
    }

    /// The bodies of the requests that passed the rules.
    pub fn accepted(&self) -> Vec<Value> {
        lock(&self.state)
            .exchanges
            .iter()
            .filter(|e| e.rejection.is_none())
            .filter_map(|e| e.request.json().ok())
            .collect()
    }

    /// The broken rules, one per refused request.
    pub fn rejections(&self) -> Vec<Violation> {
        lock(&self.state).exchanges.iter().filter_map(|e| e.rejection.clone()).collect()
    }

    /// Waits until `count` requests have been answered (or refused); false after `timeout`.
    pub async fn wait_for_requests(&self, count: usize, timeout: Duration) -> bool {
        let mut seen = self.seen.clone();
        tokio::time::timeout(timeout, seen.wait_for(|n| *n >= count)).await.is_ok_and(|r| r.is_ok())
    }
}

/// Which vendor a path belongs to, with the model for Gemini and whether it streams as SSE.
fn route(path: &str) -> Option<(Vendor, String, bool)> {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    match path {
        "/v1/chat/completions" => return Some((Vendor::Openai, String::new(), true)),
        "/v1/messages" => return Some((Vendor::Anthropic, String::new(), true)),
        "/v1/responses" => return Some((Vendor::OpenaiResponses, String::new(), true)),
        _ => {}
    }
    let rest = path.strip_prefix("/v1beta/models/").or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.split_once(':')?;
    let sse = match method {
        "streamGenerateContent" => query.split('&').any(|pair| pair == "alt=sse"),
        "generateContent" => false,
        _ => return None,
    };
    Some((Vendor::Gemini, model.to_string(), sse))
}

fn not_found(vendors: &[Vendor], request: &Recorded) -> Violation {
    let vendor = vendors.first().copied().unwrap_or(Vendor::Openai);
    let message = match vendor {
        Vendor::Openai | Vendor::OpenaiResponses => format!("Invalid URL ({} {})", request.method, request.path),
        Vendor::Anthropic => "Not Found".to_string(),
        Vendor::Gemini => format!("models/{} is not found for API version v1beta.", request.path),
    };
    Violation { vendor, status: 404, message, param: None, code: None }
}

/// Checks one request; the broken rule, or the vendor, model and stream format to answer in.
fn check(vendors: &[Vendor], state: &State, request: &Recorded) -> Result<(Vendor, String, bool), Violation> {
    let Some((vendor, model, sse)) = route(&request.path).filter(|(v, _, _)| vendors.contains(v)) else {
        return Err(not_found(vendors, request));
    };
    if request.method != "POST" {
        return Err(Violation::new(vendor, "Method Not Allowed").status(405));
    }
    let header = |name: &str| request.header(name).map(str::to_string);
    match vendor {
        Vendor::Openai | Vendor::OpenaiResponses => {
            let bearer = header("authorization").is_some_and(|a| a.starts_with("Bearer ") && a.len() > 7);
            if !bearer && !state.keyless {
                return Err(Violation {
                    vendor,
                    status: 401,
                    message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).".into(),
                    param: None,
                    code: None,
                });
            }
        }
        Vendor::Anthropic => anthropic::check_headers(header)?,
        Vendor::Gemini => gemini::check_key(header, request.path.split_once('?').map_or("", |(_, q)| q))?,
    }
    let body: Value = request.json().map_err(|err| match vendor {
        Vendor::Gemini => Violation::new(vendor, format!("Invalid JSON payload received. {err}")),
        _ => Violation::new(vendor, format!("We could not parse the JSON body of your request. ({err})")),
    })?;
    if state.unverified && body.pointer("/reasoning/summary").is_some_and(|s| !s.is_null()) {
        return Err(Violation::new(
            vendor,
            "Your organization must be verified to generate reasoning summaries. Please go to: \
             https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just \
             verified, it can take up to 15 minutes for access to propagate.",
        )
        .param("reasoning.summary")
        .code("unsupported_value"));
    }
    match vendor {
        Vendor::Openai => openai::check(&body)?,
        Vendor::OpenaiResponses => responses::check(&body)?,
        Vendor::Anthropic if state.betas && header("anthropic-beta").is_some() => anthropic::check_beta(&body)?,
        Vendor::Anthropic => anthropic::check(&body)?,
        Vendor::Gemini => gemini::check_for(&model, &body)?,
    }
    let model =
        if model.is_empty() { body.get("model").and_then(Value::as_str).unwrap_or("").to_string() } else { model };
    Ok((vendor, model, sse))
}

/// The usage a valid request is answered with: its prompt (counted where the fake has a window
/// or a cache to fill), the part of it read from the cache, and any reasoning to open with.
fn served(state: &mut State, vendor: Vendor, request: &Recorded) -> Served {
    let body: Value = request.json().unwrap_or(Value::Null);
    let key = body.get("prompt_cache_key").and_then(Value::as_str).map(str::to_string);
    let cache_kept = matches!(vendor, Vendor::OpenaiResponses | Vendor::Anthropic) || key.is_some();
    let counted = state.context_window.is_some() || cache_kept;
    // What the model's context holds: deferred tools count once a search loaded them.
    let catalog = tool_search::catalog_of(vendor, &body);
    let prompt_tokens = match (counted, &catalog) {
        (false, _) => FLAT_PROMPT_TOKENS,
        (true, Some(_)) => counted_tokens(tool_search::in_context(vendor, &body).to_string().as_bytes()),
        (true, None) => counted_tokens(&request.body),
    };
    let cache = match key {
        Some(key) => state.caches.openai(key, &body, prompt_tokens),
        None if vendor == Vendor::Anthropic => state.caches.anthropic(&body, prompt_tokens),
        None => Default::default(),
    };
    let reasoning = match (&state.reasoning, body.get("reasoning")) {
        (Some(summary), Some(_)) if vendor == Vendor::OpenaiResponses => {
            let encrypted = body
                .get("include")
                .and_then(Value::as_array)
                .is_some_and(|include| include.iter().any(|i| i == "reasoning.encrypted_content"));
            Some((summary.clone(), encrypted))
        }
        _ => None,
    };
    Served {
        prompt_tokens,
        cached_tokens: cache.read,
        cache_written_tokens: cache.written,
        reasoning,
        pending: catalog.as_ref().and(tool_search::anthropic_pending(&body)).filter(|_| vendor == Vendor::Anthropic),
        catalog,
        search: None,
        paused: false,
    }
}

fn answer(vendors: &[Vendor], state: &Mutex<State>, request: Recorded) -> Reply {
    let mut state = lock(state);
    let prompt_tokens = state.context_window.map_or(FLAT_PROMPT_TOKENS, |_| counted_tokens(&request.body));
    let mut refusal_body = None;
    let outcome = check(vendors, &state, &request).and_then(|checked| match state.context_window {
        Some(window) if prompt_tokens > window => {
            let (violation, body) = overflow_refusal(checked.0, window, prompt_tokens);
            refusal_body = Some(body);
            Err(violation)
        }
        _ => Ok(checked),
    });
    let vendor = outcome.as_ref().map(|(v, _, _)| *v).ok();
    let mut reported = (0, 0, 0);
    let reply = match &outcome {
        Ok((vendor, model, sse)) => {
            state.served += 1;
            let served = served(&mut state, *vendor, &request);
            reported = (served.prompt_tokens, served.cached_tokens, served.cache_written_tokens);
            let chosen = match (&state.responder, request.json()) {
                (Some(responder), Ok(body)) => responder(*vendor, &body),
                _ => None,
            };
            let answer = chosen.or_else(|| state.script.pop_front()).unwrap_or_else(|| state.fallback.clone());
            answer.reply(*vendor, model, state.served, *sse, &served)
        }
        Err(violation) => {
            tracing::warn!(%violation, path = %request.path, "fake refused a request");
            let body = refusal_body.unwrap_or_else(|| violation.body());
            Reply::error(violation.status, &body.to_string())
        }
    };
    let (prompt_tokens, cached_tokens, cache_written_tokens) = reported;
    let rejection = outcome.err();
    state.exchanges.push(Exchange { vendor, request, rejection, prompt_tokens, cached_tokens, cache_written_tokens });
    reply
}

/// A vendor's refusal of a request of `counted` tokens over a `window`: the rule it broke and the
/// body the vendor answers (HTTP 400), in each vendor's own words (see `crate::overflow`).
pub fn overflow_refusal(vendor: Vendor, window: u64, counted: u64) -> (Violation, Value) {
    let message = match vendor {
        Vendor::Openai => format!(
            "This model's maximum context length is {window} tokens. However, your messages resulted in \
             {counted} tokens. Please reduce the length of the messages."
        ),
        // The Responses API says no number.
        Vendor::OpenaiResponses => {
            "Your input exceeds the context window of this model. Please adjust your input and try again.".to_string()
        }
        Vendor::Anthropic => format!("prompt is too long: {counted} tokens > {window} maximum"),
        Vendor::Gemini => {
            format!("The input token count ({counted}) exceeds the maximum number of tokens allowed ({window}).")
        }
    };
    let param = match vendor {
        Vendor::OpenaiResponses => "input",
        _ => "messages",
    };
    let violation = Violation::new(vendor, message).param(param);
    let mut body = violation.body();
    if let Some(error) = body.get_mut("error").filter(|_| matches!(vendor, Vendor::Openai | Vendor::OpenaiResponses)) {
        error["code"] = Value::from("context_length_exceeded");
    }
    (violation, body)
}
