use super::*;

#[test]
fn kinds_follow_the_content_type_then_the_bytes() {
    assert_eq!(kind(Some("text/html; charset=utf-8"), b""), BodyKind::Html);
    assert_eq!(kind(Some("Application/XHTML+XML"), b""), BodyKind::Html);
    for t in ["text/plain", "text/markdown", "application/json", "application/ld+json", "image/svg+xml"] {
        assert_eq!(kind(Some(t), b""), BodyKind::Text, "{t}");
    }
    for t in ["application/pdf", "image/png", "application/octet-stream", "application/zip"] {
        assert_eq!(kind(Some(t), b"%PDF"), BodyKind::Binary, "{t}");
    }
    assert_eq!(kind(None, b"  <!DOCTYPE html><p>x"), BodyKind::Html);
    assert_eq!(kind(None, b"plain words"), BodyKind::Text);
    assert_eq!(kind(None, b"\x89PNG\r\n\x1a\n\0\0"), BodyKind::Binary);
}

#[test]
fn html_becomes_readable_text_with_its_title_and_links() {
    let html = br#"<!doctype html><html><head><title>The  Rust &amp; You</title>
        <style>body { color: red }</style><script>alert("never shown")</script></head>
        <body><h1>Hello</h1><p>First <b>paragraph</b> with a <a href="/docs/intro">link</a>.</p>
        <ul><li>one</li><li>two</li></ul>
        <p>See <a href="https://example.org/x">x</a>, <a href="/docs/intro">again</a>, <a href="mailto:a@b">mail</a>.</p>
        </body></html>"#;
    let base = Url::parse("https://example.com/start/page.html").unwrap();
    let (text, title, links) = html_to_text(html, &base).unwrap();
    assert_eq!(title.as_deref(), Some("The Rust & You"));
    assert!(text.contains("# Hello") && text.contains("First **paragraph** with a [link][1]."), "{text}");
    assert!(text.contains("* one") && text.contains("* two"), "{text}");
    assert!(!text.contains("alert") && !text.contains("color: red") && !text.contains("<p>"), "{text}");
    assert!(text.contains("[1]: https://example.com/docs/intro\n"), "links are absolute footnotes: {text}");
    assert!(text.contains("[4]: mailto:a@b"), "{text}");
    assert_eq!(links, ["https://example.com/docs/intro", "https://example.org/x"]);
}

#[test]
fn links_stop_at_the_limit() {
    let html: String = (0..50).map(|i| format!("<a href=\"/p{i}\">p{i}</a> ")).collect();
    let (_, title, links) = html_to_text(html.as_bytes(), &Url::parse("http://h.example/").unwrap()).unwrap();
    assert_eq!(title, None);
    assert_eq!(links.len(), MAX_LINKS);
    assert_eq!(links[0], "http://h.example/p0");
}

#[test]
fn windows_count_characters_and_say_where_to_go_on() {
    let text = "añb€cd";
    assert_eq!(window(text, 0, 3), ("añb", Some(3)));
    assert_eq!(window(text, 3, 3), ("€cd", None));
    assert_eq!(window(text, 2, 100), ("b€cd", None));
    assert_eq!(window(text, 10, 3), ("", None));
    assert_eq!(window(text, 0, 6), (text, None));
}
