//! The vendor-neutral layer: an HTTP POST answered by an event stream, retries on 429, 529 and
//! 503 (honouring Retry-After, capped), and the driver that feeds the bytes through a vendor's
//! parser into a [`StreamBuilder`]. Knows no vendor's JSON.

use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::Provider;
use crate::assemble::StreamBuilder;
use crate::auth::TokenCache;
use crate::config::{ProviderKind, ProvidersConfig, RetryConfig};
use crate::route::{Auth, Route};
use crate::sse::{SseDecoder, SseEvent};
use crate::stream::{EventStream, ModelRequest, ProviderError, StreamEvent};
use crate::vendor::{wire_api, wire_for};
pub use crate::wire::error_message;
pub use crate::wire_api::{WireApi, WireParser, WireRequest};

/// The new parser for a vendor.
pub fn parser_for(kind: ProviderKind) -> Box<dyn WireParser> {
    (wire_api(kind).parser)()
}

/// Parses a recorded body (split as given) into events, as the provider would stream them.
/// For tests and benchmarks.
pub fn parse_recorded<'a>(kind: ProviderKind, chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<StreamEvent> {
    parse_recorded_by(wire_api(kind), chunks)
}

/// [`parse_recorded`] by the parser of `api` (OpenAI's Responses API:
/// [`crate::openai_responses::RESPONSES`]).
pub fn parse_recorded_by<'a>(api: &'static WireApi, chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<StreamEvent> {
    let mut builder = StreamBuilder::new();
    builder.start(None);
    let mut feeder = Feeder::new(api);
    let mut result = Ok(());
    for chunk in chunks {
        result = feeder.feed(chunk, &mut builder);
        if result.is_err() || builder.is_finished() {
            break;
        }
    }
    if let Err(err) = result.and_then(|()| feeder.end(&mut builder)) {
        builder.fail(err);
    }
    builder.drain().collect()
}

/// SSE decoding plus the vendor parser.
struct Feeder {
    provider: &'static str,
    decoder: SseDecoder,
    parser: Box<dyn WireParser>,
    scratch: Vec<SseEvent>,
}

impl Feeder {
    fn new(api: &'static WireApi) -> Self {
        Feeder { provider: api.kind.as_str(), decoder: SseDecoder::new(), parser: (api.parser)(), scratch: Vec::new() }
    }

    /// Feeds a chunk; an error ends the attempt (the caller decides between retry and failure).
    fn feed(&mut self, chunk: &[u8], builder: &mut StreamBuilder) -> Result<(), ProviderError> {
        self.decoder
            .feed(chunk, &mut self.scratch)
            .map_err(|err| ProviderError::Protocol { provider: self.provider.into(), message: err.to_string() })?;
        for event in self.scratch.drain(..) {
            if builder.is_finished() {
                break;
            }
            self.parser.event(&event, builder)?;
        }
        Ok(())
    }

    /// The body ended.
    fn end(&mut self, builder: &mut StreamBuilder) -> Result<(), ProviderError> {
        if builder.is_finished() {
            return Ok(());
        }
        self.decoder.finish(&mut self.scratch);
        for event in std::mem::take(&mut self.scratch) {
            self.parser.event(&event, builder)?;
        }
        if builder.is_finished() { Ok(()) } else { self.parser.end(builder) }
    }
}

/// The HTTP client, shared by every provider with the same connect timeout so that turns reuse
/// pooled connections.
fn client(config: &ProvidersConfig) -> Result<reqwest::Client, ProviderError> {
    static CLIENTS: OnceLock<Mutex<Vec<(Duration, reqwest::Client)>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(|| {
        // Another part of the program may have installed a crypto provider already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Mutex::new(Vec::new())
    });
    let timeout = config.connect_timeout();
    let mut clients = clients.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, client)) = clients.iter().find(|(t, _)| *t == timeout) {
        return Ok(client.clone());
    }
    let client =
        reqwest::Client::builder().connect_timeout(timeout).read_timeout(Duration::from_secs(300)).build().map_err(
            |err| ProviderError::Transport {
                provider: "http".into(),
                message: format!("building the client: {}", error_chain(&err)),
            },
        )?;
    clients.push((timeout, client.clone()));
    Ok(client)
}

/// A real model API behind the stream algebra.
pub struct HttpProvider {
    api: &'static WireApi,
    route: Route,
    client: reqwest::Client,
    retry: RetryConfig,
    tokens: Option<Arc<TokenCache>>,
}

