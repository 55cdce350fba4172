//! Deterministic view-models for the TUI's snapshot tests and its benchmark:
//! impact graphs of any size (with cycles, guessed edges, packages and
//! unresolved imports), a waterfall trace, a reasoning DAG, repository
//! overviews, and search responses with many hits.

use crate::engine::protocol::{
    Highlight, IndexProgress, IndexState, LastEvent, RepoOverview, RepoState, SearchHit, SearchResponse, SearchTiming,
};
use crate::tui::widgets::dag::{DagNode, DagSession, DagView};
use crate::tui::widgets::graph::{GraphEdge, GraphNode, GraphView, NodeKind, RuleFlag};
use crate::tui::widgets::trace::{DroppedSnippet, SlotBudget, TierRun, TraceView};
use std::path::PathBuf;

fn file(id: &str) -> GraphNode {
    GraphNode { id: id.into(), kind: NodeKind::File, unresolved_imports: 0, in_cycle: false, rules: Vec::new() }
}

/// Sets `in_cycle` as the engine's cycle list would: the files of each strongly connected set
/// of two or more (every edge of these samples is an import, none a module declaration). The
/// widget marks cycles from `in_cycle` alone, as it does for the engine's answers.
fn with_engine_cycles(mut view: GraphView) -> GraphView {
    let mut g = petgraph::graph::DiGraph::<(), ()>::new();
    let ids: Vec<_> = view.nodes.iter().map(|_| g.add_node(())).collect();
    for e in &view.edges {
        g.add_edge(ids[e.from], ids[e.to], ());
    }
    for scc in petgraph::algo::kosaraju_scc(&g).into_iter().filter(|c| c.len() > 1) {
        for n in scc {
            view.nodes[n.index()].in_cycle = true;
        }
    }
    view
}

/// A small graph around `src/auth/session.rs`: two importers, three imports (one guessed, one a
/// package), a cycle with `src/auth/store.rs`, and a file with unresolved imports.
pub fn small_graph() -> GraphView {
    let mut nodes = vec![
        file("src/auth/session.rs"),
        file("src/main.rs"),
        file("src/api/handlers.rs"),
        file("src/auth/store.rs"),
        file("src/util/time.rs"),
        GraphNode {
            id: "serde".into(),
            kind: NodeKind::External,
            unresolved_imports: 0,
            in_cycle: false,
            rules: Vec::new(),
        },
        file("src/auth/tokens.rs"),
    ];
    nodes[2].unresolved_imports = 2;
    let e = |from, to, confidence| GraphEdge { from, to, confidence };
    with_engine_cycles(GraphView {
        nodes,
        edges: vec![
            e(1, 0, 1.0),
            e(2, 0, 1.0),
            e(0, 3, 1.0),
            e(3, 0, 1.0),
            e(0, 4, 0.6),
            e(0, 5, 1.0),
            e(3, 6, 1.0),
            e(1, 2, 1.0),
        ],
        center: 0,
        depth: 2,
        cut: [false; 2],
        rules_error: None,
    })
}

/// [`small_graph`] with the constraint rules the engine would flag: the cycle forbidden by
/// `no-import-cycles`, and `src/api/handlers.rs` importing the forbidden `moment`.
pub fn ruled_graph() -> GraphView {
    let mut g = small_graph();
    let cycle = |file: &str| {
        RuleFlag {
        rule: "no-import-cycles".into(),
        danger: true,
        reason: format!("{file} is on the import cycle src/auth/session.rs -> src/auth/store.rs -> src/auth/session.rs (mcoda_backend: \"Avoid circular dependencies\")"),
    }
    };
    g.nodes[0].rules.push(cycle("session.rs"));
    g.nodes[3].rules.push(cycle("store.rs"));
    g.nodes[2].rules.push(RuleFlag {
        rule: "forbid-import moment".into(),
        danger: false,
        reason: "imports the package moment (`moment`), which is forbidden (team: \"Deprecate usage of moment.js\")"
            .into(),
    });
    g
}

/// `pkg/hub.py` as the engine returns it for a hub imported by more files than its node
/// limit: the first 2,000 importers (20 folders of 100) and the importers side marked cut.
pub fn cut_hub_graph() -> GraphView {
    let mut nodes = vec![file("pkg/hub.py"), file("pkg/util.py")];
    let mut edges = vec![GraphEdge { from: 0, to: 1, confidence: 1.0 }];
    for i in 0..crate::engine::protocol::MAX_NODES_PER_SIDE {
        nodes.push(file(&format!("pkg/m{}/f{i}.py", i / 100)));
        edges.push(GraphEdge { from: nodes.len() - 1, to: 0, confidence: 1.0 });
    }
    GraphView { nodes, edges, center: 0, depth: 1, cut: [true, false], rules_error: None }
}

