//! One HTTP GET under the request-forgery policy: redirects followed here (at most
//! [`MAX_REDIRECTS`]), each hop's URL checked before it is requested and each host's addresses
//! checked by the resolver the client connects through; the body read up to `web.max_bytes`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{Client, Url};
use superpi_policy::WebSettings;

use crate::forgery::{CheckedResolver, Forbidden, check_url, forbidden_in};

/// Most redirects one fetch follows.
pub const MAX_REDIRECTS: usize = 5;

/// What a fetch brought back.
#[derive(Debug)]
pub struct Page {
    /// The URL the body came from, after the redirects.
    pub url: Url,
    pub status: u16,
    pub content_type: Option<String>,
    /// The body, at most `web.max_bytes` of it.
    pub body: Vec<u8>,
    /// The body was longer than `web.max_bytes`: the rest was not read.
    pub truncated: bool,
    /// Each URL a redirect led to, in order.
    pub redirects: Vec<String>,
    /// The address the last response came from.
    pub address: Option<SocketAddr>,
}

/// Why a fetch brought nothing back.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The request-forgery policy or the allow list refused a URL.
    #[error("refused: {0}")]
    Refused(Forbidden),
    #[error("{0}")]
    Failed(String),
}

/// The clients of `web_fetch`: one per set of private hosts (what its resolver needs), kept
/// so connections are reused.
#[derive(Default)]
pub struct Clients {
    kept: Mutex<Option<(Vec<String>, Client)>>,
}

impl Clients {
    /// The client for these settings, made when they changed.
    pub fn get(&self, web: &WebSettings) -> Result<Client, String> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((private_hosts, client)) = kept.as_ref()
            && *private_hosts == web.private_hosts
        {
            return Ok(client.clone());
        }
        // The providers install the same one; whichever comes first is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::builder()
            .dns_resolver(CheckedResolver { web: Arc::new(web.clone()) })
            // A proxy would resolve the host itself, past the resolver's check.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("superpi-web_fetch/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        *kept = Some((web.private_hosts.clone(), client.clone()));
        Ok(client)
    }
}

/// GETs `url`, following redirects, each hop checked. The caller bounds the time.
pub async fn fetch(
    client: &Client,
    web: &WebSettings,
    allowed_hosts: Option<&[String]>,
    url: &str,
) -> Result<Page, FetchError> {
    let mut url = Url::parse(url.trim()).map_err(|e| FetchError::Failed(format!("`{url}` is not a URL: {e}")))?;
    let mut redirects = Vec::new();
    loop {
        check_url(&url, web, allowed_hosts).map_err(FetchError::Refused)?;
        let response = client
            .get(url.clone())
            .header(ACCEPT, "text/html, text/plain;q=0.9, application/json;q=0.8, */*;q=0.5")
            .send()
            .await
            .map_err(|e| failure(&url, &e))?;
        let status = response.status();
        let location = response.headers().get(LOCATION).and_then(|l| l.to_str().ok());
        if let (true, Some(location)) = (is_followed(status.as_u16()), location) {
            if redirects.len() == MAX_REDIRECTS {
                return Err(FetchError::Failed(format!("more than {MAX_REDIRECTS} redirects")));
            }
            let next = url
                .join(location)
                .map_err(|e| FetchError::Failed(format!("a redirect to `{location}`, which is not a URL: {e}")))?;
            redirects.push(next.to_string());
            url = next;
            continue;
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        let address = response.remote_addr();
        let (body, truncated) = read_body(response, web.max_bytes).await.map_err(|e| failure(&url, &e))?;
        return Ok(Page { url, status: status.as_u16(), content_type, body, truncated, redirects, address });
    }
}

/// The redirects this follows (always with a GET).
fn is_followed(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Reads the body up to `max` bytes; whether there was more. Nothing asks for compression,
/// so the bytes counted are the body's own.
async fn read_body(mut response: reqwest::Response, max: u64) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn failure(url: &Url, err: &reqwest::Error) -> FetchError {
    if let Some(forbidden) = forbidden_in(err) {
        return FetchError::Refused(forbidden);
    }
    let mut message = format!("fetching {url}: {err}");
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    FetchError::Failed(message)
}
