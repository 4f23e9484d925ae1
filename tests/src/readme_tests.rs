use super::*;

fn block(body: &str) -> Block {
    Block { lang: "sh".into(), line: 10, heading: String::new(), body: body.into(), follows_directly: false }
}

#[test]
fn continuations_and_quotes_join_comments_are_cut_and_shown_output_is_kept() {
    let body = "# a comment line\nsuperpi doctor   # what tools reach\ncurl http://x/input \\\n  -d '{\"a\": 1,\n  \"b\": \"#no\"}'\n# 202 {\"ok\":true}   (remark)\n# not output\n";
    let commands = commands(&block(body));
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert_eq!(
        commands[0],
        Command { line: 12, text: "superpi doctor".into(), comment: "what tools reach".into(), shown: vec![] }
    );
    assert_eq!(commands[1].line, 13);
    assert_eq!(commands[1].text, "curl http://x/input -d '{\"a\": 1,\n  \"b\": \"#no\"}'");
    assert_eq!(commands[1].shown, ["202 {\"ok\":true}   (remark)"]);
}

#[test]
fn a_quote_left_open_is_reported_not_dropped() {
    let commands = commands(&block("superpi run 'never closed"));
    assert!(commands[0].comment.contains("unterminated"), "{commands:?}");
}

#[test]
fn the_notation_for_alternatives_expands_and_pipes_stay_pipes() {
    let jq = ["jq"];
    assert_eq!(alternatives("superpi kernel status | stop", &jq), ["superpi kernel status", "superpi kernel stop"]);
    assert_eq!(alternatives("superpi mcp list | remove fs", &jq), ["superpi mcp list", "superpi mcp remove fs"]);
    assert_eq!(
        alternatives("superpi completions bash|zsh|fish", &jq),
        ["superpi completions bash", "superpi completions zsh", "superpi completions fish"]
    );
    let piped = "superpi -p \"x\" --output-format json | jq -r .result";
    assert_eq!(alternatives(piped, &jq), [piped]);
    assert_eq!(alternatives("superpi harnesses --json | jq .", &jq), ["superpi harnesses --json | jq ."]);
    assert_eq!(alternatives("echo hi | superpi run", &jq), ["echo hi | superpi run"]);
}

#[test]
fn blocks_know_their_heading_and_whether_they_follow_the_one_before() {
    let markdown = "# Title\n\n## Part\n\n```sh\ncurl x\n```\n\n```text\ndata: {}\n```\n\nprose\n\n```json\n{}\n```\n";
    let found = blocks(markdown);
    assert_eq!(found.len(), 3);
    assert_eq!((found[0].lang.as_str(), found[0].line, found[0].heading.as_str()), ("sh", 5, "Part"));
    assert!(found[1].follows_directly && !found[2].follows_directly, "{found:?}");
    assert!(!found[0].follows_directly);
}
