//! Test doubles shared by the integration tests, the examples and the benchmark
//! harness: a deterministic fake Ollama over loopback and sample view-models for
//! the TUI. Compiled into debug builds and into release builds with `--features
//! test-support` only, so the binary users run carries none of it.

pub mod fake_ollama;
pub mod tui_samples;
