//! The network axis of the settings, separate from the mode: the policy, the shell default,
//! the allow list and its host names, and the host of a tool's `url` argument.

use serde::Deserialize;

/// What tools with network effects may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkPolicy {
    /// Tools with network effects run, and so do shell commands that ask for network (the
    /// default).
    Allow,
    /// Tools with network effects run only for a `url` whose host is allow-listed; shell
    /// commands get no network (a socket cannot be checked against host names).
    Allowlist,
    /// Every tool with a network effect is refused; nothing gets network.
    Deny,
}

/// Whether a shell command that does not ask for network gets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellNetwork {
    /// Only a call that asks (the tool's network argument) gets network, decided like a
    /// network-writing tool (the default).
    #[default]
    Offline,
    /// Every shell command gets network when the policy is `allow` (the old behaviour).
    Allow,
}

/// The settings' `network` section, as read and tightened.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    pub policy: NetworkPolicy,
    /// Whether shell commands that do not ask for network get it anyway.
    pub shell_default: ShellNetwork,
    /// For `allowlist`: host names; an entry matches the host and its subdomains.
    pub allow_hosts: Vec<String>,
}

impl Network {
    /// Whether `host` is allowed by the allow list (an entry matches the host and its
    /// subdomains; comparison ignores case and a trailing dot).
    pub fn host_allowed(&self, host: &str) -> bool {
        host_listed(&self.allow_hosts, host)
    }

    /// With `allowlist`, the hosts a tool that reaches the network itself may reach (it checks
    /// each request with [`host_listed`]); `None` when the policy names no hosts.
    pub fn listed_hosts(&self) -> Option<&[String]> {
        (self.policy == NetworkPolicy::Allowlist).then_some(self.allow_hosts.as_slice())
    }

    /// The stricter of two network settings; two allow lists keep the hosts both allow.
    pub(crate) fn tighten(user: &Network, ws: &Network) -> Network {
        use NetworkPolicy::*;
        match (user.policy, ws.policy) {
            (Deny, _) | (_, Deny) => {
                Network { policy: Deny, shell_default: user.shell_default, allow_hosts: Vec::new() }
            }
            (Allowlist, Allowlist) => {
                let mut hosts: Vec<String> = ws
                    .allow_hosts
                    .iter()
                    .filter(|w| user.allow_hosts.iter().any(|u| host_matches(w, u)))
                    .chain(user.allow_hosts.iter().filter(|u| ws.allow_hosts.iter().any(|w| host_matches(u, w))))
                    .cloned()
                    .collect();
                hosts.sort();
                hosts.dedup();
                Network { policy: Allowlist, shell_default: user.shell_default, allow_hosts: hosts }
            }
            (Allowlist, Allow) => user.clone(),
            (Allow, _) => ws.clone(),
        }
    }
}

/// The host of an `http`/`https` URL, lower-cased, without a trailing dot. `None` for any
/// other scheme or anything this reader is not sure about (a backslash or percent sign in
/// the authority, an empty host): the allow list then refuses the call.
pub fn url_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains(['\\', '%', ' ', '\t', '\n']) {
        return None;
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        let (inner, _) = v6.split_once(']')?;
        format!("[{inner}]")
    } else {
        host_port.split(':').next().unwrap_or("").to_string()
    };
    let host = normalize_host(&host);
    if host.is_empty() { None } else { Some(host) }
}

/// Whether `host` is in an allow list (an entry matches the host and its subdomains;
/// comparison ignores case and a trailing dot).
pub fn host_listed(list: &[String], host: &str) -> bool {
    let host = normalize_host(host);
    list.iter().any(|entry| host_matches(&host, entry))
}

pub(crate) fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// `host` (normalised) is `entry` or a subdomain of it.
pub(crate) fn host_matches(host: &str, entry: &str) -> bool {
    host == entry || host.strip_suffix(entry).is_some_and(|prefix| prefix.ends_with('.'))
}

pub(crate) fn valid_host(host: &str) -> bool {
    let ip6 = host.starts_with('[') && host.ends_with(']');
    !host.is_empty()
        && host.len() <= 253
        && (ip6
            || host.split('.').all(|label| {
                !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(url_host("https://GitHub.com./x?y#z").as_deref(), Some("github.com"));
        assert_eq!(url_host("http://user:pw@api.example.org:8080/p").as_deref(), Some("api.example.org"));
        assert_eq!(url_host("https://[::1]:443/").as_deref(), Some("[::1]"));
        assert_eq!(url_host("https://x.com?q=@evil.com").as_deref(), Some("x.com"));
        for bad in ["ftp://x.com", "x.com", "https://", "https://evil.com\\@x.com", "https://%65vil.com", "file:///etc"]
        {
            assert_eq!(url_host(bad), None, "{bad}");
        }
    }
}
