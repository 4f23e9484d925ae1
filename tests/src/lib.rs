//! superpi-tests: helpers for end-to-end tests that run the real `superpi` binary.
//!
//! Owns [`TestEnv`]: a private data, config and runtime directory plus a workspace, so every
//! test gets its own kernel, and that kernel is killed when the test ends; and what the
//! frontends' tests and benchmarks share (a frontend process and its announced address, the end
//! of a conversation's first turn, SSE timing in [`bench`], CORS preflights in [`http`],
//! conversations longer than a history page in [`pages`]). It must not fake anything a test
//! claims to check: the binary, the socket and the SQLite file are real.
#![allow(clippy::disallowed_methods, clippy::expect_used, clippy::unwrap_used)] // test support spawns processes and fails loudly

pub mod bad_input;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use superpi_client::{ConnectOptions, Locations};

pub mod bench;
pub mod bulk;
pub mod http;
pub mod oauth_fake;
pub mod pages;
/// A PostgreSQL server for the tests of the store's PostgreSQL engine (the kernel's unit tests
/// use the same file).
#[path = "../../kernel/store/testing/postgres_server.rs"]
pub mod postgres_server;
pub mod readme;
pub mod real_machine;
pub mod stdio;
pub mod wait;

/// The fixture MCP server of this build (src/bin/mcp_fixture.rs, beside `superpi`).
pub fn mcp_fixture_bin() -> PathBuf {
    let bin = superpi_bin().with_file_name("mcp_fixture");
    assert!(bin.exists(), "{} is missing: build it first with `cargo build -p superpi-tests --bins`", bin.display());
    bin
}

/// Starts the fixture MCP server serving the older HTTP+SSE transport (`--sse`): its process
/// and the URL it listens at.
pub fn mcp_sse_fixture() -> (KillOnDrop, String) {
    let mut child = Command::new(mcp_fixture_bin())
        .arg("--sse")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn the fixture: {e}"));
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        BufReader::new(stdout).read_line(&mut line).unwrap_or_default();
    }
    let url = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("the fixture said {line:?}"));
    (KillOnDrop(child), url.to_string())
}

/// The published MCP servers .ci/run installs for the tests (tests/npm/package-lock.json) in
/// `$SUPERPI_TEST_NPM` (default `~/.cache/superpi/test-npm`): their `node_modules`, or `None`,
/// said on stderr, where they are not installed (a failure where `CI` is set).
pub fn test_npm_modules() -> Option<PathBuf> {
    let root = match std::env::var_os("SUPERPI_TEST_NPM") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/superpi/test-npm"),
    };
    let modules = root.join("node_modules");
    let ready = ["server-filesystem", "server-everything"]
        .iter()
        .all(|p| modules.join("@modelcontextprotocol").join(p).join("dist/index.js").is_file());
    if ready {
        return Some(modules);
    }
    let how = "install them as .ci/run does: copy tests/npm/package*.json to that directory and run `npm ci` there";
    assert!(std::env::var_os("CI").is_none(), "the npm MCP servers are not installed in {}: {how}", root.display());
    eprintln!("SKIPPED: the npm MCP servers are not installed in {} ({how})", root.display());
    None
}

/// The `superpi` binary of this build (target/debug/superpi beside the test executable, or
/// `SUPERPI_BIN`), once it is known to be built from the sources these tests were: a binary
/// left from an earlier build fails the test rather than passing it with old code.
pub fn superpi_bin() -> PathBuf {
    CHECKED_SUPERPI
        .get_or_init(|| {
            let bin = match std::env::var_os("SUPERPI_BIN") {
                Some(path) => PathBuf::from(path),
                None => {
                    let exe = std::env::current_exe().expect("test executable path");
                    let mut dir = exe.parent().expect("test dir").to_path_buf();
                    if dir.ends_with("deps") {
                        dir.pop();
                    }
                    dir.join("superpi")
                }
            };
            assert!(bin.exists(), "{} is missing: build it first with `cargo build --workspace --bins`", bin.display());
            assert_built_from_these_sources(&bin);
            bin
        })
        .clone()
}

