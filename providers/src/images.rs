//! Images in prompts: which models take them, which formats each vendor takes, and what an
//! image's bytes are (read from the bytes, not from what a client declared).
//!
//! The table holds the vendors' published facts; `[[providers.models]]`'s `images` overrides
//! it per model. A model the table does not know (a local server's) takes none unless its
//! entry says `images = true`: a text-only model sent an image fails upstream with a vague
//! error, while a refusal here names the setting.

use crate::config::{ProviderKind, ProvidersConfig};
// In a module of their own so the mock decodes images without depending on the router.
pub use crate::image_data::{decode, encode};

pub use superpi_proto::content::MAX_IMAGE_BYTES;

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
    ("codex-mini", true),
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

/// Why `model` cannot be sent an image of `media_type`, or `None` when it can.
pub fn refusal(model: &str, media_type: &str, config: &ProvidersConfig) -> Option<String> {
    let (kind, upstream, entry) = crate::router::model_parts(model, config);
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
    superpi_proto::content::image_media_type(bytes)
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
