//! `superpi doctor`: what this machine confines, which toolchains and MCP servers a tool can
//! reach, what stays unreadable, which settings do not take effect, and which permission rules
//! files are broken or ignored and where the agent backends' files of the current directory's
//! workspace stand, each with its fix.
//! [`gather`] looks at the machine (the sandbox's own status and read grants, the user's
//! settings, `PATH` and the home directory); [`render`] is pure, tested without I/O.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use superpi_client::Locations;
use superpi_policy::{McpTransport, PermissionRules, Settings};
use superpi_sandbox::{ReadGrants, Sandbox, SandboxConfig, SandboxStatus};

use crate::listing::JsonFlag;

/// The toolchains looked for.
const TOOLCHAINS: &[&str] = &["cargo", "rustc", "python3", "node", "npm", "go", "git"];
/// Where toolchain managers put their programs under the home directory, looked at besides `PATH`.
const HOME_BINS: &[&str] = &[
    ".cargo/bin",
    ".local/bin",
    ".pyenv/shims",
    ".volta/bin",
    ".bun/bin",
    ".deno/bin",
    "go/bin",
    ".local/share/mise/shims",
    ".asdf/shims",
];

/// Everything `superpi doctor` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Report {
    pub confinement: Confinement,
    pub toolchains: Vec<Toolchain>,
    pub mcp_servers: Vec<Server>,
    /// Existing paths no tool reads.
    pub unreadable: Vec<PathBuf>,
    /// Settings that do not take effect.
    pub settings: Vec<Finding>,
    /// Permission rules files (the user's, the current directory's workspace's) that cannot
    /// be read, are ignored, or whose allow rules do not apply since they changed.
    pub permission_rules: Vec<Finding>,
    /// The agent backends' configuration files of the current directory's workspace (present,
    /// or accepted once), shown in the permission rules section.
    pub backend_files: Vec<BackendFile>,
}

