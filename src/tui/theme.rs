//! Themes as data: `themes/*.toml` name semantic slots (`[ui] border`,
//! `[graph] cycle`, `[syntax] keyword`, ...) and give each a style over ANSI
//! colour names, `#rrggbb` or `[palette]` aliases. The shipped `dark` theme is
//! the base every other theme is laid over, so a user file only lists what it
//! changes. A bad file names its path, line and cause, and the app goes on
//! with the shipped theme. `NO_COLOR` strips colours but keeps bold, underline
//! and reverse video, so selections stay visible.

use super::datafile::{load_layered, DataError, DataKind, Source};
use ratatui::style::{Color, Modifier, Style};
use std::collections::HashMap;
use std::path::Path;
use toml::de::DeValue;

/// The shipped themes, embedded in the binary.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

/// Themes as data files (for [`load_layered`]).
const THEMES: DataKind = DataKind { noun: "theme", dir: "themes", shipped: EMBEDDED };

macro_rules! slots {
    ($( $variant:ident => $section:literal . $key:literal; )*) => {
        /// A semantic style slot. Panes ask for slots, never for colours.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum Slot { $($variant,)* }

        impl Slot {
            /// Every slot.
            pub const ALL: &'static [Slot] = &[$(Slot::$variant),*];

            /// `(section, key)` as written in theme files.
            pub fn key(self) -> (&'static str, &'static str) {
                match self { $(Slot::$variant => ($section, $key),)* }
            }
        }
    };
}

slots! {
    Text => "ui"."text";
    Muted => "ui"."muted";
    Accent => "ui"."accent";
    Border => "ui"."border";
    BorderFocused => "ui"."border_focused";
    Title => "ui"."title";
    TitleFocused => "ui"."title_focused";
    Tab => "ui"."tab";
    TabActive => "ui"."tab_active";
    Selection => "ui"."selection";
    SelectionUnfocused => "ui"."selection_unfocused";
    StatusBar => "ui"."status_bar";
    StatusKey => "ui"."status_key";
    ModeNormal => "ui"."mode_normal";
    ModeInsert => "ui"."mode_insert";
    Ok => "ui"."ok";
    Warning => "ui"."warning";
    Error => "ui"."error";
    ProgressFilled => "ui"."progress_filled";
    ProgressEmpty => "ui"."progress_empty";
    Input => "ui"."input";
    Placeholder => "ui"."placeholder";
    HelpKey => "ui"."help_key";
    HelpSection => "ui"."help_section";
    SearchPath => "search"."path";
    SearchLineNumber => "search"."line_number";
    SearchMatch => "search"."match";
    SearchLang => "search"."lang";
    SearchScore => "search"."score";
    SearchSnippet => "search"."snippet";
    SearchStale => "search"."stale";
    SearchFilter => "search"."filter";
    PreviewLineNumber => "preview"."line_number";
    PreviewHitLine => "preview"."hit_line";
    PreviewGutter => "preview"."gutter";
    SyntaxKeyword => "syntax"."keyword";
    SyntaxString => "syntax"."string";
    SyntaxComment => "syntax"."comment";
    SyntaxFunction => "syntax"."function";
    SyntaxType => "syntax"."type";
    SyntaxNumber => "syntax"."number";
    SyntaxConstant => "syntax"."constant";
    SyntaxOperator => "syntax"."operator";
    SyntaxPunctuation => "syntax"."punctuation";
    SyntaxMacro => "syntax"."macro";
    SyntaxAttribute => "syntax"."attribute";
    MdHeading => "markdown"."heading";
    MdListMarker => "markdown"."list_marker";
    MdCode => "markdown"."code";
    MdEmphasis => "markdown"."emphasis";
    MdStrong => "markdown"."strong";
    MdQuote => "markdown"."quote";
    MdCitation => "markdown"."citation";
    MdCitationSelected => "markdown"."citation_selected";
    ChatUser => "chat"."user";
    ChatAssistant => "chat"."assistant";
    ChatNotice => "chat"."notice";
    TraceTier => "trace"."tier";
    TraceGatePass => "trace"."gate_pass";
    TraceGateFail => "trace"."gate_fail";
    TraceThreshold => "trace"."threshold";
    TraceBarFilled => "trace"."bar_filled";
    TraceBarEmpty => "trace"."bar_empty";
    TraceBarOver => "trace"."bar_over";
    TraceDropped => "trace"."dropped";
    DagNode => "dag"."node";
    DagNodeSelected => "dag"."node_selected";
    DagEdge => "dag"."edge";
    DagKind => "dag"."kind";
    GraphNode => "graph"."node";
    GraphCenter => "graph"."center";
    GraphSelected => "graph"."selected";
    GraphEdge => "graph"."edge";
    GraphEdgeHighlight => "graph"."edge_highlight";
    GraphCycle => "graph"."cycle";
    GraphUnresolved => "graph"."unresolved";
    GraphExternal => "graph"."external";
    GraphConfidence => "graph"."confidence";
    GraphRisk => "graph"."risk";
}

