//! Library documentation as Tier 1: a repository's direct dependencies (`detect`), their docs
//! from the installed sources first (`local`: offline), then, when online, the published docs
//! (`published`: docs.rs for crates, the npm README, PyPI's description and documentation
//! link) through the web tier's guarded fetcher; cached per package and version under
//! `state/cache/libs/<ecosystem>/<package>/<version>/` (shared by every repository) and ingested
//! into the repository's own `libs_index/` (`index`), which only that repository searches.

mod archive;
pub mod detect;
pub mod index;
pub mod label;
pub mod local;
mod published;
pub mod types;

use crate::engine::fsutil::{count, now_ms, read_json, replace_json};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use local::{LibDoc, Roots};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;
use types::*;

/// What reading installed sources does, versioned: a cached entry whose `local` docs an older
/// reading wrote is read again (they may hold what is no longer read: a file linked out of
/// site-packages, a binary README, `pub(crate)` items), its published docs kept. 2: confined
/// to each package's location, binary skipped, bounded by cutting, modules from RECORD.
const EXTRACTOR: u32 = 2;

/// What `cache/libs/<ecosystem>/<package>/<version>/docs.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct CachedDocs {
    /// The [`EXTRACTOR`] that read `local`; 0 in entries written before it was recorded.
    #[serde(default)]
    extractor: u32,
    fetched_at: u64,
    local: Vec<LibDoc>,
    published: Vec<LibDoc>,
    /// Published docs were asked for (online) when this was written.
    published_tried: bool,
    /// The registry answered that this version publishes no docs (an npm tarball without a
    /// README): an answer for an immutable version, so it is not asked again (a 32 MiB
    /// tarball downloaded on every fetch) until `--refresh`.
    #[serde(default)]
    published_none: bool,
    notes: Vec<String>,
}

/// What `state/repos/<fp>/libs.json` records about the last `libs fetch`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct IngestRecord {
    packages: Vec<LibPackage>,
    chunks: u32,
    notes: Vec<String>,
}

fn libs_dir(repo: &RepoRef) -> PathBuf {
    repo.state_dir.join("libs_index")
}

fn ingest_record(repo: &RepoRef) -> PathBuf {
    repo.state_dir.join("libs.json")
}

/// True when the repository has a libs index to search (one a killed rebuild had set aside
/// is put back first).
pub fn has_index(repo: &RepoRef) -> bool {
    let dir = libs_dir(repo);
    if !dir.join("meta.json").is_file() {
        index::recover(&dir);
    }
    dir.join("meta.json").is_file()
}

impl Engine {
    fn lib_cache_path(&self, dep: &Dependency) -> PathBuf {
        let safe = |s: &str| s.replace(['/', '\\'], "__").replace("..", "_");
        self.inner
            .paths
            .state
            .join("cache/libs")
            .join(dep.ecosystem.name())
            .join(safe(&dep.name))
            .join(safe(&dep.version))
            .join("docs.json")
    }

