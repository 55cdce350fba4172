//! Reading a sync manifest for `profile import` in two streaming passes over its text, so an
//! import holds the text (at most [`MAX_MANIFEST_BYTES`]) and the rows it keeps, never a tree
//! of the whole file: parsed whole into `serde_json::Value`s (twice), a manifest of 60,000
//! rows (11 MB) took 202 MB and 1.6 s before the caps refused it.
//!
//! The first pass ([`outline`]) checks the file's shape, format and version, and keeps the
//! agents, the removals and only the ids of the preferences (to know which are given twice).
//! The second ([`each_preference`]) hands each preference over as it is read, and the caller
//! may stop the read: profile memory stops it as soon as the rows one agent surely gains take
//! it past `[memory.profile] max_preferences_per_agent`.

use super::types::{RejectedRow, SyncAgent, SyncAgentRemoval, SyncPreference, SyncTombstone, PROFILE_SCHEMA_VERSION};
use super::MANIFEST_FORMAT;
use crate::error::{Error, Result};
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::path::Path;

/// Largest sync manifest read, in bytes.
pub(super) const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;

/// What a manifest looks like, for the messages that refuse a file of another shape.
const MANIFEST_SHAPE: &str = "a JSON object {\"format\": \"docdex.profile_sync\", \"version\": 1, \"agents\": [...], \"preferences\": [...], \"tombstones\": [...]}";

/// serde's own result, beside the crate's [`Result`].
type De<T, E> = std::result::Result<T, E>;

/// A value where an array (or, for the whole file, an object) is wanted: `Err` names the kind
/// of value given instead (`a string`), for the message that refuses it.
type Listed<T> = std::result::Result<T, &'static str>;

/// What the first pass keeps of a manifest.
#[derive(Debug, Default)]
pub(super) struct Outline {
    /// The agents of the right shape.
    pub agents: Vec<SyncAgent>,
    /// The preference removals of the right shape.
    pub tombstones: Vec<SyncTombstone>,
    /// The agent removals of the right shape; `None` in a manifest of a docdex from before
    /// agents synced on their own.
    pub removed_agents: Option<Vec<SyncAgentRemoval>>,
    /// How many rows give each preference id (as a UUID; an id that is none is rejected by the
    /// second pass's checks).
    pub ids: HashMap<u128, u32>,
    /// Agent rows of another shape (reported before the preferences').
    pub rejected_agents: Vec<RejectedRow>,
    /// Removal rows of another shape (reported after the preferences').
    pub rejected_removals: Vec<RejectedRow>,
}

/// A preference row as [`each_preference`] hands it over: of a preference's shape, or rejected.
pub(super) type PreferenceRow = std::result::Result<SyncPreference, RejectedRow>;

/// The first pass: refuses a file that is not JSON, not of a manifest's shape, or of another
/// format or a newer version (named by its version whatever its rows hold), and answers the
/// rows other than the preferences, each row checked on its own (one of another shape is
/// rejected alone).
pub(super) fn outline(path: &Path, text: &str) -> Result<Outline> {
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = Shaped(Top).deserialize(&mut de).and_then(|raw| de.end().map(|()| raw));
    let raw = raw.map_err(|e| not_json(path, &e))?;
    let raw = raw.map_err(|kind| refuse(path, format!("the file holds {kind}, not an object")))?;
    checked_outline(path, raw)
}

/// The second pass: hands each preference of `text` (checked by [`outline`]) to `each` as it is
/// read; an error from `each` stops the read and is answered.
pub(super) fn each_preference(
    path: &Path,
    text: &str,
    each: &mut dyn FnMut(PreferenceRow) -> Result<()>,
) -> Result<()> {
    let mut stopped = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let read = Shaped(PreferencesOnly { each, stopped: &mut stopped }).deserialize(&mut de).and_then(|_| de.end());
    match (stopped, read) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(not_json(path, &e)),
        (None, Ok(())) => Ok(()),
    }
}

fn not_json(path: &Path, e: &serde_json::Error) -> Error {
    Error::BadRequest(format!(
        "{} is not a profile manifest: it is not JSON ({e}); `docdex profile export` writes one",
        path.display()
    ))
}

