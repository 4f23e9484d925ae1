//! What must keep working inside the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{Env, assert_confinement_available};
use serde_json::json;

fn env() -> Env {
    let env = Env::new();
    assert_confinement_available(&env);
    env
}

#[tokio::test]
async fn the_tool_process_is_confined() {
    let env = env();
    let out = env.bash("grep -E '^(NoNewPrivs|Seccomp|CapEff|CapBnd):' /proc/self/status; cat /proc/self/attr/current 2>/dev/null; echo").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.contains("NoNewPrivs:\t1"), "{out:?}");
    assert!(out.output.contains("Seccomp:\t2"), "{out:?}");
    assert!(out.output.contains("CapEff:\t0000000000000000"), "{out:?}");
    assert!(out.output.contains("CapBnd:\t0000000000000000"), "{out:?}");
}

#[tokio::test]
async fn git_status_in_a_repository() {
    let env = env();
    let out = env
        .bash("git init -q . && echo hi > f && git status --porcelain && git -c user.name=t -c user.email=t@t add f && git status --short")
        .await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.contains("?? f") && out.output.contains("A  f"), "{out:?}");
}

#[tokio::test]
async fn python_runs() {
    let env = env();
    let out = env.bash("python3 -c 'print(6 * 7)'").await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.output.trim(), "42");
}

#[tokio::test]
async fn a_pipeline_runs() {
    let env = env();
    let out = env.bash("printf 'b\\na\\nc\\n' | sort | head -n 2 | tr '\\n' ' '").await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.output.trim(), "a b");
}

#[tokio::test]
async fn a_compiler_runs() {
    let env = env();
    std::fs::write(env.workspace.join("m.c"), "int main(void) { return 3; }\n").unwrap();
    let out = env.bash("cc -o m m.c && ./m; echo status=$?").await;
    assert!(out.output.contains("status=3"), "{out:?}");
}

#[tokio::test]
async fn cargo_version_runs_with_its_toolchain_granted() {
    // The toolchain is where the user points the sandbox at: here, the one running this test.
    let cargo = PathBuf::from(std::env::var("CARGO").expect("cargo test sets CARGO"));
    let toolchain = cargo.parent().and_then(|b| b.parent()).unwrap().to_path_buf();
    let env = Env::with(|c| c.extra_read_paths.push(toolchain));
    assert_confinement_available(&env);
    let out = env.bash(&format!("{} --version", cargo.display())).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.starts_with("cargo "), "{out:?}");
}

#[tokio::test]
async fn writing_in_the_workspace_and_the_temp_dir() {
    let env = env();
    let out = env.bash("echo a > in-ws && echo b > \"$TMPDIR/in-tmp\" && cat in-ws \"$TMPDIR/in-tmp\" && mkdir -p d/e && mv in-ws d/e/").await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.output, "a\nb\n");
    assert!(env.workspace.join("d/e/in-ws").exists());
}

/// A read-only call reads the workspace and writes its temp dir only, with git's fsmonitor
/// off; the calls around it (which may reuse its temp dir and its ruleset) write as before.
#[tokio::test]
async fn a_read_only_call_writes_its_temp_dir_only() {
    let env = env();
    std::fs::write(env.workspace.join("a.txt"), "alpha\n").unwrap();
    let read_only = |command: &str| {
        let mut call = env.call("bash", json!({ "command": command }));
        call.read_only = true;
        env.sandbox.run(call, tokio_util::sync::CancellationToken::new(), None)
    };
    for _ in 0..2 {
        let out = read_only(
            "cat a.txt; echo t > \"$TMPDIR/t\" && echo tmp-ok; touch b.txt || echo refused; git config core.fsmonitor",
        )
        .await;
        assert_eq!(
            out.output.lines().filter(|l| !l.starts_with("touch:")).collect::<Vec<_>>(),
            ["alpha", "tmp-ok", "refused", "false"]
        );
        assert!(!env.workspace.join("b.txt").exists());
        let out = env.bash("touch b.txt && echo wrote && rm b.txt").await;
        assert_eq!(out.output, "wrote\n", "{out:?}");
    }
}

