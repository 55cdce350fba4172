//! The shipped binary is hardened: a position-independent executable (unless built with the
//! `DOCDEX_NO_PIE=1` opt-in), full RELRO, a non-executable stack, and C parts (Tree-sitter
//! grammars, SQLite) compiled with the stack protector and `_FORTIFY_SOURCE`. Checked on the
//! binary itself with `readelf`, as checksec does.

use std::process::Command;

fn readelf(args: &[&str]) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(env!("CARGO_BIN_EXE_docdex"))
        .output()
        .expect("readelf (binutils) is needed to check the binary's hardening");
    assert!(out.status.success(), "readelf {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_binary_is_pie_with_full_relro_nx_stack_protector_and_fortify() {
    let header = readelf(&["-h"]);
    if option_env!("DOCDEX_NO_PIE") == Some("1") {
        assert!(header.contains("EXEC"), "DOCDEX_NO_PIE=1 links position-dependent: {header}");
    } else {
        assert!(header.lines().any(|l| l.contains("Type:") && l.contains("DYN")), "not a PIE: {header}");
    }
    let segments = readelf(&["-l", "-W"]);
    assert!(segments.contains("GNU_RELRO"), "no RELRO segment");
    let stack = segments.lines().find(|l| l.contains("GNU_STACK")).expect("GNU_STACK segment");
    assert!(!stack.contains("RWE"), "executable stack: {stack}");
    let dynamic = readelf(&["-d"]);
    assert!(dynamic.contains("BIND_NOW") || dynamic.contains("NOW"), "not full RELRO (no BIND_NOW): {dynamic}");
    let symbols = readelf(&["--dyn-syms", "-W"]);
    assert!(symbols.contains("__stack_chk_fail"), "no C code was compiled with the stack protector");
    let fortified: Vec<&str> =
        symbols.lines().filter_map(|l| l.split_whitespace().nth(7)).filter(|s| s.contains("_chk@")).collect();
    assert!(!fortified.is_empty(), "no fortified libc call (__*_chk): C code was not built with _FORTIFY_SOURCE");
}
