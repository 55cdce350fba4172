//! The one text editor of the workbench: every text field (the search query,
//! the chat message, the prompts) is a [`TextField`] over ratatui-textarea, in
//! single-line or multi-line mode, so they all share the same editing keys,
//! kill ring and undo. The editing keys are readline's (what shells, REPLs and
//! most terminal tools use); while a field has focus they come before any
//! keymap binding, and the help overlay lists the commands they shadow
//! ([`claims`] is the single list of them).

use super::width;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui_textarea::{CursorMove, TextArea};

/// The editing keys, for the help overlay: (keys, what they do).
pub const EDITING_KEYS: &[(&str, &str)] = &[
    ("ctrl+a, home / ctrl+e, end", "Start / end of the line"),
    ("ctrl+b, left / ctrl+f, right", "One character back / forward"),
    ("alt+b, ctrl+left / alt+f, ctrl+right", "One word back / forward"),
    ("ctrl+h, backspace / ctrl+d, delete", "Delete the character before / under the cursor"),
    ("ctrl+w, alt+backspace / alt+d", "Delete the word before / after the cursor"),
    ("ctrl+u / ctrl+k", "Delete to the start / end of the line"),
    ("ctrl+y", "Paste what the last delete removed"),
    ("ctrl+_ (ctrl+/, ctrl+7) / ctrl+r", "Undo / redo"),
];

/// What an editing key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Insert(char),
    Move(CursorMove),
    DeleteBack,
    DeleteForward,
    DeleteWordBack,
    DeleteWordForward,
    DeleteToStart,
    DeleteToEnd,
    Yank,
    Undo,
    Redo,
}

/// The edit a key means in a text field, if it is an editing key.
fn edit_of(key: &KeyEvent, multi_line: bool) -> Option<Edit> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let plain = !ctrl && !alt;
    Some(match key.code {
        KeyCode::Char(c) if plain => Edit::Insert(c),
        KeyCode::Char('a') if ctrl && !alt => Edit::Move(CursorMove::Head),
        KeyCode::Char('e') if ctrl && !alt => Edit::Move(CursorMove::End),
        KeyCode::Char('b') if ctrl && !alt => Edit::Move(CursorMove::Back),
        KeyCode::Char('f') if ctrl && !alt => Edit::Move(CursorMove::Forward),
        KeyCode::Char('b') if alt && !ctrl => Edit::Move(CursorMove::WordBack),
        KeyCode::Char('f') if alt && !ctrl => Edit::Move(CursorMove::WordForward),
        KeyCode::Char('h') if ctrl && !alt => Edit::DeleteBack,
        KeyCode::Char('d') if ctrl && !alt => Edit::DeleteForward,
        KeyCode::Char('w') if ctrl && !alt => Edit::DeleteWordBack,
        KeyCode::Char('d') if alt && !ctrl => Edit::DeleteWordForward,
        KeyCode::Char('u') if ctrl && !alt => Edit::DeleteToStart,
        KeyCode::Char('k') if ctrl && !alt => Edit::DeleteToEnd,
        KeyCode::Char('y') if ctrl && !alt => Edit::Yank,
        // ctrl+_ and ctrl+/ arrive as ctrl+7 (0x1f) on most terminals.
        KeyCode::Char('_' | '/' | '7') if ctrl && !alt => Edit::Undo,
        KeyCode::Char('r') if ctrl && !alt => Edit::Redo,
        KeyCode::Backspace if plain => Edit::DeleteBack,
        KeyCode::Backspace => Edit::DeleteWordBack,
        KeyCode::Delete if ctrl => Edit::DeleteWordForward,
        KeyCode::Delete if plain => Edit::DeleteForward,
        KeyCode::Left if ctrl && !alt => Edit::Move(CursorMove::WordBack),
        KeyCode::Right if ctrl && !alt => Edit::Move(CursorMove::WordForward),
        KeyCode::Left if plain => Edit::Move(CursorMove::Back),
        KeyCode::Right if plain => Edit::Move(CursorMove::Forward),
        KeyCode::Home => Edit::Move(CursorMove::Head),
        KeyCode::End => Edit::Move(CursorMove::End),
        KeyCode::Up if multi_line && plain => Edit::Move(CursorMove::Up),
        KeyCode::Down if multi_line && plain => Edit::Move(CursorMove::Down),
        _ => return None,
    })
}

/// True when a focused text field takes `key` as an editing key (before any keymap binding).
pub fn claims(key: &KeyEvent, multi_line: bool) -> bool {
    edit_of(key, multi_line).is_some()
}

/// An editable text, one line or several.
#[derive(Debug, Clone)]
pub struct TextField {
    area: TextArea<'static>,
    multi_line: bool,
}