/// A backend's configuration file or folder in the workspace (`superpi_policy::backend_files`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BackendFile {
    pub backend: String,
    pub path: PathBuf,
    /// `accepted`, `changed`, `not accepted`, `gone` (accepted once, missing now) or `refused`.
    pub standing: String,
    /// What to do, unless accepted or gone.
    pub fix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Confinement {
    pub uid: u32,
    pub landlock_abi: i32,
    pub seccomp: bool,
    /// "v2", "v1" or "none": the cgroup hierarchy mounted.
    pub cgroup: String,
    /// Whether each call gets a cgroup of its own (one was delegated to this user).
    pub call_cgroup: bool,
    pub pids_cgroup: bool,
    /// Whether each call gets a private mount namespace with everything outside the workspace
    /// read-only.
    pub mount_namespaces: bool,
    pub disabled: bool,
    /// What is missing, with its fix.
    pub missing: Vec<Finding>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Toolchain {
    pub name: String,
    /// Where it was found (None: nowhere).
    pub path: Option<PathBuf>,
    pub reachable: bool,
    pub fix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Server {
    pub name: String,
    /// Its command, or its URL.
    pub command: String,
    pub can_start: bool,
    /// Why not, and the fix.
    pub problem: Option<Finding>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Finding {
    pub what: String,
    pub fix: String,
}

fn finding(what: impl Into<String>, fix: impl Into<String>) -> Finding {
    Finding { what: what.into(), fix: fix.into() }
}

pub(crate) async fn run(locations: &Locations, json: JsonFlag) -> anyhow::Result<ExitCode> {
    let report = gather(locations)?;
    if json.json {
        crate::listing::print_json(&report)?;
    } else {
        crate::listing::out(&render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The report of this machine, with the user's settings.
fn gather(locations: &Locations) -> anyhow::Result<Report> {
    let settings = Settings::load(&locations.config_dir, None)?;
    // The sandbox as the kernel makes it (server/mod.rs).
    let mut config = SandboxConfig::new(locations.data_dir.clone());
    config.extra_read_paths.extend(settings.sandbox.extra_read_paths.iter().cloned());
    config.deny_read_paths.extend(settings.sandbox.deny_read_paths.iter().cloned());
    config.disabled = settings.sandbox.disabled;
    config.private_dirs = vec![locations.config_dir.clone(), locations.runtime_dir.clone()];
    let status = Sandbox::new(config.clone())?.status();
    let grants = superpi_sandbox::read_grants(&config);
    let path_var = std::env::var_os("PATH");
    let toolchains = TOOLCHAINS
        .iter()
        .map(|name| toolchain(name, find_toolchain(name, path_var.as_deref(), config.home.as_deref()), &grants))
        .collect();
    let mcp_servers =
        settings.mcp_servers.iter().map(|(name, server)| mcp_server(name, &server.transport, &grants)).collect();
    Ok(Report {
        confinement: confinement(&status),
        toolchains,
        mcp_servers,
        unreadable: grants.denied.clone(),
        settings: ineffective(&config, &settings, &grants),
        permission_rules: rules_files(locations),
        backend_files: backend_files(locations),
    })
}

/// The current directory's workspace, when it can be one.
fn current_workspace(locations: &Locations) -> Option<PathBuf> {
    std::env::current_dir().ok().and_then(|d| superpi_client::workspace::check_workspace(&d, locations).ok())
}

/// Where each agent backend's configuration file of the current directory's workspace stands
/// with the user (an unreadable permissions file is a finding of `rules_files` already).
fn backend_files(locations: &Locations) -> Vec<BackendFile> {
    use superpi_policy::backend_files::{Standing, survey};
    let Some(workspace) = current_workspace(locations) else { return Vec::new() };
    let trust = format!("check it, then `superpi permissions trust {}`", workspace.display());
    let surveyed = survey(&locations.config_dir, &workspace).unwrap_or_default();
    let row = |s: superpi_policy::backend_files::Surveyed| {
        let (standing, fix) = match s.standing {
            Standing::Accepted => ("accepted".to_string(), None),
            Standing::Gone => ("gone".into(), None),
            Standing::Changed => ("changed".into(), Some(format!("the backend does not run beside it: {trust}"))),
            Standing::NotAccepted => {
                ("not accepted".into(), Some(format!("the backend does not run beside it: {trust}, or remove it")))
            }
            Standing::Refused(why) => ("refused".into(), Some(format!("it {why}: make it your own, or remove it"))),
        };
        BackendFile { backend: s.kind.id().to_string(), path: s.path, standing, fix }
    };
    surveyed.into_iter().map(row).collect()
}

/// What is wrong with the permission rules files of the user and of the current directory's
/// workspace (when it can be one).
fn rules_files(locations: &Locations) -> Vec<Finding> {
    let workspace = current_workspace(locations);
    let loaded = PermissionRules::load(&locations.config_dir, None)
        .and_then(|_| PermissionRules::load(&locations.config_dir, workspace.as_deref()));
    match loaded {
        Err(err) => vec![finding(
            format!("{err}"),
            format!("fix {} or remove it: until then every tool call is refused", err.path().display()),
        )],
        Ok(rules) => {
            rules.notices().iter().map(|n| finding(format!("{} {}", n.file.display(), n.what), n.fix.clone())).collect()
        }
    }
}

fn confinement(status: &SandboxStatus) -> Confinement {
    let cgroup = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "v2"
    } else if Path::new("/sys/fs/cgroup/pids").exists() {
        "v1"
    } else {
        "none"
    };
    let seccomp = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.contains("\nSeccomp:"));
    // The owner of /proc/self is this process's user.
    let uid = std::fs::metadata("/proc/self").map_or(u32::MAX, |m| std::os::unix::fs::MetadataExt::uid(&m));
    let mut missing = Vec::new();
    if status.disabled {
        missing.push(finding(
            "confinement is turned off: tools run unconfined",
            "remove `sandbox.disabled` from settings.json",
        ));
    }
    if status.landlock_abi == 0 {
        missing.push(finding(
            "this kernel offers no landlock: every tool call is refused",
            "run Linux 5.13 or later with landlock in its `lsm=` boot option",
        ));
    }
    if !seccomp {
        missing.push(finding("this kernel offers no seccomp", "run a kernel built with CONFIG_SECCOMP_FILTER"));
    }
    if !status.call_cgroup {
        missing.push(finding(
            format!("no cgroup for calls (cgroup {cgroup} is not writable here): a call's processes are found by their group only"),
            "start superpi in a delegated cgroup v2 (`systemd-run --user --scope -p Delegate=yes superpi kernel`)",
        ));
    }
    if !status.readonly_outside {
        missing.push(finding(
            "no private mount namespace per call: landlock refuses writes outside the workspace, but a tool can change the attributes (mode, times) of your files there",
            "allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1; on Ubuntu, kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for superpi), or run the kernel as root",
        ));
    }
    Confinement {
        uid,
        landlock_abi: status.landlock_abi,
        seccomp,
        cgroup: cgroup.to_string(),
        call_cgroup: status.call_cgroup,
        pids_cgroup: status.pids_cgroup,
        mount_namespaces: status.readonly_outside,
        disabled: status.disabled,
        missing,
    }
}

fn executable(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first `name` on `PATH`, else in the toolchain managers' directories under `home`.
fn find_toolchain(name: &str, path_var: Option<&OsStr>, home: Option<&Path>) -> Option<PathBuf> {
    let on_path = path_var.map(std::env::split_paths).into_iter().flatten().map(|dir| dir.join(name));
    let in_home = home.into_iter().flat_map(|h| HOME_BINS.iter().map(move |dir| h.join(dir).join(name)));
    on_path.chain(in_home).find(|p| executable(p))
}

/// Where `path` stands in `grants`: readable, or the denied path that holds it.
fn readable(path: &Path, grants: &ReadGrants) -> Result<(), Option<PathBuf>> {
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if let Some(denied) = grants.denied.iter().find(|d| canonical.starts_with(d)) {
        return Err(Some(denied.clone()));
    }
    if grants.granted.iter().any(|g| canonical.starts_with(g)) { Ok(()) } else { Err(None) }
}

/// The fix of a path a tool cannot read.
fn read_fix(path: &Path, denied: Option<PathBuf>) -> String {
    match denied {
        Some(denied) => {
            format!("{} is denied: take it out of `sandbox.deny_read_paths` if it holds no secret", denied.display())
        }
        None => {
            let dir = path.parent().unwrap_or(path);
            format!("add {} to `sandbox.extra_read_paths`", dir.display())
        }
    }
}

fn toolchain(name: &str, path: Option<PathBuf>, grants: &ReadGrants) -> Toolchain {
    let Some(path) = path else {
        return Toolchain { name: name.into(), path: None, reachable: false, fix: None };
    };
    let (reachable, fix) = match readable(&path, grants) {
        Ok(()) => (true, None),
        Err(denied) => (false, Some(read_fix(&path, denied))),
    };
    Toolchain { name: name.into(), path: Some(path), reachable, fix }
}

fn mcp_server(name: &str, transport: &McpTransport, grants: &ReadGrants) -> Server {
    let server = |command: String, problem: Option<Finding>| Server {
        name: name.into(),
        command,
        can_start: problem.is_none(),
        problem,
    };
    match transport {
        McpTransport::Http { url, bearer_token_env, .. } => {
            let unset = bearer_token_env.as_ref().filter(|v| std::env::var_os(v).is_none());
            let problem = unset.map(|v| {
                finding(
                    format!("`{v}` (its bearer token) is not set"),
                    format!("set `{v}` in the kernel's environment"),
                )
            });
            server(url.clone(), problem)
        }
        McpTransport::Stdio { command, env, cwd, .. } => {
            let cwd = cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
            let path_var = env.get("PATH").map(Into::into).or_else(|| std::env::var_os("PATH"));
            let found = if command.contains('/') {
                Some(cwd.join(command)).filter(|p| executable(p))
            } else {
                find_toolchain(command, path_var.as_deref(), None)
            };
            let problem = match &found {
                None => Some(finding(
                    format!("`{command}` is not an executable file on the kernel's PATH"),
                    format!("install it, or give `mcp_servers.{name}.command` its full path"),
                )),
                // A server reads its own installation unless it sits in a denied path.
                Some(path) => match readable(path, grants) {
                    Err(Some(denied)) => Some(finding(
                        format!("{} is under the denied {}", path.display(), denied.display()),
                        read_fix(path, Some(denied)),
                    )),
                    _ => None,
                },
            };
            let shown = found.map_or_else(|| command.clone(), |p| p.display().to_string());
            server(shown, problem)
        }
    }
}

/// The settings that do not take effect.
fn ineffective(config: &SandboxConfig, settings: &Settings, grants: &ReadGrants) -> Vec<Finding> {
    let mut found = Vec::new();
    for path in &settings.sandbox.extra_read_paths {
        if !path.exists() {
            found.push(finding(
                format!("sandbox.extra_read_paths: {} does not exist", path.display()),
                "create it, or take it out of the setting",
            ));
        } else if let Err(Some(denied)) = readable(path, grants) {
            found.push(finding(
                format!("sandbox.extra_read_paths: {} is denied ({})", path.display(), denied.display()),
                "take it out of one of the two settings",
            ));
        }
    }
    let home = config.home.as_ref().and_then(|h| h.canonicalize().ok());
    for path in &settings.sandbox.deny_read_paths {
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        let in_grant = grants.granted.iter().any(|g| canonical.starts_with(g) || g.starts_with(&canonical))
            || grants.denied.iter().any(|d| canonical.starts_with(d) || d.starts_with(&canonical))
            || home.as_ref().is_some_and(|h| config.home_reads && canonical.starts_with(h));
        if !in_grant {
            found.push(finding(
                format!(
                    "sandbox.deny_read_paths: {} is inside no read grant: tools cannot read it anyway",
                    path.display()
                ),
                "take it out of the setting",
            ));
        }
    }
    found
}

/// The report as aligned text.
pub(crate) fn render(report: &Report) -> String {
    let c = &report.confinement;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut out = String::from("Confinement\n");
    let landlock = if c.landlock_abi == 0 { "none".to_string() } else { format!("ABI {}", c.landlock_abi) };
    let cgroup = match (c.call_cgroup, c.pids_cgroup) {
        (true, true) => format!("{}, delegated, bounds processes", c.cgroup),
        (true, false) => format!("{}, delegated", c.cgroup),
        (false, _) => format!("{}, not delegated", c.cgroup),
    };
    let user = if c.uid == 0 { "root".to_string() } else { format!("uid {}", c.uid) };
    let rows = [
        ["user", &user],
        ["landlock", &landlock],
        ["seccomp", yes_no(c.seccomp)],
        ["cgroup", &cgroup],
        ["mount namespaces", yes_no(c.mount_namespaces)],
        ["confinement", if c.disabled { "OFF" } else { "on" }],
    ];
    out += &table(rows.iter().map(|r| r.iter().map(|s| s.to_string()).collect()));
    out += &findings(&c.missing);

    out += "\nToolchains a tool can reach\n";
    out += &table(report.toolchains.iter().map(|t| {
        let state = match (&t.path, t.reachable) {
            (None, _) => "not found".to_string(),
            (Some(_), true) => "reachable".to_string(),
            (Some(_), false) => format!("NOT readable: {}", t.fix.as_deref().unwrap_or("")),
        };
        let path = t.path.as_ref().map_or_else(|| "-".to_string(), |p| p.display().to_string());
        vec![t.name.clone(), path, state]
    }));

    out += "\nMCP servers\n";
    if report.mcp_servers.is_empty() {
        out += "  none in settings.json\n";
    }
    out += &table(report.mcp_servers.iter().map(|s| {
        let state = match &s.problem {
            None => "can start".to_string(),
            Some(p) => format!("cannot start: {}; fix: {}", p.what, p.fix),
        };
        vec![s.name.clone(), s.command.clone(), state]
    }));

    out += "\nUnreadable to tools\n";
    if report.unreadable.is_empty() {
        out += "  nothing denied exists\n";
    }
    for path in &report.unreadable {
        out += &format!("  {}\n", path.display());
    }

    out += "\nSettings that do not take effect\n";
    if report.settings.is_empty() {
        out += "  none\n";
    }
    out += &findings(&report.settings);

    out += "\nPermission rules files\n";
    if report.permission_rules.is_empty() {
        out += "  nothing wrong\n";
    }
    out += &findings(&report.permission_rules);
    out += &table(report.backend_files.iter().map(|f| {
        let standing = match &f.fix {
            Some(fix) => format!("{}; fix: {fix}", f.standing),
            None => f.standing.clone(),
        };
        vec![format!("{} file", f.backend), f.path.display().to_string(), standing]
    }));
    out
}

/// Rows indented by two, each column but the last padded to its widest cell.
fn table(rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows.into_iter().collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let last = row.len().saturating_sub(1);
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| if i == last { cell.clone() } else { format!("{cell:<w$}", w = widths[i]) })
            .collect();
        out += &format!("  {}\n", cells.join("  "));
    }
    out
}

fn findings(found: &[Finding]) -> String {
    found.iter().map(|f| format!("  ! {}\n    fix: {}\n", f.what, f.fix)).collect()
}

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;
