//! Published docs of one package, through the web tier's guarded fetcher: docs.rs for a crate
//! installed here, the crate's archive on crates.io for one that is not, the npm registry's README (else the README inside the version's tarball), PyPI's project
//! description (the version's own, else the project's latest, said so) and documentation link.

use super::archive;
use super::local::LibDoc;
use super::types::{Dependency, Ecosystem};
use crate::engine::web::policy::Origin;
use crate::engine::Engine;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::HashMap;

/// An npm tarball downloaded at most (compressed): the README is read from it in memory.
const MAX_TARBALL_BYTES: u64 = 32 * 1024 * 1024;
/// Bytes inflated from a tarball at most while looking for its README (a small archive can
/// inflate to gigabytes).
const MAX_UNPACKED_BYTES: u64 = 64 * 1024 * 1024;
/// A README read from a tarball at most.
const MAX_README_BYTES: u64 = 4 * 1024 * 1024;

/// What the npm registry puts in `readme` when the package has none.
const NPM_NO_README: &str = "ERROR: No README data found!";

/// A package's published docs, and what is worth saying about where they came from.
#[derive(Debug, Default)]
pub(super) struct Published {
    pub docs: Vec<LibDoc>,
    pub notes: Vec<String>,
}

/// The parts of an npm registry document read: a README per version (rare) and the
/// package's (its latest version's), and each version's tarball. Every other field, of
/// thousands of versions, is skipped while parsing rather than held.
#[derive(Deserialize)]
struct NpmDocument {
    #[serde(default, deserialize_with = "lenient")]
    readme: Option<String>,
    #[serde(default)]
    versions: HashMap<String, NpmVersion>,
}

#[derive(Deserialize)]
struct NpmVersion {
    #[serde(default, deserialize_with = "lenient")]
    readme: Option<String>,
    #[serde(default)]
    dist: Option<NpmDist>,
}

#[derive(Deserialize)]
struct NpmDist {
    #[serde(default, deserialize_with = "lenient")]
    tarball: Option<String>,
}

/// A string, or nothing when the registry put something else there.
fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

fn base(s: &str) -> String {
    s.trim().trim_end_matches('/').to_string()
}

/// Where a package's published docs come from (for messages and the run's list of registries
/// that could not be reached): a crate installed here is documented by docs.rs, one that is not
/// by its archive on crates.io, which has every doc comment of that exact version.
pub(super) fn source_of(dep: &Dependency, installed: bool) -> &'static str {
    match dep.ecosystem {
        Ecosystem::Crates if !installed => "crates.io",
        e => e.registry(),
    }
}

/// The `[libs]` registry URLs that are not http(s) URLs, as (source, what is wrong): each
/// package of that source would otherwise fail alike ("\"registry.npmjs.org/left-pad\" is not a
/// URL"), without naming the key to fix.
pub(super) fn misconfigured(libs: &crate::config::LibsConfig) -> Vec<(&'static str, String)> {
    let keys = [
        ("docs.rs", "docs_rs_url", &libs.docs_rs_url),
        ("crates.io", "crates_download_url", &libs.crates_download_url),
        (Ecosystem::Npm.registry(), "npm_registry_url", &libs.npm_registry_url),
        (Ecosystem::Pypi.registry(), "pypi_url", &libs.pypi_url),
    ];
    let web = |v: &str| url::Url::parse(v.trim()).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
    keys.into_iter()
        .filter(|(_, _, v)| !web(v))
        .map(|(source, key, v)| (source, format!("[libs] {key} = {v:?} is not an http(s) URL")))
        .collect()
}

