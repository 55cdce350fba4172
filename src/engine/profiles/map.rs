//! The project map (spec 001 §5.2): a skeleton of the repository showing only what matters to
//! an agent, for the chat's map slot and `docdex map`.
//!
//! The spotlight: keywords from the agent's role (expanded by a small table: "frontend" brings
//! react, css, component, view, ...) and from its `tooling` preferences ("use vitest" brings
//! vitest, which finds `vitest.config.ts`); the best 50 paths by those words in their names and
//! by a search of the index for them; a tree of only those paths and their parents, every other
//! file counted in a `[N hidden files]` (`[1 hidden file]`) leaf per directory; deeper directories collapsed until
//! it fits 500 tokens. Cached in `state/repos/<fp>/maps/<agent>.json` and thrown away when the
//! watcher sees a directory created or deleted (or an index run adds or deletes files).

use super::recall::recall_agents;
use super::store;
use super::types::*;
use crate::engine::cancel::CancelToken;
use crate::engine::fsutil::{self, now_ms};
use crate::engine::index::files;
use crate::engine::index::manifest::Manifest;
use crate::engine::repos::RepoRef;
use crate::engine::search::import_prior::{self, ImportPrior};
use crate::engine::search::types::SearchRequest;
use crate::engine::waterfall::budget::TokenCounter;
use crate::engine::Engine;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The most paths the spotlight keeps.
pub const SPOTLIGHT_PATHS: usize = 50;
/// The most paths an agent-less map shows: few enough that their directories fit the cap
/// without collapsing them.
const CENTRAL_PATHS: usize = 12;
/// The map's token cap (spec 001 §2.3).
pub const MAP_TOKENS: u32 = 500;
/// Version of the cached file's shape.
const CACHE_VERSION: u32 = 1;

/// Words a role brings along (spec 001 §5.2's example: "Frontend Dev" → react, css, ...).
const ROLE_WORDS: &[(&[&str], &[&str])] = &[
    (
        &["frontend", "ui", "front-end", "client"],
        &[
            "react",
            "css",
            "component",
            "components",
            "view",
            "views",
            "page",
            "pages",
            "style",
            "styles",
            "ui",
            "hooks",
        ],
    ),
    (
        &["backend", "back-end", "api", "server", "service"],
        &[
            "api",
            "server",
            "service",
            "services",
            "handler",
            "handlers",
            "route",
            "routes",
            "controller",
            "model",
            "models",
            "db",
            "database",
            "migrations",
        ],
    ),
    (
        &["security", "auth", "authentication"],
        &[
            "auth",
            "security",
            "crypto",
            "token",
            "session",
            "permission",
            "permissions",
            "password",
            "secret",
            "policy",
        ],
    ),
    (&["qa", "test", "tests", "testing", "quality"], &["test", "tests", "spec", "fixtures", "mock", "mocks", "e2e"]),
    (
        &["devops", "ops", "infrastructure", "deploy", "ci"],
        &["docker", "dockerfile", "ci", "deploy", "workflows", "terraform", "k8s", "helm"],
    ),
    (&["docs", "documentation", "writer"], &["docs", "readme", "guide", "md"]),
    (&["data", "ml", "analytics"], &["data", "model", "models", "pipeline", "notebooks", "etl"]),
];

/// Words that say nothing about where to look.
const STOP: &[&str] = &[
    "a",
    "an",
    "and",
    "the",
    "of",
    "for",
    "to",
    "in",
    "on",
    "with",
    "by",
    "use",
    "using",
    "prefer",
    "over",
    "rather",
    "than",
    "instead",
    "we",
    "our",
    "is",
    "are",
    "be",
    "it",
    "that",
    "this",
    "as",
    "or",
    "not",
    "no",
    "all",
    "any",
    "new",
    "code",
    "developer",
    "engineer",
    "reviewer",
    "every",
    "each",
    "when",
    "what",
    "project",
    "projects",
    "already",
    "has",
    "have",
    "adding",
    "another",
    "run",
    "own",
    "see",
    "its",
    "their",
    "rules",
    "agent",
    "follows",
    "shared",
    "conventions",
    "team",
    "implementation",
];

/// What `maps/<agent>.json` holds.
#[derive(Debug, Serialize, Deserialize)]
struct Cached {
    version: u32,
    map: ProjectMap,
}

