//! The npm packages, in the layout Codex's `@openai/codex` uses: a small meta package,
//! `superpi`, whose bin script (dist/npm/superpi.js) runs the binary of the platform package
//! npm installed beside it; and one package per platform (`superpi-linux-x64`, ...) that holds
//! the binaries and says with `os`, `cpu` and `libc` where it runs, so npm installs only the
//! matching one of the meta package's optional dependencies. `npx -y superpi acp` is then
//! superpi's ACP agent. Written and packed (`npm pack`) into target/archives/npm/.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::{BINARIES, copy, mkdir, output, write};

/// The meta package's name: what `npx -y superpi acp` and the ACP registry entry name.
pub(crate) const META: &str = "superpi";

/// The platform packages the bin script knows: (target triple, package, os, cpu, libc).
/// Each triple's archive (`cargo xtask dist --target TRIPLE`) makes its package.
pub(crate) const PLATFORMS: [(&str, &str, &str, &str, &str); 4] = [
    ("x86_64-unknown-linux-gnu", "superpi-linux-x64", "linux", "x64", "glibc"),
    ("aarch64-unknown-linux-gnu", "superpi-linux-arm64", "linux", "arm64", "glibc"),
    ("x86_64-unknown-linux-musl", "superpi-linux-x64-musl", "linux", "x64", "musl"),
    ("aarch64-unknown-linux-musl", "superpi-linux-arm64-musl", "linux", "arm64", "musl"),
];

/// Writes and packs the meta package and `target`'s platform package, with the binaries of
/// `bin`; returns the tarballs.
pub(crate) fn packages(
    root: &Path,
    out: &Path,
    version: &str,
    target: &str,
    bin: &Path,
) -> Result<Vec<PathBuf>, String> {
    let Some(&(_, name, os, cpu, libc)) = PLATFORMS.iter().find(|p| p.0 == target) else {
        eprintln!("xtask: no npm package for {target} (npm.rs PLATFORMS)");
        return Ok(Vec::new());
    };
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|err| format!("{}: {err}", out.display()))?;
    }
    let description = "superpi, an agent runtime: one durable kernel, every protocol as a thin frontend";
    let common = |name: &str, description: String| {
        json!({
            "name": name,
            "version": version,
            "description": description,
            "license": "MIT",
            "repository": {"type": "git", "url": env!("CARGO_PKG_REPOSITORY")},
            "engines": {"node": ">=18"},
        })
    };

    let platform = out.join(name);
    mkdir(&platform.join("bin"))?;
    let mut manifest = common(name, format!("The {os}-{cpu} ({libc}) binaries of {META}: install `{META}` instead"));
    manifest["os"] = json!([os]);
    manifest["cpu"] = json!([cpu]);
    manifest["libc"] = json!([libc]);
    manifest["files"] = json!(["bin"]);
    write_manifest(&platform, &manifest)?;
    for binary in BINARIES {
        copy(&bin.join(binary), &platform.join("bin").join(binary))?;
    }
    copy(&root.join("LICENSE"), &platform.join("LICENSE"))?;

    let meta = out.join(META);
    mkdir(&meta.join("bin"))?;
    let mut manifest = common(META, description.to_owned());
    manifest["bin"] = json!({"superpi": "bin/superpi.js"});
    manifest["files"] = json!(["bin"]);
    manifest["optionalDependencies"] = PLATFORMS.iter().map(|p| (p.1.to_owned(), json!(version))).collect();
    write_manifest(&meta, &manifest)?;
    copy(&root.join("dist/npm/superpi.js"), &meta.join("bin/superpi.js"))?;
    copy(&root.join("dist/npm/README.md"), &meta.join("README.md"))?;
    copy(&root.join("LICENSE"), &meta.join("LICENSE"))?;

    let mut tarballs = Vec::new();
    for dir in [&meta, &platform] {
        let packed =
            output(Command::new("npm").args(["pack", "--silent", "--pack-destination"]).arg(out).current_dir(dir))?;
        let file = packed.lines().last().unwrap_or_default().trim();
        tarballs.push(out.join(file));
    }
    Ok(tarballs)
}

fn write_manifest(dir: &Path, manifest: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(manifest).map_err(|err| err.to_string())?;
    write(&dir.join("package.json"), &format!("{text}\n"))
}