impl Engine {
    /// The published docs of one package; `installed` when its sources are installed here.
    pub(super) fn published_docs(&self, dep: &Dependency, installed: bool) -> Result<Published> {
        match dep.ecosystem {
            Ecosystem::Crates if !installed => self.crate_archive_docs(dep),
            Ecosystem::Crates => {
                let docs_rs = base(&self.config().libs.docs_rs_url);
                let url = format!("{docs_rs}/{}/{}/{}/", dep.name, dep.version, dep.name.replace('-', "_"));
                let page = self.fetch_url(&url, Origin::Configured)?;
                let doc = LibDoc { title: page.title.clone(), source: page.final_url.clone(), text: page.markdown };
                Ok(Published { docs: vec![doc], notes: Vec::new() })
            }
            Ecosystem::Npm => self.npm_readme(dep),
            Ecosystem::Pypi => self.pypi_docs(dep),
        }
    }

    /// The README the registry document carries; else, as registries (and proxies in front of
    /// them) that serve the abbreviated document carry none, the one in the version's tarball.
    fn npm_readme(&self, dep: &Dependency) -> Result<Published> {
        let registry = base(&self.config().libs.npm_registry_url);
        let url = format!("{registry}/{}", dep.name.replace('/', "%2F"));
        let doc: NpmDocument = self.registry_json(&url)?;
        let version = doc.versions.get(&dep.version);
        let readme = version.and_then(|v| usable(&v.readme)).or_else(|| usable(&doc.readme));
        if let Some(text) = readme {
            let doc = LibDoc { title: "README (npm registry)".into(), source: url, text: text.to_string() };
            return Ok(Published { docs: vec![doc], notes: Vec::new() });
        }
        let tarball = version.and_then(|v| v.dist.as_ref()).and_then(|d| d.tarball.clone());
        let Some(tarball) = tarball.filter(|t| !t.trim().is_empty()) else {
            return Err(Error::NotFound(format!(
                "the npm registry has no README for {} and no tarball for {}",
                dep.name, dep.version
            )));
        };
        match self.tarball_readme(dep, &registry, &tarball)? {
            Ok(doc) => Ok(Published {
                docs: vec![doc],
                notes: vec!["published docs: README read from the npm tarball".into()],
            }),
            // The version's own files say it has none: an answer, cached as one.
            Err(none) => Ok(Published { docs: Vec::new(), notes: vec![format!("published docs: {none}")] }),
        }
    }

    /// The README at the root of an npm tarball, read in memory and bounded; `Ok(Err(why))`
    /// when the tarball was read and holds none.
    fn tarball_readme(
        &self,
        dep: &Dependency,
        registry: &str,
        tarball: &str,
    ) -> Result<std::result::Result<LibDoc, String>> {
        let host = |u: &str| url::Url::parse(u).ok().and_then(|u| u.host_str().map(str::to_string));
        // The tarball URL comes from the registry's document: on the registry's own host it
        // is the registry's; anywhere else it is a discovered URL, under the usual rules.
        let origin = if host(tarball).is_some() && host(tarball) == host(registry) {
            Origin::Configured
        } else {
            Origin::Discovered
        };
        let gz = self.registry_bytes(tarball, origin, MAX_TARBALL_BYTES)?;
        let members = archive::tar_gz(&gz, MAX_UNPACKED_BYTES, MAX_README_BYTES, root_readme)
            .map_err(|e| Error::NotFound(format!("{tarball}: {e}")))?;
        let Some(m) = members.found.into_iter().find(|m| !m.text.trim().is_empty()) else {
            let read = if members.cut {
                format!(" (read to its first {} MiB)", MAX_UNPACKED_BYTES >> 20)
            } else {
                String::new()
            };
            return Ok(Err(format!(
                "no README for {}@{}: not in the registry document, nor in its tarball{read}",
                dep.name, dep.version
            )));
        };
        Ok(Ok(LibDoc { title: "README (npm tarball)".into(), source: format!("{tarball}#{}", m.path), text: m.text }))
    }

