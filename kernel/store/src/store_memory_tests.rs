use super::*;

fn note(owner: &str, workspace: Option<&str>, title: &str, body: &str) -> NewNote {
    NewNote {
        owner: owner.into(),
        workspace: workspace.map(str::to_string),
        title: title.into(),
        body: body.into(),
        tags: vec!["fact".into()],
        source: None,
        conversation_id: None,
        pinned: false,
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

const ALICE: NoteScope<'static> = NoteScope { owner: "alice", workspace: Some("/w/a") };

pub(super) fn notes_are_scoped_to_their_owner_and_workspace(store: &dyn Store) {
    let everywhere = store.write_note(&note("alice", None, "Tea", "Alice drinks green tea")).unwrap();
    let here = store.write_note(&note("alice", Some("/w/a"), "Build", "This repository builds with make")).unwrap();
    let there = store.write_note(&note("alice", Some("/w/b"), "Build", "That repository builds with cargo")).unwrap();
    let bobs = store.write_note(&note("bob", None, "Tea", "Bob drinks black tea")).unwrap();

    let read = store.note(ALICE, everywhere).unwrap().unwrap();
    assert_eq!(
        (read.title.as_str(), read.body.as_str(), read.tags.as_slice()),
        ("Tea", "Alice drinks green tea", &["fact".to_string()][..])
    );
    assert!(store.note(ALICE, here).unwrap().is_some());
    assert_eq!(store.note(ALICE, there).unwrap(), None, "another workspace's note");
    assert_eq!(store.note(ALICE, bobs).unwrap(), None, "another owner's note");
    let nowhere = NoteScope { owner: "alice", workspace: None };
    assert_eq!(store.note(nowhere, here).unwrap(), None, "a workspace's note outside it");
    assert_eq!(store.count_notes(ALICE).unwrap(), 2);
    assert_eq!(store.count_notes(nowhere).unwrap(), 1);

    let found: Vec<i64> =
        store.search_notes(ALICE, &words("tea builds"), 10).unwrap().iter().map(|(n, _)| n.id).collect();
    assert_eq!(found.len(), 2);
    assert!(found.contains(&everywhere) && found.contains(&here));
}

pub(super) fn search_stems_ranks_and_puts_superseded_notes_last(store: &dyn Store) {
    let old = store.write_note(&note("alice", None, "Deploy day", "We deploy on Fridays")).unwrap();
    let new = store.write_note(&note("alice", None, "Deploy day", "We deploy on Tuesdays since March")).unwrap();
    let other = store
        .write_note(&note("alice", None, "Lunch", "The team lunches together; deploying is not discussed"))
        .unwrap();
    // Stemming: `deploying` finds `deploy`.
    let hits = store.search_notes(ALICE, &words("deploying"), 10).unwrap();
    assert_eq!(hits.len(), 3);
    // A title match ranks above a body match.
    assert_eq!(hits.last().unwrap().0.id, other);
    assert!(hits[0].1 >= hits[2].1);

    assert!(store.link_notes(&NoteLink { from_id: new, to_id: old, relation: "supersedes".into() }).unwrap());
    assert!(!store.link_notes(&NoteLink { from_id: new, to_id: old, relation: "supersedes".into() }).unwrap());
    let hits = store.search_notes(ALICE, &words("deploy"), 10).unwrap();
    assert_eq!(hits.last().unwrap().0.id, old, "the superseded note ranks last");
    assert!(hits.last().unwrap().0.superseded);
    assert!(store.note(ALICE, old).unwrap().unwrap().superseded);
    assert_eq!(store.note_links(old).unwrap(), [NoteLink { from_id: new, to_id: old, relation: "supersedes".into() }]);
    // The index leaves the superseded note out, newest first.
    let recent: Vec<i64> = store.recent_notes(ALICE, 10).unwrap().iter().map(|n| n.id).collect();
    assert_eq!(recent, [other, new]);
    assert_eq!(store.recent_notes(ALICE, 1).unwrap().len(), 1);
    // Words that are syntax elsewhere are only words; nothing matches nothing.
    assert!(store.search_notes(ALICE, &words("zebra"), 10).unwrap().is_empty());
    assert!(store.search_notes(ALICE, &[], 10).unwrap().is_empty());
    assert_eq!(store.search_notes(ALICE, &words("OR NOT deploy"), 2).unwrap().len(), 2);
}

pub(super) fn a_pinned_note_comes_first_and_a_removed_one_takes_its_links(store: &dyn Store) {
    let pinned = store.write_note(&note("alice", None, "Style", "Tabs, not spaces, in every file")).unwrap();
    let newer = store.write_note(&note("alice", Some("/w/a"), "Files", "Every file ends with a newline")).unwrap();
    assert_eq!(store.pin_note("alice", pinned, true, 16).unwrap(), PinOutcome::Done);
    assert_eq!(store.pin_note("bob", pinned, false, 16).unwrap(), PinOutcome::NoNote, "another owner's note");
    let hits: Vec<(i64, bool)> =
        store.search_notes(ALICE, &words("file"), 10).unwrap().iter().map(|(n, _)| (n.id, n.pinned)).collect();
    assert_eq!(hits, [(pinned, true), (newer, false)]);
    let recent: Vec<i64> = store.recent_notes(ALICE, 10).unwrap().iter().map(|n| n.id).collect();
    assert_eq!(recent, [pinned, newer]);
    // The owner's notes of every workspace.
    let other = store.write_note(&note("alice", Some("/w/b"), "There", "Only there")).unwrap();
    let all: Vec<i64> = store.owner_notes("alice", 10).unwrap().iter().map(|n| n.id).collect();
    assert_eq!(all, [pinned, other, newer]);

    assert!(store.link_notes(&NoteLink { from_id: newer, to_id: pinned, relation: "related".into() }).unwrap());
    assert!(!store.remove_note("bob", pinned).unwrap());
    assert!(store.remove_note("alice", pinned).unwrap());
    assert_eq!(store.note(ALICE, pinned).unwrap(), None);
    assert_eq!(store.note_links(newer).unwrap(), []);
    // The full-text index forgot it too.
    assert!(store.search_notes(ALICE, &words("tabs"), 10).unwrap().is_empty());
    assert!(!store.remove_note("alice", pinned).unwrap());
}

pub(super) fn pins_at_once_stop_at_the_limit_and_the_rest_are_told_full(store: &dyn Store) {
    const MAX: usize = 16;
    let pinned = |owner| store.owner_notes(owner, 100).unwrap().iter().filter(|n| n.pinned).count();
    let ids: Vec<i64> =
        (0..24).map(|i| store.write_note(&note("alice", None, &format!("Rule {i}"), "A rule")).unwrap()).collect();
    // Every pin at once (two conversations, a tool and the CLI): each counts and pins in one go.
    let outcomes: Vec<PinOutcome> = std::thread::scope(|scope| {
        let pins: Vec<_> =
            ids.iter().map(|&id| scope.spawn(move || store.pin_note("alice", id, true, MAX).unwrap())).collect();
        pins.into_iter().map(|p| p.join().unwrap()).collect()
    });
    let told = |outcome| outcomes.iter().filter(|o| **o == outcome).count();
    assert_eq!((told(PinOutcome::Done), told(PinOutcome::Full)), (MAX, ids.len() - MAX), "{outcomes:?}");
    assert_eq!(pinned("alice"), MAX);

    // When full: pinning a pinned note again is done, unpinning is, another owner's pin is.
    let done: Vec<i64> =
        ids.iter().zip(&outcomes).filter(|(_, o)| **o == PinOutcome::Done).map(|(id, _)| *id).collect();
    assert_eq!(store.pin_note("alice", done[0], true, MAX).unwrap(), PinOutcome::Done);
    let bobs = store.write_note(&note("bob", None, "Bob's", "His rule")).unwrap();
    assert_eq!(store.pin_note("bob", bobs, true, MAX).unwrap(), PinOutcome::Done);

    // Notes written pinned at once, after four unpins: four are written, the rest refused;
    // an unpinned note is written whatever the count.
    for &id in &done[..4] {
        assert_eq!(store.pin_note("alice", id, false, MAX).unwrap(), PinOutcome::Done);
    }
    let written: Vec<Option<i64>> = std::thread::scope(|scope| {
        let writes: Vec<_> = (0..12)
            .map(|i| {
                let new = NewNote { pinned: true, ..note("alice", None, &format!("Law {i}"), "A law") };
                scope.spawn(move || store.write_note_within(&new, MAX).unwrap())
            })
            .collect();
        writes.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(written.iter().flatten().count(), 4, "{written:?}");
    assert_eq!(pinned("alice"), MAX);
    assert!(store.write_note_within(&note("alice", None, "Plain", "Not pinned"), MAX).unwrap().is_some());
    assert_eq!(store.count_notes(NoteScope { owner: "alice", workspace: None }).unwrap(), 24 + 4 + 1);
}
