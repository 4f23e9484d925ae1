//! Chaos on one PostgreSQL database: three machines, each with a kernel and a gateway, prompts
//! sent through each (the kernel protocol, as `superpi rpc` and the terminal speak it, answering
//! every question; and the gateway's Chat Completions), while kernels are killed with SIGKILL
//! and started again at random points for a bounded time. A seeded generator picks every
//! choice (`SUPERPI_CHAOS_SEED=N` replays one seed; three fixed seeds otherwise), and the seed
//! is printed. Afterwards: every acknowledged prompt has exactly one turn (one unacknowledged
//! at most one), every client saw its whole answer or a clear error (never an empty success or
//! a silent end), no turn is left running or queued, no tool ran twice (each call appends its
//! prompt's token to a file), every turn has one end, and every stored tool call one result
//! after it. Skipped, saying so, without PostgreSQL binaries unless CI is set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use superpi_client::{KernelClient, Subscription};
use superpi_proto::method::{OpenParams, WatchParams};
use superpi_proto::{ContentBlock, Event, EventBody};
use superpi_tests::postgres_server::{self, TestPostgres};
use superpi_tests::{KillOnDrop, TestEnv, wait};

use crate::cluster_deltas::delta_and_answer_texts;

/// How long kernels are killed and started again, per seed.
const CHAOS: Duration = Duration::from_secs(12);
/// The seeds CI runs.
const SEEDS: [u64; 3] = [1, 2, 3];
/// How long a question waits for its answer.
const QUESTION_TIMEOUT_SECS: u64 = 3;
/// The file each tool call appends its prompt's token to, in its conversation's workspace.
const EFFECTS: &str = "effects.txt";

/// splitmix64: every choice of a run follows from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pause(&mut self, from_ms: u64, to_ms: u64) -> Duration {
        Duration::from_millis(from_ms + self.below(to_ms - from_ms))
    }
}

/// One machine: its directories, its kernel (started by hand, or by its gateway's autostart
/// after a kill) and its gateway.
struct Machine {
    // Dropped in this order: the gateway (which could start a kernel again), the kernel, then
    // the directories (killing whichever kernel holds the lock).
    _gateway: KillOnDrop,
    gateway: String,
    kernel: Mutex<Option<KillOnDrop>>,
    vars: Vec<(String, String)>,
    env: TestEnv,
}

