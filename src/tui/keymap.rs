//! Keymaps as data: `keymaps/*.toml` bind keys to named actions per context
//! (`[global]`, `[navigate]`, and one table per pane). The shipped `default`
//! keymap is the base; a named keymap (`vim`, or a user file in
//! `<DOCDEX_HOME>/keymaps/`) is laid over it, action by action, and `[]`
//! unbinds. Unknown actions and two actions on one key in one context are load
//! errors; the app reports them and goes on with the shipped keymap. The help
//! help overlay is generated from the resolved bindings, so it cannot go stale.

use super::datafile::{load_layered, DataError, DataKind, Source};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// The shipped keymaps, embedded in the binary.
pub const EMBEDDED: &[(&str, &str)] =
    &[("default", include_str!("../../keymaps/default.toml")), ("vim", include_str!("../../keymaps/vim.toml"))];

/// Keymaps as data files (for [`load_layered`]).
const KEYMAPS: DataKind = DataKind { noun: "keymap", dir: "keymaps", shipped: EMBEDDED };

/// Where a binding applies. Pane contexts are tried first, then `navigate`, then `global`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    /// Everywhere.
    Global,
    /// Moving around lists and graphs in any pane.
    Navigate,
    /// The repo switcher.
    Repos,
    /// The search pane.
    Search,
    /// The chat pane.
    Chat,
    /// The waterfall trace pane.
    Trace,
    /// The reasoning DAG viewer.
    Dag,
    /// The impact graph.
    Impact,
    /// The profile editor.
    Profile,
}

impl Context {
    /// Every context, in help order.
    pub const ALL: [Context; 9] = [
        Context::Global,
        Context::Navigate,
        Context::Repos,
        Context::Search,
        Context::Chat,
        Context::Trace,
        Context::Dag,
        Context::Impact,
        Context::Profile,
    ];

    /// The table name in keymap files.
    pub fn name(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::Navigate => "navigate",
            Context::Repos => "repos",
            Context::Search => "search",
            Context::Chat => "chat",
            Context::Trace => "trace",
            Context::Dag => "dag",
            Context::Impact => "impact",
            Context::Profile => "profile",
        }
    }

    fn from_name(name: &str) -> Option<Context> {
        Context::ALL.into_iter().find(|c| c.name() == name)
    }
}

macro_rules! commands {
    ($( $variant:ident => $ctx:ident, $name:literal, $desc:literal; )*) => {
        /// A named action a key can be bound to. Each belongs to one [`Context`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Command {
            $(
                #[doc = $desc]
                $variant,
            )*
        }

        impl Command {
            /// Every command, in help order.
            pub const ALL: &'static [Command] = &[$(Command::$variant),*];

            /// The action name used in keymap files.
            pub fn name(self) -> &'static str {
                match self { $(Command::$variant => $name,)* }
            }

            /// The context whose table binds it.
            pub fn context(self) -> Context {
                match self { $(Command::$variant => Context::$ctx,)* }
            }

            /// One line for the help overlay.
            pub fn description(self) -> &'static str {
                match self { $(Command::$variant => $desc,)* }
            }
        }
    };
}