/// Resolved styles for every slot.
#[derive(Debug, Clone)]
pub struct Theme {
    /// The theme's name.
    pub name: String,
    /// True when `NO_COLOR` stripped the colours.
    pub no_color: bool,
    styles: HashMap<Slot, Style>,
}

/// A theme plus the problems found while loading it.
#[derive(Debug, Clone)]
pub struct LoadedTheme {
    /// What is in effect.
    pub theme: Theme,
    /// Files that could not be used, with path, line and cause.
    pub problems: Vec<String>,
}

impl Theme {
    /// The style of a slot.
    pub fn style(&self, slot: Slot) -> Style {
        self.styles.get(&slot).copied().unwrap_or_default()
    }

    /// The shipped theme `name` (laid over `dark`), with colours unless `no_color`.
    pub fn embedded(name: &str, no_color: bool) -> Option<Result<Theme, DataError>> {
        let text = THEMES.shipped_text(name)?;
        Some(Self::from_texts(name, &[(THEMES.embedded_path(name), text)], no_color))
    }

    /// Builds from the shipped dark theme plus (path, text) files laid over it in order. Palette
    /// aliases resolve after all layers, so a theme that only changes `[palette] accent` recolours
    /// every slot that uses the accent.
    pub fn from_texts(name: &str, files: &[(String, &str)], no_color: bool) -> Result<Theme, DataError> {
        let base = Source::new("<embedded themes/dark.toml>", EMBEDDED[0].1);
        let mut specs: HashMap<Slot, RawStyle> = HashMap::new();
        let mut palette: HashMap<String, Color> = HashMap::new();
        apply_file(&base, &mut palette, &mut specs)?;
        for (path, text) in files {
            if path.ends_with("themes/dark.toml>") {
                continue;
            }
            apply_file(&Source::new(path.clone(), text), &mut palette, &mut specs)?;
        }
        let styles = specs
            .into_iter()
            .map(|(slot, raw)| {
                let style = raw.resolve(&palette);
                (slot, if no_color { strip_color(style) } else { style })
            })
            .collect();
        Ok(Theme { name: name.to_string(), no_color, styles })
    }

    /// Loads theme `name`: shipped data, then `<user_dir>/<name>.toml` laid over it.
    /// Never fails: problems are returned and the shipped theme stays in effect.
    pub fn load(name: &str, user_dir: &Path, no_color: bool) -> LoadedTheme {
        let (theme, problems) =
            load_layered(&THEMES, name, user_dir, |name, files| Self::from_texts(name, files, no_color), Theme::plain);
        LoadedTheme { theme, problems }
    }

    /// A theme with no styles at all (last resort).
    pub fn plain() -> Theme {
        Theme { name: "plain".into(), no_color: true, styles: HashMap::new() }
    }
}

/// A colour as written: a fixed colour or a palette alias resolved once all layers are read.
#[derive(Debug, Clone, PartialEq)]
enum RawColor {
    Fixed(Color),
    Alias(String),
}

