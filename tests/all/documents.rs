//! Documents beyond text: PDF (pages), DOCX (Markdown) and HTML (readable text) made by the
//! tests themselves, indexed, searched with page ranges, shown by `docdex get` (and `--page`),
//! and scanned, encrypted or corrupt files as per-file notes, never a failed run.

use crate::util::{hit_paths, quiet, write, Env};
use docdex::engine::protocol::{FileRequest, SearchRequest};
use docdex::engine::IndexOptions;
use std::path::{Path, PathBuf};

/// A hang guard, not a speed figure (figures are in docs/PERFORMANCE.md and the bench): the
/// hostile files below are indexed in seconds with their bounds (and each test asserts the
/// note or text its bound gives), so a run past this, even on a loaded machine, means a bound
/// is gone. Generous on purpose (it was 20 to 60 s, and flaked under load): a test must not flake.
pub const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(120);

/// A valid PDF with one page per entry, each line of a page drawn as a line of Helvetica
/// text; a page with no lines gets a filled rectangle only (no text layer, as a scan). With
/// `encrypt`, the trailer names a Standard security handler whose user password is not empty.
pub fn pdf(pages: &[&[&str]], encrypt: bool) -> Vec<u8> {
    let mut objects: Vec<String> = Vec::new(); // object n is objects[n - 1]
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into());
    for (i, lines) in pages.iter().enumerate() {
        let content_id = 5 + 2 * i;
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>"
        ));
        let mut stream = String::new();
        if lines.is_empty() {
            stream.push_str("0.5 g 72 72 468 648 re f\n");
        }
        for (j, line) in lines.iter().enumerate() {
            let y = 720 - 16 * j as i32;
            stream.push_str(&format!("BT /F1 12 Tf 72 {y} Td ({line}) Tj ET\n"));
        }
        objects.push(format!("<< /Length {} >>\nstream\n{stream}endstream", stream.len()));
    }
    let encrypt_id = objects.len() + 1;
    if encrypt {
        let o = "<".to_string() + &"4f".repeat(32) + ">";
        let u = "<".to_string() + &"55".repeat(32) + ">";
        objects.push(format!("<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O {o} /U {u} >>"));
    }
    let extra = if encrypt {
        format!(" /Encrypt {encrypt_id} 0 R /ID [<{}> <{}>]", "ab".repeat(16), "ab".repeat(16))
    } else {
        String::new()
    };
    let objects: Vec<Vec<u8>> = objects.into_iter().map(String::into_bytes).collect();
    pdf_with_trailer(&objects, &extra)
}

/// A DOCX made with docx-rs's writer: a title, two headed sections, a list item and a table.
pub fn docx() -> Vec<u8> {
    use docx_rs::{Docx, Paragraph, Run, Table, TableCell, TableRow};
    let p = |text: &str| Paragraph::new().add_run(Run::new().add_text(text));
    let cell = |text: &str| TableCell::new().add_paragraph(p(text));
    let mut buf = std::io::Cursor::new(Vec::new());
    Docx::new()
        .add_paragraph(p("Operations handbook").style("Title"))
        .add_paragraph(p("Deployment").style("Heading1"))
        .add_paragraph(p("Deploy from the release branch after the flamingo checklist passes."))
        .add_paragraph(p("Rollback procedure").style("Heading2"))
        .add_paragraph(p("Revert the tag, then page the on-call owner."))
        .add_table(Table::new(vec![
            TableRow::new(vec![cell("Setting"), cell("Default")]),
            TableRow::new(vec![cell("retries"), cell("7")]),
        ]))
        .build()
        .pack(&mut buf)
        .expect("pack docx");
    buf.into_inner()
}

const PAGE: &str = r#"<!doctype html><html><head><title>Pangolin care</title>
<script>var zzscriptword = "tracking";</script><style>.x { color: red }</style></head>
<body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Pangolin care</h1>
<p>Pangolins eat ants and termites. Keep the enclosure warm and humid, and weigh the animal weekly.</p>
<p>A healthy pangolin rolls into a ball when it is alarmed; this is normal behaviour and needs no treatment.</p>
<p>Feed the insect mix at dusk, when the animals wake, and remove what is left by the morning.</p>
</article></body></html>"#;

fn documents_repo(env: &Env) -> std::path::PathBuf {
    let repo = env.repo("docs");
    write(&repo, "README.md", "# Docs\n\nManuals live in `manuals/`.\n");
    let guide = pdf(
        &[
            &["Installation guide", "Unpack the archive and run the installer."],
            &["Configuration", "The quokka setting controls the cache size.", "Restart after changing it."],
            &["Troubleshooting", "Logs are written to the state directory."],
        ],
        false,
    );
    write(&repo, "manuals/guide.pdf", guide);
    write(&repo, "manuals/handbook.docx", docx());
    write(&repo, "site/pangolin.html", PAGE);
    write(&repo, "manuals/scanned.pdf", pdf(&[&[], &[]], false));
    write(&repo, "manuals/locked.pdf", pdf(&[&["Secret wombat plans"]], true));
    write(&repo, "manuals/broken.pdf", b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\ngarbage garbage\n");
    write(&repo, "manuals/broken.docx", b"PK\x03\x04 this is not really a zip archive");
    repo
}

fn search(env: &Env, repo: &Path, q: &str) -> docdex::engine::protocol::SearchResponse {
    let req = SearchRequest { query: q.into(), limit: Some(10), ..Default::default() };
    env.engine().search(repo, &req).expect("search")
}

/// An upgrade whose extraction reads documents better (PDF columns, HTML definition lists) left
/// every unchanged document with the old text until it was edited or the index rebuilt: the
/// manifest now keeps each document's extractor version, and a run with a newer one reads the
/// documents again, once.
#[test]
fn documents_extracted_by_an_older_docdex_are_read_again_once() {
    let env = Env::new();
    let repo = documents_repo(&env);
    let first = env.engine().index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(first.files, 4, "{first:?}");
    // What an older docdex wrote: no extractor version on the entries.
    let mut manifests: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![env.home().join("state/repos")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.file_name().is_some_and(|n| n == "manifest.json") {
                manifests.push(p);
            }
        }
    }
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifests[0]).unwrap()).unwrap();
    let mut versions = 0;
    for (_, e) in m["files"].as_object_mut().unwrap() {
        versions += usize::from(e.as_object_mut().unwrap().remove("extractor").is_some());
    }
    assert_eq!(versions, 3, "the PDF, the DOCX and the HTML page carry it, README.md not: {m}");
    std::fs::write(&manifests[0], m.to_string()).unwrap();
    let again = env.engine().index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!((again.updated + again.added, again.unchanged), (3, 1), "{again:?}");
    let third = env.engine().index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!((third.updated + third.added, third.unchanged), (0, 4), "read again once: {third:?}");
}

#[test]
fn pdf_docx_and_html_are_indexed_as_text_with_page_ranges() {
    let env = Env::new();
    let repo = documents_repo(&env);
    let summary =
        env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("a run with bad documents succeeds");
    let note = |name: &str| {
        summary.skipped.iter().find(|s| s.path.ends_with(name)).map(|s| s.reason.clone()).unwrap_or_default()
    };
    assert!(note("scanned.pdf").starts_with("scanned PDF (no text layer"), "{:?}", summary.skipped);
    assert!(note("locked.pdf").starts_with("encrypted PDF"), "{:?}", summary.skipped);
    assert!(note("broken.pdf").starts_with("corrupt PDF"), "{:?}", summary.skipped);
    assert!(note("broken.docx").starts_with("corrupt DOCX"), "{:?}", summary.skipped);
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    assert_eq!(summary.files, 4, "README, guide.pdf, handbook.docx, pangolin.html");

    // PDF: the hit is on page 2, its snippet is extracted text, not PDF syntax.
    let r = search(&env, &repo, "quokka cache size");
    let hit = r.results.iter().find(|h| h.path == "manuals/guide.pdf").expect("guide.pdf hit");
    assert_eq!((hit.page_start, hit.page_end), (Some(2), Some(2)), "{hit:?}");
    assert_eq!(hit.lang, "pdf");
    assert!(hit.snippet.contains("quokka setting controls"), "{}", hit.snippet);
    assert!(!hit.snippet.contains("Tj"), "{}", hit.snippet);
    // DOCX: Markdown with headings; HTML: the article, not its script.
    let r = search(&env, &repo, "flamingo checklist");
    let hit = r.results.iter().find(|h| h.path == "manuals/handbook.docx").expect("handbook hit");
    assert!(hit.snippet.contains("flamingo checklist"), "{}", hit.snippet);
    assert_eq!((hit.page_start, hit.page_end), (None, None));
    assert_eq!(hit_paths(&env.engine(), &repo, "pangolin enclosure humid")[0], "site/pangolin.html");
    assert!(hit_paths(&env.engine(), &repo, "zzscriptword").is_empty(), "script text is not readable text");
    assert!(hit_paths(&env.engine(), &repo, "wombat").is_empty(), "an encrypted PDF is not read");

    // `get` shows the extracted text with the lines hits cite.
    let engine = env.engine();
    let md = engine.get_file(&repo, &FileRequest::new("manuals/handbook.docx", None)).expect("get docx");
    assert_eq!(md.format.as_deref(), Some("docx"));
    assert!(md.text.contains("# Operations handbook"), "{}", md.text);
    assert!(md.text.contains("\n# Deployment\n"), "{}", md.text);
    assert!(md.text.contains("\n## Rollback procedure\n"), "{}", md.text);
    assert!(md.text.contains("| retries | 7 |"), "{}", md.text);
    let page2 = engine
        .get_file(&repo, &FileRequest { page: Some(2), ..FileRequest::new("manuals/guide.pdf", None) })
        .expect("get --page 2");
    assert_eq!((page2.page_start, page2.page_end, page2.total_pages), (Some(2), Some(2), Some(3)));
    assert!(page2.text.starts_with("Configuration"), "{}", page2.text);
    assert!(page2.text.contains("quokka") && !page2.text.contains("Installation") && !page2.text.contains("Logs"));
    let hit = &search(&env, &repo, "quokka").results[0];
    let cited = engine
        .get_file(&repo, &FileRequest::new("manuals/guide.pdf", Some((hit.line_start, hit.line_end))))
        .expect("get the cited lines");
    assert!(cited.text.contains("quokka"), "the hit's lines are lines of the extracted text: {}", cited.text);
    let err = engine
        .get_file(&repo, &FileRequest { page: Some(9), ..FileRequest::new("manuals/guide.pdf", None) })
        .expect_err("no page 9");
    assert!(err.to_string().contains("has 3 pages"), "{err}");
    let err = engine.get_file(&repo, &FileRequest::new("manuals/locked.pdf", None)).expect_err("locked");
    assert!(err.to_string().contains("encrypted PDF"), "{err}");

    // A second run finds nothing changed; the notes stay notes.
    let again = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("reindex");
    assert_eq!((again.added, again.updated), (0, 0), "{again:?}");
    let status = env.engine().status(&repo).expect("status");
    assert!(status.warnings.iter().any(|w| w.contains("scanned PDF")), "{:?}", status.warnings);
}

