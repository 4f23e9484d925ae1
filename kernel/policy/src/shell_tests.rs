use super::*;

/// The commands of `line` as lists of word texts.
fn texts(line: &str) -> Vec<Vec<String>> {
    commands(line)
        .unwrap_or_else(|e| panic!("{line:?}: {e}"))
        .into_iter()
        .map(|c| c.words.into_iter().map(|w| w.text).collect())
        .collect()
}

fn v(parts: &[&[&str]]) -> Vec<Vec<String>> {
    parts.iter().map(|p| p.iter().map(|s| s.to_string()).collect()).collect()
}

#[test]
fn simple_words_and_quotes() {
    assert_eq!(texts("ls -la src"), v(&[&["ls", "-la", "src"]]));
    assert_eq!(texts("  echo   'a b'  \"c d\" e\\ f "), v(&[&["echo", "a b", "c d", "e f"]]));
    assert_eq!(texts("echo '' \"\""), v(&[&["echo", "", ""]]));
    assert_eq!(texts("r\"m\" -rf x"), v(&[&["rm", "-rf", "x"]]));
    assert_eq!(texts("echo \"a\\\"b\\$c\\\\d\\e\""), v(&[&["echo", "a\"b$c\\d\\e"]]));
    assert_eq!(texts("ls \\\n -l"), v(&[&["ls", "-l"]]));
    assert_eq!(texts(""), Vec::<Vec<String>>::new());
    assert_eq!(texts("  # only a comment"), Vec::<Vec<String>>::new());
    assert_eq!(texts("echo a#b # comment ; rm x"), v(&[&["echo", "a#b"]]));
}

#[test]
fn separators_split_commands() {
    let expected = v(&[&["a", "1"], &["b"], &["c"], &["d"], &["e"], &["f"], &["g"], &["h"]]);
    assert_eq!(texts("a 1; b && c || d | e |& f & g\nh"), expected);
    assert_eq!(texts("a;b&&c"), v(&[&["a"], &["b"], &["c"]]));
}

#[test]
fn subshells_groups_and_substitutions_are_listed() {
    assert_eq!(texts("(cd x && make)"), v(&[&["cd", "x"], &["make"]]));
    assert_eq!(texts("{ ls; pwd; }"), v(&[&["ls"], &["pwd"]]));
    assert_eq!(texts("! grep -q x f"), v(&[&["grep", "-q", "x", "f"]]));
    let cmds = commands("echo $(rm -rf /) done").unwrap();
    assert_eq!(cmds.len(), 2);
    assert_eq!(cmds[0].text(), "rm -rf /");
    assert_eq!(cmds[1].words[0], lit("echo"));
    assert!(!cmds[1].words[1].literal);
    assert_eq!(texts("echo \"now: $(date)\""), v(&[&["date"], &["echo", "now: $(…)"]]));
    assert_eq!(texts("echo `whoami` \"`id -u`\""), v(&[&["whoami"], &["id", "-u"], &["echo", "`…`", "`…`"]]));
    assert_eq!(texts("echo `echo \\`date\\``"), v(&[&["date"], &["echo", "`…`"], &["echo", "`…`"]]));
    assert_eq!(texts("diff <(ls a) >(wc -l)"), v(&[&["ls", "a"], &["wc", "-l"], &["diff", "<(…)", "<(…)"]]));
    assert_eq!(texts("echo $(echo $(id))"), v(&[&["id"], &["echo", "$(…)"], &["echo", "$(…)"]]));
}

#[test]
fn nested_shell_strings_are_read() {
    assert_eq!(texts("bash -c 'ls; rm -rf /'"), v(&[&["bash", "-c", "ls; rm -rf /"], &["ls"], &["rm", "-rf", "/"]]));
    assert_eq!(texts("sudo sh -lc \"git push\""), v(&[&["sudo", "sh", "-lc", "git push"], &["git", "push"]]));
    assert_eq!(texts("eval git push"), v(&[&["eval", "git", "push"], &["git", "push"]]));
    assert!(commands("bash -c \"$CMD\"").is_err());
    assert_eq!(
        texts("find . -name '*.o' -exec rm -f {} \\; -execdir wc -l {} +"),
        v(&[
            &["find", ".", "-name", "*.o", "-exec", "rm", "-f", "{}", ";", "-execdir", "wc", "-l", "{}", "+"],
            &["rm", "-f", "{}"],
            &["wc", "-l", "{}"]
        ])
    );
    assert!(commands("eval $CMD").is_err());
}

