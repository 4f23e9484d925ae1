//! How fast a frontend reads event frames: prints figures, asserts nothing.
#![allow(clippy::print_stdout, clippy::unwrap_used)]
use std::time::Instant;
use superpi_proto::Event;
use superpi_proto::message::{EventBatch, encode_event_batch};

fn main() {
    let events: Vec<String> = (0..512u64)
        .map(|i| {
            let mut e = Event::text_delta(1, Some(1), 0, "tok ");
            e.seq = i;
            e.to_json()
        })
        .collect();
    let frame = encode_event_batch(1, events.iter().map(String::as_str));
    let t = Instant::now();
    let mut n = 0;
    for _ in 0..2000 {
        let batch: EventBatch = serde_json::from_slice(&frame).unwrap();
        n += batch.events.len();
    }
    let e = t.elapsed();
    println!(
        "parsed {n} events in {:.2} s = {:.0}/s ({} bytes/event)",
        e.as_secs_f64(),
        n as f64 / e.as_secs_f64(),
        frame.len() / 512
    );
    let t = Instant::now();
    for i in 0..1_000_000u64 {
        let mut e = Event::text_delta(1, Some(1), 0, "tok ");
        e.seq = i;
        std::hint::black_box(e.to_json());
    }
    println!("serialized 1M events in {:.2} s", t.elapsed().as_secs_f64());
}
