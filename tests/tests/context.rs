//! End to end: long conversations keep working. With a tiny context window (the mock's, and an
//! OpenAI-compatible fake that counts and refuses over-long requests), twenty turns run
//! without a request over the window: the kernel compacts, stores a compaction entry, and
//! history and fork still show everything. A server whose window superpi does not know, and
//! that says it only when it refuses a request, costs one refusal per wire API: the kernel
//! learns the window from it, compacts and goes on.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::Value;
use superpi_client::KernelClient;
use superpi_proto::method::WatchParams;
use superpi_proto::{ContentBlock, Entry, EntryKind, Event, EventBody};
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::{FakeServer, OpenAiFake};
use superpi_providers::testing::rules::Vendor;
use superpi_tests::{TestEnv, open_and_watch, turn_events};

const TURNS: usize = 20;

async fn connect(env: &TestEnv) -> KernelClient {
    KernelClient::connect(&env.connect_options("test")).await.expect("connect")
}

/// A prompt of about `bytes` bytes, different per turn.
fn long_prompt(turn: usize, bytes: usize) -> String {
    let mut text = format!("Turn {turn}: please keep this in mind.");
    while text.len() < bytes {
        text.push_str(&format!(" fact {turn}.{} is worth noting;", text.len()));
    }
    text
}

/// Every stored tool call is answered right after its assistant message.
fn assert_paired(entries: &[Entry]) {
    let mut open: Vec<&str> = Vec::new();
    for entry in entries.iter().filter(|e| e.kind != EntryKind::Compaction) {
        for block in &entry.message.content {
            match block {
                ContentBlock::ToolResult { tool_call_id, .. } => {
                    let at = open.iter().position(|id| id == tool_call_id).expect("a result answers an open call");
                    open.remove(at);
                }
                ContentBlock::ToolCall { id, .. } => open.push(id),
                _ => assert!(open.is_empty() || entry.kind == EntryKind::ToolResult, "calls {open:?} left open"),
            }
        }
    }
    assert!(open.is_empty());
}

fn compaction_seqs(entries: &[Entry]) -> Vec<u64> {
    entries.iter().filter(|e| e.kind == EntryKind::Compaction).map(|e| e.seq).collect()
}