#[test]
fn expansions_make_words_non_literal() {
    let cmd = &commands("ls *.rs ~/x $HOME ${A} $1 {a,b} file? [ab] plain").unwrap()[0];
    let literal: Vec<bool> = cmd.words.iter().map(|w| w.literal).collect();
    assert_eq!(literal, [true, false, false, false, false, false, false, false, false, true]);
    assert_eq!(cmd.words[3].text, "$HOME");
    assert!(commands("'$HOME' \"~\" '*'").unwrap()[0].words.iter().all(|w| w.literal));
    assert!(!commands("$'\\x72m' x").unwrap()[0].words[0].literal);
    assert_eq!(texts("echo $\"hi\""), v(&[&["echo", "hi"]]));
    assert_eq!(texts("echo $ a$"), v(&[&["echo", "$", "a$"]]));
}

#[test]
fn redirections() {
    let cmd = &commands("cmd <in >out 2>&1 >>log &>all 3<&- x>y <<<word >|f").unwrap()[0];
    assert_eq!(cmd.words, vec![lit("cmd"), lit("x")]);
    let kinds: Vec<(RedirectKind, &str)> = cmd.redirects.iter().map(|r| (r.kind, r.target.text.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (RedirectKind::Input, "in"),
            (RedirectKind::Output, "out"),
            (RedirectKind::Duplicate, "1"),
            (RedirectKind::Output, "log"),
            (RedirectKind::Output, "all"),
            (RedirectKind::Duplicate, "-"),
            (RedirectKind::Output, "y"),
            (RedirectKind::Input, "word"),
            (RedirectKind::Output, "f"),
        ]
    );
    assert!(!cmd.writes_no_file());
    assert!(commands("make 2>/dev/null >&2 </dev/null").unwrap()[0].writes_no_file());
    assert!(!commands("echo x >&file").unwrap()[0].writes_no_file());
    assert!(!commands("(ls) > out").unwrap()[1].writes_no_file());
    assert_eq!(commands("(ls) > out").unwrap()[1].words, vec![]);
    assert_eq!(commands("echo 2 > f").unwrap()[0].words, vec![lit("echo"), lit("2")]);
}

#[test]
fn unsure_about_what_it_does_not_read() {
    for line in [
        "cat <<EOF\nhi\nEOF",
        "echo $((1+2))",
        "((x++))",
        "if true; then rm x; fi",
        "for f in *; do rm $f; done",
        "while true; do :; done",
        "case x in x) ls;; esac",
        "f() { rm x; }",
        "function f { ls; }",
        "echo 'unclosed",
        "echo \"unclosed",
        "echo `unclosed",
        "echo $(unclosed",
        "echo )",
        "echo ${x:-$(rm y)}",
        "echo ${unclosed",
        "trailing\\",
        "echo x >",
        "(ls) more",
        "[[ -f x ]]",
        "echo @(a|b)",
    ] {
        assert!(commands(line).is_err(), "{line:?} should be unsure, got {:?}", commands(line));
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!("{}ls{}", "$(echo ".repeat(100), ")".repeat(100));
    assert!(commands(&deep).is_err());
    let ok = format!("{}ls{}", "$(echo ".repeat(5), ")".repeat(5));
    assert_eq!(commands(&ok).unwrap().len(), 6);
    let sub = "(".repeat(10_000);
    assert!(commands(&sub).is_err());
}

#[test]
fn wrappers_are_stripped_for_deny_matching() {
    let words = |line: &str| commands(line).unwrap().remove(0).words;
    let texts = |ws: &[Word]| ws.iter().map(|w| w.text.clone()).collect::<Vec<_>>();
    assert_eq!(texts(strip_wrappers(&words("sudo -u root env A=1 nice -n 5 rm -rf /"))), ["rm", "-rf", "/"]);
    assert_eq!(texts(strip_wrappers(&words("FOO=1 timeout 5 git push"))), ["git", "push"]);
    assert_eq!(texts(strip_wrappers(&words("git push"))), ["git", "push"]);
    assert_eq!(basename("/usr/bin/rm"), "rm");
    assert!(is_assignment("A_1=x") && !is_assignment("1A=x") && !is_assignment("=x") && !is_assignment("a-b=x"));
}

#[test]
fn never_panics_on_odd_input() {
    for line in ["\\", "$", "${", "$'", "$'\\", "`\\", ">", "2>", "&", "|", ";;", "\"\\", "<(", "$(", "é ü $ç", "\0"]
    {
        let _ = commands(line);
    }
    assert_eq!(rough_fragments("x;$(rm -rf /)|`y`"), ["x", "rm", "-rf", "/", "y"]);
}
