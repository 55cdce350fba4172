use docdex::engine::code::{analyze, CodeOutcome, Lang};
use std::ops::ControlFlow;
fn cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let list = std::fs::read_to_string(&args[1]).unwrap();
    let files: Vec<(Lang, String, String)> = list
        .lines()
        .filter_map(|p| {
            let l = Lang::from_path(std::path::Path::new(p))?;
            Some((l, std::fs::read_to_string(p).ok()?, p.to_string()))
        })
        .collect();
    let bytes: usize = files.iter().map(|f| f.1.len()).sum();
    let mut parser = tree_sitter::Parser::new();
    let t = cpu();
    for (l, src, _) in &files {
        parser.set_language(&l.grammar()).unwrap();
        let _tree = parser.parse(src, None).unwrap();
    }
    let parse_only = cpu() - t;
    let t = cpu();
    for (l, src, _) in &files {
        parser.set_language(&l.grammar()).unwrap();
        let started = std::time::Instant::now();
        let mut cb = |_: &tree_sitter::ParseState| {
            if started.elapsed().as_secs() > 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let b = src.as_bytes();
        let _tree = parser
            .parse_with_options(
                &mut |i, _| b.get(i..).unwrap_or(&[]),
                None,
                Some(tree_sitter::ParseOptions::new().progress_callback(&mut cb)),
            )
            .unwrap();
    }
    let parse_cb = cpu() - t;
    let t = cpu();
    let mut syms = 0;
    for (l, src, p) in &files {
        if let CodeOutcome::Parsed(a) = analyze(*l, src, p) {
            syms += a.analysis.symbols.len();
        }
    }
    let an = cpu() - t;
    println!(
        "{} files {:.1} MB CPU: parse {:.3}s, parse+callback {:.3}s, analyze {:.3}s ({} symbols)",
        files.len(),
        bytes as f64 / 1e6,
        parse_only,
        parse_cb,
        an,
        syms
    );
}
