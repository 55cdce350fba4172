//! The TUI's own protocol: what the UI asks of the engine ([`Request`]), what
//! comes back ([`EngineEvent`]), and the single stream of [`AppEvent`]s the
//! event loop drains (input, ticks and engine results merged). Panes only ever
//! see these values, never the engine, which is what keeps them testable and
//! non-blocking.

use super::widgets::dag::{DagPage, DagView};
use super::widgets::graph::GraphView;
use super::widgets::preview::PreviewDoc;
use super::widgets::trace::TraceView;
use crate::engine::protocol::ChatMessage;
use crate::engine::protocol::{Highlight, IndexProgress, IndexSummary, RepoOverview, SearchRequest, SearchResponse};
use crate::engine::protocol::{
    ProfileAddRequest, ProfileEditRequest, ProfileExportResponse, ProfileImportResponse, ProfileListResponse,
    ProfileRemoveRequest, ProfileRemoveResponse, ProfileSearchRequest, ProfileSearchResponse, ProfileWriteResponse,
};
use serde::Serialize;
use std::path::PathBuf;

/// Everything the event loop reacts to, merged into one channel.
// Each event is moved once through the channel; boxing the engine results would only add an
// allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum AppEvent {
    /// Keyboard, mouse, paste, resize, focus.
    Input(crossterm::event::Event),
    /// The periodic tick (spinners, debounce deadlines, polling).
    Tick,
    /// A result or notification from engine work.
    Engine(EngineEvent),
}

/// What the UI asks the engine worker to do. Scenario tests assert on these.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Request {
    /// Refresh the repository overviews (registry + live state), including the current repo.
    LoadRepos {
        /// The current repository (listed even before it is registered).
        current: PathBuf,
    },
    /// Index (incrementally, or from scratch with `rebuild`) a repository, reporting progress.
    Index {
        /// The repository.
        repo: PathBuf,
        /// Throw the index away first.
        rebuild: bool,
    },
    /// Forget a repository (its index stays on disk).
    RemoveRepo {
        /// The repository.
        repo: PathBuf,
    },
    /// Start or stop a watcher on a repository.
    Watch {
        /// The repository.
        repo: PathBuf,
        /// Start (true) or stop (false).
        on: bool,
    },
    /// A text search (latest wins: a newer one replaces a pending one).
    Search {
        /// Sequence number; results carry it back.
        seq: u64,
        /// The repository.
        repo: PathBuf,
        /// The engine request.
        req: SearchRequest,
        /// A further page of the same query (appended) rather than a new query.
        more: bool,
    },
    /// A symbol search by name (latest wins, in the same slot as text search).
    Symbols {
        /// Sequence number; results carry it back.
        seq: u64,
        /// The repository.
        repo: PathBuf,
        /// Name (or part of one) to look for.
        query: String,
        /// Only files under this path prefix.
        path_prefix: Option<String>,
        /// Only this language.
        lang: Option<String>,
    },
    /// Read and highlight a file around a line for the preview (latest wins).
    Preview {
        /// Sequence number.
        seq: u64,
        /// The repository.
        repo: PathBuf,
        /// Repo-relative path.
        path: String,
        /// The line to show.
        line: u32,
        /// Language name, to pick a grammar when the extension does not.
        lang: String,
        /// The hit's line range, marked in the gutter.
        hit: (u32, u32),
        /// Matched terms to emphasise.
        highlights: Vec<Highlight>,
    },
    /// Ask the model provider which models it has (reachability for the status bar).
    CheckProvider,
    /// Answer a question with the waterfall chat (`Engine::chat`), streaming the answer.
    Chat {
        /// The turn number (of this run); streamed events carry it back.
        turn: u64,
        /// The repository asked about.
        repo: PathBuf,
        /// The question.
        query: String,
        /// The session's earlier messages, oldest first.
        history: Vec<ChatMessage>,
        /// The reasoning-DAG session to continue (`None` starts one).
        session_id: Option<String>,
    },
    /// Stop generating the answer of a turn.
    StopChat {
        /// The turn.
        turn: u64,
    },
    /// The reasoning-DAG sessions of a repository and the nodes of one of them.
    LoadDag {
        /// The repository.
        repo: PathBuf,
        /// The session to show (`None`: the newest).
        session: Option<String>,
    },
    /// The nodes of a reasoning-DAG session before `before`: the DAG pane's "load older"
    /// for a session longer than one view.
    LoadDagOlder {
        /// The repository.
        repo: PathBuf,
        /// The session id.
        session: String,
        /// The view's `next_before` cursor.
        before: i64,
    },
    /// A logged reasoning-DAG session as a conversation, to continue it in the Chat pane.
    LoadConversation {
        /// The repository.
        repo: PathBuf,
        /// The session id.
        session: String,
    },
    /// Profile memory: list, change, search, import or export (the Profile pane).
    Profile(ProfileJob),
    /// Folders that complete a typed path (`tab` in a prompt).
    CompletePath {
        /// `Some(repo)`: folders of that repository's index, repo-relative (the path filter);
        /// `None`: folders on the filesystem (adding a repository is the user's own choice).
        repo: Option<PathBuf>,
        /// What is typed so far.
        typed: String,
    },
    /// The file on disk to open in the editor for an index key (a source's `//name/...` key
    /// included), answered by [`EngineEvent::EditTarget`].
    Edit {
        /// The repository.
        repo: PathBuf,
        /// The index key (repo-relative, or `//source/...`).
        path: String,
        /// The line to open at.
        line: u32,
    },
    /// The impact graph around a file (latest wins).
    Impact {
        /// Sequence number.
        seq: u64,
        /// The repository.
        repo: PathBuf,
        /// Repo-relative path of the centre file.
        file: String,
        /// Levels of dependencies each way.
        depth: u32,
    },
}