impl Default for TextField {
    fn default() -> Self {
        TextField::single_line("")
    }
}

impl PartialEq for TextField {
    fn eq(&self, other: &Self) -> bool {
        self.multi_line == other.multi_line && self.area.lines() == other.area.lines()
    }
}

impl TextField {
    /// A one-line field holding `text`, cursor at the end.
    pub fn single_line(text: &str) -> Self {
        let mut f = TextField { area: TextArea::default(), multi_line: false };
        f.set(text);
        f
    }

    /// A multi-line field (the chat message) with a placeholder.
    pub fn multi_line(placeholder: &str) -> Self {
        let mut area = TextArea::default();
        area.set_placeholder_text(placeholder);
        // A long message wraps at words (a word wider than the box at characters) rather than
        // scrolling sideways out of sight.
        area.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        area.set_cursor_line_style(Style::default());
        TextField { area, multi_line: true }
    }

    /// Rows the text takes at `columns` columns, wrapped (at least one).
    pub fn wrapped_rows(&self, columns: usize) -> usize {
        let w = columns.max(1);
        self.area.lines().iter().map(|l| width(l).div_ceil(w).max(1)).sum::<usize>().max(1)
    }

    /// True for the multi-line kind.
    pub fn is_multi_line(&self) -> bool {
        self.multi_line
    }

    /// The first line (all of a single-line field).
    pub fn text(&self) -> &str {
        self.area.lines().first().map(String::as_str).unwrap_or("")
    }

    /// The whole text, lines joined with `\n`.
    pub fn joined(&self) -> String {
        self.area.lines().join("\n")
    }

    /// The lines.
    pub fn lines(&self) -> &[String] {
        self.area.lines()
    }

    /// True when there is no text.
    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// Cursor column in chars (on its line).
    pub fn cursor(&self) -> usize {
        self.area.cursor().1
    }

    /// Replaces the text (one undo step), cursor at the end.
    pub fn set(&mut self, text: &str) {
        self.area.select_all();
        self.area.cut();
        self.area.set_yank_text(String::new());
        self.insert_str(text);
    }

    /// Selects the whole text, so the next typed character replaces it (a prefilled prompt:
    /// typing starts over, a movement key keeps the text to edit).
    pub fn select_all(&mut self) {
        if !self.area.is_empty() {
            self.area.select_all();
        }
    }

    /// True while the text is selected (typing replaces it).
    pub fn is_selected(&self) -> bool {
        self.area.is_selecting()
    }

    /// Empties the field (one undo step).
    pub fn clear(&mut self) {
        self.set("");
    }

    /// Inserts text at the cursor; a one-line field turns line breaks and tabs into spaces.
    pub fn insert_str(&mut self, s: &str) {
        if self.multi_line {
            self.area.insert_str(s.replace("\r\n", "\n").replace('\r', "\n"));
        } else {
            let flat: String = s
                .chars()
                .map(|c| if matches!(c, '\n' | '\r' | '\t') { ' ' } else { c })
                .filter(|c| !c.is_control())
                .collect();
            self.area.insert_str(flat);
        }
    }

    /// Breaks the line at the cursor (multi-line fields only).
    pub fn insert_newline(&mut self) {
        if self.multi_line {
            self.area.insert_newline();
        }
    }

    /// Applies an editing key; returns false when `key` is not one (it is left for commands).
    pub fn edit(&mut self, key: &KeyEvent) -> bool {
        let Some(edit) = edit_of(key, self.multi_line) else { return false };
        let a = &mut self.area;
        match edit {
            Edit::Insert(c) => {
                if !c.is_control() {
                    a.insert_char(c);
                }
            }
            Edit::Move(m) => {
                // A move ends the selection (and does not extend it).
                a.cancel_selection();
                a.move_cursor(m)
            }
            Edit::DeleteBack => {
                a.delete_char();
            }
            Edit::DeleteForward => {
                a.delete_next_char();
            }
            Edit::DeleteWordBack => {
                a.delete_word();
            }
            Edit::DeleteWordForward => {
                a.delete_next_word();
            }
            Edit::DeleteToStart => {
                a.delete_line_by_head();
            }
            Edit::DeleteToEnd => {
                a.delete_line_by_end();
            }
            Edit::Yank => {
                a.paste();
            }
            Edit::Undo => {
                a.undo();
            }
            Edit::Redo => {
                a.redo();
            }
        }
        true
    }

