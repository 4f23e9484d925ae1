//! `GET /metrics`: the kernel's `kernel.metrics` as Prometheus text (exposition format 0.0.4):
//! a `# HELP` and `# TYPE` line per metric, a line per counter sample, and per histogram sample
//! its cumulative `_bucket` lines (with `le`, `+Inf` last), `_sum` and `_count`.

use std::fmt::Write;

use superpi_proto::method::{MetricKind, MetricSample, MetricsResult};

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metrics as Prometheus text.
pub fn render(metrics: &MetricsResult) -> String {
    let mut out = String::new();
    for family in &metrics.families {
        let kind = match family.kind {
            MetricKind::Counter => "counter",
            MetricKind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# HELP {} {}", family.name, escape_help(&family.help));
        let _ = writeln!(out, "# TYPE {} {kind}", family.name);
        for sample in &family.samples {
            match family.kind {
                MetricKind::Counter => line(&mut out, &family.name, sample, None, sample.value),
                MetricKind::Histogram => histogram(&mut out, &family.name, sample),
            }
        }
    }
    out
}

fn histogram(out: &mut String, name: &str, sample: &MetricSample) {
    let bucket = format!("{name}_bucket");
    for (bound, count) in &sample.buckets {
        line(out, &bucket, sample, Some(&number(*bound)), *count as f64);
    }
    let count = sample.count.unwrap_or(0) as f64;
    line(out, &bucket, sample, Some("+Inf"), count);
    line(out, &format!("{name}_sum"), sample, None, sample.value);
    line(out, &format!("{name}_count"), sample, None, count);
}

fn line(out: &mut String, name: &str, sample: &MetricSample, le: Option<&str>, value: f64) {
    out.push_str(name);
    let mut labels: Vec<(&str, &str)> = sample.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    if let Some(le) = le {
        labels.push(("le", le));
    }
    if !labels.is_empty() {
        let joined: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
        let _ = write!(out, "{{{}}}", joined.join(","));
    }
    let _ = writeln!(out, " {}", number(value));
}

/// A number as the format writes it (`1`, `0.25`, `+Inf`).
fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use superpi_proto::method::MetricFamily;

    #[test]
    fn counters_and_histograms_as_text() {
        let metrics = MetricsResult {
            families: vec![
                MetricFamily {
                    name: "superpi_tool_calls_total".into(),
                    help: "Tool calls ended.".into(),
                    kind: MetricKind::Counter,
                    samples: vec![MetricSample {
                        labels: [("status".to_string(), "ok".to_string()), ("tool".into(), "a\"b\\c\nd".into())].into(),
                        value: 3.0,
                        count: None,
                        buckets: vec![],
                    }],
                },
                MetricFamily {
                    name: "superpi_turn_duration_seconds".into(),
                    help: "How long.".into(),
                    kind: MetricKind::Histogram,
                    samples: vec![MetricSample {
                        labels: [("harness".to_string(), "superpi-code".to_string())].into(),
                        value: 0.75,
                        count: Some(2),
                        buckets: vec![(0.5, 1), (1.0, 2)],
                    }],
                },
            ],
        };
        assert_eq!(
            render(&metrics),
            "# HELP superpi_tool_calls_total Tool calls ended.\n\
             # TYPE superpi_tool_calls_total counter\n\
             superpi_tool_calls_total{status=\"ok\",tool=\"a\\\"b\\\\c\\nd\"} 3\n\
             # HELP superpi_turn_duration_seconds How long.\n\
             # TYPE superpi_turn_duration_seconds histogram\n\
             superpi_turn_duration_seconds_bucket{harness=\"superpi-code\",le=\"0.5\"} 1\n\
             superpi_turn_duration_seconds_bucket{harness=\"superpi-code\",le=\"1\"} 2\n\
             superpi_turn_duration_seconds_bucket{harness=\"superpi-code\",le=\"+Inf\"} 2\n\
             superpi_turn_duration_seconds_sum{harness=\"superpi-code\"} 0.75\n\
             superpi_turn_duration_seconds_count{harness=\"superpi-code\"} 2\n"
        );
    }
}