/// The `superpi` binary once [`superpi_bin`] has checked it.
static CHECKED_SUPERPI: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Whether [`superpi_bin`] has found a binary of these sources: a destructor cleaning up after
/// a failed check must not call it again (a second panic aborts the test process).
pub fn superpi_bin_checked() -> bool {
    CHECKED_SUPERPI.get().is_some()
}

include!(concat!(env!("OUT_DIR"), "/sources_id.rs"));

/// Fails unless `superpi --version` names a build of the sources these tests were built with.
fn assert_built_from_these_sources(bin: &Path) {
    let out = Command::new(bin).arg("--version").output().expect("running superpi --version");
    let version = String::from_utf8_lossy(&out.stdout);
    let id = version.split("(build ").nth(1).map(|rest| rest.chars().take(8).collect::<String>());
    assert!(
        id.as_deref() == Some(SOURCES_ID),
        "{} is built from other sources than these tests ({} says {:?}, the sources are {SOURCES_ID}): \
         build it again with `cargo build --workspace --bins`",
        bin.display(),
        bin.display(),
        version.trim(),
    );
}

/// `superpi-frontend` beside `superpi`: the frontends' own binary, which `superpi acp|mcp|rpc|
/// gateway|agui` become (by exec) when it is there.
pub fn frontend_bin() -> PathBuf {
    let bin = superpi_bin().with_file_name("superpi-frontend");
    assert!(bin.exists(), "{} is missing: build it first with `cargo build -p superpi-cli`", bin.display());
    bin
}

