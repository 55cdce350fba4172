//! Which models fit this machine: the embedded catalog (`llm_list.json`), the
//! spec's thresholds (under 8 GB of RAM ultra-light only; from 16 GB `phi3.5:3.8b`;
//! from 32 GB with a GPU `llama3.1:70b` when installed), and `docdex llm-list`.
//! Recommendations are advice: nothing here downloads anything.

use super::hardware::{self, Hardware};
use super::model_matches;
use crate::engine::Engine;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

const CATALOG: &str = include_str!("llm_list.json");

/// Machine classes, smallest first.
const TIERS: [&str; 4] = ["ultra-light", "light", "default", "heavy"];

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CatalogModel {
    /// Name as Ollama knows it.
    pub name: String,
    /// `chat` or `embedding`.
    pub kind: String,
    /// `ultra-light`, `light`, `default` or `heavy`.
    pub tier: String,
    /// Parameter count, as a label.
    #[serde(default)]
    pub params: String,
    /// Download size in GB.
    pub size_gb: f64,
    /// RAM below which the model is not suggested, in GB.
    pub min_ram_gb: f64,
    /// Needs a GPU to be suggested.
    #[serde(default)]
    pub requires_gpu: bool,
    /// Vector size (embedding models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
    /// The machine tier this model is the default for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_for: Option<String>,
    /// One line about it.
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
struct CatalogFile {
    models: Vec<CatalogModel>,
}

/// The embedded catalog.
pub fn catalog() -> Result<Vec<CatalogModel>> {
    serde_json::from_str::<CatalogFile>(CATALOG)
        .map(|c| c.models)
        .map_err(|e| Error::CorruptState { path: "llm_list.json (embedded)".into(), message: e.to_string() })
}

/// The catalog entry for a model name (`nomic-embed-text` matches `nomic-embed-text:latest`).
pub fn lookup<'a>(catalog: &'a [CatalogModel], name: &str) -> Option<&'a CatalogModel> {
    catalog.iter().find(|m| model_matches(&m.name, name))
}

fn tier_rank(t: &str) -> usize {
    TIERS.iter().position(|x| *x == t).unwrap_or(0)
}

/// The machine's tier by the spec's thresholds; unknown RAM is treated as the smallest.
pub fn machine_tier(hw: &Hardware) -> &'static str {
    let ram = hw.ram_gb;
    if ram <= 0.0 || ram < 8.0 {
        "ultra-light"
    } else if ram < 16.0 {
        "light"
    } else if ram >= 32.0 && hw.has_gpu() {
        "heavy"
    } else {
        "default"
    }
}

/// True when the model is suggested for this machine.
pub fn fits(m: &CatalogModel, hw: &Hardware) -> bool {
    tier_rank(&m.tier) <= tier_rank(machine_tier(hw))
        && m.min_ram_gb <= hw.ram_gb.max(0.0)
        && (!m.requires_gpu || hw.has_gpu())
}

/// RAM a model needs, estimated from the parameter count in its tag (`:70b` → ~44 GB at Q4)
/// for models the catalog does not know.
pub fn estimated_ram_gb(name: &str) -> Option<f64> {
    let tag = name.rsplit_once(':')?.1.to_ascii_lowercase();
    let digits: String = tag.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let rest = &tag[digits.len()..];
    let params: f64 = digits.parse().ok()?;
    let billions = if rest.starts_with('b') {
        params
    } else if rest.starts_with('m') {
        params / 1000.0
    } else {
        return None;
    };
    Some((billions * 0.6 + 2.0).max(1.0))
}

/// Whether the configured model suits the hardware: `Ok(())`, or a warning saying why not.
pub fn judge_model(name: &str, hw: &Hardware) -> Result<std::result::Result<String, String>> {
    let cat = catalog()?;
    if let Some(m) = lookup(&cat, name) {
        return Ok(if fits(m, hw) {
            Ok(format!("{name} suits this machine ({} GB RAM{})", hw.ram_gb, gpu_note(hw)))
        } else {
            Err(format!(
                "{name} is a {} model (suggested from {} GB RAM{}); this machine has {} GB{}. `docdex llm-list` shows what fits",
                m.tier,
                m.min_ram_gb,
                if m.requires_gpu { " with a GPU" } else { "" },
                hw.ram_gb,
                gpu_note(hw)
            ))
        });
    }
    Ok(match estimated_ram_gb(name) {
        Some(need) if hw.ram_gb > 0.0 && need > hw.ram_gb + hw.max_vram_gb() => Err(format!(
            "{name} needs about {need:.0} GB of memory; this machine has {} GB RAM{}. `docdex llm-list` shows what fits",
            hw.ram_gb,
            gpu_note(hw)
        )),
        Some(need) => Ok(format!("{name} needs about {need:.0} GB; this machine has {} GB RAM", hw.ram_gb)),
        None => Ok(format!("{name} is not in the catalog; its size cannot be judged")),
    })
}

