//! MCP over stdio (`docdex mcp`). Stdout carries only JSON-RPC: logs go to
//! stderr (set up by the CLI before this runs). Stdin is read line by line and
//! passed on to rmcp unchanged; the `initialize` line is also inspected for the
//! docdex extras rmcp's typed params drop (`rootUri`, `auth_token`).

use super::{DocdexMcp, InitExtras, InitSlot};
use crate::server::state::AppState;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Serves MCP on stdin/stdout until stdin closes or a signal arrives.
pub async fn serve(app: AppState) -> anyhow::Result<()> {
    let slot = InitSlot::default();
    let handler = DocdexMcp::new(app.clone(), slot.clone(), true);
    let (mut to_rmcp, rmcp_side) = tokio::io::duplex(256 * 1024);
    let (rmcp_in, _unused) = tokio::io::split(rmcp_side);
    let pump = tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                if let Some(extras) = InitExtras::from_message(&v) {
                    if let Ok(mut s) = slot.lock() {
                        *s = Some(extras);
                    }
                }
            }
            if to_rmcp.write_all(line.as_bytes()).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                break;
            }
        }
        // Dropping the writer closes rmcp's input: the session ends.
    });
    let running = match handler.serve((rmcp_in, tokio::io::stdout())).await {
        Ok(r) => r,
        Err(e) => {
            // A refused initialize (bad token, unknown repo) was already answered to the client.
            tracing::warn!("MCP session did not start: {e}");
            pump.abort();
            return Ok(());
        }
    };
    let ct = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => { if let Err(e) = r { tracing::warn!("MCP session ended: {e}"); } }
        _ = crate::server::shutdown::shutdown_signal() => ct.cancel(),
    }
    pump.abort();
    Ok(())
}