fn refuse(path: &Path, what: String) -> Error {
    Error::BadRequest(format!(
        "{} is not a profile manifest: {what}; a manifest is {MANIFEST_SHAPE}, as `docdex profile export` writes it",
        path.display()
    ))
}

/// The top-level fields as the first pass read them, before their kinds are checked.
#[derive(Default)]
struct Raw {
    format: Option<Value>,
    version: Option<Value>,
    agents: Option<Listed<Vec<SyncAgent>>>,
    preferences: Option<Listed<HashMap<u128, u32>>>,
    tombstones: Option<Listed<Vec<SyncTombstone>>>,
    removed_agents: Option<Listed<Vec<SyncAgentRemoval>>>,
    /// A field given twice (JSON allows it; which one counts would be a guess).
    twice: Option<&'static str>,
    rejected_agents: Vec<RejectedRow>,
    rejected_removals: Vec<RejectedRow>,
}

/// Refuses a field missing or of another kind, naming what the file holds and what a manifest
/// is (serde's "invalid type: sequence, expected struct Head" named neither), then a file of
/// another format or a newer version.
fn checked_outline(path: &Path, raw: Raw) -> Result<Outline> {
    let missing = |name: &str| refuse(path, format!("it has no \"{name}\" field"));
    let kind = |name: &str, given: &str, want: &str| refuse(path, format!("its \"{name}\" is {given}, not {want}"));
    if let Some(name) = raw.twice {
        return Err(refuse(path, format!("it gives \"{name}\" twice")));
    }
    let format = raw.format.ok_or_else(|| missing("format"))?;
    let format = format.as_str().ok_or_else(|| kind("format", json_word(&format), "a string"))?.to_string();
    let version = raw.version.ok_or_else(|| missing("version"))?;
    let version = version.as_u64().ok_or_else(|| kind("version", json_word(&version), "a whole number"))?;
    let ids = raw.preferences.ok_or_else(|| missing("preferences"))?;
    let ids = ids.map_err(|given| kind("preferences", given, "an array"))?;
    let agents = raw.agents.unwrap_or(Ok(Vec::new())).map_err(|given| kind("agents", given, "an array"))?;
    let tombstones = raw.tombstones.unwrap_or(Ok(Vec::new())).map_err(|given| kind("tombstones", given, "an array"))?;
    let removed_agents = match raw.removed_agents {
        None | Some(Err("null")) => None,
        Some(Err(given)) => return Err(kind("removed_agents", given, "an array")),
        Some(Ok(r)) => Some(r),
    };
    if format != MANIFEST_FORMAT || version > u64::from(PROFILE_SCHEMA_VERSION) {
        return Err(Error::BadRequest(format!(
            "{} is a {format:?} version {version} file; this docdex reads {MANIFEST_FORMAT} up to version {PROFILE_SCHEMA_VERSION}",
            path.display()
        )));
    }
    Ok(Outline {
        agents,
        tombstones,
        removed_agents,
        ids,
        rejected_agents: raw.rejected_agents,
        rejected_removals: raw.rejected_removals,
    })
}

/// A value's JSON kind, as a message names it (`an array`, `a string`).
fn json_word(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// What to do with the array or the object a [`Shaped`] value holds; a value of another kind
/// (and, by default, an array or an object too) is skipped and named.
trait Want<'de>: Sized {
    type Out;

    fn seq<A: SeqAccess<'de>>(self, mut a: A) -> De<Listed<Self::Out>, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err("an array"))
    }

    fn map<A: MapAccess<'de>>(self, mut a: A) -> De<Listed<Self::Out>, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err("an object"))
    }
}

/// A value read by its [`Want`], whatever kind it turns out to be.
struct Shaped<W>(W);