#[test]
fn an_unsupported_format_says_so_and_a_docx_without_its_relationships_is_read() {
    let env = Env::new();
    let repo = env.repo("office");
    // An OpenDocument file is a ZIP like a DOCX: binary to a sniffer, a document to its owner.
    write(&repo, "minutes.odt", b"PK\x03\x04\x14\x00\x00\x00mimetypeapplication/vnd.oasis.opendocument.text\x00\x00");
    write(&repo, "budget.XLSX", b"PK\x03\x04\x00\x00\x00\x00");
    // A DOCX whose word/_rels/document.xml.rels is missing (its name changed in the archive).
    let mut bytes = docx();
    let (from, to) = (b"word/_rels/document.xml.rels", b"word/_rels/documenX.xml.rels");
    while let Some(i) = bytes.windows(from.len()).position(|w| w == from) {
        bytes[i..i + to.len()].copy_from_slice(to);
    }
    write(&repo, "norels.docx", bytes);
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("minutes.odt (unsupported document format (.odt): convert it to .docx or .pdf to index it)"),
        "{text}"
    );
    assert!(text.contains("budget.XLSX (unsupported document format (.xlsx): export it to .csv"), "{text}");
    assert!(!text.contains("binary") && !text.contains("corrupt DOCX"), "{text}");
    let r = search(&env, &repo, "flamingo checklist");
    assert!(r.results.iter().any(|h| h.path == "norels.docx"), "{:?}", r.results);
}

/// `docdex get` (and `open` over HTTP and MCP, the same engine call) of an `.odt` said it was
/// hidden or ignored and to un-ignore it, while `docdex status` said unsupported document
/// format (tour14 F4): it says what status says, and which formats docdex reads. An `.odt`
/// that is ignored is still refused as ignored.
#[test]
fn get_of_an_unsupported_document_says_its_format_is_not_read() {
    let env = Env::new();
    let repo = env.repo("odt");
    write(&repo, "docs/notes.odt", b"PK\x03\x04\x14\x00\x00\x00mimetypeapplication/vnd.oasis.opendocument.text\x00");
    write(&repo, "private/old.odt", b"PK\x03\x04");
    write(&repo, ".docdexignore", "private/\n");
    write(&repo, "readme.md", "# Notes\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let refused = |file: &str| -> serde_json::Value {
        let out = env.run(&["get", "--repo", r, file, "--json"]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        serde_json::from_slice(&out.stdout).expect("a JSON error")
    };
    let v = refused("docs/notes.odt");
    assert_eq!(v["error"]["code"], "path_not_served", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("docs/notes.odt is in an unsupported document format (.odt)"), "{msg}");
    assert!(msg.contains("convert it to .docx or .pdf") && msg.contains("docdex reads PDF, DOCX and HTML"), "{msg}");
    assert!(!msg.contains("hidden or ignored"), "{msg}");
    let v = refused("private/old.odt");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("hidden or ignored") && !msg.contains("unsupported"), "{msg}");
}