/// A graph of `n` files around node 0: a fan of importers and imports over several levels,
/// some guessed edges, a few cycles and unresolved imports. Deterministic for a given `n`.
pub fn large_graph(n: usize) -> GraphView {
    let n = n.max(2);
    let mut nodes: Vec<GraphNode> = (0..n)
        .map(|i| {
            let dir = ["core", "api", "db", "ui", "util", "auth"][i % 6];
            file(&format!("src/{dir}/module_{i:03}.rs"))
        })
        .collect();
    let mut edges = Vec::new();
    // A tree around the centre: the first eleven neighbours alternate between importers (odd)
    // and imports (even); each further node hangs off an earlier one on the same side.
    let mut importer = vec![false; n];
    for i in 1..n {
        let parent = if i < 12 { 0 } else { (i - 1) / 6 };
        importer[i] = if i < 12 { i % 2 == 1 } else { importer[parent] };
        let confidence = if i % 7 == 0 { 0.55 } else { 1.0 };
        if importer[i] {
            edges.push(GraphEdge { from: i, to: parent, confidence });
        } else {
            edges.push(GraphEdge { from: parent, to: i, confidence });
        }
        if i % 11 == 0 {
            nodes[i].unresolved_imports = (i % 3 + 1) as u32;
        }
    }
    // A few cycles back to the centre and between siblings.
    for i in (2..n).step_by(23) {
        edges.push(GraphEdge { from: i, to: 0, confidence: 1.0 });
    }
    for i in (5..n.saturating_sub(1)).step_by(31) {
        edges.push(GraphEdge { from: i + 1, to: i, confidence: 0.9 });
        edges.push(GraphEdge { from: i, to: i + 1, confidence: 0.9 });
    }
    with_engine_cycles(GraphView { nodes, edges, center: 0, depth: 4, cut: [false; 2], rules_error: None })
}

/// A trace of one chat turn that escalated to the web tier.
pub fn trace() -> TraceView {
    let tier = |name: &str, ran: bool, score: Option<f64>, threshold: Option<f64>, outcome: &str, ms: f64| TierRun {
        name: name.into(),
        ran,
        score,
        threshold,
        outcome: outcome.into(),
        ms,
    };
    TraceView {
        turn: 2,
        question: "where are sessions expired and how long do they live?".into(),
        tiers: vec![
            tier("memory", true, Some(0.31), None, "2 notes recalled", 4.0),
            tier("local", true, Some(0.62), Some(0.70), "below the gate: web next", 18.0),
            tier("web", true, Some(0.81), Some(0.70), "3 pages fetched", 1840.0),
            tier("llm", true, None, None, "answered with 4 citations", 2310.0),
        ],
        budget: vec![
            SlotBudget { slot: "system".into(), used: 180, limit: 256, items: 0, dropped: 0 },
            SlotBudget { slot: "memory".into(), used: 96, limit: 512, items: 0, dropped: 0 },
            SlotBudget { slot: "repo".into(), used: 2048, limit: 2048, items: 0, dropped: 0 },
            SlotBudget { slot: "web".into(), used: 1310, limit: 1024, items: 0, dropped: 0 },
            SlotBudget { slot: "answer".into(), used: 412, limit: 1024, items: 0, dropped: 0 },
        ],
        dropped: vec![
            DroppedSnippet {
                source: "src/auth/session.rs:120-180".into(),
                tokens: 410,
                reason: "repo budget full".into(),
            },
            DroppedSnippet {
                source: "https://example.org/sessions".into(),
                tokens: 290,
                reason: "duplicate of a kept page".into(),
            },
        ],
        timings: vec![("memory".into(), 4.0), ("search".into(), 18.0), ("web".into(), 1840.0), ("llm".into(), 2310.0)],
        total_ms: 4172.0,
        context: Vec::new(),
        notices: Vec::new(),
        web: None,
    }
}