    /// The text area, for drawing a multi-line field with its own cursor.
    pub fn widget(&self) -> &TextArea<'static> {
        &self.area
    }

    /// Draws a one-line field in one row of `area`, scrolled so the cursor shows; returns the
    /// cursor cell (for the terminal cursor).
    pub fn render_line(
        &self,
        area: Rect,
        buf: &mut Buffer,
        style: Style,
        placeholder: Option<(&str, Style)>,
    ) -> (u16, u16) {
        if area.width == 0 || area.height == 0 {
            return (area.x, area.y);
        }
        let text = self.text();
        if text.is_empty() {
            if let Some((p, pstyle)) = placeholder {
                buf.set_stringn(area.x, area.y, p, area.width as usize, pstyle);
            }
            return (area.x, area.y);
        }
        let before: String = text.chars().take(self.cursor()).collect();
        let avail = area.width.saturating_sub(1) as usize;
        let cursor_w = width(&before);
        // Skip whole chars from the left until the cursor fits.
        let mut skip_w = 0;
        let mut skip_chars = 0;
        for c in text.chars() {
            if cursor_w - skip_w <= avail {
                break;
            }
            skip_w += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            skip_chars += 1;
        }
        let visible: String = text.chars().skip(skip_chars).collect();
        // Selected text (prefilled, replaced by typing) shows in reverse video.
        let style = if self.is_selected() { style.add_modifier(ratatui::style::Modifier::REVERSED) } else { style };
        buf.set_stringn(area.x, area.y, &visible, area.width as usize, style);
        (area.x + (cursor_w - skip_w) as u16, area.y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    fn ctrl(c: char) -> KeyEvent {
        key(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn typed(s: &str) -> TextField {
        let mut i = TextField::default();
        for c in s.chars() {
            i.edit(&key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        i
    }

    #[test]
    fn readline_editing_keys() {
        let mut i = typed("session expiry");
        assert_eq!(i.text(), "session expiry");
        i.edit(&ctrl('w'));
        assert_eq!(i.text(), "session ");
        i.edit(&key(KeyCode::Backspace, KeyModifiers::NONE));
        i.edit(&ctrl('a'));
        i.edit(&key(KeyCode::Char('x'), KeyModifiers::NONE));
        assert_eq!(i.text(), "xsession");
        i.edit(&ctrl('d'));
        assert_eq!(i.text(), "xession");
        i.edit(&ctrl('k'));
        assert_eq!(i.text(), "x");
        i.edit(&ctrl('e'));
        i.edit(&key(KeyCode::Char('y'), KeyModifiers::NONE));
        i.edit(&ctrl('u'));
        assert_eq!(i.text(), "", "ctrl+u deletes to the start of the line");
        i.edit(&ctrl('y'));
        assert_eq!(i.text(), "xy", "ctrl+y pastes it back");
        i.edit(&ctrl('7'));
        assert_eq!(i.text(), "", "ctrl+_ undoes the paste");
        i.edit(&ctrl('r'));
        assert_eq!(i.text(), "xy", "ctrl+r redoes it");
        assert!(!i.edit(&key(KeyCode::Enter, KeyModifiers::NONE)), "enter is left for commands");
        assert!(!i.edit(&key(KeyCode::Up, KeyModifiers::NONE)), "up is left for commands in one line");
        assert!(!i.edit(&ctrl('t')), "ctrl+t is not an editing key");
        let mut u = typed("héllo wörld");
        u.edit(&key(KeyCode::Left, KeyModifiers::NONE));
        u.edit(&key(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(u.text(), "héllo wörd");
        u.insert_str("a\nb");
        assert_eq!(u.text(), "héllo wöra bd", "a one-line field flattens pasted lines");
        u.edit(&ctrl('e'));
        u.edit(&key(KeyCode::Char('b'), KeyModifiers::ALT));
        u.edit(&key(KeyCode::Char('d'), KeyModifiers::ALT));
        assert_eq!(u.text(), "héllo wöra ", "alt+b then alt+d deletes the last word");
    }

    #[test]
    fn multi_line_keeps_lines_and_claims_up_down() {
        let mut m = TextField::multi_line("ask");
        m.insert_str("one\ntwo");
        assert_eq!(m.joined(), "one\ntwo");
        assert!(claims(&key(KeyCode::Up, KeyModifiers::NONE), true));
        assert!(!claims(&key(KeyCode::Up, KeyModifiers::NONE), false));
        m.edit(&key(KeyCode::Up, KeyModifiers::NONE));
        m.edit(&key(KeyCode::Char('!'), KeyModifiers::NONE));
        assert_eq!(m.joined(), "one!\ntwo");
    }

    #[test]
    fn rendering_scrolls_to_the_cursor() {
        let i = typed("abcdefghijklmnop");
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 1));
        let (x, _) = i.render_line(Rect::new(0, 0, 6, 1), &mut buf, Style::default(), None);
        assert_eq!(x, 5);
        let row: String = (0..6).map(|c| buf[(c, 0)].symbol().to_string()).collect();
        assert_eq!(row, "lmnop ");
    }
}
