//! Runs docdex's PII detectors over whole source trees and lists every finding, to measure
//! false positives on real repositories (docs/PRIVACY.md):
//! `cargo run --release --example pii_scan -- DIR...`

use docdex::engine::privacy;

fn main() {
    let mut total = std::collections::BTreeMap::<&str, usize>::new();
    let (mut files, mut bytes) = (0u64, 0u64);
    for dir in std::env::args().skip(1) {
        for entry in ignore::WalkBuilder::new(&dir).build().flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(data) = std::fs::read(entry.path()) else { continue };
            if data.len() > 2 * 1024 * 1024 || memchr::memchr(0, &data[..data.len().min(8192)]).is_some() {
                continue;
            }
            files += 1;
            bytes += data.len() as u64;
            let text = String::from_utf8_lossy(&data);
            for f in privacy::detect(&text) {
                let line = text[..f.range.start].matches('\n').count() + 1;
                let hit: String = text[f.range.clone()].chars().take(80).collect();
                println!("{}\t{}:{}\t{}", f.kind.label(), entry.path().display(), line, hit.replace('\n', "\\n"));
                *total.entry(f.kind.label()).or_default() += 1;
            }
        }
    }
    eprintln!("{files} files, {:.1} MB; findings: {total:?}", bytes as f64 / 1e6);
}
