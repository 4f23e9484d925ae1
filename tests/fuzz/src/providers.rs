//! The model providers: each vendor's event-stream reading (the SSE decoder, then the
//! vendor's JSON chunks), fed in pieces whose sizes come from the input. Whatever the bytes,
//! the events out keep the stream algebra, and splitting the body differently does not change
//! them.

use superpi_providers::{ProviderKind, StreamEvent, parse_recorded, validate};

pub fn openai(data: &[u8]) {
    stream(ProviderKind::Openai, data);
}

pub fn anthropic(data: &[u8]) {
    stream(ProviderKind::Anthropic, data);
}

pub fn gemini(data: &[u8]) {
    stream(ProviderKind::Gemini, data);
}

/// The first byte sets the piece size (1..=64); the rest is the body.
fn stream(kind: ProviderKind, data: &[u8]) {
    let [piece, body @ ..] = data else { return };
    let piece = usize::from(*piece % 64) + 1;
    let events = parse_recorded(kind, body.chunks(piece));
    if let Err(violation) = validate(&events) {
        panic!("{kind:?}: the events break the stream algebra: {violation}\n{events:#?}");
    }
    let whole = parse_recorded(kind, [body]);
    assert_eq!(comparable(&whole), comparable(&events), "{kind:?}: pieces of {piece} read differently");
}

/// Events without the ids made up for calls the API gave none (they differ per run).
fn comparable(events: &[StreamEvent]) -> String {
    let text = format!("{events:?}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    // Generated ids look like `call_<hex>` / `NAME_<hex>`: blank every hex run after `_`.
    while let Some(pos) = rest.find('_') {
        out.push_str(&rest[..=pos]);
        rest = &rest[pos + 1..];
        let hex = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex >= 8 {
            out.push('#');
            rest = &rest[hex..];
        }
    }
    out.push_str(rest);
    out
}
