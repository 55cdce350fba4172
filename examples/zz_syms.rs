use docdex::engine::code::{analyze, CodeOutcome, Lang};
fn main() {
    for f in std::env::args().skip(1) {
        let lang = Lang::from_path(std::path::Path::new(&f)).unwrap();
        let src = std::fs::read_to_string(&f).unwrap();
        match analyze(lang, &src, &f) {
            CodeOutcome::Parsed(p) => {
                println!("== {f} ({}) errors={}", lang.name(), p.analysis.has_errors);
                for s in &p.analysis.symbols {
                    println!(
                        "{}{} {} [{}-{} lead {}] in={:?} sig={:?} ({})",
                        "  ".repeat(s.depth as usize),
                        s.kind.name(),
                        s.name,
                        s.line_start,
                        s.line_end,
                        s.lead_start,
                        s.container,
                        s.signature,
                        s.node_kind
                    );
                }
            }
            CodeOutcome::NotParsed(r) => println!("{f}: {r}"),
        }
    }
}