fn gpu_note(hw: &Hardware) -> String {
    if hw.has_gpu() {
        format!(", GPU with {} GB VRAM", hw.max_vram_gb())
    } else {
        ", no GPU".into()
    }
}

/// A catalog model as `llm-list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListedModel {
    /// The catalog entry.
    #[serde(flatten)]
    pub model: CatalogModel,
    /// Suggested for this machine.
    pub fits: bool,
    /// On the server (`null` when the server could not be asked).
    pub installed: Option<bool>,
    /// The recommended model of its kind.
    pub recommended: bool,
}

/// `docdex llm-list`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlmListResponse {
    /// What was detected.
    pub hardware: Hardware,
    /// `ultra-light`, `light`, `default` or `heavy`.
    pub tier: String,
    /// Recommended chat model.
    pub recommended_chat: String,
    /// Recommended embedding model.
    pub recommended_embedding: String,
    /// Every catalog model, with fit and install state.
    pub models: Vec<ListedModel>,
    /// Installed models the catalog does not list.
    pub other_installed: Vec<String>,
    /// `[llm] default_model` and `embedding_model` as configured.
    pub configured_chat: String,
    /// See `configured_chat`.
    pub configured_embedding: String,
    /// The provider and server asked.
    pub provider: String,
    /// Its base URL.
    pub base_url: String,
    /// Why installed models are unknown, or other advice.
    pub notices: Vec<String>,
}

/// Picks the recommended model of `kind`: the default of the highest tier up to the machine's
/// that fits; a heavy-tier default only when it is installed.
pub fn recommend<'a>(
    cat: &'a [CatalogModel],
    hw: &Hardware,
    kind: &str,
    installed: Option<&[String]>,
) -> Option<&'a CatalogModel> {
    let machine = tier_rank(machine_tier(hw));
    let is_installed = |m: &CatalogModel| installed.is_some_and(|list| list.iter().any(|i| model_matches(&m.name, i)));
    let mut candidates: Vec<&CatalogModel> = cat
        .iter()
        .filter(|m| m.kind == kind)
        .filter(|m| m.default_for.as_deref().is_some_and(|t| tier_rank(t) <= machine))
        .filter(|m| fits(m, hw))
        .filter(|m| m.default_for.as_deref() != Some("heavy") || is_installed(m))
        .collect();
    candidates.sort_by_key(|m| std::cmp::Reverse(tier_rank(m.default_for.as_deref().unwrap_or("ultra-light"))));
    candidates.first().copied()
}

/// Builds the `llm-list` answer from hardware and the installed models (`None`: unknown).
pub fn llm_list(
    hw: &Hardware,
    installed: Option<&[String]>,
) -> Result<(String, String, Vec<ListedModel>, Vec<String>)> {
    let cat = catalog()?;
    let chat = recommend(&cat, hw, "chat", installed).map(|m| m.name.clone()).unwrap_or_default();
    let embed = recommend(&cat, hw, "embedding", installed).map(|m| m.name.clone()).unwrap_or_default();
    let models = cat
        .iter()
        .map(|m| ListedModel {
            fits: fits(m, hw),
            installed: installed.map(|list| list.iter().any(|i| model_matches(&m.name, i))),
            recommended: m.name == chat || m.name == embed,
            model: m.clone(),
        })
        .collect();
    let others =
        installed.map(|list| list.iter().filter(|i| lookup(&cat, i).is_none()).cloned().collect()).unwrap_or_default();
    Ok((chat, embed, models, others))
}

impl Engine {
    /// The machine's RAM and GPUs (or `DOCDEX_HARDWARE`).
    pub fn hardware(&self) -> Hardware {
        hardware::detect()
    }

    /// `docdex llm-list` for this machine.
    pub fn llm_list(&self) -> Result<LlmListResponse> {
        self.llm_list_for(&self.hardware())
    }

