//! Links the `superpi` binary with packed relative relocations (DT_RELR, glibc 2.36 and
//! binutils 2.38 or later). Why: the binary is position-independent, and its hundreds of
//! thousands of relative relocations as classic RELA entries are megabytes that the dynamic
//! loader reads at every start, so each frontend process idled with them resident. Packed,
//! they are a few kilobytes. Only the binary is linked so; test executables are not.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
