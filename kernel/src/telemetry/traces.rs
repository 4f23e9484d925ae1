//! OpenTelemetry traces over OTLP/HTTP: a turn is a span (`superpi.turn`), each model request
//! one below it (`chat MODEL`, with the tokens the model reported), each tool call one too
//! (`execute_tool NAME`). Exported only when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended) is set; otherwise a span costs a few
//! fields and is dropped. The export is OTLP's JSON encoding posted with the reqwest client
//! the kernel already has (no gRPC stack); spans wait in a bounded queue, and when the
//! collector is slower than the kernel the newest are dropped, never the turn. Prompts,
//! answers and arguments are never recorded.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Spans waiting for the exporter; past this they are dropped.
const QUEUE: usize = 4096;
/// Most spans in one export request.
const BATCH: usize = 512;

/// Where a span sits in its trace, for its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
}

/// A span being timed.
pub(crate) struct Span {
    context: SpanContext,
    parent: Option<[u8; 8]>,
    name: String,
    start_ns: u64,
    started: Instant,
    attributes: Vec<(&'static str, Value)>,
}

impl Span {
    /// Its context, for spans below it.
    pub fn context(&self) -> SpanContext {
        self.context
    }

    /// Adds an attribute (a string or an integer).
    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        self.attributes.push((key, value.into()));
    }

    /// How long it has run.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}

/// Makes spans and, when an endpoint is configured, exports them.
pub(crate) struct Tracer {
    exporter: Option<mpsc::Sender<Value>>,
}

impl Tracer {
    /// A tracer exporting to the endpoint the environment names, or none. Spawns the exporter
    /// on the current runtime.
    pub fn from_env() -> Tracer {
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
            var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
        });
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        match endpoint {
            Some(endpoint) if !disabled => {
                let service = var("OTEL_SERVICE_NAME").unwrap_or_else(|| "superpi".into());
                Tracer::exporting(endpoint, service)
            }
            _ => Tracer { exporter: None },
        }
    }

    fn exporting(endpoint: String, service: String) -> Tracer {
        let (tx, rx) = mpsc::channel(QUEUE);
        tracing::info!(%endpoint, "exporting traces over OTLP/HTTP");
        tokio::spawn(export(rx, endpoint, service));
        Tracer { exporter: Some(tx) }
    }

    /// A new span: the root of a new trace without a parent.
    pub fn start(&self, name: impl Into<String>, parent: Option<SpanContext>) -> Span {
        let mut span_id = [0u8; 8];
        let mut trace_id = parent.map(|p| p.trace_id).unwrap_or_default();
        if self.exporter.is_some() {
            let _ = getrandom::fill(&mut span_id);
            if parent.is_none() {
                let _ = getrandom::fill(&mut trace_id);
            }
        }
        Span {
            context: SpanContext { trace_id, span_id },
            parent: parent.map(|p| p.span_id),
            name: name.into(),
            start_ns: unix_ns(SystemTime::now()),
            started: Instant::now(),
            attributes: Vec::new(),
        }
    }

    /// Ends `span`: `Err(message)` marks it failed.
    pub fn end(&self, span: Span, outcome: Result<(), &str>) {
        let Some(exporter) = &self.exporter else { return };
        let end_ns = span.start_ns + span.started.elapsed().as_nanos() as u64;
        let status = match outcome {
            Ok(()) => json!({"code": 1}),
            Err(message) => json!({"code": 2, "message": message}),
        };
        let attributes: Vec<Value> =
            span.attributes.iter().map(|(k, v)| json!({"key": k, "value": any_value(v)})).collect();
        let record = json!({
            "traceId": hex(&span.context.trace_id),
            "spanId": hex(&span.context.span_id),
            "parentSpanId": span.parent.map(|p| hex(&p)).unwrap_or_default(),
            "name": span.name,
            // SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT for a request to a model.
            "kind": if span.name.starts_with("chat ") { 3 } else { 1 },
            "startTimeUnixNano": span.start_ns.to_string(),
            "endTimeUnixNano": end_ns.to_string(),
            "attributes": attributes,
            "status": status,
        });
        if exporter.try_send(record).is_err() {
            tracing::debug!("the trace exporter is behind: a span was dropped");
        }
    }
}

/// Posts the queued spans, a batch at a time, until the kernel drops the tracer.
async fn export(mut rx: mpsc::Receiver<Value>, endpoint: String, service: String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = match reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build() {
        Ok(client) => client,
        Err(err) => {
            tracing::warn!("traces are not exported: building the HTTP client: {err}");
            return;
        }
    };
    let resource = json!({"attributes": [
        {"key": "service.name", "value": {"stringValue": service}},
        {"key": "service.version", "value": {"stringValue": env!("CARGO_PKG_VERSION")}},
    ]});
    let mut failing = false;
    while let Some(first) = rx.recv().await {
        let mut spans = vec![first];
        while spans.len() < BATCH {
            match rx.try_recv() {
                Ok(span) => spans.push(span),
                Err(_) => break,
            }
        }
        let body = json!({"resourceSpans": [{
            "resource": resource,
            "scopeSpans": [{"scope": {"name": "superpi-kernel", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
        }]});
        let mut sent = client.post(&endpoint).json(&body).send().await;
        // A kept connection the collector closed meanwhile fails the send: once more, anew.
        if sent.as_ref().is_err_and(|e| e.is_request() || e.is_connect()) {
            sent = client.post(&endpoint).json(&body).send().await;
        }
        match sent.map(|r| r.status()) {
            Ok(status) if status.is_success() => failing = false,
            // One warning per run of failures, not one per batch.
            outcome if !failing => {
                failing = true;
                let why = outcome.map(|s| format!("HTTP {s}")).unwrap_or_else(|e| e.to_string());
                tracing::warn!(%endpoint, "exporting traces failed ({why}); spans are dropped until it works");
            }
            _ => {}
        }
    }
}

fn any_value(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::String(s) => json!({"stringValue": s}),
        other => json!({"stringValue": other.to_string()}),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}
