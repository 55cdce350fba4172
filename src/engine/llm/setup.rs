//! `docdex llm-setup`: find Ollama on PATH, ask the server what it has, pull the
//! chosen models only when told to (`--yes`), and point `[llm]` in config.toml at
//! installed models, editing just those keys so the user's file keeps its comments.
//! Nothing is installed silently: without `--yes` the report lists the commands to run.

use super::hardware::{which, Hardware};
use super::models::{self, judge_model, machine_tier, recommend};
use super::{model_matches, PullProgress};
use crate::config::edit::set_string_keys;
use crate::engine::Engine;
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `llm-setup` should do.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlmSetupRequest {
    /// Chat model to use (an embedding model from the catalog sets `embedding_model` instead);
    /// default: the recommendation for this machine.
    #[serde(default)]
    pub model: Option<String>,
    /// Embedding model to use; default: the recommendation when no `model` is given.
    #[serde(default)]
    pub embedding_model: Option<String>,
    /// Download missing models (explicit confirmation).
    #[serde(default)]
    pub yes: bool,
}

/// One model `llm-setup` dealt with.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetupModel {
    /// `default_model` or `embedding_model`.
    pub key: String,
    /// The model.
    pub model: String,
    /// `installed`, `pulled`, `missing` (needs `--yes`), `failed` or `unknown` (server down).
    pub state: String,
    /// Why, for `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What `llm-setup` found and did.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlmSetupReport {
    /// `ollama` or `openai`.
    pub provider: String,
    /// The server asked.
    pub base_url: String,
    /// Where `ollama` is on PATH, if it is.
    pub ollama_binary: Option<PathBuf>,
    /// The server answered.
    pub server_reachable: bool,
    /// Why it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
    /// Models on the server (after any pulls).
    pub installed: Vec<String>,
    /// The machine's tier (`ultra-light` .. `heavy`).
    pub tier: String,
    /// The models chosen and their state.
    pub models: Vec<SetupModel>,
    /// The config file.
    pub config_path: PathBuf,
    /// `[llm]` keys changed in it.
    pub config_changed: Vec<String>,
    /// Advice (hardware fit, what to run next).
    pub next_steps: Vec<String>,
    /// True when the server answered and every chosen model is installed.
    pub ok: bool,
}

impl Engine {
    /// Runs `llm-setup`; `progress` receives (model, progress) while pulling.
    pub fn llm_setup(
        &self,
        req: &LlmSetupRequest,
        progress: &(dyn Fn(&str, &PullProgress) + Send + Sync),
    ) -> Result<LlmSetupReport> {
        let cfg = &self.config().llm;
        let hw = self.hardware();
        let is_ollama = cfg.provider != "openai";
        let mut report = LlmSetupReport {
            provider: if is_ollama { "ollama".into() } else { "openai".into() },
            base_url: cfg.base_url.clone(),
            ollama_binary: if is_ollama { which("ollama") } else { None },
            server_reachable: false,
            server_error: None,
            installed: Vec::new(),
            tier: machine_tier(&hw).into(),
            models: Vec::new(),
            config_path: self.config_path().to_path_buf(),
            config_changed: Vec::new(),
            next_steps: Vec::new(),
            ok: false,
        };
        match self.models() {
            Ok(list) => {
                report.server_reachable = true;
                report.installed = list.into_iter().map(|m| m.name).collect();
            }
            Err(e) => report.server_error = Some(e.to_string()),
        }
        let catalog = models::catalog()?;
        let installed = report.server_reachable.then_some(report.installed.as_slice());
        let wanted = wanted_models(req, &catalog, &hw, installed);

        if !report.server_reachable {
            self.unreachable_steps(&mut report, is_ollama);
            report.models = wanted
                .iter()
                .map(|(k, m)| SetupModel { key: k.to_string(), model: m.clone(), state: "unknown".into(), error: None })
                .collect();
            return Ok(report);
        }

        for (key, model) in &wanted {
            let entry = self.ensure_model(key, model, req, is_ollama, &mut report, progress);
            report.models.push(entry);
        }

        let settle: Vec<(&str, &str)> = report
            .models
            .iter()
            .filter(|m| m.state == "installed" || m.state == "pulled")
            .map(|m| (m.key.as_str(), m.model.as_str()))
            .collect();
        if !settle.is_empty() {
            report.config_changed = set_string_keys(self.config_path(), "llm", &settle)?;
        }
        if let Some((_, chat)) = settle.iter().find(|(k, _)| *k == "default_model") {
            if let Ok(Err(warning)) = judge_model(chat, &hw) {
                report.next_steps.push(format!("warning: {warning}"));
            }
        }
        if report.ollama_binary.is_none() && is_ollama {
            report
                .next_steps
                .push("note: `ollama` is not on PATH here; the server answered, so it runs elsewhere (fine)".into());
        }
        report.ok = report.models.iter().all(|m| m.state == "installed" || m.state == "pulled");
        Ok(report)
    }

