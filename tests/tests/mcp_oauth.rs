//! End to end, an OAuth-protected HTTP MCP server (the fake of src/oauth_fake.rs: its
//! authorization server enforces PKCE, the exact redirect URI, `resource`, and refuses
//! expired tokens): a turn before any login tells the person to run `superpi mcp login`;
//! `superpi mcp login` completes with the test following the URL as a browser would
//! (discovery from the 401, dynamic registration, the code with `iss`), the tokens land 0600
//! in the data directory, and a turn calls the server's tool with them; an expired token is
//! refreshed (on the server's refusal, and before use when it is known to be old); a wrong
//! `iss` fails the login; a Client ID Metadata Document's URL is the client id where the
//! authorization server supports them; a 403 `insufficient_scope` leads to a login asking for
//! that scope; `superpi mcp logout` forgets the tokens; as an ordinary user on a developer's
//! machine the tokens are theirs and a confined tool cannot read them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)] // test helpers fail loudly

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use serde_json::{Value, json};
use superpi_tests::TestEnv;
use superpi_tests::oauth_fake::{OAuthFake, OAuthOptions};
use superpi_tests::real_machine::{Machine, NOBODY, write};

/// The fake with `options`, and a superpi whose settings name it `prot` (with `oauth`).
fn protected(options: OAuthOptions, oauth: Option<Value>) -> (OAuthFake, TestEnv) {
    let fake = OAuthFake::start(options);
    let env = TestEnv::new();
    let mut server = json!({"url": fake.mcp_url()});
    if let Some(oauth) = oauth {
        server["oauth"] = oauth;
    }
    let settings = json!({"mcp_servers": {"prot": server}});
    std::fs::write(env.locations.config_dir.join("settings.json"), settings.to_string()).unwrap();
    (fake, env)
}

/// `superpi run` calling the protected tool: (succeeded, stdout and stderr).
fn call_tool(env: &TestEnv) -> (bool, String) {
    call(env, "whoami")
}

fn call(env: &TestEnv, tool: &str) -> (bool, String) {
    let prompt = format!("@tool mcp__prot__{tool} {{}}");
    let out = env.command(&["run", "--mode", "accept-edits", &prompt]).output().unwrap();
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// `superpi mcp login prot`, with this test as the browser: the authorization URL is
/// followed to its redirect, which is followed to superpi's loopback port. Its exit status
/// and stderr.
fn login(env: &TestEnv) -> (bool, String) {
    login_with(env.command(&["mcp", "login", "prot", "--wait-secs", "60"]))
}

/// [`login`] with this command of `superpi mcp login prot`.
fn login_with(mut command: std::process::Command) -> (bool, String) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().to_string();
    if !url.is_empty() {
        assert!(url.contains("code_challenge_method=S256") && url.contains("resource="), "{url}");
        let _ = rustls::crypto::ring::default_provider().install_default();
        // A browser that does not follow redirects: the test looks at each.
        let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let found = browser.get(&url).send().await.unwrap();
            assert_eq!(found.status(), 302, "{:?}", found.text().await);
            let back = found.headers()["location"].to_str().unwrap().to_string();
            assert!(back.starts_with("http://127.0.0.1:"), "{back}");
            let done = browser.get(&back).send().await.unwrap();
            assert_eq!(done.status(), 200);
        });
    }
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
}