impl<'de, W: Want<'de>> DeserializeSeed<'de> for Shaped<W> {
    type Value = Listed<W::Out>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> De<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, W: Want<'de>> Visitor<'de> for Shaped<W> {
    type Value = Listed<W::Out>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> De<Self::Value, E> {
        Ok(Err("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> De<Self::Value, E> {
        Ok(Err("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> De<Self::Value, E> {
        Ok(Err("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> De<Self::Value, E> {
        Ok(Err("a number"))
    }
    fn visit_str<E>(self, _: &str) -> De<Self::Value, E> {
        Ok(Err("a string"))
    }
    fn visit_unit<E>(self) -> De<Self::Value, E> {
        Ok(Err("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> De<Self::Value, A::Error> {
        self.0.seq(a)
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> De<Self::Value, A::Error> {
        self.0.map(a)
    }
}

/// The whole file, in the first pass.
struct Top;

impl<'de> Want<'de> for Top {
    type Out = Raw;

    fn map<A: MapAccess<'de>>(self, mut a: A) -> De<Listed<Raw>, A::Error> {
        const FIELDS: [&str; 6] = ["format", "version", "agents", "preferences", "tombstones", "removed_agents"];
        let mut raw = Raw::default();
        let mut seen = HashSet::new();
        while let Some(key) = a.next_key::<String>()? {
            let Some(name) = FIELDS.iter().copied().find(|f| *f == key) else {
                a.next_value::<IgnoredAny>()?;
                continue;
            };
            if !seen.insert(name) {
                raw.twice.get_or_insert(name);
                a.next_value::<IgnoredAny>()?;
                continue;
            }
            match name {
                "format" => raw.format = Some(a.next_value()?),
                "version" => raw.version = Some(a.next_value()?),
                "agents" => {
                    raw.agents = Some(a.next_value_seed(Shaped(Rows::new("an agent", &mut raw.rejected_agents)))?)
                }
                "preferences" => raw.preferences = Some(a.next_value_seed(Shaped(Ids))?),
                "tombstones" => {
                    raw.tombstones =
                        Some(a.next_value_seed(Shaped(Rows::new("a removal", &mut raw.rejected_removals)))?)
                }
                _ => {
                    let rows = Rows::new("an agent removal", &mut raw.rejected_removals);
                    raw.removed_agents = Some(a.next_value_seed(Shaped(rows))?)
                }
            }
        }
        Ok(Ok(raw))
    }
}

/// An array of rows of `T`, each read on its own: kept when it has `T`'s shape, else rejected
/// with serde's reason (a row a newer or hand-edited file spells otherwise is rejected alone).
struct Rows<'r, T> {
    what: &'static str,
    rejected: &'r mut Vec<RejectedRow>,
    row: PhantomData<T>,
}

impl<'r, T> Rows<'r, T> {
    fn new(what: &'static str, rejected: &'r mut Vec<RejectedRow>) -> Self {
        Rows { what, rejected, row: PhantomData }
    }
}

impl<'de, T: DeserializeOwned> Want<'de> for Rows<'_, T> {
    type Out = Vec<T>;

    fn seq<A: SeqAccess<'de>>(self, mut a: A) -> De<Listed<Vec<T>>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = a.next_element::<Value>()? {
            match typed_row(v, self.what) {
                Ok(row) => out.push(row),
                Err(r) => self.rejected.push(r),
            }
        }
        Ok(Ok(out))
    }
}

/// `v` as a row of `T`, or its rejection naming its id and serde's reason.
fn typed_row<T: DeserializeOwned>(v: Value, what: &str) -> std::result::Result<T, RejectedRow> {
    let id = v.get("id").and_then(Value::as_str).unwrap_or("(no id)").to_string();
    serde_json::from_value(v).map_err(|e| RejectedRow { id, reason: format!("not {what} row: {e}") })
}

/// The preferences in the first pass: only how many rows give each id.
struct Ids;

impl<'de> Want<'de> for Ids {
    type Out = HashMap<u128, u32>;

    fn seq<A: SeqAccess<'de>>(self, mut a: A) -> De<Listed<Self::Out>, A::Error> {
        let mut ids: HashMap<u128, u32> = HashMap::new();
        while let Some(v) = a.next_element::<Value>()? {
            if let Some(id) = v.get("id").and_then(Value::as_str).and_then(|s| uuid::Uuid::parse_str(s).ok()) {
                let n = ids.entry(id.as_u128()).or_default();
                *n = n.saturating_add(1);
            }
        }
        Ok(Ok(ids))
    }
}

/// The whole file, in the second pass: every field but the preferences skipped.
struct PreferencesOnly<'f> {
    each: &'f mut dyn FnMut(PreferenceRow) -> Result<()>,
    stopped: &'f mut Option<Error>,
}

impl<'de> Want<'de> for PreferencesOnly<'_> {
    type Out = ();

    fn map<A: MapAccess<'de>>(self, mut a: A) -> De<Listed<()>, A::Error> {
        let (each, stopped) = (self.each, self.stopped);
        while let Some(key) = a.next_key::<String>()? {
            if key == "preferences" {
                // Its kind (an array) was checked by the first pass.
                let _ = a.next_value_seed(Shaped(Preferences { each: &mut *each, stopped: &mut *stopped }))?;
            } else {
                a.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Ok(()))
    }
}

/// The preferences in the second pass, each handed over as it is read.
struct Preferences<'f> {
    each: &'f mut dyn FnMut(PreferenceRow) -> Result<()>,
    stopped: &'f mut Option<Error>,
}