    fn lib_roots(&self, repo: &Path) -> Roots {
        let configured = self.config().libs.cargo_home.trim();
        let cargo_home = if !configured.is_empty() {
            PathBuf::from(configured)
        } else if let Some(h) = std::env::var_os("CARGO_HOME") {
            PathBuf::from(h)
        } else {
            std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".cargo")
        };
        Roots { cargo_home, repo: repo.to_path_buf() }
    }

    /// Detects the repository's dependencies, gathers their docs (cache, installed sources,
    /// then published docs unless `offline`) and rebuilds its libs index. `on_progress` sees
    /// each package as it starts and as it is done.
    pub fn libs_fetch(
        &self,
        repo_path: &Path,
        req: &LibsFetchRequest,
        on_progress: &mut dyn FnMut(LibsProgress<'_>),
    ) -> Result<LibsReport> {
        let started = Instant::now();
        let repo = self.resolve_repo(repo_path)?;
        let detected = detect::detect(&repo.root);
        let mut notes = detected.notes;
        let max = self.config().libs.max_packages.max(1) as usize;
        if detected.deps.len() > max {
            notes.push(format!("{} dependencies; only the first {max} ([libs] max_packages)", detected.deps.len()));
        }
        let why_offline = self.why_published_not_fetched(req.offline);
        if let Some(why) = why_offline {
            notes.push(format!("published docs not fetched ({why})"));
        }
        let online = why_offline.is_none();
        // A registry URL that is no URL is said once, naming the key; its packages ask nothing.
        let misconfigured = if online { published::misconfigured(&self.config().libs) } else { Vec::new() };
        let mut registries = Registries { online, misconfigured: &misconfigured, ..Default::default() };
        let roots = self.lib_roots(&repo.root);
        let mut ingest: Vec<(Dependency, Vec<LibDoc>)> = Vec::new();
        let mut packages = Vec::new();
        let total = detected.deps.len().min(max);
        for (i, dep) in detected.deps.into_iter().take(max).enumerate() {
            on_progress(LibsProgress::Started { dep: &dep, index: i + 1, total });
            let (docs, pkg) = self.fetch_package(&dep, &roots, req.refresh, &mut registries);
            on_progress(LibsProgress::Done(&pkg));
            packages.push(pkg);
            ingest.push((dep, docs));
        }
        notes.extend(cached_note(&packages));
        notes.extend(registries.misconfigured_notes(&self.config_path().display().to_string()));
        let registry_unreachable = registries.unreachable_note();
        let chunks = ingest_packages(&repo, &ingest, &mut packages, &notes)?;
        Ok(LibsReport {
            schema_version: LIBS_SCHEMA_VERSION,
            repo: repo.root.display().to_string(),
            packages,
            chunks,
            ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            notes,
            registry_unreachable,
        })
    }

    /// Why published docs are not fetched, naming the one reason that holds; `None` online.
    fn why_published_not_fetched(&self, offline: bool) -> Option<&'static str> {
        if offline {
            Some("--offline")
        } else if !self.config().libs.fetch_published {
            Some("[libs] fetch_published = false")
        } else if !self.config().web.enabled {
            Some("the web tier is off: [web] enabled = false")
        } else {
            None
        }
    }

    /// One dependency's docs and report line, its registry asked only when online, configured
    /// and not found unreachable earlier in the run; what the run learns of the registry is
    /// kept in `registries`.
    fn fetch_package(
        &self,
        dep: &Dependency,
        roots: &Roots,
        refresh: bool,
        registries: &mut Registries<'_>,
    ) -> (Vec<LibDoc>, LibPackage) {
        let registry = published::source_of(dep, crate_installed(dep, roots));
        let asks = registries.asks(registry);
        let (docs, mut pkg, failed) = self.package_docs(dep, roots, refresh, asks);
        registries.record(registry, &mut pkg, failed);
        (docs, pkg)
    }
    /// One package's docs and its report line, and, when its registry could not be reached,
    /// why (a failure to connect is not remembered as "published docs tried", so the next
    /// online run tries again instead of serving the cache without them).
    fn package_docs(
        &self,
        dep: &Dependency,
        roots: &Roots,
        refresh: bool,
        online: bool,
    ) -> (Vec<LibDoc>, LibPackage, Option<String>) {
        let cache_path = self.lib_cache_path(dep);
        let cached: Option<CachedDocs> = read_json(&cache_path).ok().flatten();
        let mut pkg = LibPackage {
            ecosystem: dep.ecosystem,
            name: dep.name.clone(),
            version: dep.version.clone(),
            local_docs: 0,
            published_docs: 0,
            chunks: 0,
            cached: false,
            notes: Vec::new(),
        };
        // A cached entry serves unless refreshing, or unless this run is online and the entry
        // lacks what being online adds (published docs never tried, or nothing found at all).
        // Refreshing without asking a registry (offline, or it could not be reached) reads the
        // installed sources again and keeps the published docs it cannot fetch anew.
        let stale_online = |c: &CachedDocs| {
            online && (!c.published_tried || (c.local.is_empty() && c.published.is_empty() && !c.published_none))
        };
        let offline_refresh = refresh && !online;
        let (usable, previous) = match cached {
            Some(c) if offline_refresh || (!refresh && !stale_online(&c)) => (Some(c), None),
            other => (None, other),
        };
        let mut failed = None;
        let entry = match usable {
            Some(c)
                if offline_refresh
                    || c.extractor != EXTRACTOR
                    || (c.local.is_empty() && !local::docs(dep, roots).0.is_empty()) =>
            {
                // Refreshing, written by an older reading, or installed since the entry was
                // written (published docs only): read the installed sources now.
                self.read_local_again(dep, roots, c, &cache_path)
            }
            Some(c) => {
                pkg.cached = true;
                c
            }
            None => {
                let (entry, why) = self.fresh_entry(dep, roots, online, previous, &cache_path);
                failed = why;
                entry
            }
        };
        pkg.local_docs = entry.local.len() as u32;
        pkg.published_docs = entry.published.len() as u32;
        pkg.notes = entry.notes.clone();
        if entry.local.is_empty() && pkg.cached {
            // Whether it is installed may have changed since the entry was cached: said as it is now.
            pkg.notes.retain(|n| !local::is_no_docs_note(n));
            pkg.notes.insert(0, local::no_docs_note(dep, roots));
        }
        let mut docs = entry.local;
        docs.extend(entry.published);
        (docs, pkg, failed)
    }

    /// A package's docs read and fetched now, and cached; with why its registry could not be
    /// reached, if so. `previous` is the cached entry this replaces: its published docs are
    /// kept when the registry cannot be reached (a refresh on a dead network lost them).
    fn fresh_entry(
        &self,
        dep: &Dependency,
        roots: &Roots,
        online: bool,
        previous: Option<CachedDocs>,
        cache_path: &Path,
    ) -> (CachedDocs, Option<String>) {
        let (local, cut) = local::docs(dep, roots);
        let mut entry = CachedDocs {
            extractor: EXTRACTOR,
            fetched_at: now_ms(),
            local,
            published_tried: online,
            ..Default::default()
        };
        let mut failed = None;
        if entry.local.is_empty() {
            entry.notes.push(local::no_docs_note(dep, roots));
        }
        if cut {
            entry.notes.push(cut_note("installed", local::MAX_LOCAL_BYTES));
        }
        if online {
            match self.published_docs(dep, crate_installed(dep, roots)) {
                Ok(mut p) => {
                    entry.published_none = p.docs.is_empty();
                    entry.notes.append(&mut p.notes);
                    if local::cap(&mut p.docs, MAX_PUBLISHED_BYTES) {
                        entry.notes.push(cut_note("published", MAX_PUBLISHED_BYTES));
                    }
                    entry.published = p.docs;
                }
                Err(e) if unreachable(&e) => {
                    entry.published_tried = false;
                    match previous.filter(|p| !p.published.is_empty()) {
                        Some(p) => {
                            entry.published = p.published;
                            entry.notes.push(format!("published docs: the cached ones kept ({e})"));
                        }
                        None => entry.notes.push(format!("published docs: {e}")),
                    }
                    failed = Some(e.to_string());
                }
                Err(e) => entry.notes.push(format!("published docs: {e}")),
            }
        }
        if !entry.local.is_empty() || !entry.published.is_empty() || entry.published_none {
            if let Some(dir) = cache_path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = replace_json(cache_path, &entry) {
                entry.notes.push(format!("could not cache: {e}"));
            }
        }
        (entry, failed)
    }

    /// A cached entry with the installed sources read again (and cached so), its published
    /// docs and the notes about them kept.
    fn read_local_again(&self, dep: &Dependency, roots: &Roots, c: CachedDocs, cache_path: &Path) -> CachedDocs {
        let (local, cut) = local::docs(dep, roots);
        let mut notes: Vec<String> = c.notes.into_iter().filter(|n| n.starts_with("published")).collect();
        if cut {
            notes.insert(0, cut_note("installed", local::MAX_LOCAL_BYTES));
        }
        if local.is_empty() {
            notes.insert(0, local::no_docs_note(dep, roots));
        }
        let mut published = c.published;
        if !local.is_empty() && published.iter().any(|d| d.source.contains(".crate#")) {
            // A crate's archive read before it was installed: the same docs, read locally now.
            published.retain(|d| !d.source.contains(".crate#"));
            notes.retain(|n| !n.contains("crate's archive"));
        }
        if local::cap(&mut published, MAX_PUBLISHED_BYTES) && !notes.iter().any(|n| n.starts_with("published docs cut"))
        {
            notes.push(cut_note("published", MAX_PUBLISHED_BYTES));
        }
        let entry = CachedDocs { extractor: EXTRACTOR, fetched_at: now_ms(), local, published, notes, ..c };
        if let Err(e) = replace_json(cache_path, &entry) {
            tracing::info!(path = %cache_path.display(), error = %e, "libs cache not updated");
        }
        entry
    }
}

