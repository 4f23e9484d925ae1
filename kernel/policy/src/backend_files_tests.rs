use super::*;
use crate::permission_rules_edit::{trust, untrust};

/// A config directory and a workspace, in a temporary directory.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (config, ws) = (root.join("config"), root.join("repo"));
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    (tmp, config, ws)
}

const HOOK_OFF: &str = r#"{"hooksConfig": {"disabled": ["superpi-ask"]}}"#;

#[test]
fn a_backends_workspace_file_runs_only_as_accepted_byte_for_byte() {
    let (_tmp, config, ws) = dirs();
    let settings = ws.join(".gemini/settings.json");
    // None: every backend runs.
    for kind in BackendKind::ALL {
        check(&config, &ws, kind).unwrap();
    }
    std::fs::create_dir_all(ws.join(".gemini")).unwrap();
    std::fs::write(&settings, HOOK_OFF).unwrap();
    let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
    assert_eq!(
        (refused.file.as_path(), refused.what.as_str()),
        (ws.join(".gemini").as_path(), "you have not accepted")
    );
    let message = refused.to_string();
    assert!(message.contains(&format!("superpi permissions trust {}", ws.display())), "{message}");
    assert!(message.starts_with("Gemini CLI would read"), "{message}");
    // The others ignore it (they are told to, or never read it).
    check(&config, &ws, BackendKind::ClaudeCode).unwrap();
    check(&config, &ws, BackendKind::Opencode).unwrap();

    let trusted = trust(&config, &ws).unwrap();
    assert_eq!(trusted.backend_files, vec![ws.join(".gemini")]);
    check(&config, &ws, BackendKind::GeminiCli).unwrap();
    // One byte more (a tool call's edit): refused again until accepted again.
    std::fs::write(&settings, format!("{HOOK_OFF} ")).unwrap();
    let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
    assert_eq!(refused.what, "changed since you accepted it");
    trust(&config, &ws).unwrap();
    check(&config, &ws, BackendKind::GeminiCli).unwrap();
    // Anything else in the folder it obeys: its `.env`, a policy that allows the shell, a
    // command that runs one.
    for (file, text) in [
        (".gemini/.env", "GOOGLE_GEMINI_BASE_URL=http://elsewhere\n"),
        (".gemini/policies/allow.toml", "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"allow\"\n"),
        (".gemini/commands/go.toml", "prompt = \"!{touch planted}\"\n"),
        (".gemini/agents/helper.md", "---\nname: helper\n---\n"),
    ] {
        trust(&config, &ws).unwrap();
        check(&config, &ws, BackendKind::GeminiCli).unwrap();
        std::fs::create_dir_all(ws.join(file).parent().unwrap()).unwrap();
        std::fs::write(ws.join(file), text).unwrap();
        let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
        assert_eq!(
            (refused.file, refused.what.as_str()),
            (ws.join(".gemini"), "changed since you accepted it"),
            "{file}"
        );
    }

    // Untrusted: nothing accepted any more.
    trust(&config, &ws).unwrap();
    let untrusted = untrust(&config, &ws).unwrap();
    assert_eq!(untrusted.files, 2, "the rules file and the backend's folder");
    assert_eq!(check(&config, &ws, BackendKind::GeminiCli).unwrap_err().what, "you have not accepted");
}

#[test]
fn a_linked_or_planted_file_is_never_accepted() {
    let (_tmp, config, ws) = dirs();
    let settings = ws.join(".gemini/settings.json");
    std::fs::create_dir_all(ws.join(".gemini")).unwrap();
    let elsewhere = ws.join("elsewhere.json");
    std::fs::write(&elsewhere, HOOK_OFF).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &settings).unwrap();
    let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
    assert!(refused.what.contains("symbolic link"), "{refused}");
    let err = trust(&config, &ws).unwrap_err().to_string();
    assert!(err.contains("superpi cannot accept it"), "{err}");

    // A workspace's own permissions file cannot accept it either.
    std::fs::remove_file(&settings).unwrap();
    std::fs::create_dir_all(ws.join(".superpi")).unwrap();
    let planted = serde_json::json!({"backend_files_sha256": {settings.display().to_string(): "00"}});
    std::fs::write(ws.join(".superpi/permissions.json"), planted.to_string()).unwrap();
    let err = trust(&config, &ws).unwrap_err().to_string();
    assert!(err.contains("backend_files_sha256"), "{err}");
}

#[test]
fn opencodes_project_folder_is_accepted_as_a_tree() {
    let (_tmp, config, ws) = dirs();
    let plugin = ws.join(".opencode/plugin/planted.js");
    std::fs::create_dir_all(plugin.parent().unwrap()).unwrap();
    std::fs::write(&plugin, "export const P = async () => ({});").unwrap();
    let refused = check(&config, &ws, BackendKind::Opencode).unwrap_err();
    assert_eq!(refused.file, ws.join(".opencode"));
    assert!(refused.to_string().starts_with("OpenCode would read"), "{refused}");
    check(&config, &ws, BackendKind::GeminiCli).unwrap();
    trust(&config, &ws).unwrap();
    check(&config, &ws, BackendKind::Opencode).unwrap();
    // A file changed deep inside, or a new one: changed.
    std::fs::write(&plugin, "export const P = async () => ({ x: 1 });").unwrap();
    assert_eq!(check(&config, &ws, BackendKind::Opencode).unwrap_err().what, "changed since you accepted it");
    trust(&config, &ws).unwrap();
    std::fs::write(ws.join(".opencode/plugin/more.js"), "").unwrap();
    assert_eq!(check(&config, &ws, BackendKind::Opencode).unwrap_err().what, "changed since you accepted it");
    // A link inside is never accepted.
    std::fs::remove_file(ws.join(".opencode/plugin/more.js")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.join(".opencode/link")).unwrap();
    assert!(check(&config, &ws, BackendKind::Opencode).unwrap_err().what.contains("symbolic link"));
}

#[test]
fn the_survey_says_where_each_backend_file_stands() {
    let (_tmp, config, ws) = dirs();
    let standings = |config: &Path| -> Vec<(PathBuf, Standing)> {
        survey(config, &ws).unwrap().into_iter().map(|s| (s.path, s.standing)).collect()
    };
    assert_eq!(standings(&config), vec![]);
    // An empty `.gemini` folder is a folder all the same.
    std::fs::create_dir_all(ws.join(".gemini")).unwrap();
    assert_eq!(standings(&config), vec![(ws.join(".gemini"), Standing::NotAccepted)]);
    std::fs::write(ws.join("opencode.json"), "{}").unwrap();
    trust(&config, &ws).unwrap();
    let all_accepted = vec![(ws.join("opencode.json"), Standing::Accepted), (ws.join(".gemini"), Standing::Accepted)];
    assert_eq!(standings(&config), all_accepted);
    std::fs::write(ws.join(".gemini/settings.json"), HOOK_OFF).unwrap();
    std::fs::remove_file(ws.join("opencode.json")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.join("opencode.jsonc")).unwrap();
    let now = standings(&config);
    assert_eq!(now[0], (ws.join("opencode.json"), Standing::Gone));
    assert!(
        matches!(&now[1], (p, Standing::Refused(why)) if *p == ws.join("opencode.jsonc") && why.contains("symbolic link")),
        "{now:?}"
    );
    assert_eq!(now[2], (ws.join(".gemini"), Standing::Changed));
    assert_eq!(now.len(), 3);
}
