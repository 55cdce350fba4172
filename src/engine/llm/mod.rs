//! Language models and embedders behind one [`Provider`] trait, so the waterfall,
//! hybrid search and memory never care whether Ollama or an OpenAI-compatible
//! server (llama.cpp, LM Studio, vLLM) is on the other end.
//!
//! The trait is object-safe (boxed futures and streams) so the engine holds an
//! `Arc<dyn Provider>` chosen from `[llm] provider` at start ([`build_provider`]).
//! `Engine::provider`, `Engine::stream_chat` and `Engine::embed` (in `api.rs`) are
//! the entry points for the rest of the engine and the surfaces.

pub mod advice;
pub(crate) mod api;
pub mod hardware;
mod http;
pub mod models;
pub mod ollama;
pub mod openai;
pub mod setup;

pub use api::ChatReply;

use crate::config::LlmConfig;
use crate::error::{Error, Result};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who said a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions and assembled context.
    System,
    /// The person (or agent) asking.
    User,
    /// The model.
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatMessage {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: String,
}

impl ChatMessage {
    /// A message with `role` and `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage { role, content: content.into() }
    }
}

/// How the model samples its answer: the fields a model call ([`ChatRequest`]), a chat turn
/// (`ChatTurnRequest`) and the OpenAI-compatible body (`POST /v1/chat/completions`) all carry,
/// declared once and flattened into each, so the JSON keeps them at its top level (`"top_p":
/// 0.5`, not `"sampling": {...}`). Each is the model server's default when `None`; Ollama takes
/// them as `options.<name>`, an OpenAI-compatible server by the same names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sampling {
    /// Sampling temperature, 0 to 2 (the model server's default when absent).
    #[serde(default, deserialize_with = "number::temperature")]
    #[schemars(with = "Option<f32>")]
    pub temperature: Option<f32>,
    /// Nucleus sampling, 0 to 1 (the model server's default when absent).
    #[serde(default, deserialize_with = "number::top_p")]
    #[schemars(with = "Option<f32>")]
    pub top_p: Option<f32>,
    /// Penalty on tokens already present, -2 to 2 (the model server's default when absent).
    #[serde(default, deserialize_with = "number::presence_penalty")]
    #[schemars(with = "Option<f32>")]
    pub presence_penalty: Option<f32>,
    /// Penalty by how often a token already came, -2 to 2 (the model server's default when absent).
    #[serde(default, deserialize_with = "number::frequency_penalty")]
    #[schemars(with = "Option<f32>")]
    pub frequency_penalty: Option<f32>,
}

/// Reading a [`Sampling`] field, so a value of the wrong type names its field: serde reads a
/// flattened struct from a buffered copy of the whole object, and its own error (`invalid
/// type: string "hot", expected f32`) named neither the field nor where it was (the position
/// was the object's end). Now: `temperature: expected a number, got "hot"`.
mod number {
    use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// A number (or null: absent) for the field it names.
    struct Field(&'static str);

    impl Field {
        fn wrong<E: Error>(&self, got: &str) -> E {
            E::custom(format!("{}: expected a number, got {got}", self.0))
        }
    }

    impl<'de> Visitor<'de> for Field {
        type Value = Option<f32>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "a number for {}", self.0)
        }
        fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v as f32))
        }
        fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v as f32))
        }
        fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v as f32))
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            Err(self.wrong(&crate::error::quoted(v)))
        }
        fn visit_bool<E: Error>(self, v: bool) -> Result<Self::Value, E> {
            Err(self.wrong(&v.to_string()))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
            Err(self.wrong("an array"))
        }
        fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<Self::Value, A::Error> {
            Err(self.wrong("an object"))
        }
    }

    macro_rules! fields {
        ($($name:ident),*) => {$(
            pub(super) fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
                d.deserialize_any(Field(stringify!($name)))
            }
        )*};
    }
    fields!(temperature, top_p, presence_penalty, frequency_penalty);
}

impl Sampling {
    /// Only `temperature`, as a one-off model call sets it (`0.0` for a repeatable answer).
    pub fn temperature(t: f32) -> Sampling {
        Sampling { temperature: Some(t), ..Sampling::default() }
    }