/// What one `libs fetch` run learns of the registries its packages' published docs come from.
#[derive(Default)]
struct Registries<'a> {
    /// Published docs may be fetched at all in this run.
    online: bool,
    /// Registries whose configured URL is no URL: (registry, why).
    misconfigured: &'a [(&'static str, String)],
    /// Of those, the reasons a package needed, in the order first needed (said once each).
    bad_used: Vec<&'a str>,
    /// Registries that could not be reached: (registry, packages, the first error).
    unreachable: Vec<(&'static str, usize, String)>,
}

impl<'a> Registries<'a> {
    /// A registry that could not be reached is not asked again in this run: each try can wait
    /// out the whole page timeout, and a dead one cost every package that.
    fn asks(&self, registry: &str) -> bool {
        let dead = self.unreachable.iter().any(|(r, _, _)| *r == registry);
        let bad = self.misconfigured.iter().any(|(r, _)| *r == registry);
        self.online && !dead && !bad
    }

    /// Notes on `pkg` why its registry was not asked, and remembers a registry that failed.
    fn record(&mut self, registry: &'static str, pkg: &mut LibPackage, failed: Option<String>) {
        let online = self.online;
        if let Some((_, why)) = self.misconfigured.iter().find(|(r, _)| *r == registry) {
            if !self.bad_used.contains(&why.as_str()) {
                self.bad_used.push(why);
            }
            if !pkg.cached {
                pkg.notes.push(format!("published docs: not asked for ({why})"));
            }
        } else if let Some(u) = self.unreachable.iter_mut().find(|(r, _, _)| *r == registry) {
            if online && !pkg.cached {
                u.1 += 1;
                pkg.notes.push(format!("published docs: not asked for ({registry} could not be reached)"));
            }
        } else if let Some(e) = failed {
            self.unreachable.push((registry, 1, e));
        }
    }

