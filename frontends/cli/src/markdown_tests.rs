use super::*;

fn render(text: &str) -> String {
    let mut r = MarkdownRenderer::default();
    let mut out = r.push(text);
    out.push_str(&r.finish());
    out
}

#[test]
fn headings_lists_quotes_and_rules_are_styled_and_their_markers_go() {
    let out = render("# Title\n## Part\n### Small ###\n- one\n  * two\n1. three\n> said\n---\n");
    let expected = [
        paint(heading_style(1), "Title"),
        paint(heading_style(2), "Part"),
        paint(heading_style(3), "Small"),
        "• one".to_string(),
        "  • two".to_string(),
        "1. three".to_string(),
        format!("{}said", paint(quiet(), "│ ")),
        paint(quiet(), &"─".repeat(40)),
    ]
    .join("\n")
        + "\n";
    assert_eq!(out, expected);
}

#[test]
fn a_fenced_block_is_code_and_markdown_inside_it_is_left_alone() {
    let out = render("```rust\n# not a heading\nlet x = `y`;\n```\nafter `code`\n");
    let expected = [
        paint(quiet(), "```rust"),
        paint(code_style(), "# not a heading"),
        paint(code_style(), "let x = `y`;"),
        paint(quiet(), "```"),
        format!("after {}", paint(code_style(), "code")),
    ]
    .join("\n")
        + "\n";
    assert_eq!(out, expected);
    // A longer fence is closed only by one at least as long; tildes fence too.
    let out = render("````\n```\n````\n~~~\nx\n~~~\n");
    assert!(out.contains(&paint(code_style(), "```")), "{out:?}");
    assert!(out.contains(&paint(code_style(), "x")), "{out:?}");
}

#[test]
fn bold_and_inline_code_are_styled_and_unclosed_markers_stay() {
    assert_eq!(
        inline("a **b** and `c` d"),
        format!("a {} and {} d", paint(Style::new().bold(), "b"), paint(code_style(), "c"))
    );
    assert_eq!(inline("2 ** 3 and `open"), "2 ** 3 and `open");
    assert_eq!(inline("``"), "``");
    assert_eq!(inline("`**not bold**`"), paint(code_style(), "**not bold**"));
}

/// Deltas split anywhere render the same as the whole text, a line at a time: nothing of an
/// incomplete line is shown until its end comes (or the answer ends).
#[test]
fn streamed_deltas_render_as_the_whole_text_does() {
    let text = "# Plan\n\nSome **bold** words.\n```sh\nls -l\n```\n- done\nlast line without newline";
    let whole = render(text);
    for cut in 0..text.len() {
        if !text.is_char_boundary(cut) {
            continue;
        }
        let mut r = MarkdownRenderer::default();
        let first = r.push(&text[..cut]);
        assert!(first.is_empty() || first.ends_with('\n'), "only whole lines: {first:?}");
        let out = first + &r.push(&text[cut..]) + &r.finish();
        assert_eq!(out, whole, "cut at {cut}");
    }
    // Without the styles, the words are all there, in order.
    let plain = anstream::adapter::strip_str(&whole).to_string();
    for word in ["Plan", "bold", "ls -l", "• done", "last line without newline"] {
        assert!(plain.contains(word), "{word}: {plain}");
    }
}

#[test]
fn italics_links_and_their_look_alikes() {
    let italic = |t: &str| paint(Style::new().italic(), t);
    assert_eq!(inline("an *em* and _em_ word"), format!("an {} and {} word", italic("em"), italic("em")));
    assert_eq!(inline("**bold** then *it*"), format!("{} then {}", paint(Style::new().bold(), "bold"), italic("it")));
    // Not emphasis: spaces inside the markers, a product, snake_case, a lone star.
    for text in ["2 * 3 * 4", "a snake_case_name here", "* not a list here", "5*"] {
        assert_eq!(inline(text), text);
    }
    assert_eq!(
        inline("see [the docs](https://example.com/a_b) now"),
        format!("see {} {} now", paint(link_style(), "the docs"), paint(quiet(), "(https://example.com/a_b)"))
    );
    assert_eq!(inline("[https://x.org](https://x.org)"), paint(link_style(), "https://x.org"));
    for text in ["[no link]", "[a](b c)", "[](x)", "a [b] (c)"] {
        assert_eq!(inline(text), text);
    }
    assert_eq!(
        inline("`[a](b)` and `*x*`"),
        format!("{} and {}", paint(code_style(), "[a](b)"), paint(code_style(), "*x*"))
    );
}

#[test]
fn a_table_is_laid_out_in_columns_when_it_ends() {
    let mut r = MarkdownRenderer::default();
    assert_eq!(r.push("| name | n |\n|:-----|--:|\n| a | 1 |\n"), "", "held until the table ends");
    let out = r.push("| **bee** | 200 |\nafter\n");
    let bar = paint(quiet(), " │ ");
    let bold = |t: &str| paint(Style::new().bold(), t);
    let expected = [
        format!("{}{bar}  {}", bold("name"), bold("n")),
        paint(quiet(), "─────┼────"),
        format!("a   {bar}  1"),
        format!("{} {bar}200", bold("bee")),
        "after".to_string(),
    ]
    .join("\n")
        + "\n";
    assert_eq!(out, expected);
    // A table at the very end is shown by finish; rows without a delimiter row are text.
    assert_eq!(render("| x |\n|---|\n| y |"), format!("{}\n{}\ny", bold("x"), paint(quiet(), "─")));
    assert_eq!(render("| just | pipes |\nno table\n"), "| just | pipes |\nno table\n");
    // Inside a fence a pipe is code.
    assert!(render("```\n| a |\n```\n").contains(&paint(code_style(), "| a |")));
}