/// A private superpi installation for one test.
pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub locations: Locations,
    pub workspace: PathBuf,
    pub home: PathBuf,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::Builder::new().prefix("superpi-test-").tempdir().expect("temp dir");
        let p = root.path();
        let locations = Locations::under(p);
        let workspace = p.join("workspace");
        let home = p.join("home");
        for dir in [&locations.config_dir, &workspace, &home] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        TestEnv { root, locations, workspace, home }
    }

    /// `superpi ARGS` with this environment's directories, HOME and no provider variables, run in
    /// the workspace.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(superpi_bin());
        cmd.args(args).current_dir(&self.workspace);
        self.apply_env(&mut cmd);
        cmd
    }

    /// Sets this environment's variables on any command (also a tokio one via `as_std_mut`).
    pub fn apply_env(&self, cmd: &mut Command) {
        cmd.env("SUPERPI_DATA_DIR", &self.locations.data_dir)
            .env("SUPERPI_CONFIG_DIR", &self.locations.config_dir)
            .env("SUPERPI_RUNTIME_DIR", &self.locations.runtime_dir)
            .env("SUPERPI_WORKSPACES_DIR", &self.locations.workspaces_dir)
            .env("HOME", &self.home)
            .env_remove("SUPERPI_TOKENS")
            .env_remove("SUPERPI_GATEWAY_TOKEN")
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()));
        for name in superpi_proto::message::PROVIDER_VARIABLES {
            cmd.env_remove(name);
        }
    }

    /// Options for a client of this environment's kernel; it autostarts the test binary.
    pub fn connect_options(&self, frontend: &str) -> ConnectOptions {
        let mut opts = ConnectOptions::new(self.locations.clone(), frontend);
        opts.kernel_exe = Some(superpi_bin());
        // Like the commands of [`TestEnv::command`], the test's clients have no provider
        // variables (whatever the test process has), so they never replace a kernel.
        opts.provider_env = Some(Default::default());
        opts
    }

    pub fn database_path(&self) -> PathBuf {
        self.locations.database_path()
    }

    /// Waits (30 s at most) until the store holds `count` turns of any conversation: a prompt
    /// is acknowledged once its turn row is written, also one that steers a running turn and
    /// publishes nothing until it joins.
    pub async fn wait_for_turn_rows(&self, count: i64) {
        wait::until(&format!("the store holds {count} turns"), wait::PATIENCE, async || {
            let rows = rusqlite::Connection::open(self.database_path())
                .and_then(|db| db.query_row("SELECT COUNT(*) FROM turns", [], |r| r.get::<_, i64>(0)));
            match rows {
                Ok(n) if n >= count => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }

    /// The pid the running kernel wrote into its lock file.
    pub fn kernel_pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.locations.lock_path()).ok()?.trim().parse().ok()
    }

    /// Kills the kernel (SIGKILL) and waits until its pid is gone.
    pub fn kill_kernel(&self) {
        if let Some(pid) = self.kernel_pid() {
            kill_and_wait(pid);
        }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// A client that never starts a kernel, once one answers (30 s at most): for a kernel the
    /// test started by hand.
    pub async fn wait_for_kernel(&self) -> superpi_client::KernelClient {
        let mut opts = self.connect_options("test");
        opts.autostart = false;
        wait::until("a kernel answers", wait::PATIENCE, async || superpi_client::KernelClient::connect(&opts).await)
            .await
    }

    /// `superpi kernel` started by hand with these extra variables (killed when dropped), and a
    /// client of it once it answers.
    pub async fn start_kernel(&self, vars: &[(&str, &str)]) -> (KillOnDrop, superpi_client::KernelClient) {
        let kernel = self.command(&["kernel"]).envs(vars.iter().copied()).stdout(Stdio::null()).spawn();
        let kernel = KillOnDrop(kernel.expect("spawn superpi kernel"));
        (kernel, self.wait_for_kernel().await)
    }

    /// Two machines (two environments: data, config and runtime directories) whose kernels,
    /// started by hand, share the PostgreSQL database `url`, with a short lease (1.5 s) so one
    /// takes over soon after the other dies: each environment, its kernel and a client of it.
    pub async fn two_on_one_database(url: &str) -> [(TestEnv, KillOnDrop, superpi_client::KernelClient); 2] {
        let vars = [("SUPERPI_DATABASE_URL", url), ("SUPERPI_LEASE_MS", "1500")];
        let a = TestEnv::new();
        let (kernel_a, client_a) = a.start_kernel(&vars).await;
        let b = TestEnv::new();
        let (kernel_b, client_b) = b.start_kernel(&vars).await;
        [(a, kernel_a, client_a), (b, kernel_b, client_b)]
    }

    /// Starts `superpi ARGS` (an HTTP frontend: `gateway`, `agui`) with these extra variables,
    /// and reads the line it announces its address with (`superpi NAME listening on
    /// http://ADDR`). Returns the process and the base URL; stderr goes to the test's.
    pub fn spawn_http(&self, args: &[&str], vars: &[(&str, &str)]) -> (KillOnDrop, String) {
        let mut cmd = self.command(args);
        cmd.envs(vars.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn superpi {args:?}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line
            .trim()
            .rsplit(' ')
            .next()
            .filter(|url| url.starts_with("http://"))
            .unwrap_or_else(|| panic!("superpi {args:?} did not announce its address: {line:?}"))
            .to_string();
        (KillOnDrop(child), base)
    }

    /// Runs `superpi ARGS` with these extra variables expecting it to exit; returns whether it
    /// succeeded and its stderr.
    pub fn run_to_exit(&self, args: &[&str], vars: &[(&str, &str)]) -> (bool, String) {
        let mut cmd = self.command(args);
        cmd.envs(vars.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        (status.success(), err)
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        self.kill_kernel();
    }
}

/// A child process that is killed and reaped when this is dropped, however the test ends.
pub struct KillOnDrop(pub Child);

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGKILLs a process and waits (bounded) for it to disappear.
pub fn kill_and_wait(pid: i32) {
    // SAFETY: kill(2) with a pid from our own kernel's lock file.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    // A killed multi-threaded process's leader shows as a zombie while its other threads are
    // still exiting, and they share its descriptors (the kernel's lock among them): it is dead
    // once it is gone, or a zombie with no thread but the leader left.
    wait::until_blocking(&format!("killed process {pid} ends"), wait::PATIENCE, || {
        !Path::new(&format!("/proc/{pid}")).exists() || (is_zombie(pid) && threads_left(pid) <= 1)
    });
}

/// How many threads of `pid` are still listed (0 once it is gone).
fn threads_left(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0)
}

/// A developer's home around a repository (a `~/.gitconfig`, keys in `~/.ssh` and `~/.aws`):
/// the workspace is `~/src/app`, returned.
pub fn developer_home(env: &TestEnv) -> PathBuf {
    let home = &env.home;
    let files = [
        (".gitconfig", "[user]\n\tname = Dev\n\temail = dev@example.test\n"),
        (".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n"),
        (".aws/credentials", "[default]\naws_secret_access_key = secret\n"),
        ("src/app/README.md", "# app\n"),
    ];
    for (path, text) in files {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().expect("a file under the home")).expect("a directory under the home");
        std::fs::write(path, text).expect("a file under the home");
    }
    home.join("src/app")
}

/// Whether `pid` is a zombie, or gone.
pub fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// Opens a conversation in `workspace` (in `mode` when given) and watches it from now on.
pub async fn open_and_watch(
    client: &superpi_client::KernelClient,
    workspace: &Path,
    mode: Option<&str>,
    interactive: bool,
) -> (i64, superpi_client::Subscription) {
    let conversation_id = client
        .open(superpi_proto::method::OpenParams {
            workspace: Some(workspace.display().to_string()),
            mode: mode.map(str::to_string),
            ..Default::default()
        })
        .await
        .expect("open")
        .conversation_id;
    let sub = client
        .watch(superpi_proto::method::WatchParams::live(conversation_id).interactive(interactive))
        .await
        .expect("watch");
    (conversation_id, sub)
}

/// A non-interactive watch of a conversation from `from_seq` (from now for `None`).
pub async fn watch(
    client: &superpi_client::KernelClient,
    conversation_id: i64,
    from_seq: Option<u64>,
) -> superpi_client::Subscription {
    let params = superpi_proto::method::WatchParams::live(conversation_id).catch_up(from_seq);
    client.watch(params).await.expect("watch")
}

/// The next event of a subscription that satisfies `pred` (30 s at most).
pub async fn next_event(
    sub: &mut superpi_client::Subscription,
    pred: impl Fn(&superpi_proto::Event) -> bool,
) -> superpi_proto::Event {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let event = tokio::time::timeout(left, sub.next()).await.expect("the event in time").expect("open");
        if pred(&event) {
            return event;
        }
    }
}

/// The events of a subscription up to and including the end of turn `turn_id` (30 s at most).
pub async fn turn_events(sub: &mut superpi_client::Subscription, turn_id: i64) -> Vec<superpi_proto::Event> {
    let mut events = Vec::new();
    loop {
        let Ok(next) = tokio::time::timeout(std::time::Duration::from_secs(30), sub.next()).await else {
            panic!("no event in time after {} events: {:?}", events.len(), events.last());
        };
        let event = next.expect("the subscription is open");
        let done = event.turn_id == Some(turn_id) && event.body.is_turn_end();
        events.push(event);
        if done {
            return events;
        }
    }
}

/// How the first turn of a conversation ended (`turn_completed`, `turn_error` or
/// `turn_cancelled`): watches it from its first stored event, 30 s at most.
pub async fn first_turn_end(client: &superpi_client::KernelClient, conversation_id: i64) -> superpi_proto::EventBody {
    let params = superpi_proto::method::WatchParams::after(conversation_id, 0);
    let mut sub = client.watch(params).await.expect("watch");
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let event = sub.next().await.expect("the subscription is open");
            if event.body.is_turn_end() {
                return event.body;
            }
        }
    });
    ended.await.expect("the first turn did not end within 30 s")
}