    /// A chosen model's state: installed, pulled now (`--yes`, Ollama), failed or missing (with
    /// the step that gets it into `report.next_steps`).
    fn ensure_model(
        &self,
        key: &str,
        model: &str,
        req: &LlmSetupRequest,
        is_ollama: bool,
        report: &mut LlmSetupReport,
        progress: &(dyn Fn(&str, &PullProgress) + Send + Sync),
    ) -> SetupModel {
        let mut entry =
            SetupModel { key: key.to_string(), model: model.to_string(), state: "installed".into(), error: None };
        if report.installed.iter().any(|i| model_matches(model, i)) {
            return entry;
        }
        if req.yes && is_ollama {
            match self.pull_model(model, &|p| progress(model, p)) {
                Ok(()) => {
                    entry.state = "pulled".into();
                    report.installed.push(model.to_string());
                }
                Err(e) => {
                    entry.state = "failed".into();
                    entry.error = Some(e.to_string());
                }
            }
            return entry;
        }
        entry.state = "missing".into();
        report.next_steps.push(if is_ollama {
            format!(
                "{model} is not installed: {}",
                super::advice::missing_model_advice("ollama", model, Some(&report.installed))
            )
        } else {
            format!(
                "{model} is not served by {}; load it in the server, or pick one of: {}",
                report.base_url,
                report.installed.join(", ")
            )
        });
        entry
    }

    fn unreachable_steps(&self, report: &mut LlmSetupReport, is_ollama: bool) {
        if !is_ollama {
            report.next_steps.push(format!(
                "start your OpenAI-compatible server (llama.cpp `llama-server`, LM Studio, vLLM) at {}, or fix `[llm] base_url` in {}",
                report.base_url,
                report.config_path.display()
            ));
            return;
        }
        if report.ollama_binary.is_none() {
            report
                .next_steps
                .push("install Ollama from https://ollama.com/download (docdex never installs it for you)".into());
        }
        report.next_steps.push(format!(
            "start it with `ollama serve` (or point `[llm] base_url` in {} at a running server), then run `docdex llm-setup` again",
            report.config_path.display()
        ));
    }
}

/// The `[llm]` keys to set and their models: what the user named (a catalog embedder named by
/// `--model` goes to `embedding_model`), else the catalog's pick for this machine per kind.
fn wanted_models(
    req: &LlmSetupRequest,
    catalog: &[models::CatalogModel],
    hw: &Hardware,
    installed: Option<&[String]>,
) -> Vec<(&'static str, String)> {
    let mut wanted: Vec<(&'static str, String)> = Vec::new();
    if let Some(m) = &req.model {
        let is_embedder = models::lookup(catalog, m).is_some_and(|c| c.kind == "embedding");
        wanted.push((if is_embedder { "embedding_model" } else { "default_model" }, m.clone()));
    }
    if let Some(e) = &req.embedding_model {
        wanted.retain(|(k, _)| *k != "embedding_model");
        wanted.push(("embedding_model", e.clone()));
    }
    if wanted.is_empty() {
        for (key, kind) in [("default_model", "chat"), ("embedding_model", "embedding")] {
            if let Some(m) = recommend(catalog, hw, kind, installed) {
                wanted.push((key, m.name.clone()));
            }
        }
    }
    wanted
}
