//! Escape attempts: each must be refused. They run as root, as CI does; each first asserts that
//! landlock and seccomp are present, so a machine without them fails rather than skips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::process::{Child, Command, Stdio};

use common::{Env, assert_confinement_available};
use serde_json::json;

fn env() -> Env {
    common::root_env()
}

/// A process outside the sandbox standing in for the kernel or a sibling: it holds a secret in
/// its environment and lives until killed.
struct StandIn(Child);

impl StandIn {
    fn start() -> StandIn {
        let child = Command::new("sleep")
            .arg("300")
            .env("SUPERPI_FAKE_API_KEY", "sk-fake-secret-4242")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        StandIn(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process that is not a descendant of this one (its parent exited), like a frontend.
fn orphan() -> u32 {
    let out = Command::new("sh").args(["-c", "sleep 300 >/dev/null 2>&1 & echo $!"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The process is gone or a zombie waiting for its reaper.
fn dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')).unwrap_or(false),
    }
}

#[tokio::test]
async fn write_outside_by_absolute_path_is_refused() {
    let env = env();
    let target = env.home.join("pwned");
    let out = env.bash(&format!("echo pwned > {}", target.display())).await;
    assert!(out.is_error, "{out:?}");
    assert!(out.output.contains("sandbox"), "the denial is explained: {}", out.output);
    assert!(!target.exists());
    let out = env.run("write", json!({"path": target, "content": "pwned"})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    assert!(!target.exists());
}

#[tokio::test]
async fn write_outside_by_dotdot_is_refused() {
    let env = env();
    let target = env.workspace.parent().unwrap().join("outside.txt");
    let out = env.bash("echo pwned > ../outside.txt").await;
    assert!(out.is_error, "{out:?}");
    assert!(!target.exists());
    let out = env.run("write", json!({"path": "../outside.txt", "content": "pwned"})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    let out = env.run("edit", json!({"path": "sub/../../outside.txt", "old_string": "a", "new_string": "b"})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    assert!(!target.exists());
}

#[tokio::test]
async fn write_through_a_planted_symlink_is_refused() {
    let env = env();
    std::os::unix::fs::symlink(&env.home, env.workspace.join("link")).unwrap();
    let out = env.bash("echo pwned > link/pwned; echo pwned > link/.ssh/id_rsa").await;
    assert!(out.is_error, "{out:?}");
    assert!(!env.home.join("pwned").exists());
    assert!(std::fs::read_to_string(env.home.join(".ssh/id_rsa")).unwrap().contains("FAKE PRIVATE KEY"));
    let out = env.run("write", json!({"path": "link/pwned", "content": "x"})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    assert!(!env.home.join("pwned").exists());
}

#[tokio::test]
async fn chmod_and_chown_outside_are_refused() {
    let env = env();
    let key = env.home.join(".ssh/id_rsa");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&key).unwrap();
    let out = env.bash(&format!("chmod 777 {k}; chown 1234:1234 {k}", k = key.display())).await;
    assert!(out.is_error, "{out:?}");
    let after = std::fs::metadata(&key).unwrap();
    assert_eq!(after.mode() & 0o7777, 0o600);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
}

#[tokio::test]
async fn touch_outside_is_refused() {
    let env = env();
    assert!(env.sandbox.status().readonly_outside, "calls see the outside read-only, as root and as nobody");
    let key = env.home.join(".ssh/id_rsa");
    let before = std::fs::metadata(&key).unwrap().mtime();
    let out = env.bash(&format!("touch -d '2001-01-01 00:00' {}", key.display())).await;
    assert!(out.is_error, "{out:?}");
    assert_eq!(std::fs::metadata(&key).unwrap().mtime(), before);
    let out = env
        .bash(&format!(
            "setfattr -n user.pwned -v 1 {} || python3 -c \"import os; os.setxattr('{}', 'user.pwned', b'1')\"",
            key.display(),
            key.display()
        ))
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(xattr_absent(&key));
}

fn xattr_absent(path: &std::path::Path) -> bool {
    let out = Command::new("python3")
        .args(["-c", &format!("import os; print('user.pwned' in os.listxattr('{}'))", path.display())])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim() != "True"
}

#[tokio::test]
async fn reading_the_fake_ssh_key_is_refused() {
    let env = env();
    let key = env.home.join(".ssh/id_rsa");
    let out = env.bash(&format!("cat {}", key.display())).await;
    assert!(out.is_error, "{out:?}");
    assert!(!out.output.contains("secret"));
    let out = env.run("read", json!({"path": key})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    // The home directory cannot even be listed.
    let out = env.bash(&format!("ls {}", env.home.display())).await;
    assert!(out.is_error && !out.output.contains(".ssh"), "{out:?}");
}

#[tokio::test]
async fn reading_the_kernel_store_is_refused() {
    let env = env();
    let store = env.data_dir.join("superpi.sqlite");
    let out = env.bash(&format!("cat {}", store.display())).await;
    assert!(out.is_error, "{out:?}");
    assert!(!out.output.contains("fake store"));
    let out = env.run("grep", json!({"pattern": "fake", "path": env.data_dir})).await;
    assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
}

#[tokio::test]
async fn reading_the_kernel_environment_is_refused() {
    let env = env();
    let kernel = StandIn::start();
    let out = env.bash(&format!("cat /proc/{}/environ", kernel.pid())).await;
    assert!(out.is_error, "{out:?}");
    assert!(!out.output.contains("sk-fake-secret"), "{out:?}");
    // The test process itself (the kernel's place in the real setup).
    let out = env.bash(&format!("cat /proc/{}/environ | tr '\\0' '\\n' | grep -c CARGO", std::process::id())).await;
    assert!(!out.output.contains("CARGO="), "{out:?}");
    assert!(out.output.starts_with('0') || out.output.contains("Permission denied"), "{out:?}");
}

#[tokio::test]
async fn writing_the_kernel_memory_is_refused() {
    let env = env();
    let mut kernel = StandIn::start();
    let out = env
        .bash(&format!("printf 'xxxxxxxx' | dd of=/proc/{}/mem bs=1 seek=4194304 conv=notrunc 2>&1", kernel.pid()))
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(kernel.alive());
}

#[tokio::test]
async fn signalling_the_kernel_is_refused() {
    let env = env();
    let mut kernel = StandIn::start();
    let out = env.bash(&format!("kill -KILL {}", kernel.pid())).await;
    assert!(out.is_error, "{out:?}");
    assert!(kernel.alive(), "the stand-in kernel was killed from inside the sandbox");
}

#[tokio::test]
async fn ptrace_of_a_sibling_is_refused() {
    let env = env();
    let mut sibling = StandIn::start();
    let script = format!(
        "import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.ptrace(16, {}, 0, 0)\nprint('ptrace', r, ctypes.get_errno())\nsys.exit(0 if r == 0 else 1)",
        sibling.pid()
    );
    let out = env.run("bash", json!({"command": format!("python3 -c \"{script}\"")})).await;
    assert!(out.is_error && out.output.contains("ptrace -1 1"), "{out:?}");
    // And a sibling inside the same call.
    let out = env
        .bash("sleep 30 & python3 -c \"import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); r=l.ptrace(16, $!, 0, 0); print('ptrace', r, ctypes.get_errno()); sys.exit(0 if r == 0 else 1)\"")
        .await;
    assert!(out.is_error && out.output.contains("ptrace -1 1"), "{out:?}");
    assert!(sibling.alive());
}

#[tokio::test]
async fn tcp_connect_to_ipv6_localhost_is_refused() {
    let env = env();
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        panic!("this machine has no ::1; the test cannot run");
    };
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = env.bash(&format!("python3 -c \"import socket; socket.create_connection(('::1', {port}))\"")).await;
    assert!(out.is_error && out.output.contains("PermissionError"), "{out:?}");
    assert_eq!(listener.accept().err().map(|e| e.kind()), Some(ErrorKind::WouldBlock));
}

#[tokio::test]
async fn connecting_to_the_kernel_socket_is_refused() {
    let env = env();
    for path in [env.data_dir.join("kernel.sock"), env.workspace.join("planted.sock")] {
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let out = env
            .bash(&format!(
                "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
                path.display()
            ))
            .await;
        assert!(out.is_error && out.output.contains("PermissionError"), "{out:?}");
        assert_eq!(listener.accept().err().map(|e| e.kind()), Some(ErrorKind::WouldBlock));
    }
}

#[tokio::test]
async fn mount_is_refused() {
    let env = env();
    std::fs::create_dir(env.workspace.join("m")).unwrap();
    let out = env.bash("mount -t tmpfs none m && echo MOUNTED").await;
    assert!(out.is_error && !out.output.contains("MOUNTED"), "{out:?}");
}

#[tokio::test]
async fn unsharing_a_network_namespace_is_refused() {
    let env = env();
    let out = env.bash("unshare -n true && echo UNSHARED").await;
    assert!(out.is_error && !out.output.contains("UNSHARED"), "{out:?}");
    let out = env.bash("python3 -c \"import os; os.unshare(os.CLONE_NEWNET); print('UNSHARED')\"").await;
    assert!(out.is_error && !out.output.contains("UNSHARED"), "{out:?}");
}

#[tokio::test]
async fn io_uring_is_refused() {
    let env = env();
    let script = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nparams = ctypes.create_string_buffer(120)\nr = libc.syscall(425, 8, params)\nprint('io_uring', r, ctypes.get_errno())";
    let out = env.bash(&format!("python3 -c \"{script}\"")).await;
    assert!(out.output.contains("io_uring -1 1"), "{out:?}");
}

#[tokio::test]
async fn a_setuid_binary_does_not_regain_rights() {
    let env = env();
    let suid = env.workspace.join("suid-grep");
    std::fs::copy("/usr/bin/grep", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let out = env.bash("./suid-grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.output.contains("CapEff:\t0000000000000000"), "{out:?}");
    assert!(out.output.contains("CapPrm:\t0000000000000000"), "{out:?}");
    // Dropping the bounding set takes CAP_SETPCAP, which nobody has (nor any capability to bound).
    assert!(common::as_nobody() || out.output.contains("CapBnd:\t0000000000000000"), "{out:?}");
    assert!(out.output.contains("NoNewPrivs:\t1"), "{out:?}");
}

#[tokio::test]
async fn a_setsid_grandchild_does_not_outlive_the_call() {
    let env = env();
    let out = env
        .bash("setsid sh -c 'echo $$ > pid; exec sleep 300' > /dev/null 2>&1 < /dev/null & while [ ! -s pid ]; do :; done; cat pid")
        .await;
    assert!(!out.is_error, "{out:?}");
    let pid = out.output.trim().to_string();
    assert!(pid.parse::<u32>().is_ok(), "{out:?}");
    assert!(dead(&pid), "the grandchild {pid} survived the call");
}

#[tokio::test]
async fn a_setsid_grandchild_does_not_outlive_the_call_without_a_cgroup_either() {
    let env = Env::with(|c| c.pids_cgroup = false);
    assert_confinement_available(&env);
    assert!(!env.sandbox.status().pids_cgroup);
    let out = env
        .bash("setsid sh -c 'echo $$ > pid; exec sleep 300' > /dev/null 2>&1 < /dev/null & while [ ! -s pid ]; do :; done; cat pid")
        .await;
    let pid = out.output.trim().to_string();
    assert!(pid.parse::<u32>().is_ok(), "{out:?}");
    assert!(
        dead(&pid),
        "the grandchild {pid} survived the call: {:?} {:?}",
        std::fs::read_to_string(format!("/proc/{pid}/stat")),
        std::fs::read(format!("/proc/{pid}/environ")).map(|e| String::from_utf8_lossy(&e).into_owned())
    );
}

#[tokio::test]
async fn tool_processes_are_recognised_even_after_setsid() {
    let env = env();
    let stranger = orphan();
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let call = env.call("bash", json!({"command": "setsid sh -c 'echo $$; exec sleep 300' & sleep 300"}));
    let sandbox = env.sandbox.clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { sandbox.run(call, cancel, Some(tx)).await }
    });
    let first = rx.recv().await.unwrap();
    let pid: u32 = first.trim().parse().unwrap();
    assert!(superpi_sandbox::is_tool_process(pid));
    assert!(!superpi_sandbox::is_tool_process(stranger));
    // What a frontend asks of its peers: a tool of any kernel, not this process nor a stranger.
    assert!(superpi_sandbox::is_confined_tool(pid));
    assert!(!superpi_sandbox::is_confined_tool(stranger));
    assert!(!superpi_sandbox::is_confined_tool(std::process::id()));
    let tools = superpi_sandbox::confined_tools();
    assert!(tools.contains(&pid) && !tools.contains(&stranger) && !tools.contains(&std::process::id()), "{tools:?}");
    unsafe { libc::kill(stranger as i32, libc::SIGKILL) };
    assert!(!superpi_sandbox::is_tool_process(std::process::id()));
    cancel.cancel();
    task.await.unwrap();
    assert!(dead(&pid.to_string()));
}

#[tokio::test]
async fn a_grandchild_holding_the_output_pipe_is_killed_after_a_bounded_drain() {
    let env = env();
    let started = std::time::Instant::now();
    let out = env.bash("setsid sh -c 'echo $$; exec sleep 300' & sleep 0.2; echo done").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the drain was not bounded");
    let pid = out.output.lines().next().unwrap_or("").trim().to_string();
    assert!(out.output.contains("done"), "{out:?}");
    assert!(dead(&pid), "the grandchild {pid} survived the call");
}

#[tokio::test]
async fn an_inherited_descriptor_does_not_leak_in() {
    let env = env();
    let outside = env.home.join("inherited.txt");
    std::fs::write(&outside, "untouched").unwrap();
    let path = std::ffi::CString::new(outside.display().to_string()).unwrap();
    // Deliberately without O_CLOEXEC, as a careless library would.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR) };
    assert!(fd > 2);
    let out = env.bash(&format!("echo pwned >&{fd}; cat <&{fd}; ls /proc/self/fd")).await;
    unsafe { libc::close(fd) };
    assert!(out.output.contains(&format!("{fd}: Bad file descriptor")), "{out:?}");
    assert!(!out.output.contains("untouched"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "untouched");
}

#[tokio::test]
async fn tiocsti_is_refused() {
    let env = env();
    let script = "import fcntl, termios, os, sys\nfd = os.open('/dev/ptmx', os.O_RDWR)\ntry:\n    fcntl.ioctl(fd, termios.TIOCSTI, b'x')\n    print('INJECTED')\nexcept OSError as e:\n    print('refused', e.errno)";
    let out = env.bash(&format!("python3 -c \"{script}\"")).await;
    assert!(out.output.contains("refused 1") && !out.output.contains("INJECTED"), "{out:?}");
}

#[tokio::test]
async fn root_only_secrets_in_etc_are_masked() {
    let env = env();
    assert!(std::fs::read_to_string("/etc/shadow").is_ok(), "these tests run as root, as CI does");
    let out = env.bash("wc -c < /etc/shadow; grep -c root /etc/shadow").await;
    assert!(out.output.starts_with("0\n"), "{out:?}");
    assert!(!out.output.contains("root:"), "{out:?}");
}

#[tokio::test]
async fn the_process_count_of_a_call_is_bounded() {
    let env = Env::with(|c| c.max_pids = 32);
    assert_confinement_available(&env);
    assert!(env.sandbox.status().pids_cgroup, "a pids cgroup is expected on this machine");
    let script = "import os, time\nn = 0\nfor i in range(100):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\nprint('forked', n)";
    let started = std::time::Instant::now();
    let out = env.bash(&format!("python3 -c \"{script}\"")).await;
    let n: usize = out.output.trim().strip_prefix("forked ").and_then(|n| n.parse().ok()).unwrap_or(999);
    assert!(n < 32, "{out:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[tokio::test]
async fn a_set_id_program_cannot_be_left_in_the_workspace() {
    let env = env();
    std::fs::write(env.workspace.join("prog"), "#!/bin/sh\n").unwrap();
    let script = "import os\nfor f, how in [('prog', lambda: os.chmod('prog', 0o4755)), ('new', lambda: os.close(os.open('new', os.O_CREAT | os.O_WRONLY, 0o2755)))]:\n    try:\n        how()\n        print(f, 'ALLOWED')\n    except OSError as e:\n        print(f, 'refused', e.errno)";
    let out =
        env.bash(&format!("python3 -c \"{script}\"; chmod u+s prog; chmod 755 prog && echo plain-chmod-ok")).await;
    assert!(!out.output.contains("ALLOWED"), "{out:?}");
    assert!(out.output.contains("prog refused 1") && out.output.contains("new refused 1"), "{out:?}");
    assert!(out.output.contains("plain-chmod-ok"), "{out:?}");
    let mode = std::fs::metadata(env.workspace.join("prog")).unwrap().mode();
    assert_eq!(mode & 0o6000, 0, "mode {mode:o}");
    assert!(!env.workspace.join("new").exists());
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_cannot_be_made() {
    let env = env();
    let key = env.home.join(".ssh/id_rsa");
    let out = env.bash(&format!("ln {} stolen && echo LINKED", key.display())).await;
    assert!(out.is_error && !out.output.contains("LINKED"), "{out:?}");
    assert!(!env.workspace.join("stolen").exists());
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_not_written_by_the_file_tools() {
    let env = env();
    let outside = env.workspace.parent().unwrap().join("linked-outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::fs::hard_link(&outside, env.workspace.join("linked.txt")).unwrap();
    let wrote = env.run("write", serde_json::json!({"path": "linked.txt", "content": "pwned\n"})).await;
    let edited = env
        .run("edit", serde_json::json!({"path": "linked.txt", "old_string": "outside", "new_string": "pwned"}))
        .await;
    assert!(wrote.is_error && edited.is_error, "{wrote:?} {edited:?}");
    assert!(wrote.output.contains("links"), "{wrote:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert_eq!(std::fs::read_to_string(env.workspace.join("linked.txt")).unwrap(), "outside\n");
}

#[cfg(target_arch = "x86_64")]
#[tokio::test]
async fn clone_with_namespace_flags_is_refused_and_clone3_falls_back() {
    let env = env();
    // clone3 (435) answers ENOSYS (38) so libc falls back to clone (56), whose flags the filter
    // reads: CLONE_NEWNET | SIGCHLD answers EPERM (1). A plain fork still works.
    let script = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nargs = ctypes.create_string_buffer(88)\nr = libc.syscall(435, args, 88)\nprint('clone3', r, ctypes.get_errno())\nr = libc.syscall(56, 0x40000000 | 17, 0, 0, 0, 0)\nprint('clone', r, ctypes.get_errno())\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nprint('fork ok')";
    let out = env.bash(&format!("python3 -c \"{script}\"")).await;
    assert!(out.output.contains("clone3 -1 38"), "{out:?}");
    assert!(out.output.contains("clone -1 1"), "{out:?}");
    assert!(out.output.contains("fork ok"), "{out:?}");
}

#[test]
fn the_battery_as_an_ordinary_user() {
    // Root-only layers (sandbox/ARCHITECTURE.md "What remains open"): /etc's root-only files
    // are unreadable by permission, not masked; the pids cgroup bounds the process count. The
    // attribute tests run as nobody too, whose own files outside they try to change: the
    // read-only mounts come from a user namespace then.
    let root_only = ["root_only_secrets_in_etc_are_masked", "the_process_count_of_a_call_is_bounded"];
    common::rerun_as_nobody(module_path!(), &root_only);
}
