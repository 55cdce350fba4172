//! Build script: the hardened default, and the one opt-in that weakens it.
//!
//! The binaries are position-independent executables (Rust's default on Linux), so the kernel
//! randomizes where their code and data load. `DOCDEX_NO_PIE=1` at build time links them
//! position-dependent instead (Linux x86-64 glibc): the dynamic loader then skips about 54,000
//! start-up relocations, about a millisecond and a half of a short command like `docdex search`
//! (docs/PERFORMANCE.md, "PIE"). The C parts get `-fstack-protector-strong` and
//! `-D_FORTIFY_SOURCE=2` through `.cargo/config.toml`.

fn main() {
    println!("cargo:rerun-if-env-changed=DOCDEX_NO_PIE");
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let no_pie = std::env::var("DOCDEX_NO_PIE").is_ok_and(|v| v == "1");
    if no_pie && os == "linux" && arch == "x86_64" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
