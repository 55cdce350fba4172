//! Build script: links the docdex binaries as position-dependent executables on Linux x86-64.
//!
//! A PIE binary of this size carries about 54,000 relative relocations; the dynamic loader
//! applies them at every start, copying about 220 pages of `.data.rel.ro`. That costs a short
//! command like `docdex search` about a millisecond and a half of its ~8 ms (see
//! docs/PERFORMANCE.md, "Whole-process search"). Set `DOCDEX_PIE=1` when building to keep PIE
//! (address-space randomization of the executable itself).

fn main() {
    println!("cargo:rerun-if-env-changed=DOCDEX_PIE");
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let keep_pie = std::env::var("DOCDEX_PIE").is_ok_and(|v| v == "1");
    if os == "linux" && arch == "x86_64" && env == "gnu" && !keep_pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
