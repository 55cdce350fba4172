//! Test support shipped with the library so integration tests, benchmarks and
//! end-to-end runs of the real binary (`docdex dev fake-ollama`) share it.
//! Nothing here is used by the product's own code paths.

pub mod fake_ollama;
pub mod tui_samples;
