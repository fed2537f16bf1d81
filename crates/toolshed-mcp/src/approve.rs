//! Approvals asked of the calling client's user through MCP elicitation.

use std::collections::BTreeMap;

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use toolshed_host::approvals::{ApprovalRequest, Approver};

/// Asks the client's user (`elicitation/create`, form mode, no fields: accept or decline).
/// A client that did not declare elicitation, or an era where a server may not send it
/// requests, is not asked: the request then waits for the CLI or REST.
pub(crate) struct Elicitation {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) owner: String,
}

impl Elicitation {
    /// Whether the client declared form elicitation.
    pub(crate) fn supported(peer: &Peer<RoleServer>) -> bool {
        peer.supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
    }
}

#[async_trait]
impl Approver for Elicitation {
    async fn ask(&self, request: &ApprovalRequest) -> Option<bool> {
        let message = crate::input::question(request);
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        match self.peer.create_elicitation(params).await {
            Ok(result) => Some(result.action == ElicitationAction::Accept),
            Err(e) => {
                tracing::debug!(error = %e, "elicitation failed; the approval waits for the CLI or REST");
                None
            }
        }
    }

    fn who(&self) -> String {
        format!("the MCP client of {}", self.owner)
    }
}
