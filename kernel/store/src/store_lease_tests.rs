//! The lease rules every engine keeps (run on both by `store_tests.rs`'s `on_each_engine!`).
//! A lease claimed for 0 ms stands for a kernel that died: it is expired at once.

use super::super::*;
use super::new_conv;
use superpi_proto::Message;

const LIVE: i64 = 600_000;

fn taken(claim: Claim) -> (Lease, Vec<InterruptedTurn>) {
    match claim {
        Claim::Taken { lease, interrupted } => (lease, interrupted),
        Claim::Held { owner } => panic!("expected the lease, {owner} holds it"),
    }
}

pub(super) fn a_claim_takes_a_free_or_expired_lease_and_not_a_live_one(store: &dyn Store) {
    let conv = new_conv(store).id;
    let (a, _) = taken(store.claim(conv, "kernel-a", LIVE).unwrap());
    assert_eq!(a, Lease { owner: "kernel-a".into(), generation: 1 });
    assert_eq!(store.claim(conv, "kernel-b", LIVE).unwrap(), Claim::Held { owner: "kernel-a".into() });
    // Released: free at once, and its generation is never given again.
    assert!(!store.release(conv, &a).unwrap());
    let (b, _) = taken(store.claim(conv, "kernel-b", 0).unwrap());
    assert_eq!(b.generation, 2);
    // Expired (its kernel stopped renewing): taken over.
    let (a, _) = taken(store.claim(conv, "kernel-a", LIVE).unwrap());
    assert_eq!(a.generation, 3);
    assert_eq!(store.renew("kernel-a", LIVE).unwrap(), vec![(conv, 3)]);
    assert_eq!(store.renew("kernel-b", LIVE).unwrap(), vec![]);
    store.release_all("kernel-a").unwrap();
    assert_eq!(store.renew("kernel-a", LIVE).unwrap(), vec![]);
}

fn event(conversation_id: i64, seq: u64, lease: &Lease) -> Commit<'_> {
    Commit {
        conversation_id,
        seq,
        event_type: "notice",
        wire: "{}",
        entry: None,
        turn_status: None,
        lease: Some(lease),
        live: &[],
    }
}

pub(super) fn a_former_holders_commits_are_refused_once_another_kernel_took_over(store: &dyn Store) {
    let conv = new_conv(store).id;
    let (stale, _) = taken(store.claim(conv, "kernel-a", 0).unwrap());
    // Expired but not taken over: nobody else wrote, so its commit stands.
    store.commit(&event(conv, 1, &stale)).unwrap();
    let (fresh, _) = taken(store.claim(conv, "kernel-b", LIVE).unwrap());
    assert!(matches!(store.commit(&event(conv, 2, &stale)), Err(StoreError::Fenced(id)) if id == conv));
    store.commit(&event(conv, 2, &fresh)).unwrap();
    // Also at a seq the new holder used already: refused for the lease, not as a duplicate.
    assert!(matches!(store.commit(&event(conv, 2, &stale)), Err(StoreError::Fenced(id)) if id == conv));
    assert_eq!(store.head_seq(conv).unwrap(), 2);
    // The refused commit left nothing behind.
    let seqs: Vec<u64> = store.events_page(conv, 0, u64::MAX, 10, usize::MAX).unwrap().iter().map(|e| e.0).collect();
    assert_eq!(seqs, [1, 2]);
}

pub(super) fn a_claim_interrupts_what_the_former_holder_left_but_not_prompts_queued_for_the_next(store: &dyn Store) {
    let conv = new_conv(store).id;
    let prompt = Message::user_text("do not lose me");
    let (dead, _) = taken(store.claim(conv, "kernel-a", 0).unwrap());
    let done = store.create_turn(conv, &prompt).unwrap();
    store.set_turn_status(done, "completed", None).unwrap();
    let running = store.create_turn(conv, &prompt).unwrap();
    store.set_turn_status(running, "running", None).unwrap();
    let queued_in_memory = store.create_turn(conv, &prompt).unwrap();
    let forwarded = store.queue_submit(conv, &Message::user_text("forwarded"), "accept-edits", false).unwrap();
    let (_, interrupted) = taken(store.claim(conv, "kernel-b", LIVE).unwrap());
    assert_eq!(
        interrupted,
        vec![
            InterruptedTurn { conversation_id: conv, turn_id: running, unstarted_prompt: None },
            InterruptedTurn { conversation_id: conv, turn_id: queued_in_memory, unstarted_prompt: Some(prompt) },
        ]
    );
    // Their status stays until the holder stores their ends: a holder that dies first leaves
    // them to the next claim.
    assert_eq!(store.turn_status(running).unwrap().as_deref(), Some("running"));
    assert_eq!(store.turn_status(done).unwrap().as_deref(), Some("completed"));
    store.expire_all().unwrap();
    let (lease, again) = taken(store.claim(conv, "kernel-c", LIVE).unwrap());
    assert_eq!(again, interrupted, "a claimer that died before the ends leaves them to the next");
    assert_eq!(store.turn_status(forwarded).unwrap().as_deref(), Some("queued"));
    // The former holder takes nothing; the holder takes the forwarded prompt once.
    assert_eq!(store.take_queued(conv, &dead).unwrap(), vec![]);
    let taken_now = store.take_queued(conv, &lease).unwrap();
    assert_eq!(
        taken_now,
        vec![QueuedSubmit {
            turn_id: forwarded,
            prompt: Message::user_text("forwarded"),
            ceiling: "accept-edits".into(),
            steer: false
        }]
    );
    assert_eq!(store.take_queued(conv, &lease).unwrap(), vec![]);
}

pub(super) fn orphans_are_conversations_with_work_and_no_live_lease(store: &dyn Store) {
    let (conv, other) = (new_conv(store).id, new_conv(store).id);
    let running = store.create_turn(conv, &Message::user_text("x")).unwrap();
    store.set_turn_status(running, "running", None).unwrap();
    assert_eq!(store.orphans().unwrap(), vec![conv]);
    let (lease, _) = taken(store.claim(conv, "kernel-a", LIVE).unwrap());
    assert!(store.orphans().unwrap().is_empty());
    // A prompt queued for a live holder is its to take; once it lets go, anyone's.
    let (other_lease, _) = taken(store.claim(other, "kernel-a", LIVE).unwrap());
    store.queue_submit(other, &Message::user_text("y"), "plan", true).unwrap();
    assert!(store.orphans().unwrap().is_empty());
    assert!(store.release(other, &other_lease).unwrap());
    assert_eq!(store.orphans().unwrap(), vec![other]);
    // The holder ends the turn a dead kernel left (with its event); one it runs now is its own ...
    store.set_turn_status(running, "interrupted", None).unwrap();
    let again = store.create_turn(conv, &Message::user_text("z")).unwrap();
    store.set_turn_status(again, "running", None).unwrap();
    assert_eq!(store.orphans().unwrap(), vec![other]);
    // ... until its lease expires.
    store.expire_all().unwrap();
    assert_eq!(store.orphans().unwrap(), vec![conv, other]);
    drop(lease);
}
