use super::*;
use rusqlite::Connection;
use sqlite::MIGRATIONS;
use superpi_proto::{ContentBlock, Role};

#[path = "store_lease_tests.rs"]
mod leases;
use leases::*;
#[path = "store_forwarding_tests.rs"]
mod forwarding;
use forwarding::*;
#[path = "store_memory_tests.rs"]
mod memory;
use memory::*;
#[path = "store_artifact_tests.rs"]
mod artifacts;
use artifacts::*;
#[path = "store_schedule_tests.rs"]
mod schedules;
use schedules::*;

fn new_conv(store: &dyn Store) -> ConversationRow {
    store
        .create_conversation(&NewConversation {
            owner: "local".into(),
            harness: "superpi-code".into(),
            model: "mock".into(),
            mode: "accept-edits".into(),
            workspace: Some("/w".into()),
            title: None,
            parent_id: None,
            settings: ConversationSettings::default(),
        })
        .unwrap()
}

#[test]
fn migrations_run_on_a_fresh_file_and_again_on_an_existing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let id = {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
        new_conv(&store).id
    };
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
    assert_eq!(store.conversation(id).unwrap().unwrap().harness, "superpi-code");
    assert_eq!(store.journal_mode().unwrap(), "wal");
}

/// The version before pinned notes, where the memory tests below start.
const BEFORE_PINS: usize = 12;

#[test]
fn a_sqlite_store_with_notes_migrates_to_pinned_notes_keeping_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    {
        let conn = Connection::open(&path).unwrap();
        for (_, sql) in &MIGRATIONS[..BEFORE_PINS] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", BEFORE_PINS as i64).unwrap();
        conn.execute_batch(
            "INSERT INTO memories (owner, workspace, title, body, created_at_ms) VALUES ('alice', NULL, 'Tea', 'Green tea', 1)",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
    a_note_from_before_pins_is_unpinned_and_found(&store);
}

#[test]
fn a_postgres_store_with_notes_migrates_to_pinned_notes_keeping_them() {
    let Some(server) = super::test_postgres::shared() else { return };
    let url = server.new_database();
    let mut sql: Vec<&str> = postgres::MIGRATIONS[..BEFORE_PINS].iter().map(|(_, sql)| *sql).collect();
    let version = format!(
        "CREATE TABLE superpi_schema (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version BIGINT NOT NULL);
         INSERT INTO superpi_schema (version) VALUES ({BEFORE_PINS});
         INSERT INTO memories (owner, workspace, title, body, created_at_ms) VALUES ('alice', NULL, 'Tea', 'Green tea', 1);"
    );
    sql.push(&version);
    server.query(&url, &sql.join("\n;\n"));
    let store = PostgresStore::connect(&url).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
    a_note_from_before_pins_is_unpinned_and_found(&store);
}

fn a_note_from_before_pins_is_unpinned_and_found(store: &dyn Store) {
    let scope = NoteScope { owner: "alice", workspace: Some("/w") };
    let hits = store.search_notes(scope, &["tea".to_string()], 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(!hits[0].0.pinned && hits[0].0.workspace.is_none());
    assert_eq!(store.pin_note("alice", hits[0].0.id, true, 16).unwrap(), PinOutcome::Done);
    assert!(store.note(scope, hits[0].0.id).unwrap().unwrap().pinned);
}

#[test]
fn a_database_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    {
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    assert!(matches!(SqliteStore::open(&path), Err(StoreError::TooNew { found: 99, .. })));
}

fn a_turn_status_is_committed_with_its_event_or_not_at_all(store: &dyn Store) {
    let conv = new_conv(store);
    let turn_id = store.create_turn(conv.id, &Message::user_text("go")).unwrap();
    let end = |seq: u64| Commit {
        conversation_id: conv.id,
        seq,
        event_type: "turn_completed",
        wire: "{}",
        entry: None,
        turn_status: Some(TurnStatus { turn_id, status: "completed", error: None }),
        lease: None,
        live: &[],
    };
    store.commit(&end(1)).unwrap();
    assert_eq!(store.turn_status(turn_id).unwrap().as_deref(), Some("completed"));
    store.set_turn_status(turn_id, "running", None).unwrap();
    // A refused event (its seq is taken) leaves the status as it was.
    assert!(store.commit(&end(1)).is_err());
    assert_eq!(store.turn_status(turn_id).unwrap().as_deref(), Some("running"));
}

fn commits_store_events_and_entries_together_and_replay_in_order(store: &dyn Store) {
    let conv = new_conv(store);
    let msg = Message::user_text("hello");
    store
        .commit(&Commit {
            conversation_id: conv.id,
            seq: 1,
            event_type: "message_completed",
            wire: "{\"seq\":1}",
            entry: Some((EntryKind::User, None, &msg)),
            turn_status: None,
            lease: None,
            live: &[],
        })
        .unwrap();
    store
        .commit(&Commit {
            conversation_id: conv.id,
            seq: 5,
            event_type: "turn_started",
            wire: "{\"seq\":5}",
            entry: None,
            turn_status: None,
            lease: None,
            live: &[],
        })
        .unwrap();
    assert_eq!(store.head_seq(conv.id).unwrap(), 5);
    let events = store.events_page(conv.id, 0, u64::MAX, 100, usize::MAX).unwrap();
    assert_eq!(events.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1, 5]);
    assert_eq!(store.events_page(conv.id, 1, 4, 100, usize::MAX).unwrap(), vec![]);
    let entries = store.entries(conv.id).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].message.content, vec![ContentBlock::text("hello")]);
    assert_eq!(entries[0].message.role, Role::User);
    // The latest events of a type, latest first.
    for (seq, event_type) in [(6, "plan_updated"), (7, "turn_started"), (8, "plan_updated")] {
        commit_event(store, conv.id, seq, event_type, &format!("{{\"seq\":{seq}}}"));
    }
    let plans = store.latest_events(conv.id, "plan_updated", 5).unwrap();
    assert_eq!(plans, vec![(8, "{\"seq\":8}".to_string()), (6, "{\"seq\":6}".to_string())]);
    assert_eq!(store.latest_events(conv.id, "plan_updated", 1).unwrap().len(), 1);
    assert_eq!(store.latest_events(conv.id, "compaction_completed", 1).unwrap(), vec![]);
    // A seq is committed once: a duplicate is refused, not overwritten.
    assert!(
        store
            .commit(&Commit {
                conversation_id: conv.id,
                seq: 5,
                event_type: "x",
                wire: "{}",
                entry: None,
                turn_status: None,
                lease: None,
                live: &[],
            })
            .is_err()
    );
}

