//! Running one README's commands and examples by the tables of tests/tests/readme.rs.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::json;

use super::*;

pub fn panic_text(panic: &Box<dyn Any + Send>) -> String {
    match (panic.downcast_ref::<String>(), panic.downcast_ref::<&str>()) {
        (Some(text), _) => text.clone(),
        (None, Some(text)) => text.to_string(),
        (None, None) => "(a panic without a message)".into(),
    }
}

/// The kind of a line, or how to add one.
pub fn classify(text: &str) -> Result<&'static Kind, String> {
    let command = &text[assignments_end(text)..];
    KINDS.iter().find(|kind| glob(kind.pattern, command)).ok_or_else(|| {
        format!(
            "`{text}` is of no kind the README test knows: add a row to KINDS in tests/tests/readme.rs \
             saying how it runs (to its end, as a server, against a server, or in CI or with a stand-in, \
             with the reason), or write it as the READMEs' other commands are"
        )
    })
}

/// Whether `text` matches `pattern`, whose `*` stands for any text.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// The words of `text` the shell splits it into at the top level (quotes and `$(...)` kept
/// whole), as byte ranges.
fn top_words(text: &str) -> Vec<(usize, usize)> {
    let (mut single, mut double, mut depth) = (false, false, 0usize);
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        let quoted = single || double || depth > 0;
        if !quoted && c.is_whitespace() {
            if let Some(s) = start.take() {
                words.push((s, at));
            }
            continue;
        }
        start.get_or_insert(at);
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '(' if !single => depth += 1,
            ')' if !single => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
    words
}

fn is_assignment_word(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Where the command starts after its leading `NAME=value` words.
fn assignments_end(text: &str) -> usize {
    top_words(text).into_iter().find(|&(s, e)| !is_assignment_word(&text[s..e])).map_or(text.len(), |(s, _)| s)
}

/// The commands and examples of one file, run; how many.
pub fn file(root: &Path, file: &str) -> usize {
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let blocks = readme::blocks(&text);
    let mut count = 0;
    let mut shared = FileRun::new(root, file, &blocks);
    for (index, block) in shell_blocks(&blocks) {
        if block.body.contains("export SUPERPI_DATABASE_URL=") {
            // Another machine: the kernel of the lines before holds this data directory.
            count += FileRun::new(root, file, &blocks).block(&blocks, index);
        } else {
            count += shared.block(&blocks, index);
        }
    }
    drop(shared);
    for block in blocks.iter().filter(|b| b.lang.is_empty()) {
        count += usage(block, file);
    }
    if SETTINGS_FILES.contains(&file) {
        count += examples(file, &blocks);
    }
    count
}

struct Server {
    _process: KillOnDrop,
    /// The stderr lines it writes after its announcement (read, so it never blocks on them).
    _stderr: Option<mpsc::Receiver<String>>,
    base: String,
    /// The port the README gave it (or its default).
    port: u16,
    tokens: Vec<String>,
}

/// One file's environment and what its lines have set up so far. The processes are dropped
/// (killed) before the environment, whose drop kills its kernel.
struct FileRun<'a> {
    root: &'a Path,
    file: &'a str,
    servers: Vec<Server>,
    streams: Vec<KillOnDrop>,
    kernel: Option<KillOnDrop>,
    env: TestEnv,
    vars: Vec<(String, String)>,
    conversation: Option<i64>,
    block_schedules: Vec<i64>,
    question: Option<String>,
    /// The id of the last Responses API answer, for a README's `previous_response_id`.
    response: Option<String>,
    /// A [`HOLD_TURNS`] gate: turns wait at their model request while this file is missing.
    gate: Option<PathBuf>,
    skip_block: bool,
}