    /// One note per misconfigured registry a package needed, pointing at the config file.
    fn misconfigured_notes(&self, config: &str) -> Vec<String> {
        self.bad_used
            .iter()
            .map(|why| format!("{why}, so its packages' published docs were not fetched; fix it in {config}"))
            .collect()
    }

    /// The report's `registry_unreachable`: every registry that could not be reached, with its
    /// package count and first error, and what to do.
    fn unreachable_note(&self) -> Option<String> {
        (!self.unreachable.is_empty()).then(|| {
            let each: Vec<String> = self
                .unreachable
                .iter()
                .map(|(r, n, e)| format!("{r} (for {}: {e})", count(*n, "package")))
                .collect();
            format!(
                "could not reach {}, so no published docs were fetched for those packages (their installed sources, if any, were indexed); check the network, or run `docdex libs fetch --offline` to use only the installed sources",
                each.join("; ")
            )
        })
    }
}

/// Says how many packages were served from `cache/libs` as they were cached (their installed
/// sources not read again, their published docs not fetched again): a user seeing docs older
/// than what is installed or published knows why, and how to refresh them.
fn cached_note(packages: &[LibPackage]) -> Option<String> {
    let n = packages.iter().filter(|p| p.cached).count();
    (n > 0).then(|| {
        format!(
            "{} (marked \"(cached)\") came from docdex's offline cache as an earlier fetch left them, not read or fetched again; run `docdex libs fetch --refresh` for fresh docs",
            count(n, "package")
        )
    })
}