/// Runs `TURNS` turns, every one of which must complete; returns every event of them.
async fn run_turns(client: &KernelClient, conv: i64, sub: &mut superpi_client::Subscription) -> Vec<Event> {
    let mut all = Vec::new();
    for turn in 0..TURNS {
        let prompt = if turn % 3 == 1 {
            format!("@tool bash {{\"command\": \"seq 1 {}\"}}", 100 + turn)
        } else {
            long_prompt(turn, 900)
        };
        let submitted = client.submit_text(conv, &prompt).await.unwrap();
        let events = turn_events(sub, submitted.turn_id).await;
        let end = &events.last().unwrap().body;
        assert!(matches!(end, EventBody::TurnCompleted { .. }), "turn {turn} ended with {end:?}");
        all.extend(events);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_turns_fit_a_tiny_mock_window_and_fork_before_the_compaction_shows_everything() {
    let env = TestEnv::new();
    let window = 5_000;
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        format!("[providers]\n[[providers.models]]\nname = \"mock\"\nprovider = \"mock\"\ncontext_window = {window}\nmax_output_tokens = 400\n"),
    )
    .unwrap();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    // The mock refuses a request over its window, so every turn completing is the proof that
    // none was sent.
    let events = run_turns(&client, conv, &mut sub).await;

    let reported: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e.body {
            EventBody::UsageUpdated { context_tokens: Some(tokens), context_window: Some(window), .. } => {
                Some((tokens, window))
            }
            _ => None,
        })
        .collect();
    assert!(!reported.is_empty());
    assert!(reported.iter().all(|&(tokens, w)| w == window && tokens <= window), "{reported:?}");
    let compactions: Vec<&Event> =
        events.iter().filter(|e| matches!(e.body, EventBody::CompactionCompleted { .. })).collect();
    assert!(!compactions.is_empty(), "twenty turns of ~300 tokens compact a 5000-token window");

    // History shows everything: every prompt, every compaction entry, calls paired.
    let history = client.history(conv).await.unwrap().entries;
    let users = history.iter().filter(|e| e.kind == EntryKind::User).count();
    assert_eq!(users, TURNS);
    let compacted = compaction_seqs(&history);
    assert_eq!(compacted.len(), compactions.len());
    assert_paired(&history);

    // A fork just before the first compaction holds and replays the full history to there.
    let first = compacted[0];
    let before = client.fork(conv, Some(first - 1)).await.unwrap();
    let forked = client.history(before.conversation_id).await.unwrap().entries;
    assert!(compaction_seqs(&forked).is_empty());
    let expected: Vec<u64> = history.iter().filter(|e| e.seq < first).map(|e| e.seq).collect();
    assert_eq!(forked.iter().map(|e| e.seq).take(expected.len()).collect::<Vec<_>>(), expected);
    let params = WatchParams::after(before.conversation_id, 0);
    let mut replay = client.watch(params).await.unwrap();
    let mut replayed_prompts = 0;
    while replayed_prompts
        < expected.iter().filter(|s| history.iter().any(|e| e.seq == **s && e.kind == EntryKind::User)).count()
    {
        let event = tokio::time::timeout(std::time::Duration::from_secs(30), replay.next()).await.unwrap().unwrap();
        assert!(!matches!(event.body, EventBody::CompactionCompleted { .. }));
        if matches!(&event.body, EventBody::MessageCompleted { role: superpi_proto::Role::User, .. }) {
            replayed_prompts += 1;
        }
    }
    // Both forks go on: the one before compacts by itself when it must, the one after reads
    // the summary.
    let after = client.fork(conv, None).await.unwrap();
    assert_eq!(compaction_seqs(&client.history(after.conversation_id).await.unwrap().entries), compacted);
    for fork in [before.conversation_id, after.conversation_id] {
        let mut sub = client.watch(params_for(fork)).await.unwrap();
        let turn = client.submit_text(fork, "and now?").await.unwrap();
        let events = turn_events(&mut sub, turn.turn_id).await;
        assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    }

    // On demand: `session.compact` compacts the idle conversation once more.
    let answer = client.compact(conv).await.unwrap();
    assert_eq!(answer["compacted"], Value::Bool(true), "{answer}");
    assert!(answer["tokens_after"].as_u64().unwrap() < answer["tokens_before"].as_u64().unwrap(), "{answer}");
    assert_eq!(compaction_seqs(&client.history(conv).await.unwrap().entries).len(), compacted.len() + 1);
}