/// Commits an event without an entry at `seq`.
fn commit_event(store: &dyn Store, conversation_id: i64, seq: u64, event_type: &str, wire: &str) {
    let commit =
        Commit { conversation_id, seq, event_type, wire, entry: None, turn_status: None, lease: None, live: &[] };
    store.commit(&commit).unwrap();
}

/// Commits a user message at `seq` with its event's wire JSON.
fn commit_user(store: &dyn Store, conversation_id: i64, seq: u64, text: &str, wire: &str) {
    let msg = Message::user_text(text);
    let commit = Commit {
        conversation_id,
        seq,
        event_type: "message_completed",
        wire,
        entry: Some((EntryKind::User, None, &msg)),
        turn_status: None,
        lease: None,
        live: &[],
    };
    store.commit(&commit).unwrap();
}

fn pages_stop_at_their_count_or_bytes_and_say_whether_more_follow(store: &dyn Store) {
    let conv = new_conv(store);
    for seq in 1..=5u64 {
        commit_user(store, conv.id, seq, &format!("message {seq}"), &format!("{{\"seq\":{seq}}}"));
    }
    let seqs = |page: Vec<(u64, String)>| page.into_iter().map(|e| e.0).collect::<Vec<_>>();
    assert_eq!(seqs(store.events_page(conv.id, 1, 4, 2, usize::MAX).unwrap()), [2, 3]);
    // Bytes (9 an event): the event that reaches the bound is the last; one always comes.
    assert_eq!(seqs(store.events_page(conv.id, 0, u64::MAX, 100, 18).unwrap()), [1, 2]);
    assert_eq!(seqs(store.events_page(conv.id, 0, u64::MAX, 100, 1).unwrap()), [1]);
    assert_eq!(seqs(store.events_page(conv.id, 5, u64::MAX, 100, 1).unwrap()), Vec::<u64>::new());

    let page = |after, most, bytes| {
        let (entries, more) = store.entries_page(conv.id, after, most, bytes).unwrap();
        (entries.iter().map(|e| e.seq).collect::<Vec<_>>(), more)
    };
    assert_eq!(page(0, 2, usize::MAX), (vec![1, 2], true));
    assert_eq!(page(3, 2, usize::MAX), (vec![4, 5], false));
    assert_eq!(page(0, 100, 1), (vec![1], true));
    assert_eq!(page(4, 100, 1), (vec![5], false));
    assert_eq!(page(5, 100, usize::MAX), (vec![], false));
    assert_eq!(store.entries(conv.id).unwrap()[4].message.text(), "message 5");
}

