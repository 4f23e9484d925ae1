//! An image's bytes as every vendor carries them: standard base64.

use base64::Engine as _;

/// Standard base64 (with padding), as every vendor takes image data.
pub fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes standard base64; line breaks and spaces (as some clients wrap it) are ignored.
pub fn decode(data: &str) -> Result<Vec<u8>, String> {
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact).map_err(|err| format!("the image is not base64: {err}"))
}
