//! End to end: schedules and webhook triggers, through the real `superpi` binary, its kernel
//! and its gateway, with the mock model.
//!
//! - A cron schedule whose tick passed while no kernel ran runs once when a kernel starts (not
//!   once per missed tick), its next tick moves to the future, and a kernel started again does
//!   not run it again; its run cannot create schedules.
//! - A webhook trigger's delivery through the gateway starts a turn with the body as fenced
//!   payload; a wrong secret, a missing one and an unknown token are 401 in the gateway's
//!   error shape; a question the run would ask fails closed although a person watches; a
//!   delivery sent again (same id, or same signature under a new id) and one signed 10 minutes
//!   ago are 401; a burst past the allowance is 429 with Retry-After.
//! - Of two kernels on one PostgreSQL database, one runs a due tick.
//! - A schedule without catch-up skips a tick missed while no kernel ran: no run, its next
//!   tick in the future.
//! - A trigger whose runs fail three times in a row is paused (401, a warning notice, a line in
//!   `schedule list`) until `superpi schedule resume`; a delivery's `Idempotency-Key` sent
//!   again answers the run it started (202, `repeated`), paused or not, and starts no other.
//! - A `fork` trigger runs in a fork of its conversation (whose transcript stays as it was),
//!   with the payload where the prompt's `{{payload}}` is; a `fresh` one in a new conversation
//!   without the history; a harness without `webhooks` takes no trigger.
//! - The librarian's model schedules, lists and cancels its own conversation's runs.
//! - The librarian offers file tools in its scratch workspace, and no shell.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_proto::method::WatchParams;
use superpi_proto::schedule::{DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use superpi_tests::wait::{PATIENCE, until};
use superpi_tests::{TestEnv, first_turn_end, postgres_server, turn_events};

/// `superpi ARGS --json` to its end: its stdout as JSON.
fn run_json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.command(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "superpi {args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("superpi {args:?} printed no JSON ({e}): {stdout}"))
}

fn now_ms() -> i64 {
    superpi_proto::event::now_ms()
}

/// Moves a schedule's next tick, in the store of a stopped kernel: as if no kernel had run
/// over that tick.
fn set_next_tick(env: &TestEnv, schedule: i64, at_ms: i64) {
    let db = rusqlite::Connection::open(env.database_path()).unwrap();
    let moved = db.execute("UPDATE schedules SET next_at_ms = ?1 WHERE id = ?2", [at_ms, schedule]).unwrap();
    assert_eq!(moved, 1);
}

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.unwrap()
}

/// The user prompts of a conversation's history.
async fn prompts(client: &KernelClient, conversation_id: i64) -> Vec<String> {
    let history = client.history(conversation_id).await.unwrap();
    history.entries.iter().filter(|e| e.kind == superpi_proto::EntryKind::User).map(|e| e.message.text()).collect()
}