/// A recorded session's reasoning DAG.
pub fn dag() -> DagView {
    let node = |id: &str, kind: &str, label: &str, parents: &[&str], detail: &str| DagNode {
        id: id.into(),
        kind: kind.into(),
        label: label.into(),
        parents: parents.iter().map(|p| p.to_string()).collect(),
        detail: detail.into(),
    };
    DagView {
        sessions: vec![
            DagSession {
                id: "s-2".into(),
                title: "session expiry".into(),
                nodes: 6,
                started_ms: 1_700_000_000_000 - 120_000,
            },
            DagSession {
                id: "s-1".into(),
                title: "parser config".into(),
                nodes: 3,
                started_ms: 1_700_000_000_000 - 7_200_000,
            },
        ],
        selected_session: 0,
        nodes: vec![
            node("n1", "query", "where are sessions expired?", &[], "The user's question, as typed."),
            node("n2", "memory", "recall: 2 notes", &["n1"], "Notes about session TTLs saved last week."),
            node(
                "n3",
                "search",
                "local: 12 hits, confidence 0.62",
                &["n1"],
                "BM25 over the repository; below the 0.70 gate.",
            ),
            node("n4", "web", "3 pages", &["n3"], "Escalated because local confidence was under the threshold."),
            node("n5", "llm", "phi3.5 · 2,310 ms", &["n2", "n3", "n4"], "Prompt of 3,634 tokens; 412 generated."),
            node("n6", "answer", "4 citations", &["n5"], "Sessions expire in SessionStore::expire_stale_sessions [1]."),
        ],
        older_nodes: 0,
        next_before: None,
        total_sessions: 2,
    }
}

/// Repository overviews for the switcher: a ready one, one being indexed, one never indexed,
/// one watched, and one whose directory is gone. Times relative to `now_ms`.
pub fn overviews(now_ms: u64) -> Vec<RepoOverview> {
    let base = |path: &str, state: RepoState, files: u64, chunks: u64, ago_ms: Option<u64>| RepoOverview {
        path: PathBuf::from(path),
        fingerprint: format!("{:0>64}", path.len()),
        registered: true,
        exists: true,
        state,
        files,
        chunks,
        last_indexed_ms: ago_ms.map(|a| now_ms - a),
        watching: false,
        writer_pid: None,
        queued: 0,
        progress: None,
        last_event: None,
        last_error: None,
        first_run: None,
    };
    let mut indexing = base("/work/code/monorepo", RepoState::Updating, 48_210, 301_877, Some(86_400_000));
    indexing.progress = Some(IndexProgress {
        phase: "indexing".into(),
        files_done: 12_000,
        files_total: 48_210,
        bytes_done: 41_000_000,
        bytes_total: 160_000_000,
        ..Default::default()
    });
    indexing.writer_pid = Some(4242);
    let mut watched = base("/work/code/shop", RepoState::Ready, 1_204, 9_876, Some(300_000));
    watched.watching = true;
    watched.writer_pid = Some(4343);
    watched.last_event = Some(LastEvent { kind: "modify".into(), path: "src/cart.rs".into(), at: now_ms - 8_000 });
    // Not watched, indexed 20 min ago: the column names the index run's last file as such.
    let mut tools = base("/work/code/tools", RepoState::Ready, 312, 2_041, Some(1_200_000));
    tools.last_event = Some(LastEvent { kind: "create".into(), path: "bin/release.sh".into(), at: now_ms - 1_200_000 });
    let mut gone = base("/work/old/prototype", RepoState::Ready, 77, 310, Some(40 * 86_400_000));
    gone.exists = false;
    vec![base("/work/code/docs-site", RepoState::NotIndexed, 0, 0, None), indexing, gone, watched, tools]
}

/// A search response with `n` hits over made-up files, as the engine would return it.
pub fn search_response(query: &str, n: usize) -> SearchResponse {
    let results = (0..n)
        .map(|i| {
            let path = format!("src/{}/file_{i:05}.rs", ["core", "api", "db", "ui"][i % 4]);
            let line_start = (i % 400) as u32 + 1;
            SearchHit {
                chunk_id: format!("{path}:{line_start}-{}", line_start + 20),
                path,
                lang: "rust".into(),
                line_start,
                line_end: line_start + 20,
                page_start: None,
                page_end: None,
                source: None,
                score: 10.0 / (i + 1) as f32,
                snippet_line_start: line_start,
                snippet: format!("fn {query}_{i}(session: &Session) -> Result<()> {{\n    todo()\n}}"),
                highlights: vec![Highlight { line: line_start, start: 3, end: 3 + query.len(), shown_from: 0 }],
                generation: 1,
                stale: false,
                source_missing: false,
                gone: false,
                context: Vec::new(),
                retrievers: vec!["bm25".into()],
            }
        })
        .collect();
    SearchResponse {
        schema_version: 1,
        project_id: "0".repeat(64),
        repo: PathBuf::from("/work/code/shop"),
        query: query.into(),
        index_state: IndexState::Ready,
        generation: 1,
        confidence: 0.91,
        results,
        total_hits: n,
        next_cursor: String::new(),
        pii_redacted: false,
        timing_ms: SearchTiming { search: 1.0, rank: 0.5, snippets: 0.5, total: 2.0 },
        retrieval: Default::default(),
        libs: Vec::new(),
        note: None,
    }
}

