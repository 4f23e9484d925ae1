//! Links the binaries with packed relative relocations (DT_RELR, glibc 2.36 and binutils 2.38
//! or later). Why: the binaries are position-independent, and their hundreds of thousands of
//! relative relocations as classic RELA entries are megabytes that the dynamic loader reads at
//! every start, so each frontend process idled with them resident. Packed, they are a few
//! kilobytes. Only the binaries are linked so; test executables are not.
//!
//! `superpi-frontend` is also linked with `frontend-hot.ld` (written by `hot_code.py`): the
//! functions its roles run to start and answer a first request, gathered at the start of its
//! code, so an idle frontend's touched pages (and the neighbours each fault maps with them)
//! are those rather than most of the binary. A linker without `INSERT` in scripts (mold) can
//! build without it: SUPERPI_HOT_LAYOUT=0.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        if std::env::var_os("SUPERPI_HOT_LAYOUT").is_none_or(|v| v != "0") {
            let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
            println!("cargo:rustc-link-arg-bin=superpi-frontend=-Wl,-T,{dir}/frontend-hot.ld");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=frontend-hot.ld");
    println!("cargo:rerun-if-env-changed=SUPERPI_HOT_LAYOUT");
}
