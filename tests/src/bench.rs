//! What the HTTP frontends' benchmarks share: timing one SSE answer as it arrives, running many
//! at once, percentiles, the figures both print, and finding the binary beside `examples/`. Benchmarks print figures;
//! nothing here asserts a timing.

use std::future::Future;
use std::time::{Duration, Instant};

/// One streamed answer, timed from the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamTiming {
    pub ttfb: Duration,
    pub first_content: Option<Duration>,
    pub total: Duration,
    /// SSE events read, and how many of them carried content.
    pub events: usize,
    pub content_events: usize,
    /// Whether an event ended the answer as it should (not an error event, not a cut stream).
    pub finished: bool,
}

/// Times an SSE body fed chunk by chunk. `is_content` tells the events that carry content;
/// `end` tells whether an event ends the answer (`Some(finished)`).
pub struct SseTimer<C, E> {
    start: Instant,
    text: String,
    timing: StreamTiming,
    first_byte: bool,
    is_content: C,
    end: E,
}

impl<C: Fn(&str) -> bool, E: Fn(&str) -> Option<bool>> SseTimer<C, E> {
    pub fn new(start: Instant, is_content: C, end: E) -> Self {
        SseTimer { start, text: String::new(), timing: StreamTiming::default(), first_byte: false, is_content, end }
    }

    /// Reads one chunk; answers the timing once an event ends the answer. Only whole events
    /// count; an unfinished one waits for the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Option<StreamTiming> {
        if !self.first_byte {
            self.first_byte = true;
            self.timing.ttfb = self.start.elapsed();
        }
        self.text.push_str(&String::from_utf8_lossy(chunk));
        while let Some(end) = self.text.find("\n\n") {
            let event: String = self.text.drain(..end + 2).collect();
            self.timing.events += 1;
            if (self.is_content)(&event) {
                self.timing.content_events += 1;
                self.timing.first_content.get_or_insert_with(|| self.start.elapsed());
            }
            if let Some(finished) = (self.end)(&event) {
                self.timing.total = self.start.elapsed();
                self.timing.finished = finished;
                return Some(self.timing);
            }
        }
        None
    }

    /// The timing of a stream that ended before any event ended the answer.
    pub fn cut(mut self) -> StreamTiming {
        self.timing.total = self.start.elapsed();
        self.timing.finished = false;
        self.timing
    }
}

/// Times the answer `resp` carries: an HTTP status other than 200 is an error; otherwise each
/// chunk goes to `timer` until an event ends the answer, or the body ends first (a cut
/// answer: not finished).
pub async fn time_response<C, E>(mut resp: reqwest::Response, mut timer: SseTimer<C, E>) -> Result<StreamTiming, String>
where
    C: Fn(&str) -> bool,
    E: Fn(&str) -> Option<bool>,
{
    if resp.status() != 200 {
        return Err(format!("HTTP {}", resp.status()));
    }
    while let Some(bytes) = resp.chunk().await.map_err(|e| e.to_string())? {
        if let Some(timing) = timer.feed(&bytes) {
            return Ok(timing);
        }
    }
    Ok(timer.cut())
}

/// What many answers at once came to.
#[derive(Debug, Default)]
pub struct Concurrent {
    /// Answers that finished as they should.
    pub finished: usize,
    /// Time to first byte and total time of every answer that came, sorted.
    pub ttfbs: Vec<Duration>,
    pub totals: Vec<Duration>,
    pub errors: Vec<String>,
    pub wall: Duration,
}

/// Runs `run(0)` .. `run(n - 1)` at once, each in its own task, and gathers their timings.
pub async fn concurrent<F, Fut>(n: usize, run: F) -> Concurrent
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<StreamTiming, String>> + Send + 'static,
{
    let start = Instant::now();
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(run(i))).collect();
    let mut out = Concurrent::default();
    for task in tasks {
        match task.await {
            Ok(Ok(timing)) => {
                out.finished += usize::from(timing.finished);
                out.ttfbs.push(timing.ttfb);
                out.totals.push(timing.total);
            }
            Ok(Err(err)) => out.errors.push(err),
            Err(err) => out.errors.push(format!("the task failed: {err}")),
        }
    }
    out.wall = start.elapsed();
    out.ttfbs.sort();
    out.totals.sort();
    out
}