/// The files of tokio 1.54 that import `crate::loom` (72 of them, from `grep -rl crate::loom`),
/// for a graph around `tokio/src/loom/mod.rs` the way the issue judges it.
const TOKIO_LOOM_IMPORTERS: &str = "src/io/util/mem.rs src/loom/std/atomic_u64_as_mutex.rs \
src/loom/std/atomic_u64_static_const_new.rs src/loom/std/atomic_u64_static_once_cell.rs src/loom/std/barrier.rs \
src/loom/std/mod.rs src/process/unix/orphan.rs src/runtime/blocking/pool.rs src/runtime/blocking/sharded.rs \
src/runtime/blocking/shutdown.rs src/runtime/builder.rs src/runtime/context.rs src/runtime/context/blocking.rs \
src/runtime/handle.rs src/runtime/io/driver.rs src/runtime/io/registration.rs src/runtime/io/registration_set.rs \
src/runtime/io/scheduled_io.rs src/runtime/metrics/scheduler.rs src/runtime/park.rs \
src/runtime/scheduler/current_thread/mod.rs src/runtime/scheduler/inject.rs src/runtime/scheduler/inject/shared.rs \
src/runtime/scheduler/mod.rs src/runtime/scheduler/multi_thread/handle.rs src/runtime/scheduler/multi_thread/idle.rs \
src/runtime/scheduler/multi_thread/mod.rs src/runtime/scheduler/multi_thread/park.rs \
src/runtime/scheduler/multi_thread/queue.rs src/runtime/scheduler/multi_thread/trace.rs \
src/runtime/scheduler/multi_thread/worker.rs src/runtime/scheduler/multi_thread/worker/taskdump.rs \
src/runtime/task/core.rs src/runtime/task/id.rs src/runtime/task/list.rs src/runtime/task/state.rs \
src/runtime/task/trace/mod.rs src/runtime/tests/loom_current_thread.rs src/runtime/tests/loom_oneshot.rs \
src/runtime/thread_id.rs src/runtime/time/entry.rs src/runtime/time/mod.rs src/runtime/time/tests/mod.rs \
src/runtime/time_alt/cancellation_queue.rs src/runtime/time_alt/cancellation_queue/tests.rs \
src/runtime/time_alt/entry.rs src/runtime/time_alt/tests.rs src/runtime/time_alt/timer.rs src/sync/barrier.rs \
src/sync/batch_semaphore.rs src/sync/broadcast.rs src/sync/mpsc/block.rs src/sync/mpsc/bounded.rs \
src/sync/mpsc/chan.rs src/sync/mpsc/list.rs src/sync/mpsc/unbounded.rs src/sync/notify.rs src/sync/once_cell.rs \
src/sync/oneshot.rs src/sync/set_once.rs src/sync/task/atomic_waker.rs src/sync/watch.rs src/task/local.rs \
src/time/clock.rs src/util/atomic_cell.rs src/util/idle_notified_set.rs src/util/ptr_expose.rs src/util/rand.rs \
src/util/rc_cell.rs src/util/sharded_list.rs src/util/try_lock.rs src/util/wake.rs";

/// A wide neighbourhood: `tokio/src/loom/mod.rs` with tokio's 72 importers (most of them on some
/// import cycle of the repository, as in tokio), importing `loom/std/mod.rs`, which imports it
/// back (a cycle through the centre).
pub fn fan_in_graph() -> GraphView {
    let centre = "tokio/src/loom/mod.rs";
    let mut nodes = vec![file(centre)];
    let mut edges = Vec::new();
    for (k, path) in TOKIO_LOOM_IMPORTERS.split_whitespace().enumerate() {
        let mut n = file(&format!("tokio/{path}"));
        n.in_cycle = k % 5 != 0;
        nodes.push(n);
        edges.push(GraphEdge { from: nodes.len() - 1, to: 0, confidence: if k % 9 == 4 { 0.6 } else { 1.0 } });
    }
    nodes[0].in_cycle = true;
    let std_mod = nodes.iter().position(|n| n.id == "tokio/src/loom/std/mod.rs").unwrap_or(1);
    nodes[std_mod].in_cycle = true;
    edges.push(GraphEdge { from: 0, to: std_mod, confidence: 1.0 });
    GraphView { nodes, edges, center: 0, depth: 1, cut: [false; 2], rules_error: None }
}