/// What the Profile pane asks of profile memory (each one `Engine::profile_*` call).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ProfileJob {
    /// Every agent, and this one's preferences.
    List {
        /// The agent whose preferences to list.
        agent: Option<String>,
    },
    /// Add a preference.
    Add(ProfileAddRequest),
    /// Change a preference's text, category or rule.
    Edit(ProfileEditRequest),
    /// Remove a preference.
    Remove(ProfileRemoveRequest),
    /// An agent's preferences closest to a query (by meaning, or by words without an embedder).
    Search(ProfileSearchRequest),
    /// Write the whole profile to `profiles/sync/` as a manifest.
    Export,
    /// Merge a manifest (last write wins per preference).
    Import(PathBuf),
}

/// What came of a [`ProfileJob`] (errors as the engine words them).
#[derive(Debug, Clone)]
pub enum ProfileUpdate {
    /// Agents, and the named agent's preferences.
    Listed {
        /// The agent asked for.
        agent: Option<String>,
        /// The listing.
        result: Result<ProfileListResponse, String>,
    },
    /// A preference added or edited.
    Saved(Result<ProfileWriteResponse, String>),
    /// A preference removed.
    Removed(Result<ProfileRemoveResponse, String>),
    /// Search results.
    Searched(Result<ProfileSearchResponse, String>),
    /// The manifest written.
    Exported(Result<ProfileExportResponse, String>),
    /// The merge's counts.
    Imported(Result<ProfileImportResponse, String>),
}

/// A progress or result message from engine work.
#[derive(Debug, Clone)]
pub enum EngineEvent {
    /// Fresh repository overviews (or why they could not be read).
    Repos(Result<Vec<RepoOverview>, String>),
    /// An index run started.
    IndexStarted {
        /// The repository.
        repo: PathBuf,
    },
    /// Progress of an index run.
    IndexProgress {
        /// The repository.
        repo: PathBuf,
        /// Where it is.
        progress: IndexProgress,
    },
    /// An index run ended.
    IndexFinished {
        /// The repository.
        repo: PathBuf,
        /// Its summary, or the error.
        result: Result<IndexSummary, String>,
    },
    /// Folders completing a typed path ([`Request::CompletePath`]).
    PathCompletions {
        /// What was typed (a completion for older text is dropped).
        typed: String,
        /// Each folder as it would be typed, ending in `/`, sorted.
        result: Result<Vec<String>, String>,
    },
    /// Where the editor opens ([`Request::Edit`]): the file on disk, or why it cannot.
    EditTarget {
        /// The file on disk, or the reason (a document, a file not served, a missing source).
        result: Result<PathBuf, String>,
        /// The line to open at.
        line: u32,
    },
    /// A repository was removed from the registry.
    RepoRemoved {
        /// The repository.
        repo: PathBuf,
        /// Whether that worked.
        result: Result<(), String>,
    },
    /// A watcher started, applied a batch, failed or stopped.
    Watch {
        /// The repository.
        repo: PathBuf,
        /// What happened.
        activity: WatchActivity,
    },
    /// Results of a [`Request::Search`].
    SearchResults {
        /// The request's sequence number.
        seq: u64,
        /// Whether it was a further page.
        more: bool,
        /// The response or the error.
        result: Result<SearchResponse, String>,
    },
    /// Results of a symbol search.
    SymbolResults {
        /// The request's sequence number.
        seq: u64,
        /// Matching symbols or the error.
        result: Result<Vec<SymbolHit>, String>,
        /// How many matched in all, when more matched than were sent (0 otherwise).
        total: usize,
    },
    /// A highlighted preview.
    Preview {
        /// The request's sequence number.
        seq: u64,
        /// The document or the error.
        result: Result<PreviewDoc, String>,
    },
    /// An impact graph.
    Impact {
        /// The request's sequence number.
        seq: u64,
        /// The graph or the error.
        result: Result<GraphView, String>,
    },
    /// Whether the language-model provider answers.
    Provider(ProviderStatus),
    /// Profile memory answered.
    Profile(ProfileUpdate),
    /// Chat streaming.
    Chat(ChatUpdate),
    /// The waterfall trace of a chat turn.
    Trace(TraceView),
    /// Reasoning DAG sessions and nodes (or why they could not be read).
    Dag(Result<DagView, String>),
    /// Older nodes of the session the DAG pane shows (or why they could not be read).
    DagOlder(Result<DagPage, String>),
    /// A logged session as a conversation (or why it could not be read).
    Conversation(Result<Conversation, String>),
}

