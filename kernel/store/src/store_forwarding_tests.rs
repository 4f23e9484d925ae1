//! The forwarding rules every engine keeps (run on both by `store_tests.rs`'s `on_each_engine!`).

use super::super::*;
use super::new_conv;

fn question(conversation_id: i64, request_id: &str, kind: QuestionKind) -> OpenQuestion {
    OpenQuestion {
        request_id: request_id.into(),
        conversation_id,
        owner: "local".into(),
        kind,
        remote_may_allow: kind == QuestionKind::Permission,
    }
}

pub(super) fn a_question_is_answered_once_and_dies_with_a_takeover(store: &dyn Store) {
    let conv = new_conv(store).id;
    let asked = question(conv, "perm-1", QuestionKind::Permission);
    store.open_question(&asked).unwrap();
    store.open_question(&question(conv, "perm-2", QuestionKind::Ui)).unwrap();
    assert_eq!(store.question("perm-1").unwrap(), Some(asked));
    assert_eq!(store.question("perm-9").unwrap(), None);
    // Answered once: a second answer finds nothing open.
    assert!(store.answer_question("perm-1", "\"allow_once\"").unwrap());
    assert!(!store.answer_question("perm-1", "\"reject_once\"").unwrap());
    assert_eq!(store.question("perm-1").unwrap(), None);
    // An answer through the holder itself comes after it: refused. One with nobody before it
    // wins (and one to a question never recorded has nobody to lose to).
    assert!(!store.answer_first("perm-1", "\"allow_once\"").unwrap());
    store.open_question(&question(conv, "perm-4", QuestionKind::Permission)).unwrap();
    assert!(store.answer_first("perm-4", "\"reject_once\"").unwrap());
    assert!(!store.answer_question("perm-4", "\"allow_once\"").unwrap());
    store.close_question("perm-4").unwrap();
    assert!(store.answer_first("perm-never-recorded", "\"allow_once\"").unwrap());
    // The holder takes the answer, once.
    assert_eq!(store.take_answers(conv).unwrap(), vec![("perm-1".to_string(), "\"allow_once\"".to_string())]);
    assert_eq!(store.take_answers(conv).unwrap(), vec![]);
    // Closed: nothing to answer.
    store.close_question("perm-2").unwrap();
    assert!(!store.answer_question("perm-2", "{}").unwrap());
    // A claim drops the questions its former holder asked.
    store.open_question(&question(conv, "perm-3", QuestionKind::Permission)).unwrap();
    store.claim(conv, "kernel-a", 0).unwrap();
    store.claim(conv, "kernel-b", 600_000).unwrap();
    assert_eq!(store.question("perm-3").unwrap(), None);
}

pub(super) fn watchers_elsewhere_are_other_kernels_that_still_renew(store: &dyn Store) {
    let conv = new_conv(store).id;
    let none = Watchers::default();
    assert_eq!(store.watchers_elsewhere(conv, "kernel-a").unwrap(), none);
    let some = Watchers { watching: 3, interactive: 2, readers: 1 };
    store.set_watchers(conv, "kernel-b", some, 600_000).unwrap();
    let one = Watchers { watching: 1, interactive: 1, readers: 0 };
    store.set_watchers(conv, "kernel-c", one, 600_000).unwrap();
    let both = Watchers { watching: 4, interactive: 3, readers: 1 };
    assert_eq!(store.watchers_elsewhere(conv, "kernel-a").unwrap(), both);
    // A kernel's own watchers are not elsewhere.
    assert_eq!(store.watchers_elsewhere(conv, "kernel-b").unwrap(), one);
    // One that only watches (it neither answers nor reads) is counted too.
    let watching = Watchers { watching: 1, ..Watchers::default() };
    store.set_watchers(conv, "kernel-d", watching, 600_000).unwrap();
    assert_eq!(store.watchers_elsewhere(conv, "kernel-a").unwrap().watching, 5);
    store.set_watchers(conv, "kernel-d", none, 600_000).unwrap();
    // None removes what a kernel said.
    store.set_watchers(conv, "kernel-c", none, 600_000).unwrap();
    assert_eq!(store.watchers_elsewhere(conv, "kernel-a").unwrap(), some);
    // A kernel that stopped renewing (dead) counts no more; renewed, it does again.
    store.set_watchers(conv, "kernel-b", some, -1).unwrap();
    assert_eq!(store.watchers_elsewhere(conv, "kernel-a").unwrap(), none);
    store.renew_watchers("kernel-b", 600_000).unwrap();
    assert_eq!(store.watchers_elsewhere(conv, "kernel-a").unwrap(), some);
}

pub(super) fn running_names_the_conversations_with_a_turn_running(store: &dyn Store) {
    let (a, b, c) = (new_conv(store).id, new_conv(store).id, new_conv(store).id);
    let turn = store.create_turn(a, &superpi_proto::Message::user_text("x")).unwrap();
    store.set_turn_status(turn, "running", None).unwrap();
    let queued = store.create_turn(b, &superpi_proto::Message::user_text("y")).unwrap();
    assert_eq!(store.running(&[a, b, c]).unwrap(), vec![a]);
    assert!(store.running(&[b, c]).unwrap().is_empty());
    assert!(store.running(&[]).unwrap().is_empty());
    store.set_turn_status(turn, "completed", None).unwrap();
    store.set_turn_status(queued, "running", None).unwrap();
    assert_eq!(store.running(&[a, b, c]).unwrap(), vec![b]);
}

pub(super) fn a_job_is_taken_once_by_the_holder_answered_once_and_run_again_after_a_takeover(store: &dyn Store) {
    let conv = new_conv(store).id;
    // A lease that runs out at once: another kernel may take it over below.
    let Claim::Taken { lease, .. } = store.claim(conv, "kernel-a", 0).unwrap() else { panic!("claimed") };
    let compact = store.queue_job(conv, JobKind::Compact).unwrap();
    let clear = store.queue_job(conv, JobKind::Clear).unwrap();
    let stranger = Lease { owner: "kernel-c".into(), generation: lease.generation };
    assert!(store.take_jobs(conv, &stranger).unwrap().is_empty());
    assert_eq!(store.take_jobs(conv, &lease).unwrap(), vec![(compact, JobKind::Compact), (clear, JobKind::Clear)]);
    assert!(store.take_jobs(conv, &lease).unwrap().is_empty(), "taken once");
    assert_eq!(store.take_job_answer(compact).unwrap(), None, "no answer yet");
    store.answer_job(compact, "{\"result\":{\"compacted\":false}}").unwrap();
    assert_eq!(store.take_job_answer(compact).unwrap().as_deref(), Some("{\"result\":{\"compacted\":false}}"));
    assert_eq!(store.take_job_answer(compact).unwrap(), None, "answered once");
    // Its holder died with `clear` taken and unanswered: the next holder runs it.
    let Claim::Taken { lease: next, .. } = store.claim(conv, "kernel-b", 600_000).unwrap() else { panic!("taken") };
    assert!(store.take_jobs(conv, &lease).unwrap().is_empty(), "the former holder's lease takes nothing");
    assert_eq!(store.take_jobs(conv, &next).unwrap(), vec![(clear, JobKind::Clear)]);
}
