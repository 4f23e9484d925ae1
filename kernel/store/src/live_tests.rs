use super::*;

fn delta(seq: u64, text: &str) -> (u64, String) {
    let event = superpi_proto::Event::text_delta(7, Some(1), 0, text.to_string());
    let mut event = event;
    event.seq = seq;
    (seq, event.to_json())
}

fn hear_all(payloads: &[String]) -> Vec<(u64, String)> {
    let mut assembler = Assembler::default();
    let mut heard = Vec::new();
    for payload in payloads {
        assert!(is_live(payload));
        assert!(payload.len() < 8000, "a payload of {} bytes", payload.len());
        if let Some(batch) = assembler.heard(payload) {
            assert_eq!(batch.conversation_id, 7);
            heard.extend(batch.events);
        }
    }
    heard
}

#[test]
fn small_deltas_share_one_notification() {
    let events: Vec<_> = (1..=20).map(|seq| delta(seq, "word ")).collect();
    let payloads = payloads(7, &events);
    assert_eq!(payloads.len(), 1);
    assert_eq!(hear_all(&payloads), events);
}

#[test]
fn a_batch_past_one_payload_is_cut_between_events_and_heard_in_order() {
    let events: Vec<_> = (1..=400).map(|seq| delta(seq, &"x".repeat(100))).collect();
    let payloads = payloads(7, &events);
    assert!(payloads.len() > 4);
    assert!(payloads.iter().all(|p| p.starts_with("live 7\n")));
    assert_eq!(hear_all(&payloads), events);
}

#[test]
fn an_event_larger_than_a_payload_goes_in_parts_cut_at_characters() {
    // Three-byte characters, so a cut at a byte count would split one.
    let big = delta(5, &"€".repeat(9000));
    let events = vec![delta(4, "before"), big, delta(6, "after")];
    let payloads = payloads(7, &events);
    assert!(payloads.iter().filter(|p| p.starts_with("part 7 5 ")).count() >= 4);
    assert_eq!(hear_all(&payloads), events);
}

#[test]
fn parts_out_of_order_or_of_another_event_are_dropped_and_the_next_event_still_heard() {
    let big = payloads(7, &[delta(5, &"y".repeat(30_000))]);
    assert_eq!(big.len(), 4);
    let mut assembler = Assembler::default();
    // A part missing: the event is dropped, not made of the wrong slices.
    assert_eq!(assembler.heard(&big[0]), None);
    assert_eq!(assembler.heard(&big[2]), None);
    assert_eq!(assembler.heard(&big[3]), None);
    let next = payloads(7, &[delta(6, "fine")]);
    assert_eq!(assembler.heard(&next[0]).map(|b| b.events), Some(vec![delta(6, "fine")]));
    assert_eq!(assembler.heard("live 7"), None);
    assert_eq!(assembler.heard("live x\n1 {}"), None);
}