#[test]
fn search_json_and_get_page_on_the_command_line() {
    let env = Env::new();
    let repo = documents_repo(&env);
    let repo_s = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", repo_s]).status.success());
    let json = env.json(&["search", "--repo", repo_s, "--json", "troubleshooting logs state directory"]);
    let hit = json["results"].as_array().unwrap().iter().find(|h| h["path"] == "manuals/guide.pdf").expect("hit");
    assert_eq!(hit["page_start"], 3);
    assert_eq!(hit["page_end"], 3);
    let out = env.run(&["get", "--repo", repo_s, "manuals/guide.pdf", "--page", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("    1: Installation guide"), "{text}");
    assert!(!text.contains("quokka"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("page 1 of 3"));
    let json = env.json(&["get", "--repo", repo_s, "manuals/guide.pdf", "--page", "2", "--json"]);
    assert_eq!(json["page_start"], 2);
    assert_eq!(json["total_pages"], 3);
    let out = env.run(&["get", "--repo", repo_s, "README.md", "--page", "1"]);
    assert!(!out.status.success(), "--page on a text file is an error");
}

#[test]
fn a_document_edited_in_place_is_reextracted_and_a_deleted_one_leaves_the_index() {
    let env = Env::new();
    let repo = env.repo("d");
    write(&repo, "a.pdf", pdf(&[&["The heron migrates in spring."]], false));
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(hit_paths(&engine, &repo, "heron"), ["a.pdf"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "a.pdf", pdf(&[&["Nothing here."], &["The egret nests in reeds."]], false));
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert!(hit_paths(&engine, &repo, "heron").is_empty());
    let r = search(&env, &repo, "egret");
    assert_eq!(r.results[0].page_start, Some(2));
    std::fs::remove_file(repo.join("a.pdf")).unwrap();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert!(hit_paths(&engine, &repo, "egret").is_empty());
    let state = engine.resolve_repo(&repo).unwrap().data_dir();
    let kept = std::fs::read_dir(state.join("extracted")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0, "the extracted text of a deleted document goes too");
}

/// The size limit is the source file's: a PDF over `max_file_size_bytes` is a per-file note
/// before anything is extracted, however little text it holds.
#[test]
fn the_size_limit_applies_to_the_source_document() {
    let env = Env::new();
    let repo = env.repo("docs");
    let guide = pdf(&[&["Installation guide", "The quokka setting controls the cache size."]], false);
    write(&repo, "guide.pdf", &guide);
    write(&repo, "notes.md", "# Notes\n\nThe quokka setting is described in the guide.\n");
    env.write_config(&format!("[index]\nmax_file_size_bytes = {}\n", guide.len() - 1));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let skipped = summary.skipped.iter().find(|s| s.path == "guide.pdf").expect("guide.pdf is skipped");
    assert!(skipped.reason.starts_with("too large"), "{}", skipped.reason);
    let hits: Vec<String> = search(&env, &repo, "quokka setting").results.into_iter().map(|h| h.path).collect();
    assert_eq!(hits, ["notes.md"]);
}

/// A one-page PDF whose content stream is `content` compressed with Flate; `encrypt_inline`
/// writes a Standard encryption dictionary directly in the trailer (not by reference).
fn flate_pdf(content: &[u8], encrypt_inline: bool) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(content).unwrap();
    let data = z.finish().unwrap();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"
            .to_vec(),
    ];
    objects.push(stream_object("/Filter /FlateDecode", &data));
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    let encrypt = if encrypt_inline {
        format!(
            " /Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <{}> /U <{}> >> /ID [<{}> <{}>]",
            "4f".repeat(32),
            "55".repeat(32),
            "ab".repeat(16),
            "ab".repeat(16)
        )
    } else {
        String::new()
    };
    pdf_with_trailer(&objects, &encrypt)
}

/// A DOCX (every part a Word package has, relationships included) whose body holds `body`
/// as one paragraph, plus an extra part `extra` of `extra_len` spaces.
fn bomb_docx(body_len: usize, extra: &str, extra_len: usize) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let w = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
    let parts: Vec<(&str, String)> = vec![
        ("[Content_Types].xml", r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/></Types>"#.into()),
        ("_rels/.rels", r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.into()),
        ("word/_rels/document.xml.rels", r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>"#.into()),
    ];
    for (name, text) in parts {
        zip.start_file(name, opts).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.start_file("word/document.xml", opts).unwrap();
    zip.write_all(format!(r#"<?xml version="1.0"?><w:document {w}><w:body><w:p><w:r><w:t>Kestrel roosting survey</w:t></w:r></w:p><w:p><w:r><w:t>"#).as_bytes()).unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..body_len >> 20 {
        zip.write_all(&spaces).unwrap();
    }
    zip.write_all(b"</w:t></w:r></w:p></w:body></w:document>").unwrap();
    zip.start_file(extra, opts).unwrap();
    zip.write_all(format!(r#"<?xml version="1.0"?><w:styles {w}>"#).as_bytes()).unwrap();
    for _ in 0..extra_len >> 20 {
        zip.write_all(&spaces).unwrap();
    }
    zip.write_all(b"</w:styles>").unwrap();
    zip.finish().unwrap().into_inner()
}

/// Bombs stop at a bound instead of taking the machine: a 40 KB PDF whose content stream
/// inflated to 200 MiB (a stream of repeated text operators took 10 GB and two minutes), and a
/// DOCX whose body inflated to 200 MiB (600 MB took 3 GB, and 600 MB of extracted text was
/// kept beside the index) are refused with a note; a DOCX with a huge part the text does not
/// need (styles) is read without inflating it; an encryption dictionary written in the trailer
/// is "encrypted", not "corrupt (no pages)".
#[test]
fn document_bombs_are_refused_at_a_bound_and_inline_encryption_is_named() {
    let env = Env::new();
    let repo = env.repo("bombs");
    let mut content = b"BT /F1 12 Tf 72 712 Td (Osprey) Tj ET\n".to_vec();
    content.resize(200 << 20, b' ');
    write(&repo, "bomb.pdf", flate_pdf(&content, false));
    write(&repo, "fine.pdf", flate_pdf(b"BT /F1 12 Tf 72 712 Td (Osprey nesting log) Tj ET", false));
    write(&repo, "inline-locked.pdf", flate_pdf(b"BT /F1 12 Tf 72 712 Td (Hidden) Tj ET", true));
    write(&repo, "bomb.docx", bomb_docx(200 << 20, "word/styles.xml", 0));
    write(&repo, "heavy-styles.docx", bomb_docx(0, "word/styles.xml", 300 << 20));
    let t = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    assert!(
        note("bomb.pdf").starts_with("PDF too large to extract (a stream inflates to over 16 MiB"),
        "{:?}",
        summary.skipped
    );
    assert!(
        note("bomb.docx").starts_with("DOCX too large to extract (the document body inflates to over 32 MiB"),
        "{:?}",
        summary.skipped
    );
    assert!(note("inline-locked.pdf").starts_with("encrypted PDF"), "{:?}", summary.skipped);
    assert_eq!(hit_paths(&env.engine(), &repo, "osprey nesting"), ["fine.pdf"]);
    assert_eq!(hit_paths(&env.engine(), &repo, "kestrel roosting"), ["heavy-styles.docx"]);
    let err = env.engine().get_file(&repo, &FileRequest::new("bomb.docx", None)).expect_err("refused");
    assert!(err.to_string().contains("too large to extract"), "{err}");
}

/// HTML nested deeper than any real page (a 2 MB file of 200,000 nested `div`s) overflowed an
/// indexing thread's stack and aborted the whole run ("fatal runtime error: stack overflow"),
/// and `docdex get` on it ran for minutes (the parser and Readability are quadratic in depth);
/// mis-nested formatting tags (`<b><div></b>`) build the same depth. Such a page is read flat,
/// at once, in the index and in `web-fetch` alike.
#[test]
fn deeply_nested_html_is_read_flat_instead_of_aborting_the_index() {
    let env = Env::new();
    let repo = env.repo("deep");
    let deep =
        format!("<html><body>{}deep heron text{}</body></html>", "<div>".repeat(200_000), "</div>".repeat(200_000));
    let misnested = format!(
        "<html><title>Mis &amp; nested</title><body>{}egret tally</body></html>",
        "<b><div></b>".repeat(50_000)
    );
    write(&repo, "deep.html", &deep);
    write(&repo, "misnested.html", &misnested);
    write(&repo, "normal.html", PAGE);
    let t = std::time::Instant::now();
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    assert_eq!(hit_paths(&env.engine(), &repo, "deep heron"), ["deep.html"]);
    assert_eq!(hit_paths(&env.engine(), &repo, "egret tally"), ["misnested.html"]);
    let md = env.engine().get_file(&repo, &FileRequest::new("misnested.html", None)).expect("get");
    assert!(md.text.contains("# Mis & nested") && md.text.contains("egret tally"), "{}", md.text);
    let normal = env.engine().get_file(&repo, &FileRequest::new("normal.html", None)).expect("get");
    assert!(normal.text.contains("Pangolins eat ants") && !normal.text.contains("zzscriptword"), "{}", normal.text);

    // The web tier reads such a page the same way.
    let site =
        crate::web_support::Fixture::start("127.0.0.1", move |_, _, _| crate::web_support::Reply::html(deep.clone()));
    env.write_config("[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n");
    let t = std::time::Instant::now();
    let page = env
        .engine()
        .web_fetch(&docdex::engine::web::types::WebFetchRequest {
            url: site.url("/deep"),
            refresh: false,
            explicit: true,
        })
        .expect("fetch");
    assert!(page.page.markdown.contains("deep heron text"), "{:?}", page.page.markdown);
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
}

/// Pages and HTML files in another character set were read as UTF-8, so every accented letter
/// became U+FFFD ("caf� crème"): plain HTTP ignored the `charset` of the Content-Type, and
/// neither looked at `<meta charset>`. Both now decode by the BOM, the header, then the meta tag.
#[test]
fn html_in_latin_1_or_windows_1252_keeps_its_accents() {
    let env = Env::new();
    let repo = env.repo("latin");
    let page = b"<html><head><meta charset=\"windows-1252\"><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e \x96 recette</p></body></html>";
    write(&repo, "recette.html", page);
    assert!(env.run(&["index", "--repo", repo.to_str().unwrap()]).status.success());
    let got = env.engine().get_file(&repo, &FileRequest::new("recette.html", None)).expect("get");
    assert!(got.text.contains("Crème brûlée – recette") && got.text.contains("# Café"), "{}", got.text);
    assert_eq!(hit_paths(&env.engine(), &repo, "crème"), ["recette.html"]);

    let site = crate::web_support::Fixture::start("127.0.0.1", |_, _, _| {
        let body = String::from_utf8_lossy(b"<html><body><p>Cr\xc3\xa8me</p></body></html>").into_owned();
        crate::web_support::Reply {
            content_type: "text/html; charset=iso-8859-1",
            ..crate::web_support::Reply::html(body)
        }
    });
    env.write_config("[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n");
    let r = env
        .engine()
        .web_fetch(&docdex::engine::web::types::WebFetchRequest { url: site.url("/p"), refresh: false, explicit: true })
        .expect("fetch");
    // The fixture sends "Crème" as UTF-8 bytes but says ISO-8859-1: read by the header, they are
    // the two Latin-1 characters Ã and ¨.
    assert!(r.page.markdown.contains("CrÃ¨me"), "{:?}", r.page.markdown);
}

/// A DOCX whose body is `inner` (inside `<w:body>`), with the parts a Word package has.
fn docx_with_body(inner: &str) -> Vec<u8> {
    docx_body_xml(&format!(
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{inner}</w:body></w:document>"#
    ))
}

/// A DOCX whose `word/document.xml` is `xml`, whole.
fn docx_body_xml(xml: &str) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let parts = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>"#,
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#,
        ),
        ("word/document.xml", xml),
    ];
    for (name, text) in parts {
        zip.start_file(name, opts).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// 50,000 tables nested in table cells (a 2 MB DOCX) overflowed the stack in docx-rs's
/// recursive parser and aborted the whole index run; such a body is refused with a note,
/// while tables nested as deep as real documents go are read.
#[test]
fn a_docx_nested_past_any_real_document_is_a_note_not_an_abort() {
    let env = Env::new();
    let repo = env.repo("tables");
    let nested = |n: usize, word: &str| {
        format!(
            "<w:p><w:r><w:t>{word}</w:t></w:r></w:p><w:tbl>{}{}</w:tbl>",
            "<w:tr><w:tc><w:tbl>".repeat(n),
            "</w:tbl></w:tc></w:tr>".repeat(n)
        )
    };
    write(&repo, "abyss.docx", docx_with_body(&nested(50_000, "abyss")));
    write(&repo, "report.docx", docx_with_body(&nested(20, "plover census")));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let note = summary.skipped.iter().find(|s| s.path == "abyss.docx").map(|s| s.reason.clone()).unwrap_or_default();
    assert!(
        note.starts_with("corrupt DOCX (the document body nests elements deeper than 200 levels"),
        "{:?}",
        summary.skipped
    );
    assert_eq!(hit_paths(&env.engine(), &repo, "plover census"), ["report.docx"]);
}

/// A PDF from raw object bodies (object n is `objects[n - 1]`; 1 is the catalog).
fn raw_pdf(objects: &[String]) -> Vec<u8> {
    raw_pdf_bytes(&objects.iter().map(|o| o.as_bytes().to_vec()).collect::<Vec<_>>())
}

/// A one-page PDF whose page draws form 6 and whose forms (objects 6..) draw `edges[i]`.
fn forms_pdf(text: &str, edges: &[Vec<usize>]) -> Vec<u8> {
    let stream = |body: &str, dict: &str| format!("<< {dict} /Length {} >>\nstream\n{body}\nendstream", body.len());
    let content = format!("BT /F1 12 Tf 72 712 Td ({text}) Tj ET /X6 Do");
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /XObject << /X6 6 0 R >> >> >>".to_string(),
        stream(&content, ""),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    for targets in edges {
        let names: String = targets.iter().map(|t| format!("/X{t} {t} 0 R ")).collect();
        let draws: String = targets.iter().map(|t| format!("/X{t} Do ")).collect();
        let dict = format!("/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << {names}>> >>");
        objects.push(stream(&draws, &dict));
    }
    raw_pdf(&objects)
}

/// A Form XObject that drew itself sent pdf-extract into endless recursion: a stack overflow
/// that aborted the whole index run. Loops and chains deeper than any real document are
/// notes; a form drawn by two others (a diamond) is fine.
#[test]
fn a_pdf_whose_forms_draw_themselves_is_a_note_not_an_abort() {
    let env = Env::new();
    let repo = env.repo("forms");
    write(&repo, "self.pdf", forms_pdf("Self", &[vec![6]]));
    write(&repo, "loop.pdf", forms_pdf("Loop", &[vec![7], vec![6]]));
    let chain: Vec<Vec<usize>> = (0..40).map(|i| if i < 39 { vec![7 + i] } else { vec![] }).collect();
    write(&repo, "chain.pdf", forms_pdf("Chain", &chain));
    write(&repo, "diamond.pdf", forms_pdf("Sandpiper diamond", &[vec![7, 8], vec![9], vec![9], vec![]]));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    assert_eq!(note("self.pdf"), "corrupt PDF (a form XObject draws itself)", "{:?}", summary.skipped);
    assert_eq!(note("loop.pdf"), "corrupt PDF (a form XObject draws itself)");
    assert_eq!(note("chain.pdf"), "corrupt PDF (form XObjects nest deeper than 32 levels)");
    assert_eq!(hit_paths(&env.engine(), &repo, "sandpiper diamond"), ["diamond.pdf"]);
}

/// A DOCX body declaring entities (billion laughs, an external `SYSTEM` file) was refused as
/// `corrupt DOCX (Failed to read xml.)`, naming nothing (tour25 F2); it is named, nothing is
/// expanded or read, and the run goes on.
#[test]
fn a_docx_declaring_xml_entities_is_named_and_nothing_is_expanded() {
    let env = Env::new();
    let repo = env.repo("entities");
    let w = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
    let body = |dtd: &str, text: &str| {
        format!(
            r#"<?xml version="1.0"?>{dtd}<w:document {w}><w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:body></w:document>"#
        )
    };
    let mut laughs = String::from(r#"<!DOCTYPE d [<!ENTITY l0 "lol">"#);
    for i in 1..10 {
        laughs.push_str(&format!(r#"<!ENTITY l{i} "{}">"#, format!("&l{};", i - 1).repeat(10)));
    }
    laughs.push_str("]>");
    write(&repo, "laughs.docx", docx_body_xml(&body(&laughs, "&l9;")));
    let xxe = r#"<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>"#;
    write(&repo, "xxe.docx", docx_body_xml(&body(xxe, "Ruff &x;")));
    write(&repo, "plain.docx", docx_body_xml(&body("", "Dunlin plain")));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    for file in ["laughs.docx", "xxe.docx"] {
        assert!(note(file).starts_with("corrupt DOCX (the document body declares a DTD"), "{:?}", summary.skipped);
    }
    assert_eq!(hit_paths(&env.engine(), &repo, "dunlin plain"), ["plain.docx"]);
    assert!(hit_paths(&env.engine(), &repo, "root").is_empty(), "/etc/passwd was not read");
}

/// A one-page PDF whose page (object 3) says `text` with `page_extra` in its dictionary, under
/// page-tree node 2 (`node_extra`), with node 6 (`/Parent 2 0 R`) beside them.
fn parent_pdf(text: &str, page_extra: &str, node_extra: &str) -> Vec<u8> {
    let content = format!("BT /F1 12 Tf 72 712 Td ({text}) Tj ET");
    raw_pdf(&[
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!("<< /Type /Pages /Kids [3 0 R] /Count 1 {node_extra} >>"),
        format!("<< /Type /Page /Contents 4 0 R {page_extra} >>"),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
        "<< /Type /Pages /Kids [] /Count 0 /Parent 2 0 R >>".to_string(),
    ])
}

/// Page-tree nodes naming each other (or a page itself) as `/Parent` sent pdf-extract's
/// inherited-attribute lookup (`/Resources`, when no node has them) into endless recursion: a
/// 700-byte file overflowed the stack and aborted the whole index run (tour25 F1). The loop is
/// cut where it closes, so such a page reads as the same page without the loop, and a page
/// inheriting from before the loop keeps what it inherits.
#[test]
fn a_pdf_whose_page_tree_parents_loop_is_read_not_an_abort() {
    let env = Env::new();
    let repo = env.repo("parents");
    let bare = "/Parent 2 0 R /MediaBox [0 0 612 792]";
    write(&repo, "loop.pdf", parent_pdf("Avocet loop", bare, "/Parent 6 0 R"));
    write(&repo, "self.pdf", parent_pdf("Avocet loop", "/Parent 3 0 R /MediaBox [0 0 612 792]", ""));
    write(&repo, "noloop.pdf", parent_pdf("Avocet loop", bare, ""));
    let inherited = "/MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Parent 6 0 R";
    write(&repo, "inherit.pdf", parent_pdf("Godwit inherit", "/Parent 2 0 R", inherited));
    write(&repo, "plain.pdf", pdf(&[&["Curlew plain"]], false));
    let started = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(started.elapsed() < HANG_GUARD);
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone());
    assert_eq!(note("loop.pdf"), note("noloop.pdf"), "{:?}", summary.skipped);
    assert_eq!(note("self.pdf"), note("noloop.pdf"));
    assert_eq!(note("inherit.pdf"), None);
    assert_eq!(hit_paths(&env.engine(), &repo, "godwit inherit"), ["inherit.pdf"]);
    assert_eq!(hit_paths(&env.engine(), &repo, "curlew plain"), ["plain.pdf"]);
    // A page with no /MediaBox anywhere is read as US Letter (it was `the parser failed`).
    let no_box = "/Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >>";
    write(&repo, "nobox.pdf", parent_pdf("Whimbrel boxless", no_box, "/Parent 6 0 R"));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(summary.skipped.iter().all(|s| s.path != "nobox.pdf"), "{:?}", summary.skipped);
    assert_eq!(hit_paths(&env.engine(), &repo, "whimbrel boxless"), ["nobox.pdf"]);
    let mut avocet = hit_paths(&env.engine(), &repo, "avocet loop");
    avocet.sort();
    let expected: &[&str] = if note("noloop.pdf").is_none() { &["loop.pdf", "noloop.pdf", "self.pdf"] } else { &[] };
    assert_eq!(avocet, expected);
}

/// A PDF from raw object bodies as bytes (object n is `objects[n - 1]`; 1 is the catalog).
fn raw_pdf_bytes(objects: &[Vec<u8>]) -> Vec<u8> {
    pdf_with_trailer(objects, "")
}

/// [`raw_pdf_bytes`] with `trailer_extra` (entries such as `/Encrypt`) in the trailer.
fn pdf_with_trailer(objects: &[Vec<u8>], trailer_extra: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R{trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1)
            .as_bytes(),
    );
    out
}

fn stream_object(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut s = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    s.extend_from_slice(data);
    s.extend_from_slice(b"\nendstream");
    s
}

/// A one-page PDF whose content stream (object 4) is `data` under `dict` (its filters), with
/// `extra` objects from 6 on (the page names 6 as its image `/Im1`).
fn filtered_pdf(dict: &str, data: &[u8], extra: &[Vec<u8>]) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>".to_vec(),
        stream_object(dict, data),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    objects.extend_from_slice(extra);
    raw_pdf_bytes(&objects)
}

fn lzw(data: &[u8]) -> Vec<u8> {
    weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8).encode(data).unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// The bomb bound counted Flate only, and only as a stream's first filter, by zlib alone: an
/// LZW stream (LZW expands over a thousand to one), a Flate stream behind an LZW one, a Flate
/// stream whose bad zlib header sends lopdf to raw deflate, an object stream lopdf unpacks while
/// loading, a predictor whose `/Columns` sizes its row buffers, and an image drawn with `Do`
/// (pdf-extract decoded it whole and read its bytes as text operators) were all decoded
/// unbounded. Each is now counted as lopdf decodes it: a note with its reason, the others read.
#[test]
fn pdf_streams_are_bounded_by_what_every_filter_decodes_to() {
    use std::io::Write;
    let env = Env::new();
    let repo = env.repo("lzw");
    let mut content = b"BT /F1 12 Tf 72 712 Td (Osprey) Tj ET\n".to_vec();
    content.resize(64 << 20, b' ');
    let bomb = lzw(&content);
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    write(&repo, "lzw.pdf", filtered_pdf("/Filter /LZWDecode", &bomb, &[]));
    write(&repo, "chain.pdf", filtered_pdf("/Filter [/FlateDecode /LZWDecode]", &zlib(&bomb), &[]));
    let mut raw = flate2::write::DeflateEncoder::new(vec![0u8, 0], flate2::Compression::best());
    raw.write_all(&content).unwrap();
    write(&repo, "headerless.pdf", filtered_pdf("/Filter /FlateDecode", &raw.finish().unwrap(), &[]));
    let text = b"BT /F1 12 Tf 72 712 Td (Osprey nesting log) Tj ET";
    let objstm = stream_object("/Type /ObjStm /N 1 /First 4 /Filter /LZWDecode", &bomb);
    write(&repo, "objstm.pdf", filtered_pdf("", text, &[objstm]));
    let params = "/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 20000000 >>";
    write(&repo, "predictor.pdf", filtered_pdf(params, &zlib(text), &[]));
    let image = stream_object(
        "/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8",
        b"BT /F1 12 Tf 72 600 Td (Spurious pixels) Tj ET",
    );
    let drawn = b"BT /F1 12 Tf 72 712 Td (Heron census) Tj ET /Im1 Do";
    write(&repo, "image.pdf", filtered_pdf("/Filter /LZWDecode", &lzw(drawn), &[image]));
    let t = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    let objstm = "PDF too large to extract (an object stream inflates to over 16 MiB)";
    assert_eq!(note("objstm.pdf"), objstm, "refused before lopdf unpacks it");
    for bomb in ["lzw.pdf", "chain.pdf", "headerless.pdf", "predictor.pdf"] {
        assert_eq!(
            note(bomb),
            "PDF too large to extract (a stream inflates to over 16 MiB)",
            "{bomb}: {:?}",
            summary.skipped
        );
    }
    assert_eq!(note("image.pdf"), "");
    assert_eq!(hit_paths(&env.engine(), &repo, "heron census"), ["image.pdf"]);
    assert!(hit_paths(&env.engine(), &repo, "spurious pixels").is_empty());
}

/// A one-page PDF whose cross-reference section is a stream with `dict` (W, Index, Size,
/// filters) and `data`.
fn xref_stream_pdf(dict: &str, data: &[u8]) -> Vec<u8> {
    let text = b"BT /F1 12 Tf 72 712 Td (Curlew roosting tally) Tj ET";
    let mut out = filtered_pdf("", text, &[]);
    let end = out.windows(4).position(|w| w == b"xref").unwrap();
    out.truncate(end);
    let at = out.len();
    out.extend_from_slice(b"6 0 obj\n");
    out.extend_from_slice(&stream_object(&format!("/Type /XRef /Root 1 0 R {dict}"), data));
    out.extend_from_slice(format!("\nendobj\nstartxref\n{at}\n%%EOF\n").as_bytes());
    out
}

/// lopdf reads a cross-reference stream whole while loading, before any check could run: a
/// 700-byte PDF whose stream has `/W [0 0 0]` and an `/Index` of 30 million objects took over
/// 4.8 GB (one map entry per object, no byte read for any), huge field widths are buffers of
/// that size, and the stream itself may be a bomb. Each is a note; a sound stream is read.
#[test]
fn hostile_cross_reference_streams_are_notes_before_lopdf_loads_them() {
    let env = Env::new();
    let repo = env.repo("xref");
    let entries = |offsets: &[usize]| -> Vec<u8> {
        let mut v = vec![0u8, 0, 0, 0, 0, 0xff];
        for &o in offsets {
            v.push(1);
            v.extend_from_slice(&(o as u32).to_be_bytes());
            v.push(0);
        }
        v
    };
    let sound = xref_stream_pdf("", b"");
    let offsets: Vec<usize> =
        (1..=5).map(|n| memchr::memmem::find(&sound, format!("\n{n} 0 obj").as_bytes()).unwrap() + 1).collect();
    let table = entries(&offsets);
    write(&repo, "sound.pdf", xref_stream_pdf("/Size 6 /W [1 4 1]", &table));
    write(&repo, "zeros.pdf", xref_stream_pdf("/Size 7 /W [0 0 0] /Index [0 30000000]", b""));
    write(&repo, "wide.pdf", xref_stream_pdf("/Size 6 /W [1 4000000000000 1]", &table));
    let mut bomb = table.clone();
    bomb.resize(64 << 20, 0);
    write(&repo, "bomb.pdf", xref_stream_pdf("/Size 6 /W [1 4 1] /Filter /Fl#61teDecode", &zlib(&bomb)));
    let t = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    assert_eq!(note("zeros.pdf"), "corrupt PDF (its cross-reference streams list over 2000000 objects)");
    assert_eq!(note("wide.pdf"), "corrupt PDF (a cross-reference field is wider than 8 bytes)");
    assert_eq!(note("bomb.pdf"), "PDF too large to extract (a cross-reference stream inflates to over 16 MiB)");
    assert_eq!(note("sound.pdf"), "", "{:?}", summary.skipped);
    assert_eq!(hit_paths(&env.engine(), &repo, "curlew roosting"), ["sound.pdf"]);
}

/// A PDF drawing `text` in a font (object 5) kept in the first of `containers` object streams
/// (6 on), each padded with `pad` spaces and compressed; its cross-reference section is a
/// stream, as a file with object streams has. With `user`, it is encrypted (RC4, 40 bits, by
/// lopdf itself) with that user password.
fn objstm_pdf(user: Option<&str>, text: &str, containers: u32, pad: usize) -> Vec<u8> {
    use pdf_extract::{encryption, Document, EncryptionState, EncryptionVersion, Object, Permissions, Stream};
    let file_id = Object::String(vec![0xab; 16], pdf_extract::StringFormat::Hexadecimal);
    let mut doc = Document::with_version("1.5");
    doc.trailer.set("ID", Object::Array(vec![file_id.clone(), file_id]));
    let version = EncryptionVersion::V1 {
        document: &doc,
        owner_password: "owner",
        user_password: user.unwrap_or(""),
        permissions: Permissions::default(),
    };
    let state = EncryptionState::try_from(version).unwrap();
    let encrypted = |n: u32, dict: &str, data: Vec<u8>| -> Vec<u8> {
        if user.is_none() {
            return stream_object(dict, &data);
        }
        let mut stream = Object::Stream(Stream::new(pdf_extract::Dictionary::new(), data));
        encryption::encrypt_object(&state, (n, 0), &mut stream).unwrap();
        stream_object(dict, &stream.as_stream().unwrap().content)
    };
    let mut objects: Vec<(u32, Vec<u8>)> = vec![
        (1, b"<< /Type /Catalog /Pages 2 0 R >>".to_vec()),
        (2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec()),
        (3, b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>".to_vec()),
        (4, encrypted(4, "", format!("BT /F1 12 Tf 72 712 Td ({text}) Tj ET").into_bytes())),
    ];
    let mut held = b"5 0 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec();
    held.resize(held.len() + pad, b' ');
    let packed = zlib(&held);
    for n in 6..6 + containers {
        objects.push((n, encrypted(n, "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", packed.clone())));
    }
    let hex = |b: &[u8]| b.iter().map(|c| format!("{c:02x}")).collect::<String>();
    let entries: String = state
        .encode()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Object::Name(n) => format!("/{}", String::from_utf8_lossy(n)),
                Object::String(s, _) => format!("<{}>", hex(s)),
                other => format!("{}", other.as_i64().unwrap()),
            };
            format!("/{} {v} ", String::from_utf8_lossy(k))
        })
        .collect();
    let encrypt_id = 6 + containers;
    let encrypt = if user.is_some() { entries } else { String::new() }; // else an empty placeholder
    objects.push((encrypt_id, format!("<< {encrypt}>>").into_bytes()));
    let mut out = b"%PDF-1.5\n".to_vec();
    let mut table = vec![0u8, 0, 0, 0, 0, 0xff, 0xff];
    for (n, body) in &objects {
        table.push(1);
        table.extend_from_slice(&(out.len() as u32).to_be_bytes());
        table.extend_from_slice(&[0, 0]);
        out.extend_from_slice(format!("{n} 0 obj\n").as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
        if *n == 4 {
            table.extend_from_slice(&[2, 0, 0, 0, 6, 0, 0]); // object 5: first in object stream 6
        }
    }
    let xref_id = encrypt_id + 1;
    table.push(1);
    table.extend_from_slice(&(out.len() as u32).to_be_bytes());
    table.extend_from_slice(&[0, 0]);
    let at = out.len();
    let id = "ab".repeat(16);
    let dict = format!(
        "/Type /XRef /Size {} /W [1 4 2] /Root 1 0 R {} /ID [<{id}> <{id}>]",
        xref_id + 1,
        if user.is_some() { format!("/Encrypt {encrypt_id} 0 R") } else { String::new() }
    );
    out.extend_from_slice(format!("{xref_id} 0 obj\n").as_bytes());
    out.extend_from_slice(&stream_object(&dict, &table));
    out.extend_from_slice(format!("\nendobj\nstartxref\n{at}\n%%EOF\n").as_bytes());
    out
}

/// lopdf runs no load filter on an encrypted PDF: it decrypted and unpacked every object stream
/// whole, before any bound, so a small encrypted file could inflate to gigabytes while loading
/// (and an unencrypted file's object streams were bounded one by one, never together). Object
/// streams are now unpacked by docdex, decrypted first, all measured before any is unpacked
/// (16 MiB each, 128 MiB together); sound files are read, a locked one is a note as before.
#[test]
fn encrypted_pdfs_unpack_their_object_streams_within_the_bounds() {
    let env = Env::new();
    let repo = env.repo("encrypted");
    write(&repo, "sound.pdf", objstm_pdf(Some(""), "Bittern boom count", 1, 0));
    write(&repo, "bomb.pdf", objstm_pdf(Some(""), "Bittern bomb", 1, 64 << 20));
    write(&repo, "many.pdf", objstm_pdf(Some(""), "Bittern many", 9, 15 << 20));
    write(&repo, "locked.pdf", objstm_pdf(Some("secret"), "Bittern locked", 1, 0));
    write(&repo, "plain.pdf", objstm_pdf(None, "Spoonbill roost tally", 1, 0));
    write(&repo, "plain-many.pdf", objstm_pdf(None, "Spoonbill many", 9, 15 << 20));
    let t = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    assert_eq!(note("sound.pdf"), "", "{:?}", summary.skipped);
    assert_eq!(hit_paths(&env.engine(), &repo, "bittern boom"), ["sound.pdf"]);
    assert_eq!(note("plain.pdf"), "", "{:?}", summary.skipped);
    assert_eq!(hit_paths(&env.engine(), &repo, "spoonbill roost"), ["plain.pdf"]);
    assert_eq!(note("bomb.pdf"), "PDF too large to extract (an object stream inflates to over 16 MiB)");
    let many = "PDF too large to extract (its object streams inflate to over 128 MiB)";
    assert_eq!((note("many.pdf").as_str(), note("plain-many.pdf").as_str()), (many, many));
    assert_eq!(note("locked.pdf"), "encrypted PDF (needs a password)");
}

/// docx-rs holds each paragraph and run in about 5 KB: a DOCX of 5 million empty paragraphs
/// (30 MB of XML under the body bound, 30 KB zipped) took over 5 GB, and 200,000 runs in one
/// paragraph 1 GB. A body of more paragraphs and runs than any real document is a note.
#[test]
fn a_docx_of_millions_of_empty_paragraphs_is_a_note_not_gigabytes() {
    let env = Env::new();
    let repo = env.repo("many");
    let first = "<w:p><w:r><w:t>Godwit flock</w:t></w:r></w:p>";
    write(&repo, "paragraphs.docx", docx_with_body(&format!("{first}{}", "<w:p/>".repeat(5_000_000))));
    let runs = format!("{first}<x:p xmlns:x=\"urn:x\">{}</x:p>", "<x:r/>".repeat(200_000));
    write(&repo, "runs.docx", docx_with_body(&runs));
    let fine = format!("{}<w:p><w:r><w:t>Dunlin roost</w:t></w:r></w:p>", "<w:p/>".repeat(5_000));
    write(&repo, "fine.docx", docx_with_body(&fine));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    let over = "DOCX too large to extract (the document body holds over 60000 paragraphs and runs)";
    assert_eq!(note("paragraphs.docx"), over, "{:?}", summary.skipped);
    assert_eq!(note("runs.docx"), over);
    assert_eq!(hit_paths(&env.engine(), &repo, "dunlin roost"), ["fine.docx"]);
}

/// A PDF of `n` pages (objects 6..) that all show content stream 4 (`content`, Flate) with
/// resources 5 (font F1, forms `forms` as `/X7`, `/X8`, ... objects 7.. are never pages).
fn shared_pages_pdf(n: usize, content: &[u8], forms: &[Vec<u8>]) -> Vec<u8> {
    let first_page = 7 + forms.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", first_page + i)).collect();
    let names: String = (0..forms.len()).map(|i| format!("/X{} {} 0 R ", 7 + i, 7 + i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        stream_object("/Filter /FlateDecode", &zlib(content)),
        format!("<< /Font << /F1 3 0 R >> /XObject << {names}>> >>").into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>".to_vec(),
    ];
    objects.extend(forms.iter().cloned());
    for _ in 0..n {
        objects
            .push(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources 5 0 R /Contents 4 0 R >>".to_vec());
    }
    raw_pdf_bytes(&objects)
}

/// A form drawing `body` with `resources` (none: it draws with its caller's).
fn form(body: &[u8], resources: &str) -> Vec<u8> {
    let dict = format!("/Type /XObject /Subtype /Form /BBox [0 0 10 10] {resources} /Filter /FlateDecode");
    stream_object(&dict, &zlib(body))
}

/// Every stream was within its bound while extraction decoded and parsed a page's content for
/// each page showing it, and a form for each time it is drawn: 200 pages sharing a 15 MiB
/// content stream took 5.6 s (5,000, minutes), a form drawn 10,000 times or forms drawing forms
/// a thousand times over, longer still. What all pages would decode is now bounded (256 MiB);
/// shared streams and forms drawn on every page of a real document are read.
#[test]
fn pdf_pages_and_forms_drawn_again_and_again_are_bounded() {
    let env = Env::new();
    let repo = env.repo("pages");
    let mut big = b"BT /F1 12 Tf 72 712 Td (Whimbrel) Tj ET\n".to_vec();
    big.resize(15 << 20, b' ');
    write(&repo, "shared.pdf", shared_pages_pdf(200, &big, &[]));
    let mut body = b"BT /F1 12 Tf 72 700 Td (Stint) Tj ET\n".to_vec();
    body.resize(64 << 10, b' ');
    let draws = "/X7 Do ".repeat(10_000);
    write(&repo, "drawn.pdf", shared_pages_pdf(1, draws.as_bytes(), &[form(&body, "/Resources 5 0 R")]));
    let own = "/Resources << /Font << /F1 3 0 R >> /XObject << /X8 8 0 R >> >>";
    let nested = [form("/X8 Do ".repeat(1_000).as_bytes(), own), form(&body[..1024], "")];
    write(&repo, "nested.pdf", shared_pages_pdf(1, "/X7 Do ".repeat(1_000).as_bytes(), &nested));
    // The logo's resources (the pages') name the logo itself; it never draws itself.
    let logo = form(b"BT /F1 8 Tf 10 10 Td (Sanderling logo) Tj ET", "/Resources 5 0 R");
    // A form without resources draws with the page's, which name the form itself: pdf-extract
    // recursed until the stack overflowed (the resources-only check saw no resources).
    write(&repo, "inherited.pdf", shared_pages_pdf(1, b"/X7 Do", &[form(b"/X7 Do", "")]));
    let page = b"BT /F1 12 Tf 72 712 Td (Knot survey page) Tj ET /X7 Do /X7 Do";
    write(&repo, "logo.pdf", shared_pages_pdf(50, page, &[logo]));
    let t = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    let over = "PDF too large to extract (its pages would have extraction decode over 256 MiB (the same streams drawn again and again))";
    for file in ["shared.pdf", "drawn.pdf", "nested.pdf"] {
        assert_eq!(note(file), over, "{file}: {:?}", summary.skipped);
    }
    assert_eq!(note("inherited.pdf"), "corrupt PDF (a form XObject draws itself)");
    let mut hits = hit_paths(&env.engine(), &repo, "knot survey sanderling logo");
    hits.dedup();
    assert_eq!(hits, ["logo.pdf"]);
}

/// pdf-extract walks the whole page tree again for every page it reads: 40,000 pages (a 3.5 MB
/// file) took 68 s in a debug build for the 5,000 docdex reads. The tree is cut to the pages
/// read first (13 s; `pdf::tests` checks the cut tree); the first 5,000 pages are the text.
#[test]
fn a_pdf_of_tens_of_thousands_of_pages_is_read_to_its_page_limit_in_seconds() {
    let env = Env::new();
    let repo = env.repo("many");
    let page = b"BT /F1 12 Tf 72 712 Td (Turnstone) Tj ET";
    write(&repo, "many.pdf", shared_pages_pdf(40_000, page, &[]));
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);
    let last = env.engine().get_file(&repo, &FileRequest { page: Some(5_000), ..FileRequest::new("many.pdf", None) });
    assert!(last.expect("page 5000").text.contains("Turnstone"));
    let past = env.engine().get_file(&repo, &FileRequest { page: Some(5_001), ..FileRequest::new("many.pdf", None) });
    assert!(past.is_err());
}

/// HTML the parser and Readability handle superlinearly: one tag of 600,000 attributes (7 MB)
/// ran for minutes (each attribute compared with those before it), 9.5 MB of `&amp;` took
/// 48 s. A page over 2 MiB, or with a tag of over 1,000 attributes, is read flat, at once.
#[test]
fn html_the_parser_is_quadratic_on_is_read_flat() {
    let env = Env::new();
    let repo = env.repo("html");
    let attrs: Vec<String> = (0..600_000).map(|i| format!("a{i}=\"x\"")).collect();
    write(&repo, "attrs.html", format!("<html><body><p {}>Crake census</p></body></html>", attrs.join(" ")));
    write(
        &repo,
        "entities.html",
        format!("<html><body><p>{} Moorhen tally</p></body></html>", "&amp;".repeat(1_900_000)),
    );
    write(&repo, "site/pangolin.html", PAGE);
    let t = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);
    assert_eq!(hit_paths(&env.engine(), &repo, "crake census"), ["attrs.html"]);
    assert_eq!(hit_paths(&env.engine(), &repo, "moorhen tally"), ["entities.html"]);
    let text = env.engine().get_file(&repo, &FileRequest::new("site/pangolin.html", None)).unwrap().text;
    assert!(text.contains("Pangolin care") && !text.contains("zzscriptword"), "a small page reads as before");
}

/// A one-page PDF drawing each `(x, y, text)` in 10 pt Helvetica, in the order given.
fn placed_pdf(draws: &[(u32, u32, &str)]) -> Vec<u8> {
    let stream: String = draws.iter().map(|(x, y, t)| format!("BT /F1 10 Tf {x} {y} Td ({t}) Tj ET\n")).collect();
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [4 0 R] /Count 1 >>".into(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>"
            .into(),
        format!("<< /Length {} >>\nstream\n{stream}endstream", stream.len()),
    ];
    raw_pdf(&objects)
}

/// A page in two columns that draws both columns of each line in turn came out with the two
/// columns' lines glued into one ("...mammals that Keepers weigh every..."). Each column is
/// read whole now, the left one first; a table's wide gaps (short cells) keep their rows.
#[test]
fn a_two_column_pdf_page_is_read_column_by_column() {
    let env = Env::new();
    let repo = env.repo("cols");
    let left =
        ["Pangolins are scaly mammals that", "eat ants and termites at night and", "sleep in burrows during the day."];
    let right = ["Keepers weigh every animal once", "a week at dawn and record it in", "the ledger kept by the vet."];
    let mut draws = vec![(72, 740, "Pangolin care, a keepers handbook")];
    for (i, (l, r)) in left.iter().zip(right).enumerate() {
        let y = 720 - 14 * i as u32;
        draws.extend([(72, y, *l), (320, y, r)]);
    }
    std::fs::write(repo.join("columns.pdf"), placed_pdf(&draws)).unwrap();
    let table = [
        (72, 720, "Name"),
        (320, 720, "Weight"),
        (72, 706, "Bao"),
        (320, 706, "12 kg"),
        (72, 692, "Lin"),
        (320, 692, "9 kg"),
        (72, 678, "Mei"),
        (320, 678, "10 kg"),
    ];
    std::fs::write(repo.join("table.pdf"), placed_pdf(&table)).unwrap();
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let text = |name: &str| {
        let f = env.engine().get_file(&repo, &FileRequest::new(name, None)).expect("get");
        f.text.lines().map(|l| l.trim().to_string()).collect::<Vec<_>>()
    };
    let mut expected = vec!["Pangolin care, a keepers handbook".to_string(), String::new()];
    expected.extend(left.iter().chain(&right).map(|s| s.to_string()));
    assert_eq!(text("columns.pdf"), expected);
    assert_eq!(text("table.pdf"), ["Name Weight", "Bao 12 kg", "Lin 9 kg", "Mei 10 kg"]);
}

/// The non-blank lines of an indexed file, trimmed.
fn text_lines(env: &Env, repo: &Path, name: &str) -> Vec<String> {
    let f = env.engine().get_file(repo, &FileRequest::new(name, None)).expect("get");
    f.text.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect()
}

/// A page in three columns, with a title and a figure's caption spanning the page between two
/// blocks of columns, each column's lines at baselines of their own and drawn row by row across
/// the page, was read with only its most common gutter found, the blocks in the left column
/// and lines of different columns glued. It is read title, the columns of the first block one
/// by one, caption, the columns of the second; a table's short cells still keep their rows.
#[test]
fn a_pdf_page_in_three_columns_between_full_width_blocks_is_read_block_by_block() {
    let env = Env::new();
    let repo = env.repo("cols3");
    let title = "Pangolin care, a keepers handbook for the night house, the burrows and the yard";
    let caption = "Figure 1: a pangolin rolled into a ball, as drawn by the keepers of the night house";
    let block = |b: usize| -> [Vec<String>; 3] {
        std::array::from_fn(|c| (0..3).map(|l| format!("block {b} column {c} line {l} of text")).collect())
    };
    let (first, second) = (block(1), block(2));
    let mut draws: Vec<(u32, u32, String)> = vec![(72, 740, title.to_string())];
    for (top, cols) in [(710u32, &first), (600, &second)] {
        for l in 0..3 {
            for (c, col) in cols.iter().enumerate() {
                // Baselines 3 points apart from one column to the next.
                draws.push((72 + 178 * c as u32, top - 14 * l as u32 - 3 * c as u32, col[l].clone()));
            }
        }
    }
    draws.push((72, 640, caption.to_string()));
    let draws: Vec<(u32, u32, &str)> = draws.iter().map(|(x, y, t)| (*x, *y, t.as_str())).collect();
    std::fs::write(repo.join("three.pdf"), placed_pdf(&draws)).unwrap();
    let table = [
        (72, 740, title),
        (72, 720, "Name"),
        (250, 720, "Weight"),
        (428, 720, "Keeper"),
        (72, 706, "Bao"),
        (250, 706, "12 kg"),
        (428, 706, "Ann"),
        (72, 692, "Lin"),
        (250, 692, "9 kg"),
        (428, 692, "Ola"),
        (72, 678, "Mei"),
        (250, 678, "10 kg"),
        (428, 678, "Kit"),
    ];
    std::fs::write(repo.join("table3.pdf"), placed_pdf(&table)).unwrap();
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let mut expected = vec![title.to_string()];
    expected.extend(first.iter().flatten().cloned());
    expected.push(caption.to_string());
    expected.extend(second.iter().flatten().cloned());
    assert_eq!(text_lines(&env, &repo, "three.pdf"), expected);
    assert_eq!(
        text_lines(&env, &repo, "table3.pdf"),
        [title, "Name Weight Keeper", "Bao 12 kg Ann", "Lin 9 kg Ola", "Mei 10 kg Kit"]
    );
}

/// Two columns whose lines do not align (a leading of 14 points on the left, 11 on the right),
/// drawn top down across the page as one sorted stream: each column is read whole, the left one
/// first (before, a right line after a wide gap on a nearby baseline was glued to a left one).
#[test]
fn pdf_columns_at_different_baselines_are_read_column_by_column() {
    let env = Env::new();
    let repo = env.repo("offset");
    let left: Vec<String> = (0..4).map(|i| format!("the left column says line {i} here")).collect();
    let right: Vec<String> = (0..5).map(|i| format!("the right column says line {i} too")).collect();
    let mut draws: Vec<(u32, u32, &str)> =
        left.iter().enumerate().map(|(i, t)| (72, 720 - 14 * i as u32, t.as_str())).collect();
    draws.extend(right.iter().enumerate().map(|(i, t)| (320, 716 - 11 * i as u32, t.as_str())));
    draws.sort_by_key(|&(x, y, _)| (std::cmp::Reverse(y), x));
    std::fs::write(repo.join("offset.pdf"), placed_pdf(&draws)).unwrap();
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let expected: Vec<String> = left.iter().chain(&right).cloned().collect();
    assert_eq!(text_lines(&env, &repo, "offset.pdf"), expected);
}

/// A table whose cells hold long text, wrapped over lines of their own, makes a gutter as two
/// columns of prose do, and was read as columns: every left cell, then every right one, so a
/// row's two halves ended up a page apart. Its rows (a blank band across both columns, each row
/// starting in both, cells of different heights) are read row by row now, each cell whole.
#[test]
fn a_pdf_table_of_long_cells_is_read_row_by_row() {
    let env = Env::new();
    let repo = env.repo("longtable");
    let rows: [(&[&str], &[&str]); 3] = [
        (
            &["Weigh every pangolin on the", "scales by the night house door"],
            &["Write the weight in the ledger", "kept by the vet, in grams, with", "the date and the keeper on duty"],
        ),
        (
            &["Clean the burrows and change", "the bedding of dry oak leaves"],
            &["Old bedding goes to the compost", "heap behind the yard fence"],
        ),
        (&["Feed the insect mix at dusk"], &["Remove what is left by morning", "and note how much was eaten"]),
    ];
    let title = "Night house duties, a table for the keepers of the pangolin burrows";
    let mut draws: Vec<(u32, u32, &str)> = vec![(72, 740, title)];
    let mut top = 716;
    let mut expected = vec![title.to_string()];
    for (left, right) in rows {
        for (x, cell) in [(72, left), (320, right)] {
            draws.extend(cell.iter().enumerate().map(|(i, t)| (x, top - 12 * i as u32, *t)));
            expected.extend(cell.iter().map(|t| t.to_string()));
        }
        top -= 12 * left.len().max(right.len()) as u32 + 12;
    }
    std::fs::write(repo.join("duties.pdf"), placed_pdf(&draws)).unwrap();
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert_eq!(text_lines(&env, &repo, "duties.pdf"), expected);
    let text = env.engine().get_file(&repo, &FileRequest::new("duties.pdf", None)).unwrap().text;
    assert!(text.contains("door\nWrite the weight") && text.contains("duty\n\nClean"), "rows apart: {text:?}");
}

/// A table whose rows are one line each, evenly spaced as a column's lines with no blank band
/// between them, makes a gutter when its cells are long and was read as columns: every cell of
/// the left column, then every one of the right, so a row's values were lines apart. Its cells
/// end where their text does (the next row's first word would have fitted after most of them,
/// where prose breaks a line only when it does not), so it is read row by row now: a row of
/// one-line cells on one line, a row with a wrapped cell (no gap either) cell by cell.
#[test]
fn a_pdf_table_without_row_gaps_is_read_row_by_row() {
    let env = Env::new();
    let repo = env.repo("gridtable");
    let title = "Night house duties, a table for the keepers of the pangolin burrows";
    let rows: [(&str, &[&str]); 5] = [
        ("Duty of the keeper on night call", &["When and how it is done"]),
        ("Weigh every pangolin", &["At dawn, on the scales by the door"]),
        ("Clean the burrows", &["Each week, with fresh oak leaves", "from the yard, old ones composted"]),
        ("Feed the insect mix", &["At dusk, one bowl for each animal"]),
        ("Check the heating", &["Every night, above twenty degrees"]),
    ];
    let mut draws: Vec<(u32, u32, &str)> = vec![(72, 740, title)];
    let mut y = 716;
    for (left, right) in rows {
        draws.push((72, y, left));
        for line in right {
            draws.push((320, y, line));
            y -= 12;
        }
    }
    std::fs::write(repo.join("grid.pdf"), placed_pdf(&draws)).unwrap();
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert_eq!(
        text_lines(&env, &repo, "grid.pdf"),
        [
            title,
            "Duty of the keeper on night call When and how it is done",
            "Weigh every pangolin At dawn, on the scales by the door",
            "Clean the burrows",
            "Each week, with fresh oak leaves",
            "from the yard, old ones composted",
            "Feed the insect mix At dusk, one bowl for each animal",
            "Check the heating Every night, above twenty degrees",
        ]
    );
}

/// A caption crossing the gutter between the middle and right columns of three, but not the
/// left one, split the page as a full-width block does: the left column was cut at the caption
/// and read in two halves around it. It is read where it stands within the columns it spans:
/// the left column whole, then the middle and right columns above it, the caption, and those
/// two columns below it.
#[test]
fn a_pdf_block_spanning_two_of_three_columns_is_read_within_them() {
    let env = Env::new();
    let repo = env.repo("span2");
    let title = "Pangolin care, a keepers handbook for the night house, the burrows and the yard";
    let caption = "Figure 2: a pangolin asleep in its burrow, drawn by a keeper";
    let left: Vec<String> = (0..8).map(|l| format!("the left column runs on, line {l}")).collect();
    let part =
        |p: &str, c: usize| -> Vec<String> { (0..3).map(|l| format!("{p} column {c} line {l} of text")).collect() };
    let (above, below) = ([part("above", 1), part("above", 2)], [part("below", 1), part("below", 2)]);
    let mut draws: Vec<(u32, u32, String)> = vec![(72, 740, title.to_string())];
    for (l, text) in left.iter().enumerate() {
        let y = 710 - 14 * l as u32;
        draws.push((72, y, text.clone()));
        let (cols, row) = if l < 3 { (&above, l) } else { (&below, l.wrapping_sub(5)) };
        if row < 3 {
            for (c, col) in cols.iter().enumerate() {
                draws.push((250 + 178 * c as u32, y, col[row].clone()));
            }
        }
        if l == 3 {
            draws.push((250, y - 6, caption.to_string()));
        }
    }
    let draws: Vec<(u32, u32, &str)> = draws.iter().map(|(x, y, t)| (*x, *y, t.as_str())).collect();
    std::fs::write(repo.join("span.pdf"), placed_pdf(&draws)).unwrap();
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let mut expected = vec![title.to_string()];
    expected.extend(left.iter().cloned());
    expected.extend(above.iter().flatten().cloned());
    expected.push(caption.to_string());
    expected.extend(below.iter().flatten().cloned());
    assert_eq!(text_lines(&env, &repo, "span.pdf"), expected);
}

/// A notebook as Jupyter writes it (indent 1, each source a list of lines), with a text output
/// and a base64 PNG the index must not hold.
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": [
    "# Tamandua survey\n",
    "\n",
    "The tamandua census counts anteaters along the river trail."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "metadata": {},
   "outputs": [
    {"name": "stdout", "output_type": "stream", "text": ["printed quetzal output\n"]},
    {"data": {"image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"}, "metadata": {}, "output_type": "display_data"}
   ],
   "source": [
    "def weigh_armadillo(grams):\n",
    "    return grams / 1000"
   ]
  }
 ],
 "metadata": {"kernelspec": {"name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

/// A notebook was indexed as its JSON, so a hit's snippet was escaped JSON with outputs and
/// metadata (tour14 F5): its cells are the text now, a `# %%` marker line before each, outputs
/// left out, and `get` shows the same lines hits cite. A notebook that is not JSON is a note.
#[test]
fn a_notebook_is_indexed_as_its_cells_and_a_malformed_one_is_a_note() {
    let env = Env::new();
    let repo = env.repo("nb");
    write(&repo, "docs/analysis.ipynb", NOTEBOOK);
    write(&repo, "docs/broken.ipynb", "{\"cells\": [{\"cell_type\": \"code\", \"source\": \"x =");
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let skipped = summary.skipped.iter().find(|s| s.path == "docs/broken.ipynb").expect("broken.ipynb is a note");
    assert!(skipped.reason.starts_with("corrupt Jupyter notebook (not valid JSON"), "{}", skipped.reason);
    for (query, needle) in
        [("weigh_armadillo", "def weigh_armadillo(grams):"), ("tamandua census", "The tamandua census")]
    {
        let r = search(&env, &repo, query);
        let hit = r.results.iter().find(|h| h.path == "docs/analysis.ipynb").expect("the notebook is found");
        assert_eq!(hit.lang, "notebook");
        assert!(hit.snippet.contains(needle), "{query}: {}", hit.snippet);
        for json in ["\\n", "\"source\"", "\"cell_type\"", "outputs", "iVBOR"] {
            assert!(!hit.snippet.contains(json), "{query}: a clean snippet, no {json}: {}", hit.snippet);
        }
    }
    assert!(hit_paths(&env.engine(), &repo, "quetzal").is_empty(), "outputs are not indexed");
    let doc = env.engine().get_file(&repo, &FileRequest::new("docs/analysis.ipynb", None)).expect("get");
    assert_eq!(doc.format.as_deref(), Some("notebook"));
    assert_eq!(
        doc.text,
        "# %% [markdown]\n# Tamandua survey\n\nThe tamandua census counts anteaters along the river trail.\n\n\
         # %%\ndef weigh_armadillo(grams):\n    return grams / 1000"
    );
}

/// A file whose extension lies (a PNG named `.pdf`, `.docx`, `.ipynb`, an ELF binary named
/// `.docx`) is named for what its first bytes are; it was `corrupt PDF (couldn't parse input:
/// invalid file header)` and the like (tour25 F6). A truly broken PDF stays `corrupt PDF`.
#[test]
fn a_file_whose_extension_lies_is_named_for_what_it_is() {
    let env = Env::new();
    let repo = env.repo("liars");
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
    write(&repo, "x.pdf", png);
    write(&repo, "x.docx", png);
    write(&repo, "x.ipynb", png);
    write(&repo, "tool.docx", b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".as_slice());
    write(&repo, "broken.pdf", b"%PDF-1.4\nnot really\n".as_slice());
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone()).unwrap_or_default();
    assert_eq!(note("x.pdf"), "not a PDF (its bytes are a PNG image)", "{:?}", summary.skipped);
    assert_eq!(note("x.docx"), "not a DOCX (its bytes are a PNG image)");
    assert_eq!(note("x.ipynb"), "not a Jupyter notebook (its bytes are a PNG image)");
    assert_eq!(note("tool.docx"), "not a DOCX (its bytes are an ELF executable)");
    assert!(note("broken.pdf").starts_with("corrupt PDF"), "{:?}", summary.skipped);
}

/// A notebook of `cells` code cells, each with a base64 PNG output of `image_bytes` (76-column
/// lines in one string, as Jupyter writes it) and an `application/json` output of `numbers`
/// small numbers: cheap as text, a node each in a parse tree. Each cell's source names it.
fn heavy_notebook(cells: usize, image_bytes: usize, numbers: usize) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut image = String::with_capacity(image_bytes + image_bytes / 76 * 2);
    for i in 0..image_bytes {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        image.push(alphabet[(seed % 64) as usize] as char);
        if i % 76 == 75 {
            image.push_str("\\n");
        }
    }
    let values = (0..numbers).map(|n| (n % 10).to_string()).collect::<Vec<_>>().join(",");
    let cell = |i: usize| {
        format!(
            r##"{{"cell_type": "code", "execution_count": {i}, "metadata": {{}}, "source": ["plot_burrows({i})\n", "# aardwolf burrow {i}"],
 "outputs": [{{"output_type": "display_data", "metadata": {{}}, "data": {{"image/png": "{image}", "text/plain": ["<Figure>"]}}}},
  {{"output_type": "execute_result", "execution_count": {i}, "metadata": {{}}, "data": {{"application/json": {{"values": [{values}]}}}}}}]}}"##
        )
    };
    let cells: Vec<String> = (0..cells).map(cell).collect();
    format!(r#"{{"cells": [{}], "metadata": {{}}, "nbformat": 4, "nbformat_minor": 5}}"#, cells.join(",\n"))
}

/// Peak resident set size in KiB of `docdex index --repo <repo>` (its own, from `wait4`).
fn index_peak_rss_kib(env: &Env, repo: &Path) -> u64 {
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which also gives its usage
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["index", "--repo", repo.to_str().expect("utf-8 path"), "--json"])
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run docdex index");
    let mut status = 0;
    // SAFETY: wait4 fills the status and rusage we own, for the child we spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "docdex index failed: {status}");
    usage.ru_maxrss as u64
}

