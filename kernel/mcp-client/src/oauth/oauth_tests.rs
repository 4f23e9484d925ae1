use std::os::unix::fs::PermissionsExt;

use rmcp::transport::auth::{CredentialStore, StoredCredentials};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::store::FileStore;
use super::*;

/// The tokens' file is 0600 in a 0700 directory, and a server whose URL changed gets none.
#[tokio::test]
async fn tokens_are_kept_private_and_bound_to_their_url() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore { path: token_path(dir.path(), "s"), url: "https://a.example/mcp".into() };
    store.save(StoredCredentials::new("client".into(), None, vec![], Some(1))).await.unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&store.path), mode(store.path.parent().unwrap())), (0o600, 0o700));
    assert_eq!(store.load().await.unwrap().map(|c| c.client_id), Some("client".to_string()));
    let moved = FileStore { path: store.path.clone(), url: "https://b.example/mcp".into() };
    assert!(moved.load().await.unwrap().is_none());
    assert!(logout(dir.path(), "s").unwrap());
    assert!(!logout(dir.path(), "s").unwrap());
}

/// The redirect answers `/callback` with its URL and other paths with a 404.
#[tokio::test]
async fn the_redirect_hands_over_the_callback() {
    let redirect = Redirect::bind(None).await.unwrap();
    let uri = redirect.uri();
    let port = uri.trim_start_matches("http://127.0.0.1:").trim_end_matches("/callback").to_string();
    let browser = tokio::spawn(async move {
        let mut answers = Vec::new();
        for path in ["/favicon.ico", "/callback?code=c&state=s&iss=https%3A%2F%2Fas"] {
            let mut stream = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}")).await.unwrap();
            stream.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answers.push(answer.lines().next().unwrap_or_default().to_string());
        }
        answers
    });
    let back = redirect.wait(std::time::Duration::from_secs(30)).await.unwrap();
    assert_eq!(back, format!("{}?code=c&state=s&iss=https%3A%2F%2Fas", uri));
    assert_eq!(browser.await.unwrap(), vec!["HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK"]);
}

#[test]
fn an_error_response_is_said() {
    let url = "http://127.0.0.1:1/callback?error=access_denied&error_description=no+thanks&state=s";
    assert_eq!(refusal(url).as_deref(), Some("the authorization server refused: access_denied: no thanks"));
    assert_eq!(refusal("http://127.0.0.1:1/callback?code=c&state=s"), None);
}

#[test]
fn the_advice_names_the_command() {
    assert_eq!(Refused::Unauthorized.advice("gh"), "it asks for a login (OAuth): run `superpi mcp login gh`");
    let scope = Refused::Scope(Some("repo".into())).advice("gh");
    assert_eq!(scope, "it asks for more access (scope `repo`): run `superpi mcp login gh` again");
}

#[test]
fn a_challenge_says_whether_a_login_or_more_scope_is_wanted() {
    let url = "https://mcp.example/mcp";
    let scope = r#"Bearer error="insufficient_scope", scope="files:write", resource_metadata="https://mcp.example/x""#;
    assert_eq!(Refused::of(scope, url), Refused::Scope(Some("files:write".into())));
    assert_eq!(Refused::of(r#"Bearer error="invalid_token""#, url), Refused::Unauthorized);
    assert_eq!(Refused::of("Bearer", url), Refused::Unauthorized);
}
