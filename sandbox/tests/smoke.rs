mod common;

use common::Env;
use serde_json::json;

#[tokio::test]
async fn smoke() {
    let env = Env::new();
    println!("{:?}", env.sandbox.status());
    let out = env.bash("echo hello; id; pwd; echo $TMPDIR; touch x; ls").await;
    println!("{out:#?}");
    let out = env.run("ls", json!({})).await;
    println!("{out:#?}");
    let out = env.run("write", json!({"path": "a/b.txt", "content": "one\ntwo\n"})).await;
    println!("{out:#?}");
    let out = env.run("read", json!({"path": "a/b.txt"})).await;
    println!("{out:#?}");
}
