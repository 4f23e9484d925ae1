//! Images in prompts: which models take them, which formats each vendor takes, and what an
//! image's bytes are (read from the bytes, not from what a client declared).
//!
//! The table holds the vendors' published facts; `[[providers.models]]`'s `images` overrides
//! it per model. A model the table does not know (a local server's) takes none unless its
//! entry says `images = true`: a text-only model sent an image fails upstream with a vague
//! error, while a refusal here names the setting.

use crate::config::{ModelEntry, ProviderKind, ProvidersConfig};
// In a module of their own so the mock decodes images without depending on the router.
pub use crate::image_data::{decode, encode};

/// The most bytes of one image (Anthropic's limit, the lowest of the three vendors').
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The formats every vendor but Gemini takes; Gemini takes no GIF.
pub const MEDIA_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Upstream model id prefixes and whether they take images; the first match wins.
const TABLE: &[(&str, bool)] = &[
    ("gpt-4o", true),
    ("chatgpt-4o", true),
    ("gpt-4.1", true),
    ("gpt-4-turbo", true),
    ("gpt-4", false),
    ("gpt-3.5", false),
    ("gpt-5", true),
    ("o1-mini", false),
    ("o1-preview", false),
    ("o1", true),
    ("o3-mini", false),
    ("o3", true),
    ("o4-mini", true),
    ("claude-", true),
    ("gemini-", true),
];

/// Whether an upstream model id takes images, by the built-in table (the mock does).
pub fn builtin(kind: ProviderKind, upstream: &str) -> bool {
    if kind == ProviderKind::Mock {
        return true;
    }
    let id = upstream.rsplit('/').next().unwrap_or(upstream);
    TABLE.iter().find(|(prefix, _)| id.starts_with(prefix)).is_some_and(|(_, takes)| *takes)
}

/// The vendor and upstream id of a model name as users type it, and its entry if it has one.
fn resolve<'a>(model: &str, config: &'a ProvidersConfig) -> (ProviderKind, String, Option<&'a ModelEntry>) {
    let name = model.trim();
    if let Some(entry) = config.models.iter().find(|entry| entry.name == name) {
        return (entry.provider, entry.model.clone().unwrap_or_else(|| entry.name.clone()), Some(entry));
    }
    if name == "mock" {
        return (ProviderKind::Mock, name.to_string(), None);
    }
    match crate::router::prefixed_kind(name) {
        Some((kind, upstream)) => (kind, upstream.to_string(), None),
        None => (ProviderKind::Openai, name.to_string(), None),
    }
}

/// Why `model` cannot be sent an image of `media_type`, or `None` when it can.
pub fn refusal(model: &str, media_type: &str, config: &ProvidersConfig) -> Option<String> {
    let (kind, upstream, entry) = resolve(model, config);
    let takes = entry.and_then(|entry| entry.images).unwrap_or_else(|| builtin(kind, &upstream));
    if !takes {
        return Some(format!(
            "model `{model}` does not take images: switch to a model that does (gpt-4o, claude-sonnet-4-5, \
             gemini-2.5-flash), or, if it does, set `images = true` in its [[providers.models]] entry"
        ));
    }
    if kind == ProviderKind::Gemini && media_type == "image/gif" {
        return Some(format!("model `{model}` (Gemini) takes PNG, JPEG and WebP images, not GIF"));
    }
    None
}

/// The image format of `bytes` by their signature: PNG, JPEG, GIF or WebP.
pub fn media_type_of(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