    /// The README and the `//!` and `///` docs of public items of a crate's archive (the
    /// `.crate` cargo downloads), read in memory as the installed sources are read. docs.rs
    /// renders the same comments, but only its crate page was fetched, and networks that reach
    /// crates.io (as cargo must) need not reach docs.rs.
    fn crate_archive_docs(&self, dep: &Dependency) -> Result<Published> {
        let download = base(&self.config().libs.crates_download_url);
        let url = format!("{download}/{}/{}-{}.crate", dep.name, dep.name, dep.version);
        let gz = self.registry_bytes(&url, Origin::Configured, MAX_TARBALL_BYTES)?;
        let wanted = |p: &str| root_readme(p) || crate_source(p);
        let members = archive::tar_gz(&gz, MAX_UNPACKED_BYTES, MAX_README_BYTES, wanted)
            .map_err(|e| Error::NotFound(format!("{url}: {e}")))?;
        let mut docs = Vec::new();
        let (readmes, mut sources): (Vec<_>, Vec<_>) = members.found.into_iter().partition(|m| root_readme(&m.path));
        if let Some(m) = readmes.into_iter().next() {
            docs.push(LibDoc { title: "README".into(), source: format!("{url}#{}", m.path), text: m.text });
        }
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        for m in sources.into_iter().take(super::local::MAX_FILES) {
            let rel = m.path.split_once('/').map_or(m.path.as_str(), |(_, r)| r);
            for mut d in super::local::rust_doc_comments(&m.text, rel) {
                d.source = format!("{url}#{}", m.path);
                docs.push(d);
            }
        }
        if docs.is_empty() {
            return Err(Error::NotFound(format!("{url}: no README and no documented public items")));
        }
        let note = "published docs: read from the crate's archive on crates.io (not installed here)".to_string();
        Ok(Published { docs, notes: vec![note] })
    }

    /// PyPI's page for the version; when PyPI (or a mirror or proxy in front of it) answers
    /// 404 for it, the project's page, whose description is the latest release's: used as it
    /// is when that is the version, else the version's own is read from its smallest sdist or
    /// wheel (its PKG-INFO or METADATA), else the latest's is used, titled and noted so.
    fn pypi_docs(&self, dep: &Dependency) -> Result<Published> {
        let pypi = base(&self.config().libs.pypi_url);
        let versioned = format!("{pypi}/pypi/{}/{}/json", dep.name, dep.version);
        let (url, v, own_page) = match self.registry_json::<serde_json::Value>(&versioned) {
            Ok(v) => (versioned, v, true),
            Err(Error::NotFound(_)) => {
                let project = format!("{pypi}/pypi/{}/json", dep.name);
                let v: serde_json::Value = self.registry_json(&project)?;
                check_release(dep, &v)?;
                (project, v, false)
            }
            Err(e) => return Err(e),
        };
        let info = v.get("info").cloned().unwrap_or_default();
        let latest = info.get("version").and_then(|x| x.as_str()).unwrap_or("");
        let desc = info.get("description").and_then(|d| d.as_str()).unwrap_or("");
        let mut out = Published::default();
        if own_page || latest == dep.version {
            if !desc.trim().is_empty() {
                out.docs.push(LibDoc {
                    title: "project description (PyPI)".into(),
                    source: url.clone(),
                    text: desc.into(),
                });
            }
        } else {
            let served = format!("published docs: PyPI served no page for {} {}", dep.name, dep.version);
            match self.release_description(dep, &url, &v) {
                Ok((source, file, text)) => {
                    out.docs.push(LibDoc { title: "project description (PyPI)".into(), source, text });
                    out.notes.push(format!("{served}; its description was read from {file}"));
                }
                Err(why) => {
                    tracing::info!(package = %dep.name, %why, "release description not read");
                    if !desc.trim().is_empty() {
                        let title = format!("project description of {} {latest} (PyPI)", dep.name);
                        out.docs.push(LibDoc { title, source: url.clone(), text: desc.into() });
                    }
                    out.notes.push(format!("{served}; its description is the latest release's ({latest})"));
                }
            }
        }
        if let Some(doc) = self.pypi_docs_link(&info) {
            out.docs.push(doc);
        }
        Ok(out)
    }

