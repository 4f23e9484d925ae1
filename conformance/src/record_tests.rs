use super::*;

fn row(check: &str, outcome: Outcome) -> Row {
    Row { protocol: "acp", check: check.into(), outcome }
}

fn tables(second: Outcome) -> Vec<Table> {
    vec![Table {
        protocol: "acp",
        columns: vec![
            Column { heading: "superpi".into(), rows: vec![row("a", Outcome::Pass), row("b|c", Outcome::Pass)] },
            Column {
                heading: "other 1.0".into(),
                // A name reported twice: the worse of the two is the cell.
                rows: vec![
                    row("a", Outcome::Pass),
                    row("a", Outcome::Fail("line one\nline two".into())),
                    row("b|c", second),
                ],
            },
        ],
    }]
}

#[test]
fn the_table_has_a_column_per_implementation_and_the_reasons_follow() {
    let block = render(&tables(Outcome::Skip("does not apply".into())));
    assert!(block.contains("| check | superpi | other 1.0 |"), "{block}");
    assert!(block.contains("| a | pass | FAIL |"), "{block}");
    assert!(block.contains("| b\\|c | pass | skip |"), "{block}");
    assert!(block.contains("#### other 1.0 (acp)\n\n- a: FAIL: line one\n- b|c: skip: does not apply\n"), "{block}");
    assert!(!block.contains("line two"), "{block}");
}

#[test]
fn a_changed_cell_differs_and_a_changed_reason_does_not() {
    let recorded = render(&tables(Outcome::Skip("why".into())));
    assert!(differences(&recorded, &render(&tables(Outcome::Skip("another why".into())))).is_empty());
    let diff = differences(&recorded, &render(&tables(Outcome::Pass)));
    assert_eq!(
        diff,
        vec![(Some("| b\\|c | pass | skip |".into()), None), (None, Some("| b\\|c | pass | pass |".into()))]
    );
}

#[test]
fn the_block_is_replaced_between_its_markers_or_appended() {
    let file = format!("# Title\n\ntext\n\n{BEGIN}\nold\n{END}\n\nafter\n");
    assert_eq!(block_of(&file), Some("\nold\n"));
    let updated = with_block(&file, "\nnew\n");
    assert_eq!(updated, format!("# Title\n\ntext\n\n{BEGIN}\nnew\n{END}\n\nafter\n"));
    let appended = with_block("# Title\n", "\nnew\n");
    assert_eq!(block_of(&appended), Some("\nnew\n"));
}