    /// Each field set, by its name, with the range OpenAI takes for it.
    pub fn fields(&self) -> [(&'static str, Option<f32>, std::ops::RangeInclusive<f32>); 4] {
        [
            ("temperature", self.temperature, 0.0..=2.0),
            ("top_p", self.top_p, 0.0..=1.0),
            ("presence_penalty", self.presence_penalty, -2.0..=2.0),
            ("frequency_penalty", self.frequency_penalty, -2.0..=2.0),
        ]
    }

    /// Refuses a value outside OpenAI's range (`BadRequest` naming the field and the range),
    /// rather than sending it to a model server that may not refuse it.
    pub fn check(&self) -> Result<()> {
        for (name, value, range) in self.fields() {
            if let Some(v) = value.filter(|v| !range.contains(v)) {
                let (lo, hi) = (range.start(), range.end());
                return Err(Error::BadRequest(format!("{name} {v} is out of range: use {lo} to {hi}")));
            }
        }
        Ok(())
    }
}

/// A chat completion request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name as the provider knows it (`[llm] default_model` when empty).
    pub model: String,
    /// The conversation, system message first.
    pub messages: Vec<ChatMessage>,
    /// Upper bound on generated tokens (`[llm] max_answer_tokens` when `None`).
    pub max_tokens: Option<u32>,
    /// Temperature, `top_p` and the two penalties, at the top level of the JSON.
    #[serde(flatten)]
    pub sampling: Sampling,
    /// The context window to run the model with, in tokens (Ollama's `num_ctx`; servers that
    /// fix it at load time ignore it). The server's default when `None`.
    #[serde(default)]
    pub context_tokens: Option<u32>,
    /// A JSON schema the answer must follow (Ollama `format`, OpenAI `response_format` with
    /// `json_schema`), or the string `"json"` for any JSON object (Ollama `format: "json"`,
    /// OpenAI `response_format` `json_object`); free text when `None`.
    #[serde(default)]
    pub format: Option<serde_json::Value>,
    /// Sequences that end the answer where the model writes them (Ollama `options.stop`,
    /// OpenAI `stop`); none when empty.
    #[serde(default)]
    pub stop: Vec<String>,
}

/// Token counts and why generation stopped, reported once at the end of a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatUsage {
    /// Tokens in the prompt as the provider counted them.
    pub prompt_tokens: u32,
    /// Of those, or besides them (servers differ), the tokens read from the server's prompt
    /// cache, when it says (Ollama `prompt_eval_cached_count`, OpenAI-compatible
    /// `usage.prompt_tokens_details.cached_tokens`); 0 when it does not.
    #[serde(default)]
    pub cached_prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
    /// `stop`, `length`, or what the provider said.
    pub finish_reason: String,
}

/// One event of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ChatEvent {
    /// The next piece of the answer.
    Token(String),
    /// The answer is complete.
    Done(ChatUsage),
}

/// A streamed answer; ends after [`ChatEvent::Done`] or an error.
pub type ChatStream = BoxStream<'static, Result<ChatEvent>>;

/// A model a provider has installed or serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Name as used in requests (`llama3.2:1b`).
    pub name: String,
    /// Size on disk in bytes, when the provider says.
    pub size_bytes: Option<u64>,
}

/// A language-model and embedding backend.
pub trait Provider: Send + Sync {
    /// `ollama` or `openai`.
    fn kind(&self) -> &'static str;
    /// The server's base URL.
    fn base_url(&self) -> &str;
    /// Starts a streamed chat completion. Errors before the first token (unreachable
    /// server, missing model) come back here; later ones come through the stream.
    fn chat(&self, req: ChatRequest) -> BoxFuture<'_, Result<ChatStream>>;
    /// Embeds each input with `model`; one vector per input, in order.
    fn embed(&self, model: &str, inputs: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>>>;
    /// The models the server has.
    fn models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>>>;
    /// The context window `model` was built for, in tokens, when the server says (Ollama's
    /// `/api/show`, the model list of vLLM or LM Studio). `Ok(None)` when it does not.
    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Result<Option<u32>>> {
        let _ = model;
        async { Ok(None) }.boxed()
    }
    /// Downloads `model`, reporting progress. Only Ollama can; others say so.
    fn pull<'a>(
        &'a self,
        model: &'a str,
        progress: &'a (dyn Fn(&PullProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<()>> {
        let _ = progress;
        let kind = self.kind();
        async move {
            Err(Error::BadRequest(format!(
                "the {kind} provider cannot download models; install {model} on the server itself"
            )))
        }
        .boxed()
    }
}

