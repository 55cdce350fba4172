//! The fault suite (issue 14, docs/RELIABILITY.md): hostile files under a live watcher,
//! hostile requests over real HTTP and stdio, kill -9 mid-rebuild, corrupt and full disks,
//! oversized input. Every case here is a guarantee later changes must keep.

mod config;
mod corrupt;
mod crash;
mod disk_full;
mod hardening;
pub mod limits;
mod mcp;
mod paths;
mod server;
mod state;
mod watcher;
