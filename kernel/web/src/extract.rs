//! A fetched body as text for a model: HTML reduced to readable text by html2text (markdown's
//! emphasis and headings, links as numbered footnotes with absolute URLs, scripts and styles
//! dropped), other text as it came, binary content refused; the page's title and links; a
//! window of the text by characters.

use reqwest::Url;

/// Most links listed in a fetch's structured output.
pub const MAX_LINKS: usize = 30;
/// Columns the text is wrapped at: wide, so lines stay whole for a model.
const WIDTH: usize = 120;

/// What a body is, from its content type (or, without one, its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Html,
    Text,
    Binary,
}

/// The kind of a body with this `Content-Type` header.
pub fn kind(content_type: Option<&str>, body: &[u8]) -> BodyKind {
    let essence =
        content_type.map(|t| t.split(';').next().unwrap_or("").trim().to_ascii_lowercase()).filter(|t| !t.is_empty());
    match essence.as_deref() {
        Some("text/html" | "application/xhtml+xml") => BodyKind::Html,
        Some(t)
            if t.starts_with("text/")
                || t.ends_with("+json")
                || t.ends_with("+xml")
                || matches!(
                    t,
                    "application/json"
                        | "application/xml"
                        | "application/javascript"
                        | "application/x-javascript"
                        | "application/yaml"
                        | "application/x-yaml"
                        | "application/toml"
                        | "application/x-ndjson"
                ) =>
        {
            BodyKind::Text
        }
        Some(_) => BodyKind::Binary,
        None => sniff(body),
    }
}

/// A body without a content type: text when its start has no NUL byte, HTML when it says so.
fn sniff(body: &[u8]) -> BodyKind {
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) {
        return BodyKind::Binary;
    }
    let head = String::from_utf8_lossy(head).trim_start().to_ascii_lowercase();
    if head.starts_with("<!doctype html") || head.starts_with("<html") { BodyKind::Html } else { BodyKind::Text }
}

/// An HTML page as text, its title and its links (absolute, against `base`, at most
/// [`MAX_LINKS`], in order, without repeats). Runs html5ever: call it off the async threads.
pub fn html_to_text(html: &[u8], base: &Url) -> Result<(String, Option<String>, Vec<String>), String> {
    let config = html2text::config::plain().link_footnotes(true);
    let dom = config.parse_html(html).map_err(|e| format!("reading the HTML: {e}"))?;
    let mut links = Vec::new();
    collect_links(&dom.document, base, &mut links);
    let tree = config.dom_to_render_tree(&dom).map_err(|e| format!("reading the HTML: {e}"))?;
    let text = config.render_to_string(tree, WIDTH).map_err(|e| format!("rendering the HTML: {e}"))?;
    Ok((tidy(&text), title(html), links))
}

/// Makes every link absolute (so the footnotes name pages a model can fetch) and lists the
/// first [`MAX_LINKS`] http(s) ones.
fn collect_links(node: &html2text::Handle, base: &Url, links: &mut Vec<String>) {
    if let html2text::Element { name, attrs, .. } = &node.data
        && &*name.local == "a"
    {
        for attr in attrs.borrow_mut().iter_mut().filter(|a| &*a.name.local == "href") {
            let Ok(link) = base.join(attr.value.trim()) else { continue };
            attr.value = link.as_str().into();
            let link = link.to_string();
            if matches!(&link[..link.find(':').unwrap_or(0)], "http" | "https")
                && links.len() < MAX_LINKS
                && !links.contains(&link)
            {
                links.push(link);
            }
        }
    }
    for child in node.children.borrow().iter() {
        collect_links(child, base, links);
    }
}

/// The text of the document's `<title>`, entities decoded.
fn title(html: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&html[..html.len().min(256 * 1024)]);
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let inner = html2text::config::plain().string_from_read(text[start..end].as_bytes(), 10_000).ok()?;
    let title = inner.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// Trailing spaces off every line, and no more than one empty line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut empty = 0;
    for line in text.lines().map(str::trim_end) {
        empty = if line.is_empty() { empty + 1 } else { 0 };
        if empty < 2 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim().to_string()
}

/// The characters `offset..offset + max` of `text`, and the offset to continue from when
/// more follows.
pub fn window(text: &str, offset: usize, max: usize) -> (&str, Option<usize>) {
    let start = text.char_indices().nth(offset).map_or(text.len(), |(i, _)| i);
    let rest = &text[start..];
    match rest.char_indices().nth(max) {
        Some((end, _)) => (&rest[..end], Some(offset + max)),
        None => (rest, None),
    }
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