const SCHEDULE_AGAIN: &str = r#"@tool schedule_create {"prompt": "again", "cron": "0 8 * * *"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_due_in_the_past_runs_once_after_a_kernel_restart() {
    let env = TestEnv::new();
    let prompt = format!("{SCHEDULE_AGAIN}\nWrite the yearly digest.");
    let added = run_json(
        &env,
        &["schedule", "add", "--cron", "0 0 1 1 *", "--tz", "Europe/London", "--name", "new year", "--json", &prompt],
    );
    let schedule = added["schedule"]["id"].as_i64().unwrap();
    let conversation = added["schedule"]["conversation_id"].as_i64().unwrap();
    assert!(added["schedule"]["next_at_ms"].as_i64().unwrap() > now_ms(), "{added}");
    assert_eq!(added["token"], Value::Null, "a cron schedule has no token");

    // The kernel is down over the tick, and over two hours after it.
    env.kill_kernel();
    let missed = now_ms() - 3 * 3_600_000;
    set_next_tick(&env, schedule, missed);

    // A kernel starts (the client starts it) and runs the missed tick, once.
    let client = connect(&env).await;
    let end = first_turn_end(&client, conversation).await;
    assert!(matches!(end, EventBody::TurnCompleted { .. }), "{end:?}");
    let listed = client.schedule_list(Some(10)).await.unwrap();
    assert_eq!(listed.len(), 1, "a scheduled run created a schedule: {listed:?}");
    let s = &listed[0];
    assert_eq!((s.run_count, s.failures, s.runs.len()), (1, 0, 1), "{s:?}");
    assert_eq!((s.runs[0].due_at_ms, s.runs[0].status.as_str()), (Some(missed), "completed"));
    assert!(s.next_at_ms.unwrap() > now_ms(), "the next tick is to come: {s:?}");
    assert_eq!(prompts(&client, conversation).await, [prompt]);
    // The run asked to schedule more: refused, since nobody is there to stop them.
    let history = client.history(conversation).await.unwrap();
    let refused = history.entries.iter().any(|e| e.message.text().contains("a scheduled run cannot create schedules"));
    assert!(refused, "{:?}", history.entries);

    // Down again, with a second schedule's tick passed: once the restarted kernel has run that
    // one, its look at the due schedules is done, and the first was not among them.
    drop(client);
    env.kill_kernel();
    let second = run_json(&env, &["schedule", "add", "--cron", "@daily", "--json", "Tidy the notes."]);
    env.kill_kernel();
    set_next_tick(&env, second["schedule"]["id"].as_i64().unwrap(), now_ms() - 60_000);
    let client = connect(&env).await;
    first_turn_end(&client, second["schedule"]["conversation_id"].as_i64().unwrap()).await;
    let listed = client.schedule_list(Some(10)).await.unwrap();
    assert_eq!(listed.iter().map(|s| s.run_count).collect::<Vec<_>>(), [1, 1], "{listed:?}");
    assert_eq!(prompts(&client, conversation).await.len(), 1, "the first schedule ran again");

    // Removed, it is gone from the list with its runs.
    client.schedule_remove(schedule).await.unwrap();
    assert_eq!(client.schedule_list(None).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_kernels_on_one_postgresql_database_one_runs_a_due_tick() {
    let Some(server) = postgres_server::shared() else { return };
    let url = server.new_database();
    let vars = [("SUPERPI_DATABASE_URL", url.as_str())];
    let added = {
        let env = TestEnv::new();
        let (_kernel, client) = env.start_kernel(&vars).await;
        let params = superpi_proto::schedule::ScheduleAddParams {
            prompt: "Write the yearly digest.".into(),
            cron: Some("0 0 1 1 *".into()),
            ..Default::default()
        };
        client.schedule_add(params).await.unwrap().schedule
    };
    // No kernel ran over its tick.
    let (db, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let missed = now_ms() - 3_600_000;
    let moved = db.execute("UPDATE schedules SET next_at_ms = $1 WHERE id = $2", &[&missed, &added.id]).await.unwrap();
    assert_eq!(moved, 1);

    // Two kernels start on the database; both find the tick due, one claims it.
    let [(_a, _kernel_a, client_a), (_b, _kernel_b, client_b)] = TestEnv::two_on_one_database(&url).await;
    let end = first_turn_end(&client_a, added.conversation_id).await;
    assert!(matches!(end, EventBody::TurnCompleted { .. }), "{end:?}");
    for client in [&client_a, &client_b] {
        let listed = client.schedule_list(Some(10)).await.unwrap();
        assert_eq!((listed[0].run_count, listed[0].runs[0].due_at_ms), (1, Some(missed)), "{listed:?}");
        assert!(listed[0].next_at_ms.unwrap() > now_ms());
    }
    assert_eq!(prompts(&client_b, added.conversation_id).await, ["Write the yearly digest."]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_starts_a_turn_and_a_wrong_secret_is_refused() {
    let env = TestEnv::new();
    let workspace = env.workspace.display().to_string();
    // A run that would run a command (in accept-edits that asks a person) and ask the person a
    // question: nobody is there.
    let added = run_json(
        &env,
        &[
            "schedule",
            "add",
            "--webhook",
            "--harness",
            "superpi-code",
            "--workspace",
            &workspace,
            "--json",
            "@tool bash {\"command\": \"touch made-by-webhook\"}\n\
             @tool ask_question {\"questions\": [{\"id\": \"go\", \"question\": \"Go on?\"}]}",
        ],
    );
    let token = added["token"].as_str().unwrap().to_string();
    let secret = added["secret"].as_str().unwrap().to_string();
    let conversation = added["schedule"]["conversation_id"].as_i64().unwrap();
    assert_eq!(added["schedule"]["kind"], "webhook");

    let (_gateway, base) = env.spawn_http(&["gateway", "--port", "0"], &[]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = format!("{base}/v1/triggers/{token}");
    let body = r#"{"event": "push", "repo": "superpi"}"#;

    // Refusals: 401 in the gateway's (OpenAI's) error shape, and no run.
    for request in [
        http.post(&url).body(body).bearer_auth("not-the-secret"),
        http.post(&url)
            .body(body)
            .header(SIGNATURE_HEADER, format!("sha256={}", "00".repeat(32)))
            .header(TIMESTAMP_HEADER, unix_now().to_string()),
        http.post(&url).body(body),
        http.post(format!("{base}/v1/triggers/{}", "0".repeat(32))).body(body).bearer_auth(&secret),
    ] {
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 401);
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["error"]["code"], "invalid_api_key", "{error}");
        assert!(error["error"]["message"].as_str().unwrap().contains("unknown trigger"), "{error}");
    }
    let big = http.post(&url).body("x".repeat(40_000)).bearer_auth(&secret).send().await.unwrap();
    assert_eq!(big.status(), 413);

    // A person watches the conversation and could answer a question.
    let client = connect(&env).await;
    let mut sub = client.watch(WatchParams::live(conversation).interactive(true)).await.unwrap();

    let at = unix_now().to_string();
    let signature = sign(&secret, &at, body.as_bytes());
    let signed = |delivery: &str| {
        http.post(&url)
            .body(body)
            .header(SIGNATURE_HEADER, &signature)
            .header(TIMESTAMP_HEADER, &at)
            .header(DELIVERY_HEADER, delivery)
    };
    let answer = signed("d-1").send().await.unwrap();
    assert_eq!(answer.status(), 202);
    let accepted: Value = answer.json().await.unwrap();
    assert_eq!(
        (accepted["status"].as_str(), accepted["conversation_id"].as_i64()),
        (Some("accepted"), Some(conversation))
    );
    let turn_id = accepted["turn_id"].as_i64().unwrap();

    let events = turn_events(&mut sub, turn_id).await;
    assert!(!events.iter().any(|e| matches!(e.body, EventBody::PermissionRequest { .. })), "a question was asked");
    let bash = events.iter().find_map(|e| match &e.body {
        EventBody::ToolCompleted { name, is_error, .. } if name == "bash" => Some(*is_error),
        _ => None,
    });
    assert_eq!(bash, Some(true), "the command was not refused: {events:?}");
    // The model's question is refused at once too, saying why.
    assert!(!events.iter().any(|e| matches!(e.body, EventBody::UiRequest { .. })), "a question was asked");
    let asked = events.iter().find_map(|e| match &e.body {
        EventBody::ToolCompleted { name, is_error, output, .. } if name == "ask_question" => Some((*is_error, output)),
        _ => None,
    });
    let (is_error, output) = asked.expect("ask_question completed");
    assert!(is_error && output.as_str().unwrap().starts_with("nobody can answer a question here"), "{output}");
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
    assert!(!env.workspace.join("made-by-webhook").exists());
    let prompt = prompts(&client, conversation).await.pop().unwrap();
    assert!(prompt.contains(&format!("<payload>\n{body}\n</payload>")), "{prompt}");

    // Sent again, as recorded or under a new delivery id: 401, no run.
    for replay in [signed("d-1"), signed("d-2")] {
        let answer = replay.send().await.unwrap();
        assert_eq!(answer.status(), 401);
        let error: Value = answer.json().await.unwrap();
        assert!(error["error"]["message"].as_str().unwrap().contains("accepted already"), "{error}");
    }
    // Signed long ago (or by a clock far off): 401, saying so.
    let old = (unix_now() - 600).to_string();
    let stale = http
        .post(&url)
        .body(body)
        .header(SIGNATURE_HEADER, sign(&secret, &old, body.as_bytes()))
        .header(TIMESTAMP_HEADER, &old)
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 401);
    let error: Value = stale.json().await.unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("from the kernel's clock"), "{error}");

    // A bearer secret works too; each delivery is a run, until a burst passes the trigger's
    // allowance (10 proven deliveries at once; the two replays above took theirs): 429 with
    // Retry-After, and no run.
    let mut accepted = 1;
    let limited = loop {
        let answer = http.post(&url).body("again").bearer_auth(&secret).send().await.unwrap();
        if answer.status() != 202 {
            break answer;
        }
        accepted += 1;
        assert!(accepted <= 8, "more than the allowance was accepted");
    };
    assert_eq!((limited.status().as_u16(), accepted), (429, 8));
    let retry: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "Retry-After: {retry}");
    let error: Value = limited.json().await.unwrap();
    assert_eq!(error["error"]["code"], "rate_limited", "{error}");
    let listed = client.schedule_list(None).await.unwrap();
    assert_eq!((listed[0].kind.as_str(), listed[0].run_count), ("webhook", 8), "{listed:?}");
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The HMAC-SHA256 signature a sender puts in `X-Superpi-Signature-256`: of `TIMESTAMP.BODY`.
fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    format!("sha256={}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// `superpi ARGS` to its end: its stdout (the answer).
fn run(env: &TestEnv, args: &[&str]) -> String {
    let out = env.command(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "superpi {args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_librarians_model_schedules_lists_and_cancels_its_own_runs() {
    let env = TestEnv::new();
    let create = r#"@tool schedule_create {"prompt": "Check the feeds.", "cron": "0 9 * * 1", "timezone": "America/New_York", "name": "feeds", "mode": "fork", "catch_up": false}"#;
    let created = run(&env, &["run", "--harness", "librarian", create]);
    assert!(created.contains("Scheduled #1 (0 9 * * 1 in America/New_York); it runs next at"), "{created}");
    let listed = run_json(&env, &["schedule", "list", "--json"]);
    let conversation = listed[0]["conversation_id"].as_i64().unwrap().to_string();
    assert_eq!((listed[0]["name"].as_str(), listed[0]["ceiling"].as_str()), (Some("feeds"), Some("accept-edits")));
    assert_eq!((listed[0]["mode"].as_str(), listed[0]["catch_up"].as_bool()), (Some("fork"), Some(false)));

    let often = r#"@tool schedule_create {"prompt": "Again.", "cron": "*/2 * * * *"}"#;
    let refused = run(&env, &["run", "--conversation", &conversation, often]);
    assert!(refused.contains("runs must be at least 5 minutes apart"), "{refused}");
    let mine = run(&env, &["run", "--conversation", &conversation, "@tool schedule_list {}"]);
    assert!(mine.contains("#1 feeds: 0 9 * * 1 (America/New_York), next"), "{mine}");

    // Another conversation's model neither sees nor cancels it.
    let other = run(&env, &["run", "--harness", "librarian", r#"@tool schedule_cancel {"id": 1}"#]);
    assert!(other.contains("this conversation has no schedule #1"), "{other}");
    let cancelled = run(&env, &["run", "--conversation", &conversation, r#"@tool schedule_cancel {"id": 1}"#]);
    assert!(cancelled.contains("Cancelled schedule #1."), "{cancelled}");
    assert_eq!(run_json(&env, &["schedule", "list", "--json"]), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_librarian_has_scratch_file_tools_and_no_shell() {
    let env = TestEnv::new();
    let harnesses = run_json(&env, &["harnesses", "--json"]);
    let harnesses = harnesses.as_array().unwrap();
    let librarian = harnesses.iter().find(|h| h["id"] == "superpi-librarian").unwrap();
    let tools: Vec<&str> = librarian["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for fs in ["edit", "bash"] {
        assert!(!tools.contains(&fs), "the librarian offers `{fs}`: {tools:?}");
    }
    for fs in ["read", "write", "ls", "grep", "find"] {
        assert!(tools.contains(&fs), "the librarian lacks `{fs}` in its scratch directory: {tools:?}");
    }
    for block in ["memory_write", "memory_search", "schedule_create", "schedule_list", "web_fetch"] {
        assert!(tools.contains(&block), "the librarian lacks `{block}`: {tools:?}");
    }
    assert_eq!(librarian["workspace"], "scratch");
    assert_eq!(librarian["capabilities"], json!(["memory", "schedule", "web"]));
    let assistant = harnesses.iter().find(|h| h["id"] == "superpi-assistant").unwrap();
    assert_eq!(assistant["capabilities"], json!(["web", "memory"]));

    // Asked for a file, the model gets no tool to read it with: the call is refused.
    let out =
        env.command(&["run", "--harness", "librarian", r#"@tool read {"path": "/etc/passwd"}"#]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("root:"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_without_catch_up_skips_a_missed_tick() {
    let env = TestEnv::new();
    let added = run_json(&env, &["schedule", "add", "--cron", "0 7 * * *", "--no-catch-up", "--json", "The briefing."]);
    let schedule = added["schedule"]["id"].as_i64().unwrap();
    let conversation = added["schedule"]["conversation_id"].as_i64().unwrap();
    assert_eq!(added["schedule"]["catch_up"], false, "{added}");

    // The 07:00 tick passed eight hours ago, while no kernel ran.
    env.kill_kernel();
    set_next_tick(&env, schedule, now_ms() - 8 * 3_600_000);
    let client = connect(&env).await;
    let listed = until("the missed tick to be passed over", PATIENCE, async || {
        let listed = client.schedule_list(Some(5)).await.unwrap();
        (listed[0].next_at_ms.unwrap() > now_ms()).then_some(listed)
    })
    .await;
    assert_eq!((listed[0].run_count, listed[0].runs.len()), (0, 0), "{listed:?}");
    assert!(prompts(&client, conversation).await.is_empty(), "the missed briefing ran");
}

/// A trigger through a gateway: its token, secret, conversation, and the gateway's URL.
struct Trigger {
    url: String,
    secret: String,
    id: i64,
    conversation: i64,
    _gateway: superpi_tests::KillOnDrop,
}

fn trigger(env: &TestEnv, args: &[&str], prompt: &str) -> Trigger {
    let mut all = vec!["schedule", "add", "--webhook", "--json"];
    all.extend_from_slice(args);
    all.push(prompt);
    let added = run_json(env, &all);
    let (_gateway, base) = env.spawn_http(&["gateway", "--port", "0"], &[]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    Trigger {
        url: format!("{base}/v1/triggers/{}", added["token"].as_str().unwrap()),
        secret: added["secret"].as_str().unwrap().to_string(),
        id: added["schedule"]["id"].as_i64().unwrap(),
        conversation: added["schedule"]["conversation_id"].as_i64().unwrap(),
        _gateway,
    }
}

/// Delivers `body` with an optional `Idempotency-Key`: the status and the answer.
async fn deliver(t: &Trigger, body: &str, key: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(&t.url).body(body.to_string()).bearer_auth(&t.secret);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let answer = request.send().await.unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap())
}

/// Waits until the trigger's runs have all ended; its listing.
async fn runs_ended(client: &KernelClient, id: i64) -> superpi_proto::schedule::ScheduleInfo {
    until("the trigger's runs to end", PATIENCE, async || {
        let listed = client.schedule_list(Some(10)).await.unwrap();
        let s = listed.into_iter().find(|s| s.id == id).unwrap();
        s.runs.iter().all(|r| !matches!(r.status.as_str(), "starting" | "queued" | "running")).then_some(s)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_trigger_pauses_until_resumed_and_a_repeated_key_runs_once() {
    let env = TestEnv::new();
    let t = trigger(&env, &[], "@fail the feed is down");
    let client = connect(&env).await;
    let mut sub = client.watch(WatchParams::live(t.conversation)).await.unwrap();

    let (status, first) = deliver(&t, "{}", Some("build-1")).await;
    assert_eq!((status, first["repeated"].as_bool()), (202, Some(false)), "{first}");
    let (status, again) = deliver(&t, "{}", Some("build-1")).await;
    assert_eq!((status, again["repeated"].as_bool()), (202, Some(true)), "{again}");
    assert_eq!((&again["run_id"], &again["turn_id"]), (&first["run_id"], &first["turn_id"]));
    assert_eq!(runs_ended(&client, t.id).await.run_count, 1, "the key sent again started a run");

    // Two more failed runs: three in a row.
    for _ in 0..2 {
        assert_eq!(deliver(&t, "{}", None).await.0, 202);
        runs_ended(&client, t.id).await;
    }
    let (status, paused) = deliver(&t, "{}", None).await;
    assert_eq!(status, 401, "{paused}");
    assert!(paused["error"]["message"].as_str().unwrap().contains("superpi schedule resume"), "{paused}");
    let notice = tokio::time::timeout(PATIENCE, async {
        loop {
            match sub.next().await.map(|e| e.body) {
                Some(EventBody::Notice { level, message }) if message.contains("paused") => break (level, message),
                Some(_) => {}
                None => panic!("the watch ended"),
            }
        }
    })
    .await
    .expect("no notice of the pause");
    assert_eq!(notice.0, "warning", "{notice:?}");
    let s = runs_ended(&client, t.id).await;
    assert!(s.paused_at_ms.is_some() && (s.run_count, s.failures) == (3, 3), "{s:?}");
    let listing = run(&env, &["schedule", "list"]);
    assert!(listing.contains(&format!("Schedule {} is paused after 3 failed runs in a row", t.id)), "{listing}");
    // The key is still answered with its run.
    assert_eq!(deliver(&t, "{}", Some("build-1")).await, (202, again.clone()));

    let resumed = run(&env, &["schedule", "resume", &t.id.to_string()]);
    assert!(resumed.contains(&format!("Resumed schedule {}.", t.id)), "{resumed}");
    assert_eq!(deliver(&t, "{}", None).await.0, 202, "a resumed trigger runs");
    let s = runs_ended(&client, t.id).await;
    assert!(s.paused_at_ms.is_none() && s.run_count == 4, "{s:?}");
    let out = env.command(&["schedule", "resume", &t.id.to_string()]).output().unwrap();
    assert!(!out.status.success(), "a schedule not paused was resumed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_and_fresh_runs_leave_the_base_conversation_as_it_was() {
    let env = TestEnv::new();
    let t = trigger(&env, &["--mode", "fork"], "Read {{payload}} and reply.");
    let base = t.conversation.to_string();
    run(&env, &["run", "--conversation", &base, "The base words."]);
    let client = connect(&env).await;

    let (status, fired) = deliver(&t, r#"{"n": 1}"#, None).await;
    assert_eq!(status, 202, "{fired}");
    let fork = fired["conversation_id"].as_i64().unwrap();
    assert_ne!(fork, t.conversation);
    runs_ended(&client, t.id).await;
    let forked = prompts(&client, fork).await;
    assert_eq!(forked[0], "The base words.", "{forked:?}");
    assert!(forked[1].starts_with("Read A webhook delivered the payload below."), "{forked:?}");
    assert!(forked[1].ends_with("<payload>\n{\"n\": 1}\n</payload> and reply."), "{forked:?}");
    assert_eq!(prompts(&client, t.conversation).await, ["The base words."]);

    let fresh = trigger(&env, &["--mode", "fresh", "--conversation", &base], "Fresh.");
    let (status, fired) = deliver(&fresh, "{}", None).await;
    assert_eq!(status, 202, "{fired}");
    let new = fired["conversation_id"].as_i64().unwrap();
    runs_ended(&client, fresh.id).await;
    assert_eq!(prompts(&client, new).await.len(), 1, "a fresh run has no history");
    assert_eq!(prompts(&client, t.conversation).await, ["The base words."]);

    // The assistant takes no webhooks.
    let out =
        env.command(&["schedule", "add", "--webhook", "--harness", "superpi-assistant", "Answer."]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("does not take webhooks"), "{err}");
}
