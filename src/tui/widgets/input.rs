//! A one-line text field (the search query, prompts): insert, delete, move,
//! word and line kills, with a cursor that scrolls horizontally so the caret
//! is always visible.

use super::width;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// A single line of editable text. The cursor is a char index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineInput {
    text: String,
    cursor: usize,
}

impl LineInput {
    /// A field holding `text`, cursor at the end.
    pub fn with_text(text: &str) -> Self {
        LineInput { text: text.to_string(), cursor: text.chars().count() }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Cursor position in chars.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text, cursor at the end.
    pub fn set(&mut self, text: &str) {
        *self = Self::with_text(text);
    }

    fn byte_at(&self, char_idx: usize) -> usize {
        self.text.char_indices().nth(char_idx).map_or(self.text.len(), |(b, _)| b)
    }

    /// Inserts text at the cursor (pastes: newlines become spaces).
    pub fn insert_str(&mut self, s: &str) {
        for c in s.chars() {
            self.insert(if c == '\n' || c == '\r' || c == '\t' { ' ' } else { c });
        }
    }

    fn insert(&mut self, c: char) {
        if c.is_control() {
            return;
        }
        let at = self.byte_at(self.cursor);
        self.text.insert(at, c);
        self.cursor += 1;
    }

    /// Applies an editing key; returns `true` when it was an editing key (text or cursor changed
    /// or could have). Keys it does not know are left for commands.
    pub fn handle_key(&mut self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char(c) if !ctrl && !alt => self.insert(c),
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.text.chars().count(),
            KeyCode::Char('w') if ctrl => self.delete_word(),
            KeyCode::Backspace if alt || ctrl => self.delete_word(),
            KeyCode::Char('u') if ctrl => {
                let at = self.byte_at(self.cursor);
                self.text.replace_range(..at, "");
                self.cursor = 0;
            }
            KeyCode::Char('k') if ctrl => {
                let at = self.byte_at(self.cursor);
                self.text.truncate(at);
            }
            KeyCode::Backspace => {
                if self.cursor > 0 {
                    self.cursor -= 1;
                    let at = self.byte_at(self.cursor);
                    self.text.remove(at);
                }
            }
            KeyCode::Delete => {
                if self.cursor < self.text.chars().count() {
                    let at = self.byte_at(self.cursor);
                    self.text.remove(at);
                }
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.text.chars().count()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.text.chars().count(),
            _ => return false,
        }
        true
    }

    fn delete_word(&mut self) {
        let chars: Vec<char> = self.text.chars().collect();
        let mut start = self.cursor;
        while start > 0 && chars[start - 1] == ' ' {
            start -= 1;
        }
        while start > 0 && chars[start - 1] != ' ' {
            start -= 1;
        }
        let (a, b) = (self.byte_at(start), self.byte_at(self.cursor));
        self.text.replace_range(a..b, "");
        self.cursor = start;
    }

    /// Draws the text in one row of `area`, scrolled so the cursor shows; returns the cursor cell.
    pub fn render(&self, area: Rect, buf: &mut Buffer, style: Style, placeholder: Option<(&str, Style)>) -> (u16, u16) {
        if area.width == 0 || area.height == 0 {
            return (area.x, area.y);
        }
        if self.text.is_empty() {
            if let Some((p, pstyle)) = placeholder {
                buf.set_stringn(area.x, area.y, p, area.width as usize, pstyle);
            }
            return (area.x, area.y);
        }
        let before: String = self.text.chars().take(self.cursor).collect();
        let avail = area.width.saturating_sub(1) as usize;
        let cursor_w = width(&before);
        // Skip whole chars from the left until the cursor fits.
        let mut skip_w = 0;
        let mut skip_chars = 0;
        for c in self.text.chars() {
            if cursor_w - skip_w <= avail {
                break;
            }
            skip_w += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            skip_chars += 1;
        }
        let visible: String = self.text.chars().skip(skip_chars).collect();
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

    fn typed(s: &str) -> LineInput {
        let mut i = LineInput::default();
        for c in s.chars() {
            i.handle_key(&key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        i
    }

    #[test]
    fn typing_and_editing() {
        let mut i = typed("session expiry");
        assert_eq!(i.text(), "session expiry");
        i.handle_key(&key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(i.text(), "session ");
        i.handle_key(&key(KeyCode::Backspace, KeyModifiers::NONE));
        i.handle_key(&key(KeyCode::Home, KeyModifiers::NONE));
        i.handle_key(&key(KeyCode::Char('x'), KeyModifiers::NONE));
        assert_eq!(i.text(), "xsession");
        i.handle_key(&key(KeyCode::Delete, KeyModifiers::NONE));
        assert_eq!(i.text(), "xession");
        i.handle_key(&key(KeyCode::Char('k'), KeyModifiers::CONTROL));
        assert_eq!(i.text(), "x");
        assert!(!i.handle_key(&key(KeyCode::Enter, KeyModifiers::NONE)));
        let mut u = typed("héllo wörld");
        u.handle_key(&key(KeyCode::Left, KeyModifiers::NONE));
        u.handle_key(&key(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(u.text(), "héllo wörd");
        u.insert_str("a\nb");
        assert_eq!(u.text(), "héllo wöra bd");
    }

    #[test]
    fn rendering_scrolls_to_the_cursor() {
        let i = typed("abcdefghijklmnop");
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 1));
        let (x, _) = i.render(Rect::new(0, 0, 6, 1), &mut buf, Style::default(), None);
        assert_eq!(x, 5);
        let row: String = (0..6).map(|c| buf[(c, 0)].symbol().to_string()).collect();
        assert_eq!(row, "lmnop ");
    }
}
