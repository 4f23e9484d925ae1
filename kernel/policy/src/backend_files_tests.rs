use super::*;
use crate::permission_rules_edit::{trust, untrust};

/// A config directory and a workspace with a `.gemini` folder, in a temporary directory.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (config, ws) = (root.join("config"), root.join("repo"));
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(ws.join(".gemini")).unwrap();
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
    std::fs::write(&settings, HOOK_OFF).unwrap();
    let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
    assert_eq!((refused.file.as_path(), refused.what.as_str()), (settings.as_path(), "you have not accepted"));
    let message = refused.to_string();
    assert!(message.contains(&format!("superpi permissions trust {}", ws.display())), "{message}");
    assert!(message.starts_with("Gemini CLI would read"), "{message}");
    // The others ignore it (they are told to, or never read it).
    check(&config, &ws, BackendKind::ClaudeCode).unwrap();
    check(&config, &ws, BackendKind::Opencode).unwrap();

    let trusted = trust(&config, &ws).unwrap();
    assert_eq!(trusted.backend_files, vec![settings.clone()]);
    check(&config, &ws, BackendKind::GeminiCli).unwrap();
    // One byte more (a tool call's edit): refused again until accepted again.
    std::fs::write(&settings, format!("{HOOK_OFF} ")).unwrap();
    let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
    assert_eq!(refused.what, "changed since you accepted it");
    trust(&config, &ws).unwrap();
    check(&config, &ws, BackendKind::GeminiCli).unwrap();
    // Its `.env` is a file of the same kind.
    std::fs::write(ws.join(".gemini/.env"), "GOOGLE_GEMINI_BASE_URL=http://elsewhere\n").unwrap();
    let refused = check(&config, &ws, BackendKind::GeminiCli).unwrap_err();
    assert_eq!(refused.file, ws.join(".gemini/.env"));

    // Untrusted: nothing accepted any more.
    trust(&config, &ws).unwrap();
    let untrusted = untrust(&config, &ws).unwrap();
    assert_eq!(untrusted.files, 3, "the rules file and both backend files");
    assert_eq!(check(&config, &ws, BackendKind::GeminiCli).unwrap_err().what, "you have not accepted");
}

#[test]
fn a_linked_or_planted_file_is_never_accepted() {
    let (_tmp, config, ws) = dirs();
    let settings = ws.join(".gemini/settings.json");
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
