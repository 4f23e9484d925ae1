use super::*;
use crate::shell::commands;

fn read_only(line: &str) -> bool {
    line_is_read_only(&commands(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
}

#[test]
fn read_only_lines() {
    for line in [
        "ls",
        "ls -la",
        "ls -la; cat a.txt",
        "cat src/*.rs | grep -n fn | head -20",
        "wc -l $(find . -name '*.rs')",
        "tail -n 50 log.txt 2>/dev/null",
        "grep -rn TODO src 2>&1 | sort | uniq -c",
        "find . -name '*.toml' -not -path './target/*'",
        "find src -type f -newer Cargo.toml -print0",
        "rg -n 'fn main' --glob '*.rs'",
        "git status",
        "git status --short",
        "git --no-pager log -5",
        "git log --oneline -10",
        "git diff HEAD~1 -- src",
        "git show --stat HEAD",
        "git branch",
        "git branch -a -v",
        "git branch --list 'wt-*'",
        "git tag --list 'v*'",
        "git rev-parse --abbrev-ref HEAD",
        "git ls-files | wc -l",
        "git remote -v",
        "git grep -n TODO -- '*.rs'",
        "pwd && echo done",
        "echo $HOME",
        "printf '%s\\n' a b",
        "which cargo",
        "stat -c %s Cargo.toml",
        "sort -u names.txt",
        "sort -t, -k2 data.csv",
        "cut -d: -f1 /etc/passwd | tr a-z A-Z",
        "du -sh target; df -h .",
        "env",
        "date +%s",
        "true || false",
        "basename $(pwd); dirname /a/b; realpath .",
        "tree -L 2",
        "file Cargo.toml",
        "sed -n 1,20p src/lib.rs",
        "sed -n '5p' a b",
        "find . -name '*.rs' | xargs wc -l",
        "find . -print0 | xargs -0 grep -l foo",
        "xargs",
        "cat < input.txt",
        "grep x <<< 'a x b'",
        "cat <<EOF\nsome text\nEOF",
        "echo $((6*7))",
        "for f in *.rs; do wc -l \"$f\"; done",
        "if [ -f Cargo.toml ]; then cat Cargo.toml; fi",
        "[[ -f x ]] && cat x",
        "while read -r l; do echo $l; done < f",
        "cd src && ls",
        "diff <(sort a) <(sort b)",
        "{ ls; pwd; } 2>/dev/null",
        "echo \"${HOME:-/root}\"",
        "jq .name package.json",
        "uniq -c sorted.txt",
        "test -d .git",
    ] {
        assert!(read_only(line), "should be read-only: {line:?}");
    }
}

#[test]
fn not_read_only_lines() {
    for line in [
        // Output into a file.
        "ls > files.txt",
        "ls >> files.txt",
        "echo x &> out",
        "cat a >| b",
        "{ ls; } > out",
        "for f in *; do cat $f; done > all",
        "cat a | tee b",
        "echo x 1>&2 > f",
        // Options that write, run or delete.
        "find . -exec rm {} ;",
        "find . -name x -execdir cat {} +",
        "find . -ok rm {} ;",
        "find . -delete",
        "find . -fprint out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find $DIR",
        "find . -name *.rs",
        "sort -o out in",
        "sort -uo out in",
        "sort --output=out in",
        "sort --compress-program=sh in",
        "sort $FLAGS in",
        "rg --pre ./x foo",
        "rg --pre=./x foo",
        "rg -z foo",
        "rg foo *",
        "tree -o out",
        "file -C -m magic",
        "date -s 2020-01-01",
        "date --set=yesterday",
        "uniq in out",
        "env rm -rf x",
        "env FOO=1 ls",
        "sed -i s/a/b/ f",
        "sed -n 1p -i f",
        "sed s/a/b/ f",
        "sed -n '1w out' f",
        "sed -n 1e f",
        // Git that writes, runs or configures.
        "git -c core.pager=sh log",
        "git -C /elsewhere status",
        "git --git-dir=x log",
        "git --no-pager -c core.pager=sh log",
        "git --no-pager",
        "git log --output=out",
        "git diff --output out",
        "git diff --ext-diff",
        "git grep -O foo",
        "git branch new",
        "git branch -d old",
        "git branch -m a b",
        "git tag v1",
        "git remote add x y",
        "git remote show origin",
        "git tag -d v1",
        "git commit -m x",
        "git push",
        "git checkout .",
        "git stash",
        "git $SUB",
        "git",
        // xargs running something that is not harmless with any arguments.
        "ls | xargs rm",
        "ls | xargs sort",
        "ls | xargs -I{} sh -c 'cat {}'",
        "ls | xargs $CMD",
        // Arithmetic that may evaluate a variable's value.
        "echo $((x))",
        "for i in 1 2; do echo $((i+1)); done",
        "((n++))",
        "[[ $a -eq 1 ]]",
        "[[ -v a ]]",
        "[ -v x ]",
        "test \"$x\" = y",
        "printf -v x %s y",
        "read 'a[$(id)]'",
        "read -ra x",
        "printf $FMT",
        "echo ${a[i]}",
        "echo ${x:n}",
        "echo ${!ref}",
        // Not on the list, or not by its bare name.
        "cargo build",
        "npm test",
        "rm x",
        "/tmp/ls",
        "./ls",
        "$CMD",
        "FOO=1 ls",
        "sudo ls",
        "bash -c ls",
        "awk '{print $1}' f",
        "less f",
        "tee f",
        "ls; rm x",
        "cat $(rm x)",
        "f() { ls; }; f",
    ] {
        assert!(!read_only(line), "should not be read-only: {line:?}");
    }
}

#[test]
fn a_call_is_read_only_by_its_shell_argument() {
    let bash = crate::test_tools::tool("bash", &[superpi_proto::tool::Effect::Exec]);
    let is = |line: &str| call_is_read_only(&bash, &serde_json::json!({ "command": line }));
    assert!(is("git status") && is("git diff | head"));
    assert!(!is("git status && touch x") && !is("") && !is("cat a > b"));
    let read = crate::test_tools::tool("read", &[superpi_proto::tool::Effect::Read]);
    assert!(!call_is_read_only(&read, &serde_json::json!({"path": "a"})));
}
