//! The settings' `web` section: the hosts `web_fetch` may reach although they are not on the
//! public internet, its limits, and the search backend of `web_search`. The user's file only:
//! a workspace file cannot hold it (a cloned repository must not open an intranet to a model).

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::error::ConfigError;
use crate::net::{normalize_host, url_host, valid_host};

/// Most bytes of one response `web_fetch` reads by default, and at most.
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
const MAX_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// How long one web call may take by default, and at most.
pub const DEFAULT_WEB_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_TIMEOUT_SECS: u64 = 300;

/// What the web tools may reach and how much they read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// Hosts (names or addresses, each exactly as a URL names it) that `web_fetch` may reach
    /// although they are, or resolve to, loopback, private, link-local, unique-local or CGNAT
    /// addresses, on any port: an intranet, a test server. Empty by default.
    pub private_hosts: Vec<String>,
    /// Most bytes of one response body (2 MiB by default, at most 8 MiB).
    pub max_bytes: u64,
    /// How long one call may take, redirects included (30 s by default, at most 300 s).
    pub timeout: Duration,
    /// The search service of `web_search`; without one the tool says how to configure it.
    pub search: Option<SearchBackend>,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            private_hosts: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_WEB_TIMEOUT,
            search: None,
        }
    }
}

impl WebSettings {
    /// Whether `host` (as a URL names it) is one of `private_hosts`.
    pub fn private_host(&self, host: &str) -> bool {
        let host = bare_host(host);
        self.private_hosts.contains(&host)
    }
}

/// A search service answering JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchBackend {
    pub kind: SearchKind,
    /// Its endpoint (for Brave, the API's unless given).
    pub url: String,
    /// The kernel's environment variable holding its key (the key stays out of the file).
    pub api_key_env: Option<String>,
}

/// The search APIs `web_search` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    /// A SearXNG instance with its JSON format enabled: `GET URL?q=…&format=json`.
    Searxng,
    /// The Brave Search API: `GET URL?q=…&count=N` with the key in `X-Subscription-Token`.
    Brave,
}

/// The Brave Search API's web endpoint.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWeb {
    private_hosts: Option<Vec<String>>,
    max_bytes: Option<u64>,
    timeout_secs: Option<u64>,
    search: Option<RawSearch>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    backend: SearchKind,
    url: Option<String>,
    api_key_env: Option<String>,
}

/// The `web` section of the user's file, checked; `path` names the file in errors.
pub(crate) fn web_settings(raw: RawWeb, path: &Path) -> Result<WebSettings, ConfigError> {
    let mut web = WebSettings::default();
    for (i, entry) in raw.private_hosts.unwrap_or_default().iter().enumerate() {
        let host = bare_host(entry);
        if !(valid_host(&host) || host.parse::<std::net::Ipv6Addr>().is_ok()) {
            return Err(ConfigError::invalid(
                path,
                format!("web.private_hosts[{i}]"),
                format!("`{entry}` is not a host name or address (write `intranet.example.com` or `127.0.0.1`)"),
            ));
        }
        web.private_hosts.push(host);
    }
    if let Some(bytes) = raw.max_bytes {
        web.max_bytes = within(bytes, MAX_MAX_BYTES, path, "web.max_bytes", "")?;
    }
    if let Some(secs) = raw.timeout_secs {
        web.timeout = Duration::from_secs(within(secs, MAX_TIMEOUT_SECS, path, "web.timeout_secs", " seconds")?);
    }
    if let Some(search) = raw.search {
        let url = match (search.url.map(|u| u.trim().to_string()), search.backend) {
            (Some(url), _) => url,
            (None, SearchKind::Brave) => BRAVE_URL.to_string(),
            (None, SearchKind::Searxng) => {
                return Err(ConfigError::invalid(path, "web.search.url", "a SearXNG backend needs its `url`"));
            }
        };
        if url_host(&url).is_none() {
            return Err(ConfigError::invalid(path, "web.search.url", format!("`{url}` is not an http(s) URL")));
        }
        if search.backend == SearchKind::Brave && search.api_key_env.is_none() {
            return Err(ConfigError::invalid(
                path,
                "web.search.api_key_env",
                "the Brave backend needs the name of the variable holding its key (`BRAVE_API_KEY`)",
            ));
        }
        web.search = Some(SearchBackend { kind: search.backend, url, api_key_env: search.api_key_env });
    }
    Ok(web)
}

/// `value` when it is between 1 and `max`, else an error naming `key`.
fn within(value: u64, max: u64, path: &Path, key: &str, unit: &str) -> Result<u64, ConfigError> {
    if value == 0 || value > max {
        return Err(ConfigError::invalid(path, key, format!("must be between 1 and {max}{unit}, not {value}")));
    }
    Ok(value)
}

/// A host as compared here: lower-cased, without a trailing dot or an IPv6 literal's brackets.
fn bare_host(host: &str) -> String {
    let host = normalize_host(host);
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).map(str::to_string).unwrap_or(host)
}