#[tokio::test]
async fn stdin_is_dev_null() {
    let env = env();
    let out = env.bash("cat; read line; echo read=$?; readlink /proc/self/fd/0").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.contains("read=1") && out.output.contains("/dev/null"), "{out:?}");
}

#[tokio::test]
async fn unix_socketpairs_keep_working() {
    let env = env();
    let script = "import socket\na, b = socket.socketpair()\na.sendmsg([b'ping'])\nprint(b.recvmsg(16)[0].decode())";
    let out = env.bash(&format!("python3 -c \"{script}\"")).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.output.trim(), "ping");
}

#[tokio::test]
async fn the_environment_is_an_allow_list() {
    let env = Env::with(|c| c.env_set.push(("EXTRA".into(), "set-by-policy".into())));
    assert_confinement_available(&env);
    // CARGO_PKG_NAME and friends are in this test's environment, like API keys in the kernel's.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    let out = env.bash("env | sort").await;
    assert!(!out.is_error, "{out:?}");
    assert!(!out.output.contains("CARGO_PKG"), "{out:?}");
    assert!(out.output.contains("EXTRA=set-by-policy"), "{out:?}");
    // Set by the sandbox: toolchains stay offline without network and write their caches to
    // the call's temp dir.
    assert!(out.output.contains("CARGO_NET_OFFLINE=true\n") && out.output.contains("GOCACHE=/tmp"), "{out:?}");
    assert!(out.output.contains("TMPDIR=/"), "{out:?}");
}

#[tokio::test]
async fn network_when_granted() {
    let env = env();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    // Not granted: refused, and the result tells the model how to ask.
    let out = env.bash(&command).await;
    assert!(out.is_error, "{out:?}");
    assert!(out.output.contains("run it again with \"network\": true"), "{out:?}");
    // A command that fails for another reason gets no such hint.
    let out = env.bash("exit 3").await;
    assert!(out.is_error && !out.output.contains("\"network\""), "{out:?}");
    let mut call = env.call("bash", json!({"command": command}));
    call.network = true;
    let out = env.sandbox.run(call, Default::default(), None).await;
    assert!(!out.is_error, "{out:?}");
    let (mut stream, _) = listener.accept().unwrap();
    let mut got = String::new();
    std::io::Read::read_to_string(&mut stream, &mut got).unwrap();
    assert_eq!(got, "hi\n");
}

/// The network hint comes from the refused sockets themselves (netwatch.rs), not from what a
/// command prints (issue #40): a command that says nothing about the network but tried it gets
/// it, with the program and the count; one that only prints network words does not; one that
/// retries in silence until its deadline (as `npm install` does offline) gets it too.
#[tokio::test]
async fn the_network_hint_comes_from_the_refused_sockets() {
    let env = env();
    assert_confinement_available(&env);
    let quiet = "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80))\nexcept OSError:\n    pass\nprint('nope')\nraise SystemExit(1)";
    let out = env.bash(&common::python(quiet)).await;
    assert!(out.is_error && out.output.contains("nope"), "{out:?}");
    assert!(
        out.output.contains("`python3` tried to open an internet connection (once), which the sandbox refused"),
        "{out:?}"
    );
    assert!(out.output.contains("run it again with \"network\": true"), "{out:?}");
    assert_eq!(out.structured.as_ref().and_then(|s| s["network_refused"].as_u64()), Some(1), "{out:?}");
    let out = env.bash("echo 'curl: (6) Could not resolve host: example.com; Connection refused' >&2; exit 6").await;
    assert!(out.is_error && !out.output.contains("\"network\": true"), "{out:?}");
    assert_eq!(out.structured.as_ref().and_then(|s| s["network_refused"].as_u64()), Some(0), "{out:?}");
    let retries = "import socket, time\nwhile True:\n    try:\n        socket.getaddrinfo('registry.npmjs.org', 443)\n    except OSError:\n        time.sleep(0.05)";
    let out = env.run("bash", json!({"command": common::python(retries), "timeout": 1})).await;
    assert!(out.output.contains("[timed out"), "{out:?}");
    assert!(out.output.contains("tried to open an internet connection") && out.output.contains("times)"), "{out:?}");
}

