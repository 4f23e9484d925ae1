use super::*;
use superpi_store::{Memories, SqliteStore};

fn note(title: &str) -> NewNote {
    NewNote { owner: "alice".into(), title: title.into(), body: format!("About {title}."), ..NewNote::default() }
}

#[test]
fn terms_are_lowercase_words_once_in_order() {
    assert_eq!(terms("Deploy, deploy: the DB's 2nd \"OR\" step"), ["deploy", "the", "db", "s", "2nd", "or", "step"]);
    assert!(terms(" -- ").is_empty());
}

#[test]
fn similarity_is_the_share_of_words_in_common() {
    assert_eq!(similarity("we deploy on fridays", "We deploy on Fridays."), 1.0);
    assert_eq!(similarity("a b c d", "a b c e"), 3.0 / 5.0);
    assert_eq!(similarity("a", "b"), 0.0);
}

#[test]
fn a_near_identical_note_is_found_and_a_different_one_is_not() {
    let store = SqliteStore::open_in_memory().unwrap();
    let scope = NoteScope { owner: "alice", workspace: None };
    let base =
        NewNote { body: "The release train leaves every second Tuesday at noon".into(), ..note("Release train") };
    let id = store.write_note(&base).unwrap();
    let again =
        NewNote { body: "The release train leaves every second Tuesday at noon!".into(), ..note("Release train") };
    let found = near_duplicates(&store, scope, &again).unwrap();
    assert_eq!(found.iter().map(|(n, s)| (n.id, *s)).collect::<Vec<_>>(), [(id, 1.0)]);
    let other = NewNote { body: "Lunch is at noon on Tuesday".into(), ..note("Lunch") };
    assert!(near_duplicates(&store, scope, &other).unwrap().is_empty());
    // Another owner's note is no duplicate of Alice's.
    let bob = NoteScope { owner: "bob", workspace: None };
    assert!(near_duplicates(&store, bob, &again).unwrap().is_empty());
}

#[test]
fn the_index_lists_titles_newest_first_within_its_budget() {
    let store = SqliteStore::open_in_memory().unwrap();
    let scope = NoteScope { owner: "alice", workspace: None };
    assert_eq!(index(&store, scope, INDEX_BUDGET_TOKENS).unwrap(), None);
    for i in 0..50 {
        store.write_note(&note(&format!("Topic number {i}"))).unwrap();
    }
    let full = index(&store, scope, 1 << 20).unwrap().unwrap();
    assert!(full.contains("(50 in all"));
    assert!(full.find("Topic number 49").unwrap() < full.find("Topic number 0").unwrap());
    assert!(!full.contains("more not listed"));
    // Bodies never enter it.
    assert!(!full.contains("About Topic"));
    let small = index(&store, scope, 150).unwrap().unwrap();
    assert!(tokens::text(&small) <= 150 + 25, "{} tokens", tokens::text(&small));
    assert!(small.contains("Topic number 49") && !small.contains("Topic number 0\n"));
    assert!(small.contains("more not listed: `memory_search` finds them"));
}

#[test]
fn facts_are_the_answers_list_items() {
    let answer = "Here they are:\n- Alice deploys on Tuesdays.\n  * The build uses make\n-not a fact\n- \nnone";
    assert_eq!(facts(answer), ["Alice deploys on Tuesdays.", "The build uses make"]);
    assert!(facts("none").is_empty());
    assert_eq!(facts(&"- x\n".repeat(100)).len(), MAX_FACTS);
}

#[tokio::test]
async fn a_harvest_writes_each_new_fact_once() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().unwrap());
    store.create_conversation(&superpi_store::NewConversation { owner: "alice".into(), ..Default::default() }).unwrap();
    store
        .write_note(&NewNote {
            owner: "alice".into(),
            title: "Old".into(),
            body: "The build uses make".into(),
            ..NewNote::default()
        })
        .unwrap();
    // The mock model echoes the prompt: its list items are the facts of the summary.
    let provider: SharedProvider = Arc::new(superpi_providers::MockProvider::new());
    let job = |summary: &str| Harvest {
        conversation_id: 1,
        owner: "alice".into(),
        model: "mock".into(),
        summary: summary.into(),
    };
    let written = harvest(
        store.clone(),
        provider.clone(),
        job("Work so far:\n- Alice deploys on Tuesdays.\n- The build uses make"),
    )
    .await;
    assert_eq!(written, 1);
    let scope = NoteScope { owner: "alice", workspace: None };
    let hits = store.search_notes(scope, &terms("tuesdays"), 10).unwrap();
    assert_eq!(hits.len(), 1);
    let note = &hits[0].0;
    assert_eq!(
        (note.body.as_str(), note.tags.as_slice()),
        ("Alice deploys on Tuesdays.", &["harvested".to_string()][..])
    );
    assert_eq!(note.source.as_deref(), Some("compaction of conversation 1"));
    // A second harvest of the same summary writes nothing new.
    assert_eq!(harvest(store.clone(), provider, job("- Alice deploys on Tuesdays.")).await, 0);
}

#[test]
fn a_pinned_note_is_always_in_the_index_with_its_text() {
    let store = SqliteStore::open_in_memory().unwrap();
    let scope = NoteScope { owner: "alice", workspace: None };
    let pinned = store.write_note(&NewNote { pinned: true, ..note("Oldest rule") }).unwrap();
    for i in 0..50 {
        store.write_note(&note(&format!("Topic number {i}"))).unwrap();
    }
    // A budget too small for any title still lists the pinned note, first, with its body.
    let small = index(&store, scope, 10).unwrap().unwrap();
    assert!(small.contains(&format!("- #{pinned} Oldest rule (pinned)")), "{small}");
    assert!(small.contains("About Oldest rule.") && !small.contains("Topic number"), "{small}");
    assert!(small.contains("50 more not listed"), "{small}");
}

fn at(id: i64, days_old: f64, pinned: bool) -> Note {
    Note {
        id,
        owner: "alice".into(),
        workspace: None,
        title: format!("n{id}"),
        body: String::new(),
        tags: Vec::new(),
        source: None,
        conversation_id: None,
        created_at_ms: NOW - (days_old * DAY) as i64,
        pinned,
        superseded: false,
    }
}

const NOW: i64 = 1_000_000_000_000;
const DAY: f64 = 86_400_000.0;

fn order(hits: Vec<(Note, f64)>, half_life_days: u64) -> Vec<i64> {
    let half_life = std::time::Duration::from_secs(half_life_days * 86_400);
    rank(hits, NOW, half_life).into_iter().map(|(n, _)| n.id).collect()
}

#[test]
fn recency_halves_a_notes_rank_every_half_life() {
    // A strong match 60 days old against a match half as strong from today.
    let hits = || vec![(at(1, 60.0, false), 1.0), (at(2, 0.0, false), 0.5)];
    // Thirty-day half-life: the old one counts a quarter (0.25 < 0.5).
    assert_eq!(order(hits(), 30), [2, 1]);
    // A year's half-life: it keeps most of its rank (0.89 > 0.5).
    assert_eq!(order(hits(), 365), [1, 2]);
    // Pinned beats any of it, however old and weak.
    let with_pin = vec![(at(1, 60.0, false), 1.0), (at(2, 0.0, false), 0.5), (at(3, 900.0, true), 0.01)];
    assert_eq!(order(with_pin, 30), [3, 2, 1]);
}
