//! The user's package manager settings for a server, without their tokens: an `npx -y` or
//! `uvx` server installs its package as it would outside (the user's registry, proxy, CA), yet
//! `~/.npmrc`, pip's and uv's configuration stay unreadable to it (they hold tokens). Before a
//! stdio server starts, cleaned copies are written into its state directory and named by
//! `NPM_CONFIG_USERCONFIG`, `PIP_CONFIG_FILE` and `UV_CONFIG_FILE` (unless its settings set
//! those).
//! The cleaning is pure: tested without a file.

use std::path::{Path, PathBuf};

/// Keys of an `.npmrc` that hold a credential, alone or after a `//host/path/:` scope.
const NPM_SECRETS: &[&str] =
    &["_authToken", "_auth", "_password", "username", "password", "email", "certfile", "keyfile"];

/// `text` of an `.npmrc` without its credentials: every scoped `//host/:key=` line (they hold
/// tokens, passwords and client keys) and every credential key; the rest (registry, proxy,
/// `cafile`, `strict-ssl`, scopes' registries) stays.
pub(crate) fn clean_npmrc(text: &str) -> String {
    let kept = text.lines().filter(|line| {
        let line = line.trim_start();
        let key = line.split('=').next().unwrap_or("").trim();
        !(key.starts_with("//") || NPM_SECRETS.iter().any(|s| key == *s || key.ends_with(&format!(":{s}"))))
    });
    kept.map(|l| format!("{l}\n")).collect()
}

/// `text` of a `pip.conf` without credentials: the `user:password@` of every URL taken out,
/// and `client-cert` lines dropped.
pub(crate) fn clean_pip_conf(text: &str) -> String {
    let kept = text.lines().filter(|line| !line.trim_start().starts_with("client-cert"));
    kept.map(|line| format!("{}\n", without_userinfo(line))).collect()
}

/// `text` of a `uv.toml` without credentials: the `user:password@` of every URL (an index's
/// `url`, `index-url`, `extra-index-url`, `find-links`) taken out; the rest (indexes, proxies'
/// names, `native-tls`, `python-preference`) stays.
pub(crate) fn clean_uv_toml(text: &str) -> String {
    text.lines().map(|line| format!("{}\n", without_userinfo(line))).collect()
}

/// `line` with the userinfo of each `scheme://user:pass@host` removed.
fn without_userinfo(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail.find(|c: char| c.is_whitespace() || c == '/').unwrap_or(tail.len());
        rest = match tail[..end].rfind('@') {
            Some(userinfo) => &tail[userinfo + 1..],
            None => tail,
        };
    }
    out.push_str(rest);
    out
}

/// A copy to write: the variable that names it, where the original may be, how it is cleaned,
/// its name in the state directory.
type Copy<'a> = (&'a str, &'a [PathBuf], fn(&str) -> String, &'a str);

/// Writes the cleaned copies of `home`'s package manager settings into `state_dir`: the
/// variables that name them. A file that is missing or unreadable is skipped.
pub(crate) fn write_cleaned(home: &Path, state_dir: &Path) -> Vec<(String, String)> {
    let copies: [Copy<'_>; 3] = [
        ("NPM_CONFIG_USERCONFIG", &[home.join(".npmrc")], clean_npmrc, "npmrc"),
        (
            "PIP_CONFIG_FILE",
            &[home.join(".config/pip/pip.conf"), home.join(".pip/pip.conf")],
            clean_pip_conf,
            "pip.conf",
        ),
        ("UV_CONFIG_FILE", &[home.join(".config/uv/uv.toml")], clean_uv_toml, "uv.toml"),
    ];
    let mut vars = Vec::new();
    for (var, sources, clean, name) in copies {
        let Some(text) = sources.iter().find_map(|p| std::fs::read_to_string(p).ok()) else { continue };
        let copy = state_dir.join(name);
        match std::fs::create_dir_all(state_dir).and_then(|()| std::fs::write(&copy, clean(&text))) {
            Ok(()) => vars.push((var.to_string(), copy.to_string_lossy().into_owned())),
            Err(e) => tracing::warn!("writing {}: {e}", copy.display()),
        }
    }
    vars
}

#[cfg(test)]
#[path = "package_config_tests.rs"]
mod tests;
