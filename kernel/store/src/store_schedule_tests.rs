use super::*;

fn cron(store: &dyn Store, conversation_id: i64, next_at_ms: i64) -> i64 {
    store
        .add_schedule(&NewSchedule {
            owner: "local".into(),
            conversation_id,
            name: "digest".into(),
            prompt: "Write the digest.".into(),
            cron: Some("0 7 * * *".into()),
            timezone: "Europe/London".into(),
            ceiling: "accept-edits".into(),
            next_at_ms: Some(next_at_ms),
            ..NewSchedule::default()
        })
        .unwrap()
}

pub(super) fn a_tick_is_claimed_once_and_the_next_one_is_set_with_it(store: &dyn Store) {
    let conv = super::new_conv(store).id;
    let id = cron(store, conv, 1_000);
    assert_eq!(store.next_tick().unwrap(), Some(1_000));
    assert!(store.due_schedules(999, 10).unwrap().is_empty());
    let due = store.due_schedules(5_000, 10).unwrap();
    assert_eq!(due.iter().map(|s| (s.id, s.next_at_ms)).collect::<Vec<_>>(), vec![(id, Some(1_000))]);

    let run = store.claim_tick(id, 1_000, Some(90_000)).unwrap().expect("the first claim wins");
    assert_eq!(store.claim_tick(id, 1_000, Some(90_000)).unwrap(), None, "a second claim of the tick");
    assert!(store.due_schedules(5_000, 10).unwrap().is_empty());
    assert_eq!(store.schedule(id).unwrap().unwrap().next_at_ms, Some(90_000));

    let turn = store.create_turn(conv, &superpi_proto::Message::user_text("Write the digest.")).unwrap();
    store.set_run_turn(run, turn).unwrap();
    assert!(store.scheduled_turn(turn).unwrap());
    let other = store.create_turn(conv, &superpi_proto::Message::user_text("hi")).unwrap();
    assert!(!store.scheduled_turn(other).unwrap());
    store.set_turn_status(turn, "error", Some("the model failed")).unwrap();
    let runs = store.schedule_runs(id, 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].due_at_ms, runs[0].turn_id, runs[0].turn_status.as_deref(), runs[0].turn_error.as_deref()),
        (Some(1_000), Some(turn), Some("error"), Some("the model failed"))
    );
    let listed = store.schedules("local").unwrap();
    assert_eq!((listed.len(), listed[0].runs, listed[0].failures), (1, 1, 1));
    assert!(store.schedules("someone-else").unwrap().is_empty());
}

/// Several kernels on one database claim the same tick at once: one run.
pub(super) fn of_claims_racing_for_a_tick_one_wins(store: &dyn Store) {
    let conv = super::new_conv(store).id;
    let id = cron(store, conv, 2_000);
    let won: usize = std::thread::scope(|scope| {
        let claims: Vec<_> =
            (0..8).map(|_| scope.spawn(|| store.claim_tick(id, 2_000, Some(3_000)).unwrap().is_some())).collect();
        claims.into_iter().map(|c| usize::from(c.join().unwrap())).sum()
    });
    assert_eq!(won, 1);
    assert_eq!(store.schedule_runs(id, 10).unwrap().len(), 1);
}

pub(super) fn a_trigger_is_found_by_its_token_hash_with_its_secret(store: &dyn Store) {
    let conv = super::new_conv(store).id;
    let id = store
        .add_schedule(&NewSchedule {
            owner: "local".into(),
            conversation_id: conv,
            prompt: "Triage the event.".into(),
            timezone: "UTC".into(),
            token_hash: Some("abc".into()),
            secret: Some("s3cret".into()),
            ceiling: "accept-edits".into(),
            ..NewSchedule::default()
        })
        .unwrap();
    assert_eq!(store.trigger("abd").unwrap(), None);
    let (found, secret) = store.trigger("abc").unwrap().unwrap();
    assert_eq!((found.id, found.trigger, found.next_at_ms, secret.as_str()), (id, true, None, "s3cret"));
    assert!(store.due_schedules(i64::MAX, 10).unwrap().is_empty(), "a trigger has no ticks");
    let first = store.start_delivery(id).unwrap();
    let second = store.start_delivery(id).unwrap();
    store.set_run_error(first, "the conversation is gone").unwrap();
    let runs = store.schedule_runs(id, 10).unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![second, first], "newest first");
    assert_eq!(runs[1].error.as_deref(), Some("the conversation is gone"));
    assert_eq!(store.schedule(id).unwrap().unwrap().failures, 1);

    assert!(!store.remove_schedule("someone-else", id).unwrap(), "another owner's");
    assert!(store.remove_schedule("local", id).unwrap());
    assert_eq!(store.trigger("abc").unwrap(), None);
    assert!(store.schedule_runs(id, 10).unwrap().is_empty(), "its runs go with it");
}

pub(super) fn a_delivery_is_noted_once_and_forgotten_after_a_day(store: &dyn Store) {
    let conv = super::new_conv(store).id;
    let id = store
        .add_schedule(&NewSchedule {
            owner: "local".into(),
            conversation_id: conv,
            prompt: "Triage it.".into(),
            token_hash: Some("t1".into()),
            secret: Some("s".into()),
            ceiling: "plan".into(),
            ..NewSchedule::default()
        })
        .unwrap();
    let day = DELIVERY_MEMORY_MS;
    assert!(store.note_delivery(id, "d-1", 10_000).unwrap(), "a new delivery");
    assert!(!store.note_delivery(id, "d-1", 20_000).unwrap(), "the same delivery again");
    assert!(store.note_delivery(id, "d-2", 20_000).unwrap(), "another delivery");
    assert!(!store.note_delivery(id, "d-1", 10_000 + day).unwrap(), "within the day");
    assert!(store.note_delivery(id, "d-1", 10_001 + day).unwrap(), "a day later it is forgotten");
}
