use super::*;

fn artifact<'a>(conversation_id: i64, name: &'a str, bytes: &'a [u8], created_at_ms: i64) -> NewArtifact<'a> {
    NewArtifact { conversation_id, name, media_type: "text/plain", bytes, created_at_ms }
}

/// Stored with their bytes, replaced by name, bounded per conversation, listed per owner
/// newest first, and gone with their conversation.
pub(super) fn artifacts_are_kept_replaced_by_name_bounded_and_listed_per_owner(store: &dyn Store) {
    let mine = new_conv(store).id;
    let binary: &[u8] = &[0, 1, 0xff, b'\n'];
    let first = store.put_artifact(&artifact(mine, "a.bin", binary, 10), 2).unwrap().unwrap();
    assert_eq!((first.size, first.media_type.as_str()), (4, "text/plain"));
    let (row, bytes) = store.artifact(mine, "a.bin").unwrap().unwrap();
    assert_eq!((row, bytes.as_slice()), (first, binary));
    // A second write of a name replaces it whole, however full the conversation.
    store.put_artifact(&artifact(mine, "b.txt", b"bee", 20), 2).unwrap().unwrap();
    assert!(store.put_artifact(&artifact(mine, "c.txt", b"sea", 30), 2).unwrap().is_none(), "a third of two");
    assert_eq!(store.artifact(mine, "c.txt").unwrap(), None);
    let replaced = store.put_artifact(&artifact(mine, "a.bin", b"again", 40), 2).unwrap().unwrap();
    assert_eq!(store.artifact(mine, "a.bin").unwrap().unwrap(), (replaced, b"again".to_vec()));

    // Another owner's conversation is not listed with the owner's.
    let theirs =
        store.create_conversation(&NewConversation { owner: "someone-else".into(), ..Default::default() }).unwrap().id;
    store.put_artifact(&artifact(theirs, "a.bin", b"theirs", 50), 2).unwrap().unwrap();
    let names = |owner: &str, conversation| -> Vec<(i64, String)> {
        let rows = store.artifacts(owner, conversation).unwrap();
        rows.into_iter().map(|row| (row.conversation_id, row.name)).collect()
    };
    assert_eq!(names("local", None), [(mine, "a.bin".to_string()), (mine, "b.txt".to_string())]);
    assert_eq!(names("local", Some(mine)).len(), 2);
    assert!(names("local", Some(theirs)).is_empty());
    assert_eq!(names("someone-else", None), [(theirs, "a.bin".to_string())]);

    assert!(store.delete_conversation(mine).unwrap());
    assert!(names("local", None).is_empty());
    assert_eq!(store.artifact(mine, "b.txt").unwrap(), None);
    assert!(store.artifact(theirs, "a.bin").unwrap().is_some());
}