fn list_pages_by_position_match_pages_by_offset(store: &dyn Store) {
    // Created within the same milliseconds mostly: ties go by id, and a position keeps them.
    let ids: Vec<i64> = (0..7).map(|_| new_conv(store).id).collect();
    let mut by_offset = Vec::new();
    let mut by_position = Vec::new();
    let mut from = ListFrom::Offset(0);
    for page in 0..4u32 {
        let offset_page = store.list_conversations("local", 3, ListFrom::Offset(page * 3)).unwrap();
        by_offset.extend(offset_page.iter().map(|listed| listed.row.id));
        let position_page = store.list_conversations("local", 3, from).unwrap();
        if let Some(last) = position_page.last() {
            from = ListFrom::After { updated_at_ms: last.updated_at_ms, id: last.row.id };
        }
        by_position.extend(position_page.iter().map(|listed| listed.row.id));
    }
    let mut latest_first = ids.clone();
    latest_first.reverse();
    assert_eq!(by_offset, latest_first);
    assert_eq!(by_position, latest_first);
    assert!(store.list_conversations("someone-else", 3, ListFrom::Offset(0)).unwrap().is_empty());
}

/// What a page says of each row's events is what the one-row reads say: the head seq and the
/// last `usage_updated`.
fn a_list_page_reads_each_rows_head_and_last_usage_with_it(store: &dyn Store) {
    let [quiet, talked, priced] = [(); 3].map(|_| new_conv(store).id);
    commit_user(store, talked, 1, "hi", "{}");
    let usage = |seq: u64, cost: f64| {
        let wire = format!("{{\"type\":\"usage_updated\",\"total_cost_usd\":{cost}}}");
        commit_event(store, priced, seq, "usage_updated", &wire);
        wire
    };
    usage(1, 0.5);
    let last = usage(2, 0.75);
    commit_user(store, priced, 3, "and then", "{}");
    for from in [ListFrom::Offset(0), ListFrom::After { updated_at_ms: i64::MAX, id: 0 }] {
        let page = store.list_conversations("local", 10, from).unwrap();
        let facts: Vec<(i64, u64, Option<&str>)> =
            page.iter().map(|l| (l.row.id, l.head_seq, l.last_usage.as_deref())).collect();
        assert_eq!(facts, [(priced, 3, Some(last.as_str())), (talked, 1, None), (quiet, 0, None)]);
        assert_eq!(store.head_seq(priced).unwrap(), 3);
        assert_eq!(store.latest_events(priced, "usage_updated", 1).unwrap()[0].1, last);
    }
}

fn fork_copies_history_up_to_a_seq(store: &dyn Store) {
    let conv = new_conv(store);
    for seq in 1..=3u64 {
        let wire = format!("{{\"type\":\"message_completed\",\"conversation_id\":{},\"seq\":{seq}}}", conv.id);
        commit_user(store, conv.id, seq, &format!("m{seq}"), &wire);
    }
    let fork = store.fork(&conv, "local", Some(2)).unwrap();
    assert_eq!(fork.parent_id, Some(conv.id));
    let texts: Vec<String> = store.entries(fork.id).unwrap().iter().map(|e| e.message.text()).collect();
    assert_eq!(texts, ["m1", "m2"]);
    let events = store.events_page(fork.id, 0, u64::MAX, 100, usize::MAX).unwrap();
    assert_eq!(events.len(), 2);
    assert!(events[0].1.contains(&format!("\"conversation_id\":{}", fork.id)));
}

