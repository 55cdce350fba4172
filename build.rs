//! Build script: the hardened default, its cheaper start-up, and the one opt-in that weakens it.
//!
//! The binaries are position-independent executables (Rust's default on Linux), so the kernel
//! randomizes where their code and data load. The dynamic loader applies their ~95,000
//! relative relocations at every start; where the toolchain and C library support it (binutils
//! 2.38+, glibc 2.36+), they are packed as `DT_RELR` (`-z pack-relative-relocs`), a table about
//! 1/100 the size that the loader reads faster, with the same randomization and RELRO (checked by
//! linking and running a probe; `DOCDEX_NO_RELR=1` skips it). `DOCDEX_NO_PIE=1` at build time
//! links position-dependent instead (Linux x86-64 glibc), which skips the relocations entirely
//! but gives up the randomization: opt-in only (docs/PERFORMANCE.md, "PIE"). The C parts get
//! `-fstack-protector-strong` and `-D_FORTIFY_SOURCE=2` through `.cargo/config.toml`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=DOCDEX_NO_PIE");
    println!("cargo:rerun-if-env-changed=DOCDEX_NO_RELR");
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let linux_gnu = os == "linux" && env == "gnu";
    let flag = |name: &str| std::env::var(name).is_ok_and(|v| v == "1");
    if flag("DOCDEX_NO_PIE") && linux_gnu && arch == "x86_64" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    } else if linux_gnu && !flag("DOCDEX_NO_RELR") && relr_works() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the C toolchain links a PIE with packed relative relocations that then runs: an
/// older linker refuses the flag, an older C library refuses to load the result.
fn relr_works() -> bool {
    let Ok(out) = std::env::var("OUT_DIR") else { return false };
    let dir = Path::new(&out);
    let (src, exe) = (dir.join("relr_probe.c"), dir.join("relr_probe"));
    let program = "static int x = 7; static int *p = &x; int main(void) { return *p == 7 ? 0 : 1; }\n";
    if std::fs::write(&src, program).is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let linked = Command::new(cc)
        .args(["-fPIE", "-pie", "-Wl,-z,pack-relative-relocs", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    linked && Command::new(&exe).status().is_ok_and(|s| s.success())
}
