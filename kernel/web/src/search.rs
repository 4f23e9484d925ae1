//! `web_search`'s backends: a SearXNG instance's JSON format and the Brave Search API, each one
//! GET answered by JSON, read into one list of hits. The backend is the user's own setting, so
//! its URL is not put to the request-forgery policy (a SearXNG on the user's machine is common).

use std::time::Duration;

use reqwest::Url;
use reqwest::header::ACCEPT;
use serde::Serialize;
use serde_json::Value;
use superpi_policy::{SearchBackend, SearchKind};

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The client of the search backend (the user's own endpoint: the system's proxy settings
/// apply, the forgery policy does not).
pub fn client() -> Result<reqwest::Client, String> {
    // The providers install the same one; whichever comes first is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("superpi-web_search/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("building the HTTP client: {e}"))
}

/// Asks `backend` for `query`; at most `max` hits. `env` reads the kernel's environment (the
/// backend's key).
pub async fn search(
    client: &reqwest::Client,
    backend: &SearchBackend,
    query: &str,
    max: usize,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Hit>, String> {
    let mut url = Url::parse(&backend.url).map_err(|e| format!("web.search.url `{}`: {e}", backend.url))?;
    let mut request = match backend.kind {
        SearchKind::Searxng => {
            if !url.path().ends_with("/search") {
                let path = format!("{}/search", url.path().trim_end_matches('/'));
                url.set_path(&path);
            }
            url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
            client.get(url)
        }
        SearchKind::Brave => {
            url.query_pairs_mut().append_pair("q", query).append_pair("count", &max.to_string());
            client.get(url)
        }
    };
    if let Some(variable) = &backend.api_key_env {
        let key = env(variable).ok_or_else(|| format!("`{variable}` (the search backend's key) is not set"))?;
        request = match backend.kind {
            SearchKind::Brave => request.header("X-Subscription-Token", key),
            SearchKind::Searxng => request.bearer_auth(key),
        };
    }
    let response = request
        .header(ACCEPT, "application/json")
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| format!("the search backend: {e}"))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| format!("the search backend's answer: {e}"))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        return Err(format!("the search backend answered HTTP {status}: {}", text.trim()));
    }
    let answer: Value =
        serde_json::from_slice(&body).map_err(|e| format!("the search backend's answer is not JSON: {e}"))?;
    Ok(hits(backend.kind, &answer, max))
}

/// The hits of a backend's answer, in its order.
pub fn hits(kind: SearchKind, answer: &Value, max: usize) -> Vec<Hit> {
    let (list, snippet) = match kind {
        SearchKind::Searxng => (&answer["results"], "content"),
        SearchKind::Brave => (&answer["web"]["results"], "description"),
    };
    let text = |item: &Value, key: &str| item.get(key).and_then(Value::as_str).unwrap_or("").trim().to_string();
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| Hit { title: text(item, "title"), url: text(item, "url"), snippet: text(item, snippet) })
                .filter(|hit| !hit.url.is_empty())
                .take(max)
                .collect()
        })
        .unwrap_or_default()
}

/// The hits as the model reads them: numbered, title, URL, snippet.
pub fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for `{query}`.");
    }
    let mut out = String::new();
    for (i, hit) in hits.iter().enumerate() {
        out.push_str(&format!("{}. {}\n   {}\n", i + 1, hit.title, hit.url));
        if !hit.snippet.is_empty() {
            out.push_str(&format!("   {}\n", hit.snippet));
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_answers_read_into_hits() {
        let searx = json!({"query": "rust", "results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "content": "A language", "engine": "x"},
            {"title": "No URL"},
            {"title": "Book", "url": "https://doc.rust-lang.org/book/", "content": " The book "}
        ]});
        let hits = hits(SearchKind::Searxng, &searx, 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(
            hits[1],
            Hit { title: "Book".into(), url: "https://doc.rust-lang.org/book/".into(), snippet: "The book".into() }
        );
        let brave = json!({"type": "search", "web": {"results": [
            {"title": "A", "url": "https://a.example/", "description": "first"},
            {"title": "B", "url": "https://b.example/", "description": "second"}
        ]}});
        assert_eq!(super::hits(SearchKind::Brave, &brave, 1).len(), 1);
        assert!(super::hits(SearchKind::Brave, &json!({"error": "x"}), 5).is_empty());
        let shown = render("rust", &hits);
        assert!(shown.starts_with("1. Rust\n   https://www.rust-lang.org/\n   A language\n2. Book"), "{shown}");
        assert_eq!(render("zz", &[]), "No results for `zz`.");
    }
}
