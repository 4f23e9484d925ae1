//! The Origin rule for listeners without a token.

/// Whether a request with this `Origin` may be served. With tokens configured the token is the
/// guard; without, only requests with no Origin (programs), loopback origins and the configured
/// extra ones pass: a web page elsewhere must not drive the local agent through the user's
/// browser (a cross-site POST, or DNS rebinding to 127.0.0.1).
pub fn origin_allowed(origin: Option<&str>, tokens_enabled: bool, extra: &[String]) -> bool {
    let Some(origin) = origin else { return true };
    if tokens_enabled || extra.iter().any(|o| o == origin) {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else { return false };
    if scheme != "http" && scheme != "https" {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        rest.split(':').next().unwrap_or("")
    };
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let none: &[String] = &[];
        assert!(origin_allowed(None, false, none));
        for ok in ["http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443", "http://127.1.2.3:9"] {
            assert!(origin_allowed(Some(ok), false, none), "{ok}");
        }
        for bad in ["https://evil.example", "http://localhost.evil.example", "null", "file://x", "http://10.0.0.1"] {
            assert!(!origin_allowed(Some(bad), false, none), "{bad}");
        }
        assert!(origin_allowed(Some("https://evil.example"), true, none));
        assert!(origin_allowed(Some("https://app.example"), false, &["https://app.example".to_string()]));
    }
}