commands! {
    Quit => Global, "quit", "Quit docdex (a letter asks first; a chord quits at once)";
    Help => Global, "help", "Show or hide this help (f1 works everywhere, also in a text field)";
    Suspend => Global, "suspend", "Suspend docdex like any terminal program (fg resumes)";
    Messages => Global, "messages", "Show the message log (also written to logs/tui.log)";
    NextPane => Global, "next_pane", "Next pane";
    PrevPane => Global, "prev_pane", "Previous pane";
    GotoRepos => Global, "goto_repos", "Repositories pane";
    GotoSearch => Global, "goto_search", "Search pane";
    GotoChat => Global, "goto_chat", "Chat pane";
    GotoTrace => Global, "goto_trace", "Waterfall trace pane";
    GotoDag => Global, "goto_dag", "Reasoning DAG pane";
    GotoImpact => Global, "goto_impact", "Impact graph pane";
    GotoProfile => Global, "goto_profile", "Profile pane";
    Up => Navigate, "up", "Move up";
    Down => Navigate, "down", "Move down";
    Left => Navigate, "left", "Move left";
    Right => Navigate, "right", "Move right";
    PageUp => Navigate, "page_up", "Page up";
    PageDown => Navigate, "page_down", "Page down";
    Top => Navigate, "top", "First item";
    Bottom => Navigate, "bottom", "Last item";
    Select => Navigate, "select", "Choose the selected item";
    Back => Navigate, "back", "Leave the text field (overlays: close); nothing else";
    AddRepo => Repos, "add_repo", "Add a repository (asks for its path) and index it";
    Reindex => Repos, "reindex", "Re-index the selected repository";
    RemoveRepo => Repos, "remove_repo", "Remove the selected repository from the registry";
    ToggleWatch => Repos, "toggle_watch", "Start or stop watching the selected repository";
    Refresh => Repos, "refresh", "Refresh the list";
    NextResult => Search, "next_result", "Next result";
    PrevResult => Search, "prev_result", "Previous result";
    OpenInEditor => Search, "open_in_editor", "Open the selected hit in $EDITOR at its line";
    FocusQuery => Search, "focus_query", "Type in the query box";
    LeaveQuery => Search, "leave_query", "Leave the query box (keys become commands)";
    ToggleSymbols => Search, "toggle_symbols", "Switch between text and symbol search";
    FilterPath => Search, "filter_path", "Filter by path prefix";
    FilterLang => Search, "filter_lang", "Filter by language";
    ClearFilters => Search, "clear_filters", "Clear the path and language filters";
    OpenImpact => Search, "open_impact", "Show the selected file in the impact graph";
    PreviewDown => Search, "preview_down", "Scroll the preview down";
    PreviewUp => Search, "preview_up", "Scroll the preview up";
    Send => Chat, "send", "Send the message";
    Newline => Chat, "newline", "Insert a line break";
    StopGeneration => Chat, "stop_generation", "Stop the answer being generated";
    FocusInput => Chat, "focus_input", "Type in the message box";
    LeaveInput => Chat, "leave_input", "Leave the message box (keys become commands)";
    NextCitation => Chat, "next_citation", "Select the next citation";
    PrevCitation => Chat, "prev_citation", "Select the previous citation";
    OpenCitation => Chat, "open_citation", "Show the selected citation in the search preview";
    NewSession => Chat, "new_session", "Start a new chat session";
    ChatPrevSession => Chat, "prev_session", "Previous chat session of this run";
    ChatNextSession => Chat, "next_session", "Next chat session of this run";
    NextTurn => Trace, "next_turn", "Trace of the next chat turn";
    PrevTurn => Trace, "prev_turn", "Trace of the previous chat turn";
    ToggleLayout => Dag, "toggle_layout", "Switch between tree and layered views";
    NextSession => Dag, "next_session", "Next session";
    PrevSession => Dag, "prev_session", "Previous session";
    LoadOlder => Dag, "load_older", "Load the session's older steps (a long session opens on its newest 1,000)";
    Recenter => Impact, "recenter", "Centre the graph on the selected file";
    HistoryBack => Impact, "history_back", "Back to the previous centre";
    DepthMore => Impact, "depth_more", "Show one more level of dependencies";
    DepthLess => Impact, "depth_less", "Show one level less";
    ToggleRisk => Impact, "toggle_risk", "Show or hide the risk overlay";
    ImpactOpenInEditor => Impact, "open_in_editor", "Open the selected file in $EDITOR";
    ProfileAdd => Profile, "add", "Add a preference to the selected agent";
    ProfileEdit => Profile, "edit", "Edit the selected preference (text, category, rule)";
    ProfileRemove => Profile, "remove", "Remove the selected preference (asks first)";
    ProfileMove => Profile, "next_category", "Move the preference to the next category (in the form: change it)";
    ProfileSearch => Profile, "search", "Search the agent's preferences by meaning";
    ProfileImport => Profile, "import", "Import a profile manifest (last write wins)";
    ProfileExport => Profile, "export", "Export the whole profile to profiles/sync/";
    ProfileReload => Profile, "reload", "Reload agents and preferences";
}

