//! What the kernel counts for `kernel.metrics` (the gateway renders it as Prometheus text at
//! `/metrics`): turns, model requests, tokens, tool calls and errors, with durations. Counted
//! where they end (the turn loop, the tool-call pipeline), kept in memory from the kernel's
//! start, one lock per update (these are per turn and per call, never per delta).

use std::collections::BTreeMap;
use std::time::Duration;

use superpi_proto::method::{MetricFamily, MetricKind, MetricSample, MetricsResult};

use crate::sync::lock;

/// One metric's name, help and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Def {
    name: &'static str,
    help: &'static str,
    histogram: bool,
}

pub(crate) const TURNS: Def =
    Def { name: "superpi_turns_total", help: "Turns ended, by harness and status.", histogram: false };
pub(crate) const TURN_SECONDS: Def =
    Def { name: "superpi_turn_duration_seconds", help: "How long turns took, by harness.", histogram: true };
pub(crate) const MODEL_REQUESTS: Def =
    Def { name: "superpi_model_requests_total", help: "Model requests ended, by model and status.", histogram: false };
pub(crate) const MODEL_SECONDS: Def = Def {
    name: "superpi_model_request_duration_seconds",
    help: "How long model requests took, by model.",
    histogram: true,
};
pub(crate) const TOKENS: Def =
    Def { name: "superpi_tokens_total", help: "Tokens the models reported, by model and kind.", histogram: false };
pub(crate) const COST: Def = Def {
    name: "superpi_cost_usd_total",
    help: "What the model calls cost in US dollars, by model (priced ones only).",
    histogram: false,
};
pub(crate) const TOOL_CALLS: Def =
    Def { name: "superpi_tool_calls_total", help: "Tool calls ended, by tool and status.", histogram: false };
pub(crate) const TOOL_SECONDS: Def =
    Def { name: "superpi_tool_call_duration_seconds", help: "How long tool calls took, by tool.", histogram: true };
pub(crate) const ERRORS: Def = Def {
    name: "superpi_errors_total",
    help: "Failures, by source: a turn, a model request or a tool call that ended in error.",
    histogram: false,
};

/// Every metric, in the order they are listed.
const ALL: [Def; 9] =
    [TURNS, TURN_SECONDS, MODEL_REQUESTS, MODEL_SECONDS, TOKENS, COST, TOOL_CALLS, TOOL_SECONDS, ERRORS];

/// Upper bounds of the duration buckets, in seconds.
const BUCKETS: [f64; 14] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

type Labels = Vec<(&'static str, String)>;

#[derive(Debug, Default, Clone)]
struct Histogram {
    sum: f64,
    count: u64,
    /// Observations per bucket (not cumulative), one per bound.
    buckets: [u64; BUCKETS.len()],
}

/// The kernel's counters and histograms.
#[derive(Default)]
pub(crate) struct Metrics {
    counters: std::sync::Mutex<BTreeMap<(Def, Labels), f64>>,
    histograms: std::sync::Mutex<BTreeMap<(Def, Labels), Histogram>>,
}

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

impl Metrics {
    /// Adds `by` to the counter `def` with these labels.
    pub fn add(&self, def: Def, pairs: &[(&'static str, &str)], by: u64) {
        *lock(&self.counters).entry((def, labels(pairs))).or_default() += by as f64;
    }

    /// Adds an amount (a cost) to the counter `def` with these labels.
    pub fn add_amount(&self, def: Def, pairs: &[(&'static str, &str)], by: f64) {
        *lock(&self.counters).entry((def, labels(pairs))).or_default() += by;
    }

    /// Records one duration in the histogram `def`.
    pub fn observe(&self, def: Def, pairs: &[(&'static str, &str)], took: Duration) {
        let seconds = took.as_secs_f64();
        let mut histograms = lock(&self.histograms);
        let h = histograms.entry((def, labels(pairs))).or_default();
        h.sum += seconds;
        h.count += 1;
        if let Some(i) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            h.buckets[i] += 1;
        }
    }

    /// Everything counted so far, every metric listed (with no samples until it has one).
    pub fn snapshot(&self) -> MetricsResult {
        let counters = lock(&self.counters).clone();
        let histograms = lock(&self.histograms).clone();
        let families = ALL
            .iter()
            .map(|def| {
                let label_map = |l: &Labels| l.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
                let samples = if def.histogram {
                    histograms
                        .iter()
                        .filter(|((d, _), _)| d == def)
                        .map(|((_, l), h)| {
                            let mut total = 0;
                            let buckets = BUCKETS
                                .iter()
                                .zip(h.buckets)
                                .map(|(bound, n)| {
                                    total += n;
                                    (*bound, total)
                                })
                                .collect();
                            MetricSample { labels: label_map(l), value: h.sum, count: Some(h.count), buckets }
                        })
                        .collect()
                } else {
                    counters
                        .iter()
                        .filter(|((d, _), _)| d == def)
                        .map(|((_, l), v)| MetricSample {
                            labels: label_map(l),
                            value: *v,
                            count: None,
                            buckets: vec![],
                        })
                        .collect()
                };
                let kind = if def.histogram { MetricKind::Histogram } else { MetricKind::Counter };
                MetricFamily { name: def.name.into(), help: def.help.into(), kind, samples }
            })
            .collect();
        MetricsResult { families }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_and_histograms_fill_cumulative_buckets() {
        let m = Metrics::default();
        m.add(TURNS, &[("harness", "superpi-code"), ("status", "completed")], 1);
        m.add(TURNS, &[("harness", "superpi-code"), ("status", "completed")], 2);
        m.add(TOKENS, &[("model", "mock"), ("kind", "input")], 40);
        m.observe(TOOL_SECONDS, &[("tool", "ls")], Duration::from_millis(20));
        m.observe(TOOL_SECONDS, &[("tool", "ls")], Duration::from_secs(400));
        let snap = m.snapshot();
        assert_eq!(snap.families.len(), ALL.len());
        let family = |name: &str| snap.families.iter().find(|f| f.name == name).unwrap().clone();
        let turns = family("superpi_turns_total");
        assert_eq!(turns.samples.len(), 1);
        assert_eq!(turns.samples[0].value, 3.0);
        assert_eq!(turns.samples[0].labels["status"], "completed");
        let tools = family("superpi_tool_call_duration_seconds");
        assert_eq!(tools.kind, MetricKind::Histogram);
        let sample = &tools.samples[0];
        assert_eq!(sample.count, Some(2));
        assert_eq!(sample.buckets.iter().find(|(b, _)| *b == 0.01).unwrap().1, 0);
        assert_eq!(sample.buckets.iter().find(|(b, _)| *b == 0.025).unwrap().1, 1);
        assert_eq!(sample.buckets.last().unwrap().1, 1, "400 s is past every bound: only +Inf has it");
        assert!(family("superpi_errors_total").samples.is_empty());
    }
}
