//! The policy's readers: the shell reader, the settings files, the harness file.

use std::path::Path;

use superpi_policy::harness::WorkspaceKind;
use superpi_policy::{Harnesses, Settings, shell};

/// A command line as the bash tool gets it. A line that reads has its commands; the rough
/// fragments of the last-resort check cover every word of a plain command.
pub fn shell(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else { return };
    let all = shell::commands(line);
    let written = shell::simple_commands(line);
    if let Ok(all) = &all {
        // `commands` adds what `sh -c` and friends run, never drops a command as written.
        let written = written.as_ref().map(Vec::len).unwrap_or(0);
        assert!(all.len() >= written, "commands() lost commands of the line");
        for cmd in all {
            let _ = cmd.text();
            let _ = cmd.writes_no_file();
            let _ = shell::strip_wrappers(&cmd.words);
        }
    }
    let _ = shell::rough_fragments(line);
}

/// A user settings file, then a workspace file (the input split at the first NUL). The
/// workspace file only tightens: nothing the user allowed becomes more allowed.
pub fn settings(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (user_text, ws_text) = text.split_once('\0').unwrap_or((text, "{}"));
    let Ok(user) = Settings::from_user_file(user_text, Path::new("settings.json")) else { return };
    assert!(user.remote.default_mode <= user.remote.max_mode);
    let Ok(ws) = user.clone().tightened_by_workspace_file(ws_text, Path::new(".superpi/settings.json")) else {
        return;
    };
    let (u, w) = (&user.permissions, &ws.permissions);
    assert_eq!(u.allow, w.allow, "a workspace file changed the allow list");
    assert_eq!(u.allow_tools, w.allow_tools, "a workspace file changed allow_tools");
    assert_eq!(u.allow_outside_workspace, w.allow_outside_workspace);
    assert!(w.deny.starts_with(&u.deny), "a workspace file dropped a deny pattern");
    assert!(w.deny_tools.is_superset(&u.deny_tools), "a workspace file dropped a denied tool");
    assert!(w.protected_paths.len() >= u.protected_paths.len(), "a workspace file dropped a protected path");
    assert!(w.network_in_plan_mode <= u.network_in_plan_mode);
    assert!(w.ask <= u.ask, "a workspace file turned questions back on");
    assert!(w.question_timeout <= u.question_timeout);
    assert!(ws.network.policy >= user.network.policy, "a workspace file loosened the network policy");
    for host in ws.network.allow_hosts.iter().chain(&user.network.allow_hosts) {
        if ws.network.policy == superpi_policy::NetworkPolicy::Allowlist && ws.host_allowed(host) {
            assert!(
                user.network.policy == superpi_policy::NetworkPolicy::Allow || user.host_allowed(host),
                "a workspace file allowed host {host}"
            );
        }
    }
    assert!(ws.remote.max_mode <= user.remote.max_mode);
    assert!(ws.remote.default_mode <= user.remote.default_mode);
    assert!(ws.remote.default_mode <= ws.remote.max_mode);
    assert_eq!(ws.sandbox, user.sandbox, "a workspace file changed the sandbox settings");
}

/// A harness file. Every harness it yields is found by its id, keeps its default mode under
/// its ceiling, and offers no workspace tool without a workspace.
pub fn harness(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let available = superpi_sandbox::ToolRegistry::builtin().defs();
    let Ok(harnesses) = Harnesses::with_file(text, Path::new("harnesses.toml"), &available) else { return };
    for h in harnesses.iter() {
        assert_eq!(harnesses.get(&h.id).map(|found| &found.id), Ok(&h.id));
        assert!(h.default_mode <= h.max_mode, "harness {} defaults above its ceiling", h.id);
        let mut tools = h.tools.clone();
        tools.sort();
        tools.dedup();
        assert_eq!(tools.len(), h.tools.len(), "harness {} lists a tool twice", h.id);
        if h.workspace == WorkspaceKind::None {
            let in_workspace = available.iter().filter(|t| t.workspace).any(|t| h.offers(&t.name));
            assert!(!in_workspace, "harness {} has file tools and no workspace", h.id);
        }
    }
    assert!(harnesses.resolve(None).is_ok());
    let _ = harnesses.infos();
}