fn a_deleted_conversation_takes_what_it_holds_and_leaves_its_forks(store: &dyn Store) {
    let conv = new_conv(store);
    let msg = Message::user_text("hello");
    let turn_id = store.create_turn(conv.id, &msg).unwrap();
    let commit = Commit {
        conversation_id: conv.id,
        seq: 1,
        event_type: "message_completed",
        wire: "{}",
        entry: Some((EntryKind::User, Some(turn_id), &msg)),
        turn_status: Some(TurnStatus { turn_id, status: "completed", error: None }),
        lease: None,
        live: &[],
    };
    store.commit(&commit).unwrap();
    store.bind_external("acp", "local", "s1", conv.id).unwrap();
    store.set_permission_overrides(conv.id, "{}").unwrap();
    let fork = store.fork(&conv, "local", None).unwrap();
    let other = new_conv(store);

    assert!(store.delete_conversation(conv.id).unwrap());
    assert_eq!(store.conversation(conv.id).unwrap(), None);
    assert!(store.entries(conv.id).unwrap().is_empty());
    assert!(store.events_page(conv.id, 0, u64::MAX, 10, usize::MAX).unwrap().is_empty());
    assert_eq!(store.turn_status(turn_id).unwrap(), None);
    assert_eq!(store.find_external("acp", "local", "s1").unwrap(), None);
    assert_eq!(store.permission_overrides(conv.id).unwrap(), None);
    // The fork keeps its copy, no longer linked; another conversation is untouched.
    let fork = store.conversation(fork.id).unwrap().unwrap();
    assert_eq!((fork.parent_id, store.entries(fork.id).unwrap().len()), (None, 1));
    assert!(store.conversation(other.id).unwrap().is_some());
    assert!(!store.delete_conversation(conv.id).unwrap(), "a second delete finds nothing");
}

fn settings_are_kept_and_forks_inherit_them(store: &dyn Store) {
    let high = ConversationSettings {
        effort: Some(superpi_proto::Effort::High),
        tool_limit: Some(vec!["read".into(), "ls".into()]),
        extra_dirs: vec!["/elsewhere".into()],
        system_prompt: Some("Answer in French.".into()),
        mode_ceiling: Some("plan".into()),
    };
    let made = store
        .create_conversation(&NewConversation { owner: "local".into(), settings: high.clone(), ..Default::default() })
        .unwrap();
    assert_eq!(made.settings, high);
    let conv = new_conv(store);
    assert_eq!(conv.settings, ConversationSettings::default());
    store.set_settings(conv.id, &high).unwrap();
    assert_eq!(store.conversation(conv.id).unwrap().unwrap().settings, high);
    assert_eq!(store.fork(&conv, "local", None).unwrap().settings, high);
    store.set_settings(conv.id, &ConversationSettings::default()).unwrap();
    assert_eq!(store.conversation(conv.id).unwrap().unwrap().settings.effort, None);
}