/// A style as written, before palette aliases resolve.
#[derive(Debug, Clone, Default, PartialEq)]
struct RawStyle {
    fg: Option<RawColor>,
    bg: Option<RawColor>,
    add: Modifier,
    sub: Modifier,
}

impl RawStyle {
    fn resolve(&self, palette: &HashMap<String, Color>) -> Style {
        let color = |c: &RawColor| match c {
            RawColor::Fixed(c) => *c,
            RawColor::Alias(a) => palette.get(a).copied().unwrap_or(Color::Reset),
        };
        let mut style = Style::default().add_modifier(self.add).remove_modifier(self.sub);
        if let Some(c) = &self.fg {
            style = style.fg(color(c));
        }
        if let Some(c) = &self.bg {
            style = style.bg(color(c));
        }
        style
    }
}

/// True when the `NO_COLOR` convention asks for no colour (set and not empty).
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Drops colours; a style that relied on a background (selection, status bar) gets reverse video.
fn strip_color(style: Style) -> Style {
    let had_bg = matches!(style.bg, Some(c) if c != Color::Reset);
    let out = Style { add_modifier: style.add_modifier, ..Style::default() };
    if had_bg {
        out.add_modifier(Modifier::REVERSED)
    } else {
        out
    }
}

/// Lays one theme file over `palette` and `specs`; every problem in it is reported together.
fn apply_file(
    src: &Source<'_>,
    palette: &mut HashMap<String, Color>,
    specs: &mut HashMap<Slot, RawStyle>,
) -> Result<(), DataError> {
    let doc = src.parse()?;
    let mut errors = Vec::new();
    // The palette first, wherever it appears in the file.
    if let Some((key, value)) = doc.get_ref().iter().find(|(k, _)| k.get_ref() == "palette") {
        match src.table(key, value) {
            Ok(table) => {
                for (name, v) in table.iter() {
                    let color = v
                        .get_ref()
                        .as_str()
                        .ok_or_else(|| {
                            src.error(v.span(), format!("palette colour `{}` must be a string", name.get_ref()))
                        })
                        .and_then(|text| parse_color(text, palette).map_err(|e| src.error(v.span(), e)));
                    match color {
                        Ok(c) => {
                            palette.insert(name.get_ref().to_string(), c);
                        }
                        Err(e) => errors.push(e),
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    for (section, value) in doc.get_ref().iter() {
        if section.get_ref() == "palette" {
            continue;
        }
        if !Slot::ALL.iter().any(|s| s.key().0 == section.get_ref()) {
            let mut known: Vec<&str> = Slot::ALL.iter().map(|s| s.key().0).collect();
            known.dedup();
            errors.push(src.error(
                section.span(),
                format!("unknown section [{}] (known: palette, {})", section.get_ref(), known.join(", ")),
            ));
            continue;
        }
        let table = match src.table(section, value) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        for (key, spec) in table.iter() {
            let slot =
                Slot::ALL.iter().copied().find(|s| s.key() == (section.get_ref(), key.get_ref())).ok_or_else(|| {
                    let known: Vec<&str> =
                        Slot::ALL.iter().filter(|s| s.key().0 == section.get_ref()).map(|s| s.key().1).collect();
                    src.error(
                        key.span(),
                        format!(
                            "unknown slot `{}` in [{}] (known: {})",
                            key.get_ref(),
                            section.get_ref(),
                            known.join(", ")
                        ),
                    )
                });
            match slot.and_then(|slot| parse_style(src, spec, palette).map(|style| (slot, style))) {
                Ok((slot, style)) => {
                    specs.insert(slot, style);
                }
                Err(e) => errors.push(e),
            }
        }
    }
    match DataError::all(errors) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A colour reference: a palette alias known so far, or a fixed colour.
fn parse_color_ref(text: &str, palette: &HashMap<String, Color>) -> Result<RawColor, String> {
    if palette.contains_key(text) {
        return Ok(RawColor::Alias(text.to_string()));
    }
    parse_color(text, palette).map(RawColor::Fixed)
}

fn parse_style(
    src: &Source<'_>,
    spec: &toml::Spanned<DeValue<'_>>,
    palette: &HashMap<String, Color>,
) -> Result<RawStyle, DataError> {
    let mut style = RawStyle::default();
    match spec.get_ref() {
        DeValue::String(s) => {
            style.fg = Some(parse_color_ref(s, palette).map_err(|e| src.error(spec.span(), e))?);
        }
        DeValue::Table(t) => {
            for (k, v) in t.iter() {
                let err = |m: String| src.error(v.span(), m);
                match k.get_ref().as_ref() {
                    "fg" | "bg" => {
                        let text = v
                            .get_ref()
                            .as_str()
                            .ok_or_else(|| err(format!("`{}` must be a colour string", k.get_ref())))?;
                        let c = parse_color_ref(text, palette).map_err(err)?;
                        if k.get_ref() == "fg" {
                            style.fg = Some(c);
                        } else {
                            style.bg = Some(c);
                        }
                    }
                    name @ ("bold" | "italic" | "underline" | "dim" | "reversed") => {
                        let on = match v.get_ref() {
                            DeValue::Boolean(b) => *b,
                            _ => return Err(err(format!("`{name}` must be true or false"))),
                        };
                        let m = match name {
                            "bold" => Modifier::BOLD,
                            "italic" => Modifier::ITALIC,
                            "underline" => Modifier::UNDERLINED,
                            "dim" => Modifier::DIM,
                            _ => Modifier::REVERSED,
                        };
                        if on {
                            style.add |= m;
                        } else {
                            style.sub |= m;
                        }
                    }
                    other => {
                        return Err(src.error(
                            k.span(),
                            format!(
                                "unknown style field `{other}` (known: fg, bg, bold, italic, underline, dim, reversed)"
                            ),
                        ))
                    }
                }
            }
        }
        other => {
            return Err(src.error(
                spec.span(),
                format!(
                    "a style must be a colour string or a table like {{ fg = \"red\", bold = true }}, found a {}",
                    other.type_str()
                ),
            ))
        }
    }
    Ok(style)
}

/// Parses an ANSI colour name, `#rrggbb`, a 0..255 palette index, or a `[palette]` alias.
pub fn parse_color(text: &str, palette: &HashMap<String, Color>) -> Result<Color, String> {
    if let Some(c) = palette.get(text) {
        return Ok(*c);
    }
    let lower = text.to_ascii_lowercase().replace(['_', '-', ' '], "");
    let named = match lower.as_str() {
        "reset" | "default" | "none" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "darkgray" | "darkgrey" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        _ => {
            if let Some(hex) = lower.strip_prefix('#') {
                if hex.len() == 6 {
                    if let Ok(v) = u32::from_str_radix(hex, 16) {
                        return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
                    }
                }
                return Err(format!("bad colour {text:?}: use #rrggbb"));
            }
            if let Ok(i) = lower.parse::<u8>() {
                return Ok(Color::Indexed(i));
            }
            return Err(format!(
                "unknown colour {text:?} (use an ANSI name like \"red\" or \"darkgray\", #rrggbb, 0-255, or a [palette] name)"
            ));
        }
    };
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_themes_define_every_slot() {
        let src = Source::new("dark", EMBEDDED[0].1);
        let mut palette = HashMap::new();
        let mut specs = HashMap::new();
        apply_file(&src, &mut palette, &mut specs).unwrap_or_else(|e| panic!("{e}"));
        let missing: Vec<_> = Slot::ALL.iter().filter(|s| !specs.contains_key(s)).map(|s| s.key()).collect();
        assert!(missing.is_empty(), "the base theme lacks {missing:?}");
        for (name, _) in EMBEDDED {
            let t = Theme::embedded(name, false).unwrap_or_else(|| panic!("{name}")).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.styles.len(), Slot::ALL.len(), "{name}");
        }
    }

    #[test]
    fn palette_changes_recolour_slots_that_use_the_alias() {
        let t = Theme::from_texts("x", &[("u.toml".into(), "[palette]\naccent = \"blue\"\n")], false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.style(Slot::BorderFocused).fg, Some(Color::Blue), "dark's border_focused uses the accent alias");
        let light = Theme::embedded("light", false).and_then(Result::ok).unwrap_or_else(Theme::plain);
        assert_eq!(light.style(Slot::GraphCycle).fg, Some(Color::Rgb(0xc0, 0, 0)), "light's danger colour");
    }

    #[test]
    fn user_layer_overrides_fields_and_aliases() {
        let user = "[palette]\ndanger = \"#ff0000\"\n[graph]\ncycle = { fg = \"danger\" }\n[ui]\nborder = \"blue\"\n";
        let t = Theme::from_texts("mine", &[("u.toml".into(), user)], false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.style(Slot::GraphCycle).fg, Some(Color::Rgb(255, 0, 0)));
        assert_eq!(t.style(Slot::Border).fg, Some(Color::Blue));
        let dark = Theme::embedded("dark", false).and_then(Result::ok).unwrap_or_else(Theme::plain);
        assert_eq!(t.style(Slot::SearchPath), dark.style(Slot::SearchPath), "unlisted slots keep the base");
    }

    #[test]
    fn bad_files_name_path_line_and_cause() {
        let cases = [
            ("[ui]\nborder = { fg = \"purpleish\" }\n", 2, "unknown colour \"purpleish\""),
            ("[ui]\n\nbordr = \"red\"\n", 3, "unknown slot `bordr` in [ui]"),
            ("[widgets]\nx = \"red\"\n", 1, "unknown section [widgets]"),
            ("[ui]\nborder = { fg = \"red\", blink = true }\n", 2, "unknown style field `blink`"),
            ("[ui]\nborder = 3\n", 2, "a style must be"),
        ];
        for (text, line, cause) in cases {
            let err =
                Theme::from_texts("x", &[("t.toml".into(), text)], false).err().unwrap_or_else(|| panic!("{text}"));
            assert_eq!((err.path.as_str(), err.line), ("t.toml", line), "{err}");
            assert!(err.message.contains(cause), "{err}");
        }
        // All of a file's mistakes at once, each with its line.
        let text = "[ui]\nborder = { fg = \"purpleish\" }\nbordr = \"red\"\n[widgets]\nx = 1\n";
        let err = Theme::from_texts("x", &[("t.toml".into(), text)], false).err().unwrap_or_else(|| panic!("{text}"));
        let said = err.to_string();
        assert!(said.starts_with("t.toml:2: unknown colour"), "{said}");
        assert!(
            said.contains("; line 3: unknown slot `bordr`") && said.contains("; line 4: unknown section [widgets]"),
            "{said}"
        );
    }

    #[test]
    fn no_color_keeps_modifiers_and_reverses_backgrounds() {
        let t = Theme::embedded("dark", true).and_then(Result::ok).unwrap_or_else(Theme::plain);
        for slot in Slot::ALL {
            let s = t.style(*slot);
            assert!(s.fg.is_none() && s.bg.is_none(), "{slot:?} kept a colour");
        }
        assert!(t.style(Slot::Selection).add_modifier.contains(Modifier::REVERSED));
        assert!(t.style(Slot::GraphCycle).add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn load_falls_back_on_a_bad_user_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("light.toml"), "[ui]\nborder = \"nope\"\n").unwrap_or_else(|e| panic!("{e}"));
        let loaded = Theme::load("light", dir.path(), false);
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.problems[0].contains("light.toml:2: unknown colour"), "{}", loaded.problems[0]);
        let shipped = Theme::embedded("light", false).and_then(Result::ok).unwrap_or_else(Theme::plain);
        assert_eq!(loaded.theme.style(Slot::Border), shipped.style(Slot::Border));
    }
}
