use super::*;
use crate::config::ModelEntry;

#[test]
fn the_table_knows_which_families_see() {
    assert!(builtin(ProviderKind::Openai, "gpt-4o-mini"));
    assert!(builtin(ProviderKind::Openai, "gpt-4-turbo-2024-04-09"));
    assert!(!builtin(ProviderKind::Openai, "gpt-4-0613"));
    assert!(!builtin(ProviderKind::Openai, "gpt-3.5-turbo"));
    assert!(!builtin(ProviderKind::Openai, "o3-mini"));
    assert!(builtin(ProviderKind::Openai, "o3"));
    assert!(builtin(ProviderKind::Anthropic, "claude-sonnet-4-5"));
    assert!(builtin(ProviderKind::Gemini, "gemini-2.5-flash"));
    assert!(!builtin(ProviderKind::Openai, "llama3.1:8b"));
    assert!(builtin(ProviderKind::Mock, "mock"));
}

#[test]
fn refusals_name_the_model_and_the_setting() {
    let mut config = ProvidersConfig::default();
    config.models.push(ModelEntry { name: "llava".into(), images: Some(true), ..ModelEntry::default() });
    config.models.push(ModelEntry { name: "llama".into(), ..ModelEntry::default() });
    config.models.push(ModelEntry {
        name: "blind-mock".into(),
        provider: ProviderKind::Mock,
        images: Some(false),
        ..ModelEntry::default()
    });
    assert_eq!(refusal("llava", "image/png", &config), None);
    assert_eq!(refusal("mock", "image/gif", &config), None);
    let refused = refusal("llama", "image/png", &config).unwrap_or_default();
    assert!(refused.contains("`llama` does not take images") && refused.contains("images = true"), "{refused}");
    assert!(refusal("blind-mock", "image/png", &config).is_some());
    assert!(refusal("gpt-3.5-turbo", "image/png", &config).is_some());
    let gif = refusal("gemini-2.5-flash", "image/gif", &config).unwrap_or_default();
    assert!(gif.contains("not GIF"), "{gif}");
    assert_eq!(refusal("gemini-2.5-flash", "image/webp", &config), None);
}

#[test]
fn formats_are_read_from_the_bytes() {
    assert_eq!(media_type_of(b"\x89PNG\r\n\x1a\n\0\0"), Some("image/png"));
    assert_eq!(media_type_of(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
    assert_eq!(media_type_of(b"GIF89a..."), Some("image/gif"));
    assert_eq!(media_type_of(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(media_type_of(b"RIFF\x10\0\0\0WAVEfmt "), None);
    assert_eq!(media_type_of(b"%PDF-1.7"), None);
}

#[test]
fn base64_and_data_urls() {
    let bytes = b"\x89PNG\r\n\x1a\nabc";
    let data = encode(bytes);
    assert_eq!(decode(&data).as_deref(), Ok(&bytes[..]));
    let wrapped = format!("{}\n{}", &data[..8], &data[8..]);
    assert_eq!(decode(&wrapped).as_deref(), Ok(&bytes[..]));
    assert!(decode("not base64!").is_err());
    let url = |url: &str| superpi_proto::ContentBlock::image_from_data_url(url);
    assert_eq!(url("data:image/png;base64,AAAA"), Some(superpi_proto::ContentBlock::image("image/png", "AAAA")));
    assert_eq!(url("data:text/plain,hello"), None);
    assert_eq!(url("https://example.com/a.png"), None);
}
