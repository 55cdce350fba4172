//! Jupyter notebooks (`.ipynb`): the source of each cell, in order, a marker line before each
//! (`# %% [markdown]`, `# %%` for code, `# %% [raw]`, the percent format editors and jupytext
//! read), so hits and snippets show the cells' text rather than the file's JSON. Outputs
//! (results, base64 images) and metadata are left out: they are what the code made, not what
//! someone wrote.
//!
//! The JSON is read as it is parsed, keeping only the cells' kinds and sources: outputs and
//! metadata are skipped by the parser without being built (serde's `IgnoredAny`, which walks
//! nested values with a heap stack, not recursion). A whole `serde_json::Value` tree cost many
//! times the file (tour25 F4: indexing a 42 MB notebook of images and JSON outputs peaked at
//! 258 MB; now 85 MB, against 53 MB for a one-cell notebook: about the file's own bytes).

use super::{tidy_lines, Extracted, Refusal};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Extracts the cells of a notebook (nbformat 4's `cells`, or nbformat 3's
/// `worksheets[].cells`, whose code is under `input`). Bytes that are not JSON, or JSON with no
/// cells, are a corrupt notebook.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let cells = Lenient(Top)
        .deserialize(&mut de)
        .and_then(|cells| de.end().map(|()| cells))
        .map_err(|e| Refusal::Corrupt(format!("not valid JSON: {e}")))?;
    let text = cells.ok_or_else(|| Refusal::Corrupt("no cells list: not a Jupyter notebook".into()))?;
    let mut out = Extracted::default();
    tidy_lines(text.lines(), &mut out.text);
    Ok(out)
}

/// What one level of a notebook is read as. A value of a type the level does not expect (a
/// number where cells should be, a cell that is not an object) is passed over, as the
/// `serde_json::Value` reading before did: [`Shape::other`] says what it counts as.
trait Shape: Sized {
    type Out;
    /// A value of an unexpected type (skipped by the parser).
    fn other(self) -> Self::Out;
    fn string(self, _s: &str) -> Self::Out {
        self.other()
    }
    fn list<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.other())
    }
    fn object<'de, A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(self.other())
    }
}

/// Reads any JSON value as the shape `S` expects, passing over what it does not.
struct Lenient<S>(S);