impl Command {
    fn lookup(ctx: Context, name: &str) -> Option<Command> {
        Command::ALL.iter().copied().find(|c| c.context() == ctx && c.name() == name)
    }
}

/// A key with its modifiers, normalised so `shift+g` and `G` (or `shift+tab` and
/// `backtab`) are the same chord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyChord {
    /// The key.
    pub code: KeyCode,
    /// Ctrl, Alt (Shift only for non-character keys).
    pub mods: KeyModifiers,
}

impl KeyChord {
    /// A chord from a code and modifiers, normalised.
    pub fn new(code: KeyCode, mods: KeyModifiers) -> KeyChord {
        let mut mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match code {
            KeyCode::Char(c) => {
                // The character already carries Shift.
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c)
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            KeyCode::Tab if mods.contains(KeyModifiers::SHIFT) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        KeyChord { code, mods }
    }

    /// True when a focused text field takes this key (a printable key or an editing key).
    pub fn is_text_key(&self, multi_line: bool) -> bool {
        super::widgets::text_field::claims(&KeyEvent::new(self.code, self.mods), multi_line)
    }

    /// The chord of a terminal key event.
    pub fn from_event(key: &KeyEvent) -> KeyChord {
        KeyChord::new(key.code, key.modifiers)
    }

    /// Parses `ctrl+c`, `shift+tab`, `alt+1`, `G`, `enter`, `pagedown`, `f5`, `?`, `space`.
    pub fn parse(s: &str) -> Result<KeyChord, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty key".into());
        }
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        // Split off modifiers; a trailing "+" is the plus key itself.
        while let Some((head, tail)) = rest.split_once('+') {
            if tail.is_empty() {
                break;
            }
            match head.to_ascii_lowercase().as_str() {
                "ctrl" | "control" => mods |= KeyModifiers::CONTROL,
                "alt" | "meta" | "option" => mods |= KeyModifiers::ALT,
                "shift" => mods |= KeyModifiers::SHIFT,
                _ => return Err(format!("unknown modifier {head:?} in {s:?} (use ctrl, alt or shift)")),
            }
            rest = tail;
        }
        let code = match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "insert" | "ins" => KeyCode::Insert,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "page_up" | "pgup" => KeyCode::PageUp,
            "pagedown" | "page_down" | "pgdn" => KeyCode::PageDown,
            "space" => KeyCode::Char(' '),
            "plus" => KeyCode::Char('+'),
            "minus" => KeyCode::Char('-'),
            lower => {
                if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    if (1..=24).contains(&n) {
                        KeyCode::F(n)
                    } else {
                        return Err(format!("no such function key {rest:?}"));
                    }
                } else {
                    let mut chars = rest.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => {
                            let c = if mods.contains(KeyModifiers::SHIFT) && c.is_ascii_alphabetic() {
                                c.to_ascii_uppercase()
                            } else {
                                c
                            };
                            KeyCode::Char(c)
                        }
                        _ => return Err(format!("unknown key {rest:?} in {s:?}")),
                    }
                }
            }
        };
        Ok(KeyChord::new(code, mods))
    }
}