    /// The description in the smallest sdist (`.tar.gz`) or wheel of the locked release, as
    /// (source, file name, text); `Err` says why there is none. A file's URL may be relative
    /// to the project page `page` (as some mirrors serve them).
    fn release_description(
        &self,
        dep: &Dependency,
        page: &str,
        project: &serde_json::Value,
    ) -> std::result::Result<(String, String, String), String> {
        let files = project.pointer(&format!("/releases/{}", dep.version.replace('~', "~0").replace('/', "~1")));
        let file = files
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let name = f.get("filename")?.as_str()?;
                let url = f.get("url")?.as_str()?;
                let size = f.get("size").and_then(|s| s.as_u64()).unwrap_or(u64::MAX);
                let kind = name.ends_with(".tar.gz") || name.ends_with(".whl");
                (kind && size <= MAX_TARBALL_BYTES).then(|| (size, name.to_string(), url.to_string()))
            })
            .min();
        let Some((_, name, link)) = file else {
            return Err(format!("no sdist or wheel of at most {} MiB", MAX_TARBALL_BYTES >> 20));
        };
        let page = url::Url::parse(page).map_err(|e| e.to_string())?;
        let url = page.join(&link).map_err(|e| format!("{link:?}: {e}"))?;
        let origin = if url.host_str() == page.host_str() { Origin::Configured } else { Origin::Discovered };
        let url = url.to_string();
        let bytes = self.registry_bytes(&url, origin, MAX_TARBALL_BYTES).map_err(|e| e.to_string())?;
        let (member, meta) = if name.ends_with(".whl") {
            archive::wheel_metadata(&bytes, MAX_README_BYTES)?
        } else {
            let m = archive::tar_gz(&bytes, MAX_UNPACKED_BYTES, MAX_README_BYTES, |p| {
                p.split('/').count() == 2 && p.ends_with("/PKG-INFO")
            })
            .map_err(|e| e.to_string())?;
            let m = m.found.into_iter().next().ok_or("no PKG-INFO at the sdist's root")?;
            (m.path, m.text)
        };
        let text = metadata_description(&meta);
        if text.trim().is_empty() {
            return Err(format!("{name}: no description in {member}"));
        }
        Ok((format!("{url}#{member}"), name, text))
    }

    /// The page of the project's documentation link, when it has one and it can be fetched.
    fn pypi_docs_link(&self, info: &serde_json::Value) -> Option<LibDoc> {
        let link = info
            .get("project_urls")
            .and_then(|u| u.as_object())
            .and_then(|o| o.iter().find(|(k, _)| k.to_ascii_lowercase().contains("doc")).map(|(_, v)| v.clone()))
            .or_else(|| info.get("docs_url").cloned())
            .and_then(|v| v.as_str().map(str::to_string))?;
        match self.fetch_url(&link, Origin::Discovered) {
            Ok(page) => Some(LibDoc { title: page.title.clone(), source: page.final_url.clone(), text: page.markdown }),
            Err(e) => {
                tracing::info!(%link, error = %e, "documentation link not fetched");
                None
            }
        }
    }
}

/// Not found when the project page lists releases and the locked version is not one of them
/// (a version never published, or a typo): no other release's description stands in for it.
fn check_release(dep: &Dependency, project: &serde_json::Value) -> Result<()> {
    let latest = project.pointer("/info/version").and_then(|x| x.as_str()).unwrap_or("");
    let releases = project.get("releases").and_then(|r| r.as_object());
    if latest != dep.version && releases.is_some_and(|r| !r.contains_key(&dep.version)) {
        return Err(Error::NotFound(format!("PyPI has no release {} of {}", dep.version, dep.name)));
    }
    Ok(())
}

