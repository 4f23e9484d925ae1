//! Malformed input for the frontends' bad-input tests: every stdio and socket frontend
//! answers each of these with its protocol's error and keeps serving.

/// What a protocol must answer to one bad input.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// No answer at all (a blank line, a notification).
    Nothing,
    /// One error answer whose code is one of these, with a null id unless the id was valid.
    Error(&'static [i64]),
}

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// One malformed line (without its newline).
#[derive(Debug, Clone)]
pub struct BadLine {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub answer: Answer,
}

fn line(name: &'static str, bytes: impl Into<Vec<u8>>, answer: Answer) -> BadLine {
    BadLine { name, bytes: bytes.into(), answer }
}

/// A JSON value nested `depth` deep: `[[[...]]]`.
pub fn depth_bomb(depth: usize) -> Vec<u8> {
    let mut out = vec![b'['; depth];
    out.extend(std::iter::repeat_n(b']', depth));
    out
}

/// The malformed lines every newline-delimited JSON-RPC frontend must survive: `max_line` is
/// its line limit, `method` one of its methods that takes an object of params, and
/// `bad_params` params of the wrong types for it.
pub fn json_rpc_lines(max_line: usize, method: &str, bad_params: serde_json::Value) -> Vec<BadLine> {
    use Answer::*;
    let request = |id: serde_json::Value, method: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method}).to_string().into_bytes()
    };
    let mut bad_utf8 = request(serde_json::json!(1), "x");
    bad_utf8.splice(bad_utf8.len() - 3..bad_utf8.len() - 3, [0xff, 0xfe, 0xc3]);
    let mut huge = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"".to_vec();
    huge.extend(std::iter::repeat_n(b'a', max_line));
    huge.extend_from_slice(b"\"}");
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(request(serde_json::json!(9), "no/such/method"));
    vec![
        line("invalid UTF-8", bad_utf8, Error(&[PARSE_ERROR])),
        line("a lone invalid byte", b"\xff".to_vec(), Error(&[PARSE_ERROR])),
        line("a truncated object", b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":".to_vec(), Error(&[PARSE_ERROR])),
        line("a non-object", b"42".to_vec(), Error(&[INVALID_REQUEST])),
        line("a string", b"\"initialize\"".to_vec(), Error(&[INVALID_REQUEST])),
        line(
            "the wrong jsonrpc version",
            serde_json::json!({"jsonrpc": "1.0", "id": 4, "method": method}).to_string(),
            Error(&[INVALID_REQUEST]),
        ),
        line("a line over the limit", huge, Error(&[PARSE_ERROR, INVALID_REQUEST])),
        line(
            "params of the wrong types",
            serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": bad_params}).to_string(),
            Error(&[INVALID_PARAMS]),
        ),
        line("an unknown method", request(serde_json::json!(6), "no/such/method"), Error(&[METHOD_NOT_FOUND])),
        line("an id of a bad type", request(serde_json::json!({"a": 1}), method), Error(&[INVALID_REQUEST])),
        line("an empty line", b"".to_vec(), Nothing),
        line("a blank line", b" \t \r".to_vec(), Nothing),
        line("a byte order mark", bom, Error(&[PARSE_ERROR, METHOD_NOT_FOUND])),
        line("a depth bomb", depth_bomb(100_000), Error(&[PARSE_ERROR])),
        line("NUL bytes", b"\0\0\0\0".to_vec(), Error(&[PARSE_ERROR])),
        line("JSON then NUL", [request(serde_json::json!(7), method), b"\0".to_vec()].concat(), Error(&[PARSE_ERROR])),
        line("two objects on one line", [b"{}".as_slice(), b"{}"].concat(), Error(&[PARSE_ERROR])),
        line("an empty object", b"{}".to_vec(), Error(&[INVALID_REQUEST])),
    ]
}

/// Checks one answer line against what `bad` must get.
pub fn check_answer(bad: &BadLine, answers: &[serde_json::Value]) {
    match &bad.answer {
        Answer::Nothing => assert!(answers.is_empty(), "{}: expected no answer, got {answers:?}", bad.name),
        Answer::Error(codes) => {
            assert_eq!(answers.len(), 1, "{}: expected one answer, got {answers:?}", bad.name);
            let answer = &answers[0];
            assert_eq!(answer["jsonrpc"], "2.0", "{}: {answer}", bad.name);
            let code = answer["error"]["code"].as_i64();
            assert!(code.is_some_and(|c| codes.contains(&c)), "{}: expected one of {codes:?}, got {answer}", bad.name);
            assert!(answer.get("result").is_none(), "{}: {answer}", bad.name);
        }
    }
}