impl HttpProvider {
    pub fn new(route: Route, config: &ProvidersConfig) -> Result<Self, ProviderError> {
        let tokens = match &route.auth {
            Auth::Command { argv, timeout, runner } => {
                Some(Arc::new(TokenCache::new(route.kind.as_str(), argv.clone(), *timeout, runner.clone())))
            }
            _ => None,
        };
        Ok(HttpProvider { api: wire_for(&route), client: client(config)?, retry: config.retry, tokens, route })
    }

    pub fn route(&self) -> &Route {
        &self.route
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        self.route.kind.as_str()
    }

    fn structured_output(&self) -> bool {
        self.api.structured_output
    }

    fn tool_search(&self) -> bool {
        self.route.tool_search && (self.api.tool_search)(&self.route.model)
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let wire = (self.api.build_request)(&self.route, &request);
        // Tools whose names the API does not take are offered under a cleaned name; calls to
        // that name are reported under the tool's own.
        let renames: Vec<(String, String)> = request
            .tools
            .iter()
            .filter_map(|tool| match (self.api.tool_name)(&tool.name) {
                std::borrow::Cow::Owned(wire) => Some((wire, tool.name.clone())),
                std::borrow::Cow::Borrowed(_) => None,
            })
            .collect();
        let mut builder = StreamBuilder::new();
        builder.start(None);
        let driver = Driver {
            builder,
            phase: Phase::Connect,
            retries: 0,
            kind: self.route.kind,
            api: self.api,
            renames,
            auth: self.route.auth.clone(),
            tokens: self.tokens.clone(),
            client: self.client.clone(),
            retry: self.retry,
            wire,
            adjusted: false,
        };
        Box::pin(futures::stream::unfold(driver, |mut driver| async move {
            let event = driver.next().await?;
            Some((event, driver))
        }))
    }
}

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

enum Phase {
    Connect,
    Wait(Duration),
    Streaming(Body, Box<Feeder>),
}

struct Driver {
    builder: StreamBuilder,
    phase: Phase,
    retries: u32,
    kind: ProviderKind,
    api: &'static WireApi,
    /// (name sent, tool's name) for tools offered under a cleaned name.
    renames: Vec<(String, String)>,
    auth: Auth,
    tokens: Option<Arc<TokenCache>>,
    client: reqwest::Client,
    retry: RetryConfig,
    wire: WireRequest,
    /// The request was remade once after a refusal ([`WireApi::adjust`]).
    adjusted: bool,
}

/// Why an attempt did not start streaming.
enum OpenFailure {
    Retryable { wait: Option<Duration>, error: ProviderError },
    Fatal(ProviderError),
}

impl Driver {
    fn provider(&self) -> String {
        self.kind.as_str().to_string()
    }

    async fn next(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(event) = self.builder.pop() {
                return Some(rename_tools(event, &self.renames));
            }
            if self.builder.is_finished() {
                return None;
            }
            match std::mem::replace(&mut self.phase, Phase::Connect) {
                Phase::Connect => match self.open().await {
                    Ok(body) => {
                        self.phase = Phase::Streaming(body, Box::new(Feeder::new(self.api)));
                    }
                    Err(OpenFailure::Retryable { wait, error }) => self.retry_or_fail(error, wait),
                    Err(OpenFailure::Fatal(error)) => match (self.api.adjust)(&self.wire, &error) {
                        // Nothing streamed yet: the remade request goes at once, in the same attempt.
                        Some(wire) if !self.adjusted => {
                            tracing::warn!(provider = %self.provider(), %error, "sending the request again without what was refused");
                            self.wire = wire;
                            self.adjusted = true;
                        }
                        _ => self.builder.fail(error),
                    },
                },
                Phase::Wait(wait) => tokio::time::sleep(wait).await,
                Phase::Streaming(mut body, mut feeder) => match body.next().await {
                    Some(Ok(chunk)) => match feeder.feed(&chunk, &mut self.builder) {
                        Ok(()) => self.phase = Phase::Streaming(body, feeder),
                        Err(error) => self.retry_or_fail(error, None),
                    },
                    Some(Err(err)) => self.builder.fail(ProviderError::Transport {
                        provider: self.provider(),
                        message: format!("the stream was cut: {}", error_chain(&err)),
                    }),
                    None => {
                        if let Err(error) = feeder.end(&mut self.builder) {
                            self.retry_or_fail(error, None);
                        }
                    }
                },
            }
        }
    }

    /// Retries an overload or rate limit (an HTTP status, or an error event inside a stream)
    /// while attempts remain, announcing it with `Reset`; otherwise ends with the error.
    fn retry_or_fail(&mut self, error: ProviderError, wait: Option<Duration>) {
        // An error event inside a stream may be an overflow too (llama.cpp, LM Studio).
        let error = crate::overflow::classify(error);
        let retryable = matches!(error, ProviderError::Http { status: 429 | 503 | 529, .. });
        if !retryable || self.retries >= self.retry.max_retries {
            self.builder.fail(error);
            return;
        }
        let backoff = self.retry.initial_backoff_ms.saturating_mul(1 << self.retries.min(20));
        let wait = wait.unwrap_or(Duration::from_millis(backoff)).min(Duration::from_millis(self.retry.max_backoff_ms));
        tracing::warn!(provider = %self.provider(), %error, retry_in_ms = wait.as_millis() as u64, "retrying");
        self.retries += 1;
        self.builder.reset(wait.as_millis() as u64);
        self.phase = Phase::Wait(wait);
    }

    async fn open(&mut self) -> Result<Body, OpenFailure> {
        let mut request = self.client.post(&self.wire.url).body(self.wire.body.clone());
        for (name, value) in &self.wire.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let bearer = match (&self.auth, &self.tokens) {
            (Auth::Command { .. }, Some(tokens)) => Some(tokens.token().await.map_err(OpenFailure::Fatal)?),
            (Auth::Key(key), _) => {
                let (name, value) = self.api.key_header(key);
                request = request.header(name, value);
                None
            }
            _ => None,
        };
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|err| {
            OpenFailure::Fatal(ProviderError::Transport { provider: self.provider(), message: error_chain(&err) })
        })?;
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(Box::pin(response.bytes_stream()));
        }
        let wait = retry_after(response.headers());
        let body = response.text().await.unwrap_or_default();
        // A refusal for the context window's sake is told apart here, where the body is.
        let error = crate::overflow::http_error(&self.provider(), status, &body);
        if matches!(status, 429 | 503 | 529) {
            Err(OpenFailure::Retryable { wait, error })
        } else {
            Err(OpenFailure::Fatal(error))
        }
    }
}

