//! Waiting for what another process does: check until it holds, or fail the test saying what
//! never happened and what the last check saw. The one poll loop of the tests: a test waits on
//! an event, a channel or a process where it can, and polls here where nothing tells it.

use std::time::Duration;

/// How long a test waits for something that takes milliseconds on a quiet machine: long
/// enough for a loaded CI machine, short enough to fail before the suite's timeout.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How often a condition is checked.
const EVERY: Duration = Duration::from_millis(20);

/// What a check answers: done (with a value), or not yet (with what it saw, for the failure).
pub trait Check {
    type Value;
    fn done(self) -> Result<Self::Value, String>;
}

impl Check for bool {
    type Value = ();
    fn done(self) -> Result<(), String> {
        if self { Ok(()) } else { Err(String::new()) }
    }
}

impl<T> Check for Option<T> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

impl<T, E: std::fmt::Display> Check for Result<T, E> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.map_err(|err| err.to_string())
    }
}

/// Checks `check` every 20 ms until it is done, for at most `limit`; panics with `what` (and
/// the last check's answer) after that.
pub async fn until<C: Check>(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> C) -> C::Value {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let last = match check().await.done() {
            Ok(value) => return value,
            Err(last) => last,
        };
        assert!(tokio::time::Instant::now() < deadline, "{}", never(what, limit, &last));
        tokio::time::sleep(EVERY).await;
    }
}

/// [`until`] for a test without a runtime: the thread sleeps between checks.
pub fn until_blocking<C: Check>(what: &str, limit: Duration, mut check: impl FnMut() -> C) -> C::Value {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let last = match check().done() {
            Ok(value) => return value,
            Err(last) => last,
        };
        assert!(std::time::Instant::now() < deadline, "{}", never(what, limit, &last));
        std::thread::sleep(EVERY);
    }
}

fn never(what: &str, limit: Duration, last: &str) -> String {
    let mut text = format!("{what}: not within {:?}", limit);
    if !last.is_empty() {
        text.push_str(&format!(" (last: {last})"));
    }
    text
}