/// Rebuilds the repository's libs index from the gathered docs, sets each package's chunk
/// count and records the run in `libs.json`; returns the total chunks.
fn ingest_packages(
    repo: &RepoRef,
    ingest: &[(Dependency, Vec<LibDoc>)],
    packages: &mut [LibPackage],
    notes: &[String],
) -> Result<u32> {
    std::fs::create_dir_all(&repo.state_dir).map_err(|e| Error::io("creating", &repo.state_dir, e))?;
    let counts = index::rebuild(&libs_dir(repo), ingest)?;
    for (p, n) in packages.iter_mut().zip(&counts) {
        p.chunks = *n;
    }
    let chunks = counts.iter().sum();
    let record = IngestRecord { packages: packages.to_vec(), chunks, notes: notes.to_vec() };
    replace_json(&ingest_record(repo), &record)?;
    Ok(chunks)
}

/// Whether `dep` is a crate whose sources are in the cargo registry here (any other package
/// counts as installed: only a crate's published docs depend on it).
fn crate_installed(dep: &Dependency, roots: &Roots) -> bool {
    dep.ecosystem != Ecosystem::Crates || local::crate_dir(&dep.name, &dep.version, &roots.cargo_home).is_some()
}

/// Text kept per package from its published docs, at most (a docs.rs page or a PyPI
/// description can be megabytes; the installed sources have their own bound).
const MAX_PUBLISHED_BYTES: usize = 400_000;

/// The note for docs cut at their bound.
fn cut_note(which: &str, bytes: usize) -> String {
    format!("{which} docs cut at {} KB", bytes / 1000)
}