/// The description of a core-metadata file (PKG-INFO, METADATA): its `Summary`, then the body
/// after the headers, else (metadata before 2.1) the `Description` header's folded lines.
fn metadata_description(meta: &str) -> String {
    let meta = meta.replace("\r\n", "\n");
    let (headers, body) = meta.split_once("\n\n").unwrap_or((&meta, ""));
    let summary = headers.lines().find_map(|l| l.strip_prefix("Summary: ")).unwrap_or("").trim();
    let mut text = body.trim().to_string();
    if text.is_empty() {
        let mut lines = headers.lines().skip_while(|l| !l.starts_with("Description: "));
        let first = lines.next().and_then(|l| l.strip_prefix("Description: ")).unwrap_or("");
        let rest = lines.take_while(|l| l.starts_with(' ') || l.starts_with('\t'));
        let folded: Vec<&str> =
            rest.map(|l| l.strip_prefix("        ").unwrap_or(l.trim_start()).trim_start_matches('|')).collect();
        text = format!("{first}\n{}", folded.join("\n")).trim().to_string();
    }
    match (summary.is_empty(), text.is_empty()) {
        (_, true) => String::new(),
        (true, false) => text,
        (false, false) => format!("{summary}\n\n{text}"),
    }
}

/// A registry README that says something (npm's placeholder for none does not).
fn usable(readme: &Option<String>) -> Option<&str> {
    readme.as_deref().filter(|t| !t.trim().is_empty() && t.trim() != NPM_NO_README)
}

/// A Rust source file under the crate's `src/` (`itoa-1.0.11/src/udiv128.rs`).
fn crate_source(path: &str) -> bool {
    let mut parts = path.splitn(3, '/');
    matches!((parts.next(), parts.next(), parts.next()), (Some(_), Some("src"), Some(rest)) if rest.ends_with(".rs"))
}

/// A README at the root of the package (`package/README.md`, `package/readme`, ...).
fn root_readme(path: &str) -> bool {
    let mut parts = path.split('/');
    let (Some(_), Some(file), None) = (parts.next(), parts.next(), parts.next()) else { return false };
    let lower = file.to_ascii_lowercase();
    lower == "readme" || lower.strip_prefix("readme.").is_some_and(|ext| !ext.is_empty() && !ext.contains('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_readme_at_the_package_root_is_read() {
        assert!(root_readme("package/README.md"));
        assert!(root_readme("node/readme"));
        assert!(root_readme("package/Readme.markdown"));
        assert!(!root_readme("package/docs/README.md"));
        assert!(!root_readme("README.md"));
        assert!(!root_readme("package/README.md.orig"));
        assert!(!root_readme("package/readmes.txt"));
    }

    #[test]
    fn descriptions_come_from_the_metadata_body_or_the_old_description_header() {
        let new = "Metadata-Version: 2.1\nName: six\nSummary: Py2/3 shims\n\nSix bridges pythons.\n";
        assert_eq!(metadata_description(new), "Py2/3 shims\n\nSix bridges pythons.");
        let old = "Metadata-Version: 1.1\r\nName: six\r\nDescription: Six is a library.\r\n        \r\n        It bridges pythons.\r\nPlatform: UNKNOWN\r\n";
        assert_eq!(metadata_description(old), "Six is a library.\n\nIt bridges pythons.");
        assert_eq!(metadata_description("Metadata-Version: 2.1\nSummary: only\n"), "");
    }

    #[test]
    fn crate_sources_are_the_rust_files_under_src() {
        assert!(crate_source("itoa-1.0.11/src/lib.rs"));
        assert!(crate_source("itoa-1.0.11/src/arch/x86.rs"));
        assert!(!crate_source("itoa-1.0.11/benches/bench.rs"));
        assert!(!crate_source("itoa-1.0.11/src/data.bin"));
        assert!(!crate_source("src/lib.rs"));
    }
}
