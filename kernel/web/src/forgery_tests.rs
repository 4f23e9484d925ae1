use super::*;

fn web(private: &[&str]) -> WebSettings {
    WebSettings { private_hosts: private.iter().map(|h| h.to_string()).collect(), ..WebSettings::default() }
}

fn check(url: &str, private: &[&str], allowed: Option<&[String]>) -> Result<(), String> {
    check_url(&Url::parse(url).unwrap(), &web(private), allowed).map_err(|f| f.0)
}

#[test]
fn public_http_urls_pass() {
    for url in
        ["https://example.com/a?b", "http://example.com:80/", "https://93.184.216.34/", "https://[2606:4700::1111]/"]
    {
        assert_eq!(check(url, &[], None), Ok(()), "{url}");
    }
}

#[test]
fn schemes_credentials_ports_and_local_names_are_refused() {
    for (url, says) in [
        ("ftp://example.com/", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://user@example.com/", "credentials"),
        ("https://example.com:8443/", "port 8443"),
        ("http://example.com:22/", "port 22"),
        ("http://localhost/", "local host name"),
        ("http://LOCALHOST./", "local host name"),
        ("http://printer.local/", "local host name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "local host name"),
        ("http://127.0.0.1/", "a loopback address"),
        ("http://2130706433/", "a loopback address"),
        ("http://0x7f.1/", "a loopback address"),
        ("http://[::1]/", "a loopback address"),
        ("http://[::ffff:169.254.169.254]/", "the cloud metadata address"),
        ("http://169.254.169.254/latest/meta-data/", "the cloud metadata address"),
        ("http://10.0.0.1/", "a private address"),
        ("http://100.100.100.200/", "carrier-grade NAT"),
        ("http://[fd00::1]/", "a unique-local address"),
        ("http://[fe80::1]/", "a link-local address"),
    ] {
        let refusal = check(url, &[], None).unwrap_err();
        assert!(refusal.contains(says), "{url}: {refusal}");
    }
}

#[test]
fn private_hosts_lift_the_address_and_port_rules_for_themselves_only() {
    assert_eq!(check("http://127.0.0.1:8080/x", &["127.0.0.1"], None), Ok(()));
    assert_eq!(check("http://localhost:3000/", &["localhost"], None), Ok(()));
    assert_eq!(check("http://[::1]:3000/", &["::1"], None), Ok(()));
    assert!(check("http://127.0.0.2/", &["127.0.0.1"], None).is_err());
    assert!(check("http://127.0.0.1/", &["localhost"], None).is_err());
    assert!(check("http://api.localhost/", &["localhost"], None).is_err());
    // Credentials and schemes stay refused.
    assert!(check("http://u:p@127.0.0.1/", &["127.0.0.1"], None).is_err());
}

#[test]
fn the_allow_list_applies_to_every_host_private_ones_too() {
    let list = vec!["example.com".to_string(), "localhost".to_string()];
    assert_eq!(check("https://docs.example.com/", &[], Some(&list)), Ok(()));
    let refusal = check("https://evil.org/", &[], Some(&list)).unwrap_err();
    assert!(refusal.contains("`evil.org` is not in network.allow_hosts"), "{refusal}");
    assert_eq!(check("http://localhost:1/", &["localhost"], Some(&list)), Ok(()));
    assert!(check("http://127.0.0.1:1/", &["127.0.0.1"], Some(&list)).unwrap_err().contains("allow_hosts"));
}

#[tokio::test]
async fn the_resolver_refuses_names_of_local_addresses_unless_private() {
    let resolve = |private: &[&str], name: &str| {
        let resolver = CheckedResolver { web: Arc::new(web(private)) };
        resolver.resolve(name.parse().unwrap())
    };
    let err = resolve(&[], "localhost").await.err().unwrap();
    let forbidden = forbidden_in(err.as_ref()).unwrap();
    assert!(forbidden.0.contains("`localhost` resolves to a loopback address"), "{forbidden}");
    let addrs: Vec<SocketAddr> = resolve(&["localhost"], "localhost").await.ok().unwrap().collect();
    assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
}