#[test]
fn a_login_through_the_browser_lets_a_turn_call_the_protected_tool() {
    let (fake, env) = protected(OAuthOptions::default(), None);

    let (_, said) = call_tool(&env);
    assert!(said.contains("run `superpi mcp login prot`"), "{said}");
    assert!(!said.contains("unknown tool"), "{said}");
    let result = "`mcp__prot__whoami` cannot be called now: the MCP server `prot` is not available: it asks for \
                  a login (OAuth): run `superpi mcp login prot`";
    assert!(said.contains(result), "the model reads why and what to do: {said}");

    // Even asked for debug logs, the login logs neither the code nor a token.
    let mut debug = env.command(&["mcp", "login", "prot", "--wait-secs", "60"]);
    debug.env("RUST_LOG", "debug,rmcp=trace,rmcp::transport::auth=trace");
    let (ok, stderr) = login_with(debug);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("logged in to `prot`"), "{stderr}");
    for secret in ["code-", "at-", "rt-"] {
        let leaked = stderr
            .match_indices(secret)
            .any(|(i, _)| stderr[i + secret.len()..].starts_with(|c: char| c.is_ascii_digit()));
        assert!(!leaked, "a {secret}N secret in the log: {stderr}");
    }
    let seen = fake.seen();
    for step in ["register", "authorize client-1", "token authorization_code"] {
        assert!(seen.contains(&step.to_string()), "{step} in {seen:?}");
    }
    assert!(!seen.iter().any(|s| s.starts_with("refused")), "{seen:?}");
    let tokens = superpi_mcp_client_token_path(&env);
    assert_eq!(std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777, 0o600);
    let settings = std::fs::read_to_string(env.locations.config_dir.join("settings.json")).unwrap();
    assert!(!settings.contains("at-"), "no token in the settings: {settings}");

    let listed = env.command(&["mcp", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["logged_in"], json!(true), "{listed}");
    let (ok, said) = call_tool(&env);
    assert!(ok && said.contains("token of client-1"), "{said}");
    assert!(!said.contains("at-") && !said.contains("rt-"), "no token in the output: {said}");
    assert!(fake.seen().contains(&"mcp tools/call".to_string()), "{:?}", fake.seen());

    // The server refuses the token now: one refresh, and the call goes through.
    fake.expire_access_tokens();
    let (ok, said) = call_tool(&env);
    assert!(ok && said.contains("token of client-1"), "{said}");
    let seen = fake.seen();
    assert!(seen.contains(&"mcp 401 invalid_token".to_string()), "{seen:?}");
    assert_eq!(seen.iter().filter(|s| *s == "token refresh_token").count(), 1, "{seen:?}");

    // A token known to be old is refreshed before it is sent.
    let mut saved: Value = serde_json::from_slice(&std::fs::read(&tokens).unwrap()).unwrap();
    saved["credentials"]["token_received_at"] = json!(1);
    std::fs::write(&tokens, saved.to_string()).unwrap();
    let refused_before = fake.seen().iter().filter(|s| s.starts_with("mcp 401")).count();
    let (ok, said) = call_tool(&env);
    assert!(ok && said.contains("token of client-1"), "{said}");
    let seen = fake.seen();
    assert_eq!(seen.iter().filter(|s| *s == "token refresh_token").count(), 2, "{seen:?}");
    assert_eq!(seen.iter().filter(|s| s.starts_with("mcp 401")).count(), refused_before, "{seen:?}");

    let out = env.command(&["mcp", "logout", "prot"]).output().unwrap();
    assert!(out.status.success());
    assert!(!tokens.exists());
    let (_, said) = call_tool(&env);
    assert!(said.contains("run `superpi mcp login prot`"), "{said}");
}

/// A call refused with 403 `insufficient_scope` tells the person to log in again, and that
/// login asks for the scope the server named.
#[test]
fn a_call_that_needs_more_scope_leads_to_a_login_asking_for_it() {
    let (fake, env) = protected(OAuthOptions::default(), None);
    let (ok, stderr) = login(&env);
    assert!(ok, "{stderr}");
    assert!(fake.seen().contains(&"scope tools".to_string()), "{:?}", fake.seen());
    let (_, said) = call(&env, "admin");
    assert!(said.contains("scope `tools admin`") && said.contains("superpi mcp login prot` again"), "{said}");
    let (ok, stderr) = login(&env);
    assert!(ok, "{stderr}");
    assert!(fake.seen().contains(&"scope tools admin".to_string()), "{:?}", fake.seen());
    let (ok, said) = call(&env, "admin");
    assert!(ok && said.contains("for tools admin"), "{said}");
}

fn superpi_mcp_client_token_path(env: &TestEnv) -> std::path::PathBuf {
    env.locations.data_dir.join("mcp-oauth").join("prot.json")
}

