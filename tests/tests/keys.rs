//! End to end: keys that take effect. A provider variable set after the kernel started is used
//! (an autostarted, idle kernel is replaced by one with the frontend's environment) or the
//! error says why not (a kernel started by hand, or running a turn), and never tells the user
//! to set a variable they have set.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::process::{Output, Stdio};

use superpi_client::KernelClient;
use superpi_proto::EventBody;
use superpi_providers::testing::answers::Answer;
use superpi_providers::testing::fakes::OpenAiFake;
use superpi_tests::{TestEnv, next_event, open_and_watch};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_exported_after_the_kernel_autostarted_takes_effect() {
    let fake = OpenAiFake::start(vec![Answer::text("from the fake")]).await.unwrap();
    let env = TestEnv::new();
    let out = env.command(&["run", "before any key"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first_kernel = env.kernel_pid().unwrap();

    let out = env.command(&["run", "--model", "gpt-4o-mini", "hi"]).envs(fake.env()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the fake");
    assert_ne!(env.kernel_pid().unwrap(), first_kernel, "a kernel with the new environment runs");
    assert_eq!(fake.rejections(), vec![]);
    assert_eq!(fake.accepted().len(), 1);

    // The replacement kept the history: both conversations are there.
    let out = env.command(&["session", "list", "--json"]).envs(fake.env()).output().unwrap();
    let list: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_frontends_with_a_new_key_at_once_share_one_new_kernel() {
    let fake = OpenAiFake::start(vec![Answer::text("one"), Answer::text("two")]).await.unwrap();
    let env = TestEnv::new();
    let out = env.command(&["run", "before any key"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first_kernel = env.kernel_pid().unwrap();

    let run = || {
        let mut cmd = env.command(&["run", "--model", "gpt-4o-mini", "hi"]);
        cmd.envs(fake.env());
        tokio::process::Command::from(cmd).output()
    };
    let (a, b) = tokio::join!(run(), run());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    let mut answers = [stdout(&a), stdout(&b)];
    answers.sort();
    assert_eq!(answers, ["one", "two"]);
    assert_eq!(fake.rejections(), vec![]);
    let kernel = env.kernel_pid().unwrap();
    assert_ne!(kernel, first_kernel);
    assert!(std::path::Path::new(&format!("/proc/{kernel}")).exists(), "one kernel runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_started_by_hand_says_which_variable_it_lacks_and_what_to_do() {
    let env = TestEnv::new();
    let mut kernel = env.command(&["kernel"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    drop(env.wait_for_kernel().await);
    let pid = env.kernel_pid().unwrap();

    let out = env
        .command(&["run", "--model", "claude-sonnet-4-5", "hi"])
        .env("ANTHROPIC_API_KEY", "sk-ant-exported-later")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let message = stderr(&out);
    assert!(
        message.contains(&format!(
            "the running kernel (pid {pid}) was started without ANTHROPIC_API_KEY; your shell has it"
        )),
        "{message}"
    );
    assert!(message.contains("started by hand"), "{message}");
    assert!(message.contains("`superpi kernel stop`, then run again"), "{message}");
    assert!(!message.contains("set ANTHROPIC_API_KEY"), "never ask for a variable the shell has: {message}");
    assert_eq!(env.kernel_pid(), Some(pid), "a kernel started by hand is not replaced");

    // Without the new key the same kernel serves; `kernel stop` works with or without it.
    let out = env.command(&["run", "still served"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "still served");
    let out = env.command(&["kernel", "stop"]).env("ANTHROPIC_API_KEY", "sk-ant-exported-later").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(kernel.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autostarted_kernel_running_a_turn_is_not_replaced_and_says_so() {
    let env = TestEnv::new();
    let client = KernelClient::connect(&env.connect_options("test")).await.unwrap();
    let (conv, mut sub) = open_and_watch(&client, &env.workspace, Some("auto"), false).await;
    client.submit_text(conv, "@tool bash {\"command\": \"sleep 30\"}").await.unwrap();
    next_event(&mut sub, |e| matches!(e.body, EventBody::ToolStarted { .. })).await;
    let pid = env.kernel_pid().unwrap();

    let out = env.command(&["run", "--model", "gpt-4o-mini", "hi"]).env("OPENAI_API_KEY", "sk-new").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let message = stderr(&out);
    assert!(message.contains("was started without OPENAI_API_KEY; your shell has it"), "{message}");
    assert!(message.contains("it is running a turn, so superpi does not replace it now"), "{message}");
    assert!(message.contains("`superpi kernel stop`"), "{message}");
    assert_eq!(env.kernel_pid(), Some(pid));
    assert_eq!(client.cancel(conv).await.unwrap()["cancelled"], true, "the turn still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_models_key_variable_exported_later_takes_effect() {
    let fake = OpenAiFake::start(vec![Answer::text("from the house model")]).await.unwrap();
    let env = TestEnv::new();
    std::fs::write(
        env.locations.config_dir.join("providers.toml"),
        format!(
            "[[providers.models]]\nname = \"house-model\"\nprovider = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"HOUSE_KEY\"\n",
            fake.base
        ),
    )
    .unwrap();
    let out = env.command(&["run", "--model", "mock", "before the key"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first_kernel = env.kernel_pid().unwrap();

    let out = env.command(&["run", "--model", "house-model", "hi"]).env("HOUSE_KEY", "sk-house").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the house model");
    assert_ne!(env.kernel_pid().unwrap(), first_kernel);
    assert_eq!(fake.requests()[0].header("authorization"), Some("Bearer sk-house"));
}
