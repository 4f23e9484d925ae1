//! The turn loop's and the pipeline's one way to report: each start and end of a turn, a model
//! request and a tool call is counted (`metrics.rs`) and traced (`traces.rs`) here.

pub(crate) mod metrics;
pub(crate) mod traces;

use superpi_proto::Usage;

use crate::telemetry::traces::{Span, SpanContext, Tracer};
use metrics::Metrics;

/// The kernel's metrics and tracer.
pub(crate) struct Telemetry {
    pub metrics: Metrics,
    tracer: Tracer,
}

/// A running turn, as telemetry sees it.
pub(crate) struct TurnMark {
    span: Span,
    harness: String,
}

impl TurnMark {
    /// The turn's span, parent of its model requests and tool calls.
    pub fn context(&self) -> SpanContext {
        self.span.context()
    }
}

impl Telemetry {
    /// Metrics, and traces when the environment names an OTLP endpoint.
    pub fn from_env() -> Telemetry {
        Telemetry { metrics: Metrics::default(), tracer: Tracer::from_env() }
    }

    pub fn turn_started(&self, conversation_id: i64, turn_id: i64, harness: &str, model: &str) -> TurnMark {
        let mut span = self.tracer.start("superpi.turn", None);
        span.set("superpi.conversation_id", conversation_id);
        span.set("superpi.turn_id", turn_id);
        span.set("superpi.harness", harness);
        span.set("gen_ai.request.model", model);
        TurnMark { span, harness: harness.to_string() }
    }

    /// `status`: `completed`, `cancelled` or `error` (with its message).
    pub fn turn_ended(&self, mut mark: TurnMark, status: &str, error: Option<&str>) {
        let harness = mark.harness.as_str();
        self.metrics.add(metrics::TURNS, &[("harness", harness), ("status", status)], 1);
        self.metrics.observe(metrics::TURN_SECONDS, &[("harness", harness)], mark.span.elapsed());
        if error.is_some() {
            self.metrics.add(metrics::ERRORS, &[("source", "turn")], 1);
        }
        mark.span.set("superpi.turn.status", status);
        self.tracer.end(mark.span, error.map_or(Ok(()), Err));
    }

    pub fn model_started(&self, turn: SpanContext, model: &str) -> Span {
        let mut span = self.tracer.start(format!("chat {model}"), Some(turn));
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.request.model", model);
        span
    }

    /// `status`: `ok`, `cancelled` or `error` (with its message); `usage` as the model reported.
    pub fn model_ended(&self, mut span: Span, model: &str, status: &str, usage: Option<Usage>, error: Option<&str>) {
        self.metrics.add(metrics::MODEL_REQUESTS, &[("model", model), ("status", status)], 1);
        self.metrics.observe(metrics::MODEL_SECONDS, &[("model", model)], span.elapsed());
        if let Some(usage) = usage {
            self.metrics.add(metrics::TOKENS, &[("model", model), ("kind", "input")], usage.input_tokens);
            self.metrics.add(metrics::TOKENS, &[("model", model), ("kind", "output")], usage.output_tokens);
            span.set("gen_ai.usage.input_tokens", usage.input_tokens);
            span.set("gen_ai.usage.output_tokens", usage.output_tokens);
        }
        if error.is_some() {
            self.metrics.add(metrics::ERRORS, &[("source", "model")], 1);
        }
        self.tracer.end(span, error.map_or(Ok(()), Err));
    }

    /// A tool call's span, below its turn's when a turn made it.
    /// What a model call (or an agent program's turn) cost, in US dollars.
    pub fn cost(&self, model: &str, usd: f64) {
        self.metrics.add_amount(metrics::COST, &[("model", model)], usd);
    }

    pub fn tool_started(&self, turn: Option<SpanContext>, tool: &str) -> Span {
        let mut span = self.tracer.start(format!("execute_tool {tool}"), turn);
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", tool);
        span
    }

    /// `status`: `ok`, `error` (the tool's result is an error) or `blocked` (refused before it ran).
    pub fn tool_ended(&self, mut span: Span, tool: &str, status: &str) {
        self.metrics.add(metrics::TOOL_CALLS, &[("tool", tool), ("status", status)], 1);
        self.metrics.observe(metrics::TOOL_SECONDS, &[("tool", tool)], span.elapsed());
        if status == "error" {
            self.metrics.add(metrics::ERRORS, &[("source", "tool")], 1);
        }
        span.set("superpi.tool.status", status);
        self.tracer.end(span, if status == "ok" { Ok(()) } else { Err(status) });
    }
}
