//! The host of a tool's `url` argument, for the network allow list.

use crate::settings::normalize_host;

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
