//! Jupyter notebooks (`.ipynb`): the source of each cell, in order, a marker line before each
//! (`# %% [markdown]`, `# %%` for code, `# %% [raw]`, the percent format editors and jupytext
//! read), so hits and snippets show the cells' text rather than the file's JSON. Outputs
//! (results, base64 images) and metadata are left out: they are what the code made, not what
//! someone wrote.

use super::{tidy_lines, Extracted, Refusal};
use serde_json::Value;

/// Extracts the cells of a notebook (nbformat 4's `cells`, or nbformat 3's
/// `worksheets[].cells`, whose code is under `input`). Bytes that are not JSON, or JSON with no
/// cells, are a corrupt notebook.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    let nb: Value = serde_json::from_slice(bytes).map_err(|e| Refusal::Corrupt(format!("not valid JSON: {e}")))?;
    let cells = cells(&nb).ok_or_else(|| Refusal::Corrupt("no cells list: not a Jupyter notebook".into()))?;
    let mut text = String::new();
    for cell in cells {
        let kind = cell.get("cell_type").and_then(Value::as_str).unwrap_or("code");
        let source = cell.get("source").or_else(|| cell.get("input")).map(joined).unwrap_or_default();
        if source.trim().is_empty() {
            continue;
        }
        text.push_str(match kind {
            "code" => "# %%\n",
            "raw" => "# %% [raw]\n",
            _ => "# %% [markdown]\n",
        });
        text.push_str(source.trim_end());
        text.push_str("\n\n");
    }
    let mut out = Extracted::default();
    tidy_lines(text.lines(), &mut out.text);
    Ok(out)
}

/// The cells of nbformat 4 (`cells`) or 3 (every worksheet's `cells`); `None` when there are none.
fn cells(nb: &Value) -> Option<Vec<&Value>> {
    if let Some(cells) = nb.get("cells").and_then(Value::as_array) {
        return Some(cells.iter().collect());
    }
    let sheets = nb.get("worksheets")?.as_array()?;
    Some(sheets.iter().filter_map(|s| s.get("cells")?.as_array()).flatten().collect())
}

/// A cell's source: a string, or a list of lines (each keeping its own `\n`) joined as written.
fn joined(source: &Value) -> String {
    match source {
        Value::String(s) => s.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
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
    fn malformed_notebooks_are_refused_in_words() {
        let Err(Refusal::Corrupt(why)) = extract(b"{\"cells\": [") else { panic!("truncated JSON is corrupt") };
        assert!(why.starts_with("not valid JSON"), "{why}");
        let Err(Refusal::Corrupt(why)) = extract(b"{\"a\": 1}") else { panic!("JSON without cells is corrupt") };
        assert!(why.contains("not a Jupyter notebook"), "{why}");
    }
}