/// How long one answer may take.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Sends the `setup` messages (waiting for the answer of each that has an id), then each bad
/// line on `input`, each followed by a probe request built by `probe` (given its id), and
/// checks that the bad line got what it must and the probe then succeeded on the same
/// connection (`probe_ok` checks its answer). `output` is read on a thread of its own, so a
/// server that hangs fails the test after a bounded wait.
pub fn run_line_battery(
    input: &mut impl std::io::Write,
    output: impl std::io::Read + Send + 'static,
    setup: &[serde_json::Value],
    battery: &[BadLine],
    probe: impl Fn(&str) -> serde_json::Value,
    probe_ok: impl Fn(&serde_json::Value),
) {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    for message in setup {
        input.write_all(format!("{message}\n").as_bytes()).unwrap();
        input.flush().unwrap();
        let Some(id) = message.get("id") else { continue };
        loop {
            let line = rx.recv_timeout(ANSWER_WAIT).unwrap_or_else(|e| panic!("no answer to {message} ({e})"));
            let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if value.get("id") == Some(id) {
                assert!(value.get("result").is_some(), "{message} failed: {value}");
                break;
            }
        }
    }
    for (i, bad) in battery.iter().enumerate() {
        let id = format!("probe-{i}");
        let mut bytes = bad.bytes.clone();
        bytes.push(b'\n');
        bytes.extend(probe(&id).to_string().into_bytes());
        bytes.push(b'\n');
        input.write_all(&bytes).unwrap_or_else(|e| panic!("{}: the server stopped reading: {e}", bad.name));
        input.flush().unwrap();
        // A server may run requests concurrently: a bad request's answer may follow the probe's.
        let wanted = usize::from(bad.answer != Answer::Nothing);
        let (mut answers, mut probed) = (Vec::new(), false);
        while !probed || answers.len() < wanted {
            let line = rx
                .recv_timeout(ANSWER_WAIT)
                .unwrap_or_else(|e| panic!("{}: no answer to the probe after it ({e})", bad.name));
            let value: serde_json::Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{}: not a JSON line ({e}): {line}", bad.name));
            if value["id"] == serde_json::json!(id) {
                probe_ok(&value);
                probed = true;
                continue;
            }
            // Notifications the server sends on its own are not answers.
            if value.get("method").is_none() {
                answers.push(value);
            }
        }
        check_answer(bad, &answers);
    }
}

/// One malformed HTTP request, raw bytes as sent on the socket.
#[derive(Debug, Clone)]
pub struct BadRequest {
    pub name: &'static str,
    pub raw: Vec<u8>,
}

fn post(path: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    [head.as_bytes(), body].concat()
}

/// The malformed requests every HTTP frontend must refuse with a 4xx, each on a connection
/// of its own: `path` takes a JSON body, `bad_fields` is a body of the wrong types for it,
/// `body_limit` is the most it reads.
pub fn http_requests(path: &str, body_limit: usize, bad_fields: &serde_json::Value) -> Vec<BadRequest> {
    let json = "application/json";
    let request = |name, body: &[u8]| BadRequest { name, raw: post(path, json, body) };
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(bad_fields.to_string().into_bytes());
    vec![
        request("invalid UTF-8", b"{\"model\":\"\xff\xfe\"}"),
        request("a truncated object", b"{\"model\":"),
        request("a non-object", b"42"),
        request("fields of the wrong types", bad_fields.to_string().as_bytes()),
        request("an empty body", b""),
        request("a byte order mark", &bom),
        request("a depth bomb", &depth_bomb(100_000)),
        request("NUL bytes", b"\0\0\0\0"),
        request("a body over the limit", &vec![b' '; body_limit + 1]),
        BadRequest { name: "a form instead of JSON", raw: post(path, "application/x-www-form-urlencoded", b"a=1") },
        BadRequest {
            name: "a bad chunk size",
            raw: format!(
                "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {json}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n"
            )
            .into_bytes(),
        },
        BadRequest { name: "a garbage request line", raw: b"\xff\xfe GARBAGE \x01\r\n\r\n".to_vec() },
        BadRequest {
            name: "a header that is not a header",
            raw: format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\x01\x02 no colon\r\n\r\n").into_bytes(),
        },
        BadRequest { name: "an unknown path", raw: post("/no/such/path", json, b"{}") },
    ]
}

/// Sends `raw` on a new connection to `addr` (`host:port`) and reads the answer to its end
/// (the requests say `Connection: close`): the status code and the body.
pub fn http_exchange(addr: &str, raw: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.set_read_timeout(Some(ANSWER_WAIT)).unwrap();
    // The server may answer (413) and close before taking a body over its limit.
    let _ = stream.write_all(raw);
    let mut answer = Vec::new();
    if let Err(err) = stream.read_to_end(&mut answer) {
        assert!(!answer.is_empty(), "no answer from {addr}: {err}");
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| {
            let head = String::from_utf8_lossy(&raw[..raw.len().min(80)]);
            panic!("not an HTTP answer to {head:?}: {text:?}")
        });
    let body = text.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (status, body)
}

/// Runs `superpi ARGS` (a stdio frontend) in `env` and [`run_line_battery`] on its pipes, then
/// closes its stdin: it must exit with success within a bounded wait.
pub fn run_stdio_battery(
    env: &crate::TestEnv,
    args: &[&str],
    setup: &[serde_json::Value],
    battery: &[BadLine],
    probe: impl Fn(&str) -> serde_json::Value,
    probe_ok: impl Fn(&serde_json::Value),
) {
    use std::process::Stdio;
    let mut child = env
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn superpi {args:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    run_line_battery(&mut stdin, stdout, setup, battery, probe, probe_ok);
    drop(stdin);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(ANSWER_WAIT).expect("the frontend exits at end of input").expect("wait");
    assert!(status.success(), "superpi {args:?}: {status:?}");
}
