use super::*;

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn a_restore_puts_changed_files_back_and_removes_created_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "a.txt", "before");
    write(&ws, "keep.txt", "kept");
    let snapshots = Snapshots::new(&dir.path().join("data"));
    let repo = snapshots.open(&ws).await;
    assert_eq!(repo.refs("t/").await.unwrap(), Vec::<String>::new(), "no repository yet: no refs");
    assert_eq!(repo.get_ref("t/1/before").await, None);
    let before = repo.snapshot().await.unwrap();
    repo.set_ref("t/1/before", &before).await.unwrap();

    write(&ws, "a.txt", "after");
    write(&ws, "new/deep.txt", "new");
    let after = repo.snapshot().await.unwrap();
    let changes = repo.changes(&before, &after).await.unwrap();
    let expected =
        vec![Change { path: "a.txt".into(), created: false }, Change { path: "new/deep.txt".into(), created: true }];
    assert_eq!(changes, expected);
    assert_eq!(repo.get_ref("t/1/before").await.as_deref(), Some(before.as_str()));
    assert_eq!(repo.refs("t/").await.unwrap(), ["t/1/before"]);

    repo.restore(&before, &["a.txt", "new/deep.txt"]).await.unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "before");
    assert!(!ws.join("new").exists(), "the created file and its directory are gone");
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "kept");
    repo.delete_ref("t/1/before").await.unwrap();
    assert_eq!(repo.get_ref("t/1/before").await, None);
    drop(repo);

    // Another path is another repository; the same path is the same one.
    let again = snapshots.open(&ws).await;
    assert_eq!(again.snapshot().await.unwrap(), before);
}