/// An event with tool names mapped back from the names the API was offered.
fn rename_tools(mut event: StreamEvent, renames: &[(String, String)]) -> StreamEvent {
    if renames.is_empty() {
        return event;
    }
    let original = |name: &mut String| {
        if let Some((_, tool)) = renames.iter().find(|(wire, _)| wire == name) {
            *name = tool.clone();
        }
    };
    match &mut event {
        StreamEvent::ToolCallStart { name: Some(name), .. } | StreamEvent::ToolCallDelta { name: Some(name), .. } => {
            original(name)
        }
        StreamEvent::ToolCallEnd { name, .. } => original(name),
        StreamEvent::Done(terminal) | StreamEvent::Error(terminal) => {
            for block in &mut terminal.message.content {
                if let superpi_proto::ContentBlock::ToolCall { name, .. } = block {
                    original(name);
                }
            }
        }
        _ => {}
    }
    event
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    message
}

/// The wait a 429/503/529 asks for: `retry-after-ms`, or `retry-after` in seconds.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).map(str::to_string);
    if let Some(ms) = read("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_millis(ms as u64));
    }
    let value = read("retry-after")?;
    if let Some(seconds) = value.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0) {
        return Some(Duration::from_millis((seconds.min(86_400.0) * 1000.0) as u64));
    }
    let at = http_date_seconds(&value)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date_seconds(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut hms = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || !(0..24).contains(&h) || !(0..60).contains(&m) || !(0..=60).contains(&sec) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + sec).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_http_dates() {
        assert_eq!(http_date_seconds("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(http_date_seconds("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date_seconds("Tue, 29 Feb 2028 12:00:00 GMT"), Some(1_835_438_400));
        assert_eq!(http_date_seconds("soon"), None);
        assert_eq!(http_date_seconds("Sun, 06 Nov 1994 08:49:37 PST"), None);
    }

    #[test]
    fn reads_retry_after_headers() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut past = reqwest::header::HeaderMap::new();
        past.insert("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap());
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        let mut junk = reqwest::header::HeaderMap::new();
        junk.insert("retry-after", "-1".parse().unwrap());
        assert_eq!(retry_after(&junk), None);
    }

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(error_message(r#"{"error":{"message":"bad key"}}"#), "bad key");
        assert_eq!(error_message(r#"{"type":"error","error":{"type":"x","message":"Overloaded"}}"#), "Overloaded");
        assert_eq!(error_message(r#"{"message":"flat"}"#), "flat");
        assert_eq!(error_message("<html>gateway</html>"), "<html>gateway</html>");
        assert_eq!(error_message(""), "(empty body)");
    }
}
