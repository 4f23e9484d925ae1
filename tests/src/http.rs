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
