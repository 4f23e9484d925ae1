//! Writes `sources_id.rs`: the hash of the sources the `superpi` binaries are built from, as
//! their build identity starts with it (frontends/cli/build_sources.rs), so that the
//! end-to-end tests refuse a binary built from other sources than the code they test.

include!("../frontends/cli/build_sources.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.parent().unwrap_or(&manifest);
    let id = format!("{:08x}", sources_hash(root) as u32);
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("sources_id.rs");
    let text = format!("/// The hash of the binaries' sources (build.rs).\nconst SOURCES_ID: &str = \"{id}\";\n");
    if std::fs::read_to_string(&out).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&out, text).unwrap_or_else(|err| panic!("writing {}: {err}", out.display()));
    }
    println!("cargo:rerun-if-changed=build.rs");
}