impl<'de, S: Shape> DeserializeSeed<'de> for Lenient<S> {
    type Value = S::Out;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Out, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Shape> Visitor<'de> for Lenient<S> {
    type Value = S::Out;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<S::Out, E> {
        Ok(self.0.other())
    }
    fn visit_i64<E>(self, _: i64) -> Result<S::Out, E> {
        Ok(self.0.other())
    }
    fn visit_u64<E>(self, _: u64) -> Result<S::Out, E> {
        Ok(self.0.other())
    }
    fn visit_f64<E>(self, _: f64) -> Result<S::Out, E> {
        Ok(self.0.other())
    }
    fn visit_unit<E>(self) -> Result<S::Out, E> {
        Ok(self.0.other())
    }
    fn visit_str<E>(self, s: &str) -> Result<S::Out, E> {
        Ok(self.0.string(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S::Out, A::Error> {
        self.0.list(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S::Out, A::Error> {
        self.0.object(map)
    }
}

/// An object key: the index of the name it is among `names`, `None` for any other.
struct Key(&'static [&'static str]);

impl Shape for Key {
    type Out = Option<usize>;
    fn other(self) -> Option<usize> {
        None
    }
    fn string(self, s: &str) -> Option<usize> {
        self.0.iter().position(|name| *name == s)
    }
}

/// Reads the next key of `map` as one of `names` (`Some(None)` for another key).
fn next_key<'de, A: MapAccess<'de>>(
    map: &mut A,
    names: &'static [&'static str],
) -> Result<Option<Option<usize>>, A::Error> {
    map.next_key_seed(Lenient(Key(names)))
}

/// The notebook: the text of its cells (`cells`, else every worksheet's), `None` when it has
/// no cells list. A key given twice counts as its last value, as in a parsed object.
struct Top;

impl Shape for Top {
    type Out = Option<String>;
    fn other(self) -> Option<String> {
        None
    }
    fn object<'de, A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let (mut cells, mut sheets) = (None, None);
        while let Some(key) = next_key(&mut map, &["cells", "worksheets"])? {
            match key {
                Some(0) => cells = map.next_value_seed(Lenient(Cells))?,
                Some(_) => sheets = map.next_value_seed(Lenient(Worksheets))?,
                None => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(cells.or(sheets))
    }
}

/// nbformat 3's worksheets: their cells' text, in order; a worksheet without a cells list
/// adds none.
struct Worksheets;

impl Shape for Worksheets {
    type Out = Option<String>;
    fn other(self) -> Option<String> {
        None
    }
    fn list<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        let mut text = String::new();
        while let Some(sheet) = seq.next_element_seed(Lenient(Worksheet))? {
            text.push_str(&sheet.unwrap_or_default());
        }
        Ok(Some(text))
    }
}

/// One worksheet: the text of its `cells`.
struct Worksheet;

impl Shape for Worksheet {
    type Out = Option<String>;
    fn other(self) -> Option<String> {
        None
    }
    fn object<'de, A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut cells = None;
        while let Some(key) = next_key(&mut map, &["cells"])? {
            match key {
                Some(_) => cells = map.next_value_seed(Lenient(Cells))?,
                None => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(cells)
    }
}

/// A cells list: each cell with a source, its marker line then its source, a blank line
/// after; `None` when the value is not a list.
struct Cells;

impl Shape for Cells {
    type Out = Option<String>;
    fn other(self) -> Option<String> {
        None
    }
    fn list<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        let mut text = String::new();
        while let Some(cell) = seq.next_element_seed(Lenient(Cell))? {
            let Some((marker, source)) = cell else { continue };
            if source.trim().is_empty() {
                continue;
            }
            text.push_str(marker);
            text.push_str(source.trim_end());
            text.push_str("\n\n");
        }
        Ok(Some(text))
    }
}

/// One cell: its marker line (by `cell_type`, code when it has none) and its `source` (or
/// nbformat 3's `input` when it has no `source`). Outputs and metadata are skipped unbuilt.
struct Cell;

impl Shape for Cell {
    type Out = Option<(&'static str, String)>;
    fn other(self) -> Self::Out {
        None
    }
    fn object<'de, A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let (mut marker, mut source, mut input) = (None, None, None);
        while let Some(key) = next_key(&mut map, &["cell_type", "source", "input"])? {
            match key {
                Some(0) => marker = Some(map.next_value_seed(Lenient(Marker))?),
                Some(1) => source = Some(map.next_value_seed(Lenient(Source))?),
                Some(_) => input = Some(map.next_value_seed(Lenient(Source))?),
                None => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(Some((marker.unwrap_or(CODE), source.or(input).unwrap_or_default())))
    }
}

const CODE: &str = "# %%\n";

/// A `cell_type`: the marker line before the cell's source; not a string reads as code.
struct Marker;

impl Shape for Marker {
    type Out = &'static str;
    fn other(self) -> &'static str {
        CODE
    }
    fn string(self, kind: &str) -> &'static str {
        match kind {
            "code" => CODE,
            "raw" => "# %% [raw]\n",
            _ => "# %% [markdown]\n",
        }
    }
}

/// A cell's source: a string, or a list of lines (each keeping its own `\n`) joined as
/// written, items that are not strings left out; anything else is no source.
struct Source;

impl Shape for Source {
    type Out = String;
    fn other(self) -> String {
        String::new()
    }
    fn string(self, s: &str) -> String {
        s.to_owned()
    }
    fn list<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
        let mut joined = String::new();
        while seq.next_element_seed(Lenient(Line(&mut joined)))?.is_some() {}
        Ok(joined)
    }
}

/// One line of a source list, appended to the source when it is a string.
struct Line<'a>(&'a mut String);

impl Shape for Line<'_> {
    type Out = ();
    fn other(self) {}
    fn string(self, s: &str) {
        self.0.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_in_order_without_outputs() {
        let nb = r##"{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
 {"cell_type": "markdown", "metadata": {}, "source": ["# Pangolins\n", "\n", "They eat ants."]},
 {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "weigh(pangolin)\nprint(1)",
  "outputs": [{"output_type": "display_data", "data": {"image/png": "iVBORw0KGgoAAAANSUhEUg", "text/plain": ["<Figure>"]}}]},
 {"cell_type": "code", "metadata": {}, "source": [], "outputs": []},
 {"cell_type": "raw", "metadata": {}, "source": "raw text"}]}"##;
        let text = extract(nb.as_bytes()).expect("a notebook").text;
        assert_eq!(
            text,
            "# %% [markdown]\n# Pangolins\n\nThey eat ants.\n\n# %%\nweigh(pangolin)\nprint(1)\n\n# %% [raw]\nraw text\n"
        );
    }

    #[test]
    fn nbformat_3_worksheets_are_read() {
        let nb =
            r#"{"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": ["x = 1\n", "y = 2"]}]}]}"#;
        assert_eq!(extract(nb.as_bytes()).expect("a notebook").text, "# %%\nx = 1\ny = 2\n");
    }

    #[test]
    fn what_is_not_a_cell_or_a_source_is_passed_over() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let nb = format!(
            r#"{{"metadata": {{"x": {deep}}}, "cells": [1, "two", null, [3],
 {{"cell_type": 7, "source": ["a = 1\n", 2, {{"b": 3}}, "c = 4"], "outputs": [{{"data": {deep}}}]}},
 {{"cell_type": "markdown", "source": 5}},
 {{"cell_type": "markdown", "source": null, "input": "not this"}},
 {{"cell_type": "raw", "input": "from input"}}]}}"#
        );
        assert_eq!(extract(nb.as_bytes()).expect("a notebook").text, "# %%\na = 1\nc = 4\n\n# %% [raw]\nfrom input\n");
        let nb =
            r#"{"cells": "no", "worksheets": [7, {"cells": {}}, {"cells": [{"source": "s"}]}], "cells": "still no"}"#;
        assert_eq!(extract(nb.as_bytes()).expect("worksheets").text, "# %%\ns\n");
        let nb = r#"{"cells": [{"source": "first"}], "cells": [{"source": "last"}]}"#;
        assert_eq!(extract(nb.as_bytes()).expect("last key").text, "# %%\nlast\n");
        let Err(Refusal::Corrupt(why)) = extract(b"[1, 2]") else { panic!("a list is no notebook") };
        assert!(why.contains("not a Jupyter notebook"), "{why}");
        let Err(Refusal::Corrupt(why)) = extract(b"{\"cells\": []} trailing") else { panic!("trailing bytes") };
        assert!(why.starts_with("not valid JSON: trailing characters"), "{why}");
        let Err(Refusal::Corrupt(why)) = extract(b"{\"cells\": [], \"outputs\": [{\"a\": tru}]}") else {
            panic!("invalid JSON in a skipped part")
        };
        assert!(why.starts_with("not valid JSON"), "{why}");
    }

    #[test]
    fn malformed_notebooks_are_refused_in_words() {
        let Err(Refusal::Corrupt(why)) = extract(b"{\"cells\": [") else { panic!("truncated JSON is corrupt") };
        assert!(why.starts_with("not valid JSON"), "{why}");
        let Err(Refusal::Corrupt(why)) = extract(b"{\"a\": 1}") else { panic!("JSON without cells is corrupt") };
        assert!(why.contains("not a Jupyter notebook"), "{why}");
    }
}
