use super::failure_cause;

fn cause(text: &str) -> Option<String> {
    failure_cause(text.lines())
}

#[test]
fn node_names_the_call_and_the_path() {
    let text = "node:fs:573\n  return binding.open(\n                 ^\n\n\
        Error: EACCES: permission denied, open '/home/dev/.npmrc'\n    at Object.openSync (node:fs:573:18)\n    \
        at Module._load (node:internal/modules/cjs/loader:1096:12) {\n  errno: -13,\n  syscall: 'open',\n  \
        code: 'EACCES',\n  path: '/home/dev/.npmrc'\n}\n\nNode.js v20.11.0";
    assert_eq!(cause(text).as_deref(), Some("`open` of /home/dev/.npmrc was refused (EACCES)"));
}

#[test]
fn python_and_shells_give_their_refusal_line() {
    let python = "Traceback (most recent call last):\n  File \"/srv/x.py\", line 3, in <module>\n    \
        open('/home/dev/.aws/credentials')\nPermissionError: [Errno 13] Permission denied: '/home/dev/.aws/credentials'";
    assert_eq!(
        cause(python).as_deref(),
        Some("PermissionError: [Errno 13] Permission denied: '/home/dev/.aws/credentials'")
    );
    let shell = "/usr/bin/env: 'node': No such file or directory";
    assert_eq!(cause(shell).as_deref(), Some(shell));
}

#[test]
fn without_a_refusal_the_last_meaningful_line() {
    let text = "starting\nError: the port is taken\n    at listen (server.js:3:1)\n\nNode.js v20.11.0\n";
    assert_eq!(cause(text).as_deref(), Some("Error: the port is taken"));
    assert_eq!(cause("\n   \n"), None);
    let long = "x".repeat(400);
    assert_eq!(cause(&long).map(|c| c.chars().count()), Some(301));
}