#[test]
fn a_settings_column_this_build_cannot_read_is_left_at_its_defaults() {
    assert_eq!(ConversationSettings::from_column("{}"), ConversationSettings::default());
    assert_eq!(ConversationSettings::from_column("not json"), ConversationSettings::default());
    let newer = ConversationSettings::from_column(r#"{"effort": "ultra", "later": 1}"#);
    assert_eq!(newer.effort, None);
    let kept = ConversationSettings::from_column(r#"{"effort": "low", "later": 1}"#);
    assert_eq!(kept.effort, Some(superpi_proto::Effort::Low));
    assert_eq!(kept.to_column(), r#"{"effort":"low"}"#);
}

fn external_ids_map_per_frontend_and_principal(store: &dyn Store) {
    let conv = new_conv(store);
    store.bind_external("gateway", "alice", "s1", conv.id).unwrap();
    assert_eq!(store.find_external("gateway", "alice", "s1").unwrap(), Some(conv.id));
    assert_eq!(store.find_external("gateway", "bob", "s1").unwrap(), None);
    assert_eq!(store.find_external("acp", "alice", "s1").unwrap(), None);
}

fn an_image_is_stored_once_by_its_digest(store: &dyn Store) {
    let digest = "ab".repeat(32);
    assert_eq!(store.image(&digest).unwrap(), None);
    store.put_image(&digest, "image/png", &[0x89, b'P', 0, 255]).unwrap();
    // The same digest again keeps what was stored (the same bytes, whoever sends them).
    store.put_image(&digest, "image/png", &[1]).unwrap();
    assert_eq!(store.image(&digest).unwrap(), Some(vec![0x89, b'P', 0, 255]));
    assert_eq!(store.image(&"cd".repeat(32)).unwrap(), None);
}

fn permission_overrides_are_stored_per_conversation_and_replaced(store: &dyn Store) {
    let (a, b) = (new_conv(store).id, new_conv(store).id);
    assert_eq!(store.permission_overrides(a).unwrap(), None);
    store.set_permission_overrides(a, r#"{"allow_tools":["x"]}"#).unwrap();
    store.set_permission_overrides(a, r#"{"allow_commands":["make"]}"#).unwrap();
    assert_eq!(store.permission_overrides(a).unwrap().as_deref(), Some(r#"{"allow_commands":["make"]}"#));
    assert_eq!(store.permission_overrides(b).unwrap(), None);
}

#[test]
fn permission_overrides_outlive_the_store_that_wrote_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let a = {
        let store = SqliteStore::open(&path).unwrap();
        let a = new_conv(&store).id;
        store.set_permission_overrides(a, r#"{"allow_commands":["make"]}"#).unwrap();
        a
    };
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.permission_overrides(a).unwrap().as_deref(), Some(r#"{"allow_commands":["make"]}"#));
}

#[test]
fn every_migration_file_of_both_engines_is_run_and_numbered_alike() {
    let names = |m: &[(&'static str, &'static str)]| m.iter().map(|(name, _)| name.to_string()).collect::<Vec<_>>();
    assert_eq!(names(sqlite::MIGRATIONS), names(postgres::MIGRATIONS));
    // A file in either folder that the list misses would never run.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for folder in [dir.clone(), dir.join("postgres")] {
        let mut files: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".sql").map(str::to_string))
            .collect();
        files.sort();
        assert_eq!(files, names(sqlite::MIGRATIONS), "{}", folder.display());
    }
}

/// Deleting one conversation among a million reads no table whole: SQLite checks each foreign
/// key of a deleted row through an index led by the referring column (or reads the table), and
/// each statement of the delete searches by index.
#[test]
fn every_reference_between_rows_leads_an_index_so_a_delete_reads_no_table_whole() {
    let store = SqliteStore::open_in_memory().unwrap();
    let conn = store.conn();
    let strings = |sql: &str, arg: &str| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([arg], |r| r.get::<_, String>(0)).unwrap().collect::<Result<_, _>>().unwrap()
    };
    let tables = strings("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE ?1", "sqlite_%");
    for table in &tables {
        let mut leading = strings(
            "SELECT ii.name FROM pragma_index_list(?1) il, pragma_index_info(il.name) ii WHERE ii.seqno = 0",
            table,
        );
        // An INTEGER PRIMARY KEY is the rowid itself.
        leading.extend(strings("SELECT name FROM pragma_table_info(?1) WHERE pk = 1 AND type = 'INTEGER'", table));
        for column in strings("SELECT \"from\" FROM pragma_foreign_key_list(?1)", table) {
            assert!(leading.contains(&column), "{table}.{column} refers to another row and leads no index");
        }
    }
    for sql in DELETE_CONVERSATION {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let plan: Vec<String> =
            stmt.query_map([1_i64], |r| r.get::<_, String>(3)).unwrap().collect::<Result<_, _>>().unwrap();
        assert!(plan.iter().all(|step| !step.starts_with("SCAN")), "{sql}: {plan:?}");
    }
}

#[test]
fn postgres_migrates_once_a_second_kernel_shares_the_database_and_a_newer_one_is_refused() {
    let Some(server) = super::test_postgres::shared() else { return };
    let url = server.new_database();
    let first = PostgresStore::connect(&url).unwrap();
    assert_eq!(first.schema_version().unwrap(), MIGRATIONS.len());
    let id = new_conv(&first).id;
    let second = PostgresStore::connect(&url).unwrap();
    assert_eq!(second.schema_version().unwrap(), MIGRATIONS.len());
    assert_eq!(second.conversation(id).unwrap().unwrap().harness, "superpi-code");
    // A database a newer build migrated is refused, as on SQLite.
    server.query(&url, "UPDATE superpi_schema SET version = 99");
    let refused = PostgresStore::connect(&url).err().map(|e| e.to_string());
    assert_eq!(refused, Some(StoreError::TooNew { found: 99, known: MIGRATIONS.len() }.to_string()));
}

#[test]
fn a_connection_strings_tls_settings_are_read_in_either_form() {
    use crate::postgres::connection::{Check, Roots, tls_settings};
    let (rest, tls) = tls_settings(
        "host=db.example.com password='a b\\'c' dbname = superpi sslmode = verify-ca sslrootcert='/etc/ca dir/rds.pem'",
    )
    .unwrap();
    assert_eq!(rest, "host=db.example.com password='a b\\'c' dbname = superpi");
    assert_eq!(rest.parse::<tokio_postgres::Config>().unwrap().get_password(), Some(&b"a b'c"[..]));
    assert_eq!((tls.check, tls.roots), (Some(Check::Chain), Roots::File("/etc/ca dir/rds.pem".into())));

    let url = "postgresql://u:p@db.example.com:5432/superpi?sslmode=verify-full&sslrootcert=%2Fetc%2Frds%20ca.pem&application_name=x";
    let (rest, tls) = tls_settings(url).unwrap();
    assert_eq!(rest, "postgresql://u:p@db.example.com:5432/superpi?application_name=x");
    assert_eq!((tls.check, tls.roots), (Some(Check::Full), Roots::File("/etc/rds ca.pem".into())));

    let (rest, tls) = tls_settings("postgres://db/superpi?sslmode=require&sslrootcert=system").unwrap();
    assert_eq!((rest.as_str(), tls.check, tls.roots), ("postgres://db/superpi", Some(Check::Full), Roots::System));
    for plain in ["dbname=superpi", "dbname=superpi sslmode=disable", "postgres://db/superpi?sslmode=prefer"] {
        assert_eq!(tls_settings(plain).unwrap().1.check, None, "{plain}");
    }
    let Err(StoreError::Config(message)) = tls_settings("dbname=superpi sslmode=verify") else { panic!() };
    assert!(message.contains("sslmode `verify`"), "{message}");
    // What does not read as pairs goes on as it is, for the driver to refuse.
    assert_eq!(tls_settings("dbname='open").unwrap().0, "dbname='open");
}

#[test]
fn postgres_over_tls_checks_the_servers_certificate_as_the_connection_string_says() {
    let Some(server) = super::test_postgres::shared_tls() else { return };
    let database = server.new_database();
    let ca = format!("sslrootcert='{}'", server.ca_file().display());
    let connect = |host: &str, settings: &str| PostgresStore::connect(&server.over_tcp(&database, host, settings));
    let refused = |result: Result<PostgresStore, StoreError>| match result {
        Ok(_) => panic!("connected"),
        Err(err) => err.to_string(),
    };

    // With the CA that issued it, by the name it is for: every connection of the store is TLS.
    let store = connect("localhost", &format!("sslmode=verify-full {ca}")).unwrap();
    new_conv(&store);
    let tls_connections = "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid)
                           WHERE ssl AND datname = current_database()";
    let counted: usize = server.query(&database, tls_connections).parse().unwrap();
    assert!(counted >= postgres::POOL, "{counted} TLS connections");
    drop(store);

    // The system's roots do not know the test's CA.
    let message = refused(connect("localhost", "sslmode=require"));
    assert!(message.contains("certificate"), "{message}");
    // By an address its certificate does not name: refused by verify-full, taken by verify-ca.
    let message = refused(connect("127.0.0.1", &format!("sslmode=verify-full {ca}")));
    assert!(message.contains("certificate"), "{message}");
    connect("127.0.0.1", &format!("sslmode=verify-ca {ca}")).unwrap();
    let message = refused(connect("localhost", "sslmode=verify-full sslrootcert=/nonexistent/ca.pem"));
    assert!(message.contains("/nonexistent/ca.pem"), "{message}");
}

/// The behaviour every engine keeps: each test above runs on each engine, under its name in
/// `on_sqlite::` and `on_postgres::`.
macro_rules! on_each_engine {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::SqliteStore::open_in_memory().unwrap());
                }
            )*
        }

        /// On a database of its own on the test process's server (skipped, saying so, when
        /// the machine has no PostgreSQL and CI is not set).
        mod on_postgres {
            $(
                #[test]
                fn $name() {
                    let Some(server) = crate::test_postgres::shared() else { return };
                    super::$name(&super::PostgresStore::connect(&server.new_database()).unwrap());
                }
            )*
        }
    };
}