fn params_for(conversation_id: i64) -> WatchParams {
    WatchParams::live(conversation_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_turns_never_send_an_openai_compatible_server_more_than_its_window() {
    let fake = OpenAiFake::start(Vec::new()).await.unwrap();
    let window = 6_000;
    fake.set_context_window(window);
    fake.allow_without_key();
    fake.set_fallback(Answer::text("Noted, I will keep it in mind."));
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        format!(
            "[providers]\ndefault_model = \"small\"\n[[providers.models]]\nname = \"small\"\nmodel = \"local-small\"\n\
             base_url = \"{}\"\ncontext_window = {window}\nmax_output_tokens = 500\n",
            fake.base_url(superpi_providers::testing::rules::Vendor::Openai)
        ),
    )
    .unwrap();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    for turn in 0..TURNS {
        let submitted = client.submit_text(conv, &long_prompt(turn, 1_200)).await.unwrap();
        let events = turn_events(&mut sub, submitted.turn_id).await;
        let end = &events.last().unwrap().body;
        assert!(matches!(end, EventBody::TurnCompleted { .. }), "turn {turn}: {end:?}; {:?}", fake.rejections());
    }
    assert_eq!(fake.rejections(), vec![], "no request over the window, none the API would refuse");
    let history = client.history(conv).await.unwrap().entries;
    assert!(!compaction_seqs(&history).is_empty());
    // The requests after a compaction hold its summary, and the latest prompt verbatim.
    let last = fake.accepted().pop().unwrap().to_string();
    assert!(last.contains("The earlier part of this conversation was compacted"), "{last}");
    assert!(last.contains("Turn 19: please keep this in mind."));
}

/// A providers file whose model `small` is served by `fake` through `vendor`'s wire API, under
/// an upstream id superpi has no figures for and without a `context_window`: on 127.0.0.1
/// superpi assumes the local default (32,768 tokens), whatever the server's window is.
fn unknown_window_model(env: &TestEnv, fake: &FakeServer, vendor: Vendor) {
    let provider = match vendor {
        Vendor::Openai => "provider = \"openai\"",
        Vendor::OpenaiResponses => "provider = \"openai\"\nwire_api = \"responses\"",
        Vendor::Anthropic => "provider = \"anthropic\"",
        Vendor::Gemini => "provider = \"gemini\"",
    };
    // A local OpenAI-compatible server takes no key; Anthropic's and Gemini's fakes want one.
    let key = if vendor == Vendor::Openai { "" } else { "api_key = \"k\"\n" };
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        format!(
            "[providers]\ndefault_model = \"small\"\n[[providers.models]]\nname = \"small\"\n{provider}\n\
             model = \"local-small\"\nbase_url = \"{}\"\n{key}",
            fake.base_url(vendor)
        ),
    )
    .unwrap();
}

/// The words of `vendor`'s refusal of an over-long request, as the fake (and the vendor) says it.
fn refusal_words(vendor: Vendor) -> &'static str {
    match vendor {
        Vendor::Openai => "maximum context length is",
        Vendor::OpenaiResponses => "exceeds the context window",
        Vendor::Anthropic => "prompt is too long",
        Vendor::Gemini => "exceeds the maximum number of tokens allowed",
    }
}