    /// `docdex llm-list` for the given hardware; installed models come from the provider
    /// when it answers (otherwise they are unknown and a notice says why).
    pub fn llm_list_for(&self, hw: &Hardware) -> Result<LlmListResponse> {
        let cfg = &self.config().llm;
        let mut notices = Vec::new();
        let installed: Option<Vec<String>> = match self.models() {
            Ok(list) => Some(list.into_iter().map(|m| m.name).collect()),
            Err(e) => {
                notices.push(format!("installed models unknown: {e}"));
                None
            }
        };
        let (chat, embed, models, other_installed) = llm_list(hw, installed.as_deref())?;
        if machine_tier(hw) == "heavy" && !models.iter().any(|m| m.model.tier == "heavy" && m.installed == Some(true)) {
            notices.push(
                "this machine can run llama3.1:70b; it is suggested once installed (`docdex llm-setup --model llama3.1:70b --yes`)"
                    .into(),
            );
        }
        if let Ok(Err(warning)) = judge_model(&cfg.default_model, hw) {
            notices.push(format!("configured default_model: {warning}"));
        }
        Ok(LlmListResponse {
            hardware: hw.clone(),
            tier: machine_tier(hw).into(),
            recommended_chat: chat,
            recommended_embedding: embed,
            models,
            other_installed,
            configured_chat: cfg.default_model.clone(),
            configured_embedding: cfg.embedding_model.clone(),
            provider: cfg.provider.clone(),
            base_url: cfg.base_url.clone(),
            notices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(installed: &[&str]) -> Vec<String> {
        installed.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn catalog_parses_and_every_tier_has_defaults() {
        let cat = catalog().unwrap();
        for kind in ["chat", "embedding"] {
            assert!(cat.iter().any(|m| m.kind == kind && m.default_for.as_deref() == Some("ultra-light")));
        }
    }

    #[test]
    fn thresholds_follow_the_spec() {
        let cat = catalog().unwrap();
        let none: Option<&[String]> = Some(&[]);
        let pick = |hw: &Hardware, kind, inst| recommend(&cat, hw, kind, inst).map(|m| m.name.as_str());
        // < 8 GB: ultra-light only.
        let small = Hardware::new(6.0, 0.0);
        assert_eq!(machine_tier(&small), "ultra-light");
        assert_eq!(pick(&small, "chat", none), Some("llama3.2:1b"));
        assert_eq!(pick(&small, "embedding", none), Some("all-minilm"));
        assert!(cat.iter().filter(|m| fits(m, &small)).all(|m| m.tier == "ultra-light"));
        // 8..16 GB: light.
        assert_eq!(pick(&Hardware::new(12.0, 0.0), "chat", none), Some("llama3.2:3b"));
        // >= 16 GB: phi3.5:3.8b by default.
        let mid = Hardware::new(16.0, 0.0);
        assert_eq!(pick(&mid, "chat", none), Some("phi3.5:3.8b"));
        assert_eq!(pick(&mid, "embedding", none), Some("nomic-embed-text"));
        // >= 32 GB without a GPU: still the default tier.
        assert_eq!(machine_tier(&Hardware::new(64.0, 0.0)), "default");
        // >= 32 GB with a GPU: llama3.1:70b, but only when installed.
        let big = Hardware::new(32.0, 24.0);
        assert_eq!(machine_tier(&big), "heavy");
        assert_eq!(pick(&big, "chat", none), Some("phi3.5:3.8b"));
        let with70 = names(&["llama3.1:70b"]);
        assert_eq!(pick(&big, "chat", Some(&with70)), Some("llama3.1:70b"));
        assert_eq!(pick(&Hardware::new(16.0, 24.0), "chat", Some(&with70)), Some("phi3.5:3.8b"));
        // Unknown RAM is treated conservatively.
        assert_eq!(machine_tier(&Hardware::new(0.0, 0.0)), "ultra-light");
    }

    #[test]
    fn list_marks_installed_and_others() {
        let inst = names(&["phi3.5:3.8b", "nomic-embed-text:latest", "mistral:7b"]);
        let (chat, embed, models, others) = llm_list(&Hardware::new(16.0, 0.0), Some(&inst)).unwrap();
        assert_eq!((chat.as_str(), embed.as_str()), ("phi3.5:3.8b", "nomic-embed-text"));
        let nomic = models.iter().find(|m| m.model.name == "nomic-embed-text").unwrap();
        assert_eq!(nomic.installed, Some(true));
        assert!(nomic.recommended && nomic.fits);
        assert_eq!(others, ["mistral:7b"]);
        let (_, _, models, _) = llm_list(&Hardware::new(16.0, 0.0), None).unwrap();
        assert!(models.iter().all(|m| m.installed.is_none()));
    }

    #[test]
    fn oversized_default_model_is_a_warning() {
        let small = Hardware::new(6.0, 0.0);
        let w = judge_model("phi3.5:3.8b", &small).unwrap().unwrap_err();
        assert!(w.contains("16 GB") && w.contains("6 GB") && w.contains("llm-list"), "{w}");
        assert!(judge_model("phi3.5:3.8b", &Hardware::new(16.0, 0.0)).unwrap().is_ok());
        assert!(judge_model("mixtral:8x22b", &small).unwrap().is_ok(), "unknown sizes are not judged");
        assert!(judge_model("someone/big:70b", &Hardware::new(16.0, 0.0)).unwrap().is_err());
        assert_eq!(estimated_ram_gb("x:70b").map(|g| g.round()), Some(44.0));
        assert_eq!(estimated_ram_gb("x:latest"), None);
    }
}
