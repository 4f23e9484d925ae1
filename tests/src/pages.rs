//! Conversations longer than one `session.history` page (8 MiB or 1,000 entries), and ones
//! whose stored events pass 64 MiB, for the tests that replay them through each frontend, and
//! the peak memory of a process that does.

use std::io::Read;
use std::process::{Command, Stdio};

use superpi_client::KernelClient;
use superpi_proto::method::OpenParams;

use crate::TestEnv;

/// A prompt's length: the mock echoes a prompt back, so a turn stores twice this, and two
/// turns pass the 8 MiB a history page stops at.
pub const PROMPT_BYTES: usize = 3 * 1024 * 1024;

/// Lets the mock model's context hold a conversation of many MiB, so that no compaction
/// comes between a test and the size it builds. Call it before the kernel starts.
pub fn large_context(env: &TestEnv) {
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        "[providers]\n[[providers.models]]\nname = \"mock\"\nprovider = \"mock\"\ncontext_window = 100000000\n",
    )
    .expect("write providers.toml");
}

/// The prompt of turn `n`: its number, then filler to [`PROMPT_BYTES`].
pub fn prompt(n: usize) -> String {
    prompt_of(n, PROMPT_BYTES)
}

fn prompt_of(n: usize, bytes: usize) -> String {
    let head = format!("turn {n} ");
    format!("{head}{}", "x".repeat(bytes - head.len()))
}

/// The prompts of a [`conversation_over_64_mib`]: echoed, each turn stores twice this.
pub const LARGE_PROMPT_BYTES: usize = 5 * 1024 * 1024;
/// The turns of a [`conversation_over_64_mib`]: 7 × 2 × 5 MiB = 70 MiB of stored events.
pub const LARGE_TURNS: usize = 7;

/// A conversation whose stored events exceed 64 MiB ([`LARGE_TURNS`] turns of
/// [`LARGE_PROMPT_BYTES`] prompts and their echoes), opened by a client of `frontend`, the
/// mock's context made large first (call it before the kernel starts). Returns its id.
pub async fn conversation_over_64_mib(env: &TestEnv, frontend: &str) -> i64 {
    let conversation_id = conversation_of(env, frontend, None, LARGE_TURNS, LARGE_PROMPT_BYTES).await;
    let stored = stored_event_bytes(env, conversation_id);
    assert!(stored > 64 << 20, "stored {stored} bytes of events");
    conversation_id
}

/// The bytes of a conversation's stored events (their wire JSON), read from the SQLite store.
pub fn stored_event_bytes(env: &TestEnv, conversation_id: i64) -> i64 {
    let db = rusqlite::Connection::open(env.database_path()).expect("open the store");
    db.query_row("SELECT SUM(LENGTH(wire)) FROM events WHERE conversation_id = ?1", [conversation_id], |r| r.get(0))
        .expect("sum the events")
}

/// A conversation longer than one history page, for a replay test: the mock's context made
/// large (before the kernel starts), then a conversation opened in the workspace by a client
/// of `frontend` (with `external_id` when given) and `turns` turns of [`prompt`]s run in it,
/// each to its end. Returns its id.
pub async fn multi_page_conversation(env: &TestEnv, frontend: &str, external_id: Option<&str>, turns: usize) -> i64 {
    let conversation_id = conversation_of(env, frontend, external_id, turns, PROMPT_BYTES).await;
    let client = KernelClient::connect(&env.connect_options(frontend)).await.expect("connect");
    let first = client.history_page(conversation_id, None).await.expect("history");
    assert!(first.more || turns < 2, "{turns} turns fill more than one page");
    conversation_id
}

/// `turns` turns of `prompt_bytes` prompts, each run to its end, in a conversation opened by a
/// client of `frontend` once the mock's context is made large.
async fn conversation_of(
    env: &TestEnv,
    frontend: &str,
    external_id: Option<&str>,
    turns: usize,
    prompt_bytes: usize,
) -> i64 {
    large_context(env);
    let client = KernelClient::connect(&env.connect_options(frontend)).await.expect("connect");
    let open = OpenParams {
        workspace: Some(env.workspace.display().to_string()),
        external_id: external_id.map(str::to_string),
        ..Default::default()
    };
    let conversation_id = client.open(open).await.expect("open").conversation_id;
    let mut sub = crate::watch(&client, conversation_id, None).await;
    for n in 0..turns {
        let turn = client.submit_text(conversation_id, &prompt_of(n, prompt_bytes)).await.expect("submit");
        let events = crate::turn_events(&mut sub, turn.turn_id).await;
        let end = &events.last().expect("a turn end").body;
        assert!(matches!(end, superpi_proto::EventBody::TurnCompleted { .. }), "turn {n} ended otherwise");
    }
    conversation_id
}

/// Runs `cmd` to its end: whether it succeeded, its stdout, and its peak resident memory in
/// bytes. The peak is the process's own high-water mark (`VmHWM`), read each time a piece of
/// its output is taken: it blocks on a full pipe until then, so the last reading follows
/// everything but its exit. (`wait4`'s `ru_maxrss` would not do: Linux carries the spawning
/// test process's peak into it across exec.)
pub fn output_with_peak_rss(mut cmd: Command) -> (bool, Vec<u8>, u64) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let pid = child.id();
    let high_water = || peak_rss(pid);
    let (mut out, mut peak) = (Vec::new(), 0);
    let mut chunk = vec![0; 64 * 1024];
    loop {
        let n = stdout.read(&mut chunk).expect("read stdout");
        peak = peak.max(high_water().unwrap_or(0));
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
    }
    let status = child.wait().expect("wait");
    (status.success(), out, peak)
}

/// Asserts that a replay of a [`multi_page_conversation`] of `turns` turns said each prompt
/// and its echo once and in order: `said` holds each message's role (`user` or `assistant`)
/// and text. Kinds, lengths and starts are compared first, so a mismatch prints lines, not
/// megabytes.
pub fn assert_replayed(said: &[(String, String)], turns: usize) {
    assert_replayed_of(said, turns, PROMPT_BYTES);
}

/// [`assert_replayed`] for a [`conversation_over_64_mib`].
pub fn assert_replayed_over_64_mib(said: &[(String, String)]) {
    assert_replayed_of(said, LARGE_TURNS, LARGE_PROMPT_BYTES);
}

fn assert_replayed_of(said: &[(String, String)], turns: usize, prompt_bytes: usize) {
    let expected: Vec<(String, String)> = (0..turns)
        .map(|n| prompt_of(n, prompt_bytes))
        .flat_map(|p| [("user".to_string(), p.clone()), ("assistant".to_string(), p)])
        .collect();
    let digest = |v: &[(String, String)]| -> Vec<(String, usize, String)> {
        v.iter().map(|(k, t)| (k.clone(), t.len(), t.chars().take(12).collect())).collect()
    };
    assert_eq!(digest(said), digest(&expected));
    assert!(said == expected, "the same kinds, lengths and starts, but other text");
}

/// A running process's peak resident memory in bytes (its `VmHWM`).
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}