/// What a developer's commands hit first (issue #31): `git fetch` of a remote without asking for
/// network, and a write into cargo's registry under the home. Each result names what was
/// refused and what the model can do: ask for network, or write inside the workspace.
#[tokio::test]
async fn a_refused_fetch_or_write_says_what_was_refused_and_how_to_ask() {
    let env = env();
    let out =
        env.bash("git init -q . && git remote add origin https://example.com/demo.git && git fetch -q origin").await;
    assert!(out.is_error, "{out:?}");
    assert!(out.output.contains("ran without network") && out.output.contains("\"network\": true"), "{out:?}");
    std::fs::create_dir_all(env.home.join(".cargo/registry")).unwrap();
    let out = env.bash("echo planted > ~/.cargo/registry/planted").await;
    assert!(out.is_error && !env.home.join(".cargo/registry/planted").exists(), "{out:?}");
    let workspace = env.workspace.display().to_string();
    assert!(out.output.contains(&format!("may write only inside the workspace {workspace}")), "{out:?}");
    assert!(!out.output.contains("\"network\": true"), "a write is not a network refusal: {out:?}");
}

#[tokio::test]
async fn without_landlock_calls_are_refused_with_a_clear_message() {
    let env = Env::with(|c| c.landlock_abi_override = Some(0));
    let out = env.bash("echo should-not-run").await;
    assert!(out.is_error && out.output.contains("landlock"), "{out:?}");
    assert!(!out.output.contains("should-not-run"));
    let out = env.run("ls", json!({})).await;
    assert!(out.is_error && out.output.contains("landlock"), "{out:?}");
}

#[tokio::test]
async fn disabled_explicitly_runs_unconfined() {
    let env = Env::with(|c| {
        c.landlock_abi_override = Some(0);
        c.disabled = true;
    });
    assert!(env.sandbox.status().disabled);
    // A confined call first, so that the thread confined calls come from has emptied its
    // bounding set: an unconfined program must not inherit that.
    assert!(!self::env().bash("true").await.is_error);
    let out = env.bash("grep -E '^(NoNewPrivs|Seccomp|CapBnd):' /proc/self/status").await;
    assert!(!out.is_error && out.output.contains("NoNewPrivs:\t0"), "{out:?}");
    assert!(out.output.contains("Seccomp:\t0"), "{out:?}");
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let own = status.lines().find(|l| l.starts_with("CapBnd:")).unwrap();
    assert!(out.output.contains(own), "the program keeps the kernel's bounding set ({own}): {out:?}");
}

#[tokio::test]
async fn shared_memory_works_and_is_private() {
    let env = env();
    let outside = std::path::Path::new("/dev/shm").join(format!("superpi-test-{}", std::process::id()));
    std::fs::write(&outside, "host shared memory").unwrap();
    let script = "import multiprocessing as m\nlock = m.Lock()\nwith lock:\n    print('locked')";
    let out = env.bash(&format!("python3 -c \"{script}\" && ls /dev/shm")).await;
    let _ = std::fs::remove_file(&outside);
    assert!(!out.is_error && out.output.contains("locked"), "{out:?}");
    assert!(!out.output.contains("superpi-test-"), "the machine's /dev/shm is hidden: {out:?}");
}

#[tokio::test]
async fn a_workspace_holding_the_data_dir_or_the_home_is_refused() {
    let env = env();
    let mut call = env.call("bash", json!({"command": "true"}));
    call.workspace = Some(env.home.clone());
    let out = env.sandbox.run(call, Default::default(), None).await;
    assert!(out.is_error && out.output.contains("superpi's own directory"), "{out:?}");
    let mut call = env.call("ls", json!({}));
    call.workspace = Some(PathBuf::from(std::env::var("HOME").unwrap()));
    let out = env.sandbox.run(call, Default::default(), None).await;
    assert!(out.is_error && out.output.contains("home directory"), "{out:?}");
    let mut call = env.call("ls", json!({}));
    call.workspace = Some(PathBuf::from("/"));
    let out = env.sandbox.run(call, Default::default(), None).await;
    assert!(out.is_error && out.output.contains("whole filesystem"), "{out:?}");
}