impl Engine {
    /// The project map for an agent (the default agent when none is named), from the cache
    /// unless it is stale, the keywords changed or `refresh` is asked. A map being built ends
    /// with [`Error::Cancelled`] once the thread's ambient token trips (its client left):
    /// looked at after the spotlight's search and per tree tried against the token cap.
    pub fn project_map(&self, repo_path: &Path, req: &ProjectMapRequest) -> Result<ProjectMap> {
        let repo = self.resolve_repo(repo_path)?;
        // Indexed means a manifest was written: an indexed empty repository gets an empty map,
        // not "not indexed yet" advice that `docdex index` ("up to date") cannot act on.
        if !repo.manifest_path().is_file() {
            return Err(Error::NotIndexed { path: repo.root.clone() });
        }
        let manifest = Manifest::load(&repo.manifest_path());
        let agent = self.resolve_agent(req.agent_id.as_deref());
        if let Some(a) = &agent {
            super::valid_agent(a)?;
        }
        let (keywords, known) = self.map_keywords(agent.as_deref())?;
        // An agent profile memory does not hold gets the agent-less map, cached as that one: a
        // cache file per name asked for let any caller (a web page's `GET /v1/map?agent_id=`
        // included) write files without end.
        let cached_as = agent.as_deref().filter(|_| known);
        let file = cache_path(&repo, cached_as);
        if !req.refresh {
            if let Ok(Some(c)) = fsutil::read_json::<Cached>(&file) {
                if c.version == CACHE_VERSION && c.map.keywords == keywords {
                    let map = ProjectMap { cached: true, agent_id: agent.clone(), ..c.map };
                    return Ok(self.with_agent_notice(map, known));
                }
            }
        }
        let cancel = CancelToken::current();
        let paths: Vec<String> =
            manifest.files.iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p.clone()).collect();
        let mut notices = Vec::new();
        // An agent profile memory does not hold (a typo, most often) has no spotlight: the
        // words of a mistyped name found no file, or noise by meaning.
        let mut shown = match &agent {
            Some(_) if known => spotlight(&paths, &keywords, &self.spotlight_hits(&repo, &keywords)?),
            _ => Vec::new(),
        };
        if shown.is_empty() {
            // No agent, an unknown one, or a spotlight that found nothing: an empty map with
            // every file hidden helps no one; the agent-less view does.
            if let Some(a) = agent.as_deref().filter(|_| known) {
                notices.push(format!(
                    "the spotlight on {a}'s words found no file: the map shows what it shows without an agent, \
                     the project's own files and the modules most of it imports"
                ));
            }
            shown = central_paths(&repo, &paths);
        }
        let name = repo.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| ".".into());
        cancel.check()?;
        let (tree, depth, tokens, kept) = fit_tree(&name, &paths, &shown, &cancel)?;
        let map = ProjectMap {
            agent_id: agent.clone(),
            keywords,
            hidden_files: (paths.len() - kept.len()) as u64,
            paths: kept,
            tree,
            tokens,
            depth,
            generated_at: now_ms() as i64,
            cached: false,
            notices,
            closest_agent: None,
        };
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        }
        let stored = ProjectMap { agent_id: cached_as.map(str::to_string), ..map.clone() };
        fsutil::replace_json(&file, &Cached { version: CACHE_VERSION, map: stored })?;
        Ok(self.with_agent_notice(map, known))
    }

    /// Adds, first among the notices, that the map's agent is not in profile memory and the
    /// agent it most likely mistypes: said afresh on every call (not cached), since agents come
    /// and go while a cached map stays.
    fn with_agent_notice(&self, mut map: ProjectMap, known: bool) -> ProjectMap {
        let Some(agent) = map.agent_id.as_deref().filter(|_| !known) else { return map };
        map.closest_agent = self.profile_closest_agent(agent);
        let guess = map.closest_agent.as_deref().map(|n| format!(" (did you mean {n}?)")).unwrap_or_default();
        map.notices.insert(
            0,
            format!(
                "no agent {agent} in profile memory{guess}: the map is the one without an agent, the project's own \
                 files and the modules most of it imports; `docdex profile list` shows the agents"
            ),
        );
        map
    }

    /// Throws away the repository's cached maps (the directory structure changed).
    pub fn invalidate_maps(&self, repo: &RepoRef) {
        let dir = repo.state_dir.join("maps");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.path().extension().is_some_and(|x| x == "json") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            tracing::debug!(repo = %repo.root.display(), "project maps invalidated");
        }
    }

    /// The spotlight's words: the agent's role (expanded), then its and the team's tooling;
    /// and whether profile memory holds the agent (true without one; none for an unknown one).
    fn map_keywords(&self, agent: Option<&str>) -> Result<(Vec<String>, bool)> {
        let Some(agent) = agent else { return Ok((Vec::new(), true)) };
        let (role, tooling) = self.profile_read(|c| {
            let role = store::agent(c, agent)?.map(|a| a.role);
            let tooling: Vec<String> = store::preferences_of(c, &recall_agents(agent, true))?
                .into_iter()
                .filter(|p| p.category == Category::Tooling)
                .map(|p| p.content)
                .collect();
            Ok((role, tooling))
        })?;
        let Some(role) = role else { return Ok((Vec::new(), false)) };
        let mut words: Vec<String> = Vec::new();
        let mut push = |w: &str| {
            let w = w.trim().to_lowercase();
            if w.len() >= 2 && !STOP.contains(&w.as_str()) && !words.contains(&w) {
                words.push(w);
            }
        };
        let role_words = split_words(&format!("{agent} {role}"));
        for w in &role_words {
            push(w);
            for (triggers, extra) in ROLE_WORDS {
                if triggers.contains(&w.as_str()) {
                    extra.iter().for_each(|x| push(x));
                }
            }
        }
        for t in &tooling {
            split_words(t).iter().for_each(|w| push(w));
        }
        words.truncate(40);
        Ok((words, true))
    }

    /// Paths the index ranks for the keywords, best first: those a keyword matched (BM25), and
    /// the ten nearest by meaning alone. A search that fails leaves path names alone, but one
    /// stopped by its caller ([`Error::Cancelled`]) stops the map too.
    fn spotlight_hits(&self, repo: &RepoRef, keywords: &[String]) -> Result<Vec<String>> {
        if keywords.is_empty() {
            return Ok(Vec::new());
        }
        let req = SearchRequest {
            query: keywords.join(" "),
            limit: Some(SPOTLIGHT_PATHS),
            for_chat: true,
            ..Default::default()
        };
        match self.search(&repo.root, &req) {
            Ok(r) => {
                let mut seen = BTreeSet::new();
                Ok(r.results
                    .into_iter()
                    .enumerate()
                    .filter(|(i, h)| *i < 10 || h.retrievers.iter().any(|x| x == "bm25"))
                    .filter(|(_, h)| seen.insert(h.path.clone()))
                    .map(|(_, h)| h.path)
                    .collect())
            }
            Err(Error::Cancelled) => Err(Error::Cancelled),
            Err(e) => {
                tracing::debug!(error = %e, "the project map's search probe failed; path names only");
                Ok(Vec::new())
            }
        }
    }
}