impl<'a> FileRun<'a> {
    fn new(root: &'a Path, file: &'a str, blocks: &[Block]) -> Self {
        let env = TestEnv::new();
        let holds = blocks.iter().any(|b| HOLD_TURNS.iter().any(|(f, s)| *f == file && b.body.contains(s)));
        let gate = holds.then(|| {
            let gate = env.workspace.join(".readme-gate");
            std::fs::write(&gate, "").unwrap();
            let wait = "while [ ! -e .readme-gate ]; do sleep 0.02; done";
            let hooks =
                json!({"hooks": {"before_request": [{"name": "readme-gate", "command": wait, "timeout_secs": 120}]}});
            std::fs::write(env.locations.config_dir.join("settings.json"), hooks.to_string()).unwrap();
            gate
        });
        FileRun {
            root,
            file,
            servers: Vec::new(),
            streams: Vec::new(),
            kernel: None,
            env,
            vars: Vec::new(),
            conversation: None,
            block_schedules: Vec::new(),
            question: None,
            response: None,
            gate,
            skip_block: false,
        }
    }

    fn block(&mut self, blocks: &[Block], index: usize) -> usize {
        let block = &blocks[index];
        let held = HOLD_TURNS.iter().any(|(f, s)| *f == self.file && block.body.contains(s));
        if let Some(gate) = self.gate.as_ref().filter(|_| held) {
            std::fs::remove_file(gate).unwrap();
        }
        self.block_schedules.clear();
        self.skip_block = false;
        let commands = readme::commands(block);
        let mut count = 0;
        for (i, command) in commands.iter().enumerate() {
            let shown = if i + 1 == commands.len() { shown_after(blocks, index) } else { None };
            for text in readme::alternatives(&command.text, PIPE_PROGRAMS) {
                if self.skip_block {
                    eprintln!("SKIPPED {}:{}: {text}", self.file, command.line);
                    continue;
                }
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.line(&text, command, shown))) {
                    panic!("line {}: `{text}`: {}", command.line, panic_text(&panic));
                }
                count += 1;
            }
        }
        if let Some(gate) = self.gate.as_ref().filter(|_| held) {
            std::fs::write(gate, "").unwrap();
        }
        self.streams.clear();
        if self.vars.iter().any(|(name, _)| name == "SUPERPI_DATABASE_URL") && !self.skip_block {
            assert!(!self.env.database_path().exists(), "block at line {}: the kernel kept a SQLite store", block.line);
        }
        count
    }

    fn line(&mut self, text: &str, command: &readme::Command, shown: Option<&Block>) {
        assert!(!command.comment.starts_with("(unterminated"), "{}", command.comment);
        eprintln!("README test: {}:{}: {text}", self.file, command.line);
        if !text.starts_with("export ") && assignments_end(text) == text.len() {
            return self.assign(text);
        }
        let kind = classify(text).unwrap_or_else(|e| panic!("{e}"));
        let tokens: Vec<&str> = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).collect();
        for program in PROGRAMS.iter().filter(|p| tokens.contains(p)) {
            if which(program).is_none() {
                assert!(std::env::var_os("CI").is_none(), "`{program}` is not installed (.ci/run installs it)");
                eprintln!("SKIPPED {}:{}: `{program}` is not installed", self.file, command.line);
                return;
            }
        }
        for (name, value) in VARIABLES {
            if text.contains(&format!("${name}")) && !self.vars.iter().any(|(n, _)| n == name) {
                self.vars.push((name.to_string(), value.to_string()));
            }
        }
        let text = self.stand_for(text);
        match kind.run {
            Run::ToExit => self.run_to_end(&text),
            Run::WithInput(input, expected) => {
                let out = self.ended(&text, input);
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(stdout.contains(expected), "its output lacks {expected:?}: {stdout}");
            }
            Run::Serve(served) => self.serve(&text, served),
            Run::Curl => self.curl(&text, &command.shown, shown),
            Run::InCi(fragment) => {
                let ci = normalized(&std::fs::read_to_string(self.root.join(".ci/run")).unwrap());
                let needle = fragment.map_or_else(|| normalized(&text), str::to_string);
                assert!(ci.contains(&needle), "{}: .ci/run does not run `{needle}`", kind.why);
            }
            Run::StandIn(stand_in) => self.stand_in(&text, stand_in),
        }
    }

    /// `bash -c SCRIPT` in this environment, with the built superpi first on PATH and the
    /// variables the README's lines set.
    fn bash(&self, script: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(script).current_dir(&self.env.workspace);
        self.env.apply_env(&mut cmd);
        let bin = superpi_bin();
        let mut path = vec![bin.parent().unwrap().to_path_buf()];
        path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        cmd.env("PATH", std::env::join_paths(path).unwrap());
        cmd.envs(self.vars.iter().map(|(n, v)| (n, v)));
        cmd
    }

    fn ended(&self, text: &str, input: &str) -> Output {
        let out = finish(self.bash(text), input, text);
        assert!(
            out.status.success(),
            "exit status {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs a line to its end and keeps what later lines use from its output: a schedule's id,
    /// a webhook trigger's token and secret.
    fn run_to_end(&mut self, text: &str) {
        let out = self.ended(text, "");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(rest) = line.strip_prefix("Added schedule ") {
                self.block_schedules.push(rest.split(' ').next().unwrap().parse().unwrap());
            } else if let Some(rest) = line.strip_prefix("Trigger: POST /v1/triggers/") {
                self.vars.push(("TOKEN".into(), rest.split(' ').next().unwrap().into()));
            } else if let Some(rest) = line.strip_prefix("Secret:") {
                self.vars.push(("SECRET".into(), rest.trim().into()));
            }
        }
    }

    fn assign(&mut self, text: &str) {
        let name = text.split('=').next().unwrap();
        let out = self.ended(&format!("{text}\nprintf %s \"${name}\""), "");
        self.vars.push((name.to_string(), String::from_utf8(out.stdout).unwrap()));
    }

    /// The line with each [`STANDS_FOR`] placeholder replaced by what it stands for here.
    fn stand_for(&mut self, text: &str) -> String {
        let mut text = text.to_string();
        for (words, stand) in STANDS_FOR {
            if !text.contains(words) {
                continue;
            }
            let stem = words.rsplit_once(' ').map_or("", |(stem, _)| stem);
            let value = match stand {
                Stand::Conversation => format!("{stem} {}", self.conversation()),
                Stand::Schedule => {
                    let id = self.block_schedules.first().expect("no schedule was added before in this block");
                    format!("{stem} {id}")
                }
                Stand::Directory => {
                    let dir = self.env.path().join("user-run");
                    std::fs::create_dir_all(&dir).unwrap();
                    dir.display().to_string()
                }
                Stand::Question => self.question(),
            };
            text = text.replace(words, &value);
        }
        text
    }

    /// A conversation with a turn that wrote a file.
    fn conversation(&mut self) -> i64 {
        if let Some(id) = self.conversation {
            return id;
        }
        let write = r#"@tool write {"path": "readme-test.txt", "content": "written by the README test"}"#;
        let out = finish(self.env.command(&["run", "--mode", "auto", "--output-format", "json", write]), "", "a write");
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["status"], "completed", "{result}");
        *self.conversation.insert(result["conversation_id"].as_i64().unwrap())
    }

    /// The id of an open question of the AG-UI server: a run of `make` in accept-edits, kept
    /// open until the block ends.
    fn question(&mut self) -> String {
        if let Some(id) = &self.question {
            return id.clone();
        }
        let base = self.server_for(4100, None);
        let prompt = json!({
            "threadId": "readme-question", "runId": "q", "tools": [], "context": [], "state": {},
            "messages": [{"id": "m1", "role": "user", "content": r#"@tool bash {"command": "make"}"#}],
            "forwardedProps": {"executionMode": "accept-edits"},
        });
        let mut curl = Command::new("curl");
        curl.args(["-sN", &format!("{base}/agui/v1/run"), "-H", "content-type: application/json", "-d"]);
        curl.arg(prompt.to_string()).stdout(Stdio::piped());
        let mut run = KillOnDrop(curl.spawn().unwrap());
        let lines = lines_of(run.stdout.take().unwrap());
        let asked = line_where(&lines, "a permission question", |l| l.contains("superpi.permission_request"));
        let event: Value = serde_json::from_str(asked.trim_start_matches("data: ")).unwrap();
        self.streams.push(run);
        let id = event["value"]["requestId"].as_str().unwrap().to_string();
        self.question.insert(id).clone()
    }

    /// The leading assignments and the words of a command line, as bash splits them.
    fn words(&self, text: &str) -> (Vec<(String, String)>, Vec<String>) {
        let out = self.ended(&format!("printf '%s\\0' {text}"), "");
        let words: Vec<String> =
            String::from_utf8(out.stdout).unwrap().split_terminator('\0').map(str::to_string).collect();
        let count = words.iter().take_while(|w| is_assignment_word(w)).count();
        let assignments =
            words[..count].iter().map(|w| w.split_once('=').unwrap()).map(|(n, v)| (n.into(), v.into())).collect();
        (assignments, words[count..].to_vec())
    }

    fn serve(&mut self, text: &str, served: Served) {
        let (assignments, words) = self.words(text.trim_end_matches('&').trim_end());
        assert_eq!(words.first().map(String::as_str), Some("superpi"), "{words:?}");
        let mut args: Vec<String> = words[1..].to_vec();
        let mut vars = assignments.clone();
        vars.extend(self.vars.iter().cloned());
        let vars: Vec<(&str, &str)> = vars.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        if let Some(at) = args.iter().position(|a| a == "--workspace") {
            std::fs::create_dir_all(&args[at + 1]).unwrap();
        }
        let default = DEFAULT_PORTS.iter().find(|(_, cmd)| cmd.ends_with(&format!(" {}", args[0]))).map(|(p, _)| *p);
        let port = match args.iter().position(|a| a == "--port") {
            Some(at) => std::mem::replace(&mut args[at + 1], "0".into()).parse().unwrap(),
            None if matches!(served, Served::Http) => {
                args.extend(["--port".into(), "0".into()]);
                default.unwrap_or(0)
            }
            None => 0,
        };
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let tokens: Vec<String> = assignments
            .iter()
            .filter(|(n, _)| n == "SUPERPI_GATEWAY_TOKEN")
            .flat_map(|(_, v)| v.split(',').map(str::to_string))
            .collect();
        match served {
            Served::Http => {
                let (process, base) = self.env.spawn_http(&arg_refs, &vars);
                let (status, body) = http_get(&base, "/health");
                assert!(status == 200 && body.contains("ok"), "GET {base}/health: {status} {body}");
                self.servers.push(Server { _process: process, _stderr: None, base, port, tokens });
            }
            Served::RpcUnix | Served::RpcTcp => {
                let mut cmd = self.env.command(&arg_refs);
                cmd.envs(vars.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped());
                let mut process = KillOnDrop(cmd.spawn().unwrap());
                let stderr = lines_of(process.stderr.take().unwrap());
                let announced =
                    line_where(&stderr, "superpi rpc announces where it listens", |l| l.contains("listening on"));
                let address = announced.rsplit("listening on ").next().unwrap().to_string();
                let answer = match address.split_once(':') {
                    Some(("unix", path)) => ask(std::os::unix::net::UnixStream::connect(path).unwrap()),
                    Some(("tcp", addr)) => ask(std::net::TcpStream::connect(addr).unwrap()),
                    _ => panic!("{announced}"),
                };
                assert!(answer.contains("\"result\"") && answer.contains("\"workspace\""), "{answer}");
                self.servers.push(Server { _process: process, _stderr: Some(stderr), base: address, port, tokens });
            }
            Served::Kernel => {
                if let Some(pid) = self.env.kernel_pid().filter(|pid| alive(*pid)) {
                    finish(self.env.command(&["kernel", "stop"]), "", "superpi kernel stop");
                    wait::until_blocking("the autostarted kernel stops", wait::PATIENCE, || !alive(pid));
                }
                let mut cmd = self.env.command(&arg_refs);
                cmd.envs(vars.iter().copied()).stdout(Stdio::null());
                let kernel = KillOnDrop(cmd.spawn().unwrap());
                let pid = kernel.id() as i32;
                let socket = self.env.locations.socket_path();
                wait::until_blocking("the kernel answers", wait::PATIENCE, || {
                    self.env.kernel_pid() == Some(pid) && std::os::unix::net::UnixStream::connect(&socket).is_ok()
                });
                self.kernel = Some(kernel);
            }
        }
    }

    /// The base URL of the server for a README's port (the one holding `bearer` among its
    /// tokens, else one without tokens), started from [`DEFAULT_PORTS`] when none runs.
    fn server_for(&mut self, port: u16, bearer: Option<&str>) -> String {
        let of_port = || self.servers.iter().filter(|s| s.port == port && s.base.starts_with("http"));
        let chosen = bearer
            .and_then(|b| of_port().find(|s| s.tokens.iter().any(|t| t == b)))
            .or_else(|| of_port().find(|s| s.tokens.is_empty()))
            .or_else(|| of_port().next());
        if let Some(server) = chosen {
            return server.base.clone();
        }
        let Some((_, command)) = DEFAULT_PORTS.iter().find(|(p, _)| *p == port) else {
            panic!("no server of this file listens on {port}: start one before, or add its port to DEFAULT_PORTS")
        };
        self.serve(command, Served::Http);
        self.servers.last().unwrap().base.clone()
    }

    fn curl(&mut self, text: &str, shown: &[String], shown_block: Option<&Block>) {
        let Some(port) = local_port(text) else { panic!("a curl to no local server: add its server to the README") };
        let bearer = text.split("Bearer ").nth(1).and_then(|rest| rest.split(['\'', '"', ' ']).next());
        let base = self.server_for(port, bearer);
        let mut text = text.to_string();
        for host in ["127.0.0.1", "localhost"] {
            text = text.replace(&format!("http://{host}:{port}"), &base);
        }
        // A README's `previous_response_id` names the answer of the request before it.
        if let Some((before, after)) = text.split_once("\"previous_response_id\": \"resp_") {
            let id = self.response.clone().expect("a previous_response_id before any Responses API answer");
            let rest = after.split_once('"').map_or("", |(_, rest)| rest);
            text = format!("{before}\"previous_response_id\": \"{id}\"{rest}");
        }
        let url = top_words(&text).into_iter().map(|(s, e)| &text[s..e]).find(|w| w.starts_with("http")).unwrap();
        if url.ends_with("/events") {
            // An attached stream does not end: read until its snapshot, closed with the block.
            let mut stream = self.bash(&format!("exec {text}"));
            stream.stdout(Stdio::piped()).stderr(Stdio::null());
            let mut stream = KillOnDrop(stream.spawn().unwrap());
            let lines = lines_of(stream.stdout.take().unwrap());
            line_where(&lines, "the attached stream's snapshot", |l| l.contains("STATE_SNAPSHOT"));
            self.streams.push(stream);
            return;
        }
        let out = self.ended(&format!("{text} -sS -w '\\n%{{http_code}}'"), "");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let (body, status) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
        let status: u16 = status.trim().parse().unwrap();
        if let Some(id) = serde_json::from_str::<Value>(body).ok().and_then(|v| v["id"].as_str().map(str::to_string))
            && id.starts_with("resp_")
        {
            self.response = Some(id);
        }
        let question = self.question.clone().unwrap_or_default();
        for expected in shown {
            let expected = expected.replace("q-3", &question);
            let (want_status, want) = shown_json(&expected);
            assert!(status == want_status.unwrap_or(status), "status {status}, the README shows {expected}: {body}");
            let got: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
            if let Err(why) = same_shape(&want, &got) {
                panic!("the README shows {expected}, it answered {body}: {why}");
            }
        }
        assert!(!shown.is_empty() || (200..300).contains(&status), "status {status}: {body}");
        if let Some(block) = shown_block {
            let types = |text: &str| -> Vec<String> {
                text.lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .filter_map(|l| l.split("\"type\":\"").nth(1)?.split('"').next().map(str::to_string))
                    .collect()
            };
            let (want, got) = (types(&block.body), types(body));
            let mut got_iter = got.iter();
            for event in &want {
                assert!(
                    got_iter.any(|g| g == event),
                    "the README shows the events {want:?} in this order; got {got:?}"
                );
            }
        }
    }

    fn stand_in(&mut self, text: &str, stand_in: StandIn) {
        match stand_in {
            StandIn::CargoRun => self.run_to_end(&text.replacen("cargo run --release --", "superpi", 1)),
            StandIn::NpxServer => {
                let Some(modules) = superpi_tests::test_npm_modules() else { return self.run_to_end(text) };
                // sandbox.* is read when the kernel starts: it starts again with the server's files readable.
                let settings = self.env.locations.config_dir.join("settings.json");
                let mut current: Value =
                    std::fs::read_to_string(&settings).map_or(json!({}), |s| serde_json::from_str(&s).unwrap());
                current["sandbox"] = json!({"extra_read_paths": [modules]});
                std::fs::write(&settings, current.to_string()).unwrap();
                finish(self.env.command(&["kernel", "stop"]), "", "superpi kernel stop");
                let script = modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
                let npx = "npx -y @modelcontextprotocol/server-filesystem";
                self.run_to_end(&text.replace(npx, &format!("node {}", script.display())));
                let name = text.split_whitespace().nth(3).unwrap();
                let workspace = self.env.workspace.canonicalize().unwrap();
                let list = format!(r#"@tool mcp__{name}__list_directory {}"#, json!({"path": workspace}));
                let out = self.ended(&format!("superpi run '{list}'"), "");
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(stdout.contains(&format!("mcp__{name}__list_directory returned")), "{stdout}");
            }
            StandIn::Postgres => {
                assert!(text.contains("postgresql://"), "{text}");
                let Some(server) = superpi_tests::postgres_server::shared() else {
                    self.skip_block = true;
                    return;
                };
                self.vars.push(("SUPERPI_DATABASE_URL".into(), server.new_database()));
            }
        }
    }
}

/// One request line to an RPC server and its answer.
fn ask<S: Read + Write>(mut stream: S) -> String {
    stream.write_all(RPC_REQUEST.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !superpi_tests::is_zombie(pid)
}

/// The port of the first `http://127.0.0.1:PORT` or `http://localhost:PORT` in `text`.
fn local_port(text: &str) -> Option<u16> {
    ["http://127.0.0.1:", "http://localhost:"].iter().find_map(|host| {
        let rest = text.split(host).nth(1)?;
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    })
}

/// A shown output `[STATUS] {json} [remark]`: the status, and the JSON, where `...` leaves
/// out members (`{"a": 1, ...}`) or a whole value (`{...}`, `[...]`).
pub fn shown_json(shown: &str) -> (Option<u16>, Value) {
    let (status, rest) = match shown.split_once(' ') {
        Some((status, rest)) if status.chars().all(|c| c.is_ascii_digit()) => (status.parse().ok(), rest),
        _ => (None, shown),
    };
    let rest = rest.replace(", ...", "").replace("{...}", "{}").replace("[...]", "[]");
    let mut values = serde_json::Deserializer::from_str(rest.trim()).into_iter::<Value>();
    let value = values.next().and_then(Result::ok).unwrap_or_else(|| panic!("the shown output is no JSON: {shown}"));
    (status, value)
}

/// Whether `got` answers as `want` shows: the keys it shows, with equal values, except that
/// what the server makes up (an `id`, `...Id`, `..._id`, `created`, `created_at`) need only be
/// of the same JSON type, and `{}` or `[]` stands for any object or array.
pub fn same_shape(want: &Value, got: &Value) -> Result<(), String> {
    let (Some(want), Some(got)) = (want.as_object(), got.as_object()) else {
        return if want == got { Ok(()) } else { Err(format!("{want} is not {got}")) };
    };
    for (key, value) in want {
        let Some(actual) = got.get(key) else { return Err(format!("no `{key}`")) };
        let made_up = key == "id" || key.ends_with("Id") || key.ends_with("_id") || key.starts_with("created");
        match (value, actual) {
            (Value::Number(_), Value::Number(_)) | (Value::String(_), Value::String(_)) if made_up => {}
            (Value::Array(items), Value::Array(_)) if items.is_empty() => {}
            (Value::Object(_), _) => same_shape(value, actual)?,
            _ if value == actual => {}
            _ => return Err(format!("`{key}` is {actual}, not {value}")),
        }
    }
    Ok(())
}

/// `text` with `\`-continued lines joined and runs of whitespace made one space.
fn normalized(text: &str) -> String {
    text.replace("\\\n", " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A usage synopsis (an untagged block of `superpi ...` lines): every option and choice it
/// names is in the command's `--help`.
fn usage(block: &Block, file: &str) -> usize {
    let lines: Vec<&str> = block.body.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() || !lines.iter().all(|l| l.starts_with("superpi ")) {
        return 0;
    }
    for line in &lines {
        eprintln!("README test: {file}:{}: the usage `{line}`", block.line);
        let words: Vec<&str> = line.split_whitespace().collect();
        let role: Vec<&str> = words[1..].iter().take_while(|w| !w.starts_with(['[', '-'])).copied().collect();
        let mut cmd = Command::new(superpi_bin());
        cmd.args(&role).arg("--help");
        let out = finish(cmd, "", line);
        let help = String::from_utf8_lossy(&out.stdout);
        for word in &words[1 + role.len()..] {
            let word = word.trim_matches(['[', ']', '.']);
            let names: Vec<&str> = if word.starts_with("--") { vec![word] } else { word.split('|').collect() };
            for name in names.into_iter().filter(|n| n.starts_with("--") || word.contains('|')) {
                assert!(
                    help.contains(name),
                    "{file}:{}: `{line}` names {name}, `superpi {} --help` does not",
                    block.line,
                    role.join(" ")
                );
            }
        }
    }
    lines.len()
}

/// The settings examples of `file`, each written where it belongs and loaded ([`EXAMPLES`]).
fn examples(file: &str, blocks: &[Block]) -> usize {
    let mut count = 0;
    for (index, block) in blocks.iter().enumerate() {
        let is_output = block.lang == "text" && index > 0 && blocks[index - 1].is_shell() && block.follows_directly;
        if !matches!(block.lang.as_str(), "json" | "toml" | "text") || is_output {
            continue;
        }
        let Some(example) = EXAMPLES.iter().find(|e| e.file == file && e.heading == block.heading) else {
            panic!(
                "{file}:{}: a {} example under \"{}\" that no row of EXAMPLES in tests/tests/readme.rs loads: \
                 add one saying which file it is and what loads it",
                block.line, block.lang, block.heading
            )
        };
        eprintln!("README test: {file}:{}: the {} example under \"{}\"", block.line, block.lang, block.heading);
        let env = TestEnv::new();
        let (path, content) = match example.writes {
            Dest::Settings => (env.locations.config_dir.join("settings.json"), block.body.clone()),
            Dest::WorkspaceSettings => {
                std::fs::create_dir_all(env.workspace.join(".superpi")).unwrap();
                (env.workspace.join(".superpi/settings.json"), block.body.clone())
            }
            Dest::Harnesses => (env.locations.config_dir.join("harnesses.toml"), block.body.clone()),
            Dest::Permissions => (env.locations.config_dir.join("permissions.json"), block.body.clone()),
            Dest::InvalidSettings => {
                let complete = blocks.iter().find(|b| b.heading == "A complete example" && b.lang == "json").unwrap();
                (env.locations.config_dir.join("settings.json"), complete.body.replacen("\"allow\"", "\"alow\"", 1))
            }
        };
        std::fs::write(&path, content).unwrap();
        for (args, code, expected) in example.runs {
            let out = finish(env.command(args), "", &format!("superpi {}", args.join(" ")));
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let place = format!("{file}:{}: superpi {} with the example", block.line, args.join(" "));
            assert_eq!(out.status.code(), Some(*code), "{place}: {stdout}\n{stderr}");
            if example.writes == Dest::InvalidSettings {
                let shown = block
                    .body
                    .trim()
                    .replace("/home/me/.config/superpi", &env.locations.config_dir.display().to_string());
                let mut rest = stderr.as_ref();
                for piece in shown.split("...").map(str::trim) {
                    let at = rest
                        .find(piece)
                        .unwrap_or_else(|| panic!("{place}: the doc shows {shown:?}, it said {stderr}"));
                    rest = &rest[at + piece.len()..];
                }
            } else {
                assert!(
                    stdout.contains(expected) || stderr.contains(expected),
                    "{place}: no {expected:?} in {stdout}\n{stderr}"
                );
                assert!(!stderr.contains("error") && !stderr.contains("warning"), "{place}: {stderr}");
            }
            count += 1;
        }
    }
    count
}