/// Issue #33: against a server of an 8,000-token window that says it only in its refusal, 25
/// turns of 2 KB prompts all complete. The first request past the window is refused; the kernel
/// learns the window from the refusal, compacts (the summary asked in requests that fit) and
/// sends the step again; from then on it compacts before the window, and no request is refused
/// again. The compactions are stored (history, `superpi session show`).
async fn twenty_five_turns_outgrow_a_window_said_only_in_refusals(vendor: Vendor) {
    const WINDOW: u64 = 8_000;
    let fake = FakeServer::start(&[vendor], Vec::new()).await.unwrap();
    fake.set_context_window(WINDOW);
    fake.allow_without_key();
    fake.set_fallback(Answer::text("Noted, I will keep it in mind."));
    let env = TestEnv::new();
    unknown_window_model(&env, &fake, vendor);
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    let mut events = Vec::new();
    for turn in 0..25 {
        let submitted = client.submit_text(conv, &long_prompt(turn, 2_000)).await.unwrap();
        let turn_events = turn_events(&mut sub, submitted.turn_id).await;
        let end = &turn_events.last().unwrap().body;
        assert!(matches!(end, EventBody::TurnCompleted { .. }), "turn {turn}: {end:?}; {:?}", fake.rejections());
        events.extend(turn_events);
    }
    // One refusal taught the window; none after it.
    let refused = fake.rejections();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].message.contains(refusal_words(vendor)), "{refused:?}");
    let notice = events.iter().find_map(|e| match &e.body {
        EventBody::Notice { message, .. } if message.contains("context window") => Some(message.clone()),
        _ => None,
    });
    assert!(notice.as_deref().is_some_and(|n| n.contains("from now on")), "{notice:?}");
    // Every request sent after it fit the window, and the context the kernel reports does.
    let windows: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.body {
            EventBody::UsageUpdated { context_window: Some(window), .. } => Some(window),
            _ => None,
        })
        .collect();
    assert_eq!(windows.first(), Some(&32_768), "the local default before the refusal");
    assert!(*windows.last().unwrap() <= WINDOW, "{windows:?}");
    // Compactions stored, every prompt kept, calls paired.
    let history = client.history(conv).await.unwrap().entries;
    let compactions = compaction_seqs(&history);
    assert!(compactions.len() >= 2, "{compactions:?}");
    assert_eq!(history.iter().filter(|e| e.kind == EntryKind::User).count(), 25);
    assert_paired(&history);
    let shown = env.command(&["session", "show", &conv.to_string()]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("The earlier part of this conversation was compacted"), "{shown}");
    // The last request holds the summary and the latest prompt.
    let last = fake.accepted().pop().unwrap().to_string();
    assert!(last.contains("Turn 24: please keep this in mind."), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_twenty_five_turns_outgrow_a_window_said_only_in_refusals() {
    twenty_five_turns_outgrow_a_window_said_only_in_refusals(Vendor::Openai).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_twenty_five_turns_outgrow_a_window_said_only_in_refusals() {
    twenty_five_turns_outgrow_a_window_said_only_in_refusals(Vendor::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_twenty_five_turns_outgrow_a_window_said_only_in_refusals() {
    twenty_five_turns_outgrow_a_window_said_only_in_refusals(Vendor::Gemini).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_twenty_five_turns_outgrow_a_window_said_only_in_refusals() {
    twenty_five_turns_outgrow_a_window_said_only_in_refusals(Vendor::OpenaiResponses).await;
}

/// `session.compact` of a history already longer than the server's window: the summary request
/// is refused, the window learned from the refusal, and the summary asked again in pieces
/// that fit; the conversation goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_compaction_of_a_history_longer_than_the_window_asks_in_pieces() {
    let fake = OpenAiFake::start(Vec::new()).await.unwrap();
    fake.allow_without_key();
    // A window the conversation stays under at first (the fake counts and reports usage).
    fake.set_context_window(30_000);
    fake.set_fallback(Answer::text("Noted, I will keep it in mind."));
    let env = TestEnv::new();
    unknown_window_model(&env, &fake, Vendor::Openai);
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    for turn in 0..24 {
        let submitted = client.submit_text(conv, &long_prompt(turn, 2_000)).await.unwrap();
        let events = turn_events(&mut sub, submitted.turn_id).await;
        assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
    }
    assert_eq!(fake.rejections(), vec![]);
    // The server is started again with a window far smaller than the history (about 13,000
    // tokens), and says it only in its refusal (with room for the code harness's prompt and
    // tools beside the summary).
    fake.set_context_window(5_000);
    let before = fake.requests().len();
    let answer = client.compact(conv).await.unwrap();
    assert_eq!(answer["compacted"], Value::Bool(true), "{answer}; {:?}", fake.rejections());
    assert!(answer["context_window"].as_u64().unwrap() <= 5_000, "{answer}");
    let asked = fake.requests().len() - before;
    let refused = fake.rejections();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(asked >= 3, "one refusal, then at least two pieces: {asked}");
    let submitted = client.submit_text(conv, "and now?").await.unwrap();
    let events = turn_events(&mut sub, submitted.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    assert_eq!(fake.rejections().len(), 1);
}

/// The step sent again after compaction is refused as too long once more: the turn fails
/// saying so (the retry is once), and the next turn goes on with the window learned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_refused_again_after_compaction_fails_its_turn_saying_so_and_the_next_goes_on() {
    let fake = OpenAiFake::start(Vec::new()).await.unwrap();
    fake.allow_without_key();
    // Usage counted as a server counts it; no request comes near the window.
    fake.set_context_window(1_000_000);
    fake.set_fallback(Answer::text("Noted, I will keep it in mind."));
    let env = TestEnv::new();
    unknown_window_model(&env, &fake, Vendor::Openai);
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    for turn in 0..3 {
        let submitted = client.submit_text(conv, &long_prompt(turn, 2_000)).await.unwrap();
        let events = turn_events(&mut sub, submitted.turn_id).await;
        assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }));
    }
    // A server that refuses the next turn's step twice, answering the summaries between.
    // (A window the code harness's prompt and tools leave room in: learned at half of it at least.)
    let (_, refusal) = superpi_providers::testing::fakes::overflow_refusal(Vendor::Openai, 12_000, 13_000);
    let refusal = refusal.to_string();
    let steps_refused = std::sync::atomic::AtomicUsize::new(0);
    fake.set_responder(Box::new(move |_, body| {
        let last = body["messages"].as_array()?.last()?["content"].as_str().unwrap_or_default().to_string();
        let step = !last.starts_with("Summarise the conversation");
        let refuse = step && steps_refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2;
        refuse.then(|| Answer::Reply(superpi_providers::testing::Reply::error(400, &refusal)))
    }));
    let submitted = client.submit_text(conv, &long_prompt(3, 2_000)).await.unwrap();
    let events = turn_events(&mut sub, submitted.turn_id).await;
    let error = match &events.last().unwrap().body {
        EventBody::TurnError { error } => error.clone(),
        other => panic!("{other:?}"),
    };
    assert!(error.contains("refused the request again") && error.contains("providers.toml"), "{error}");
    assert!(events.iter().any(|e| matches!(e.body, EventBody::CompactionCompleted { .. })), "{events:?}");
    let submitted = client.submit_text(conv, "and now?").await.unwrap();
    let events = turn_events(&mut sub, submitted.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    let windows = events.iter().filter_map(|e| match e.body {
        EventBody::UsageUpdated { context_window, .. } => context_window,
        _ => None,
    });
    assert!(windows.into_iter().all(|w| w <= 12_000), "the window learned stays");
}

/// A prompt longer than the window by itself: nothing to compact, the turn fails saying so;
/// the next turn summarises it (clipped to fit) and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_the_window_fails_its_turn_saying_so() {
    let fake = OpenAiFake::start(Vec::new()).await.unwrap();
    fake.allow_without_key();
    fake.set_context_window(4_000);
    let env = TestEnv::new();
    unknown_window_model(&env, &fake, Vendor::Openai);
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("plan"), false).await;
    let submitted = client.submit_text(conv, &long_prompt(0, 24_000)).await.unwrap();
    let events = turn_events(&mut sub, submitted.turn_id).await;
    let error = match &events.last().unwrap().body {
        EventBody::TurnError { error } => error.clone(),
        other => panic!("{other:?}"),
    };
    assert!(error.contains("nothing before the latest prompt to compact"), "{error}");
    let submitted = client.submit_text(conv, "short, then").await.unwrap();
    let events = turn_events(&mut sub, submitted.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    assert!(events.iter().any(|e| matches!(e.body, EventBody::CompactionCompleted { .. })), "{events:?}");
    assert_eq!(fake.rejections().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_md_from_the_repository_root_to_the_workspace_reaches_the_system_prompt() {
    let fake = OpenAiFake::start(vec![Answer::text("Understood.")]).await.unwrap();
    let env = TestEnv::new();
    // The repository is the test's workspace directory; the conversation works in app/.
    let app = env.workspace.join("app");
    std::fs::create_dir_all(env.workspace.join(".git")).unwrap();
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(env.workspace.join("AGENTS.md"), "Repository rule: write tests first.").unwrap();
    std::fs::write(app.join("AGENTS.md"), "App rule: never touch the schema.").unwrap();
    let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "--mode", "plan", "hello"]);
    cmd.current_dir(&app).envs(fake.env());
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fake.rejections(), vec![]);

    let body = fake.accepted().pop().unwrap();
    let system = body["messages"][0].clone();
    assert_eq!(system["role"], "system", "{body}");
    let system = system["content"].as_str().unwrap().to_string();
    let (repo, app_rule) = (
        system.find("write tests first").expect("the root's rules"),
        system.find("never touch the schema").expect("the app's rules"),
    );
    assert!(repo < app_rule, "outermost first: {system}");

    // `superpi session show` says which files were read.
    let client = connect(&env).await;
    let conv = client.list().await.unwrap()[0].conversation_id;
    let files = client.history(conv).await.unwrap().conversation.rules_files;
    let root = env.workspace.canonicalize().unwrap();
    let expected = [root.join("AGENTS.md"), root.join("app").join("AGENTS.md")].map(|p| p.display().to_string());
    assert_eq!(files, expected);
    let shown = env.command(&["session", "show", &conv.to_string()]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&expected[1]), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_compact_during_a_turn_runs_when_the_turn_ends() {
    let env = TestEnv::new();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    // A turn whose command waits until the test creates `go`: it surely runs meanwhile.
    let waiting = r#"{"command": "while [ ! -e go ]; do sleep 0.02; done; echo released"}"#;
    let turn = client.submit_text(conv, &format!("@tool bash {waiting}")).await.unwrap();
    superpi_tests::next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let compacting = tokio::spawn({
        let client = connect(&env).await;
        async move { client.compact(conv).await }
    });
    // The kernel says the compaction waits for the turn.
    let notice = superpi_tests::next_event(&mut sub, |e| matches!(e.body, EventBody::Notice { .. })).await;
    assert_eq!(notice.turn_id, None);
    assert!(!compacting.is_finished());
    std::fs::write(env.workspace.join("go"), "").unwrap();
    let events = turn_events(&mut sub, turn.turn_id).await;
    assert!(matches!(events.last().unwrap().body, EventBody::TurnCompleted { .. }), "{events:?}");
    // Then the compaction runs, outside the turn, and answers the request.
    let compaction =
        superpi_tests::next_event(&mut sub, |e| matches!(e.body, EventBody::CompactionCompleted { .. })).await;
    assert_eq!(compaction.turn_id, None);
    assert!(compaction.seq > events.last().unwrap().seq);
    let answer = compacting.await.unwrap().unwrap();
    assert_eq!(answer["compacted"], Value::Bool(true), "{answer}");
    let history = client.history(conv).await.unwrap();
    assert_eq!(compaction_seqs(&history.entries), vec![compaction.seq]);
    // A compaction asked for while nothing runs answers at once.
    let again = client.compact(conv).await.unwrap();
    assert!(again.get("compacted").is_some(), "{again}");
}

/// `session.clear`: the next request holds nothing said before it (the fake sees the request),
/// while the history keeps every entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleared_conversation_sends_nothing_said_before() {
    let fake = OpenAiFake::start(vec![Answer::text("noted"), Answer::text("fresh")]).await.unwrap();
    let env = TestEnv::new();
    let file = format!(
        "[providers]\ndefault_model = \"local\"\n\n[[providers.models]]\nname = \"local\"\nmodel = \"gpt-4o\"\n\
         base_url = \"{}/v1\"\napi_key = \"k\"\n",
        fake.base
    );
    std::fs::write(env.locations.config_dir.join("providers.toml"), file).unwrap();
    let client = connect(&env).await;
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, None, false).await;
    let first = client.submit_text(conv, "remember the word pelican").await.unwrap();
    turn_events(&mut sub, first.turn_id).await;
    let cleared = client.clear(conv).await.unwrap();
    assert_eq!(cleared["cleared"], true);
    let second = client.submit_text(conv, "what was the word?").await.unwrap();
    let events = turn_events(&mut sub, second.turn_id).await;
    assert!(events.iter().any(|e| matches!(e.body, EventBody::ContextCleared {})), "{events:?}");
    assert_eq!(fake.rejections(), vec![]);
    let sent = fake.accepted();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].to_string().contains("pelican"));
    assert!(!sent[1].to_string().contains("pelican"), "the cleared context was sent: {}", sent[1]);
    assert!(!sent[1].to_string().contains("noted"), "{}", sent[1]);
    let history = client.history(conv).await.unwrap();
    let texts: Vec<String> = history.entries.iter().map(|e| e.message.text()).collect();
    assert!(texts.iter().any(|t| t.contains("pelican")), "the history keeps everything: {texts:?}");
}
