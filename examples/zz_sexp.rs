use docdex::engine::code::{lang::parse, Lang};
fn dump(n: tree_sitter::Node, src: &str, depth: usize, field: Option<&str>) {
    if !n.is_named() {
        return;
    }
    let txt = &src[n.byte_range()];
    let short: String = txt.chars().take(40).collect::<String>().replace('\n', "⏎");
    println!(
        "{}{}{} [{}-{}] {:?}",
        "  ".repeat(depth),
        field.map(|f| format!("{f}: ")).unwrap_or_default(),
        n.kind(),
        n.start_position().row + 1,
        n.end_position().row + 1,
        short
    );
    let mut c = n.walk();
    if c.goto_first_child() {
        loop {
            let f = c.field_name();
            dump(c.node(), src, depth + 1, f);
            if !c.goto_next_sibling() {
                break;
            }
        }
    }
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lang = Lang::ALL.into_iter().find(|l| l.name() == args[1]).unwrap();
    let src = std::fs::read_to_string(&args[2]).unwrap();
    let tree = parse(lang, &src).unwrap();
    dump(tree.root_node(), &src, 0, None);
}