impl fmt::Display for KeyChord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl+")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt+")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift+")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift+tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::Insert => f.write_str("insert"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pageup"),
            KeyCode::PageDown => f.write_str("pagedown"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Resolved bindings: per context, key to command, plus each command's keys in file order.
#[derive(Debug, Clone, Default)]
pub struct Keymap {
    /// The keymap's name.
    pub name: String,
    by_key: HashMap<(Context, KeyChord), Command>,
    keys: HashMap<Command, Vec<KeyChord>>,
}

/// A keymap plus the problems found while loading it (shown in the app).
#[derive(Debug, Clone)]
pub struct LoadedKeymap {
    /// What is in effect.
    pub keymap: Keymap,
    /// Files that could not be used, with path, line and cause.
    pub problems: Vec<String>,
}

/// One file's bindings: (command, keys, line) in file order.
type Layer = Vec<(Command, Vec<KeyChord>, usize)>;

impl Keymap {
    /// The command bound to `key` for a pane context, falling back to `navigate`, then `global`.
    pub fn resolve(&self, ctx: Context, key: KeyChord) -> Option<Command> {
        [ctx, Context::Navigate, Context::Global].into_iter().find_map(|c| self.by_key.get(&(c, key)).copied())
    }

    /// The command bound to `key` in exactly `ctx`.
    pub fn lookup(&self, ctx: Context, key: KeyChord) -> Option<Command> {
        self.by_key.get(&(ctx, key)).copied()
    }

    /// The keys bound to `cmd`, in the order the files list them.
    pub fn keys(&self, cmd: Command) -> &[KeyChord] {
        self.keys.get(&cmd).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The first key of `cmd` for hints ("?" for help), or `None` when unbound.
    pub fn hint(&self, cmd: Command) -> Option<String> {
        self.keys(cmd).first().map(|k| k.to_string())
    }

    /// The first key of `cmd` that works in the mode: with `field` (a text field has focus; its
    /// multi-line flag) the keys the field takes for editing, and printable keys, are skipped.
    pub fn hint_for(&self, cmd: Command, field: Option<bool>) -> Option<String> {
        self.keys(cmd).iter().find(|k| field.is_none_or(|multi| !k.is_text_key(multi))).map(|k| k.to_string())
    }

    /// Keys of the contexts that a focused text field takes for editing before the keymap:
    /// (key, command) pairs, for the help overlay's list of clashes.
    pub fn clashes(
        &self,
        contexts: &[Context],
        multi_line: bool,
        used: impl Fn(Command) -> bool,
    ) -> Vec<(KeyChord, Command)> {
        let mut out: Vec<(KeyChord, Command)> = Vec::new();
        for c in Command::ALL.iter().filter(|c| contexts.contains(&c.context()) && used(**c)) {
            for k in self.keys(*c) {
                if k.is_text_key(multi_line) && !out.iter().any(|(o, _)| o == k) {
                    out.push((*k, *c));
                }
            }
        }
        out
    }

    /// The help overlay's content: for each context, (keys, description) rows for the bound
    /// commands `used` keeps (a pane's help leaves out the moves it has no use for).
    pub fn help(
        &self,
        contexts: &[Context],
        used: impl Fn(Command) -> bool,
    ) -> Vec<(Context, Vec<(String, &'static str)>)> {
        contexts
            .iter()
            .map(|&ctx| {
                let rows = Command::ALL
                    .iter()
                    .filter(|c| c.context() == ctx && !self.keys(**c).is_empty() && used(**c))
                    .map(|&c| {
                        let keys: Vec<String> = self.keys(c).iter().map(|k| k.to_string()).collect();
                        (keys.join(", "), c.description())
                    })
                    .collect();
                (ctx, rows)
            })
            .filter(|(_, rows): &(Context, Vec<_>)| !rows.is_empty())
            .collect()
    }

    /// Builds a keymap from layers, later layers replacing a command's keys; every key bound
    /// twice in one context is an error (all of them, each with its line), the key kept by the
    /// command met first.
    fn build(name: &str, layers: &[(&Source<'_>, Layer)]) -> (Keymap, Vec<DataError>) {
        // Effective keys per command and where they were set.
        let mut effective: HashMap<Command, (Vec<KeyChord>, usize, usize)> = HashMap::new();
        let mut order: Vec<Command> = Vec::new();
        for (li, (_, layer)) in layers.iter().enumerate() {
            for (cmd, keys, line) in layer {
                if !order.contains(cmd) {
                    order.push(*cmd);
                }
                effective.insert(*cmd, (keys.clone(), li, *line));
            }
        }
        let mut km = Keymap { name: name.to_string(), ..Default::default() };
        let mut seen: HashMap<(Context, KeyChord), (Command, usize, usize)> = HashMap::new();
        let mut errors = Vec::new();
        for cmd in order {
            let Some((keys, li, line)) = effective.get(&cmd) else { continue };
            for key in keys {
                if let Some((other, oli, oline)) = seen.get(&(cmd.context(), *key)) {
                    // Blame the layer laid on top (the user's file rather than the shipped one).
                    let (src, at) = if li >= oli { (layers[*li].0, *line) } else { (layers[*oli].0, *oline) };
                    errors.push(DataError {
                        more: Vec::new(),
                        path: src.path.clone(),
                        line: at,
                        message: format!(
                            "key `{key}` is bound twice in [{}]: to `{}` and to `{}`",
                            cmd.context().name(),
                            other.name(),
                            cmd.name()
                        ),
                    });
                    continue;
                }
                seen.insert((cmd.context(), *key), (cmd, *li, *line));
                km.by_key.insert((cmd.context(), *key), cmd);
            }
            km.keys.insert(cmd, keys.clone());
        }
        (km, errors)
    }

    /// Parses one keymap file into a layer of the lines that are right, plus every problem in
    /// it (so duplicates among the good lines can be said in the same pass).
    fn parse_layer(src: &Source<'_>) -> (Layer, Vec<DataError>) {
        let doc = match src.parse() {
            Ok(doc) => doc,
            Err(e) => return (Layer::new(), vec![e]),
        };
        let mut layer = Layer::new();
        let mut errors = Vec::new();
        for (ctx_key, ctx_val) in doc.get_ref().iter() {
            let Some(ctx) = Context::from_name(ctx_key.get_ref()) else {
                let known: Vec<&str> = Context::ALL.iter().map(|c| c.name()).collect();
                errors.push(src.error(
                    ctx_key.span(),
                    format!("unknown context [{}] (known: {})", ctx_key.get_ref(), known.join(", ")),
                ));
                continue;
            };
            let table = match src.table(ctx_key, ctx_val) {
                Ok(t) => t,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            for (action, keys_val) in table.iter() {
                match Self::parse_binding(src, ctx, action, keys_val) {
                    Ok(keys) => layer.push((keys.0, keys.1, src.line_of(action.span().start))),
                    Err(e) => errors.push(e),
                }
            }
        }
        (layer, errors)
    }

    /// One `action = ["key", ...]` line of context `ctx`.
    fn parse_binding<'a>(
        src: &Source<'a>,
        ctx: Context,
        action: &toml::Spanned<toml::de::DeString<'a>>,
        keys_val: &toml::Spanned<toml::de::DeValue<'a>>,
    ) -> Result<(Command, Vec<KeyChord>), DataError> {
        let cmd = Command::lookup(ctx, action.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = Command::ALL.iter().filter(|c| c.context() == ctx).map(|c| c.name()).collect();
            src.error(
                action.span(),
                format!("unknown action `{}` in [{}] (known: {})", action.get_ref(), ctx.name(), known.join(", ")),
            )
        })?;
        let arr = keys_val.get_ref().as_array().ok_or_else(|| {
            src.error(
                keys_val.span(),
                format!("`{}` must be a list of keys like [\"ctrl+c\", \"q\"]", action.get_ref()),
            )
        })?;
        let mut keys = Vec::new();
        for k in arr.iter() {
            let text = k
                .get_ref()
                .as_str()
                .ok_or_else(|| src.error(k.span(), format!("keys of `{}` must be strings", action.get_ref())))?;
            let chord = KeyChord::parse(text).map_err(|e| src.error(k.span(), e))?;
            // `ctrl+c` quits from anywhere, whatever else is wrong: bound to another action it
            // stopped quitting where that action's table is tried first.
            if chord == KeyChord::new(KeyCode::Char('c'), KeyModifiers::CONTROL) && cmd != Command::Quit {
                return Err(src.error(
                    k.span(),
                    format!("`ctrl+c` always quits docdex, from anywhere: bind `{}` to another key", action.get_ref()),
                ));
            }
            if !keys.contains(&chord) {
                keys.push(chord);
            }
        }
        Ok((cmd, keys))
    }

    /// The shipped keymap `name` (laid over `default`), if it exists.
    pub fn embedded(name: &str) -> Option<Result<Keymap, DataError>> {
        let text = KEYMAPS.shipped_text(name)?;
        Some(Self::from_texts(name, &[(KEYMAPS.embedded_path(name), text)]))
    }

    /// Builds from the shipped default plus the given (path, text) files laid over it in order.
    pub fn from_texts(name: &str, files: &[(String, &str)]) -> Result<Keymap, DataError> {
        let base_src = Source::new("<embedded keymaps/default.toml>", default_text());
        let mut sources = vec![base_src];
        for (path, text) in files {
            if path.ends_with("keymaps/default.toml>") {
                continue;
            }
            sources.push(Source::new(path.clone(), text));
        }
        let mut layers = Vec::new();
        let mut errors = Vec::new();
        for s in &sources {
            let (layer, errs) = Self::parse_layer(s);
            errors.extend(errs);
            layers.push((s, layer));
        }
        let (keymap, dups) = Self::build(name, &layers);
        errors.extend(dups);
        // Said in file order, one file's problems together (`DataError::all` keeps one path).
        errors.sort_by_key(|e| (sources.iter().position(|s| s.path == e.path), e.line));
        match DataError::all(errors) {
            Some(e) => Err(e),
            None => Ok(keymap),
        }
    }

    /// Loads keymap `name`: shipped data, then `<user_dir>/<name>.toml` laid over it.
    /// Never fails: problems are returned and the shipped keymap stays in effect.
    pub fn load(name: &str, user_dir: &Path) -> LoadedKeymap {
        let (keymap, problems) = load_layered(&KEYMAPS, name, user_dir, Self::from_texts, Keymap::default);
        LoadedKeymap { keymap, problems }
    }
}

fn default_text() -> &'static str {
    EMBEDDED[0].1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chord(s: &str) -> KeyChord {
        KeyChord::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn chords_parse_and_normalise() {
        assert_eq!(chord("ctrl+c"), KeyChord::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(chord("shift+tab"), KeyChord::new(KeyCode::BackTab, KeyModifiers::NONE));
        assert_eq!(chord("shift+g"), chord("G"));
        assert_eq!(chord("alt+1").mods, KeyModifiers::ALT);
        assert_eq!(chord("f5").code, KeyCode::F(5));
        assert_eq!(chord("+").code, KeyCode::Char('+'));
        assert_eq!(chord("ctrl++").code, KeyCode::Char('+'));
        assert_eq!(chord("space").code, KeyCode::Char(' '));
        assert!(KeyChord::parse("hyper+x").is_err());
        assert!(KeyChord::parse("enterr").is_err());
        // A shifted character event from the terminal matches the plain character binding.
        let ev = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(KeyChord::from_event(&ev), chord("G"));
        assert_eq!(chord("ctrl+c").to_string(), "ctrl+c");
        assert_eq!(chord("shift+tab").to_string(), "shift+tab");
    }

    #[test]
    fn shipped_keymaps_load_and_resolve() {
        for (name, _) in EMBEDDED {
            let km = Keymap::embedded(name).unwrap_or_else(|| panic!("{name}")).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(km.resolve(Context::Search, chord("ctrl+c")), Some(Command::Quit), "{name}");
            assert!(!km.keys(Command::Help).is_empty(), "{name} binds help");
        }
        let vim = Keymap::embedded("vim").and_then(Result::ok).unwrap_or_default();
        assert_eq!(vim.resolve(Context::Repos, chord("j")), Some(Command::Down));
        assert_eq!(vim.resolve(Context::Repos, chord("down")), Some(Command::Down), "vim keeps the arrows");
    }

    #[test]
    fn unknown_action_is_an_error_with_its_line() {
        let err = Keymap::from_texts("x", &[("u.toml".into(), "[search]\n\nfly = [\"f\"]\n")]).err();
        let err = err.unwrap_or_else(|| panic!("unknown action accepted"));
        assert_eq!((err.path.as_str(), err.line), ("u.toml", 3));
        assert!(err.message.contains("unknown action `fly` in [search]"), "{}", err.message);
    }

    #[test]
    fn duplicate_keys_in_one_context_are_an_error() {
        let text = "[repos]\nadd_repo = [\"x\"]\nreindex = [\"x\"]\n";
        let err = Keymap::from_texts("x", &[("u.toml".into(), text)]).err().unwrap_or_else(|| panic!("dup accepted"));
        assert!(err.message.contains("key `x` is bound twice in [repos]"), "{}", err.message);
        assert_eq!(err.path, "u.toml");
        // The same key in two contexts is fine.
        let ok = "[repos]\nadd_repo = [\"x\"]\n[impact]\nrecenter = [\"x\"]\n";
        assert!(Keymap::from_texts("x", &[("u.toml".into(), ok)]).is_ok());
    }

    #[test]
    fn user_layer_replaces_and_unbinds() {
        let text = "[global]\nquit = [\"ctrl+q\"]\nhelp = []\n";
        let km = Keymap::from_texts("mine", &[("u.toml".into(), text)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(km.resolve(Context::Global, chord("ctrl+q")), Some(Command::Quit));
        assert_eq!(km.resolve(Context::Global, chord("q")), None, "q no longer quits");
        assert!(km.keys(Command::Help).is_empty());
        assert_eq!(km.resolve(Context::Global, chord("tab")), Some(Command::NextPane), "the rest stays");
    }

    #[test]
    fn bad_user_file_falls_back_with_a_problem() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("default.toml"), "[global]\nquit = [\"hyper+q\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let loaded = Keymap::load("default", dir.path());
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        assert!(loaded.problems[0].contains("default.toml:2: unknown modifier"), "{}", loaded.problems[0]);
        assert_eq!(loaded.keymap.resolve(Context::Global, chord("q")), Some(Command::Quit));
        let missing = Keymap::load("emacs", dir.path());
        assert!(missing.problems[0].contains("no keymap named \"emacs\""), "{:?}", missing.problems);
    }

    #[test]
    fn every_problem_of_a_file_is_said_at_once() {
        let text = "[global]\nquit = [\"ctrl+q\"]\nfly = [\"f\"]\nhelp = [\"hyper+h\"]\n[nowhere]\nx = []\n";
        let e = Keymap::from_texts("mine", &[("u.toml".into(), text)]).expect_err("refused");
        let said = e.to_string();
        assert!(said.starts_with("u.toml:3: unknown action `fly`"), "{said}");
        assert!(
            said.contains("; line 4: unknown modifier") && said.contains("; line 5: unknown context [nowhere]"),
            "{said}"
        );
    }

    #[test]
    fn help_is_generated_from_bindings() {
        let km = Keymap::embedded("default").and_then(Result::ok).unwrap_or_default();
        let help = km.help(&[Context::Global], |_| true);
        let rows = &help[0].1;
        assert!(rows.iter().any(|(k, d)| k.contains("ctrl+c") && d.starts_with("Quit docdex")), "{rows:?}");
    }
}