/// With `$BROWSER` set, `superpi mcp login` starts it with the URL, directly: words of the
/// variable that a shell would run (`;`) are only arguments.
#[test]
fn a_configured_browser_is_started_with_the_url_and_no_shell() {
    let (_fake, env) = protected(OAuthOptions::default(), None);
    let (opened, ran) = (env.workspace.join("opened"), env.workspace.join("ran"));
    let browser = env.workspace.join("browser");
    std::fs::write(&browser, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", opened.display())).unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = env.command(&["mcp", "login", "prot", "--wait-secs", "60"]);
    command.env("BROWSER", format!("{} --new-tab %s;touch {}:firefox", browser.display(), ran.display()));
    let (ok, stderr) = login_with(command);
    assert!(ok, "{stderr}");
    let args = superpi_tests::wait::until_blocking("the browser started", superpi_tests::wait::PATIENCE, || {
        std::fs::read_to_string(&opened).ok().filter(|t| t.lines().count() == 3)
    });
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[0], "--new-tab");
    assert!(args[1].contains("code_challenge_method=S256") && args[1].ends_with(";touch"), "{args:?}");
    assert_eq!(args[2], ran.display().to_string());
    assert!(!ran.exists(), "a shell ran the rest of $BROWSER");
}

/// An authorization response whose `iss` is not the authorization server's (a mix-up) is
/// refused: no token is asked for or stored.
#[test]
fn a_code_from_another_issuer_is_refused() {
    let wrong = OAuthOptions { wrong_iss: Some("https://evil.example".into()), ..Default::default() };
    let (fake, env) = protected(wrong, None);
    let (ok, stderr) = login(&env);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("evil.example"), "{stderr}");
    assert!(!fake.seen().iter().any(|s| s.starts_with("token")), "{:?}", fake.seen());
    assert!(!superpi_mcp_client_token_path(&env).exists());
}

/// Where the authorization server supports Client ID Metadata Documents, the settings'
/// document URL is the client id and nothing is registered.
#[test]
fn a_client_id_metadata_document_replaces_registration() {
    let document = "https://superpi.example/oauth/client.json";
    let cimd = OAuthOptions { cimd: true, ..Default::default() };
    let (fake, env) = protected(cimd, Some(json!({"client_metadata_url": document})));
    let (ok, stderr) = login(&env);
    assert!(ok, "{stderr}");
    let seen = fake.seen();
    assert!(seen.contains(&format!("authorize {document}")) && !seen.contains(&"register".to_string()), "{seen:?}");
    let (ok, said) = call_tool(&env);
    assert!(ok && said.contains(&format!("token of {document}")), "{said}");
}

/// On a developer's machine, as an ordinary user: the login's tokens are the user's own
/// (0600 under `~/.local/share/superpi`), a turn uses them, and a tool (a stdio server's
/// `read_file`, confined like any) cannot read them.
#[test]
fn as_an_ordinary_user_the_tokens_are_theirs_and_no_tool_reads_them() {
    let m = Machine::new(Some(NOBODY));
    let fake = OAuthFake::start(OAuthOptions::default());
    let fixture = m.home.join(".local/share/fix-server/bin/mcp_fixture");
    std::fs::create_dir_all(fixture.parent().unwrap()).unwrap();
    std::fs::copy(superpi_tests::mcp_fixture_bin(), &fixture).unwrap();
    let settings = json!({"mcp_servers": {"prot": {"url": fake.mcp_url()}, "fix": {"command": fixture}}});
    write(&m.home.join(".config/superpi/settings.json"), &settings.to_string());

    let (ok, stderr) = login_with(m.superpi(&["mcp", "login", "prot", "--wait-secs", "60"]));
    assert!(ok, "{stderr}");
    let tokens = m.home.join(".local/share/superpi/mcp-oauth/prot.json");
    let meta = std::fs::metadata(&tokens).unwrap();
    assert_eq!((meta.permissions().mode() & 0o777, std::os::unix::fs::MetadataExt::uid(&meta)), (0o600, 65534));

    let run = |prompt: &str| {
        let out = m.superpi(&["run", "--mode", "auto", prompt]).output().unwrap();
        format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let said = run("@tool mcp__prot__whoami {}");
    assert!(said.contains("token of client-1"), "{said}");
    let read = |path: &std::path::Path| run(&format!(r#"@tool mcp__fix__read_file {{"path":"{}"}}"#, path.display()));
    let said = read(&m.workspace.join("Cargo.toml"));
    assert!(said.contains("[package]"), "the tool reads what a tool may: {said}");
    let said = read(&tokens);
    assert!(!said.contains("access_token") && !said.contains("at-"), "a tool read the tokens: {said}");
}