/// A notebook was parsed whole into a `serde_json::Value` tree, outputs included: a 42 MB
/// notebook of images and JSON outputs peaked at 258 MB, against 53 MB for a small one
/// (tour25 F4). Its outputs are skipped as they are parsed now: the whole `docdex index`
/// process stays within twice the file's size over indexing a small notebook, and the cells
/// are the same text.
#[test]
fn a_notebook_of_large_outputs_is_read_in_memory_near_its_size() {
    let env = Env::new();
    env.write_config("[index]\nmax_file_size_bytes = 100000000\n");
    let small = env.repo("small");
    write(&small, "small.ipynb", heavy_notebook(1, 100, 10));
    let heavy = env.repo("heavy");
    let notebook = heavy_notebook(120, 100_000, 30_000);
    write(&heavy, "heavy.ipynb", &notebook);
    let started = std::time::Instant::now();
    let base = index_peak_rss_kib(&env, &small);
    let peak = index_peak_rss_kib(&env, &heavy);
    assert!(started.elapsed() < HANG_GUARD);
    let size_kib = notebook.len() as u64 / 1024;
    assert!(
        peak < base + 2 * size_kib,
        "indexing a {size_kib} KiB notebook peaked at {peak} KiB, a small one at {base} KiB"
    );
    let mut hits = hit_paths(&env.engine(), &heavy, "aardwolf burrow 119");
    hits.dedup();
    assert_eq!(hits, ["heavy.ipynb"]);
    let doc = env.engine().get_file(&heavy, &FileRequest::new("heavy.ipynb", None)).expect("get");
    assert!(
        doc.text.starts_with("# %%\nplot_burrows(0)\n# aardwolf burrow 0\n\n# %%\nplot_burrows(1)\n"),
        "{}",
        doc.text.chars().take(200).collect::<String>()
    );
    assert!(!doc.text.contains("values") && !doc.text.contains("Figure"), "outputs are left out");
}