fn cache_path(repo: &RepoRef, agent: Option<&str>) -> PathBuf {
    repo.state_dir.join("maps").join(format!("{}.json", agent.unwrap_or("_none")))
}

fn split_words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .map(|w| w.trim_matches('-').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The best paths for the keywords: a file named after one (a tool's config file above all), a
/// directory named after one, and the index's ranking, in that order of weight.
/// Without an agent, what someone new to the repository reads first: the project's own files at
/// its root (README, manifests, build files), then the source files most of the repository
/// imports (the import graph's counts, as search's import prior keeps them).
fn central_paths(repo: &RepoRef, paths: &[String]) -> Vec<String> {
    const PROJECT_FILES: &[&str] = &[
        "cargo.toml",
        "package.json",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "go.mod",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "makefile",
        "cmakelists.txt",
        "gemfile",
        "composer.json",
        "pubspec.yaml",
        "deno.json",
        "tsconfig.json",
    ];
    let mut shown: Vec<String> = paths
        .iter()
        .filter(|p| !p.contains('/'))
        .filter(|p| {
            let lower = p.to_ascii_lowercase();
            lower.starts_with("readme") || PROJECT_FILES.contains(&lower.as_str())
        })
        .cloned()
        .collect();
    let prior = ImportPrior::load(&import_prior::path(&repo.state_dir));
    let mut central: Vec<(u32, &String)> = paths
        .iter()
        .filter(|p| files::classify(p, "") == files::FileClass::Source)
        .map(|p| (prior.importers(xxhash_rust::xxh3::xxh3_64(p.as_bytes())), p))
        .filter(|(n, _)| *n > 0)
        .collect();
    central.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let room = CENTRAL_PATHS.saturating_sub(shown.len());
    shown.extend(central.into_iter().take(room).map(|(_, p)| p.clone()));
    shown
}

fn spotlight(paths: &[String], keywords: &[String], hits: &[String]) -> Vec<String> {
    if keywords.is_empty() {
        return Vec::new();
    }
    let rank: HashMap<&str, usize> = hits.iter().enumerate().map(|(i, p)| (p.as_str(), i)).collect();
    let mut scored: Vec<(f64, &String)> = paths
        .iter()
        .filter_map(|p| {
            let lower = p.to_lowercase();
            let (dir, file) = lower.rsplit_once('/').unwrap_or(("", lower.as_str()));
            let stem = file.split('.').next().unwrap_or(file);
            let mut score = 0.0;
            for k in keywords {
                let config = (file.starts_with(&format!("{k}.")) && file.matches('.').count() > 1)
                    || file.starts_with(&format!(".{k}"));
                if config {
                    // vitest.config.ts, .eslintrc.json: the tool's own file comes first
                    score += 5.0;
                } else if stem == k || file.starts_with(&format!("{k}.")) {
                    // auth.rs
                    score += 4.0;
                } else if split_words(file).iter().any(|w| w == k) || stem.contains(k.as_str()) {
                    score += 2.0;
                }
                if dir.split('/').any(|d| d == k) {
                    score += 1.0;
                }
            }
            if let Some(r) = rank.get(p.as_str()) {
                score += 2.0 * (1.0 - *r as f64 / SPOTLIGHT_PATHS as f64);
            }
            (score > 0.0).then_some((score, p))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(SPOTLIGHT_PATHS).map(|(_, p)| p.clone()).collect()
}

/// A directory of the tree: subdirectories, shown files, and how many files lie under it.
#[derive(Default)]
struct Dir {
    dirs: BTreeMap<String, Dir>,
    files: BTreeSet<String>,
    total: usize,
}

fn build(paths: &[String], shown: &BTreeSet<&str>, depth: usize) -> Dir {
    let mut root = Dir::default();
    // Open the directories leading to shown files (at most `depth` levels down).
    for p in paths.iter().filter(|p| shown.contains(p.as_str())) {
        let parts: Vec<&str> = p.split('/').collect();
        let (file, dirs) = parts.split_last().unwrap_or((&"", &[]));
        let mut d = &mut root;
        for name in dirs.iter().take(depth) {
            d = d.dirs.entry(name.to_string()).or_default();
        }
        if dirs.len() < depth {
            d.files.insert(file.to_string());
        }
    }
    // Count every file in each open directory it lies under.
    for p in paths {
        let mut d = &mut root;
        d.total += 1;
        for name in p.split('/').collect::<Vec<_>>().split_last().map(|(_, dirs)| dirs.to_vec()).unwrap_or_default() {
            match d.dirs.get_mut(name) {
                Some(child) => {
                    child.total += 1;
                    d = child;
                }
                None => break,
            }
        }
    }
    root
}

fn render(name: &str, root: &Dir) -> String {
    fn walk(d: &Dir, prefix: &str, out: &mut String) {
        let hidden = d.total.saturating_sub(d.files.len() + d.dirs.values().map(|x| x.total).sum::<usize>());
        let mut entries: Vec<(String, Option<&Dir>)> = d.dirs.iter().map(|(n, c)| (format!("{n}/"), Some(c))).collect();
        entries.extend(d.files.iter().map(|f| (f.clone(), None)));
        if hidden > 0 {
            entries.push((format!("[{hidden} hidden {}]", crate::engine::fsutil::noun_for(&hidden, "file")), None));
        }
        let n = entries.len();
        for (i, (label, child)) in entries.into_iter().enumerate() {
            let last = i + 1 == n;
            out.push_str(prefix);
            out.push_str(if last { "└── " } else { "├── " });
            out.push_str(&label);
            out.push('\n');
            if let Some(c) = child {
                walk(c, &format!("{prefix}{}", if last { "    " } else { "│   " }), out);
            }
        }
    }
    let mut out = format!("{name}/\n");
    walk(root, "", &mut out);
    out
}

/// The deepest tree that fits [`MAP_TOKENS`] and shows at least one of `shown`; when none
/// does, the least relevant shown files are left out. Returns the tree, its depth, tokens and shown paths;
/// [`Error::Cancelled`] once `cancel` trips, looked at per tree tried (each one is built over
/// every path of the repository).
fn fit_tree(
    name: &str,
    paths: &[String],
    shown: &[String],
    cancel: &CancelToken,
) -> Result<(String, u32, u32, Vec<String>)> {
    let counter = TokenCounter::for_model("cl100k", None)?;
    let max_depth = shown.iter().map(|p| p.split('/').count()).max().unwrap_or(1).max(1);
    let mut kept: Vec<String> = shown.to_vec();
    loop {
        let set: BTreeSet<&str> = kept.iter().map(String::as_str).collect();
        for depth in (1..=max_depth).rev() {
            cancel.check()?;
            let tree = render(name, &build(paths, &set, depth));
            let tokens = counter.count(&tree);
            let visible: Vec<String> = kept.iter().filter(|p| p.split('/').count() <= depth).cloned().collect();
            // A shallower tree that shows none of the files it was made for is no map of them:
            // one file fewer is tried first (an agent's map was folders only, tour35 F4).
            if tokens <= MAP_TOKENS && (kept.is_empty() || !visible.is_empty()) {
                return Ok((tree, depth as u32, tokens, visible));
            }
        }
        if kept.is_empty() {
            // A root with more entries than fit: the bare name and a count.
            let tree = format!("{name}/\n└── [{}]\n", crate::engine::fsutil::count(paths.len(), "file"));
            let tokens = counter.count(&tree);
            return Ok((tree, 0, tokens, Vec::new()));
        }
        kept.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_spotlight_prefers_tool_configs_and_named_files() {
        let paths =
            p(&["vitest.config.ts", "src/components/Button.tsx", "src/server/db.ts", "README.md", "src/view.tsx"]);
        let kw = p(&["vitest", "component", "components", "view"]);
        let s = spotlight(&paths, &kw, &[]);
        assert_eq!(s[0], "vitest.config.ts");
        assert!(s.contains(&"src/components/Button.tsx".to_string()) && s.contains(&"src/view.tsx".to_string()));
        assert!(!s.contains(&"src/server/db.ts".to_string()));
        assert!(spotlight(&paths, &[], &[]).is_empty());
    }

    #[test]
    fn the_tree_shows_only_the_spotlight_and_counts_the_rest() {
        let paths = p(&["a/b/c.ts", "a/b/d.ts", "a/e.ts", "x/y.ts", "top.md"]);
        let shown = p(&["a/b/c.ts"]);
        let (tree, depth, tokens, kept) = fit_tree("repo", &paths, &shown, &CancelToken::new()).unwrap();
        assert_eq!(depth, 3);
        assert!(tokens > 0 && tokens <= MAP_TOKENS);
        assert_eq!(kept, shown);
        assert_eq!(tree, "repo/\n├── a/\n│   ├── b/\n│   │   ├── c.ts\n│   │   └── [1 hidden file]\n│   └── [1 hidden file]\n└── [2 hidden files]\n");
        // No spotlight: the bare top level.
        let (tree, _, _, kept) = fit_tree("repo", &paths, &[], &CancelToken::new()).unwrap();
        assert!(kept.is_empty());
        assert_eq!(tree, "repo/\n└── [5 hidden files]\n");
    }

    #[test]
    fn deep_trees_are_pruned_to_the_token_cap() {
        let paths: Vec<String> =
            (0..60).map(|i| format!("pkg{}/very/deeply/nested/module_{i}/implementation_file_{i}.ts", i % 7)).collect();
        let (tree, depth, tokens, kept) = fit_tree("repo", &paths, &paths[..50], &CancelToken::new()).unwrap();
        assert!(tokens <= MAP_TOKENS, "{tokens}: {tree}");
        // Every file lies 6 deep: a shallower tree would show none of them (tour35 F4), so the
        // least relevant are left out until the most relevant fit.
        assert_eq!(depth, 6, "{tree}");
        assert!(!kept.is_empty() && kept.len() < 50, "{kept:?}");
        assert_eq!(kept[..], paths[..kept.len()], "the most relevant are kept");
        assert!(tree.contains("implementation_file_0.ts"), "{tree}");
    }
}
