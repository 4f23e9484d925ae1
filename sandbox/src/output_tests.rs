use super::*;

#[test]
fn under_the_cap_everything_stays_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Collector::new(10, dir.path().join("s"));
    c.push(b"hello");
    c.push(b"world");
    let out = c.finish();
    assert_eq!(out.head, b"helloworld");
    assert_eq!(out.total, 10);
    assert!(out.spill.is_none() && out.tail.is_empty());
    assert!(!dir.path().join("s").exists());
}

#[test]
fn past_the_cap_the_whole_stream_goes_to_the_spill_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spill/1/call");
    let mut c = Collector::new(8, path.clone());
    c.push(b"abcdef");
    c.push(b"ghijkl");
    c.push(b"mnop");
    let out = c.finish();
    assert_eq!(out.head, b"abcdefgh");
    assert_eq!(out.tail, b"ijklmnop");
    assert_eq!(out.total, 16);
    assert_eq!(out.spill.as_deref(), Some(path.as_path()));
    assert_eq!(std::fs::read(&path).unwrap(), b"abcdefghijklmnop");
}

#[test]
fn the_tail_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Collector::new(4, dir.path().join("s"));
    let chunk = vec![b'x'; 10_000];
    for _ in 0..100 {
        c.push(&chunk);
    }
    c.push(b"END");
    let out = c.finish();
    assert_eq!(out.tail.len(), TAIL_BYTES);
    assert!(out.tail.ends_with(b"xEND"));
    assert_eq!(out.total, 1_000_003);
}

#[test]
fn a_spill_that_cannot_be_written_is_reported_not_fatal() {
    let mut c = Collector::new(2, std::path::PathBuf::from("/proc/no/such/dir/spill"));
    c.push(b"abcdef");
    let out = c.finish();
    assert_eq!(out.head, b"ab");
    assert!(out.spill.is_none());
    assert!(out.spill_error.is_some());
    assert_eq!(out.total, 6);
}

#[test]
fn head_and_tail_text_cut_cleanly() {
    assert_eq!(head_text("héllo".as_bytes(), 2), "h");
    assert_eq!(tail_text("héllo".as_bytes(), 5), "éllo");
    assert_eq!(tail_text("héllo".as_bytes(), 4), "llo");
    assert_eq!(tail_text(b"aaaa\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 30), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    assert_eq!(tail_text(b"one\ntwo\nthree", 100), "one\ntwo\nthree");
}