impl<'de> Want<'de> for Preferences<'_> {
    type Out = ();

    fn seq<A: SeqAccess<'de>>(self, mut a: A) -> De<Listed<()>, A::Error> {
        while let Some(v) = a.next_element::<Value>()? {
            if let Err(e) = (self.each)(typed_row(v, "a preference")) {
                *self.stopped = Some(e);
                return Err(serde::de::Error::custom("the import stopped reading"));
            }
        }
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline_of(text: &str) -> Result<Outline> {
        outline(Path::new("m.json"), text)
    }

    #[test]
    fn the_first_pass_keeps_ids_and_rows_and_names_a_wrong_shape() {
        let id = "5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
        let text = format!(
            r#"{{"format": "docdex.profile_sync", "version": 1, "agents": [{{"id": "a"}}, {{"id": 7}}],
               "preferences": [{{"id": "{id}"}}, {{"id": "{}"}}, {{"id": "nope"}}, 3],
               "tombstones": [], "removed_agents": null, "extra": {{"x": [1]}}}}"#,
            id.to_uppercase()
        );
        let o = outline_of(&text).unwrap();
        let key = uuid::Uuid::parse_str(id).unwrap().as_u128();
        assert_eq!((o.ids.len(), o.ids.get(&key)), (1, Some(&2)), "one id, spelt twice");
        assert_eq!((o.agents.len(), o.rejected_agents.len(), o.removed_agents), (1, 1, None));
        for (text, said) in [
            ("[1]", "the file holds an array, not an object"),
            (r#"{"format": "docdex.profile_sync", "version": 1, "preferences": 5}"#, "is a number, not an array"),
            (r#"{"format": "docdex.profile_sync", "version": 1, "preferences": [], "preferences": []}"#, "twice"),
            (r#"{"format": "docdex.profile_sync", "version": 2, "preferences": "x"}"#, "is a string, not an array"),
            (r#"{"format": "docdex.profile_sync", "version": 9, "preferences": []}"#, "version 9 file"),
            (r#"{"format": "docdex.profile_sync", "version": 1, "preferences": []} x"#, "not JSON"),
        ] {
            let e = outline_of(text).unwrap_err().to_string();
            assert!(e.contains(said), "{text}: {e}");
        }
    }

    #[test]
    fn the_second_pass_hands_rows_over_and_stops_when_told() {
        let text = r#"{"preferences": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "format": 1}"#;
        let mut seen = Vec::new();
        let err = each_preference(Path::new("m.json"), text, &mut |row| {
            seen.push(row.map(|p| p.id).unwrap_or_else(|r| r.id));
            if seen.len() == 2 {
                return Err(Error::BadRequest("enough".into()));
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!((err.to_string().contains("enough"), seen), (true, vec!["a".to_string(), "b".to_string()]));
    }
}
