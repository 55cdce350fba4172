//! What every MCP transport serves: [`DocdexMcp`] behind one request filter.
//!
//! rmcp answers some requests itself, before any `ServerHandler` method runs: the tasks
//! extension (`tasks/get`, `tasks/update`, `tasks/cancel`) and the skills extension
//! (`skills/list`, `skills/get`, `resources/directory/read`) are checked against the
//! capabilities the server declares, and `subscriptions/listen` against
//! `accepted_subscription_filter`; declared by no one, they were `-32601` with the method alone
//! as the message, where every other method docdex does not offer says what the server lacks
//! and which methods it answers ([`jsonrpc::not_offered`]). rmcp's handler has no method those
//! reach, so this wrapper answers them first and hands every other request to rmcp's own
//! dispatch over [`DocdexMcp`] unchanged. It serves stdio and the legacy SSE sessions, which
//! run any rmcp `Service`; rmcp's streamable HTTP service takes a `ServerHandler` only (whose
//! dispatch is the one that answers first), so there `super::streamable_http` answers these
//! requests of a live session before rmcp sees them ([`jsonrpc::not_offered_reply`]).

use super::{jsonrpc, DocdexMcp};
use rmcp::model::{ClientRequest, ErrorCode, ProtocolVersion};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, ServiceRole};
use rmcp::{ErrorData as McpError, RoleServer, Service};
use std::borrow::Cow;
use std::future::Future;

/// [`DocdexMcp`] as every transport serves it (see the module docs).
pub struct McpService(pub DocdexMcp);

/// Method not found (`-32601`) naming what the server lacks and the methods it answers, for a
/// request rmcp would answer with the method alone ([`jsonrpc::answered_by_rmcp`]); `None` for
/// the rest, which rmcp dispatches.
pub fn not_offered(request: &ClientRequest) -> Option<McpError> {
    let method = request.method();
    jsonrpc::answered_by_rmcp(method).then(|| {
        tracing::info!(method, "MCP method of an extension this server does not declare");
        McpError::new(ErrorCode::METHOD_NOT_FOUND, jsonrpc::not_offered(method), None)
    })
}

impl Service<RoleServer> for McpService {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<<RoleServer as ServiceRole>::Resp, McpError> {
        match not_offered(&request) {
            Some(refused) => Err(refused),
            None => Service::<RoleServer>::handle_request(&self.0, request, context).await,
        }
    }

    fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        Service::<RoleServer>::handle_notification(&self.0, notification, context)
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        Service::<RoleServer>::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::<RoleServer>::supported_protocol_versions(&self.0)
    }
}
