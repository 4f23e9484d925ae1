//! The kernel's read of a directory beneath the workspace (a workspace's `.superpi/skills`)
//! through the confined tool runner: what the runner refuses is not read, and without
//! landlock the read is refused like every call, so it never happens in the kernel's process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use superpi_paths::{PathPattern, ProtectedPaths};
use superpi_sandbox::{TreeKind, TreeRead};
use tokio_util::sync::CancellationToken;

use crate::common::{self, Env};

fn skills_read() -> TreeRead {
    TreeRead {
        beneath: vec![".superpi".into(), "skills".into()],
        depth: 4,
        texts: vec!["*.md".into(), "*/SKILL.md".into()],
        max_file_bytes: 256 * 1024,
    }
}

fn write(env: &Env, relative: &str, text: &str) {
    let path = env.workspace.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The runner reads the files asked for and refuses, with the conversation's protected paths,
/// a file a pattern protects, a hard link to a file outside the workspace (which the kernel's
/// own process could read) and a symbolic link. Prints what one read costs (a turn's start with
/// skills pays it once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_confined_runner_reads_the_tree_and_refuses_what_a_tool_may_not_read() {
    let env = Env::new();
    common::assert_confinement_available(&env);
    for i in 0..20 {
        write(
            &env,
            &format!(".superpi/skills/s{i}/SKILL.md"),
            &format!("---\ndescription: skill {i}\n---\nbody {i}\n"),
        );
        write(&env, &format!(".superpi/skills/s{i}/notes/more.md"), "more");
    }
    write(&env, ".superpi/skills/private.md", "---\ndescription: protected by the settings\n---\n");
    std::fs::hard_link(env.data_dir.join("superpi.sqlite"), env.workspace.join(".superpi/skills/store.md")).unwrap();
    std::os::unix::fs::symlink(env.home.join(".ssh/id_rsa"), env.workspace.join(".superpi/skills/key.md")).unwrap();
    let protected = ProtectedPaths {
        patterns: vec![PathPattern::parse(".superpi/skills/private*").unwrap()],
        private_dirs: vec![env.data_dir.clone()],
    };

    let request = skills_read();
    let read = |protected| env.sandbox.read_tree(&env.workspace, &request, protected, CancellationToken::new());
    let tree = read(protected.clone()).await.unwrap().unwrap();
    let kind = |path: &str| tree.entries.iter().find(|e| e.path == path).map(|e| e.kind.clone()).unwrap();
    assert_eq!(tree.text("s3/SKILL.md").unwrap(), Some("---\ndescription: skill 3\n---\nbody 3\n"));
    assert_eq!(kind("s3/notes/more.md"), TreeKind::File { len: 4, text: None });
    let refused = |path: &str| match kind(path) {
        TreeKind::Refused(why) => why,
        other => panic!("{path} was read: {other:?}"),
    };
    assert!(refused("private.md").contains("protected by permissions.protected_paths `.superpi/skills/private*`"));
    assert!(refused("store.md").contains("has 2 names (hard links)"));
    assert!(refused("key.md").contains("is a symbolic link; superpi does not follow it"));
    assert_eq!(tree.entries.len(), 20 * 4 + 3, "{:?}", tree.entries);

    let mut took = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        read(protected.clone()).await.unwrap().unwrap();
        took.push(started.elapsed());
    }
    took.sort();
    eprintln!(
        "a confined read of .superpi/skills (20 skills, 83 entries): median {:?}, fastest {:?}",
        took[5], took[0]
    );
    let started = Instant::now();
    superpi_sandbox::read_tree(&env.workspace, &skills_read(), &protected).unwrap();
    eprintln!("the same read in this process: {:?}", started.elapsed());
}

/// Without landlock the read is refused like every call: it is made by the confined runner or
/// not at all, never in the kernel's own process.
#[tokio::test]
async fn without_landlock_the_read_is_refused_like_a_call() {
    let env = Env::with(|config| config.landlock_abi_override = Some(0));
    write(&env, ".superpi/skills/a.md", "---\ndescription: a\n---\n");
    let request = skills_read();
    let read = env.sandbox.read_tree(&env.workspace, &request, ProtectedPaths::default(), CancellationToken::new());
    let err = read.await.unwrap_err();
    assert!(err.contains("this kernel does not offer landlock"), "{err}");
}
