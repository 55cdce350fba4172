//! One integration-test binary (faster to link), a module per area. Every test
//! uses real files on disk and its own temporary DOCDEX_HOME.

mod architecture;
mod chat;
mod cli;
mod config;
mod documents;
mod eval;
mod faults;
mod hooks;
mod hybrid;
mod impact;
mod indexing;
mod libs;
mod llm;
mod mcp_clients;
mod memory;
mod profile_evolution;
mod profile_tier0;
mod profiles;
mod search;
mod semantic;
mod server;
mod server_api;
mod server_util;
mod setup;
mod symbols;
mod tui;
mod tui_chat;
mod tui_e2e;
mod tui_keys;
mod tui_messages;
mod tui_support;
mod util;
mod watch;
mod web;
mod web_support;