/// What a watcher did.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchActivity {
    /// The catch-up run finished; the watcher is live.
    Ready,
    /// A batch of changed paths was applied.
    Applied {
        /// Repo-relative paths.
        paths: Vec<String>,
    },
    /// Another process writes this index; watching takes over when it stops.
    Deferred {
        /// That process.
        writer_pid: u32,
    },
    /// A batch or the watcher failed (a failed watcher is retried with backoff).
    Failed(String),
    /// Asked to start, the watcher was already running.
    Running,
    /// The watcher ended.
    Stopped,
}

/// A symbol found by symbol search (the symbol index's row: name, kind, file, lines, signature).
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolHit {
    /// Symbol name.
    pub name: String,
    /// `function`, `struct`, `class`, ...
    pub kind: String,
    /// Repo-relative path.
    pub path: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// Declaration text.
    pub signature: String,
}

/// The language-model provider as the status bar shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderStatus {
    /// `ollama` or `openai`.
    pub provider: String,
    /// The chat model.
    pub model: String,
    /// Reachability.
    pub state: ProviderState,
}

/// Whether the provider answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderState {
    /// Not checked yet.
    Unchecked,
    /// It answered and has the model.
    Ready,
    /// It did not answer, or lacks the model; the reason says what to do.
    Unavailable(String),
}

/// A source of a chat answer: one the answer cites, or (when it cites none) one it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Citation {
    /// Repo-relative path.
    pub path: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// The answer cites it (false: it was in the context, the answer does not name it).
    pub cited: bool,
    /// A web page's address (Tier 2); `path` is then empty and the label is the URL.
    pub url: Option<String>,
}

impl Citation {
    /// `path:line_start-line_end`, or a web page's URL, as the waterfall cites sources.
    pub fn label(&self) -> String {
        match &self.url {
            Some(url) => url.clone(),
            None => format!("{}:{}-{}", self.path, self.line_start, self.line_end),
        }
    }
}

/// A reasoning-DAG session's questions and answers, to continue it in the Chat pane.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The session id (the next turn continues it).
    pub session_id: String,
    /// Each turn's question and answer (`None` when no model answered), oldest first: the
    /// newest turns, as many as the chat's history holds.
    pub turns: Vec<(String, Option<String>)>,
    /// The session's older turns left out (the history would not hold them).
    pub older_turns: u32,
}

/// Streaming progress of a chat turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatUpdate {
    /// More answer text.
    Token {
        /// The turn.
        turn: u64,
        /// The text.
        text: String,
    },
    /// A step of the waterfall finished (`code_index ran · 12 hits`).
    Progress {
        /// The turn.
        turn: u64,
        /// One line for humans.
        text: String,
    },
    /// The engine noted something about the turn (a degraded tier, a prompt the model server
    /// cut short); one arriving after the answer began is kept under the answer.
    Notice {
        /// The turn.
        turn: u64,
        /// One line for humans.
        text: String,
    },
    /// The turn is complete (answered, stopped, or without a model).
    Done {
        /// The turn.
        turn: u64,
        /// The reasoning-DAG session the turn was logged in.
        session_id: Option<String>,
        /// Sources, in citation-number order.
        citations: Vec<Citation>,
        /// True when the user stopped generation.
        stopped: bool,
        /// Set when no model could answer: the engine's explanation with the commands that
        /// fix it (the sources were still retrieved).
        unavailable: Option<String>,
    },
    /// The turn failed before or while answering (bad input, an unindexed repository, the
    /// model failing part-way).
    Failed {
        /// The turn.
        turn: u64,
        /// The reasoning-DAG session, when the turn got as far as being logged.
        session_id: Option<String>,
        /// Why.
        message: String,
    },
}