/// A one-page PDF (page 3, saying `text`) whose page-tree root (object 2) lists `root_kids`,
/// with node 6 (`/Kids [node_kids]`) beside it.
fn kids_pdf(text: &str, root_kids: &str, node_kids: &str) -> Vec<u8> {
    let content = format!("BT /F1 12 Tf 72 712 Td ({text}) Tj ET");
    raw_pdf(&[
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!("<< /Type /Pages /Kids [{root_kids}] /Count 1 >>"),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"
            .to_string(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
        format!("<< /Type /Pages /Kids [{node_kids}] /Count 1 /Parent 2 0 R >>"),
    ])
}

/// A page list (`/Kids`) naming the node holding it made lopdf's page walk go round the loop
/// until its step limit and list no page: a file whose real page sat beside the loop was
/// `corrupt PDF (no pages)` (tour25 F5). The loop is cut where it closes: the pages outside it
/// are read and the run's warnings name the loop; a tree that is nothing but the loop says so.
#[test]
fn a_pdf_whose_page_list_loops_is_read_to_its_reachable_pages_and_the_loop_named() {
    let env = Env::new();
    let repo = env.repo("kids");
    write(&repo, "self.pdf", kids_pdf("Sanderling self", "2 0 R 3 0 R", ""));
    write(&repo, "round.pdf", kids_pdf("Turnstone round", "6 0 R", "2 0 R 3 0 R"));
    write(&repo, "only.pdf", kids_pdf("Knot only", "2 0 R", ""));
    write(&repo, "shared.pdf", kids_pdf("Phalarope shared", "6 0 R 6 0 R", "3 0 R"));
    let started = std::time::Instant::now();
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    assert!(started.elapsed() < HANG_GUARD);
    let note = |p: &str| summary.skipped.iter().find(|s| s.path == p).map(|s| s.reason.clone());
    assert_eq!(note("self.pdf"), None, "{:?}", summary.skipped);
    assert_eq!(note("round.pdf"), None);
    assert_eq!(
        note("only.pdf").as_deref(),
        Some(
            "corrupt PDF (its page tree loops: the page list (/Kids) of object 2 lists object 2 itself, and no page is outside the loop)"
        )
    );
    let repaired =
        "the 1 page outside the loop is read (the file is malformed: re-saving it, or printing it to PDF, repairs it)";
    let warned = |w: String| summary.warnings.contains(&w);
    assert!(
        warned(format!(
            "self.pdf: its page tree loops: the page list (/Kids) of object 2 lists object 2 itself; {repaired}"
        )),
        "{:?}",
        summary.warnings
    );
    assert!(warned(format!(
        "round.pdf: its page tree loops: the page list (/Kids) of object 6 lists object 2, which holds it; {repaired}"
    )));
    assert!(summary.warnings.iter().all(|w| !w.starts_with("shared.pdf")), "a node listed twice is no loop");
    for (query, file) in [("sanderling", "self.pdf"), ("turnstone", "round.pdf"), ("phalarope", "shared.pdf")] {
        let mut hits = hit_paths(&env.engine(), &repo, query);
        hits.dedup();
        assert_eq!(hits, [file], "{query}");
    }
}
