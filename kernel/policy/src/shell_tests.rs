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
fn compound_commands_list_their_inner_commands() {
    assert_eq!(
        texts("if [ -f a ]; then cat a; elif true; then ls; else rm x; fi"),
        v(&[&["[", "-f", "a", "]"], &["cat", "a"], &["true"], &["ls"], &["rm", "x"]])
    );
    assert_eq!(texts("for f in *.rs $(ls); do wc -l \"$f\"; done > out"), v(&[&["ls"], &["wc", "-l", "$f"], &[]]));
    assert_eq!(texts("for f\ndo echo $f\ndone"), v(&[&["echo", "$f"]]));
    assert_eq!(texts("while read -r l; do echo \"$l\"; done < f"), v(&[&["read", "-r", "l"], &["echo", "$l"], &[]]));
    assert_eq!(texts("until false; do :; done"), v(&[&["false"], &[":"]]));
    assert_eq!(texts("select x in a b; do ls; done"), v(&[&["ls"]]));
    assert_eq!(
        texts("case \"$1\" in\n  a|b) ls ;;\n  (*.rs) rm x; pwd;&\n  *) cat y\nesac | sort"),
        v(&[&["ls"], &["rm", "x"], &["pwd"], &["cat", "y"], &["sort"]])
    );
    assert_eq!(texts("case x in x) ls; esac"), v(&[&["ls"]]));
    assert_eq!(texts("case x in esac; ls"), v(&[&["ls"]]));
    assert_eq!(texts("echo if then fi for case"), v(&[&["echo", "if", "then", "fi", "for", "case"]]));
    assert_eq!(texts("\"if\" x"), v(&[&["if", "x"]]));
}

#[test]
fn functions_list_their_bodies() {
    assert_eq!(texts("f() { rm x; }; f"), v(&[&["rm", "x"], &["f"]]));
    assert_eq!(texts("function g { ls; }"), v(&[&["ls"]]));
    assert_eq!(texts("function g () ( pwd )"), v(&[&["pwd"]]));
    assert_eq!(texts("h ( ) {\n  cat a\n}"), v(&[&["cat", "a"]]));
}

#[test]
fn conditionals_are_one_command() {
    assert_eq!(texts("[[ -f x && $y == z* ]] && ls"), v(&[&["[[", "-f", "x", "&&", "$y", "==", "z*", "]]"], &["ls"]]));
    assert_eq!(texts("[[ $v =~ ^(a|b)+$ ]]"), v(&[&["[[", "$v", "=~", "^(a|b)+$", "]]"]]));
    assert_eq!(texts("[[ ( a < b ) ]]"), v(&[&["[[", "(", "a", "<", "b", ")", "]]"]]));
    assert_eq!(texts("[[ -n $(id) ]]"), v(&[&["id"], &["[[", "-n", "$(…)", "]]"]]));
}

#[test]
fn arithmetic_is_listed_and_literal_only_without_names() {
    let cmds = commands("echo $((6*7)) $(( $(wc -l < f) + x ))").unwrap();
    let listed: Vec<(String, bool)> = cmds.iter().map(|c| (c.text(), c.words.iter().all(|w| w.literal))).collect();
    assert_eq!(
        listed,
        [
            ("(( 6*7".to_string(), true),
            ("wc -l".to_string(), true),
            ("(( $(wc -l < f) + x".to_string(), false),
            ("echo $((…)) $((…))".to_string(), false),
        ]
    );
    assert_eq!(texts("((i++)) && ls"), v(&[&["((", "i++"], &["ls"]]));
    assert_eq!(texts("for ((i=0; i<3; i++)); do echo $i; done"), v(&[&["((", "i=0; i<3; i++"], &["echo", "$i"]]));
    assert!(commands("echo $((0x1f))").unwrap()[0].words[1].literal.eq(&false));
    assert_eq!(texts("echo ${#a[@]} ${a[i]}"), v(&[&["((", "a[i]"], &["echo", "${#a[@]}", "${a[i]}"]]));
    assert_eq!(texts("echo ${x:0:2} ${x:n} ${!r}").len(), 3);
}

#[test]
fn parameter_expansions_are_read() {
    assert_eq!(
        texts("echo ${x:-$(rm y)} \"${1:-a b}\" ${y:+'q'}"),
        v(&[&["rm", "y"], &["echo", "${x:-$(rm y)}", "${1:-a b}", "${y:+'q'}"]])
    );
    assert!(!commands("cat ${f%.rs}").unwrap()[0].words[1].literal);
}

#[test]
fn here_documents_are_read() {
    let cmds = commands("cat <<EOF > out\nhi $(whoami) `id`\nEOF\nls").unwrap();
    let texts: Vec<String> = cmds.iter().map(SimpleCommand::text).collect();
    // The body comes after the line that opens it, and so do its commands.
    assert_eq!(texts, ["cat", "whoami", "id", "ls"]);
    assert_eq!(cmds[0].redirects[0], Redirect { kind: RedirectKind::Input, target: lit("EOF") });
    assert!(!cmds[0].writes_no_file());
    // A quoted delimiter: the body is text.
    assert_eq!(commands("cat <<'E' | sh\n$(rm -rf /)\nE").unwrap().len(), 2);
    assert_eq!(commands("cat <<-\"E\"\n\t$(x)\n\tE\n").unwrap().len(), 1);
    // Two on one line, inside a substitution, and the delimiter as the last line.
    assert_eq!(super::tests::texts("a <<A; b <<B\n$(c)\nA\nB"), v(&[&["a"], &["b"], &["c"]]));
    assert_eq!(super::tests::texts("echo $(cat <<X\nhi\nX\n)"), v(&[&["cat"], &["echo", "$(…)"]]));
    // A line continuation joins body lines, the delimiter's too (bash runs `rm x` here).
    assert_eq!(super::tests::texts("cat <<EOF\nhi\nEO\\\nF\nrm x\nEOF\n"), v(&[&["cat"], &["rm", "x"], &["EOF"]]));
    assert_eq!(super::tests::texts("cat <<EOF\nhi \\\nEO\\\nF\nrm x\nEOF\n"), v(&[&["cat"]]));
    assert_eq!(super::tests::texts("cat <<'EOF'\nEO\\\nF\nrm x\nEOF\n"), v(&[&["cat"]]));
    assert_eq!(super::tests::texts("cat <<EOF\na \\\\\nEOF\n"), v(&[&["cat"]]));
}

#[test]
fn unsure_about_what_it_does_not_read() {
    for line in [
        "cat <<EOF\nhi\n",
        "cat <<EOF",
        "cat <<$X\nx\n$X",
        "echo $[1+2]",
        "echo $((1+2)",
        "echo $(( 'a' ))",
        "coproc x",
        "case x in x) ls",
        "case x in (a|@(b)) ls;; esac",
        "for 1 in a; do :; done",
        "for x in a | b; do :; done",
        "ls;; x",
        "esac",
        "[[ -f x",
        "[[ a & b ]]",
        "arr=(a b)",
        "echo 'unclosed",
        "echo \"unclosed",
        "echo `unclosed",
        "echo $(unclosed",
        "echo )",
        "echo ${unclosed",
        "echo ${x:-$(unclosed}",
        "trailing\\",
        "echo x >",
        "(ls) more",
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
    for deep in ["(", "$((", "${x:-", "case x in x) ", "[[ $("] {
        let line = deep.repeat(10_000);
        assert!(commands(&line).is_err(), "{deep}");
    }
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
