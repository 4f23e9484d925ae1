use super::*;
use superpi_store::{Commit, SqliteStore};

fn conversation(store: &dyn Store, parent_id: Option<i64>) -> i64 {
    let new = NewConversation {
        owner: "local".into(),
        harness: "superpi-code".into(),
        model: "mock".into(),
        mode: "auto".into(),
        parent_id,
        ..NewConversation::default()
    };
    store.create_conversation(&new).unwrap().id
}

/// Stores the parent's `subagent_started` naming `child` at `seq`.
fn started(store: &dyn Store, parent: i64, child: i64, seq: u64) {
    let mut event = Event::subagent_started(parent, None, child, "superpi-planner", "look");
    event.seq = seq;
    let wire = event.to_json();
    let commit = Commit {
        conversation_id: parent,
        seq,
        event_type: "subagent_started",
        wire: &wire,
        entry: None,
        turn_status: None,
        lease: None,
        live: &[],
    };
    store.commit(&commit).unwrap();
}

#[test]
fn the_depth_is_the_number_of_subagent_steps_up_the_stored_parent_chain() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("s.sqlite")).unwrap();
    let person = conversation(&store, None);
    let child = conversation(&store, Some(person));
    // Another child the parent started first: the event that names `child` is the second.
    let sibling = conversation(&store, Some(person));
    started(&store, person, sibling, 1);
    started(&store, person, child, 2);
    let grandchild = conversation(&store, Some(child));
    started(&store, child, grandchild, 1);
    assert_eq!(stored_depth(&store, person).unwrap(), 0);
    assert_eq!(stored_depth(&store, child).unwrap(), 1);
    assert_eq!(stored_depth(&store, sibling).unwrap(), 1);
    assert_eq!(stored_depth(&store, grandchild).unwrap(), 2);

    // A fork records its source as its parent without being its subagent: a fork of a
    // person's conversation is a person's, a fork of a subagent's is as deep as it.
    let person_fork = store.fork(&store.conversation(person).unwrap().unwrap(), "local", None).unwrap();
    assert_eq!(person_fork.parent_id, Some(person));
    assert_eq!(stored_depth(&store, person_fork.id).unwrap(), 0);
    let child_fork = store.fork(&store.conversation(child).unwrap().unwrap(), "local", None).unwrap();
    assert_eq!(stored_depth(&store, child_fork.id).unwrap(), 1);
    // A conversation whose parent never named it (made but never started) is not a subagent.
    let unstarted = conversation(&store, Some(person));
    assert_eq!(stored_depth(&store, unstarted).unwrap(), 0);
}