on_each_engine!(
    a_claim_takes_a_free_or_expired_lease_and_not_a_live_one,
    a_former_holders_commits_are_refused_once_another_kernel_took_over,
    a_claim_interrupts_what_the_former_holder_left_but_not_prompts_queued_for_the_next,
    orphans_are_conversations_with_work_and_no_live_lease,
    a_turn_status_is_committed_with_its_event_or_not_at_all,
    commits_store_events_and_entries_together_and_replay_in_order,
    pages_stop_at_their_count_or_bytes_and_say_whether_more_follow,
    list_pages_by_position_match_pages_by_offset,
    a_list_page_reads_each_rows_head_and_last_usage_with_it,
    fork_copies_history_up_to_a_seq,
    settings_are_kept_and_forks_inherit_them,
    a_deleted_conversation_takes_what_it_holds_and_leaves_its_forks,
    external_ids_map_per_frontend_and_principal,
    an_image_is_stored_once_by_its_digest,
    a_question_is_answered_once_and_dies_with_a_takeover,
    watchers_elsewhere_are_other_kernels_that_still_renew,
    running_names_the_conversations_with_a_turn_running,
    a_job_is_taken_once_by_the_holder_answered_once_and_run_again_after_a_takeover,
    permission_overrides_are_stored_per_conversation_and_replaced,
    notes_are_scoped_to_their_owner_and_workspace,
    search_stems_ranks_and_puts_superseded_notes_last,
    a_pinned_note_comes_first_and_a_removed_one_takes_its_links,
    pins_at_once_stop_at_the_limit_and_the_rest_are_told_full,
    a_tick_is_claimed_once_and_the_next_one_is_set_with_it,
    of_claims_racing_for_a_tick_one_wins,
    a_trigger_is_found_by_its_token_hash_with_its_secret,
    a_delivery_is_noted_once_and_forgotten_after_a_day,
    a_hand_off_stores_harness_mode_model_and_settings_at_once,
    the_days_spend_adds_up_per_owner_and_day,
    artifacts_are_kept_replaced_by_name_bounded_and_listed_per_owner
);