impl Machine {
    fn vars(&self) -> Vec<(&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    fn start(&self) {
        let kernel = self.env.command(&["kernel"]).envs(self.vars()).stdout(std::process::Stdio::null()).spawn();
        *self.kernel.lock().unwrap() = Some(KillOnDrop(kernel.expect("spawn superpi kernel")));
    }

    /// SIGKILL to whichever kernel holds the machine's lock.
    fn kill(&self) {
        self.env.kill_kernel();
        drop(self.kernel.lock().unwrap().take());
    }

    /// A client of the machine's kernel, once one answers (never starting one).
    async fn client(&self) -> Option<KernelClient> {
        let mut opts = self.env.connect_options("chaos");
        opts.autostart = false;
        KernelClient::connect(&opts).await.ok()
    }
}

/// What one prompt's client saw.
#[derive(Debug)]
struct Sent {
    token: String,
    /// The turn the kernel acknowledged (through the kernel protocol).
    acked: Option<i64>,
    /// Sent through a gateway (acknowledged by its answer alone).
    gateway: bool,
    /// The client got its whole answer.
    answered: bool,
}

/// What the clients saw, and what a client must never see.
#[derive(Default)]
struct Seen {
    sent: Vec<Sent>,
    problems: Vec<String>,
}

fn seeds() -> Vec<u64> {
    match std::env::var("SUPERPI_CHAOS_SEED") {
        Ok(seed) => vec![seed.parse().expect("SUPERPI_CHAOS_SEED is a number")],
        Err(_) => SEEDS.to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernels_killed_at_random_lose_no_acknowledged_prompt_and_run_no_tool_twice() {
    let Some(server) = postgres_server::shared() else { return };
    for seed in seeds() {
        eprintln!("chaos: seed {seed} (replay with SUPERPI_CHAOS_SEED={seed})");
        one_seed(server, seed).await;
    }
}

async fn one_seed(server: &'static TestPostgres, seed: u64) {
    let url = server.new_database();
    let mut machines = Vec::new();
    for _ in 0..3 {
        let env = TestEnv::new();
        // A question whose interactive watcher went with a killed kernel waits for its timeout
        // (a person may come back to answer it): short here, so no turn waits past the check.
        let settings = json!({"permissions": {"question_timeout_secs": QUESTION_TIMEOUT_SECS}});
        std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
        let vars = vec![
            ("SUPERPI_DATABASE_URL".to_string(), url.clone()),
            ("SUPERPI_LEASE_MS".to_string(), "1500".to_string()),
        ];
        let str_vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (kernel, _client) = env.start_kernel(&str_vars).await;
        let (gateway_process, gateway) = env.spawn_http(&["gateway", "--port", "0"], &str_vars);
        machines.push(Machine { env, vars, kernel: Mutex::new(Some(kernel)), gateway, _gateway: gateway_process });
    }
    let machines = Arc::new(machines);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let deadline = Instant::now() + CHAOS;

    let mut workers = Vec::new();
    for worker in 0..3u64 {
        let rng = Rng(seed.wrapping_mul(1000) + worker);
        workers.push(tokio::spawn(protocol_client(machines.clone(), seen.clone(), rng, worker, deadline)));
        let rng = Rng(seed.wrapping_mul(1000) + 100 + worker);
        workers.push(tokio::spawn(gateway_client(machines.clone(), seen.clone(), rng, worker, deadline)));
    }
    let mut rng = Rng(seed.wrapping_mul(1000) + 999);
    let mut kills = 0;
    while Instant::now() + Duration::from_secs(1) < deadline {
        tokio::time::sleep(rng.pause(500, 2500)).await;
        let machine = &machines[rng.below(3) as usize];
        machine.kill();
        kills += 1;
        tokio::time::sleep(rng.pause(0, 800)).await;
        machine.start();
    }
    // Longer than a gateway client's own timeout (PATIENCE * 8): a request that hangs is then
    // reported by the client with its token, not as a bare timeout here.
    for worker in workers {
        tokio::time::timeout(wait::PATIENCE * 9, worker).await.expect("the clients end").unwrap();
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    check(server, &url, &machines, &seen, seed, kills).await;
}

/// Whether every assistant message of a turn holds its text deltas, and the answer holds `said`.
fn whole_answer(events: &[Event], said: &str) -> Result<(), String> {
    let (deltas, answers) = delta_and_answer_texts(events);
    if !answers.contains(said) {
        return Err(format!("the answer {answers:?} lacks {said:?}"));
    }
    if deltas != answers {
        return Err(format!("the deltas {deltas:?} are not the answer {answers:?}"));
    }
    Ok(())
}

/// Prompts through the kernel protocol: a new conversation, or one of its own continued, through
/// a random machine's kernel; each prompt streams its token and, mostly, runs a shell command
/// that asks first (accept-edits), answered `allow_once` by this interactive watcher.
async fn protocol_client(machines: Arc<Vec<Machine>>, seen: Arc<Mutex<Seen>>, mut rng: Rng, worker: u64, end: Instant) {
    let mut conversations: Vec<i64> = Vec::new();
    let mut n = 0;
    while Instant::now() < end {
        n += 1;
        let token = format!("rpc-{worker}-{n}");
        let m = rng.below(3) as usize;
        let Some(client) = machines[m].client().await else {
            // A back-off while that kernel is down (the chaos starts it again), not a wait for it.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let conv = match conversations.get(rng.below(conversations.len() as u64 + 1) as usize) {
            Some(conv) => *conv,
            None => {
                let open = OpenParams {
                    workspace: Some(machines[m].env.workspace.display().to_string()),
                    mode: Some("accept-edits".into()),
                    ..Default::default()
                };
                match client.open(open).await {
                    Ok(info) => {
                        conversations.push(info.conversation_id);
                        info.conversation_id
                    }
                    Err(_) => continue,
                }
            }
        };
        let said = format!("chaos {token} says hello");
        let prompt = match rng.below(3) {
            0 => format!("@slow 40\n{said}"),
            _ => format!("{said}\n@tool bash {{\"command\": \"echo {token} >> {EFFECTS}\"}}"),
        };
        let Ok(mut sub) = client.watch(WatchParams::live(conv).interactive(true)).await else { continue };
        let acked = client.submit_text(conv, &prompt).await.ok().map(|s| s.turn_id);
        let answered = match acked {
            Some(turn_id) => follow(&client, &mut sub, turn_id, &said).await,
            None => Ok(false),
        };
        let mut seen = seen.lock().unwrap();
        match answered {
            Ok(answered) => seen.sent.push(Sent { token, acked, gateway: false, answered }),
            Err(problem) => seen.problems.push(format!("{token} (conversation {conv}): {problem}")),
        }
    }
}

/// Follows a turn to its end, answering its questions: Ok(true) for the whole answer, Ok(false)
/// for a clear error (the turn's error, or the connection's end), Err for anything else.
async fn follow(client: &KernelClient, sub: &mut Subscription, turn_id: i64, said: &str) -> Result<bool, String> {
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout(wait::PATIENCE, sub.next()).await;
        let Ok(next) = next else { return Err(format!("no event for {:?} after {events:?}", wait::PATIENCE)) };
        let Some(event) = next else { return Ok(false) };
        if event.turn_id != Some(turn_id) {
            continue;
        }
        if let EventBody::PermissionRequest { request_id, .. } = &event.body {
            let _ = client.respond_permission(request_id, "allow_once").await;
        }
        let end = event.body.is_turn_end();
        events.push(event);
        if end {
            break;
        }
    }
    match &events.last().unwrap().body {
        EventBody::TurnCompleted { .. } => whole_answer(&events, said).map(|()| true),
        EventBody::TurnError { error } if !error.is_empty() => Ok(false),
        other => Err(format!("the turn ended {other:?}")),
    }
}

/// Prompts through a random machine's gateway, each with a shell command.
async fn gateway_client(machines: Arc<Vec<Machine>>, seen: Arc<Mutex<Seen>>, mut rng: Rng, worker: u64, end: Instant) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Generous: a turn may wait out a kernel's restart and a question's timeout on a loaded
    // 2-core machine; past this, a hang is a failure.
    let http = reqwest::Client::builder().timeout(wait::PATIENCE * 8).build().unwrap();
    let mut n = 0;
    while Instant::now() < end {
        n += 1;
        let token = format!("gw-{worker}-{n}");
        let machine = &machines[rng.below(3) as usize];
        let said = format!("chaos {token} says hello");
        let prompt = format!("{said}\n@tool bash {{\"command\": \"echo {token} >> {EFFECTS}\"}}");
        let body = json!({"model": "superpi-code", "messages": [{"role": "user", "content": prompt}]});
        let sent = http
            .post(format!("{}/v1/chat/completions", machine.gateway))
            .header("x-superpi-mode", "auto")
            .json(&body)
            .send()
            .await;
        let outcome = match sent {
            Ok(response) => {
                let status = response.status().as_u16();
                let text = response.text().await.unwrap_or_default();
                let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                match (status, answer["choices"][0]["message"]["content"].as_str()) {
                    // The answer to the call's result (the mock's words), after the call ran.
                    (200, Some(content)) if content.contains("The tools answered.") => Ok(true),
                    (200, _) => Err(format!("a 200 without the whole answer: {text}")),
                    (_, _) if answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()) => Ok(false),
                    _ => Err(format!("an error without a message: {status} {text}")),
                }
            }
            // The gateways live throughout: no answer at all (a dropped connection, a hang) is
            // no clear error.
            Err(err) => {
                let why = std::error::Error::source(&err).map(|s| format!(" ({s})")).unwrap_or_default();
                let hung = if err.is_timeout() { ", no answer in time" } else { "" };
                Err(format!("no answer{hung}: {err}{why}"))
            }
        };
        let mut seen = seen.lock().unwrap();
        match outcome {
            Ok(answered) => seen.sent.push(Sent { token, acked: None, gateway: true, answered }),
            Err(problem) => seen.problems.push(format!("{token}: {problem}")),
        }
    }
}

/// Rows of a query, each split at `|`.
fn rows(server: &TestPostgres, url: &str, sql: &str) -> Vec<Vec<String>> {
    let out = server.query(url, sql);
    out.lines().filter(|l| !l.is_empty()).map(|l| l.split('|').map(str::to_string).collect()).collect()
}

async fn check(server: &TestPostgres, url: &str, machines: &[Machine], seen: &Seen, seed: u64, kills: usize) {
    let answered = seen.sent.iter().filter(|s| s.answered).count();
    let via_gateway = seen.sent.iter().filter(|s| s.gateway).count();
    eprintln!(
        "chaos: seed {seed}: {kills} kills, {} prompts ({via_gateway} through the gateways), {answered} answered",
        seen.sent.len()
    );
    if !seen.problems.is_empty() {
        // What the kernels that gateways started said: the machines' directories go with the test.
        for (n, machine) in machines.iter().enumerate() {
            let log = std::fs::read_to_string(machine.env.locations.kernel_log_path()).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!(
                "chaos: machine {n}'s kernel.log ends:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
    assert!(seen.problems.is_empty(), "seed {seed}: clients saw {:#?}", seen.problems);
    assert!(answered > 0, "seed {seed}: nothing was answered");

    // Every kernel back, and no turn left running or queued once their leases were taken over.
    // A kernel started here may find the lock still held by one a gateway was starting, and
    // exit: it is started again until one answers (a loaded machine starts them slowly).
    for machine in machines {
        wait::until("the machine's kernel answers again", wait::PATIENCE * 4, async || {
            if let Some(client) = machine.client().await {
                return Ok(client);
            }
            let exited = match machine.kernel.lock().unwrap().as_mut() {
                Some(kernel) => kernel.0.try_wait().map_or(true, |status| status.is_some()),
                None => true,
            };
            if exited {
                machine.start();
            }
            Err("no kernel answers yet")
        })
        .await;
    }
    let unfinished = "SELECT t.id, t.status, t.conversation_id, l.owner, l.generation, \
                      l.expires_at_ms - (extract(epoch from now()) * 1000)::bigint, \
                      (SELECT string_agg(e.seq || ':' || e.type, ' ' ORDER BY e.seq) FROM events e \
                       WHERE e.conversation_id = t.conversation_id AND e.seq > (SELECT max(seq) - 12 FROM events \
                       WHERE conversation_id = t.conversation_id)) \
                      FROM turns t LEFT JOIN conversation_leases l ON l.conversation_id = t.conversation_id \
                      WHERE t.status IN ('running', 'queued') \
                      UNION ALL SELECT turn_id, 'submit', conversation_id, '', 0, 0, '' FROM queued_submits";
    wait::until("no turn is left running or queued", wait::PATIENCE, async || {
        let left = rows(server, url, unfinished);
        if left.is_empty() { Ok(()) } else { Err(format!("{left:?}")) }
    })
    .await;
    let statuses = rows(server, url, "SELECT status, count(*) FROM turns GROUP BY status ORDER BY status");
    eprintln!("chaos: seed {seed}: turns by status {statuses:?}");

    // One turn per acknowledged prompt, at most one per other prompt; each turn ends once.
    let mut turns_of: HashMap<String, Vec<i64>> = HashMap::new();
    for row in rows(server, url, "SELECT id, prompt FROM turns") {
        let (id, prompt) = (row[0].parse::<i64>().unwrap(), row[1..].join("|"));
        for sent in &seen.sent {
            if prompt.contains(&format!("chaos {} says", sent.token)) {
                turns_of.entry(sent.token.clone()).or_default().push(id);
            }
        }
    }
    for sent in &seen.sent {
        let turns = turns_of.get(&sent.token).cloned().unwrap_or_default();
        match sent.acked {
            Some(turn) => assert_eq!(turns, [turn], "seed {seed}: {sent:?} has one turn"),
            None if sent.answered => assert_eq!(turns.len(), 1, "seed {seed}: {sent:?} has one turn: {turns:?}"),
            None => assert!(turns.len() <= 1, "seed {seed}: {sent:?} has one turn at most: {turns:?}"),
        }
    }
    let ends = "SELECT t.id, count(e.seq) FROM turns t LEFT JOIN events e ON e.type IN \
                ('turn_completed', 'turn_error', 'turn_cancelled') AND (e.wire::json->>'turn_id')::bigint = t.id \
                GROUP BY t.id HAVING count(e.seq) <> 1";
    assert_eq!(rows(server, url, ends), Vec::<Vec<String>>::new(), "seed {seed}: each turn ends once");

    // No tool ran twice.
    let mut effects: HashMap<String, usize> = HashMap::new();
    for machine in machines {
        let text = std::fs::read_to_string(machine.env.workspace.join(EFFECTS)).unwrap_or_default();
        for line in text.lines() {
            *effects.entry(line.to_string()).or_default() += 1;
        }
    }
    let twice: Vec<_> = effects.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "seed {seed}: tools that ran twice: {twice:?}");
    assert!(!effects.is_empty(), "seed {seed}: no tool ran at all");

    // Every stored call has one result after it, every result its call before it, in seq order.
    let client = machines[0].env.wait_for_kernel().await;
    for row in rows(server, url, "SELECT id FROM conversations") {
        let conv: i64 = row[0].parse().unwrap();
        let entries = client.history(conv).await.unwrap().entries;
        assert!(entries.windows(2).all(|w| w[0].seq < w[1].seq), "seed {seed}: conversation {conv}'s seqs");
        let mut open: Vec<&str> = Vec::new();
        for block in entries.iter().flat_map(|e| &e.message.content) {
            match block {
                ContentBlock::ToolCall { id, .. } => open.push(id),
                ContentBlock::ToolResult { tool_call_id, .. } => {
                    let at = open.iter().position(|id| id == tool_call_id);
                    let at = at.unwrap_or_else(|| panic!("seed {seed}: a result without its call: {entries:?}"));
                    open.remove(at);
                }
                _ => {}
            }
        }
        assert!(open.is_empty(), "seed {seed}: conversation {conv}: calls without results {open:?}");
    }
}