/// Progress of a model download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PullProgress {
    /// What the server is doing (`pulling manifest`, `downloading`, `success`).
    pub status: String,
    /// Bytes done, when known.
    pub completed: Option<u64>,
    /// Bytes in all, when known.
    pub total: Option<u64>,
}

/// True when `installed` (as a server lists it) is the model `wanted` names: Ollama adds
/// `:latest` to untagged names, so `nomic-embed-text` is `nomic-embed-text:latest`.
pub fn model_matches(wanted: &str, installed: &str) -> bool {
    let tagged = |m: &str| if m.contains(':') { m.to_string() } else { format!("{m}:latest") };
    wanted == installed || tagged(wanted) == tagged(installed)
}

/// Builds the provider `[llm] provider` names. An unknown name falls back to Ollama (the
/// config loader has already warned about it).
pub fn build_provider(cfg: &LlmConfig) -> Result<Arc<dyn Provider>> {
    match cfg.provider.as_str() {
        "openai" => Ok(Arc::new(openai::OpenAiProvider::new(cfg)?)),
        other => {
            if other != "ollama" {
                tracing::warn!(provider = other, "unknown [llm] provider; using ollama");
            }
            Ok(Arc::new(ollama::OllamaProvider::new(cfg)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The sampling fields are one struct in the code and stay at the top level of a request's
    /// JSON both ways, as they were when each request declared its own.
    #[test]
    fn sampling_stays_flat_on_the_wire() {
        let sampling = Sampling { top_p: Some(0.5), ..Sampling::temperature(0.25) };
        let v = serde_json::to_value(ChatRequest { sampling, ..Default::default() }).unwrap();
        assert_eq!((v["temperature"].as_f64(), v["top_p"].as_f64()), (Some(0.25), Some(0.5)), "{v}");
        assert!(v["presence_penalty"].is_null() && v.get("sampling").is_none(), "{v}");
        let back: ChatRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back.sampling, sampling);
        let read: ChatRequest =
            serde_json::from_value(json!({"model": "m", "messages": [], "frequency_penalty": -2})).unwrap();
        assert_eq!(read.sampling, Sampling { frequency_penalty: Some(-2.0), ..Sampling::default() });
    }

    /// A sampling field of the wrong type names the field and the value it got (serde's
    /// message through `flatten` named neither); null is absent, as before.
    #[test]
    fn a_sampling_field_of_the_wrong_type_names_the_field_and_value() {
        let read = |body: &str| serde_json::from_str::<ChatRequest>(body).map(|r| r.sampling);
        let e = read(r#"{"model": "m", "messages": [], "temperature": "hot"}"#).unwrap_err().to_string();
        assert!(e.starts_with(r#"temperature: expected a number, got "hot""#), "{e}");
        for (field, value, got) in [
            ("top_p", "true", "true"),
            ("presence_penalty", "[1]", "an array"),
            ("frequency_penalty", r#"{"a": 1}"#, "an object"),
        ] {
            let e = read(&format!(r#"{{"model": "m", "messages": [], "{field}": {value}}}"#)).unwrap_err();
            assert!(e.to_string().starts_with(&format!("{field}: expected a number, got {got}")), "{e}");
        }
        let ok = read(r#"{"model": "m", "messages": [], "temperature": null, "top_p": 1, "presence_penalty": -0.5}"#);
        assert_eq!(ok.unwrap(), Sampling { top_p: Some(1.0), presence_penalty: Some(-0.5), ..Sampling::default() });
    }

    #[test]
    fn sampling_out_of_range_names_the_field_and_its_range() {
        assert!(Sampling { temperature: Some(2.0), top_p: Some(0.0), ..Sampling::default() }.check().is_ok());
        let bad = Sampling { presence_penalty: Some(-3.0), ..Sampling::default() }.check().unwrap_err();
        assert_eq!(bad.to_string(), "presence_penalty -3 is out of range: use -2 to 2");
    }
}