fn a_hand_off_stores_harness_mode_model_and_settings_at_once(store: &dyn Store) {
    let conv = new_conv(store);
    let settings = ConversationSettings { mode_ceiling: Some("plan".into()), ..Default::default() };
    store.set_harness(conv.id, "superpi-planner", ("plan", "strong"), &settings).unwrap();
    let row = store.conversation(conv.id).unwrap().unwrap();
    assert_eq!((row.harness.as_str(), row.mode.as_str(), row.model.as_str()), ("superpi-planner", "plan", "strong"));
    assert_eq!(row.settings, settings);
}

fn the_days_spend_adds_up_per_owner_and_day(store: &dyn Store) {
    assert_eq!(store.daily_spend("ann", 20_000).unwrap(), 0.0);
    assert_eq!(store.add_daily_spend("ann", 20_000, 0.5).unwrap(), 0.5);
    assert_eq!(store.add_daily_spend("ann", 20_000, 0.25).unwrap(), 0.75);
    assert_eq!(store.add_daily_spend("bob", 20_000, 1.0).unwrap(), 1.0);
    assert_eq!(store.add_daily_spend("ann", 20_001, 0.125).unwrap(), 0.125);
    let read = |owner, day| store.daily_spend(owner, day).unwrap();
    assert_eq!(
        (read("ann", 20_000), read("bob", 20_000), read("ann", 20_001), read("eve", 20_000)),
        (0.75, 1.0, 0.125, 0.0)
    );
}
