//! What to tell a user whose model the server does not have. `ollama pull NAME` is true advice
//! only for a name some registry holds: Ollama's library, an ollama.com namespace, or a
//! registry the name spells out (`hf.co/org/repo:Q4_K_M`). A model built on this machine from
//! a Modelfile (`mymodel:latest`) is in no registry: pulling it fails with "file does not
//! exist", and the fix is `ollama create`, or another name among the installed ones.

use super::models::{catalog, lookup};
use crate::error::shell_word;

/// Installed models named in a missing model's advice (the rest: `docdex llm-list`).
const INSTALLED_SHOWN: usize = 5;

/// Where a model name says it comes from, as far as the name alone tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelOrigin {
    /// In docdex's catalog of Ollama library models: `ollama pull` fetches it.
    Library,
    /// Names a registry host (`hf.co/...`, `huggingface.co/...`, `registry.ollama.ai/...`) or
    /// an ollama.com namespace (`user/model`): `ollama pull` fetches it from there.
    Registry,
    /// A plain name docdex does not know: a model of Ollama's library docdex's catalog does
    /// not list, or one built locally from a Modelfile. The name cannot tell which.
    Unknown,
}

/// Where `name` comes from, by its spelling and the catalog (no network).
pub fn model_origin(name: &str) -> ModelOrigin {
    if name.contains('/') {
        return ModelOrigin::Registry;
    }
    match catalog() {
        Ok(cat) if lookup(&cat, name).is_some() => ModelOrigin::Library,
        _ => ModelOrigin::Unknown,
    }
}

/// What to do about `model` missing on a server of `provider` (`ollama` or `openai`), naming
/// a few of the `installed` models when the server listed them (`None`: it could not be asked).
/// Said after "model M is not available on URL; ".
pub fn missing_model_advice(provider: &str, model: &str, installed: Option<&[String]>) -> String {
    let choose = choose_installed(model, installed);
    if provider != "ollama" {
        // An OpenAI-compatible server serves what it was started with: nothing to pull.
        return format!("choose one it serves for the request's `model` or `[llm] default_model`{choose}");
    }
    let word = shell_word(model);
    match model_origin(model) {
        ModelOrigin::Library | ModelOrigin::Registry => format!(
            "run `docdex llm-setup --model {word} --yes` (or `ollama pull {word}`){}",
            if choose.is_empty() { ", or choose an installed one with `docdex llm-list`".into() } else { choose }
        ),
        ModelOrigin::Unknown => format!(
            "docdex does not know this name: if it is a model built from a Modelfile, create it with `ollama create {word} -f Modelfile`; if it is in Ollama's library (ollama.com/library), `ollama pull {word}` fetches it{}",
            if choose.is_empty() { "; or choose an installed model (`docdex llm-list`)".into() } else { choose }
        ),
    }
}

/// How to get `model` served by hand, for setup help shown before any server answered: true of
/// the provider (an OpenAI-compatible server serves what it was started with) and of the name
/// (`ollama pull` only fetches what a registry holds).
pub fn setup_by_hand(provider: &str, model: &str) -> String {
    if provider != "ollama" {
        return format!("start the server with a chat model and set `[llm] default_model` to its name (now `{model}`)");
    }
    let word = shell_word(model);
    match model_origin(model) {
        ModelOrigin::Library | ModelOrigin::Registry => format!("`ollama serve`, then `ollama pull {word}`"),
        ModelOrigin::Unknown => format!(
            "`ollama serve`, then `ollama create {word} -f Modelfile` for a model built from a Modelfile, or `ollama pull {word}` if Ollama's library has it"
        ),
    }
}

/// "; or choose an installed one: a, b (`docdex llm-list` lists all N)", the same model under
/// other tags first; empty when the list is unknown.
fn choose_installed(model: &str, installed: Option<&[String]>) -> String {
    let Some(list) = installed else { return String::new() };
    if list.is_empty() {
        return "; the server has no models installed yet".into();
    }
    let base = |m: &str| m.split(':').next().unwrap_or(m).to_string();
    let mut names: Vec<&String> = list.iter().collect();
    // Same base name first (`mymodel:v2` for `mymodel:latest`), then as the server listed them.
    names.sort_by_key(|n| base(n) != base(model));
    let shown: Vec<&str> = names.iter().take(INSTALLED_SHOWN).map(|n| n.as_str()).collect();
    let more = match list.len().saturating_sub(shown.len()) {
        0 => "`docdex llm-list` shows them".to_string(),
        n => format!("and {n} more: `docdex llm-list`"),
    };
    format!("; or choose an installed one: {} ({more})", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_by_hand_is_true_of_the_provider_and_the_name() {
        assert_eq!(setup_by_hand("ollama", "phi3.5:3.8b"), "`ollama serve`, then `ollama pull phi3.5:3.8b`");
        let local = setup_by_hand("ollama", "mymodel:latest");
        assert!(local.contains("ollama create mymodel:latest -f Modelfile"), "{local}");
        let openai = setup_by_hand("openai", "gpt-4o");
        assert!(!openai.contains("ollama") && openai.contains("`gpt-4o`"), "{openai}");
    }

    #[test]
    fn a_name_says_whether_a_registry_holds_it() {
        assert_eq!(model_origin("nomic-embed-text"), ModelOrigin::Library);
        assert_eq!(model_origin("llama3.2:1b"), ModelOrigin::Library);
        assert_eq!(model_origin("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"), ModelOrigin::Registry);
        assert_eq!(model_origin("someone/coder:7b"), ModelOrigin::Registry);
        assert_eq!(model_origin("mymodel:latest"), ModelOrigin::Unknown);
    }

    #[test]
    fn advice_is_true_of_the_name() {
        let none: Option<&[String]> = None;
        let pull = missing_model_advice("ollama", "hf.co/org/repo:Q4_K_M", none);
        assert!(pull.starts_with("run `docdex llm-setup --model hf.co/org/repo:Q4_K_M --yes`"), "{pull}");
        let local = missing_model_advice("ollama", "mymodel:latest", none);
        assert!(local.contains("`ollama create mymodel:latest -f Modelfile`"), "{local}");
        assert!(!local.starts_with("run"), "pulling is not the advice: {local}");
        let installed: Vec<String> = ["a:1", "b:1", "mymodel:v2", "c:1", "d:1", "e:1", "f:1"].map(String::from).into();
        let local = missing_model_advice("ollama", "mymodel:latest", Some(&installed));
        assert!(
            local.ends_with("choose an installed one: mymodel:v2, a:1, b:1, c:1, d:1 (and 2 more: `docdex llm-list`)"),
            "{local}"
        );
        let other = missing_model_advice("openai", "gpt-4o", Some(&installed[..1]));
        assert!(!other.contains("ollama") && other.contains("a:1"), "{other}");
        assert!(missing_model_advice("ollama", "x", Some(&[])).contains("no models installed"));
    }
}
