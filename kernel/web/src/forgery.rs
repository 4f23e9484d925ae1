//! The request-forgery policy: what `web_fetch` may connect to. A URL is checked before each
//! request (the first and every redirect): http or https, no credentials, the default port,
//! no local host name, no address literal off the public internet, and a host the network
//! allow list names when there is one. The host's addresses are checked by the resolver the
//! client connects through ([`CheckedResolver`]), so the address checked is the address
//! connected to: a name that resolves differently between a check and the connect (DNS
//! rebinding) cannot slip through. `web.private_hosts` lifts the address and port rules for
//! the hosts it names (an intranet, a test server), never the allow list.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use superpi_policy::WebSettings;

use crate::address::not_public;

/// A request the policy refuses, with why. Also the error the resolver returns, so a refusal
/// at connect time can be told from a failed connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Forbidden(pub String);

/// Host names that are local whatever they resolve to.
fn local_name(host: &str) -> bool {
    host == "localhost"
        || [".localhost", ".local", ".internal", ".home.arpa", ".localdomain"].iter().any(|s| host.ends_with(s))
}

/// Checks one URL before it is requested. `allowed_hosts`: the network allow list, when the
/// policy is `allowlist`.
pub fn check_url(url: &Url, web: &WebSettings, allowed_hosts: Option<&[String]>) -> Result<(), Forbidden> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Forbidden(format!("`{}:` URLs are not fetched, only http and https", url.scheme())));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Forbidden("a URL with credentials in it is not fetched".into()));
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(Forbidden(format!("`{url}` names no host")));
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if let Some(list) = allowed_hosts
        && !superpi_policy::host_listed(list, &host)
    {
        return Err(Forbidden(format!("the host `{host}` is not in network.allow_hosts")));
    }
    if web.private_host(&host) {
        return Ok(());
    }
    match url.host() {
        Some(url::Host::Ipv4(ip)) => check_address(&host, IpAddr::V4(ip))?,
        Some(url::Host::Ipv6(ip)) => check_address(&host, IpAddr::V6(ip))?,
        _ if local_name(&host) => {
            return Err(Forbidden(format!("`{host}` is a local host name (web.private_hosts can allow it)")));
        }
        _ => {}
    }
    // The URL parser drops a port that is the scheme's default.
    match url.port() {
        Some(port) => Err(Forbidden(format!(
            "port {port} is refused: only the default ports are fetched (web.private_hosts lifts this for a host)"
        ))),
        None => Ok(()),
    }
}

fn check_address(host: &str, ip: IpAddr) -> Result<(), Forbidden> {
    match not_public(ip) {
        Some(why) => Err(Forbidden(format!(
            "`{host}` is {why} ({ip}), which web_fetch does not reach (web.private_hosts can allow a host)"
        ))),
        None => Ok(()),
    }
}

/// The resolver `web_fetch`'s client connects through: it resolves a name with the system's
/// resolver and refuses it when any of its addresses is off the public internet, unless the
/// name is one of `web.private_hosts`. The client connects only to the addresses it returns.
#[derive(Debug, Clone)]
pub struct CheckedResolver {
    pub web: Arc<WebSettings>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let web = self.web.clone();
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(format!("`{host}` has no address").into());
            }
            if !web.private_host(&host)
                && let Some((addr, why)) = addrs.iter().find_map(|a| not_public(a.ip()).map(|why| (a.ip(), why)))
            {
                let message = format!(
                    "`{host}` resolves to {why} ({addr}), which web_fetch does not reach \
                     (web.private_hosts can allow a host)"
                );
                return Err(Box::new(Forbidden(message)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The policy's refusal inside a client error, when that is what ended the request.
pub fn forbidden_in(err: &(dyn std::error::Error + 'static)) -> Option<Forbidden> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(forbidden) = err.downcast_ref::<Forbidden>() {
            return Some(forbidden.clone());
        }
        next = err.source();
    }
    None
}

#[cfg(test)]
#[path = "forgery_tests.rs"]
mod tests;
