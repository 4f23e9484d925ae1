//! Links the binaries with packed relative relocations (DT_RELR, glibc 2.36 and binutils 2.38
//! or later). Why: the binaries are position-independent, and their hundreds of thousands of
//! relative relocations as classic RELA entries are megabytes that the dynamic loader reads at
//! every start, so each frontend process idled with them resident. Packed, they are a few
//! kilobytes. Only the binaries are linked so; test executables are not.
//!
//! Writes the build identity both binaries carry (`build_id.rs` in OUT_DIR, read by
//! `src/exec.rs`): a hash of the sources they are built from (`build_sources.rs`), so
//! `superpi` knows a `superpi-frontend` built from other sources, whatever the files' times.
//!
//! A release `superpi-frontend` is also linked with `frontend-hot.ld` (see
//! docs/frontend-hot-layout.md).

use std::path::{Path, PathBuf};

include!("build_sources.rs");

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        if hot_layout() {
            let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
            println!("cargo:rustc-link-arg-bin=superpi-frontend=-Wl,-T,{dir}/frontend-hot.ld");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=frontend-hot.ld");
    println!("cargo:rerun-if-env-changed=SUPERPI_HOT_LAYOUT");
    println!("cargo:rerun-if-env-changed=SUPERPI_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=SUPERPI_BUILD_DATE");
    write_build_id();
}

/// Whether to link `frontend-hot.ld`: in release builds (its symbols are the release build's;
/// a debug build matches none of them), unless SUPERPI_HOT_LAYOUT=0 (a linker without `INSERT`
/// in scripts, such as mold); SUPERPI_HOT_LAYOUT=1 asks for it in any profile.
fn hot_layout() -> bool {
    match std::env::var("SUPERPI_HOT_LAYOUT").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => std::env::var("PROFILE").is_ok_and(|p| p == "release"),
    }
}

/// Writes `build_id.rs`: `BUILD_ID`, 16 hex digits: 8 of the hash of every file under
/// [`SOURCES`] (which the end-to-end tests compare with their own, see tests/build.rs), 8 of the
/// profile and the features; and `VERSION`, what `superpi --version` prints after the name: the
/// version, the identity, the commit and the build date (neither of them in the identity).
/// Cargo runs this script again when any of them changes, and once per build for both
/// binaries, so two binaries of one build carry the same identity, and a binary relinked alone
/// after a change carries another.
fn write_build_id() {
    use std::hash::Hasher;
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace = manifest.parent().and_then(Path::parent).unwrap_or(&manifest).to_path_buf();
    let root = if workspace.join("frontends/cli").is_dir() { workspace } else { manifest };
    let sources = sources_hash(&root);
    let mut hash = std::hash::DefaultHasher::new();
    for (key, value) in std::env::vars() {
        if key.starts_with("CARGO_FEATURE_") || ["PROFILE", "OPT_LEVEL", "DEBUG", "TARGET"].contains(&key.as_str()) {
            hash.write(key.as_bytes());
            hash.write(value.as_bytes());
        }
    }
    let id = format!("{:08x}{:08x}", sources as u32, hash.finish() as u32);
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let (commit, date) = (commit(&root), build_date());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("build_id.rs");
    let text = format!(
        "/// This build's identity (build.rs).\npub(crate) const BUILD_ID: [u8; 16] = *b\"{id}\";\n\
         /// The version and build identity `--version` prints.\npub(crate) const VERSION: &str = \"{version} (build {id}, commit {commit}, built {date})\";\n"
    );
    if std::fs::read_to_string(&out).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&out, text).unwrap_or_else(|err| panic!("writing {}: {err}", out.display()));
    }
}

/// The commit the sources are at: SUPERPI_BUILD_COMMIT (the dist step sets it), else what git
/// says of the workspace when this script runs (it runs again when a source changes, not at every
/// commit: a development build may name the commit before its sources'), else `unknown`.
fn commit(root: &Path) -> String {
    if let Ok(commit) = std::env::var("SUPERPI_BUILD_COMMIT") {
        return commit;
    }
    #[allow(clippy::disallowed_methods)] // a build script asking git, not a tool spawning
    let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(root).output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => "unknown".to_owned(),
    }
}

/// The build date, `YYYY-MM-DD` in UTC: SUPERPI_BUILD_DATE, else the day of SOURCE_DATE_EPOCH
/// (reproducible builds), else today's.
fn build_date() -> String {
    if let Ok(date) = std::env::var("SUPERPI_BUILD_DATE") {
        return date;
    }
    let secs = match std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse::<i64>().ok()) {
        Some(secs) => secs,
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64),
    };
    // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar, eras of 400 years).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
