//! Steps the HTTP frontends' tests share: a browser's CORS preflight and what an admitted one
//! must answer.

/// A browser's CORS preflight of a `POST` to `url` from a page on `origin`, asking to send
/// `headers` (a comma-separated list) when given.
pub async fn preflight(client: &reqwest::Client, url: &str, origin: &str, headers: Option<&str>) -> reqwest::Response {
    let mut request = client
        .request(reqwest::Method::OPTIONS, url)
        .header("origin", origin)
        .header("access-control-request-method", "POST");
    if let Some(headers) = headers {
        request = request.header("access-control-request-headers", headers);
    }
    request.send().await.expect("the preflight is answered")
}

/// Asserts that `preflight` admits `origin` and lets its page send the header `header`.
pub fn assert_preflight_admits(preflight: &reqwest::Response, origin: &str, header: &str) {
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], origin);
    let allowed = preflight.headers()["access-control-allow-headers"].to_str().expect("visible ASCII");
    assert!(allowed.contains(header), "{header} is not among the allowed headers: {allowed}");
}

/// One HTTP/1.1 request a test's local server read: its request line, its headers (lower-cased
/// `name: value`) and its body (by `content-length`).
pub struct ReadRequest {
    pub line: String,
    pub headers: Vec<String>,
    pub body: Vec<u8>,
}

impl ReadRequest {
    /// The request's path.
    pub fn path(&self) -> &str {
        self.line.split_whitespace().nth(1).unwrap_or("/")
    }
}

/// Reads one request from `stream` (a local test server's connection); `None` when the
/// peer closed or sent something unreadable.
pub fn read_request(stream: &std::net::TcpStream) -> Option<ReadRequest> {
    use std::io::{BufRead, Read};
    let mut reader = std::io::BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header.trim().is_empty() {
            break;
        }
        headers.push(header.trim().to_ascii_lowercase());
    }
    let length =
        headers.iter().find_map(|h| h.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(ReadRequest { line: line.trim().to_string(), headers, body })
}