/// The `p` quantile (0 to 1) of sorted durations; zero for none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// What an HTTP frontend's benchmark streams: `deltas` kernel deltas in one answer, then
/// `concurrent` answers of `concurrent_deltas` at once; `end` names the event that ends an
/// answer in its protocol (`RUN_FINISHED`, `[DONE]`).
pub struct StreamedAnswers {
    pub deltas: usize,
    pub concurrent: usize,
    pub concurrent_deltas: usize,
    pub end: &'static str,
}

/// Prints the figures both HTTP frontends' benchmarks give, through `stream(conversation,
/// prompt)`, the frontend's way of timing one answer on a conversation of its naming: a warm-up
/// (the first request starts the kernel), one long answer, then many at once, each on a
/// conversation of its own.
#[allow(clippy::print_stdout)] // a benchmark's figures are its output
pub async fn streamed_answers<F, Fut>(plan: StreamedAnswers, stream: F)
where
    F: Fn(String, String) -> Fut,
    Fut: Future<Output = Result<StreamTiming, String>> + Send + 'static,
{
    let StreamedAnswers { deltas, concurrent: n, concurrent_deltas, end } = plan;
    let warm = stream("bench-warm".into(), "hi".into()).await;
    match warm {
        Ok(warm) => println!("warm-up (kernel autostart included): {}", ms(warm.total)),
        Err(err) => return println!("the warm-up failed: {err}"),
    }

    let run = match stream("bench-one".into(), format!("@deltas {deltas}")).await {
        Ok(run) => run,
        Err(err) => return println!("the long answer failed: {err}"),
    };
    let streaming = run.total.saturating_sub(run.first_content.unwrap_or_default());
    println!("one streamed answer of {deltas} kernel deltas:");
    println!("  time to first byte        {}", ms(run.ttfb));
    println!("  time to first content     {}", run.first_content.map(ms).unwrap_or_else(|| "-".into()));
    println!("  {:<26}{}", format!("time to {end}"), ms(run.total));
    println!("  events                    {} ({} with content)", run.events, run.content_events);
    println!("  kernel deltas/s           {:.0} (whole answer)", deltas as f64 / run.total.as_secs_f64());
    println!(
        "  content events/s          {:.0} (first content to the end)",
        run.content_events as f64 / streaming.as_secs_f64().max(f64::EPSILON)
    );
    println!("  {:<26}{}", format!("ended with {end}"), run.finished);

    let all = concurrent(n, |i| stream(format!("bench-{i}"), format!("@deltas {concurrent_deltas}"))).await;
    let unfinished = all.ttfbs.len() - all.finished;
    println!("{n} concurrent answers (@deltas {concurrent_deltas}), each on its own conversation:");
    println!("  {:<26}{}/{n}", format!("finished with {end}"), all.finished);
    println!("  failed requests           {}", all.errors.len());
    println!("  cut or ended in error     {unfinished}");
    for err in all.errors.iter().take(5) {
        println!("    {err}");
    }
    println!(
        "  time to first byte p50    {}  p99 {}",
        ms(percentile(&all.ttfbs, 0.5)),
        ms(percentile(&all.ttfbs, 0.99))
    );
    println!(
        "  time to the end p50       {}  p99 {}",
        ms(percentile(&all.totals, 0.5)),
        ms(percentile(&all.totals, 0.99))
    );
    println!("  wall time                 {}", ms(all.wall));
}

/// A duration as milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Runs a benchmark's `main`: points `SUPERPI_BIN` at the `superpi` beside `examples/` (where
/// [`crate::superpi_bin`] does not look) unless it is set, then runs `bench` on a runtime.
pub fn run<F: Future>(bench: F) -> F::Output {
    use_binary_beside_examples();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(bench)
}

fn use_binary_beside_examples() {
    if std::env::var_os("SUPERPI_BIN").is_some() {
        return;
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent()?.parent().map(|d| d.to_path_buf())) {
        // SAFETY: `run` calls this before it starts the runtime, while no other thread exists.
        unsafe { std::env::set_var("SUPERPI_BIN", dir.join("superpi")) };
    }
}

/// A line of a process's `/proc/PID/status` in MiB (`VmRSS:`, `VmHWM:`); 0 when unread.
pub fn status_mib(pid: i32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}