/// Whether a failed fetch never reached the registry (DNS, connect, TLS, a timeout, the
/// browser's `net::ERR_...`) rather than being answered (an HTTP status, a page that is not
/// what was expected) or refused by the URL rules.
fn unreachable(e: &Error) -> bool {
    let Error::Upstream(m) = e else { return false };
    let answered = m.rsplit_once(": HTTP ").is_some_and(|(_, s)| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
        || m.contains("not JSON")
        || m.contains("not a text page")
        || m.contains("max_page_bytes")
        || m.contains("docdex's bound on");
    !answered
}

/// `Engine` calls for listing and searching what was ingested.
impl Engine {
    /// What the last `libs fetch` ingested for this repository.
    pub fn libs_list(&self, repo_path: &Path) -> Result<LibsReport> {
        let repo = self.resolve_repo(repo_path)?;
        let record: IngestRecord = read_json(&ingest_record(&repo))?.ok_or_else(|| {
            Error::NotFound(format!(
                "no library docs for {} yet; run `docdex libs fetch --repo {}`",
                repo.root.display(),
                repo.root.display()
            ))
        })?;
        Ok(LibsReport {
            schema_version: LIBS_SCHEMA_VERSION,
            repo: repo.root.display().to_string(),
            packages: record.packages,
            chunks: record.chunks,
            ms: 0.0,
            notes: record.notes,
            registry_unreachable: None,
        })
    }

    /// Library passages for a query, from this repository's libs index only (empty when it has none).
    pub fn libs_search(&self, repo_path: &Path, req: &LibsSearchRequest) -> Result<LibsSearchResponse> {
        let repo = self.resolve_repo(repo_path)?;
        if !has_index(&repo) {
            return Ok(LibsSearchResponse { hits: Vec::new() });
        }
        self.rebuild_if_stale(&repo);
        let hits = index::search(&libs_dir(&repo), &req.query, req.limit.unwrap_or(5).clamp(1, 50))?;
        Ok(LibsSearchResponse { hits })
    }
}

/// Rebuilding a stale libs index, one at a time in this process (a server's requests share
/// the rebuild's `libs_index.tmp<pid>`); another process builds beside its own.
static REBUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Engine {
    /// Rebuilds the repository's libs index from the cached docs its last fetch ingested when
    /// another analyzer built it (before index schema 10 Greek kept its accents, before 9 no
    /// accent was folded): its terms would never meet a query's. Nothing is fetched. When the
    /// cache no longer holds a package's docs, the old index is searched and the log says to
    /// run `docdex libs fetch`, which rebuilds it.
    fn rebuild_if_stale(&self, repo: &RepoRef) {
        let dir = libs_dir(repo);
        if index::built_by_current_analyzer(&dir) {
            return;
        }
        let _one = REBUILDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if index::built_by_current_analyzer(&dir) {
            return;
        }
        match self.reingest_cached(repo) {
            Ok(chunks) => tracing::info!(
                repo = %repo.root.display(),
                chunks,
                "libs index built by an older analyzer; rebuilt from the cached docs"
            ),
            Err(e) => tracing::warn!(
                repo = %repo.root.display(),
                "libs index built by an older analyzer (accented words may not be found) and not rebuilt: {e}; run `docdex libs fetch --repo {}`",
                crate::error::shell_path(&repo.root)
            ),
        }
    }

    /// The packages `libs.json` records, their docs read from the cache and ingested again.
    fn reingest_cached(&self, repo: &RepoRef) -> Result<u32> {
        let record: IngestRecord = read_json(&ingest_record(repo))?
            .ok_or_else(|| Error::NotFound(format!("no {}", ingest_record(repo).display())))?;
        let mut ingest = Vec::new();
        for p in &record.packages {
            let dep = Dependency {
                ecosystem: p.ecosystem,
                name: p.name.clone(),
                version: p.version.clone(),
                locked_by: String::new(),
            };
            let docs = match read_json::<CachedDocs>(&self.lib_cache_path(&dep))? {
                Some(c) => c.local.into_iter().chain(c.published).collect(),
                None if p.chunks == 0 => Vec::new(),
                None => return Err(Error::NotFound(format!("the cached docs of {}@{} are gone", p.name, p.version))),
            };
            ingest.push((dep, docs));
        }
        let mut packages = record.packages;
        ingest_packages(repo, &ingest, &mut packages, &record.notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_registry_never_reached_is_unreachable() {
        let up = |m: &str| Error::Upstream(m.into());
        assert!(unreachable(&up("https://docs.rs/x/: Navigate failed: net::ERR_NAME_NOT_RESOLVED")));
        assert!(unreachable(&up("https://pypi.org/pypi/x/1/json: error sending request: tcp connect error")));
        assert!(unreachable(&up("https://docs.rs/x/: timed out after 20 s")));
        assert!(!unreachable(&up("https://docs.rs/x/: HTTP 500")), "an answer");
        assert!(!unreachable(&up("https://registry.npmjs.org/x: not JSON (eof)")));
        assert!(!unreachable(&up(
            "https://registry.npmjs.org/x/-/x-1.tgz: 40000000 bytes is more than docdex's bound on package archives (33554432)"
        )));
        assert!(!unreachable(&Error::NotFound("https://docs.rs/x/: not found (HTTP 404)".into())));
        assert!(!unreachable(&Error::BadRequest("refused by [web] blocklist".into())));
    }
}
