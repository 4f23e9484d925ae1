#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn events_are_parsed_by_block_with_comments_skipped_and_data_lines_joined() {
    let stream =
        b"event: endpoint\r\ndata: /messages?s=1\r\n\r\n: keep-alive\n\ndata: {\"a\":\ndata: 1}\n\nevent: mess";
    let (first, used) = parse_event(stream).unwrap();
    assert_eq!(first, Some(Event { name: "endpoint".into(), data: "/messages?s=1".into() }));
    let rest = &stream[used..];
    let (comment, used) = parse_event(rest).unwrap();
    assert_eq!(comment, None);
    let rest = &rest[used..];
    let (message, used) = parse_event(rest).unwrap();
    assert_eq!(message, Some(Event { name: "message".into(), data: "{\"a\":\n1}".into() }));
    assert_eq!(parse_event(&rest[used..]), None, "an incomplete block waits for more");
}
